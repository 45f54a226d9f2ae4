/*
 * MurmurHash3 x86_32 of every k-byte window of a buffer: the shingler's hot
 * loop, one hash per input byte. Every path computes exactly
 * simlsh__murmur3_32(buf + i, k, seed); the ISA is not part of the contract.
 *
 * The SIMD paths hash consecutive windows in parallel lanes. Lane l needs,
 * for block j, the little-endian word at buf + i + l + 4j; neighbouring lanes'
 * words overlap by three bytes, so they are cut out of one short load with
 * in-lane byte shuffles rather than gathered. The tail word (k % 4 bytes) is
 * the same shuffle with the bytes past the tail zeroed. Every load stays
 * below buf + n + k + SIMLSH__PAD, which is what lets the last, partial
 * vector run at full width and only mask its store.
 *
 * The vector paths are bound by vpmulld (two uops each, six per vector at
 * k = 5), so the rest of the round is kept off the multiplier: h * 5 is a
 * shift and an add.
 */
#include <string.h>

#include "simd.h"
#include "le.h"
#include "murmur3.h"

#ifdef SIMLSH__HAVE_X86
#include <immintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
/* Constant k has to reach the loops for them to unroll and fold the tail
 * logic away; forced inlining specialises without duplicating the source. */
#define SIMLSH__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SIMLSH__ALWAYS_INLINE inline
#endif

/* Specialise the common shingle sizes (k = 5 is the default); larger k take
 * the generic loop, where the per-window work dwarfs the loop overhead. */
#define SIMLSH__K_CASES(fn, out, buf, n, seed) \
    case 1:                                    \
        fn(out, buf, n, 1, seed);              \
        break;                                 \
    case 2:                                    \
        fn(out, buf, n, 2, seed);              \
        break;                                 \
    case 3:                                    \
        fn(out, buf, n, 3, seed);              \
        break;                                 \
    case 4:                                    \
        fn(out, buf, n, 4, seed);              \
        break;                                 \
    case 5:                                    \
        fn(out, buf, n, 5, seed);              \
        break;                                 \
    case 6:                                    \
        fn(out, buf, n, 6, seed);              \
        break;                                 \
    case 7:                                    \
        fn(out, buf, n, 7, seed);              \
        break;                                 \
    case 8:                                    \
        fn(out, buf, n, 8, seed);              \
        break;                                 \
    case 9:                                    \
        fn(out, buf, n, 9, seed);              \
        break;                                 \
    case 10:                                   \
        fn(out, buf, n, 10, seed);             \
        break;                                 \
    case 11:                                   \
        fn(out, buf, n, 11, seed);             \
        break;                                 \
    case 12:                                   \
        fn(out, buf, n, 12, seed);             \
        break;                                 \
    case 13:                                   \
        fn(out, buf, n, 13, seed);             \
        break;                                 \
    case 14:                                   \
        fn(out, buf, n, 14, seed);             \
        break;                                 \
    case 15:                                   \
        fn(out, buf, n, 15, seed);             \
        break;                                 \
    case 16:                                   \
        fn(out, buf, n, 16, seed);             \
        break

#define MM_C1 0xcc9e2d51u
#define MM_C2 0x1b873593u
#define MM_N 0xe6546b64u

/* Mask of the low r bytes of a word, for a tail of r = k % 4 bytes. */
static inline uint32_t tail_mask(size_t r)
{
    return r ? 0xffffffffu >> (32 - 8 * r) : 0;
}

/* ---- scalar --------------------------------------------------------------- */

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static inline uint32_t mix_k(uint32_t k)
{
    k *= MM_C1;
    k = rotl32(k, 15);
    return k * MM_C2;
}

static SIMLSH__ALWAYS_INLINE void scalar_windows(uint32_t *out, const uint8_t *buf, size_t n,
                                                 size_t k, uint32_t seed)
{
    const size_t nb = k / 4, r = k & 3;
    const uint32_t tmask = tail_mask(r);
    /* A one-byte tail (k = 5, and every k = 4m + 1) has only 256 possible
     * mixed values: a table turns two of the six multiplies of a k = 5
     * window into one load, once there are enough windows to pay for it. */
    uint32_t table[256];
    const int use_table = r == 1 && n >= 256;
    if (use_table)
        for (uint32_t b = 0; b < 256; b++)
            table[b] = mix_k(b);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = buf + i;
        uint32_t h = seed;
        for (size_t j = 0; j < nb; j++) {
            h ^= mix_k(simlsh__rd32(p + 4 * j));
            h = rotl32(h, 13);
            h = h * 5 + MM_N;
        }
        /* One masked word read instead of the reference's byte-by-byte
         * switch: the padding makes reading past the window legal. */
        if (use_table)
            h ^= table[p[4 * nb]];
        else if (r)
            h ^= mix_k(simlsh__rd32(p + 4 * nb) & tmask);
        out[i] = simlsh__fmix32(h ^ (uint32_t)k);
    }
}

void simlsh__murmur3_windows_scalar(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                    uint32_t seed)
{
    if (n == 0)
        return;
    switch (k) {
        SIMLSH__K_CASES(scalar_windows, out, buf, n, seed);
    default:
        scalar_windows(out, buf, n, k, seed);
        break;
    }
}

#ifdef SIMLSH__HAVE_X86

/* ---- AVX2: 8 windows per vector ------------------------------------------ */

/* Byte b of the word of window 4g + q (128-bit lane g, dword q) is byte
 * 4g + q + b of a 16-byte load broadcast to both lanes. */
static const uint8_t avx2_pattern[32] = {
    0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10,
};

struct avx2_ctx {
    __m256i pat, tpat, seed, len, n;
};

static SIMLSH__AVX2 SIMLSH__ALWAYS_INLINE __m256i avx2_words(const uint8_t *p, __m256i pat)
{
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_shuffle_epi8(v, pat);
}

static SIMLSH__AVX2 SIMLSH__ALWAYS_INLINE __m256i avx2_rotl(__m256i x, int r)
{
    return _mm256_or_si256(_mm256_slli_epi32(x, r), _mm256_srli_epi32(x, 32 - r));
}

static SIMLSH__AVX2 SIMLSH__ALWAYS_INLINE __m256i avx2_mix_k(__m256i k)
{
    k = _mm256_mullo_epi32(k, _mm256_set1_epi32((int)MM_C1));
    k = avx2_rotl(k, 15);
    return _mm256_mullo_epi32(k, _mm256_set1_epi32((int)MM_C2));
}

static SIMLSH__AVX2 SIMLSH__ALWAYS_INLINE __m256i avx2_hash8(const struct avx2_ctx *c,
                                                             const uint8_t *p, size_t k)
{
    const size_t nb = k / 4, r = k & 3;
    __m256i h = c->seed;
    for (size_t j = 0; j < nb; j++) {
        h = _mm256_xor_si256(h, avx2_mix_k(avx2_words(p + 4 * j, c->pat)));
        h = avx2_rotl(h, 13);
        h = _mm256_add_epi32(_mm256_add_epi32(h, _mm256_slli_epi32(h, 2)), c->n);
    }
    if (r)
        h = _mm256_xor_si256(h, avx2_mix_k(avx2_words(p + 4 * nb, c->tpat)));
    h = _mm256_xor_si256(h, c->len);
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)SIMLSH__FMIX32_M1));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)SIMLSH__FMIX32_M2));
    return _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
}

static SIMLSH__AVX2 SIMLSH__ALWAYS_INLINE void avx2_windows(uint32_t *out, const uint8_t *buf,
                                                            size_t n, size_t k, uint32_t seed)
{
    struct avx2_ctx c;
    c.pat = _mm256_loadu_si256((const __m256i *)(const void *)avx2_pattern);
    /* A pattern byte with its high bit set makes vpshufb write a zero. */
    c.tpat = _mm256_or_si256(c.pat, _mm256_set1_epi32((int)(0x80808080u & ~tail_mask(k & 3))));
    c.seed = _mm256_set1_epi32((int)seed);
    c.len = _mm256_set1_epi32((int)k);
    c.n = _mm256_set1_epi32((int)MM_N);
    size_t i = 0;
    /* Two independent vectors per iteration give the out-of-order core more
     * to overlap with the long multiply chains. */
    for (; i + 16 <= n; i += 16) {
        __m256i h0 = avx2_hash8(&c, buf + i, k);
        __m256i h1 = avx2_hash8(&c, buf + i + 8, k);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), h0);
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 8), h1);
    }
    for (; i < n; i += 8) {
        __m256i h = avx2_hash8(&c, buf + i, k);
        if (n - i >= 8) {
            _mm256_storeu_si256((__m256i *)(void *)(out + i), h);
        } else {
            uint32_t tmp[8];
            _mm256_storeu_si256((__m256i *)(void *)tmp, h);
            memcpy(out + i, tmp, (n - i) * sizeof *out);
        }
    }
}

SIMLSH__AVX2 void simlsh__murmur3_windows_avx2(uint32_t *out, const uint8_t *buf, size_t n,
                                               size_t k, uint32_t seed)
{
    if (n == 0)
        return;
    switch (k) {
        SIMLSH__K_CASES(avx2_windows, out, buf, n, seed);
    default:
        avx2_windows(out, buf, n, k, seed);
        break;
    }
}

/* ---- AVX-512: 16 windows per vector -------------------------------------- */

/* 128-bit lane g covers windows 4g .. 4g + 3. vpshufb cannot cross lanes and
 * one 16-byte broadcast is too short for all 16 windows (19 bytes), so vpermd
 * first gives lane g dwords g .. g + 3 of a 32-byte load: enough for the
 * words of three consecutive blocks (bytes 4d + q + b, d < 3), or of two
 * blocks and the tail, from one load and one cross-lane permute. */
static const uint32_t avx512_index[16] = {0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6};
static const uint8_t avx512_pattern[64] = {
    0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,
    0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,
};

struct avx512_ctx {
    __m512i idx, pat0, pat1, pat2, tpat, seed, len, n;
};

static SIMLSH__AVX512 SIMLSH__ALWAYS_INLINE __m512i avx512_group(const uint8_t *p, __m512i idx)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_permutexvar_epi32(idx, _mm512_castsi256_si512(v));
}

static SIMLSH__AVX512 SIMLSH__ALWAYS_INLINE __m512i avx512_mix_k(__m512i k)
{
    k = _mm512_mullo_epi32(k, _mm512_set1_epi32((int)MM_C1));
    k = _mm512_rol_epi32(k, 15);
    return _mm512_mullo_epi32(k, _mm512_set1_epi32((int)MM_C2));
}

static SIMLSH__AVX512 SIMLSH__ALWAYS_INLINE __m512i avx512_round(const struct avx512_ctx *c,
                                                                 __m512i h, __m512i w)
{
    h = _mm512_xor_si512(h, avx512_mix_k(w));
    h = _mm512_rol_epi32(h, 13);
    return _mm512_add_epi32(_mm512_add_epi32(h, _mm512_slli_epi32(h, 2)), c->n);
}

static SIMLSH__AVX512 SIMLSH__ALWAYS_INLINE __m512i avx512_hash16(const struct avx512_ctx *c,
                                                                  const uint8_t *p, size_t k)
{
    const size_t nb = k / 4, r = k & 3;
    __m512i h = c->seed;
    size_t j = 0;
    for (; j + 3 <= nb; j += 3) {
        __m512i w = avx512_group(p + 4 * j, c->idx);
        h = avx512_round(c, h, _mm512_shuffle_epi8(w, c->pat0));
        h = avx512_round(c, h, _mm512_shuffle_epi8(w, c->pat1));
        h = avx512_round(c, h, _mm512_shuffle_epi8(w, c->pat2));
    }
    if (j < nb || r) {
        __m512i w = avx512_group(p + 4 * j, c->idx);
        if (j < nb)
            h = avx512_round(c, h, _mm512_shuffle_epi8(w, c->pat0));
        if (j + 1 < nb)
            h = avx512_round(c, h, _mm512_shuffle_epi8(w, c->pat1));
        if (r)
            h = _mm512_xor_si512(h, avx512_mix_k(_mm512_shuffle_epi8(w, c->tpat)));
    }
    /* h ^= len, then h ^= h >> 16, as one three-way xor: len < 2^16, so
     * the shift drops all of its bits. */
    h = _mm512_ternarylogic_epi32(h, c->len, _mm512_srli_epi32(h, 16), 0x96);
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32((int)SIMLSH__FMIX32_M1));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32((int)SIMLSH__FMIX32_M2));
    return _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
}

static SIMLSH__AVX512 SIMLSH__ALWAYS_INLINE void avx512_windows(uint32_t *out, const uint8_t *buf,
                                                                size_t n, size_t k, uint32_t seed)
{
    const size_t nb = k / 4;
    struct avx512_ctx c;
    c.idx = _mm512_loadu_si512((const void *)avx512_index);
    c.pat0 = _mm512_loadu_si512((const void *)avx512_pattern);
    c.pat1 = _mm512_add_epi8(c.pat0, _mm512_set1_epi8(4));
    c.pat2 = _mm512_add_epi8(c.pat0, _mm512_set1_epi8(8));
    /* The tail follows the nb % 3 whole blocks of the last group. */
    c.tpat = _mm512_or_si512(nb % 3 == 0   ? c.pat0
                             : nb % 3 == 1 ? c.pat1
                                           : c.pat2,
                             _mm512_set1_epi32((int)(0x80808080u & ~tail_mask(k & 3))));
    c.seed = _mm512_set1_epi32((int)seed);
    c.len = _mm512_set1_epi32((int)k);
    c.n = _mm512_set1_epi32((int)MM_N);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i h0 = avx512_hash16(&c, buf + i, k);
        __m512i h1 = avx512_hash16(&c, buf + i + 16, k);
        _mm512_storeu_si512((void *)(out + i), h0);
        _mm512_storeu_si512((void *)(out + i + 16), h1);
    }
    for (; i < n; i += 16) {
        __m512i h = avx512_hash16(&c, buf + i, k);
        if (n - i >= 16)
            _mm512_storeu_si512((void *)(out + i), h);
        else
            _mm512_mask_storeu_epi32((void *)(out + i), (__mmask16)((1u << (n - i)) - 1), h);
    }
}

SIMLSH__AVX512 void simlsh__murmur3_windows_avx512(uint32_t *out, const uint8_t *buf, size_t n,
                                                   size_t k, uint32_t seed)
{
    if (n == 0)
        return;
    switch (k) {
        SIMLSH__K_CASES(avx512_windows, out, buf, n, seed);
    default:
        avx512_windows(out, buf, n, k, seed);
        break;
    }
}

#endif /* SIMLSH__HAVE_X86 */
