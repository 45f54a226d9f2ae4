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
