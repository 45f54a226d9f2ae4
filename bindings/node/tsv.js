'use strict';
// simlsh-dedup's TSV fields, for dedup.js.

// printf("%.4f"): rounds the exact binary value, ties to even (toFixed
// rounds ties up). 25 digits separate a tie from any other double.
function fmt4(x) {
  const [i, f] = x.toFixed(25).split('.');
  let n = BigInt(i + f.slice(0, 4));
  const rest = f.slice(4);
  if (rest > '5' + '0'.repeat(rest.length - 1) || (rest.startsWith('5') && /^50*$/.test(rest) && n % 2n))
    n += 1n;
  const s = n.toString().padStart(5, '0');
  return s.slice(0, -4) + '.' + s.slice(-4);
}

const esc = (s) => s.replace(/[\\\t\n\r\0]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' })[c]);

module.exports = { fmt4, esc };
