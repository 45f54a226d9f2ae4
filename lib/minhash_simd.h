/* MinHash kernels: one portable version and SIMD twins with identical bits
 * (minhash_simd.c), reached through cpu.h's table. They work on plain
 * arrays and know nothing of signatures (that is minhash.c). The AVX ones
 * exist on x86-64 builds only. */
#ifndef SIMLSH_MINHASH_SIMD_H
#define SIMLSH_MINHASH_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "murmur3.h"

#define SIMLSH__EMPTY_VALUE 0xFFFFFFFFu

/* OPH: v[i] = fmix32(x[i] ^ s), with 0xFFFFFFFF (the empty mark) clamped to 0xFFFFFFFE. */
void simlsh__oph_values_scalar(uint32_t *v, const uint32_t *x, size_t n, uint32_t s);
void simlsh__oph_values_avx2(uint32_t *v, const uint32_t *x, size_t n, uint32_t s);
void simlsh__oph_values_avx512(uint32_t *v, const uint32_t *x, size_t n, uint32_t s);

/* Classic: mins[i] = min(mins[i], clamp(hi32(a[i] * x[j] + b[i]))) over j.
 * a, b: num_perm 64-bit coefficients. */
void simlsh__classic_update_scalar(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                   uint32_t num_perm, const uint64_t *x, size_t n);
void simlsh__classic_update_avx2(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                 uint32_t num_perm, const uint64_t *x, size_t n);
void simlsh__classic_update_avx512(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                   uint32_t num_perm, const uint64_t *x, size_t n);

/* Fold a 64-bit feature to the 32 bits OPH permutes; identity below 2^32 so
 * zero-extended 32-bit shingle hashes and the same values as features agree. */
static inline uint32_t simlsh__fold64(uint64_t x)
{
    return (uint32_t)x ^ (uint32_t)simlsh__fmix64(x >> 32);
}

#endif
