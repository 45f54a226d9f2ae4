'use strict';
// Prints what `simlsh-dedup --output pairs [--threshold T] DIR...` prints:
// the "dedup" preset, documents in the tool's walk order (depth first,
// names in byte order), pairs verified by estimate, TSV with 4 decimals.
const fs = require('fs');
const path = require('path');
const { Params, Index, PARAM, QUERY_VERIFY } = require('./index.js');
const { fmt4, esc } = require('./tsv.js');

function walk(p, out) {
  if (fs.lstatSync(p).isDirectory()) {
    const names = fs.readdirSync(p, { encoding: 'buffer' }).sort(Buffer.compare);
    for (const n of names) walk(path.join(p, n.toString('latin1')), out);
  } else if (fs.statSync(p, { throwIfNoEntry: false })?.isFile()) {
    out.push(p);
  }
}

const args = process.argv.slice(2);
const params = new Params('dedup');
if (args[0] === '--threshold') params.setDouble(PARAM.threshold, Number(args.splice(0, 2)[1]));
const files = [];
for (const a of args) walk(a, files);
const index = new Index(params);
// One call signs them all, one inserts them; empty documents are skipped,
// as by the tool.
const { values, empty } = params.signBatch(files.map((f) => fs.readFileSync(f)));
const np = values.length / files.length;
const keep = files.map((f, i) => i).filter((i) => !empty[i]);
const rows = new Uint32Array(keep.length * np);
keep.forEach((i, j) => rows.set(values.subarray(i * np, (i + 1) * np), j * np));
index.insertValues(keep.map(BigInt), rows);
let out = '';
for (const r of index.pairs(QUERY_VERIFY, 10000000))
  out += `${esc(files[Number(r.a)])}\t${esc(files[Number(r.b)])}\t${fmt4(r.score)}\n`;
process.stdout.write(out);
