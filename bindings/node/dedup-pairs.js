'use strict';
// Prints what `simlsh-dedup --output pairs [--threshold T] DIR...` prints:
// the "dedup" preset, documents in the tool's walk order (depth first,
// names in byte order), pairs verified by estimate, TSV with 4 decimals.
const fs = require('fs');
const path = require('path');
const { Params, Signature, Index, PARAM, QUERY_VERIFY } = require('./index.js');
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
const sig = new Signature(params);
files.forEach((f, id) => {
  sig.setText(fs.readFileSync(f));
  try {
    index.insert(BigInt(id), sig);
  } catch (e) {
    if (e.name !== 'EEMPTY') throw e; // empty documents are skipped, as by the tool
  }
});
let out = '';
for (const r of index.pairs(QUERY_VERIFY, 10000000))
  out += `${esc(files[Number(r.a)])}\t${esc(files[Number(r.b)])}\t${fmt4(r.score)}\n`;
process.stdout.write(out);
