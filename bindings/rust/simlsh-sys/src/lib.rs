//! Raw declarations of the parts of libsimlsh (include/simlsh.h) that the
//! safe `simlsh` crate uses. Every function returning `c_int` returns 0 or a
//! negative SIMLSH_E* code unless its C documentation says otherwise.
#![allow(non_camel_case_types)]
use std::os::raw::{c_char, c_double, c_int, c_uint, c_void};

macro_rules! opaque {
    ($($name:ident),*) => { $(#[repr(C)] pub struct $name { _p: [u8; 0] })* };
}
opaque!(simlsh_params, simlsh_signature, simlsh_index, simlsh_results, simlsh_dedup);
type Params = simlsh_params;
type Sig = simlsh_signature;
type Index = simlsh_index;
type Results = simlsh_results;
type Dedup = simlsh_dedup;

pub const SIMLSH_KIND_PARAM: c_int = 2;
pub const SIMLSH_KIND_QUERY_FLAG: c_int = 9;
pub const SIMLSH_PARAM_K: c_int = 2;
pub const SIMLSH_PARAM_NUM_PERM: c_int = 7;
pub const SIMLSH_PARAM_BANDS: c_int = 9;
pub const SIMLSH_PARAM_ROWS: c_int = 10;
pub const SIMLSH_PARAM_THRESHOLD: c_int = 13;
pub const SIMLSH_QUERY_VERIFY: c_int = 1;
pub const SIMLSH_EUTF8: c_int = -9;

// The values of enum simlsh_dedup_mode, simlsh_dedup_key and
// simlsh_dedup_stat are read at run time by name, from these kinds.
pub const SIMLSH_KIND_DEDUP_MODE: c_int = 11;
pub const SIMLSH_KIND_DEDUP_KEY: c_int = 12;
pub const SIMLSH_KIND_DEDUP_STAT: c_int = 13;

#[rustfmt::skip]
extern "C" {
    pub fn simlsh_version_number() -> c_uint;
    pub fn simlsh_strerror(err: c_int) -> *const c_char;
    pub fn simlsh_error_name(err: c_int) -> *const c_char;
    pub fn simlsh_constant_value(out: *mut i64, kind: c_int, name: *const c_char) -> c_int;
    pub fn simlsh_constant_name(kind: c_int, value: i64) -> *const c_char;
    pub fn simlsh_constant_at(value: *mut i64, name: *mut *const c_char, kind: c_int,
                              i: usize) -> c_int;
    pub fn simlsh_params_new(out: *mut *mut Params, alloc: *const c_void) -> c_int;
    pub fn simlsh_params_free(p: *mut Params);
    pub fn simlsh_params_preset(p: *mut Params, name: *const c_char) -> c_int;
    pub fn simlsh_params_set_int(p: *mut Params, key: c_int, v: i64) -> c_int;
    pub fn simlsh_params_set_double(p: *mut Params, key: c_int, v: c_double) -> c_int;
    pub fn simlsh_params_get_int(p: *const Params, key: c_int, out: *mut i64) -> c_int;
    pub fn simlsh_params_get_double(p: *const Params, key: c_int, out: *mut c_double) -> c_int;
    pub fn simlsh_lsh_optimal_params_recall(bands: *mut u32, rows: *mut u32,
                                            achieved: *mut c_double, num_perm: u32,
                                            t: c_double, recall: c_double,
                                            width: c_double) -> c_int;
    pub fn simlsh_params_describe(buf: *mut c_char, cap: usize, len: *mut usize,
                                  p: *const Params) -> c_int;
    pub fn simlsh_sign_batch(values: *mut u32, empty: *mut u8, p: *const Params,
                             texts: *const *const c_void, lens: *const usize, n: usize,
                             nthreads: u32) -> c_int;
    pub fn simlsh_signature_new(out: *mut *mut Sig, p: *const Params) -> c_int;
    pub fn simlsh_signature_free(s: *mut Sig);
    pub fn simlsh_signature_clear(s: *mut Sig) -> c_int;
    pub fn simlsh_signature_add_text(s: *mut Sig, text: *const c_void, len: usize) -> c_int;
    pub fn simlsh_signature_num_perm(s: *const Sig) -> c_int;
    pub fn simlsh_signature_values(buf: *mut u32, cap: usize, count: *mut usize,
                                   s: *const Sig) -> c_int;
    pub fn simlsh_signature_jaccard(out: *mut c_double, a: *const Sig, b: *const Sig) -> c_int;
    pub fn simlsh_index_new(out: *mut *mut Index, p: *const Params) -> c_int;
    pub fn simlsh_index_free(ix: *mut Index);
    pub fn simlsh_index_params(out: *mut *mut Params, ix: *const Index) -> c_int;
    pub fn simlsh_index_insert(ix: *mut Index, id: u64, s: *const Sig) -> c_int;
    pub fn simlsh_index_insert_values(ix: *mut Index, ids: *const u64, values: *const u32,
                                      n: usize, nthreads: u32) -> c_int;
    pub fn simlsh_index_bands(b: *mut u32, r: *mut u32, ix: *const Index) -> c_int;
    pub fn simlsh_index_query(res: *mut Results, ix: *const Index, s: *const Sig,
                              flags: c_int) -> c_int;
    pub fn simlsh_index_pairs(res: *mut Results, ix: *const Index, flags: c_int,
                              max_pairs: usize) -> c_int;
    pub fn simlsh_results_new(out: *mut *mut Results, alloc: *const c_void) -> c_int;
    pub fn simlsh_results_free(r: *mut Results);
    pub fn simlsh_results_count(r: *const Results) -> usize;
    pub fn simlsh_results_a(r: *const Results) -> *const u64;
    pub fn simlsh_results_b(r: *const Results) -> *const u64;
    pub fn simlsh_results_scores(r: *const Results) -> *const c_double;
    pub fn simlsh_results_offset(out: *mut usize, r: *const Results, q: usize) -> c_int;
    pub fn simlsh_index_largest_buckets(res: *mut Results, docs_above: *mut u64,
                                        ix: *const Index, k: usize, min_size: usize) -> c_int;
    pub fn simlsh_dedup_prefilter(threshold: c_double, num_perm: u32) -> c_double;
    pub fn simlsh_dedup_banding(p: *mut Params, mode: c_int, recall: c_double, bands: u32,
                                rows: u32, bands_out: *mut u32, rows_out: *mut u32) -> c_int;
    pub fn simlsh_dedup_new(out: *mut *mut Dedup, ix: *const Index, mode: c_int,
                            threshold: c_double) -> c_int;
    pub fn simlsh_dedup_free(d: *mut Dedup);
    pub fn simlsh_dedup_set(d: *mut Dedup, key: c_int, value: c_double) -> c_int;
    pub fn simlsh_dedup_order(d: *mut Dedup, ids: *const u64, n: usize) -> c_int;
    pub fn simlsh_dedup_sizes(d: *mut Dedup, ids: *const u64, bytes: *const u64,
                              n: usize) -> c_int;
    pub fn simlsh_dedup_next(need: *mut Results, d: *mut Dedup, ix: *const Index) -> c_int;
    pub fn simlsh_dedup_texts(d: *mut Dedup, ids: *const u64, texts: *const *const c_void,
                              lens: *const usize, n: usize) -> c_int;
    pub fn simlsh_dedup_missing(d: *mut Dedup, ids: *const u64, n: usize) -> c_int;
    pub fn simlsh_dedup_groups(res: *mut Results, ngroups: *mut usize, d: *const Dedup) -> c_int;
    pub fn simlsh_dedup_stat(value: *mut u64, d: *const Dedup, key: c_int) -> c_int;
}
