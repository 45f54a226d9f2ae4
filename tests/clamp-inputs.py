#!/usr/bin/env python3
"""Find 32-bit classic-MinHash inputs that hit the empty mark (not a test).

docs/format.md: row i of a classic signature is high32(a_i * x + b_i mod 2^64),
clamped to 0xFFFFFFFE. tests/test-serialize.c needs inputs x < 2^32 whose
value is exactly 0xFFFFFFFF, to reach the clamp of the SIMD kernels' 32-bit
path. Those have no closed form; this prints, for seed 0 and 64 rows, the
smallest such x of every row that has one, found as the smallest x with
a*x mod 2^64 inside a window of 2^32 (a Euclid-like recursion on (a, 2^64)).

Usage: python3 tests/clamp-inputs.py
"""
M = 1 << 64
def splitmix(st):
    st = (st + 0x9e3779b97f4a7c15) % M
    z = st
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) % M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) % M
    return st, z ^ (z >> 31)

def first_hit(a, m, l, r):
    """smallest x >= 0 with l <= a*x mod m <= r (0 <= l <= r < m), or None"""
    a %= m
    if l == 0:
        return 0
    if a == 0:
        return None
    x = (l + a - 1) // a
    if a * x <= r:
        return x
    y = first_hit(m % a, a, (a - r % a) % a, (a - l % a) % a)
    if y is None:
        return None
    x = (m * y + l + a - 1) // a
    return x if a * x - m * y <= r else None

def rows(seed, P):
    st = ((seed << 32) ^ 0x434c4153) % M
    out = []
    for i in range(P):
        st, a = splitmix(st); a |= 1
        st, b = splitmix(st)
        out.append((a, b))
    return out

def main():
    seed = 0
    for i, (a, b) in enumerate(rows(seed, 64)):
        lo = (M - (1 << 32) - b) % M
        hi = lo + (1 << 32) - 1
        if hi >= M:
            continue  # the window wraps around 2^64; rare, skipped
        x = first_hit(a, M, lo, hi)
        if x is not None and x < (1 << 32):
            assert ((a * x + b) % M) >> 32 == 0xFFFFFFFF
            print('row', i, 'x = 0x%08x' % x)


if __name__ == '__main__':
    main()
