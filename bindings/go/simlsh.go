// Package simlsh is a thin cgo binding of libsimlsh (include/simlsh.h):
// near-duplicate detection with shingling, MinHash and LSH banding.
//
// Objects have Close(), which frees the C object (a finalizer does it too,
// late). Errors wrap an Errno, so errors.Is(err, simlsh.ErrInvalid) works.
// Text is []byte; ids are uint64. Thread rules are the header's: Params and
// Signature may be shared for reading, an Index takes concurrent queries
// but inserts need exclusive access; a Results value has one owner.
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

func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Params is the hash contract.
type Params struct{ p *C.simlsh_params }

// NewParams returns params set to a preset: "default" (the library's
// defaults) or "dedup" (simlsh-dedup's defaults).
func NewParams(preset string) (*Params, error) {
	var p *C.simlsh_params
	if err := check("simlsh_params_new", C.simlsh_params_new(&p, nil)); err != nil {
		return nil, err
	}
	o := &Params{p}
	runtime.SetFinalizer(o, (*Params).Close)
	cs := C.CString(preset)
	defer C.free(unsafe.Pointer(cs))
	if err := check("simlsh_params_preset", C.simlsh_params_preset(p, cs)); err != nil {
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
	return check("simlsh_params_set_double",
		C.simlsh_params_set_double(o.p, C.int(key), C.double(v)))
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
// threads (0: one per CPU): values is len(texts) x numPerm, row-major;
// empty[i] tells that text i had nothing to shingle. The texts are copied
// into C memory first, since C may not keep Go pointers.
func (o *Params) SignBatch(texts [][]byte, threads int) (values []uint32, empty []bool, err error) {
	var np C.int64_t
	if err = check("simlsh_params_get_int", C.simlsh_params_get_int(o.p, C.SIMLSH_PARAM_NUM_PERM, &np)); err != nil {
		return nil, nil, err
	}
	n := len(texts)
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	data := (*[1 << 40]byte)(C.malloc(C.size_t(total + 1)))
	ptrs := (*[1 << 30]unsafe.Pointer)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(data))
	defer C.free(unsafe.Pointer(ptrs))
	lens := make([]C.size_t, n+1)
	at := 0
	for i, t := range texts {
		copy(data[at:], t)
		ptrs[i] = unsafe.Pointer(&data[at])
		lens[i] = C.size_t(len(t))
		at += len(t)
	}
	values = make([]uint32, n*int(np)+1)
	e := make([]uint8, n+1)
	rc := C.simlsh_sign_batch((*C.uint32_t)(unsafe.Pointer(&values[0])), (*C.uint8_t)(&e[0]), o.p,
		&ptrs[0], &lens[0], C.size_t(n), C.uint32_t(threads))
	if err = check("simlsh_sign_batch", rc); err != nil {
		return nil, nil, err
	}
	empty = make([]bool, n)
	for i := range empty {
		empty[i] = e[i] != 0
	}
	return values[:n*int(np)], empty, nil
}

// Signature is a MinHash signature.
type Signature struct{ s *C.simlsh_signature }

func NewSignature(p *Params) (*Signature, error) {
	var s *C.simlsh_signature
	if err := check("simlsh_signature_new", C.simlsh_signature_new(&s, p.p)); err != nil {
		return nil, err
	}
	o := &Signature{s}
	runtime.SetFinalizer(o, (*Signature).Close)
	return o, nil
}

func (o *Signature) Close() { C.simlsh_signature_free(o.s); o.s = nil }

// SetText makes the signature that of text alone (clear, then add).
func (o *Signature) SetText(text []byte) error {
	C.simlsh_signature_clear(o.s)
	return check("simlsh_signature_add_text",
		C.simlsh_signature_add_text(o.s, bytesPtr(text), C.size_t(len(text))))
}

// Values appends the num_perm values to dst.
func (o *Signature) Values(dst []uint32) ([]uint32, error) {
	n := int(C.simlsh_signature_num_perm(o.s))
	if n < 0 {
		return dst, check("simlsh_signature_num_perm", C.int(n))
	}
	dst = append(dst, make([]uint32, n)...)
	var cnt C.size_t
	rc := C.simlsh_signature_values((*C.uint32_t)(unsafe.Pointer(&dst[len(dst)-n])),
		C.size_t(n), &cnt, o.s)
	return dst, check("simlsh_signature_values", rc)
}

// Jaccard estimates the similarity of two signatures.
func (o *Signature) Jaccard(other *Signature) (float64, error) {
	var d C.double
	err := check("simlsh_signature_jaccard", C.simlsh_signature_jaccard(&d, o.s, other.s))
	return float64(d), err
}

// Index is an LSH index of signatures under uint64 ids.
type Index struct{ ix *C.simlsh_index }

func NewIndex(p *Params) (*Index, error) {
	var ix *C.simlsh_index
	if err := check("simlsh_index_new", C.simlsh_index_new(&ix, p.p)); err != nil {
		return nil, err
	}
	o := &Index{ix}
	runtime.SetFinalizer(o, (*Index).Close)
	return o, nil
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

func rows(res *C.simlsh_results) []Row {
	n := int(C.simlsh_results_count(res))
	out := make([]Row, n)
	if n == 0 {
		return out
	}
	// Borrowed columns: copied before the results are freed.
	a := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_a(res))), n)
	b := unsafe.Slice((*uint64)(unsafe.Pointer(C.simlsh_results_b(res))), n)
	s := unsafe.Slice((*float64)(unsafe.Pointer(C.simlsh_results_scores(res))), n)
	for i := range out {
		out[i] = Row{a[i], b[i], s[i]}
	}
	return out
}

// Pairs returns the candidate pairs (a < b, sorted), verified against the
// threshold with QueryVerify, at most maxPairs of them (0: no limit).
func (o *Index) Pairs(flags int, maxPairs int) ([]Row, error) {
	var res *C.simlsh_results
	if err := check("simlsh_results_new", C.simlsh_results_new(&res, nil)); err != nil {
		return nil, err
	}
	defer C.simlsh_results_free(res)
	rc := C.simlsh_index_pairs(res, o.ix, C.int(flags), C.size_t(maxPairs))
	if err := check("simlsh_index_pairs", rc); err != nil {
		return nil, err
	}
	return rows(res), nil
}

// Query returns the ids sharing a bucket with sig (score in Row.Score).
func (o *Index) Query(sig *Signature, flags int) ([]Row, error) {
	var res *C.simlsh_results
	if err := check("simlsh_results_new", C.simlsh_results_new(&res, nil)); err != nil {
		return nil, err
	}
	defer C.simlsh_results_free(res)
	if err := check("simlsh_index_query", C.simlsh_index_query(res, o.ix, sig.s, C.int(flags))); err != nil {
		return nil, err
	}
	return rows(res), nil
}
