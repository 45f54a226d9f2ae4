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

// Texts under ids 0, 1, ... in a "dedup" index.
function dedupIndex(texts) {
  const { Params: P, Index: I } = require('../index.js');
  const p = new P('dedup'), ix = new I(p);
  ix.insertValues(texts.map((t, i) => BigInt(i)), p.signBatch(texts, 1).values, 1);
  return { p, ix };
}

test('the dedup engine: pull loop, groups, errors', () => {
  const { Dedup, dedupPrefilter, optimalParamsRecall } = require('../index.js');
  const base = 'the harbour log of the third week, calm seas and light winds; '.repeat(8);
  const texts = [
    'an unrelated text about gardens and the vegetables grown in them this year',
    base,
    base.replace('calm', 'rough'), // a near-copy of 1
    Buffer.from(base), // an exact copy of 1
    'another unrelated text, the minutes of a council meeting held on a tuesday',
  ];
  const { p, ix } = dedupIndex(texts);
  const d = new Dedup(ix, 'exact', 0.8);
  assert.throws(() => d.groups(), (e) => e.name === 'ESTATE');
  d.setThreads(2);
  assert.throws(() => d.setThreads(1000), (e) => e.name === 'EINVAL');
  assert.throws(() => d.sizes([1n], []), (e) => e.name === 'EINVAL');
  let batches = 0;
  for (let need = d.next(); need.length; need = d.next()) {
    batches++;
    assert.ok(need instanceof BigUint64Array);
    assert.throws(() => d.setThreads(1), (e) => e.name === 'ESTATE');
    assert.throws(() => d.texts([99n], ['x']), (e) => e.name === 'EINVAL');
    const h = need.length >> 1; // in two calls, the second half first
    const got = Array.from(need, (id) => texts[Number(id)]);
    d.texts(need.subarray(h), got.slice(h));
    d.texts(need.subarray(0, h), got.slice(0, h));
  }
  const g = d.groups();
  assert.ok(batches > 0);
  assert.strictEqual(g.length, 1);
  assert.strictEqual(g[0].centre, 1n);
  const m = g[0].members;
  assert.deepStrictEqual([m[0], m[1].id, m[2]], [{ id: 1n, score: 1 }, 2n, { id: 3n, score: 1 }]);
  assert.ok(m[1].score >= 0.8 && m[1].score < 1, String(m[1].score));
  assert.strictEqual(d.stat('members'), 2n);
  assert.strictEqual(d.stat('identical'), 1n);
  assert.throws(() => d.stat('nope'), (e) => e.name === 'EINVAL');
  d.close();
  d.close(); // a second close is a no-op
  assert.throws(() => d.next(), (e) => e.name === 'EINVAL');
  // estimate mode needs no texts; order() picks the centre
  const e = new Dedup(ix, 'none', 0.8).order([3n]);
  assert.strictEqual(e.next().length, 0);
  assert.deepStrictEqual(e.groups()[0].members.map((x) => [x.id, x.score]),
    [[3n, 1], [1n, -1], [2n, -1]]);
  e.close();
  // missing texts are decided by the estimate
  const x = new Dedup(ix, 'exact', 0.8);
  x.missing(x.next());
  assert.strictEqual(x.next().length, 0);
  assert.strictEqual(x.stat('estimated'), 2n);
  assert.strictEqual(x.groups()[0].members.length, 3);
  // the index changed since the engine was made: refused, not wrong
  const y = new Dedup(ix, 'exact', 0.8);
  const { Signature: S } = require('../index.js');
  const s = new S(p).setText('one more document, inserted after the engine was made');
  ix.insert(7n, s);
  assert.throws(() => y.next(), (err) => err.name === 'ESTATE');
  const { buckets, docsAbove } = ix.largestBuckets(3, 3);
  assert.deepStrictEqual([buckets[0].size, buckets[0].sample, docsAbove], [3, 1n, 3n]);
  assert.throws(() => new Dedup(ix, 'exact', 1.5), (err) => err.name === 'EINVAL');
  assert.throws(() => new Dedup(ix, 'sometimes', 0.8), (err) => err.name === 'EINVAL');
  ix.close();
  assert.throws(() => x.next(), (err) => err.name === 'EINVAL'); // a closed index
  for (const o of [x, y, s, p]) o.close();
  const f = dedupPrefilter(0.8, 128);
  assert.ok(f > 0.6 && f < 0.8 && dedupPrefilter(0, 128) === -1);
  const r = optimalParamsRecall(128, 0.8, 0.99);
  assert.deepStrictEqual([r.bands, r.rows], [16, 6]);
});

// The dedup enums come from the library's names; the header agrees.
test('dedup constants are the library\'s names', () => {
  const { DEDUP_MODE, DEDUP_KEY, DEDUP_STAT } = require('../index.js');
  assert.deepStrictEqual(DEDUP_MODE, { none: 0, estimate: 1, exact: 2 });
  for (const k of ['threads', 'memory', 'prefilter', 'keepBelow', 'giant', 'giantCost'])
    assert.ok(Number.isInteger(DEDUP_KEY[k]), k);
  assert.deepStrictEqual(Object.keys(DEDUP_STAT), ['visits', 'candidates', 'exact', 'identical',
    'estimated', 'texts', 'batches', 'setBytes', 'groups', 'members', 'edits', 'setAside',
    'setAsideMembers', 'sampled']);
});

test('dedup constants match the header', { skip: !process.env.SIMLSH_HEADER }, () => {
  const { DEDUP_MODE, DEDUP_KEY, DEDUP_STAT } = require('../index.js');
  const h = require('fs').readFileSync(process.env.SIMLSH_HEADER, 'utf8');
  const value = (name) => Number(h.match(new RegExp(`\\b${name} = (-?\\d+)`))[1]);
  const upper = (k) => k.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();
  for (const [k, v] of Object.entries(DEDUP_MODE)) assert.strictEqual(value('SIMLSH_DEDUP_' + upper(k)), v, k);
  for (const [k, v] of Object.entries(DEDUP_KEY)) assert.strictEqual(value('SIMLSH_DEDUP_' + upper(k)), v, k);
  for (const [k, v] of Object.entries(DEDUP_STAT)) assert.strictEqual(value('SIMLSH_DEDUP_STAT_' + upper(k)), v, k);
  let n = 0;
  for (const _ of h.matchAll(/\bSIMLSH_DEDUP_STAT_\w+ = /g)) n++;
  assert.strictEqual(n, Object.keys(DEDUP_STAT).length);
  // the kinds index.js reads them from
  const src = require('fs').readFileSync(require.resolve('../index.js'), 'utf8');
  for (const k of ['MODE', 'KEY', 'STAT'])
    assert.strictEqual(Number(src.match(new RegExp(`KIND_DEDUP_${k} = (\\d+)`))[1]),
      value('SIMLSH_KIND_DEDUP_' + k), k);
});

test('dedupBanding: the policy\'s banding', () => {
  const { dedupBanding } = require('../index.js');
  const p = new Params('dedup');
  const banding = () => [p.getInt(PARAM.bands), p.getInt(PARAM.rows)];
  assert.deepStrictEqual(dedupBanding(p, 'exact', 0.99), { bands: 16, rows: 6 });
  assert.deepStrictEqual(banding(), [16, 6]);
  const ix = new Index(p);
  assert.deepStrictEqual(ix.bands(), [16, 6]);
  ix.close();
  assert.deepStrictEqual(dedupBanding(p, 'estimate', 0.99), { bands: 0, rows: 0 });
  assert.deepStrictEqual(banding(), [0, 0]);
  assert.deepStrictEqual(dedupBanding(p, 'exact', 0.99, 20), { bands: 20, rows: 6 });
  // does not fit: refused, the params as they were
  assert.throws(() => dedupBanding(p, 'exact', 0.99, 20, 7),
    (e) => e.name === 'EINVAL' && e.op === 'simlsh_dedup_banding');
  assert.deepStrictEqual(banding(), [20, 6]);
  assert.throws(() => dedupBanding(p, 'exact', 1), (e) => e.name === 'EINVAL');
  assert.throws(() => dedupBanding(p, 'sometimes'), (e) => e.name === 'EINVAL');
  assert.throws(() => dedupBanding(null, 'exact'), (e) => e.name === 'EINVAL');
  p.close();
});

// n texts of 200 words from one template, each with a fifth of its words its
// own, so that every two share about half their shingles.
function templated(n) {
  return Array.from({ length: n }, (_, d) => Array.from({ length: 200 }, (_, i) =>
    ((d * 131 + i * 71 + (d * i) % 97) % 100 < 20 ? `d${d}x${i} ` : `word${i} `)).join(''));
}

test('dedup: giant buckets set aside, counted', () => {
  const { Dedup, dedupBanding } = require('../index.js');
  const texts = templated(40);
  const p = new Params('dedup');
  dedupBanding(p, 'none', 0.99, 64, 2); // buckets of most of the corpus, of unlike documents
  const ix = new Index(p);
  ix.insertValues(texts.map((t, i) => BigInt(i)), p.signBatch(texts, 1).values, 1);
  const run = (giant, cost) => {
    const d = new Dedup(ix, 'estimate', 0.8).setGiant(giant).setGiantCost(cost);
    assert.strictEqual(d.next().length, 0);
    assert.throws(() => d.setGiant(10), (e) => e.name === 'ESTATE');
    const out = [d.stat('setAside'), d.stat('set_aside_members')];
    d.close();
    return out;
  };
  assert.deepStrictEqual(run(0, 64), [0n, 0n]);
  const [aside, members] = run(8, 0);
  assert.ok(aside > 0n && members > 8n * aside, `${aside} set aside, ${members} members`);
  const d = new Dedup(ix, 'estimate', 0.8);
  assert.throws(() => d.setGiantCost(2e15), (e) => e.name === 'EINVAL');
  assert.throws(() => d.set('no_such_key', 1), (e) => e.name === 'EINVAL');
  d.set('giant_cost', 3);
  d.close();
  ix.close();
  p.close();
});

test('params getters', () => {
  const p = new Params('dedup');
  assert.strictEqual(p.getDouble(PARAM.threshold), 0.8);
  assert.strictEqual(p.getInt(PARAM.num_perm), 128);
  assert.throws(() => p.getInt(99), (e) => e.name === 'EINVAL');
  p.close();
});
