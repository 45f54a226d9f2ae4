//! Safe binding of libsimlsh (include/simlsh.h): shingling, MinHash
//! signatures and an LSH index for near-duplicate detection.
//!
//! Each type frees its C object on drop. `Send`/`Sync` follow the header's
//! `Threads:` lines: params and signatures are values that may be shared
//! for reading; the index allows concurrent queries (`&self`) while insert
//! takes `&mut self`. Text is bytes; ids are `u64`.
use simlsh_sys as sys;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_int;
use std::ptr;

pub use sys::{SIMLSH_PARAM_K as PARAM_K, SIMLSH_PARAM_NUM_PERM as PARAM_NUM_PERM};
pub use sys::{SIMLSH_PARAM_THRESHOLD as PARAM_THRESHOLD, SIMLSH_QUERY_VERIFY as QUERY_VERIFY};

/// A failed call: the C function and its SIMLSH_E* code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    pub op: &'static str,
    pub code: i32,
}

impl Error {
    /// The code's name without the prefix: "EINVAL", "ENOMEM", ...
    pub fn name(&self) -> &'static str {
        unsafe { CStr::from_ptr(sys::simlsh_error_name(self.code)) }.to_str().unwrap_or("?")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = unsafe { CStr::from_ptr(sys::simlsh_strerror(self.code)) };
        write!(f, "{}: {} ({})", self.op, msg.to_string_lossy(), self.name())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn check(op: &'static str, rc: c_int) -> Result<c_int> {
    if rc < 0 {
        Err(Error { op, code: rc })
    } else {
        Ok(rc)
    }
}

/// The hash contract.
pub struct Params(*mut sys::simlsh_params);
// Threads: params are plain values; setters take &mut self.
unsafe impl Send for Params {}
unsafe impl Sync for Params {}

impl Params {
    /// Params set to a preset: "default" or "dedup" (simlsh-dedup's defaults).
    pub fn preset(name: &str) -> Result<Params> {
        let mut p = ptr::null_mut();
        check("simlsh_params_new", unsafe { sys::simlsh_params_new(&mut p, ptr::null()) })?;
        let p = Params(p);
        let c = CString::new(name).map_err(|_| Error { op: "simlsh_params_preset", code: -1 })?;
        check("simlsh_params_preset", unsafe { sys::simlsh_params_preset(p.0, c.as_ptr()) })?;
        Ok(p)
    }
    pub fn set_int(&mut self, key: c_int, v: i64) -> Result<()> {
        check("simlsh_params_set_int", unsafe { sys::simlsh_params_set_int(self.0, key, v) })
            .map(drop)
    }
    pub fn set_double(&mut self, key: c_int, v: f64) -> Result<()> {
        check("simlsh_params_set_double", unsafe { sys::simlsh_params_set_double(self.0, key, v) })
            .map(drop)
    }
    /// Sign `texts` in one call on up to `threads` threads (0: one per CPU):
    /// a `texts.len() x num_perm` row-major matrix, and which texts had
    /// nothing to shingle (their rows are all `u32::MAX`).
    pub fn sign_batch(&self, texts: &[&[u8]], threads: u32) -> Result<(Vec<u32>, Vec<bool>)> {
        let mut np = 0i64;
        let op = "simlsh_params_get_int";
        check(op, unsafe {
            sys::simlsh_params_get_int(self.0, sys::SIMLSH_PARAM_NUM_PERM, &mut np)
        })?;
        let ptrs: Vec<_> = texts.iter().map(|t| t.as_ptr().cast()).collect();
        let lens: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        let (mut values, mut empty) =
            (vec![0u32; texts.len() * np as usize], vec![0u8; texts.len()]);
        let rc = unsafe {
            let (v, e) = (values.as_mut_ptr(), empty.as_mut_ptr());
            sys::simlsh_sign_batch(v, e, self.0, ptrs.as_ptr(), lens.as_ptr(), texts.len(), threads)
        };
        check("simlsh_sign_batch", rc)?;
        Ok((values, empty.into_iter().map(|e| e != 0).collect()))
    }
    /// The whole contract, "unit=char k=5 ...".
    pub fn describe(&self) -> Result<String> {
        let mut n = 0usize;
        let op = "simlsh_params_describe";
        check(op, unsafe { sys::simlsh_params_describe(ptr::null_mut(), 0, &mut n, self.0) })?;
        let mut buf = vec![0u8; n + 1];
        check(op, unsafe {
            sys::simlsh_params_describe(buf.as_mut_ptr().cast(), n + 1, &mut n, self.0)
        })?;
        buf.truncate(n);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

impl Drop for Params {
    fn drop(&mut self) {
        unsafe { sys::simlsh_params_free(self.0) }
    }
}

/// A MinHash signature.
pub struct Signature(*mut sys::simlsh_signature);
// Threads: immutable once built, may be shared; changes take &mut self.
unsafe impl Send for Signature {}
unsafe impl Sync for Signature {}

impl Signature {
    pub fn new(p: &Params) -> Result<Signature> {
        let mut s = ptr::null_mut();
        check("simlsh_signature_new", unsafe { sys::simlsh_signature_new(&mut s, p.0) })?;
        Ok(Signature(s))
    }
    /// Make this the signature of `text` alone (clear, then add).
    pub fn set_text(&mut self, text: &[u8]) -> Result<()> {
        unsafe { sys::simlsh_signature_clear(self.0) };
        let rc =
            unsafe { sys::simlsh_signature_add_text(self.0, text.as_ptr().cast(), text.len()) };
        check("simlsh_signature_add_text", rc).map(drop)
    }
    pub fn values(&self) -> Result<Vec<u32>> {
        let n =
            check("simlsh_signature_num_perm", unsafe { sys::simlsh_signature_num_perm(self.0) })?;
        let mut v = vec![0u32; n as usize];
        let mut count = 0usize;
        let rc =
            unsafe { sys::simlsh_signature_values(v.as_mut_ptr(), v.len(), &mut count, self.0) };
        check("simlsh_signature_values", rc)?;
        Ok(v)
    }
    pub fn jaccard(&self, other: &Signature) -> Result<f64> {
        let mut d = 0.0;
        check("simlsh_signature_jaccard", unsafe {
            sys::simlsh_signature_jaccard(&mut d, self.0, other.0)
        })?;
        Ok(d)
    }
}

impl Drop for Signature {
    fn drop(&mut self) {
        unsafe { sys::simlsh_signature_free(self.0) }
    }
}

/// One result row: ids `a`, `b` and a score (see simlsh_results in the header).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub a: u64,
    pub b: u64,
    pub score: f64,
}

/// Results are one-owner scratch space: filled, copied out, dropped.
struct Results(*mut sys::simlsh_results);

impl Results {
    fn new() -> Result<Results> {
        let mut r = ptr::null_mut();
        check("simlsh_results_new", unsafe { sys::simlsh_results_new(&mut r, ptr::null()) })?;
        Ok(Results(r))
    }
    fn rows(&self) -> Vec<Row> {
        let n = unsafe { sys::simlsh_results_count(self.0) };
        if n == 0 {
            return Vec::new(); // columns may be NULL when empty
        }
        let col = |p: *const u64| unsafe { std::slice::from_raw_parts(p, n) };
        let (a, b) =
            unsafe { (col(sys::simlsh_results_a(self.0)), col(sys::simlsh_results_b(self.0))) };
        let s = unsafe { std::slice::from_raw_parts(sys::simlsh_results_scores(self.0), n) };
        (0..n).map(|i| Row { a: a[i], b: b[i], score: s[i] }).collect()
    }
}

impl Drop for Results {
    fn drop(&mut self) {
        unsafe { sys::simlsh_results_free(self.0) }
    }
}

/// An LSH index of signatures under `u64` ids.
pub struct Index(*mut sys::simlsh_index);
// Threads: any number of concurrent const calls; insert needs &mut self.
unsafe impl Send for Index {}
unsafe impl Sync for Index {}

impl Index {
    pub fn new(p: &Params) -> Result<Index> {
        let mut ix = ptr::null_mut();
        check("simlsh_index_new", unsafe { sys::simlsh_index_new(&mut ix, p.0) })?;
        Ok(Index(ix))
    }
    pub fn insert(&mut self, id: u64, sig: &Signature) -> Result<()> {
        check("simlsh_index_insert", unsafe { sys::simlsh_index_insert(self.0, id, sig.0) })
            .map(drop)
    }
    /// Insert `ids.len()` documents given as rows of `values` (as `sign_batch` gives).
    pub fn insert_values(&mut self, ids: &[u64], values: &[u32], threads: u32) -> Result<()> {
        if values.len() < ids.len() {
            return Err(Error { op: "simlsh_index_insert_values", code: -1 });
        }
        let rc = unsafe {
            sys::simlsh_index_insert_values(
                self.0,
                ids.as_ptr(),
                values.as_ptr(),
                ids.len(),
                threads,
            )
        };
        check("simlsh_index_insert_values", rc).map(drop)
    }
    pub fn bands(&self) -> Result<(u32, u32)> {
        let (mut b, mut r) = (0, 0);
        check("simlsh_index_bands", unsafe { sys::simlsh_index_bands(&mut b, &mut r, self.0) })?;
        Ok((b, r))
    }
    pub fn query(&self, sig: &Signature, flags: c_int) -> Result<Vec<Row>> {
        let res = Results::new()?;
        check("simlsh_index_query", unsafe {
            sys::simlsh_index_query(res.0, self.0, sig.0, flags)
        })?;
        Ok(res.rows())
    }
    /// Candidate pairs (a < b, sorted), at most `max_pairs` (0: no limit).
    pub fn pairs(&self, flags: c_int, max_pairs: usize) -> Result<Vec<Row>> {
        let res = Results::new()?;
        check("simlsh_index_pairs", unsafe {
            sys::simlsh_index_pairs(res.0, self.0, flags, max_pairs)
        })?;
        Ok(res.rows())
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        unsafe { sys::simlsh_index_free(self.0) }
    }
}
