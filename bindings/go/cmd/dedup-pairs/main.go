// dedup-pairs prints what `simlsh-dedup --output pairs [--threshold T] DIR...`
// prints, through the Go binding: the "dedup" preset, documents numbered in
// the tool's walk order (depth first, names in byte order), pairs verified
// by estimate, TSV with 4 decimals.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"simlsh.invalid/simlsh"
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
	sig, err := simlsh.NewSignature(p)
	if err != nil {
		fail(err)
	}
	defer sig.Close()
	for id, name := range names {
		text, err := os.ReadFile(name)
		if err == nil {
			err = sig.SetText(text)
		}
		if err == nil {
			err = ix.Insert(uint64(id), sig)
		}
		if errors.Is(err, simlsh.ErrEmpty) {
			continue // as the tool: empty documents are skipped
		}
		if err != nil {
			fail(err)
		}
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
