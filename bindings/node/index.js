'use strict';
// Thin binding of libsimlsh (include/simlsh.h) over koffi. Objects have
// close(); ids are BigInt; text is a Buffer (or a string, sent as UTF-8).
// Errors are SimlshError with .code (negative) and .name ("EINVAL", ...).
// The library is SIMLSH_LIBRARY if set (the name Python, Rust and the docs
// use; SIMLSH_LIB, the old name, still works with a deprecation warning),
// else libsimlsh.so.1 from the loader's search path (docs/bindings.md).
const koffi = requireKoffi();

// `npm install <path>` of a folder makes a link to it, and koffi is then
// looked up beside the folder, where nothing installed it: say so, and how
// to install a copy instead (docs/bindings.md section 8).
function requireKoffi() {
  try {
    return require('koffi');
  } catch (e) {
    if (e.code !== 'MODULE_NOT_FOUND') throw e;
    const err = new Error(
      `simlsh: cannot find koffi from ${__dirname}: ${e.message.split('\n')[0]}\n` +
      'If this package was installed with `npm install <path>` (a link to the folder), ' +
      'install a copy with `npm install --install-links <path>`, or install the tarball ' +
      'of `npm pack <path>`; or run `npm install` in ' + __dirname + '.');
    err.code = 'SIMLSH_NO_KOFFI';
    throw err;
  }
}

function libraryPath() {
  if (process.env.SIMLSH_LIBRARY) return [process.env.SIMLSH_LIBRARY, 'SIMLSH_LIBRARY'];
  if (process.env.SIMLSH_LIB) {
    process.emitWarning('SIMLSH_LIB is deprecated: set SIMLSH_LIBRARY instead',
      'DeprecationWarning', 'SIMLSH_DEP001');
    return [process.env.SIMLSH_LIB, 'SIMLSH_LIB'];
  }
  return ['libsimlsh.so.1', null];
}

// koffi's own error names neither the file nor what to set.
function loadLibrary() {
  const [file, from] = libraryPath();
  try {
    return koffi.load(file);
  } catch (e) {
    const err = new Error(
      `simlsh: cannot load ${file}` + (from ? ` (from ${from})` : '') + `: ${e.message}\n` +
      (from ? `Check that ${from} is the path of libsimlsh.so.1.`
            : 'Set SIMLSH_LIBRARY to the path of libsimlsh.so.1 (e.g. ' +
              '/usr/local/lib/x86_64-linux-gnu/libsimlsh.so.1), or install the C library ' +
              'where the loader finds it (ldconfig) - see docs/bindings.md.'));
    err.code = 'SIMLSH_LOAD';
    err.cause = e;
    throw err;
  }
}

const lib = loadLibrary();
for (const t of ['simlsh_params', 'simlsh_signature', 'simlsh_index', 'simlsh_results', 'simlsh_dedup'])
  koffi.opaque(t);

const C = {};
for (const proto of [
  'const char *simlsh_strerror(int err)',
  'const char *simlsh_error_name(int err)',
  'int simlsh_constant_value(_Out_ int64_t *out, int kind, const char *name)',
  'int simlsh_constant_at(_Out_ int64_t *value, const void *name, int kind, size_t i)',
  'const char *simlsh_constant_name(int kind, int64_t value)',
  'int simlsh_params_new(_Out_ simlsh_params **out, const void *alloc)',
  'void simlsh_params_free(simlsh_params *p)',
  'int simlsh_params_preset(simlsh_params *p, const char *name)',
  'int simlsh_params_set_int(simlsh_params *p, int key, int64_t v)',
  'int simlsh_params_set_double(simlsh_params *p, int key, double v)',
  'int simlsh_params_describe(_Out_ uint8_t *buf, size_t cap, _Out_ size_t *len, const simlsh_params *p)',
  'int simlsh_params_get_int(const simlsh_params *p, int key, _Out_ int64_t *out)',
  'int simlsh_params_get_double(const simlsh_params *p, int key, _Out_ double *out)',
  'int simlsh_lsh_optimal_params_recall(_Out_ uint32_t *b, _Out_ uint32_t *r, _Out_ double *achieved, uint32_t num_perm, double t, double recall, double width)',
  // texts and lens as 64-bit words built in a Uint32Array (see signBatch)
  'int simlsh_sign_batch(_Out_ uint32_t *values, _Out_ uint8_t *empty, const simlsh_params *p, const void *texts, const void *lens, size_t n, uint32_t nthreads)',
  'int simlsh_index_insert_values(simlsh_index *ix, const uint64_t *ids, const uint32_t *values, size_t n, uint32_t nthreads)',
  'int simlsh_signature_new(_Out_ simlsh_signature **out, const simlsh_params *p)',
  'void simlsh_signature_free(simlsh_signature *s)',
  'int simlsh_signature_clear(simlsh_signature *s)',
  'int simlsh_signature_add_text(simlsh_signature *s, const void *text, size_t len)',
  'int simlsh_signature_num_perm(const simlsh_signature *s)',
  'int simlsh_signature_values(_Out_ uint32_t *buf, size_t cap, size_t *count, const simlsh_signature *s)',
  'int simlsh_signature_jaccard(_Out_ double *out, const simlsh_signature *a, const simlsh_signature *b)',
  'int simlsh_index_new(_Out_ simlsh_index **out, const simlsh_params *p)',
  'void simlsh_index_free(simlsh_index *ix)',
  'int simlsh_index_insert(simlsh_index *ix, uint64_t id, const simlsh_signature *s)',
  'int simlsh_index_bands(_Out_ uint32_t *b, _Out_ uint32_t *r, const simlsh_index *ix)',
  'int simlsh_index_query(simlsh_results *res, const simlsh_index *ix, const simlsh_signature *s, int flags)',
  'int simlsh_index_pairs(simlsh_results *res, const simlsh_index *ix, int flags, size_t max_pairs)',
  'int simlsh_results_new(_Out_ simlsh_results **out, const void *alloc)',
  'void simlsh_results_free(simlsh_results *r)',
  'size_t simlsh_results_count(const simlsh_results *r)',
  'const void *simlsh_results_a(const simlsh_results *r)',
  'const void *simlsh_results_b(const simlsh_results *r)',
  'const void *simlsh_results_scores(const simlsh_results *r)',
  'int simlsh_results_offset(_Out_ size_t *out, const simlsh_results *r, size_t q)',
  'int simlsh_index_largest_buckets(simlsh_results *res, _Out_ uint64_t *docs_above, const simlsh_index *ix, size_t k, size_t min_size)',
  'double simlsh_dedup_prefilter(double threshold, uint32_t num_perm)',
  'int simlsh_dedup_banding(simlsh_params *p, int mode, double recall, uint32_t bands, uint32_t rows, _Out_ uint32_t *bands_out, _Out_ uint32_t *rows_out)',
  'int simlsh_dedup_new(_Out_ simlsh_dedup **out, const simlsh_index *ix, int mode, double threshold)',
  'void simlsh_dedup_free(simlsh_dedup *d)',
  'int simlsh_dedup_set(simlsh_dedup *d, int key, double value)',
  'int simlsh_dedup_order(simlsh_dedup *d, const uint64_t *ids, size_t n)',
  'int simlsh_dedup_sizes(simlsh_dedup *d, const uint64_t *ids, const uint64_t *bytes, size_t n)',
  'int simlsh_dedup_next(simlsh_results *need, simlsh_dedup *d, const simlsh_index *ix)',
  // texts and lens as 64-bit words built in a Uint32Array (see signBatch)
  'int simlsh_dedup_texts(simlsh_dedup *d, const uint64_t *ids, const void *texts, const void *lens, size_t n)',
  'int simlsh_dedup_missing(simlsh_dedup *d, const uint64_t *ids, size_t n)',
  'int simlsh_dedup_groups(simlsh_results *res, _Out_ size_t *ngroups, const simlsh_dedup *d)',
  'int simlsh_dedup_stat(_Out_ uint64_t *value, const simlsh_dedup *d, int key)',
]) {
  C[proto.match(/(simlsh_\w+)\(/)[1]] = lib.func(proto);
}

class SimlshError extends Error {
  constructor(op, code) {
    super(`${op}: ${C.simlsh_strerror(code)}`);
    this.op = op;
    this.code = code;
    this.name = C.simlsh_error_name(code);
  }
}

function call(op, ...args) {
  const rc = C[op](...args);
  if (rc < 0) throw new SimlshError(op, rc);
  return rc;
}

// Calls op with a fresh out-parameter first and returns what it received.
function make(op, ...args) {
  const out = [null];
  call(op, out, ...args);
  return out[0];
}

const constant = (kind, name) => Number(make('simlsh_constant_value', kind, name));
const KIND_PARAM = 2, KIND_QUERY_FLAG = 9;
const PARAM = {};
for (const k of ['unit', 'k', 'normalize', 'seed', 'num_perm', 'scheme', 'bands', 'rows',
  'threshold', 'fp_weight', 'fn_weight'])
  PARAM[k] = constant(KIND_PARAM, k);
const QUERY_VERIFY = constant(KIND_QUERY_FLAG, 'verify');

const LO = require('os').endianness() === 'LE' ? 0 : 1; // the low half of a 64-bit word
const asBytes = (t) => (typeof t === 'string' ? Buffer.from(t, 'utf8') : t);

// The pointers and lengths of bufs (Buffers) as 2n 64-bit words, written
// as two 32-bit halves (no BigInt per text), pointing into one block that
// holder.block keeps alive while C reads it and reuses for the next call.
function pack(holder, bufs) {
  const n = bufs.length, total = bufs.reduce((t, b) => t + b.length, 0);
  const words = new Uint32Array(4 * n);
  if (!(holder.block?.length >= total)) holder.block = Buffer.alloc(Math.max(total, 1));
  for (let i = 0, at = 0, base = Number(koffi.address(holder.block)); i < n; at += bufs[i++].length) {
    holder.block.set(bufs[i], at);
    words[2 * i + LO] = base + at; // ToUint32 keeps the low half
    words[2 * i + 1 - LO] = (base + at) / 4294967296;
    words[2 * (n + i) + LO] = bufs[i].length;
  }
  return words;
}

class Params {
  // preset: "default" (the library's defaults) or "dedup" (simlsh-dedup's)
  constructor(preset = 'default') {
    this.h = make('simlsh_params_new', null);
    try { call('simlsh_params_preset', this.h, preset); } catch (e) { this.close(); throw e; }
  }
  setInt(key, v) { call('simlsh_params_set_int', this.h, key, v); return this; }
  setDouble(key, v) { call('simlsh_params_set_double', this.h, key, v); return this; }
  describe() {
    const n = [0];
    call('simlsh_params_describe', null, 0, n, this.h);
    const buf = Buffer.alloc(n[0] + 1);
    call('simlsh_params_describe', buf, buf.length, n, this.h);
    return buf.toString('utf8', 0, n[0]);
  }
  // Sign texts (Buffers or strings) in one call on up to threads threads
  // (0: one per CPU): values is an n x numPerm Uint32Array (a view of out
  // when out is long enough: sign a stream in chunks into one reused out),
  // empty[i] is 1 for a text with nothing to shingle.
  signBatch(texts, threads = 0, out = null) {
    const bufs = texts.map(asBytes), n = bufs.length, size = n * this.numPerm();
    const values = out && out.length >= size ? out.subarray(0, size) : new Uint32Array(size);
    const empty = new Uint8Array(n);
    if (n === 0) return { values, empty };
    // The texts go into one block, so one address. The block is kept with
    // the params: a local one could be collected before C reads it (its
    // last JS use is koffi.address), and it is reused by the next call.
    const words = pack(this, bufs);
    call('simlsh_sign_batch', values, empty, this.h, words, words.subarray(2 * n), n, threads);
    return { values, empty };
  }
  getInt(key) {
    const v = [0];
    call('simlsh_params_get_int', this.h, key, v);
    return Number(v[0]);
  }
  getDouble(key) {
    const v = [0];
    call('simlsh_params_get_double', this.h, key, v);
    return v[0];
  }
  numPerm() {
    const np = [0];
    call('simlsh_params_get_int', this.h, PARAM.num_perm, np);
    return Number(np[0]);
  }
  close() { C.simlsh_params_free(this.h); this.h = this.block = null; }
}

const count = new BigUint64Array(1); // scratch out-parameter: typed arrays pass fastest

class Signature {
  constructor(params) {
    this.h = make('simlsh_signature_new', params.h);
    this.numPerm = call('simlsh_signature_num_perm', this.h);
  }
  // The signature of text alone (clear, then add).
  setText(text) {
    const b = asBytes(text);
    C.simlsh_signature_clear(this.h);
    call('simlsh_signature_add_text', this.h, b, b.length);
    return this;
  }
  // The num_perm values, into out (a Uint32Array of numPerm) if given.
  values(out = new Uint32Array(this.numPerm)) {
    call('simlsh_signature_values', out, out.length, count, this.h);
    return out;
  }
  jaccard(other) { return make('simlsh_signature_jaccard', this.h, other.h); }
  close() { C.simlsh_signature_free(this.h); this.h = null; }
}

// Copies the borrowed columns before the results are freed.
function withResults(fill) {
  const r = make('simlsh_results_new', null);
  try {
    fill(r);
    const n = Number(C.simlsh_results_count(r)); // columns are never NULL
    const col = (p, T) => new T(koffi.view(p, n * 8).slice(0));
    const a = col(C.simlsh_results_a(r), BigUint64Array);
    const b = col(C.simlsh_results_b(r), BigUint64Array);
    const s = col(C.simlsh_results_scores(r), Float64Array);
    return Array.from(a, (x, i) => ({ a: x, b: b[i], score: s[i] }));
  } finally {
    C.simlsh_results_free(r);
  }
}

class Index {
  constructor(params) {
    this.h = make('simlsh_index_new', params.h);
    this.numPerm = params.numPerm();
  }
  insert(id, sig) { call('simlsh_index_insert', this.h, BigInt(id), sig.h); }
  // ids: BigUint64Array (or BigInts); values: rows as signBatch returns them.
  insertValues(ids, values, threads = 0) {
    const a = BigUint64Array.from(ids, BigInt);
    // C reads a.length rows: a shorter values would be read past its end.
    if (!(values instanceof Uint32Array) || values.length < a.length * this.numPerm)
      throw new SimlshError('simlsh_index_insert_values', -1);
    if (a.length) call('simlsh_index_insert_values', this.h, a, values, a.length, threads);
  }
  bands() {
    const b = [0], r = [0];
    call('simlsh_index_bands', b, r, this.h);
    return [b[0], r[0]];
  }
  query(sig, flags = 0) {
    return withResults((r) => call('simlsh_index_query', r, this.h, sig.h, flags));
  }
  // Candidate pairs {a, b, score}, a < b, sorted; maxPairs 0: no limit.
  pairs(flags = 0, maxPairs = 0) {
    return withResults((r) => call('simlsh_index_pairs', r, this.h, flags, maxPairs));
  }
  // The k largest buckets with at least minSize members, largest first
  // ({sample, band, size}), and docsAbove: the documents in at least one
  // bucket of minSize or more (simlsh_index_largest_buckets).
  largestBuckets(k, minSize = 2) {
    const above = new BigUint64Array(1);
    const rows = withResults((r) => call('simlsh_index_largest_buckets', r, above, this.h, k, minSize));
    return {
      buckets: rows.map((r) => ({ sample: r.a, band: Number(r.b), size: r.score })),
      docsAbove: above[0],
    };
  }
  close() { C.simlsh_index_free(this.h); this.h = null; }
}

// Every constant the library names for kind, { camelCaseName: value }, in
// value order: "keep_below" is keepBelow (the library's name works too
// where a name is taken). Empty for a kind the library does not know.
function constants(kind) {
  const out = {};
  for (let i = 0, v = [0]; C.simlsh_constant_at(v, null, kind, i) === 0; i++) {
    const name = C.simlsh_constant_name(kind, v[0]);
    out[name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] = Number(v[0]);
  }
  return Object.freeze(out);
}

// enum simlsh_dedup_mode, simlsh_dedup_key and simlsh_dedup_stat, read from
// the library by name (SIMLSH_KIND_DEDUP_*).
const KIND_DEDUP_MODE = 11, KIND_DEDUP_KEY = 12, KIND_DEDUP_STAT = 13;
const DEDUP_MODE = constants(KIND_DEDUP_MODE);
const DEDUP_KEY = constants(KIND_DEDUP_KEY);
const DEDUP_STAT = constants(KIND_DEDUP_STAT);

// A constant given by its name (camelCase or the library's) or its value.
function dedupConstant(table, key, op) {
  const v = typeof key === 'string'
    ? table[key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] : key;
  if (!Number.isInteger(v)) throw new SimlshError(op, -1);
  return v;
}

// Set bands and rows of params to the deduplication policy's banding for
// mode (a DEDUP_MODE name or value), the one simlsh-dedup uses, and return
// it, {bands, rows} (simlsh_dedup_banding): with bands and rows both 0,
// 'exact' takes the banding with the least false-positive area that makes a
// pair at the params' threshold a candidate with probability recall (16 x 6
// for 0.8 and 128 permutations at 0.99), the other modes keep the
// automatic banding (0, 0); one of the two alone makes the other num_perm
// divided by it. Throws EINVAL (the params unchanged) for a banding that
// does not fit or a recall outside (0, 1).
function dedupBanding(params, mode, recall = 0.99, bands = 0, rows = 0) {
  const m = dedupConstant(DEDUP_MODE, mode, 'simlsh_dedup_banding');
  if (!params?.h) throw new SimlshError('simlsh_dedup_banding', -1);
  const b = [0], r = [0];
  call('simlsh_dedup_banding', params.h, m, recall, bands, rows, b, r);
  return { bands: b[0], rows: r[0] };
}

// The exact mode's default prefilter (simlsh_dedup_prefilter), or -1 out of range.
const dedupPrefilter = (threshold, numPerm) => C.simlsh_dedup_prefilter(threshold, numPerm);

// The banding with the least false-positive area whose probability of making
// a pair at threshold t a candidate is at least recall (within width above t
// when width > 0): {bands, rows, achieved} (simlsh_lsh_optimal_params_recall).
function optimalParamsRecall(numPerm, t, recall, width = 0) {
  const b = [0], r = [0], a = [0];
  call('simlsh_lsh_optimal_params_recall', b, r, a, numPerm, t, recall, width);
  return { bands: b[0], rows: r[0], achieved: a[0] };
}

const ids64 = (ids) => (ids instanceof BigUint64Array ? ids : BigUint64Array.from(ids, BigInt));

// The library's dedup engine (simlsh_dedup_*): star groups straight from an
// index's buckets. Configure it (set*, order, sizes) before the first
// next(); then, in exact mode, hand over the texts each next() names with
// texts() (or missing()) until next() names none; then read groups(). The
// engine reads the index on every next(): keep the index open and unchanged
// meanwhile (an insert or removal makes next() throw ESTATE). close() frees it.
class Dedup {
  // mode: 'none', 'estimate', 'exact' (or DEDUP_MODE's values); threshold
  // in (0, 1]. Priority is by ascending id until order() says otherwise.
  constructor(index, mode, threshold) {
    const m = dedupConstant(DEDUP_MODE, mode, 'simlsh_dedup_new');
    if (!index?.h || typeof threshold !== 'number')
      throw new SimlshError('simlsh_dedup_new', -1);
    this.need = make('simlsh_results_new', null);
    try {
      this.h = make('simlsh_dedup_new', index.h, m, threshold);
    } catch (e) {
      C.simlsh_results_free(this.need);
      throw e;
    }
    this.index = index;
  }
  // A setting by its DEDUP_KEY name ("giant_cost" or giantCost) or value.
  set(key, value) {
    const k = dedupConstant(DEDUP_KEY, key, 'simlsh_dedup_set');
    call('simlsh_dedup_set', this.h, k, Number(value));
    return this;
  }
  // Threads that verify one texts() call (0: one per CPU; default 1).
  setThreads(n) { return this.set(DEDUP_KEY.threads, n); }
  // Bytes of text one batch may ask for (default 64 MiB).
  setMemory(bytes) { return this.set(DEDUP_KEY.memory, bytes); }
  // The estimate a pair needs before its texts are compared (exact mode).
  setPrefilter(p) { return this.set(DEDUP_KEY.prefilter, p); }
  // Ids below id are kept documents: centres in their turn, never claimed.
  setKeepBelow(id) { return this.set(DEDUP_KEY.keepBelow, id); }
  // Buckets of more members than this (default 64; 0: none) are judged from
  // a sample and, when they hold unlike documents, may be set aside (see
  // setGiantCost); that can only lose groups, never make a wrong one.
  setGiant(members) { return this.set(DEDUP_KEY.giant, members); }
  // What the unlike buckets kept may cost, in looks per document and band
  // (default 64; 0 sets every unlike bucket above setGiant's size aside).
  setGiantCost(looks) { return this.set(DEDUP_KEY.giantCost, looks); }
  // Priority: ids first, then every other document by id.
  order(ids) {
    const a = ids64(ids);
    call('simlsh_dedup_order', this.h, a, a.length);
    return this;
  }
  // Text sizes in bytes (bytes[i] of ids[i]), which batches are measured with.
  sizes(ids, bytes) {
    const a = ids64(ids), b = ids64(bytes);
    if (a.length !== b.length) throw new SimlshError('simlsh_dedup_sizes', -1);
    call('simlsh_dedup_sizes', this.h, a, b, a.length);
    return this;
  }
  // Place every document that needs no text; return the ids (a
  // BigUint64Array) whose texts are needed next; none means done.
  next() {
    if (!this.index?.h) throw new SimlshError('simlsh_dedup_next', -1);
    call('simlsh_dedup_next', this.need, this.h, this.index.h);
    const n = Number(C.simlsh_results_count(this.need));
    return new BigUint64Array(koffi.view(C.simlsh_results_a(this.need), n * 8).slice(0));
  }
  // Hand over texts (Buffers or strings; texts[i] of ids[i]) that the last
  // next() asked for, in any order and as many calls as you like. A
  // SimlshError named EUTF8 (UTF8_POLICY reject) means the invalid texts
  // count as missing and the others were taken: the loop may go on.
  texts(ids, texts) {
    const a = ids64(ids), bufs = texts.map(asBytes), n = a.length;
    if (bufs.length !== n) throw new SimlshError('simlsh_dedup_texts', -1);
    const words = pack(this, bufs);
    try {
      call('simlsh_dedup_texts', this.h, a, words, words.subarray(2 * n), n);
    } finally {
      if (this.block?.length > 1 << 24) this.block = null; // texts are not kept
    }
  }
  // The texts of ids cannot be had: their pairs are decided by the estimate.
  missing(ids) {
    const a = ids64(ids);
    call('simlsh_dedup_missing', this.h, a, a.length);
  }
  // The groups of two or more documents in their centres' priority order:
  // [{centre, members: [{id, score}]}], the centre first (score 1; -1 for
  // 'none'). Throws ESTATE until next() has named no texts.
  groups() {
    const r = make('simlsh_results_new', null);
    try {
      const ngroups = [0];
      call('simlsh_dedup_groups', r, ngroups, this.h);
      const ng = Number(ngroups[0]);
      const n = Number(C.simlsh_results_count(r));
      const col = (p, T) => new T(koffi.view(p, n * 8).slice(0));
      const a = col(C.simlsh_results_a(r), BigUint64Array);
      const b = col(C.simlsh_results_b(r), BigUint64Array);
      const s = col(C.simlsh_results_scores(r), Float64Array);
      const out = [];
      for (let g = 0, lo = 0; g < ng; g++) {
        const hi = Number(make('simlsh_results_offset', r, g + 1));
        const members = [];
        for (let i = lo; i < hi; i++) members.push({ id: a[i], score: s[i] });
        out.push({ centre: b[lo], members });
        lo = hi;
      }
      return out;
    } finally {
      C.simlsh_results_free(r);
    }
  }
  // A counter (a DEDUP_STAT name, "set_aside" or setAside, or value) of the
  // work done so far, a BigInt.
  stat(key) {
    const k = dedupConstant(DEDUP_STAT, key, 'simlsh_dedup_stat');
    const v = new BigUint64Array(1);
    call('simlsh_dedup_stat', v, this.h, k);
    return v[0];
  }
  close() {
    C.simlsh_dedup_free(this.h);
    C.simlsh_results_free(this.need);
    this.h = this.need = this.block = this.index = null;
  }
}

module.exports = { Params, Signature, Index, Dedup, SimlshError, PARAM, QUERY_VERIFY, DEDUP_MODE,
  DEDUP_KEY, DEDUP_STAT, dedupPrefilter, dedupBanding, optimalParamsRecall };
