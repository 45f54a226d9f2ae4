'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Params, Signature, Index, SimlshError, PARAM, QUERY_VERIFY } = require('../index.js');

test('errors carry the C code and name', () => {
  const p = new Params();
  assert.throws(() => p.setInt(PARAM.k, 0), (e) => e instanceof SimlshError && e.code === -1 &&
    e.name === 'EINVAL' && e.op === 'simlsh_params_set_int');
  assert.throws(() => new Params('nope'), (e) => e.name === 'ENOTFOUND');
  p.close();
});

test('pipeline with BigInt ids and Buffers', () => {
  const p = new Params('dedup');
  assert.match(p.describe(), /normalize=lower,space .*fn_weight=0\.9$/);
  const ix = new Index(p);
  assert.deepStrictEqual(ix.bands(), [14, 9]);
  const a = new Signature(p), b = new Signature(p);
  const text = 'The quick brown fox jumps over the lazy dog, again and again.';
  a.setText(Buffer.from(text));
  b.setText(text.toUpperCase());
  assert.strictEqual(a.jaccard(b), 1);
  assert.strictEqual(a.values().length, 128);
  const id = (1n << 63n) + 5n;
  ix.insert(id, a);
  assert.throws(() => ix.insert(id, a), (e) => e.name === 'EEXIST');
  assert.deepStrictEqual(ix.query(b, QUERY_VERIFY), [{ a: id, b: 0n, score: 1 }]);
  assert.deepStrictEqual(ix.pairs(QUERY_VERIFY), []); // no rows: no NULL column read
  a.setText('');
  assert.throws(() => ix.insert(2n, a), (e) => e.name === 'EEMPTY');
  for (const o of [a, b, ix, p]) o.close();
});

test('scores print as printf("%.4f") does', () => {
  const { fmt4, esc } = require('../tsv.js');
  // exact ties round to even, as glibc does; toFixed would round them up
  const want = { 0.84375: '0.8438', 0.90625: '0.9062', 0.03125: '0.0312', 1: '1.0000',
    0.9765625: '0.9766', 0.5: '0.5000', 0: '0.0000', 0.99999: '1.0000', 0.99994: '0.9999' };
  for (const [x, s] of Object.entries(want)) assert.strictEqual(fmt4(Number(x)), s, x);
  assert.strictEqual(esc('a\tb\\c\n'), 'a\\tb\\\\c\\n');
});

// Issue 16: koffi rejected every prototype of the 0.1 header. Now each
// SIMLSH_API declaration, with SIMLSH_OUT read as koffi's _Out_, is
// accepted as written.
test('koffi reads every prototype of the header', { skip: !process.env.SIMLSH_HEADER }, () => {
  const koffi = require('koffi');
  const lib = koffi.load(process.env.SIMLSH_LIBRARY || process.env.SIMLSH_LIB || 'libsimlsh.so.1');
  let h = require('fs').readFileSync(process.env.SIMLSH_HEADER, 'utf8');
  h = h.replace(/\/\*[\s\S]*?\*\//g, ' ').split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
  for (const m of h.matchAll(/typedef\s+struct\s+(\w+)\s*(?:\{[\s\S]*?\}\s*)?\1\s*;/g)) {
    try { koffi.opaque(m[1]); } catch (e) { /* declared by index.js already */ }
  }
  let n = 0;
  for (const m of h.matchAll(/\bSIMLSH_API\b([^;]*);/g)) {
    const proto = m[1].replace(/\bSIMLSH_BORROWED\b/g, '').replace(/\bSIMLSH_OUT\b/g, '_Out_');
    assert.doesNotThrow(() => lib.func(proto.replace(/\s+/g, ' ').trim()), proto);
    n++;
  }
  assert.ok(n > 100, `only ${n} declarations found`);
});

test('signBatch equals one signature per text; insertValues', () => {
  const p = new Params('dedup');
  const texts = ['first document, long enough', '', Buffer.from('the second one here')];
  const { values, empty } = p.signBatch(texts, 2);
  assert.deepStrictEqual([...empty], [0, 1, 0]);
  // A long enough out is reused: the values are a view of it.
  const out = new Uint32Array(3 * 128);
  const again = p.signBatch(texts.slice(2), 1, out);
  assert.ok(again.values.buffer === out.buffer && again.values.length === 128);
  assert.deepStrictEqual(again.values, values.slice(256));
  assert.deepStrictEqual(p.signBatch(['', ''], 1).empty, Uint8Array.from([1, 1]));
  const s = new Signature(p);
  for (const i of [0, 2])
    assert.deepStrictEqual(s.setText(texts[i]).values(), values.slice(i * 128, (i + 1) * 128));
  const ix = new Index(p);
  const rows = Uint32Array.from([...values.slice(0, 128), ...values.slice(256)]);
  // Fewer rows than ids: refused, never read past the array.
  assert.throws(() => ix.insertValues([7n, 9n], rows.subarray(0, 200), 1), (e) => e.name === 'EINVAL');
  ix.insertValues([7n, 9n], rows, 1);
  assert.throws(() => ix.insertValues([1n], values.slice(128, 256), 1), (e) => e.name === 'EEMPTY');
  assert.deepStrictEqual(ix.query(s, 0).map((r) => r.a), [9n]);
  for (const o of [s, ix, p]) o.close();
});
