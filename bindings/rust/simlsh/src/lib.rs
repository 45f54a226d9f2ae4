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

pub use sys::SIMLSH_PARAM_ROWS as PARAM_ROWS;
pub use sys::{SIMLSH_EUTF8 as EUTF8, SIMLSH_PARAM_BANDS as PARAM_BANDS};
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

/// A C object made by `mk` through its out-parameter.
fn make<T>(op: &'static str, mk: impl FnOnce(*mut *mut T) -> c_int) -> Result<*mut T> {
    let mut h = ptr::null_mut();
    check(op, mk(&mut h)).map(|_| h)
}

/// An owning wrapper of a C handle that frees it on drop; `Send + Sync`
/// where the header allows sharing.
macro_rules! handle {
    ($(#[$m:meta])* $name:ident, $raw:ident, $free:ident $(, $sync:ident)*) => {
        $(#[$m])*
        pub struct $name(*mut sys::$raw);
        $(unsafe impl $sync for $name {})*
        impl Drop for $name {
            fn drop(&mut self) {
                unsafe { sys::$free(self.0) }
            }
        }
    };
}

handle!(
    /// The hash contract. Threads: plain values; setters take `&mut self`.
    Params, simlsh_params, simlsh_params_free, Send, Sync
);
handle!(
    /// A MinHash signature. Threads: may be shared once built.
    Signature, simlsh_signature, simlsh_signature_free, Send, Sync
);
handle!(
    /// An LSH index under `u64` ids. Threads: concurrent `&self` calls; insert needs `&mut`.
    Index, simlsh_index, simlsh_index_free, Send, Sync
);
// Results are one-owner scratch space: filled, copied out, dropped.
handle!(Results, simlsh_results, simlsh_results_free);

impl Params {
    /// Params set to a preset: "default" or "dedup" (simlsh-dedup's defaults).
    pub fn preset(name: &str) -> Result<Params> {
        let p = Params(make("simlsh_params_new", |p| unsafe {
            sys::simlsh_params_new(p, ptr::null())
        })?);
        let c = CString::new(name).map_err(|_| Error { op: "simlsh_params_preset", code: -1 })?;
        check("simlsh_params_preset", unsafe { sys::simlsh_params_preset(p.0, c.as_ptr()) })?;
        Ok(p)
    }
    pub fn set_int(&mut self, key: c_int, v: i64) -> Result<()> {
        check("simlsh_params_set_int", unsafe { sys::simlsh_params_set_int(self.0, key, v) })?;
        Ok(())
    }
    pub fn set_double(&mut self, key: c_int, v: f64) -> Result<()> {
        let rc = unsafe { sys::simlsh_params_set_double(self.0, key, v) };
        check("simlsh_params_set_double", rc).map(drop)
    }
    /// Sign `texts` in one call on up to `threads` threads (0: one per CPU)
    /// into `values`, a `texts.len() x num_perm` row-major matrix (its
    /// memory is reused: sign a stream in chunks into one `Vec`); returns
    /// which texts had nothing to shingle (their rows are all `u32::MAX`).
    pub fn sign_batch(
        &self,
        texts: &[&[u8]],
        threads: u32,
        values: &mut Vec<u32>,
    ) -> Result<Vec<bool>> {
        let np = self.num_perm()?;
        let ptrs: Vec<_> = texts.iter().map(|t| t.as_ptr().cast()).collect();
        let lens: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        let (n, mut empty) = (texts.len() * np, vec![0u8; texts.len()]);
        values.clear();
        values.reserve(n);
        let rc = unsafe {
            let (v, e) = (values.as_mut_ptr(), empty.as_mut_ptr());
            sys::simlsh_sign_batch(v, e, self.0, ptrs.as_ptr(), lens.as_ptr(), texts.len(), threads)
        };
        check("simlsh_sign_batch", rc)?;
        unsafe { values.set_len(n) }; // C wrote every value
        Ok(empty.into_iter().map(|e| e != 0).collect())
    }
    pub fn get_int(&self, key: c_int) -> Result<i64> {
        let mut v = 0i64;
        check("simlsh_params_get_int", unsafe { sys::simlsh_params_get_int(self.0, key, &mut v) })
            .map(|_| v)
    }
    pub fn get_double(&self, key: c_int) -> Result<f64> {
        let mut v = 0.0;
        let rc = unsafe { sys::simlsh_params_get_double(self.0, key, &mut v) };
        check("simlsh_params_get_double", rc).map(|_| v)
    }
    fn num_perm(&self) -> Result<usize> {
        let mut np = 0i64;
        let rc = unsafe { sys::simlsh_params_get_int(self.0, sys::SIMLSH_PARAM_NUM_PERM, &mut np) };
        check("simlsh_params_get_int", rc).map(|_| np as usize)
    }
    /// The whole contract, "unit=char k=5 ...".
    pub fn describe(&self) -> Result<String> {
        let (op, mut n) = ("simlsh_params_describe", 0usize);
        check(op, unsafe { sys::simlsh_params_describe(ptr::null_mut(), 0, &mut n, self.0) })?;
        let mut buf = vec![0u8; n + 1];
        let rc =
            unsafe { sys::simlsh_params_describe(buf.as_mut_ptr().cast(), n + 1, &mut n, self.0) };
        check(op, rc)?;
        buf.truncate(n);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

impl Signature {
    pub fn new(p: &Params) -> Result<Signature> {
        Ok(Signature(make("simlsh_signature_new", |s| unsafe {
            sys::simlsh_signature_new(s, p.0)
        })?))
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
        let (mut v, mut count) = (vec![0u32; n as usize], 0usize);
        let rc =
            unsafe { sys::simlsh_signature_values(v.as_mut_ptr(), v.len(), &mut count, self.0) };
        check("simlsh_signature_values", rc).map(|_| v)
    }
    pub fn jaccard(&self, other: &Signature) -> Result<f64> {
        let mut d = 0.0;
        let rc = unsafe { sys::simlsh_signature_jaccard(&mut d, self.0, other.0) };
        check("simlsh_signature_jaccard", rc).map(|_| d)
    }
}

/// One result row: ids `a`, `b` and a score (see simlsh_results in the header).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub a: u64,
    pub b: u64,
    pub score: f64,
}

/// Fills fresh results with `fill` and copies the borrowed columns out
/// (never NULL, even with no rows) before they are freed.
fn rows(
    op: &'static str,
    fill: impl FnOnce(*mut sys::simlsh_results) -> c_int,
) -> Result<Vec<Row>> {
    let res = Results(make("simlsh_results_new", |r| unsafe {
        sys::simlsh_results_new(r, ptr::null())
    })?);
    check(op, fill(res.0))?;
    unsafe {
        let n = sys::simlsh_results_count(res.0);
        let a = std::slice::from_raw_parts(sys::simlsh_results_a(res.0), n);
        let b = std::slice::from_raw_parts(sys::simlsh_results_b(res.0), n);
        let s = std::slice::from_raw_parts(sys::simlsh_results_scores(res.0), n);
        Ok((0..n).map(|i| Row { a: a[i], b: b[i], score: s[i] }).collect())
    }
}

impl Index {
    pub fn new(p: &Params) -> Result<Index> {
        Ok(Index(make("simlsh_index_new", |ix| unsafe { sys::simlsh_index_new(ix, p.0) })?))
    }
    pub fn insert(&mut self, id: u64, sig: &Signature) -> Result<()> {
        check("simlsh_index_insert", unsafe { sys::simlsh_index_insert(self.0, id, sig.0) })
            .map(drop)
    }
    /// Insert `ids.len()` documents given as rows of `values` (as `sign_batch` gives).
    pub fn insert_values(&mut self, ids: &[u64], values: &[u32], threads: u32) -> Result<()> {
        let op = "simlsh_index_insert_values";
        // C reads ids.len() rows: a shorter slice would be read past its end.
        let p = Params(make(op, |p| unsafe { sys::simlsh_index_params(p, self.0) })?);
        if values.len() < ids.len() * p.num_perm()? {
            return Err(Error { op, code: -1 });
        }
        let (i, v) = (ids.as_ptr(), values.as_ptr());
        check(op, unsafe { sys::simlsh_index_insert_values(self.0, i, v, ids.len(), threads) })
            .map(drop)
    }
    pub fn bands(&self) -> Result<(u32, u32)> {
        let (mut b, mut r) = (0, 0);
        check("simlsh_index_bands", unsafe { sys::simlsh_index_bands(&mut b, &mut r, self.0) })?;
        Ok((b, r))
    }
    pub fn query(&self, sig: &Signature, flags: c_int) -> Result<Vec<Row>> {
        rows("simlsh_index_query", |r| unsafe { sys::simlsh_index_query(r, self.0, sig.0, flags) })
    }
    /// Candidate pairs (a < b, sorted), at most `max_pairs` (0: no limit).
    pub fn pairs(&self, flags: c_int, max_pairs: usize) -> Result<Vec<Row>> {
        rows("simlsh_index_pairs", |r| unsafe {
            sys::simlsh_index_pairs(r, self.0, flags, max_pairs)
        })
    }
}

/// The banding with the least false-positive area whose probability of
/// making a pair at threshold `t` a candidate is at least `recall` (over
/// the window `width` above `t` when it is > 0): `(bands, rows, achieved)`
/// (simlsh_lsh_optimal_params_recall).
pub fn optimal_params_recall(
    num_perm: u32,
    t: f64,
    recall: f64,
    width: f64,
) -> Result<(u32, u32, f64)> {
    let (mut b, mut r, mut a) = (0, 0, 0.0);
    let rc = unsafe {
        sys::simlsh_lsh_optimal_params_recall(&mut b, &mut r, &mut a, num_perm, t, recall, width)
    };
    check("simlsh_lsh_optimal_params_recall", rc).map(|_| (b, r, a))
}

/// One of an index's largest buckets: its smallest member, band and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub sample: u64,
    pub band: u32,
    pub size: u64,
}

impl Index {
    /// The `k` largest buckets with at least `min_size` members, largest
    /// first, and the number of documents in at least one bucket of
    /// `min_size` or more members (simlsh_index_largest_buckets).
    pub fn largest_buckets(&self, k: usize, min_size: usize) -> Result<(Vec<Bucket>, u64)> {
        let mut above = 0u64;
        let rows = rows("simlsh_index_largest_buckets", |r| unsafe {
            sys::simlsh_index_largest_buckets(r, &mut above, self.0, k, min_size)
        })?;
        let b = rows.iter().map(|r| Bucket { sample: r.a, band: r.b as u32, size: r.score as u64 });
        Ok((b.collect(), above))
    }
}

/// The value of the library's constant of `kind` named `name`
/// (simlsh_constant_value): the dedup engine's modes, keys and counters are
/// looked up by name, so a library without one says ENOTFOUND.
fn constant(kind: c_int, name: &'static str) -> Result<c_int> {
    let op = "simlsh_constant_value";
    let c = CString::new(name).map_err(|_| Error { op, code: -1 })?;
    let mut v = 0i64;
    check(op, unsafe { sys::simlsh_constant_value(&mut v, kind, c.as_ptr()) })?;
    Ok(v as c_int)
}

/// How the dedup engine verifies a bucket-mate (enum simlsh_dedup_mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupMode {
    /// Every bucket-mate is claimed.
    None,
    /// The signature estimate >= threshold.
    Estimate,
    /// The exact Jaccard of the texts, which the caller hands over.
    Exact,
}

impl DedupMode {
    pub const ALL: [DedupMode; 3] = [DedupMode::None, DedupMode::Estimate, DedupMode::Exact];
    /// The library's name of the mode: "none", "estimate", "exact".
    pub fn name(self) -> &'static str {
        match self {
            DedupMode::None => "none",
            DedupMode::Estimate => "estimate",
            DedupMode::Exact => "exact",
        }
    }
    /// Its value in this library (SIMLSH_KIND_DEDUP_MODE).
    pub fn value(self) -> Result<c_int> {
        constant(sys::SIMLSH_KIND_DEDUP_MODE, self.name())
    }
}

/// Counters of [`Dedup::stat`] (enum simlsh_dedup_stat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupStat {
    Visits,
    Candidates,
    Exact,
    Identical,
    Estimated,
    Texts,
    Batches,
    SetBytes,
    Groups,
    Members,
    Edits,
    /// Buckets of unlike documents set aside ([`Dedup::set_giant`]).
    SetAside,
    /// Their members, summed over them.
    SetAsideMembers,
    /// Pairs of [`DedupStat::Exact`] rejected from a sample of their sets.
    Sampled,
}

impl DedupStat {
    pub const ALL: [DedupStat; 14] = [
        DedupStat::Visits,
        DedupStat::Candidates,
        DedupStat::Exact,
        DedupStat::Identical,
        DedupStat::Estimated,
        DedupStat::Texts,
        DedupStat::Batches,
        DedupStat::SetBytes,
        DedupStat::Groups,
        DedupStat::Members,
        DedupStat::Edits,
        DedupStat::SetAside,
        DedupStat::SetAsideMembers,
        DedupStat::Sampled,
    ];
    /// The library's name of the counter: "visits", "set_aside", ...
    pub fn name(self) -> &'static str {
        use DedupStat::*;
        match self {
            Visits => "visits",
            Candidates => "candidates",
            Exact => "exact",
            Identical => "identical",
            Estimated => "estimated",
            Texts => "texts",
            Batches => "batches",
            SetBytes => "set_bytes",
            Groups => "groups",
            Members => "members",
            Edits => "edits",
            SetAside => "set_aside",
            SetAsideMembers => "set_aside_members",
            Sampled => "sampled",
        }
    }
    /// Its value in this library (SIMLSH_KIND_DEDUP_STAT).
    pub fn value(self) -> Result<c_int> {
        constant(sys::SIMLSH_KIND_DEDUP_STAT, self.name())
    }
}

/// Set the bands and rows of `params` to the deduplication policy's banding
/// for `mode` (simlsh_dedup_banding), the one simlsh-dedup uses, and return
/// it: with `bands` and `rows` both 0, [`DedupMode::Exact`] takes the
/// banding with the least false-positive area that makes a pair at the
/// params' threshold a candidate with probability `recall` (16 x 6 for 0.8
/// and 128 permutations at 0.99), and the other modes keep the automatic
/// banding `(0, 0)`; one of the two alone makes the other num_perm divided
/// by it. EINVAL (the params unchanged) for a banding that does not fit, a
/// recall outside (0, 1).
pub fn dedup_banding(
    params: &mut Params,
    mode: DedupMode,
    recall: f64,
    bands: u32,
    rows: u32,
) -> Result<(u32, u32)> {
    let (op, mode) = ("simlsh_dedup_banding", mode.value()?);
    let (mut b, mut r) = (0u32, 0u32);
    let rc =
        unsafe { sys::simlsh_dedup_banding(params.0, mode, recall, bands, rows, &mut b, &mut r) };
    check(op, rc).map(|_| (b, r))
}

/// The exact mode's default prefilter for `threshold` and `num_perm`
/// (simlsh_dedup_prefilter), or -1 when they are out of range.
pub fn dedup_prefilter(threshold: f64, num_perm: u32) -> f64 {
    unsafe { sys::simlsh_dedup_prefilter(threshold, num_perm) }
}

/// A document of a group and its verified similarity with the centre (1
/// for the centre itself, -1 with [`DedupMode::None`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Member {
    pub id: u64,
    pub score: f64,
}

/// A group of two or more documents: the kept centre and the members, the
/// centre first, then by priority.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub centre: u64,
    pub members: Vec<Member>,
}

/// The library's dedup engine (simlsh_dedup_*): star groups straight from
/// an index's buckets. Configure it (`set_*`, `order`, `sizes`) before the
/// first [`Dedup::next`]; then, in exact mode, hand over the texts each
/// `next` names with [`Dedup::texts`] (or [`Dedup::missing`]) until `next`
/// names none; then read [`Dedup::groups`].
///
/// The engine borrows the index it reads, so the index cannot change while
/// the engine lives (the C library would refuse with ESTATE). Threads: an
/// engine is used by one thread at a time (`Send`, not `Sync`); the index
/// may be queried meanwhile.
pub struct Dedup<'a> {
    d: *mut sys::simlsh_dedup,
    index: &'a Index,
    need: Results,
}

unsafe impl Send for Dedup<'_> {}

impl Drop for Dedup<'_> {
    fn drop(&mut self) {
        unsafe { sys::simlsh_dedup_free(self.d) }
    }
}

impl<'a> Dedup<'a> {
    /// An engine over `index` (which must store signatures: the default)
    /// for `mode` and `threshold` in (0, 1] (ignored by `None`). Priority
    /// is by ascending id until [`Dedup::order`] says otherwise.
    pub fn new(index: &'a Index, mode: DedupMode, threshold: f64) -> Result<Dedup<'a>> {
        let mode = mode.value()?;
        let need = Results(make("simlsh_results_new", |r| unsafe {
            sys::simlsh_results_new(r, ptr::null())
        })?);
        let d = make("simlsh_dedup_new", |d| unsafe {
            sys::simlsh_dedup_new(d, index.0, mode, threshold)
        })?;
        Ok(Dedup { d, index, need })
    }
    /// Set a key of enum simlsh_dedup_key by its name ("threads", ...).
    fn set(&mut self, key: &'static str, value: f64) -> Result<()> {
        let key = constant(sys::SIMLSH_KIND_DEDUP_KEY, key)?;
        check("simlsh_dedup_set", unsafe { sys::simlsh_dedup_set(self.d, key, value) }).map(drop)
    }
    /// Threads that verify the texts of one `texts` call (0: one per CPU; default 1).
    pub fn set_threads(&mut self, n: u32) -> Result<()> {
        self.set("threads", n as f64)
    }
    /// Bytes of text one batch may ask for (default 64 MiB).
    pub fn set_memory(&mut self, bytes: u64) -> Result<()> {
        self.set("memory", bytes as f64)
    }
    /// The estimate a pair needs before its texts are compared (exact mode;
    /// default [`dedup_prefilter`]; 0 compares every bucket-mate).
    pub fn set_prefilter(&mut self, prefilter: f64) -> Result<()> {
        self.set("prefilter", prefilter)
    }
    /// Ids below `id` are kept documents: centres in their turn, never
    /// claimed (exact up to 2^53).
    pub fn set_keep_below(&mut self, id: u64) -> Result<()> {
        self.set("keep_below", id as f64)
    }
    /// Buckets of more members than this (default 64; 0: none) are judged
    /// from a sample and, when they hold unlike documents, may be set aside
    /// ([`Dedup::set_giant_cost`]); that can only lose groups, never make a
    /// wrong one. [`DedupStat::SetAside`] counts them.
    pub fn set_giant(&mut self, members: u64) -> Result<()> {
        self.set("giant", members as f64)
    }
    /// What the unlike buckets kept may cost, in looks per document and band
    /// (default 64; 0 sets every unlike bucket above `set_giant` aside).
    pub fn set_giant_cost(&mut self, looks: f64) -> Result<()> {
        self.set("giant_cost", looks)
    }
    /// Priority: `ids` first (the first occurrence counts; ids not in the
    /// index are ignored), then every other document by id.
    pub fn order(&mut self, ids: &[u64]) -> Result<()> {
        let rc = unsafe { sys::simlsh_dedup_order(self.d, ids.as_ptr(), ids.len()) };
        check("simlsh_dedup_order", rc).map(drop)
    }
    /// Text sizes in bytes (`bytes[i]` of `ids[i]`), which batches are measured with.
    pub fn sizes(&mut self, ids: &[u64], bytes: &[u64]) -> Result<()> {
        let op = "simlsh_dedup_sizes";
        if ids.len() != bytes.len() {
            return Err(Error { op, code: -1 });
        }
        let rc =
            unsafe { sys::simlsh_dedup_sizes(self.d, ids.as_ptr(), bytes.as_ptr(), ids.len()) };
        check(op, rc).map(drop)
    }
    /// Place every document that needs no text and return the ids whose
    /// texts are needed next (centres first, then by id); none means the
    /// groups are complete (always so for `None` and `Estimate`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Vec<u64>> {
        let rc = unsafe { sys::simlsh_dedup_next(self.need.0, self.d, self.index.0) };
        check("simlsh_dedup_next", rc)?;
        unsafe {
            let n = sys::simlsh_results_count(self.need.0);
            Ok(std::slice::from_raw_parts(sys::simlsh_results_a(self.need.0), n).to_vec())
        }
    }
    /// Hand over the texts (`texts[i]` of `ids[i]`) that the last `next`
    /// asked for, in any order and in as many calls as you like; they are
    /// not kept. An error with code [`EUTF8`] (UTF8_POLICY reject) means
    /// the invalid texts count as missing and the others were taken: the
    /// loop may go on.
    pub fn texts(&mut self, ids: &[u64], texts: &[&[u8]]) -> Result<()> {
        let op = "simlsh_dedup_texts";
        if ids.len() != texts.len() {
            return Err(Error { op, code: -1 });
        }
        let ptrs: Vec<*const std::os::raw::c_void> =
            texts.iter().map(|t| t.as_ptr().cast()).collect();
        let lens: Vec<usize> = texts.iter().map(|t| t.len()).collect();
        let rc = unsafe {
            sys::simlsh_dedup_texts(self.d, ids.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), ids.len())
        };
        check(op, rc).map(drop)
    }
    /// The texts of `ids` cannot be had: their pairs are decided by the estimate.
    pub fn missing(&mut self, ids: &[u64]) -> Result<()> {
        let rc = unsafe { sys::simlsh_dedup_missing(self.d, ids.as_ptr(), ids.len()) };
        check("simlsh_dedup_missing", rc).map(drop)
    }
    /// The groups of two or more documents, in their centres' priority
    /// order (ESTATE until `next` has named no texts). A document in no
    /// group is kept alone.
    pub fn groups(&self) -> Result<Vec<Group>> {
        let op = "simlsh_dedup_groups";
        let res = Results(make("simlsh_results_new", |r| unsafe {
            sys::simlsh_results_new(r, ptr::null())
        })?);
        let mut ng = 0usize;
        check(op, unsafe { sys::simlsh_dedup_groups(res.0, &mut ng, self.d) })?;
        let offset = |g: usize| {
            let mut at = 0usize;
            check("simlsh_results_offset", unsafe { sys::simlsh_results_offset(&mut at, res.0, g) })
                .map(|_| at)
        };
        let n = unsafe { sys::simlsh_results_count(res.0) };
        let (a, b, s) = unsafe {
            (
                std::slice::from_raw_parts(sys::simlsh_results_a(res.0), n),
                std::slice::from_raw_parts(sys::simlsh_results_b(res.0), n),
                std::slice::from_raw_parts(sys::simlsh_results_scores(res.0), n),
            )
        };
        (0..ng)
            .map(|g| {
                let (lo, hi) = (offset(g)?, offset(g + 1)?);
                let members = (lo..hi).map(|i| Member { id: a[i], score: s[i] }).collect();
                Ok(Group { centre: b[lo], members })
            })
            .collect()
    }
    /// A counter of the work done so far.
    pub fn stat(&self, key: DedupStat) -> Result<u64> {
        let mut v = 0u64;
        let rc = unsafe { sys::simlsh_dedup_stat(&mut v, self.d, key.value()?) };
        check("simlsh_dedup_stat", rc).map(|_| v)
    }
}
