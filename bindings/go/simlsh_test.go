package simlsh

import (
	"errors"
	"strings"
	"testing"
)

func TestErrorsIs(t *testing.T) {
	p, err := NewParams("default")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.SetInt(ParamK, 0)
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNoMem) {
		t.Fatalf("k = 0: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "simlsh_params_set_int" || int(e.Code) != -1 {
		t.Fatalf("not an *Error: %#v", err)
	}
	if _, err := NewParams("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown preset: %v", err)
	}
}

func TestPipeline(t *testing.T) {
	p, _ := NewParams("dedup")
	defer p.Close()
	d, err := p.Describe()
	if err != nil || !strings.Contains(d, "normalize=lower,space") || !strings.Contains(d, "fn_weight=0.9") {
		t.Fatalf("describe: %q %v", d, err)
	}
	ix, _ := NewIndex(p)
	defer ix.Close()
	if b, r, err := ix.Bands(); err != nil || b != 14 || r != 9 {
		t.Fatalf("bands %d x %d, %v", b, r, err)
	}
	a, _ := NewSignature(p)
	b, _ := NewSignature(p)
	defer a.Close()
	defer b.Close()
	text := "The quick brown fox jumps over the lazy dog, again and again."
	if err := a.SetText([]byte(text)); err != nil {
		t.Fatal(err)
	}
	// Normalisation: case and spacing do not matter under "dedup".
	if err := b.SetText([]byte(strings.ToUpper(strings.ReplaceAll(text, " ", "  ")))); err != nil {
		t.Fatal(err)
	}
	if j, err := a.Jaccard(b); err != nil || j != 1 {
		t.Fatalf("jaccard %v %v", j, err)
	}
	v, err := a.Values(nil)
	if err != nil || len(v) != 128 {
		t.Fatalf("values %d %v", len(v), err)
	}
	if err := ix.Insert(1<<63+5, a); err != nil { // a 64-bit id
		t.Fatal(err)
	}
	if err := ix.Insert(1<<63+5, a); !errors.Is(err, ErrExist) {
		t.Fatalf("second insert: %v", err)
	}
	rows, err := ix.Query(b, QueryVerify)
	if err != nil || len(rows) != 1 || rows[0].A != 1<<63+5 || rows[0].Score != 1 {
		t.Fatalf("query %v %v", rows, err)
	}
	if err := a.SetText(nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert(2, a); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty signature: %v", err)
	}
	pairs, err := ix.Pairs(QueryVerify, 0)
	if err != nil || pairs == nil || len(pairs) != 0 {
		t.Fatalf("pairs of one document: %v %v", pairs, err)
	}
}

func TestSignBatch(t *testing.T) {
	p, _ := NewParams("dedup")
	defer p.Close()
	texts := [][]byte{[]byte("first document, long enough"), nil, []byte("the second one here")}
	values, empty, err := p.SignBatch(nil, texts, 2)
	if err != nil || len(values) != 3*128 || !empty[1] || empty[0] || empty[2] {
		t.Fatalf("batch: %d values, empty %v, %v", len(values), empty, err)
	}
	// A large enough dst is reused.
	dst := make([]uint32, 0, 3*128+1)
	again, _, err := p.SignBatch(dst, texts[2:], 1)
	if err != nil || len(again) != 128 || &again[0] != &dst[:1][0] || again[5] != values[256+5] {
		t.Fatalf("reused dst: %d values, %v", len(again), err)
	}
	s, _ := NewSignature(p)
	defer s.Close()
	for _, i := range []int{0, 2} {
		s.SetText(texts[i])
		one, _ := s.Values(nil)
		for j := range one {
			if one[j] != values[i*128+j] {
				t.Fatalf("text %d value %d: batch %d, signature %d", i, j, values[i*128+j], one[j])
			}
		}
	}
	ix, _ := NewIndex(p)
	defer ix.Close()
	// Fewer rows than ids: refused, never read past the slice.
	if err := ix.InsertValues([]uint64{7, 9}, values[:200], 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short values: %v", err)
	}
	if err := ix.InsertValues([]uint64{7, 9}, append(values[:128:128], values[256:]...), 1); err != nil {
		t.Fatal(err)
	}
	if err := ix.InsertValues([]uint64{1}, values[128:256], 1); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty row: %v", err)
	}
}
