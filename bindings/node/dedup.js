'use strict';
// Prints what `simlsh-dedup [--threshold T] [--verify MODE] PATH...` prints
// (--output clusters, the default) through the Node binding and the
// library's dedup engine: the "dedup" preset, documents in the tool's walk
// order (depth first, names in byte order), star groups from the index's
// buckets, and in exact mode (the default) the texts re-read from their
// files a batch at a time, as the engine asks for them.
// `--output pairs --verify estimate` prints the tool's pairs instead (TSV,
// scores with 4 decimals).
//
//   node dedup.js [--threshold T] [--verify exact|estimate|none]
//                 [--output clusters|pairs] [-j THREADS] [--memory BYTES] PATH...
// --memory bounds the text one batch of the pull loop asks for (the tool's
// --verify-memory); the groups do not depend on it.
const fs = require('fs');
const path = require('path');
const { Params, Index, Dedup, SimlshError, PARAM, QUERY_VERIFY, dedupBanding } =
  require('./index.js');
const { fmt4, esc } = require('./tsv.js');

function walk(p, out) {
  if (fs.lstatSync(p).isDirectory()) {
    // names as UTF-8 strings (what fs takes back), ordered by their bytes
    const names = fs.readdirSync(p).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    for (const n of names) walk(path.join(p, n), out);
  } else if (fs.statSync(p, { throwIfNoEntry: false })?.isFile()) {
    out.push(p);
  }
}

function fail(msg) {
  process.stderr.write(`dedup: ${msg}\n`);
  process.exit(1);
}

// simlsh-dedup's params for these options, banding included: the library's
// dedup policy (simlsh_dedup_banding) chooses it for the mode.
function dedupParams(threshold, mode) {
  const p = new Params('dedup');
  if (threshold !== undefined) p.setDouble(PARAM.threshold, threshold);
  dedupBanding(p, mode, 0.99);
  return p;
}

const args = process.argv.slice(2);
let threshold, memory, mode = 'exact', output = 'clusters', threads = 1;
while (args.length >= 2 && args[0].startsWith('-')) {
  const [opt, value] = args.splice(0, 2);
  if (opt === '--threshold') threshold = Number(value);
  else if (opt === '--verify' && ['exact', 'estimate', 'none'].includes(value)) mode = value;
  else if (opt === '--output' && ['clusters', 'pairs'].includes(value)) output = value;
  else if (opt === '-j') threads = Number(value);
  else if (opt === '--memory') memory = Number(value);
  else fail(`bad option ${opt} ${value}`);
}
if (output === 'pairs' && mode !== 'estimate') fail('--output pairs needs --verify estimate');
const params = dedupParams(threshold, mode);
const files = [];
for (const a of args) walk(a, files);
// Sign a chunk of files at a time and keep no text: the engine asks for the
// texts it needs later. Documents with nothing to shingle are skipped, as by
// the tool.
const index = new Index(params);
const np = params.numPerm(), ids = [], sizes = [];
let values = null;
for (let at = 0; at < files.length; at += 1024) {
  const texts = files.slice(at, at + 1024).map((f) => fs.readFileSync(f));
  const signed = params.signBatch(texts, threads, values);
  values = signed.values;
  const keep = texts.map((t, i) => i).filter((i) => !signed.empty[i]);
  const rows = new Uint32Array(keep.length * np);
  keep.forEach((i, j) => rows.set(values.subarray(i * np, (i + 1) * np), j * np));
  index.insertValues(keep.map((i) => BigInt(at + i)), rows, threads);
  for (const i of keep) {
    ids.push(BigInt(at + i));
    sizes.push(BigInt(texts[i].length));
  }
}
let out = '';
if (output === 'pairs') {
  for (const r of index.pairs(QUERY_VERIFY, 10000000))
    out += `${esc(files[Number(r.a)])}\t${esc(files[Number(r.b)])}\t${fmt4(r.score)}\n`;
  process.stdout.write(out);
  process.exit(0);
}
const d = new Dedup(index, mode, params.getDouble(PARAM.threshold));
d.setThreads(threads).sizes(ids, sizes);
if (memory !== undefined) d.setMemory(memory);
// The pull loop: the engine names the texts it needs, we read them.
for (let need = d.next(); need.length; need = d.next()) {
  const got = [], texts = [], gone = [];
  for (const id of need) {
    try {
      texts.push(fs.readFileSync(files[Number(id)]));
      got.push(id);
    } catch (e) {
      process.stderr.write(`dedup: ${e.message}; its pairs are verified by estimate\n`);
      gone.push(id);
    }
  }
  try {
    d.texts(got, texts);
  } catch (e) {
    if (!(e instanceof SimlshError && e.name === 'EUTF8')) throw e;
  }
  d.missing(gone);
}
// As the tool prints clusters: members in input order, groups in the order
// of their first member.
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const lines = d.groups().map((g) => g.members.map((m) => m.id).sort(cmp));
lines.sort((a, b) => cmp(a[0], b[0]));
for (const line of lines) out += line.map((id) => esc(files[Number(id)])).join('\t') + '\n';
process.stdout.write(out);
for (const o of [d, index, params]) o.close();
