/*
 * LSD radix sort of 64-bit keys, carrying optional 64-bit values: one copy
 * for shingle sets, grouping and the index's whole-index passes; and the
 * short sort of a few hundred hashes (the dedup engine's kept samples).
 * Util layer, header only.
 *
 * Stable, 11-bit digits (at most 6 passes; 3 for 32-bit keys), and a
 * digit on which every key agrees is skipped, so small or clustered keys
 * (dense indices, 32-bit hashes, zero high halves) cost fewer passes.
 */
#ifndef SIMLSH_RADIX_H
#define SIMLSH_RADIX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Sort k[0..n) ascending, moving v[i] (v may be NULL) with k[i]. tk and tv
 * (tv only with v) are scratch of n entries. */
static inline void simlsh__radix_sort64(uint64_t *k, uint64_t *v, uint64_t *tk, uint64_t *tv,
                                        size_t n)
{
    if (n < 2)
        return;
    uint64_t or_all = 0, and_all = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        or_all |= k[i];
        and_all &= k[i];
    }
    uint64_t *sk = k, *sv = v, *dk = tk, *dv = tv;
    for (unsigned shift = 0; shift < 64; shift += 11) {
        if (((or_all ^ and_all) >> shift & 0x7ff) == 0)
            continue; /* every key has the same digit */
        size_t count[2048] = {0};
        for (size_t i = 0; i < n; i++)
            count[(sk[i] >> shift) & 0x7ff]++;
        size_t sum = 0;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t p = count[(sk[i] >> shift) & 0x7ff]++;
            dk[p] = sk[i];
            if (sv != NULL)
                dv[p] = sv[i];
        }
        uint64_t *t = sk;
        sk = dk;
        dk = t;
        t = sv;
        sv = dv;
        dv = t;
    }
    if (sk != k) {
        memcpy(k, sk, n * sizeof *k);
        if (v != NULL)
            memcpy(v, sv, n * sizeof *v);
    }
}

/* Sort k[0..n) ascending when the keys are uniform below 2^top (hashes):
 * a counting pass on their top 8 bits leaves buckets of one or two for a
 * few hundred keys, and an insertion pass finishes, where the passes of
 * simlsh__radix_sort64 would be mostly their 2,048 counters; past 4,096
 * keys, simlsh__radix_sort64. tk is scratch of n entries. */
static inline void simlsh__sort_hashes64(uint64_t *k, uint64_t *tk, size_t n, unsigned top)
{
    if (n > 4096) {
        simlsh__radix_sort64(k, NULL, tk, NULL, n);
        return;
    }
    size_t at[257] = {0};
    unsigned sh = top - 8;
    for (size_t i = 0; i < n; i++)
        at[(k[i] >> sh & 255) + 1]++;
    for (unsigned b = 0; b < 256; b++)
        at[b + 1] += at[b];
    for (size_t i = 0; i < n; i++)
        tk[at[k[i] >> sh & 255]++] = k[i];
    for (size_t i = 0; i < n; i++) {
        uint64_t x = tk[i];
        size_t j = i;
        for (; j > 0 && k[j - 1] > x; j--)
            k[j] = k[j - 1];
        k[j] = x;
    }
}

#endif
