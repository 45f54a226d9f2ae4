// Package simlsh is a thin cgo binding of libsimlsh (include/simlsh.h). Objects
// have Close() (a finalizer calls it too, late); errors wrap an Errno, so
// errors.Is(err, simlsh.ErrInvalid) works; text is []byte, ids are uint64.
// Threads as in the header: Params and Signature may be shared for reading,
// an Index takes concurrent queries but inserts need exclusive access.
package simlsh

/*
#cgo pkg-config: simlsh
#include <stdlib.h>
#include <simlsh.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Errno is a simlsh error code (SIMLSH_E*).
type Errno int

func (e Errno) Error() string { return C.GoString(C.simlsh_strerror(C.int(e))) }

// The codes of SIMLSH_ERRNO_MAP.
const (
	ErrInvalid     = Errno(C.SIMLSH_EINVAL)
	ErrNoMem       = Errno(C.SIMLSH_ENOMEM)
	ErrMismatch    = Errno(C.SIMLSH_EMISMATCH)
	ErrCorrupt     = Errno(C.SIMLSH_ECORRUPT)
	ErrUnsupported = Errno(C.SIMLSH_EUNSUPPORTED)
	ErrNotFound    = Errno(C.SIMLSH_ENOTFOUND)
	ErrExist       = Errno(C.SIMLSH_EEXIST)
	ErrEmpty       = Errno(C.SIMLSH_EEMPTY)
	ErrUTF8        = Errno(C.SIMLSH_EUTF8)
	ErrBufSize     = Errno(C.SIMLSH_EBUFSIZE)
	ErrState       = Errno(C.SIMLSH_ESTATE)
	ErrIO          = Errno(C.SIMLSH_EIO)
)

// Parameter keys (SIMLSH_PARAM_*) and query flags.
const (
	ParamUnit      = int(C.SIMLSH_PARAM_UNIT)
	ParamK         = int(C.SIMLSH_PARAM_K)
	ParamNormalize = int(C.SIMLSH_PARAM_NORMALIZE)
	ParamSeed      = int(C.SIMLSH_PARAM_SEED)
	ParamNumPerm   = int(C.SIMLSH_PARAM_NUM_PERM)
	ParamScheme    = int(C.SIMLSH_PARAM_SCHEME)
	ParamBands     = int(C.SIMLSH_PARAM_BANDS)
	ParamRows      = int(C.SIMLSH_PARAM_ROWS)
	ParamThreshold = int(C.SIMLSH_PARAM_THRESHOLD)
	ParamFPWeight  = int(C.SIMLSH_PARAM_FP_WEIGHT)
	ParamFNWeight  = int(C.SIMLSH_PARAM_FN_WEIGHT)
	QueryVerify    = int(C.SIMLSH_QUERY_VERIFY)
)

// Error is a failed call: the C function and its code.
type Error struct {
	Op   string
	Code Errno
}

func (e *Error) Error() string { return e.Op + ": " + e.Code.Error() }
func (e *Error) Unwrap() error { return e.Code }
func check(op string, rc C.int) error {
	if rc < 0 {
		return &Error{op, Errno(rc)}
	}
	return nil
}

// create makes a C object with mk and wraps it in a Go object whose
// finalizer closes it.
func create[H any, O any](op string, mk func(**H) C.int, wrap func(*H) *O, close func(*O)) (*O, error) {
	var h *H
	if err := check(op, mk(&h)); err != nil {
		return nil, err
	}
	o := wrap(h)
	runtime.SetFinalizer(o, close)
	return o, nil
}

// Params is the hash contract.
type Params struct{ p *C.simlsh_params }

// NewParams returns params set to a preset: "default" (the library's
// defaults) or "dedup" (simlsh-dedup's defaults).
func NewParams(preset string) (*Params, error) {
	o, err := create("simlsh_params_new", func(p **C.simlsh_params) C.int { return C.simlsh_params_new(p, nil) },
		func(p *C.simlsh_params) *Params { return &Params{p} }, (*Params).Close)
	if err != nil {
		return nil, err
	}
	cs := C.CString(preset)
	defer C.free(unsafe.Pointer(cs))
	if err := check("simlsh_params_preset", C.simlsh_params_preset(o.p, cs)); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// Close frees the params; objects built from them stay valid.
func (o *Params) Close() { C.simlsh_params_free(o.p); o.p = nil }

func (o *Params) SetInt(key int, v int64) error {
	return check("simlsh_params_set_int", C.simlsh_params_set_int(o.p, C.int(key), C.int64_t(v)))
}

func (o *Params) SetFloat(key int, v float64) error {
	return check("simlsh_params_set_double", C.simlsh_params_set_double(o.p, C.int(key), C.double(v)))
}

func (o *Params) GetInt(key int) (int64, error) {
	var v C.int64_t
	err := check("simlsh_params_get_int", C.simlsh_params_get_int(o.p, C.int(key), &v))
	return int64(v), err
}

func (o *Params) GetFloat(key int) (float64, error) {
	var v C.double
	err := check("simlsh_params_get_double", C.simlsh_params_get_double(o.p, C.int(key), &v))
	return float64(v), err
}

// OptimalParamsRecall is the banding with the least false-positive area
// whose probability of making a pair at threshold t a candidate is at least
// recall (over the window width above t when width > 0), and that
// probability (simlsh_lsh_optimal_params_recall).
func OptimalParamsRecall(numPerm int, t, recall, width float64) (bands, rows uint32, achieved float64, err error) {
	if numPerm < 0 || numPerm > 1<<31 {
		return 0, 0, 0, &Error{"simlsh_lsh_optimal_params_recall", ErrInvalid}
	}
	var b, r C.uint32_t
	var a C.double
	rc := C.simlsh_lsh_optimal_params_recall(&b, &r, &a, C.uint32_t(numPerm), C.double(t), C.double(recall), C.double(width))
	return uint32(b), uint32(r), float64(a), check("simlsh_lsh_optimal_params_recall", rc)
}

// Describe returns the whole contract as "key=value ..." (simlsh_params_describe).
func (o *Params) Describe() (string, error) {
	var n C.size_t
	if err := check("simlsh_params_describe", C.simlsh_params_describe(nil, 0, &n, o.p)); err != nil {
		return "", err
	}
	buf := make([]byte, n+1)
	rc := C.simlsh_params_describe((*C.char)(unsafe.Pointer(&buf[0])), n+1, &n, o.p)
	return string(buf[:n]), check("simlsh_params_describe", rc)
}

// SignBatch signs texts in one call (simlsh_sign_batch) on up to threads
// threads (0: one per CPU): values is len(texts) x numPerm, row-major, in
// dst's memory when its capacity suffices (sign a stream in chunks into one
// reused dst); empty[i] tells that text i had nothing to shingle. The texts
// are copied into one C block first, since C memory may not hold Go pointers.
func (o *Params) SignBatch(dst []uint32, texts [][]byte, threads int) (values []uint32, empty []bool, err error) {
	np, err := o.numPerm()
	if err != nil {
		return nil, nil, err
	}
	n, total := len(texts), 0
	for _, t := range texts {
		total += len(t)
	}
	block := C.malloc(C.size_t((n+1)*int(unsafe.Sizeof(uintptr(0))) + total + 1))
	defer C.free(block)
	ptrs := unsafe.Slice((*unsafe.Pointer)(block), n+1)
	data := unsafe.Slice((*byte)(unsafe.Add(block, (n+1)*int(unsafe.Sizeof(uintptr(0))))), total+1)
	lens := make([]C.size_t, n+1)
	at := 0
	for i, t := range texts {
		ptrs[i], lens[i] = unsafe.Pointer(&data[at]), C.size_t(len(t))
		at += copy(data[at:], t)
	}
	// The +1 keeps &values[0] and &empty[0] valid for n = 0.
	if cap(dst) < n*np+1 {
		dst = make([]uint32, n*np+1)
	}
	values, empty = dst[:n*np+1], make([]bool, n+1) // C writes 0 or 1: Go's bools
	rc := C.simlsh_sign_batch((*C.uint32_t)(unsafe.Pointer(&values[0])),
		(*C.uint8_t)(unsafe.Pointer(&empty[0])), o.p, &ptrs[0], &lens[0], C.size_t(n), C.uint32_t(threads))
	if err = check("simlsh_sign_batch", rc); err != nil {
		return nil, nil, err
	}
	return values[:n*np], empty[:n], nil
}

func (o *Params) numPerm() (int, error) {
	var np C.int64_t
	err := check("simlsh_params_get_int", C.simlsh_params_get_int(o.p, C.SIMLSH_PARAM_NUM_PERM, &np))
	return int(np), err
}

// Signature is a MinHash signature.
type Signature struct {
	s  *C.simlsh_signature
	np int
}

func NewSignature(p *Params) (*Signature, error) {
	return create("simlsh_signature_new",
		func(s **C.simlsh_signature) C.int { return C.simlsh_signature_new(s, p.p) },
		func(s *C.simlsh_signature) *Signature { return &Signature{s, int(C.simlsh_signature_num_perm(s))} },
		(*Signature).Close)
}

func (o *Signature) Close() { C.simlsh_signature_free(o.s); o.s = nil }

// SetText makes the signature that of text alone (clear, then add).
func (o *Signature) SetText(text []byte) error {
	C.simlsh_signature_clear(o.s)
	var p unsafe.Pointer
	if len(text) > 0 {
		p = unsafe.Pointer(&text[0])
	}
	return check("simlsh_signature_add_text", C.simlsh_signature_add_text(o.s, p, C.size_t(len(text))))
}

// Values appends the num_perm values to dst.
func (o *Signature) Values(dst []uint32) ([]uint32, error) {
	at := len(dst)
	dst = append(dst, make([]uint32, o.np)...)
	var cnt C.size_t
	rc := C.simlsh_signature_values((*C.uint32_t)(unsafe.Pointer(&dst[at])), C.size_t(o.np), &cnt, o.s)
	return dst, check("simlsh_signature_values", rc)
}

// Jaccard estimates the similarity of two signatures.
func (o *Signature) Jaccard(other *Signature) (float64, error) {
	var d C.double
	err := check("simlsh_signature_jaccard", C.simlsh_signature_jaccard(&d, o.s, other.s))
	return float64(d), err
}

// Index is an LSH index of signatures under uint64 ids.
type Index struct {
	ix *C.simlsh_index
	np int
}

func NewIndex(p *Params) (*Index, error) {
	np, err := p.numPerm()
	if err != nil {
		return nil, err
	}
	return create("simlsh_index_new", func(ix **C.simlsh_index) C.int { return C.simlsh_index_new(ix, p.p) },
		func(ix *C.simlsh_index) *Index { return &Index{ix, np} }, (*Index).Close)
}

func (o *Index) Close() { C.simlsh_index_free(o.ix); o.ix = nil }

// Insert copies sig into the index under id.
func (o *Index) Insert(id uint64, sig *Signature) error {
	return check("simlsh_index_insert", C.simlsh_index_insert(o.ix, C.uint64_t(id), sig.s))
}

// InsertValues inserts len(ids) documents given as rows of values (as
// SignBatch returns them) in one call, on up to threads threads.
func (o *Index) InsertValues(ids []uint64, values []uint32, threads int) error {
	if len(ids) == 0 {
		return nil
	} else if len(values) < len(ids)*o.np { // C would read past the end
		return &Error{"simlsh_index_insert_values", ErrInvalid}
	}
	rc := C.simlsh_index_insert_values(o.ix, (*C.uint64_t)(unsafe.Pointer(&ids[0])),
		(*C.uint32_t)(unsafe.Pointer(&values[0])), C.size_t(len(ids)), C.uint32_t(threads))
	return check("simlsh_index_insert_values", rc)
}

// Bands returns the resolved number of bands and rows.
func (o *Index) Bands() (bands, rows uint32, err error) {
	var b, r C.uint32_t
	err = check("simlsh_index_bands", C.simlsh_index_bands(&b, &r, o.ix))
	return uint32(b), uint32(r), err
}

// Row is one result row: ids a and b and a score (see simlsh_results).
type Row struct {
	A, B  uint64
	Score float64
}

// results runs fill on fresh results and copies the borrowed columns out
// (never NULL, even when empty) before freeing them.
func results(op string, fill func(*C.simlsh_results) C.int) ([]Row, error) {
	var res *C.simlsh_results
	if err := check("simlsh_results_new", C.simlsh_results_new(&res, nil)); err != nil {
		return nil, err
	}
	defer C.simlsh_results_free(res)
	if err := check(op, fill(res)); err != nil {
		return nil, err
	}
	n := int(C.simlsh_results_count(res))
	a := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_a(res))), n)
	b := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_b(res))), n)
	s := unsafe.Slice((*float64)(unsafe.Pointer(C.simlsh_results_scores(res))), n)
	out := make([]Row, n)
	for i := range out {
		out[i] = Row{a[i], b[i], s[i]}
	}
	return out, nil
}

// Pairs returns the candidate pairs (a < b, sorted), verified against the
// threshold with QueryVerify, at most maxPairs of them (0: no limit).
func (o *Index) Pairs(flags int, maxPairs int) ([]Row, error) {
	return results("simlsh_index_pairs", func(r *C.simlsh_results) C.int {
		return C.simlsh_index_pairs(r, o.ix, C.int(flags), C.size_t(maxPairs))
	})
}

// Query returns the ids sharing a bucket with sig (score in Row.Score).
func (o *Index) Query(sig *Signature, flags int) ([]Row, error) {
	return results("simlsh_index_query", func(r *C.simlsh_results) C.int {
		return C.simlsh_index_query(r, o.ix, sig.s, C.int(flags))
	})
}
