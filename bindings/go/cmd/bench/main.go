// bench signs 100,000 documents of 45 bytes as bindings/bench-c.c does and
// prints one JSON object per way of signing.
package main

import (
	"fmt"
	"os"
	"time"

	"simlsh.invalid/simlsh"
)

const base = "lorem ipsum dolor sit amet, consectetur adipiscing elit"

func main() {
	const docs = 100000
	p, err := simlsh.NewParams("dedup")
	if err != nil {
		panic(err)
	}
	sig, err := simlsh.NewSignature(p)
	if err != nil {
		panic(err)
	}
	texts := make([][]byte, docs)
	for i := range texts {
		texts[i] = []byte(fmt.Sprintf("%05d %.39s", i, base))
	}
	values := make([]uint32, 0, 128)
	var check uint64
	t0 := time.Now()
	for i, t := range texts {
		if err := sig.SetText(t); err != nil {
			panic(err)
		}
		if values, err = sig.Values(values[:0]); err != nil {
			panic(err)
		}
		check += uint64(values[i%128])
	}
	report("go", time.Since(t0).Seconds(), check)
	// The same documents in chunks into one reused matrix, warmed before
	// the clock starts (see bindings/bench-c.c), on one thread.
	const chunk = 4096
	all := make([]uint32, chunk*128+1)
	for i := range all {
		all[i] = 1
	}
	check = 0
	t0 = time.Now()
	for at := 0; at < docs; at += chunk {
		end := at + chunk
		if end > docs {
			end = docs
		}
		if all, _, err = p.SignBatch(all, texts[at:end], 1); err != nil {
			panic(err)
		}
		for i := at; i < end; i++ {
			check += uint64(all[(i-at)*128+i%128])
		}
	}
	report("go-batch", time.Since(t0).Seconds(), check)
}

func report(name string, dt float64, check uint64) {
	fmt.Fprintf(os.Stdout, "{\"binding\": \"%s\", \"docs\": %d, \"doc_bytes\": 45, "+
		"\"seconds\": %.4f, \"docs_per_s\": %.0f, \"check\": %d}\n", name, 100000, dt,
		100000/dt, check)
}
