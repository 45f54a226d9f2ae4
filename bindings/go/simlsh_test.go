package simlsh

import (
	"errors"
	"fmt"
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

// dedupIndex indexes texts under ids 0, 1, ... with the "dedup" preset and,
// when given, bands x rows.
func dedupIndex(t *testing.T, texts []string, banding ...uint32) (*Params, *Index) {
	p, err := NewParams("dedup")
	if err != nil {
		t.Fatal(err)
	}
	if len(banding) == 2 {
		if _, _, err := DedupBanding(p, DedupNone, 0.99, banding[0], banding[1]); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	b := make([][]byte, len(texts))
	for i, s := range texts {
		b[i] = []byte(s)
	}
	values, _, err := p.SignBatch(nil, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, len(texts))
	for i := range ids {
		ids[i] = uint64(i)
	}
	if err := ix.InsertValues(ids, values, 1); err != nil {
		t.Fatal(err)
	}
	return p, ix
}

func TestDedupPullLoop(t *testing.T) {
	base := strings.Repeat("the harbour log of the third week, calm seas and light winds; ", 8)
	texts := []string{
		"an unrelated text about gardens and the vegetables grown in them this year",
		base,
		strings.Replace(base, "calm", "rough", 1), // a near-copy of 1
		base, // an exact copy of 1
		"another unrelated text, the minutes of a council meeting held on a tuesday",
	}
	p, ix := dedupIndex(t, texts)
	defer p.Close()
	defer ix.Close()
	d, err := NewDedup(ix, DedupExact, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Groups(); !errors.Is(err, ErrState) {
		t.Fatalf("groups before the loop: %v", err)
	}
	if err := d.SetThreads(2); err != nil {
		t.Fatal(err)
	}
	if err := d.SetThreads(1000); !errors.Is(err, ErrInvalid) {
		t.Fatalf("1000 threads: %v", err)
	}
	if err := d.Sizes([]uint64{1}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("sizes of another length: %v", err)
	}
	batches := 0
	for {
		need, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if len(need) == 0 {
			break
		}
		batches++
		if err := d.SetThreads(1); !errors.Is(err, ErrState) {
			t.Fatalf("a setting after the start: %v", err)
		}
		if err := d.Texts([]uint64{99}, [][]byte{[]byte("x")}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a text not asked for: %v", err)
		}
		got := make([][]byte, len(need))
		for i, id := range need {
			got[i] = []byte(texts[id])
		}
		// in two calls, the second one first
		h := len(need) / 2
		if err := d.Texts(need[h:], got[h:]); err != nil {
			t.Fatal(err)
		}
		if err := d.Texts(need[:h], got[:h]); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := d.Groups()
	if err != nil {
		t.Fatal(err)
	}
	if batches == 0 || len(groups) != 1 || groups[0].Centre != 1 || len(groups[0].Members) != 3 {
		t.Fatalf("groups %+v after %d batches", groups, batches)
	}
	m := groups[0].Members
	if m[0] != (DedupMember{1, 1}) || m[1].ID != 2 || !(m[1].Score >= 0.8 && m[1].Score < 1) ||
		m[2] != (DedupMember{3, 1}) {
		t.Fatalf("members %+v", m)
	}
	if n, err := d.Stat(DedupStatMembers); err != nil || n != 2 {
		t.Fatalf("members counter %d %v", n, err)
	}
	if n, err := d.Stat(DedupStatIdentical); err != nil || n != 1 {
		t.Fatalf("identical counter %d %v", n, err)
	}
	if _, err := d.Stat(DedupStat(99)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown counter: %v", err)
	}
	// Missing texts: decided by the estimate; an estimate run agrees here.
	e, err := NewDedup(ix, DedupEstimate, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if need, err := e.Next(); err != nil || len(need) != 0 {
		t.Fatalf("estimate mode asks for %v (%v)", need, err)
	}
	if g, err := e.Groups(); err != nil || len(g) != 1 || len(g[0].Members) != 3 {
		t.Fatalf("estimate groups %+v %v", g, err)
	}
	// Order: document 3 first makes it the centre.
	o, _ := NewDedup(ix, DedupNone, 0.8)
	defer o.Close()
	if err := o.Order([]uint64{3}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Next(); err != nil {
		t.Fatal(err)
	}
	if g, err := o.Groups(); err != nil || len(g) != 1 || g[0].Centre != 3 || g[0].Members[0].Score != 1 ||
		g[0].Members[1].Score != -1 {
		t.Fatalf("ordered groups %+v %v", g, err)
	}
	// The index changed since: refused, not wrong.
	x, _ := NewDedup(ix, DedupExact, 0.8)
	defer x.Close()
	sig, _ := NewSignature(p)
	defer sig.Close()
	sig.SetText([]byte("one more document, inserted after the engine was made"))
	if err := ix.Insert(7, sig); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Next(); !errors.Is(err, ErrState) {
		t.Fatalf("a changed index: %v", err)
	}
	buckets, above, err := ix.LargestBuckets(3, 3)
	if err != nil || len(buckets) == 0 || buckets[0].Size != 3 || buckets[0].Sample != 1 || above != 3 {
		t.Fatalf("largest buckets %+v %d %v", buckets, above, err)
	}
}

func TestDedupBadCalls(t *testing.T) {
	if _, err := NewDedup(nil, DedupExact, 0.8); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil index: %v", err)
	}
	p, ix := dedupIndex(t, []string{"a short text to index"})
	defer p.Close()
	if _, err := NewDedup(ix, DedupMode(7), 0.8); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := NewDedup(ix, DedupExact, 1.5); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad threshold: %v", err)
	}
	d, err := NewDedup(ix, DedupExact, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := d.Next(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a closed index: %v", err)
	}
	d.Close()
	d.Close() // a second Close is a no-op
	if _, err := d.Next(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a closed engine: %v", err)
	}
	if f := DedupPrefilter(0.8, 128); !(f > 0.6 && f < 0.8) {
		t.Fatalf("prefilter %v", f)
	}
	if DedupPrefilter(0, 128) != -1 {
		t.Fatal("prefilter of threshold 0")
	}
	if b, r, a, err := OptimalParamsRecall(128, 0.8, 0.99, 0); err != nil || b != 16 || r != 6 || a < 0.99 {
		t.Fatalf("recall banding %d x %d (%v) %v", b, r, a, err)
	}
}

func TestDedupBanding(t *testing.T) {
	p, err := NewParams("dedup")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bandsRows := func() (int64, int64) {
		b, _ := p.GetInt(ParamBands)
		r, _ := p.GetInt(ParamRows)
		return b, r
	}
	// exact: the recall banding, in the params too
	if b, r, err := DedupBanding(p, DedupExact, 0.99, 0, 0); err != nil || b != 16 || r != 6 {
		t.Fatalf("exact banding %d x %d %v", b, r, err)
	}
	if b, r := bandsRows(); b != 16 || r != 6 {
		t.Fatalf("params after the exact banding: %d x %d", b, r)
	}
	// estimate: the automatic banding
	if b, r, err := DedupBanding(p, DedupEstimate, 0.99, 0, 0); err != nil || b != 0 || r != 0 {
		t.Fatalf("estimate banding %d x %d %v", b, r, err)
	}
	if b, r := bandsRows(); b != 0 || r != 0 {
		t.Fatalf("params after the estimate banding: %d x %d", b, r)
	}
	// one side given: the other from num_perm
	if b, r, err := DedupBanding(p, DedupExact, 0.99, 20, 0); err != nil || b != 20 || r != 6 {
		t.Fatalf("20 bands: %d x %d %v", b, r, err)
	}
	// too many: refused, the banding said, the params as they were
	if b, r, err := DedupBanding(p, DedupExact, 0.99, 20, 7); !errors.Is(err, ErrInvalid) || b != 20 || r != 7 {
		t.Fatalf("20 x 7: %d x %d %v", b, r, err)
	}
	if b, r := bandsRows(); b != 20 || r != 6 {
		t.Fatalf("params after a refused banding: %d x %d", b, r)
	}
	if _, _, err := DedupBanding(p, DedupExact, 1, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("recall 1: %v", err)
	}
	if _, _, err := DedupBanding(p, DedupMode(7), 0.99, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad mode: %v", err)
	}
	if _, _, err := DedupBanding(nil, DedupExact, 0.99, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil params: %v", err)
	}
	// the banding reaches an index made from the params
	DedupBanding(p, DedupExact, 0.99, 0, 0)
	ix, err := NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if b, r, err := ix.Bands(); err != nil || b != 16 || r != 6 {
		t.Fatalf("index banding %d x %d %v", b, r, err)
	}
}

// templated: n texts of 200 words from one template, each with a fifth of
// its words its own, so that every two share about half their shingles.
func templated(n int) []string {
	texts := make([]string, n)
	for d := range texts {
		var b strings.Builder
		for i := 0; i < 200; i++ {
			if (d*131+i*71+(d*i)%97)%100 < 20 {
				fmt.Fprintf(&b, "d%dx%d ", d, i)
			} else {
				fmt.Fprintf(&b, "word%d ", i)
			}
		}
		texts[d] = b.String()
	}
	return texts
}

func TestDedupGiant(t *testing.T) {
	// 2 rows a band: buckets of most of the corpus, of unlike documents.
	p, ix := dedupIndex(t, templated(40), 64, 2)
	defer p.Close()
	defer ix.Close()
	run := func(giant uint64, cost float64) (uint64, uint64) {
		d, err := NewDedup(ix, DedupEstimate, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.SetGiant(giant); err != nil {
			t.Fatal(err)
		}
		if err := d.SetGiantCost(cost); err != nil {
			t.Fatal(err)
		}
		if need, err := d.Next(); err != nil || len(need) != 0 {
			t.Fatalf("estimate mode asks for %v (%v)", need, err)
		}
		if err := d.SetGiant(10); !errors.Is(err, ErrState) {
			t.Fatalf("giant after the start: %v", err)
		}
		aside, _ := d.Stat(DedupStatSetAside)
		members, err := d.Stat(DedupStatSetAsideMembers)
		if err != nil {
			t.Fatal(err)
		}
		return aside, members
	}
	if a, m := run(0, 64); a != 0 || m != 0 {
		t.Fatalf("no giant buckets: %d set aside (%d members)", a, m)
	}
	a, m := run(8, 0)
	t.Logf("giant 8, cost 0: %d buckets set aside, %d members", a, m)
	if a == 0 || m <= 8*a {
		t.Fatalf("giant 8, cost 0: %d set aside (%d members)", a, m)
	}
	d, _ := NewDedup(ix, DedupEstimate, 0.8)
	defer d.Close()
	if err := d.SetGiantCost(2e15); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cost 2e15: %v", err)
	}
}
