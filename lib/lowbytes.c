/*
 * The low-bytes pass of the dedup walk (lowbytes.h): a bucket member's row
 * against the rows of the centres that share the bucket. On a shared
 * template this runs once for each (centre, member) pair of the giant
 * buckets, tens of millions of times, so its cost is the walk's: the
 * AVX-512 twin compares 64 bytes an instruction into a mask, the AVX2 twin
 * 32, the portable one 16 (SSE2). The counts are the same in every one;
 * tests/test-isa.c checks it.
 */
#include "lowbytes.h"
#include "simd.h"

#ifdef SIMLSH__HAVE_X86
#include <immintrin.h>
#endif

uint32_t simlsh__low_pass_scalar(const uint8_t *v, const uint8_t *const *rows, uint32_t g,
                                 uint32_t n, uint32_t need, uint32_t *out)
{
    uint32_t k = 0;
    for (uint32_t j = 0; j < g; j++) {
        out[k] = j;
        k += simlsh__count_equal8(v, rows[j], n) >= need;
    }
    return k;
}

#ifdef SIMLSH__HAVE_X86
SIMLSH__AVX2_POPCNT uint32_t simlsh__low_pass_avx2(const uint8_t *v, const uint8_t *const *rows,
                                                   uint32_t g, uint32_t n, uint32_t need,
                                                   uint32_t *out)
{
    uint32_t k = 0;
    for (uint32_t j = 0; j < g; j++) {
        const uint8_t *r = rows[j];
        uint32_t eq = 0, i = 0;
        for (; i + 32 <= n; i += 32) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(v + i));
            __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(r + i));
            eq += (uint32_t)__builtin_popcount(
                (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, y)));
        }
        for (; i < n; i++)
            eq += v[i] == r[i];
        out[k] = j;
        k += eq >= need;
    }
    return k;
}

SIMLSH__AVX512_POPCNT uint32_t simlsh__low_pass_avx512(const uint8_t *v, const uint8_t *const *rows,
                                                       uint32_t g, uint32_t n, uint32_t need,
                                                       uint32_t *out)
{
    uint32_t k = 0;
    if (n == 128) { /* the default num_perm: v in two registers for the block */
        __m512i v0 = _mm512_loadu_si512((const void *)v);
        __m512i v1 = _mm512_loadu_si512((const void *)(v + 64));
        for (uint32_t j = 0; j < g; j++) {
            __mmask64 m0 = _mm512_cmpeq_epi8_mask(v0, _mm512_loadu_si512((const void *)rows[j]));
            __mmask64 m1 =
                _mm512_cmpeq_epi8_mask(v1, _mm512_loadu_si512((const void *)(rows[j] + 64)));
            out[k] = j;
            k += (uint32_t)(__builtin_popcountll(m0) + __builtin_popcountll(m1)) >= need;
        }
        return k;
    }
    for (uint32_t j = 0; j < g; j++) {
        const uint8_t *r = rows[j];
        uint32_t eq = 0, i = 0;
        for (; i < n; i += 64) {
            /* the last block masked: no byte past either row is read */
            __mmask64 in = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
            __m512i x = _mm512_maskz_loadu_epi8(in, v + i);
            __m512i y = _mm512_maskz_loadu_epi8(in, r + i);
            eq += (uint32_t)__builtin_popcountll(_mm512_mask_cmpeq_epi8_mask(in, x, y));
        }
        out[k] = j;
        k += eq >= need;
    }
    return k;
}
#endif
