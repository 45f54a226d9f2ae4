/* The band key, shared by the index, simlsh__band_key() (lsh.c) and
 * simlsh_signature_band_keys() (signature.c). A header of its own so that
 * the banding math does not include the index. */
#ifndef SIMLSH_BANDKEY_H
#define SIMLSH_BANDKEY_H

#include <stdint.h>

#include "murmur3.h"

/* docs/format-index.md, "Band key". Inline so that the index's
 * per-document loop over bands can overlap the bands' multiply chains;
 * simlsh__band_key() in lsh.c is this function. Each step is a bijection
 * of the state for a fixed word and of the word for a fixed state, so two
 * bands that differ in exactly one 64-bit word never collide; fmix64 then
 * spreads every input bit over the key. */
#define SIMLSH__BK_K1 0x9E3779B97F4A7C15ULL
#define SIMLSH__BK_K2 0xC2B2AE3D27D4EB4FULL
#define SIMLSH__BK_K3 0x165667B19E3779F9ULL

static inline uint64_t simlsh__bk_step(uint64_t h, uint64_t w)
{
    h ^= w * SIMLSH__BK_K2;
    h = (h << 31) | (h >> 33);
    return h * SIMLSH__BK_K3;
}

static inline uint64_t simlsh__band_key_inline(const uint32_t *values, uint32_t rows, uint32_t band,
                                               uint32_t seed)
{
    uint64_t h = ((((uint64_t)seed) << 32) | band) * SIMLSH__BK_K1 ^ (uint64_t)rows;
    uint32_t i = 0;
    for (; i + 2 <= rows; i += 2)
        h = simlsh__bk_step(h, (uint64_t)values[i] | ((uint64_t)values[i + 1] << 32));
    if (i < rows)
        h = simlsh__bk_step(h, (uint64_t)values[i]);
    return simlsh__fmix64(h);
}

/* The same key, out of line (lsh.c), for callers off the hot path. */
uint64_t simlsh__band_key(const uint32_t *values, uint32_t rows, uint32_t band, uint32_t seed);

#endif
