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
for (const t of ['simlsh_params', 'simlsh_signature', 'simlsh_index', 'simlsh_results'])
  koffi.opaque(t);

const C = {};
for (const proto of [
  'const char *simlsh_strerror(int err)',
  'const char *simlsh_error_name(int err)',
  'int simlsh_constant_value(_Out_ int64_t *out, int kind, const char *name)',
  'int simlsh_params_new(_Out_ simlsh_params **out, const void *alloc)',
  'void simlsh_params_free(simlsh_params *p)',
  'int simlsh_params_preset(simlsh_params *p, const char *name)',
  'int simlsh_params_set_int(simlsh_params *p, int key, int64_t v)',
  'int simlsh_params_set_double(simlsh_params *p, int key, double v)',
  'int simlsh_params_describe(_Out_ uint8_t *buf, size_t cap, _Out_ size_t *len, const simlsh_params *p)',
  'int simlsh_params_get_int(const simlsh_params *p, int key, _Out_ int64_t *out)',
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
    // The pointers and lengths are 64-bit words written as two 32-bit
    // halves: no BigInt per text.
    const total = bufs.reduce((t, b) => t + b.length, 0), words = new Uint32Array(4 * n);
    if (!(this.block?.length >= total)) this.block = Buffer.alloc(Math.max(total, 1));
    for (let i = 0, at = 0, base = Number(koffi.address(this.block)); i < n; at += bufs[i++].length) {
      this.block.set(bufs[i], at);
      words[2 * i + LO] = base + at; // ToUint32 keeps the low half
      words[2 * i + 1 - LO] = (base + at) / 4294967296;
      words[2 * (n + i) + LO] = bufs[i].length;
    }
    call('simlsh_sign_batch', values, empty, this.h, words, words.subarray(2 * n), n, threads);
    return { values, empty };
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
  close() { C.simlsh_index_free(this.h); this.h = null; }
}

module.exports = { Params, Signature, Index, SimlshError, PARAM, QUERY_VERIFY };
