// bench signs 100,000 documents of 45 bytes as bindings/bench-c.c does and
// prints one JSON object per way of signing.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	simlsh "github.com/simlsh/simlsh/bindings/go"
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
	t0, c0 := time.Now(), cpu()
	for i, t := range texts {
		if err := sig.SetText(t); err != nil {
			panic(err)
		}
		if values, err = sig.Values(values[:0]); err != nil {
			panic(err)
		}
		check += uint64(values[i%128])
	}
	report("go", time.Since(t0).Seconds(), cpu()-c0, check)
	// The same documents in chunks into one reused matrix (see
	// bindings/bench-c.c), on one thread.
	const chunk = 4096
	// Two passes, the second timed, as in every binding: the first maps
	// the matrix.
	var all []uint32
	for pass := 0; pass < 2; pass++ {
		check = 0
		t0, c0 = time.Now(), cpu()
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
	}
	report("go-batch", time.Since(t0).Seconds(), cpu()-c0, check)
}

// cpu is the process's CPU time in seconds, steadier than wall time on a
// loaded machine.
func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}

func report(name string, dt, cpu float64, check uint64) {
	fmt.Fprintf(os.Stdout, "{\"binding\": \"%s\", \"docs\": %d, \"doc_bytes\": 45, "+
		"\"seconds\": %.4f, \"docs_per_s\": %.0f, \"cpu_seconds\": %.4f, "+
		"\"cpu_docs_per_s\": %.0f, \"check\": %d}\n", name, 100000, dt, 100000/dt, cpu,
		100000/cpu, check)
}
