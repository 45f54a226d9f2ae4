/* The low-bytes kernels of the dedup walk (lowbytes.c), reached through
 * cpu.h's table: one document's row of low bytes (the lowest byte of each
 * signature value, index/mates.h) against a block of rows, portable (SSE2
 * on x86-64) or with AVX2 or AVX-512 twins, all with identical counts.
 * Two signatures agree on at most as many values as on these bytes, so a
 * row that agrees with fewer than need is not a mate. */
#ifndef SIMLSH_LOWBYTES_H
#define SIMLSH_LOWBYTES_H

#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Equal bytes of a and b (n each). With SSE2 (every x86-64), 16 at a
 * time into byte counters, summed every 255 rounds: the compiler's own
 * widening of the plain loop to 32-bit counters took 4 times the
 * instructions, on the engine's hottest loop. */
static inline uint32_t simlsh__count_equal8(const uint8_t *a, const uint8_t *b, uint32_t n)
{
    uint32_t eq = 0, i = 0;
#if defined(__SSE2__)
    __m128i sum = _mm_setzero_si128();
    while (n - i >= 16) {
        uint32_t rounds = (n - i) / 16 > 255 ? 255 : (n - i) / 16;
        __m128i acc = _mm_setzero_si128();
        for (uint32_t k = 0; k < rounds; k++, i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
            __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(x, y));
        }
        sum = _mm_add_epi64(sum, _mm_sad_epu8(acc, _mm_setzero_si128()));
    }
    eq = (uint32_t)_mm_cvtsi128_si32(sum) +
         (uint32_t)_mm_cvtsi128_si32(_mm_unpackhi_epi64(sum, sum));
#endif
    for (; i < n; i++)
        eq += a[i] == b[i];
    return eq;
}

/* The indices j < g whose row rows[j] (n bytes) has need or more bytes
 * equal to v's, into out (room for g), in order; their number. */
uint32_t simlsh__low_pass_scalar(const uint8_t *v, const uint8_t *const *rows, uint32_t g,
                                 uint32_t n, uint32_t need, uint32_t *out);
uint32_t simlsh__low_pass_avx2(const uint8_t *v, const uint8_t *const *rows, uint32_t g, uint32_t n,
                               uint32_t need, uint32_t *out);
uint32_t simlsh__low_pass_avx512(const uint8_t *v, const uint8_t *const *rows, uint32_t g,
                                 uint32_t n, uint32_t need, uint32_t *out);

#endif
