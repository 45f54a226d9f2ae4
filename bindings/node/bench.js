'use strict';
// Signs 100,000 documents of 45 bytes as bindings/bench-c.c does and prints
// one JSON object per way of signing.
const { Params, Signature } = require('./index.js');

const DOCS = 100000;
const BASE = 'lorem ipsum dolor sit amet, consectetur adipiscing elit';
const p = new Params('dedup');
const sig = new Signature(p);
const texts = [];
for (let i = 0; i < DOCS; i++) texts.push(Buffer.from(String(i).padStart(5, '0') + ' ' + BASE.slice(0, 39)));
const values = new Uint32Array(sig.numPerm);
let check = 0; // below 2^53: Number adds, as cheap as C's
const t0 = [process.hrtime.bigint(), process.cpuUsage()];
for (let i = 0; i < DOCS; i++) {
  sig.setText(texts[i]);
  check += sig.values(values)[i % 128];
}
report('node', t0, check);

// The same documents in chunks into one reused matrix (see bindings/bench-c.c),
// on one thread.
const CHUNK = 4096;
const out = new Uint32Array(CHUNK * 128);
let t1;
// Two passes, the second timed, as in every binding: the first maps out
// and warms the JIT.
for (let pass = 0; pass < 2; pass++) {
  t1 = [process.hrtime.bigint(), process.cpuUsage()];
  check = 0;
  for (let at = 0; at < DOCS; at += CHUNK) {
    const chunk = texts.slice(at, at + CHUNK);
    const { values: all } = p.signBatch(chunk, 1, out);
    for (let i = at; i < at + chunk.length; i++) check += all[(i - at) * 128 + (i % 128)];
  }
}
report('node-batch', t1, check);

// Wall and process CPU time (steadier on a loaded machine).
function report(name, [t, c], sum) {
  const dt = Number(process.hrtime.bigint() - t) / 1e9;
  const u = process.cpuUsage(c), cpu = (u.user + u.system) / 1e6;
  console.log(JSON.stringify({ binding: name, docs: DOCS, doc_bytes: 45, seconds: +dt.toFixed(4),
    docs_per_s: Math.round(DOCS / dt), cpu_seconds: +cpu.toFixed(4),
    cpu_docs_per_s: Math.round(DOCS / cpu), check: Number(sum) }));
}
