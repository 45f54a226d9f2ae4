/* MurmurHash3 x86_32 and x64_128 (murmur3.c), their finalisers, and the
 * windowed x86_32 of the shingler's hot loop (murmur3_simd.c). Util layer. */
#ifndef SIMLSH_MURMUR3_H
#define SIMLSH_MURMUR3_H

#include <stddef.h>
#include <stdint.h>

uint32_t simlsh__murmur3_32(const void *data, size_t len, uint32_t seed);
void simlsh__murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2]);

/* The finalisers of x86_32 and x64_128; OPH and the band key reuse them as
 * cheap bijective mixers. The SIMD twins of fmix32 (murmur3_simd.c,
 * minhash_simd.c) use the same two multipliers. */
#define SIMLSH__FMIX32_M1 0x85ebca6bu
#define SIMLSH__FMIX32_M2 0xc2b2ae35u

static inline uint32_t simlsh__fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= SIMLSH__FMIX32_M1;
    h ^= h >> 13;
    h *= SIMLSH__FMIX32_M2;
    h ^= h >> 16;
    return h;
}

static inline uint64_t simlsh__fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* out[i] = murmur3_32(buf + i, k, seed) for i < n. buf must be readable up
 * to buf + n + k + SIMLSH__PAD (the padding bytes' values do not matter).
 * One kernel per ISA (murmur3_simd.c), reached through cpu.h's table; the
 * AVX ones exist on x86-64 builds only. */
#define SIMLSH__PAD 64
void simlsh__murmur3_windows_scalar(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                    uint32_t seed);
void simlsh__murmur3_windows_avx2(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                  uint32_t seed);
void simlsh__murmur3_windows_avx512(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                    uint32_t seed);

#endif
