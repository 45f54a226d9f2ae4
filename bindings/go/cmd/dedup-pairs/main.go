// dedup-pairs prints what `simlsh-dedup --output pairs [--threshold T] DIR...`
// prints, through the Go binding: the "dedup" preset, documents numbered in
// the tool's walk order (depth first, names in byte order), pairs verified
// by estimate, TSV with 4 decimals.
package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	simlsh "github.com/simlsh/simlsh/bindings/go"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dedup-pairs:", err)
	os.Exit(1)
}

func escape(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r", "\x00", "\\0")
	return r.Replace(s)
}

func main() {
	p, err := simlsh.NewParams("dedup")
	if err != nil {
		fail(err)
	}
	defer p.Close()
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "--threshold" {
		t, err := strconv.ParseFloat(args[1], 64)
		if err == nil {
			err = p.SetFloat(simlsh.ParamThreshold, t)
		}
		if err != nil {
			fail(err)
		}
		args = args[2:]
	}
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
	texts := make([][]byte, len(names))
	for i, name := range names {
		if texts[i], err = os.ReadFile(name); err != nil {
			fail(err)
		}
	}
	// One call signs them all, one inserts them; empty documents are
	// skipped, as by the tool.
	values, empty, err := p.SignBatch(nil, texts, 0)
	if err != nil {
		fail(err)
	}
	np := len(values) / len(names)
	var ids []uint64
	var rows []uint32
	for i := range names {
		if !empty[i] {
			ids = append(ids, uint64(i))
			rows = append(rows, values[i*np:(i+1)*np]...)
		}
	}
	if err := ix.InsertValues(ids, rows, 0); err != nil {
		fail(err)
	}
	pairs, err := ix.Pairs(simlsh.QueryVerify, 10000000)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(os.Stdout)
	for _, r := range pairs {
		fmt.Fprintf(w, "%s\t%s\t%.4f\n", escape(names[r.A]), escape(names[r.B]), r.Score)
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}
