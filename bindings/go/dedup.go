package simlsh

/*
#include <stdlib.h>
#include <simlsh.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// DedupMode is how the dedup engine verifies a bucket-mate (enum
// simlsh_dedup_mode).
type DedupMode int

const (
	DedupNone     = DedupMode(C.SIMLSH_DEDUP_NONE)     // every bucket-mate is claimed
	DedupEstimate = DedupMode(C.SIMLSH_DEDUP_ESTIMATE) // the signature estimate >= threshold
	DedupExact    = DedupMode(C.SIMLSH_DEDUP_EXACT)    // the exact Jaccard of the texts
)

// DedupStat names a counter of Dedup.Stat (enum simlsh_dedup_stat).
type DedupStat int

const (
	DedupStatVisits     = DedupStat(C.SIMLSH_DEDUP_STAT_VISITS)
	DedupStatCandidates = DedupStat(C.SIMLSH_DEDUP_STAT_CANDIDATES)
	DedupStatExact      = DedupStat(C.SIMLSH_DEDUP_STAT_EXACT)
	DedupStatIdentical  = DedupStat(C.SIMLSH_DEDUP_STAT_IDENTICAL)
	DedupStatEstimated  = DedupStat(C.SIMLSH_DEDUP_STAT_ESTIMATED)
	DedupStatTexts      = DedupStat(C.SIMLSH_DEDUP_STAT_TEXTS)
	DedupStatBatches    = DedupStat(C.SIMLSH_DEDUP_STAT_BATCHES)
	DedupStatSetBytes   = DedupStat(C.SIMLSH_DEDUP_STAT_SET_BYTES)
	DedupStatGroups     = DedupStat(C.SIMLSH_DEDUP_STAT_GROUPS)
	DedupStatMembers    = DedupStat(C.SIMLSH_DEDUP_STAT_MEMBERS)
	DedupStatEdits      = DedupStat(C.SIMLSH_DEDUP_STAT_EDITS)
	// buckets of unlike documents set aside (SetGiant), and their members
	DedupStatSetAside        = DedupStat(C.SIMLSH_DEDUP_STAT_SET_ASIDE)
	DedupStatSetAsideMembers = DedupStat(C.SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS)
	// pairs of DedupStatExact rejected from a sample of their sets
	DedupStatSampled = DedupStat(C.SIMLSH_DEDUP_STAT_SAMPLED)
)

// DedupBanding sets the bands and rows of p to the deduplication policy's
// banding for mode (simlsh_dedup_banding), the one simlsh-dedup uses: with
// bands and rows both 0, DedupExact takes the banding with the least
// false-positive area that makes a pair at p's threshold a candidate with
// probability recall (16 x 6 for 0.8 and 128 permutations at 0.99), and
// the other modes keep the automatic banding (0, 0); one of the two alone
// makes the other num_perm divided by it. It returns the banding, also
// with an error wrapping ErrInvalid when it does not fit (p is then
// unchanged).
func DedupBanding(p *Params, mode DedupMode, recall float64, bands, rows uint32) (b, r uint32, err error) {
	if p == nil || p.p == nil {
		return 0, 0, &Error{"simlsh_dedup_banding", ErrInvalid}
	}
	var cb, cr C.uint32_t
	defer runtime.KeepAlive(p)
	rc := C.simlsh_dedup_banding(p.p, C.int(mode), C.double(recall), C.uint32_t(bands), C.uint32_t(rows), &cb, &cr)
	return uint32(cb), uint32(cr), check("simlsh_dedup_banding", rc)
}

// DedupPrefilter is the exact mode's default prefilter for threshold and
// numPerm (simlsh_dedup_prefilter), or -1 when they are out of range.
func DedupPrefilter(threshold float64, numPerm int) float64 {
	if numPerm < 0 || numPerm > 1<<31 {
		return -1
	}
	return float64(C.simlsh_dedup_prefilter(C.double(threshold), C.uint32_t(numPerm)))
}

// Dedup is the library's dedup engine over an Index (simlsh_dedup_*): star
// groups straight from the index's buckets. Configure it (SetThreads,
// SetMemory, SetPrefilter, SetKeepBelow, SetGiant, SetGiantCost, Order,
// Sizes) before the first Next; then, in exact mode, hand over the texts
// each Next names with Texts (or Missing) until Next names none; then read
// Groups.
//
// The engine reads the Index it was made from on every Next and keeps it
// alive; the index must not change while the engine is in use (inserts and
// removals make Next fail with ErrState). Threads: a Dedup needs exclusive
// access; other goroutines may query the index meanwhile.
type Dedup struct {
	d    *C.simlsh_dedup
	ix   *Index
	need *C.simlsh_results
}

// NewDedup makes an engine over ix (which must store signatures: the
// default) for mode and threshold in (0, 1] (ignored by DedupNone).
// Priority is by ascending id until Order says otherwise.
func NewDedup(ix *Index, mode DedupMode, threshold float64) (*Dedup, error) {
	if ix == nil || ix.ix == nil {
		return nil, &Error{"simlsh_dedup_new", ErrInvalid}
	}
	var d *C.simlsh_dedup
	if err := check("simlsh_dedup_new", C.simlsh_dedup_new(&d, ix.ix, C.int(mode), C.double(threshold))); err != nil {
		return nil, err
	}
	o := &Dedup{d: d, ix: ix}
	if err := check("simlsh_results_new", C.simlsh_results_new(&o.need, nil)); err != nil {
		C.simlsh_dedup_free(d)
		return nil, err
	}
	runtime.SetFinalizer(o, (*Dedup).Close)
	return o, nil
}

// Close frees the engine (a second Close is a no-op).
func (o *Dedup) Close() {
	C.simlsh_dedup_free(o.d)
	C.simlsh_results_free(o.need)
	o.d, o.need, o.ix = nil, nil, nil
}

func (o *Dedup) set(key C.int, v float64) error {
	defer runtime.KeepAlive(o)
	return check("simlsh_dedup_set", C.simlsh_dedup_set(o.d, key, C.double(v)))
}

// SetThreads sets the threads that verify the texts of one Texts call
// (0: one per online CPU; default 1).
func (o *Dedup) SetThreads(n int) error { return o.set(C.SIMLSH_DEDUP_THREADS, float64(n)) }

// SetMemory bounds the bytes of text one batch asks for (default 64 MiB).
func (o *Dedup) SetMemory(bytes uint64) error { return o.set(C.SIMLSH_DEDUP_MEMORY, float64(bytes)) }

// SetPrefilter sets the estimate a pair needs before its texts are compared
// in exact mode (default DedupPrefilter(threshold, numPerm); 0 compares
// every bucket-mate).
func (o *Dedup) SetPrefilter(p float64) error { return o.set(C.SIMLSH_DEDUP_PREFILTER, p) }

// SetKeepBelow makes ids below id kept documents: centres when their turn
// comes, never claimed (ids up to 2^53 are exact).
func (o *Dedup) SetKeepBelow(id uint64) error { return o.set(C.SIMLSH_DEDUP_KEEP_BELOW, float64(id)) }

// SetGiant sets the size above which a bucket is judged from a sample and,
// when it holds unlike documents, may be set aside (default 64; 0: none).
// Setting buckets aside can only lose groups, never make a wrong one.
func (o *Dedup) SetGiant(members uint64) error {
	return o.set(C.SIMLSH_DEDUP_GIANT, float64(members))
}

// SetGiantCost sets what the unlike buckets kept may cost, in looks per
// document and band (default 64; 0 sets every unlike bucket above SetGiant
// aside).
func (o *Dedup) SetGiantCost(looks float64) error { return o.set(C.SIMLSH_DEDUP_GIANT_COST, looks) }

// ids64 is a pointer C may read len(ids) entries from (nil for none). A
// []uint64 holds no Go pointers, so C may read it during the call.
func ids64(ids []uint64) *C.uint64_t {
	if len(ids) == 0 {
		return nil
	}
	return (*C.uint64_t)(unsafe.Pointer(&ids[0]))
}

// Order sets the priority: ids first (the first occurrence counts, ids the
// index does not hold are ignored), then every other document by id.
func (o *Dedup) Order(ids []uint64) error {
	defer runtime.KeepAlive(o)
	return check("simlsh_dedup_order", C.simlsh_dedup_order(o.d, ids64(ids), C.size_t(len(ids))))
}

// Sizes gives the text sizes in bytes that batches are measured with.
func (o *Dedup) Sizes(ids []uint64, bytes []uint64) error {
	if len(bytes) != len(ids) {
		return &Error{"simlsh_dedup_sizes", ErrInvalid}
	}
	defer runtime.KeepAlive(o)
	return check("simlsh_dedup_sizes", C.simlsh_dedup_sizes(o.d, ids64(ids), ids64(bytes), C.size_t(len(ids))))
}

// Next places every document that needs no text and returns the ids whose
// texts are needed next (centres first, then by id); none means the
// groups are complete (always so for DedupNone and DedupEstimate).
func (o *Dedup) Next() ([]uint64, error) {
	if o.d == nil || o.ix == nil || o.ix.ix == nil {
		return nil, &Error{"simlsh_dedup_next", ErrInvalid}
	}
	// the finalizers of o and its Index must not run during the call
	defer runtime.KeepAlive(o)
	defer runtime.KeepAlive(o.ix)
	if err := check("simlsh_dedup_next", C.simlsh_dedup_next(o.need, o.d, o.ix.ix)); err != nil {
		return nil, err
	}
	n := int(C.simlsh_results_count(o.need))
	ids := make([]uint64, n)
	copy(ids, unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_a(o.need))), n))
	return ids, nil
}

// Texts hands over the texts of ids (texts[i] is the text of ids[i]) that
// the last Next asked for, in any order and in as many calls as the caller
// likes. They are copied into C memory for the call and not kept. An error
// wrapping ErrUTF8 (UTF8_POLICY reject) means that the invalid texts count
// as missing and the others were taken: the loop may go on.
func (o *Dedup) Texts(ids []uint64, texts [][]byte) error {
	const op = "simlsh_dedup_texts"
	if len(texts) != len(ids) {
		return &Error{op, ErrInvalid}
	}
	n, total := len(ids), 0
	for _, t := range texts {
		total += len(t)
	}
	// C memory may not hold Go pointers: pointers, lengths and bytes go into
	// one C block, as SignBatch does.
	word := int(unsafe.Sizeof(uintptr(0)))
	block := C.malloc(C.size_t(2*(n+1)*word + total + 1))
	if block == nil {
		return &Error{op, ErrNoMem}
	}
	defer C.free(block)
	ptrs := unsafe.Slice((*unsafe.Pointer)(block), n+1)
	lens := unsafe.Slice((*C.size_t)(unsafe.Add(block, (n+1)*word)), n+1)
	data := unsafe.Slice((*byte)(unsafe.Add(block, 2*(n+1)*word)), total+1)
	at := 0
	for i, t := range texts {
		ptrs[i], lens[i] = unsafe.Pointer(&data[at]), C.size_t(len(t))
		at += copy(data[at:], t)
	}
	defer runtime.KeepAlive(o)
	return check(op, C.simlsh_dedup_texts(o.d, ids64(ids), &ptrs[0], &lens[0], C.size_t(n)))
}

// Missing says that the texts of ids cannot be had: their pairs are decided
// by the signature estimate.
func (o *Dedup) Missing(ids []uint64) error {
	defer runtime.KeepAlive(o)
	return check("simlsh_dedup_missing", C.simlsh_dedup_missing(o.d, ids64(ids), C.size_t(len(ids))))
}

// DedupMember is one document of a group and its verified similarity with
// the group's centre (1 for the centre, -1 for DedupNone).
type DedupMember struct {
	ID    uint64
	Score float64
}

// DedupGroup is a group of two or more documents: its centre (the kept
// one) and its members, the centre first, then by priority.
type DedupGroup struct {
	Centre  uint64
	Members []DedupMember
}

// Groups returns the groups with at least one member besides the centre,
// in their centres' priority order (ErrState before Next has named no
// texts). A document in no group is kept alone.
func (o *Dedup) Groups() ([]DedupGroup, error) {
	var res *C.simlsh_results
	if err := check("simlsh_results_new", C.simlsh_results_new(&res, nil)); err != nil {
		return nil, err
	}
	defer C.simlsh_results_free(res)
	defer runtime.KeepAlive(o)
	var ng C.size_t
	if err := check("simlsh_dedup_groups", C.simlsh_dedup_groups(res, &ng, o.d)); err != nil {
		return nil, err
	}
	n := int(C.simlsh_results_count(res))
	a := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_a(res))), n)
	b := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_b(res))), n)
	s := unsafe.Slice((*float64)(unsafe.Pointer(C.simlsh_results_scores(res))), n)
	groups := make([]DedupGroup, int(ng))
	for g := range groups {
		var lo, hi C.size_t
		if err := check("simlsh_results_offset", C.simlsh_results_offset(&lo, res, C.size_t(g))); err != nil {
			return nil, err
		}
		if err := check("simlsh_results_offset", C.simlsh_results_offset(&hi, res, C.size_t(g+1))); err != nil {
			return nil, err
		}
		m := make([]DedupMember, 0, int(hi-lo))
		for i := int(lo); i < int(hi); i++ {
			m = append(m, DedupMember{a[i], s[i]})
		}
		groups[g] = DedupGroup{Centre: b[lo], Members: m}
	}
	return groups, nil
}

// Stat returns a counter of the work done so far.
func (o *Dedup) Stat(key DedupStat) (uint64, error) {
	var v C.uint64_t
	defer runtime.KeepAlive(o)
	err := check("simlsh_dedup_stat", C.simlsh_dedup_stat(&v, o.d, C.int(key)))
	return uint64(v), err
}

// Bucket is one of an index's largest buckets: its smallest member, its
// band and its size.
type Bucket struct {
	Sample uint64
	Band   uint32
	Size   uint64
}

// LargestBuckets returns the k largest buckets with at least minSize
// members, largest first, and the number of documents in at least one
// bucket of minSize or more members (simlsh_index_largest_buckets).
func (o *Index) LargestBuckets(k, minSize int) ([]Bucket, uint64, error) {
	if k < 0 || minSize < 0 {
		return nil, 0, &Error{"simlsh_index_largest_buckets", ErrInvalid}
	}
	var above C.uint64_t
	rows, err := results("simlsh_index_largest_buckets", func(r *C.simlsh_results) C.int {
		return C.simlsh_index_largest_buckets(r, &above, o.ix, C.size_t(k), C.size_t(minSize))
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Bucket, len(rows))
	for i, r := range rows {
		out[i] = Bucket{r.A, uint32(r.B), uint64(r.Score)}
	}
	return out, uint64(above), nil
}
