//! Raw declarations of the parts of libsimlsh (include/simlsh.h) that the
//! safe `simlsh` crate uses. Every function returning `c_int` returns 0 or a
//! negative SIMLSH_E* code unless its C documentation says otherwise.
#![allow(non_camel_case_types)]
use std::os::raw::{c_char, c_double, c_int, c_uint, c_void};

#[repr(C)]
pub struct simlsh_params {
    _p: [u8; 0],
}
#[repr(C)]
pub struct simlsh_signature {
    _p: [u8; 0],
}
#[repr(C)]
pub struct simlsh_index {
    _p: [u8; 0],
}
#[repr(C)]
pub struct simlsh_results {
    _p: [u8; 0],
}

pub const SIMLSH_KIND_PARAM: c_int = 2;
pub const SIMLSH_KIND_QUERY_FLAG: c_int = 9;
pub const SIMLSH_PARAM_K: c_int = 2;
pub const SIMLSH_PARAM_NUM_PERM: c_int = 7;
pub const SIMLSH_PARAM_THRESHOLD: c_int = 13;
pub const SIMLSH_QUERY_VERIFY: c_int = 1;

extern "C" {
    pub fn simlsh_version_number() -> c_uint;
    pub fn simlsh_strerror(err: c_int) -> *const c_char;
    pub fn simlsh_error_name(err: c_int) -> *const c_char;
    pub fn simlsh_constant_value(out: *mut i64, kind: c_int, name: *const c_char) -> c_int;
    pub fn simlsh_params_new(out: *mut *mut simlsh_params, alloc: *const c_void) -> c_int;
    pub fn simlsh_params_free(p: *mut simlsh_params);
    pub fn simlsh_params_preset(p: *mut simlsh_params, name: *const c_char) -> c_int;
    pub fn simlsh_params_set_int(p: *mut simlsh_params, key: c_int, v: i64) -> c_int;
    pub fn simlsh_params_set_double(p: *mut simlsh_params, key: c_int, v: c_double) -> c_int;
    pub fn simlsh_params_get_int(p: *const simlsh_params, key: c_int, out: *mut i64) -> c_int;
    pub fn simlsh_sign_batch(
        values: *mut u32,
        empty: *mut u8,
        p: *const simlsh_params,
        texts: *const *const c_void,
        lens: *const usize,
        n: usize,
        nthreads: u32,
    ) -> c_int;
    pub fn simlsh_index_insert_values(
        ix: *mut simlsh_index,
        ids: *const u64,
        values: *const u32,
        n: usize,
        nthreads: u32,
    ) -> c_int;
    pub fn simlsh_params_describe(
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
        p: *const simlsh_params,
    ) -> c_int;
    pub fn simlsh_signature_new(out: *mut *mut simlsh_signature, p: *const simlsh_params) -> c_int;
    pub fn simlsh_signature_free(s: *mut simlsh_signature);
    pub fn simlsh_signature_clear(s: *mut simlsh_signature) -> c_int;
    pub fn simlsh_signature_add_text(
        s: *mut simlsh_signature,
        text: *const c_void,
        len: usize,
    ) -> c_int;
    pub fn simlsh_signature_num_perm(s: *const simlsh_signature) -> c_int;
    pub fn simlsh_signature_values(
        buf: *mut u32,
        cap: usize,
        count: *mut usize,
        s: *const simlsh_signature,
    ) -> c_int;
    pub fn simlsh_signature_jaccard(
        out: *mut c_double,
        a: *const simlsh_signature,
        b: *const simlsh_signature,
    ) -> c_int;
    pub fn simlsh_index_new(out: *mut *mut simlsh_index, p: *const simlsh_params) -> c_int;
    pub fn simlsh_index_free(ix: *mut simlsh_index);
    pub fn simlsh_index_insert(ix: *mut simlsh_index, id: u64, s: *const simlsh_signature)
        -> c_int;
    pub fn simlsh_index_bands(b: *mut u32, r: *mut u32, ix: *const simlsh_index) -> c_int;
    pub fn simlsh_index_query(
        res: *mut simlsh_results,
        ix: *const simlsh_index,
        s: *const simlsh_signature,
        flags: c_int,
    ) -> c_int;
    pub fn simlsh_index_pairs(
        res: *mut simlsh_results,
        ix: *const simlsh_index,
        flags: c_int,
        max_pairs: usize,
    ) -> c_int;
    pub fn simlsh_results_new(out: *mut *mut simlsh_results, alloc: *const c_void) -> c_int;
    pub fn simlsh_results_free(r: *mut simlsh_results);
    pub fn simlsh_results_count(r: *const simlsh_results) -> usize;
    pub fn simlsh_results_a(r: *const simlsh_results) -> *const u64;
    pub fn simlsh_results_b(r: *const simlsh_results) -> *const u64;
    pub fn simlsh_results_scores(r: *const simlsh_results) -> *const c_double;
}
