// dedup prints what `simlsh-dedup [--threshold T] [--verify MODE] DIR...`
// prints (--output clusters, the default) through the Go binding and the
// library's dedup engine: the "dedup" preset, documents numbered in the
// tool's walk order (depth first, names in byte order), star groups from
// the index's buckets, and in exact mode (the default) the texts re-read
// from their files a batch at a time, as the engine asks for them.
// `--output pairs --verify estimate` prints the tool's pairs instead (TSV,
// scores with 4 decimals).
//
//	dedup [--threshold T] [--verify exact|estimate|none] [--output clusters|pairs]
//	      [-j THREADS] [--memory BYTES] PATH...
//
// --memory bounds the text one batch of the pull loop asks for (the tool's
// --verify-memory); the groups do not depend on it.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	simlsh "github.com/simlsh/simlsh/bindings/go"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dedup:", err)
	os.Exit(1)
}

func escape(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r", "\x00", "\\0")
	return r.Replace(s)
}

// params are simlsh-dedup's for these options, banding included: the
// library's dedup policy (simlsh_dedup_banding) chooses it for the mode.
func params(threshold float64, mode simlsh.DedupMode) *simlsh.Params {
	p, err := simlsh.NewParams("dedup")
	if err != nil {
		fail(err)
	}
	if threshold > 0 {
		if err := p.SetFloat(simlsh.ParamThreshold, threshold); err != nil {
			fail(err)
		}
	}
	if _, _, err := simlsh.DedupBanding(p, mode, 0.99, 0, 0); err != nil {
		fail(err)
	}
	return p
}

func main() {
	threshold, mode, threads, pairs, memory := 0.0, simlsh.DedupExact, 1, false, uint64(0)
	args := os.Args[1:]
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		var err error
		switch args[0] {
		case "--threshold":
			threshold, err = strconv.ParseFloat(args[1], 64)
		case "--verify":
			m, ok := map[string]simlsh.DedupMode{"exact": simlsh.DedupExact,
				"estimate": simlsh.DedupEstimate, "none": simlsh.DedupNone}[args[1]]
			if !ok {
				err = fmt.Errorf("--verify: exact, estimate or none, not %q", args[1])
			}
			mode = m
		case "--output":
			pairs = args[1] == "pairs"
			if !pairs && args[1] != "clusters" {
				err = fmt.Errorf("--output: clusters or pairs, not %q", args[1])
			}
		case "-j":
			threads, err = strconv.Atoi(args[1])
		case "--memory":
			memory, err = strconv.ParseUint(args[1], 10, 64)
		default:
			err = fmt.Errorf("unknown option %s", args[0])
		}
		if err != nil {
			fail(err)
		}
		args = args[2:]
	}
	if pairs && mode != simlsh.DedupEstimate {
		fail(errors.New("--output pairs needs --verify estimate"))
	}
	p := params(threshold, mode)
	defer p.Close()
	var names []string
	for _, root := range args {
		// WalkDir visits names in lexical (byte) order, depth first.
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
				names = append(names, path)
			}
			return nil
		})
		if err != nil {
			fail(err)
		}
	}
	ix, err := simlsh.NewIndex(p)
	if err != nil {
		fail(err)
	}
	defer ix.Close()
	// Sign a chunk of files at a time and keep no text: the engine asks for
	// the texts it needs later. Documents with nothing to shingle are
	// skipped, as by the tool.
	var ids, sizes []uint64
	var values []uint32
	const chunk = 1024
	for at := 0; at < len(names); at += chunk {
		end := at + chunk
		if end > len(names) {
			end = len(names)
		}
		part := names[at:end]
		texts := make([][]byte, len(part))
		for i, name := range part {
			if texts[i], err = os.ReadFile(name); err != nil {
				fail(err)
			}
		}
		var empty []bool
		if values, empty, err = p.SignBatch(values, texts, threads); err != nil {
			fail(err)
		}
		np := len(values) / len(part)
		var cids []uint64
		var rows []uint32
		for i := range part {
			if !empty[i] {
				cids = append(cids, uint64(at+i))
				sizes = append(sizes, uint64(len(texts[i])))
				rows = append(rows, values[i*np:(i+1)*np]...)
			}
		}
		if err := ix.InsertValues(cids, rows, threads); err != nil {
			fail(err)
		}
		ids = append(ids, cids...)
	}
	if pairs {
		printPairs(ix, names)
		return
	}
	t, _ := p.GetFloat(simlsh.ParamThreshold)
	d, err := simlsh.NewDedup(ix, mode, t)
	if err != nil {
		fail(err)
	}
	defer d.Close()
	if err := d.SetThreads(threads); err != nil {
		fail(err)
	}
	if err := d.Sizes(ids, sizes); err != nil {
		fail(err)
	}
	if memory > 0 {
		if err := d.SetMemory(memory); err != nil {
			fail(err)
		}
	}
	// The pull loop: the engine names the texts it needs, we read them.
	for {
		need, err := d.Next()
		if err != nil {
			fail(err)
		}
		if len(need) == 0 {
			break
		}
		var got, gone []uint64
		var texts [][]byte
		for _, id := range need {
			if text, err := os.ReadFile(names[id]); err == nil {
				got, texts = append(got, id), append(texts, text)
			} else {
				fmt.Fprintf(os.Stderr, "dedup: %v; its pairs are verified by estimate\n", err)
				gone = append(gone, id)
			}
		}
		if err := d.Texts(got, texts); err != nil && !errors.Is(err, simlsh.ErrUTF8) {
			fail(err)
		}
		if err := d.Missing(gone); err != nil {
			fail(err)
		}
	}
	groups, err := d.Groups()
	if err != nil {
		fail(err)
	}
	// As the tool prints clusters: members in input order, groups in the
	// order of their first member.
	lines := make([][]uint64, len(groups))
	for g, grp := range groups {
		for _, m := range grp.Members {
			lines[g] = append(lines[g], m.ID)
		}
		sort.Slice(lines[g], func(i, j int) bool { return lines[g][i] < lines[g][j] })
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][0] < lines[j][0] })
	w := bufio.NewWriter(os.Stdout)
	for _, line := range lines {
		for i, id := range line {
			if i > 0 {
				w.WriteByte('\t')
			}
			w.WriteString(escape(names[id]))
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}

// printPairs prints the pairs whose estimate reaches the threshold, as
// `simlsh-dedup --output pairs --verify estimate` does.
func printPairs(ix *simlsh.Index, names []string) {
	rows, err := ix.Pairs(simlsh.QueryVerify, 10000000)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(os.Stdout)
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%.4f\n", escape(names[r.A]), escape(names[r.B]), r.Score)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}
