/*
 * The MinHash kernels: the portable versions and their AVX2 and AVX-512
 * twins, reached through cpu.h's table. Integer arithmetic only, so every
 * path gives the scalar bits exactly (tests/test-isa.c checks it). The twins
 * are compiled with target attributes and chosen at run time, so the
 * library still runs on any x86-64.
 */
#include "simd.h"
#include "minhash_simd.h"

#ifdef SIMLSH__HAVE_X86
#include <immintrin.h>
#endif

void simlsh__oph_values_scalar(uint32_t *v, const uint32_t *x, size_t n, uint32_t s)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t h = simlsh__fmix32(x[i] ^ s);
        v[i] = h - (h == SIMLSH__EMPTY_VALUE);
    }
}

void simlsh__classic_update_scalar(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                   uint32_t num_perm, const uint64_t *x, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t xj = x[j];
        for (uint32_t i = 0; i < num_perm; i++) {
            uint32_t v = (uint32_t)((a[i] * xj + b[i]) >> 32);
            v -= v == SIMLSH__EMPTY_VALUE;
            mins[i] = v < mins[i] ? v : mins[i];
        }
    }
}

#ifdef SIMLSH__HAVE_X86

SIMLSH__AVX2 void simlsh__oph_values_avx2(uint32_t *v, const uint32_t *x, size_t n, uint32_t s)
{
    const __m256i vs = _mm256_set1_epi32((int)s);
    const __m256i c1 = _mm256_set1_epi32((int)SIMLSH__FMIX32_M1);
    const __m256i c2 = _mm256_set1_epi32((int)SIMLSH__FMIX32_M2);
    const __m256i cap = _mm256_set1_epi32((int)0xfffffffeu);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(x + i)), vs);
        h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
        h = _mm256_mullo_epi32(h, c1);
        h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
        h = _mm256_mullo_epi32(h, c2);
        h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
        h = _mm256_min_epu32(h, cap); /* 0xFFFFFFFF is the empty mark */
        _mm256_storeu_si256((__m256i *)(v + i), h);
    }
    simlsh__oph_values_scalar(v + i, x + i, n - i, s);
}

SIMLSH__AVX512 void simlsh__oph_values_avx512(uint32_t *v, const uint32_t *x, size_t n, uint32_t s)
{
    const __m512i vs = _mm512_set1_epi32((int)s);
    const __m512i c1 = _mm512_set1_epi32((int)SIMLSH__FMIX32_M1);
    const __m512i c2 = _mm512_set1_epi32((int)SIMLSH__FMIX32_M2);
    const __m512i cap = _mm512_set1_epi32((int)0xfffffffeu);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i h = _mm512_xor_si512(_mm512_loadu_si512(x + i), vs);
        h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
        h = _mm512_mullo_epi32(h, c1);
        h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
        h = _mm512_mullo_epi32(h, c2);
        h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
        h = _mm512_min_epu32(h, cap); /* 0xFFFFFFFF is the empty mark */
        _mm512_storeu_si512(v + i, h);
    }
    simlsh__oph_values_scalar(v + i, x + i, n - i, s);
}

/* 64x64 -> low 64 multiply of 4 lanes from 32-bit products (AVX2 has no
 * 64-bit mullo): lo*lo + ((hi_a*lo_x + lo_a*hi_x) << 32). */
SIMLSH__AVX2 static inline __m256i mul64_avx2(__m256i a, __m256i x)
{
    __m256i lolo = _mm256_mul_epu32(a, x);
    __m256i ahi = _mm256_srli_epi64(a, 32);
    __m256i xhi = _mm256_srli_epi64(x, 32);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(ahi, x), _mm256_mul_epu32(a, xhi));
    return _mm256_add_epi64(lolo, _mm256_slli_epi64(cross, 32));
}

/* 32-bit inputs, as classic_x32_avx512 below: two 32x32->64 multiplies per
 * row instead of the three a 64-bit product costs on AVX2. Values sit in the
 * low halves of 64-bit lanes with zero high halves, so a 32-bit unsigned min
 * over the vector is the per-row min; the clamp is applied once at the end. */
SIMLSH__AVX2 static void classic_x32_avx2(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                          uint32_t num_perm, const uint64_t *x, size_t n)
{
    const __m256i low = _mm256_set1_epi64x(0xffffffffLL);
    const __m256i perm = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
    uint32_t i = 0;
    for (; i + 8 <= num_perm; i += 8) { /* 8 rows: 16 ymm registers, no spills */
        __m256i al[2], ah[2], bb[2], m[2];
        for (int q = 0; q < 2; q++) {
            al[q] = _mm256_loadu_si256((const __m256i *)(a + i + 4 * q));
            ah[q] = _mm256_srli_epi64(al[q], 32);
            bb[q] = _mm256_loadu_si256((const __m256i *)(b + i + 4 * q));
            m[q] = _mm256_cvtepu32_epi64(_mm_loadu_si128((const __m128i *)(mins + i + 4 * q)));
        }
        for (size_t j = 0; j < n; j++) {
            __m256i xv = _mm256_set1_epi64x((long long)x[j]);
            for (int q = 0; q < 2; q++) {
                __m256i t = _mm256_add_epi64(_mm256_mul_epu32(al[q], xv), bb[q]);
                __m256i v = _mm256_add_epi64(_mm256_srli_epi64(t, 32), _mm256_mul_epu32(ah[q], xv));
                m[q] = _mm256_min_epu32(m[q], _mm256_and_si256(v, low));
            }
        }
        for (int q = 0; q < 2; q++) {
            __m128i r = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(m[q], perm));
            r = _mm_min_epu32(r, _mm_set1_epi32((int)0xfffffffeu));
            _mm_storeu_si128((__m128i *)(mins + i + 4 * q), r);
        }
    }
    if (i < num_perm)
        simlsh__classic_update_scalar(mins + i, a + i, b + i, num_perm - i, x, n);
}

SIMLSH__AVX2 void simlsh__classic_update_avx2(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                              uint32_t num_perm, const uint64_t *x, size_t n)
{
    uint64_t any_high = 0;
    for (size_t j = 0; j < n; j++)
        any_high |= x[j] >> 32;
    if (any_high == 0 && num_perm >= 8) {
        classic_x32_avx2(mins, a, b, num_perm, x, n);
        return;
    }
    const __m256i all = _mm256_set1_epi32(-1);
    const __m256i one = _mm256_set1_epi32(1);
    /* gather the high halves of lanes 0..7 of two 4x64 vectors into 8x32 */
    const __m256i perm = _mm256_setr_epi32(1, 3, 5, 7, 0, 0, 0, 0);
    uint32_t i = 0;
    for (; i + 8 <= num_perm; i += 8) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i a1 = _mm256_loadu_si256((const __m256i *)(a + i + 4));
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + i + 4));
        __m256i m = _mm256_loadu_si256((const __m256i *)(mins + i));
        for (size_t j = 0; j < n; j++) {
            __m256i xv = _mm256_set1_epi64x((long long)x[j]);
            __m256i t0 = _mm256_add_epi64(mul64_avx2(a0, xv), b0);
            __m256i t1 = _mm256_add_epi64(mul64_avx2(a1, xv), b1);
            __m128i h0 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(t0, perm));
            __m128i h1 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(t1, perm));
            __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1);
            /* clamp 0xFFFFFFFF -> 0xFFFFFFFE */
            h = _mm256_sub_epi32(h, _mm256_and_si256(_mm256_cmpeq_epi32(h, all), one));
            m = _mm256_min_epu32(m, h);
        }
        _mm256_storeu_si256((__m256i *)(mins + i), m);
    }
    if (i < num_perm) {
        /* the remaining rows, one x at a time */
        simlsh__classic_update_scalar(mins + i, a + i, b + i, num_perm - i, x, n);
    }
}

/* 32-bit inputs (every 32-bit shingle hash): with x < 2^32,
 * hi32(a*x + b mod 2^64) = hi32(lo(a)*x + b) + lo32(hi(a)*x) mod 2^32, which
 * needs two 32x32->64 multiplies instead of a 64-bit mullo (3 uops on one
 * port). Rows keep 64-bit lanes holding 32-bit values, and the clamp to
 * 0xFFFFFFFE is applied once at the end: min commutes with it. */
SIMLSH__AVX512 static void classic_x32_avx512(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                              uint32_t num_perm, const uint64_t *x, size_t n)
{
    const __m512i low = _mm512_set1_epi64(0xffffffffLL);
    const __m256i cap = _mm256_set1_epi32((int)0xfffffffeu);
    uint32_t i = 0;
    for (; i + 32 <= num_perm; i += 32) {
        __m512i al[4], ah[4], bb[4], m[4];
        for (int q = 0; q < 4; q++) {
            __m512i av = _mm512_loadu_si512(a + i + 8 * q);
            al[q] = av;
            ah[q] = _mm512_srli_epi64(av, 32);
            bb[q] = _mm512_loadu_si512(b + i + 8 * q);
            m[q] = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(mins + i + 8 * q)));
        }
        for (size_t j = 0; j < n; j++) {
            __m512i xv = _mm512_set1_epi64((long long)x[j]);
            for (int q = 0; q < 4; q++) {
                __m512i t = _mm512_add_epi64(_mm512_mul_epu32(al[q], xv), bb[q]);
                __m512i v = _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_mul_epu32(ah[q], xv));
                m[q] = _mm512_min_epu64(m[q], _mm512_and_si512(v, low));
            }
        }
        for (int q = 0; q < 4; q++)
            _mm256_storeu_si256((__m256i *)(mins + i + 8 * q),
                                _mm256_min_epu32(_mm512_cvtepi64_epi32(m[q]), cap));
    }
    if (i < num_perm)
        simlsh__classic_update_avx2(mins + i, a + i, b + i, num_perm - i, x, n);
}

SIMLSH__AVX512 void simlsh__classic_update_avx512(uint32_t *mins, const uint64_t *a,
                                                  const uint64_t *b, uint32_t num_perm,
                                                  const uint64_t *x, size_t n)
{
    uint64_t any_high = 0;
    for (size_t j = 0; j < n; j++)
        any_high |= x[j] >> 32;
    if (any_high == 0) {
        classic_x32_avx512(mins, a, b, num_perm, x, n);
        return;
    }
    const __m256i all = _mm256_set1_epi32(-1);
    uint32_t i = 0;
    /* 32 rows per pass: four independent multiply chains hide the latency */
    for (; i + 32 <= num_perm; i += 32) {
        __m512i a0 = _mm512_loadu_si512(a + i), a1 = _mm512_loadu_si512(a + i + 8);
        __m512i a2 = _mm512_loadu_si512(a + i + 16), a3 = _mm512_loadu_si512(a + i + 24);
        __m512i b0 = _mm512_loadu_si512(b + i), b1 = _mm512_loadu_si512(b + i + 8);
        __m512i b2 = _mm512_loadu_si512(b + i + 16), b3 = _mm512_loadu_si512(b + i + 24);
        __m256i m0 = _mm256_loadu_si256((const __m256i *)(mins + i));
        __m256i m1 = _mm256_loadu_si256((const __m256i *)(mins + i + 8));
        __m256i m2 = _mm256_loadu_si256((const __m256i *)(mins + i + 16));
        __m256i m3 = _mm256_loadu_si256((const __m256i *)(mins + i + 24));
        for (size_t j = 0; j < n; j++) {
            __m512i xv = _mm512_set1_epi64((long long)x[j]);
            __m256i h0 = _mm512_cvtepi64_epi32(
                _mm512_srli_epi64(_mm512_add_epi64(_mm512_mullo_epi64(a0, xv), b0), 32));
            __m256i h1 = _mm512_cvtepi64_epi32(
                _mm512_srli_epi64(_mm512_add_epi64(_mm512_mullo_epi64(a1, xv), b1), 32));
            __m256i h2 = _mm512_cvtepi64_epi32(
                _mm512_srli_epi64(_mm512_add_epi64(_mm512_mullo_epi64(a2, xv), b2), 32));
            __m256i h3 = _mm512_cvtepi64_epi32(
                _mm512_srli_epi64(_mm512_add_epi64(_mm512_mullo_epi64(a3, xv), b3), 32));
            /* clamp: min with 0xFFFFFFFE is the same as mapping ~0 to ~0-1 */
            const __m256i cap = _mm256_add_epi32(all, all); /* 0xFFFFFFFE */
            m0 = _mm256_min_epu32(m0, _mm256_min_epu32(h0, cap));
            m1 = _mm256_min_epu32(m1, _mm256_min_epu32(h1, cap));
            m2 = _mm256_min_epu32(m2, _mm256_min_epu32(h2, cap));
            m3 = _mm256_min_epu32(m3, _mm256_min_epu32(h3, cap));
        }
        _mm256_storeu_si256((__m256i *)(mins + i), m0);
        _mm256_storeu_si256((__m256i *)(mins + i + 8), m1);
        _mm256_storeu_si256((__m256i *)(mins + i + 16), m2);
        _mm256_storeu_si256((__m256i *)(mins + i + 24), m3);
    }
    if (i < num_perm)
        simlsh__classic_update_avx2(mins + i, a + i, b + i, num_perm - i, x, n);
}

#endif /* SIMLSH__HAVE_X86 */
