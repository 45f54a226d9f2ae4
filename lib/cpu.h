/*
 * Run-time CPU detection and the kernel table (cpu.c). Util layer.
 *
 * Every hot loop with SIMD twins is reached through one table row per
 * instruction set, resolved once when an object is created (shingler,
 * signature, index), so the choice is made in one place and the kernels' files
 * never call each other across ISAs. Bits never depend on the row.
 */
#ifndef SIMLSH_CPU_H
#define SIMLSH_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "simd.h"

/* Best ISA of this CPU (SIMLSH_ISA_SCALAR/AVX2/AVX512). Detected once. */
int simlsh__cpu_best_isa(void);
/* Map a params ISA (AUTO allowed) to a runnable one. */
int simlsh__isa_resolve(int isa);

/* murmur3.h: out[i] = murmur3_32(buf + i, k, seed) for i < n (padded buf) */
typedef void (*simlsh__windows_fn)(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                   uint32_t seed);
/* minhash_simd.h: OPH values and classic row updates */
typedef void (*simlsh__oph_fn)(uint32_t *v, const uint32_t *x, size_t n, uint32_t s);
typedef void (*simlsh__classic_fn)(uint32_t *mins, const uint64_t *a, const uint64_t *b,
                                   uint32_t num_perm, const uint64_t *x, size_t n);
/* sketch.h: the pair sweep's sketch of one document against a block */
typedef uint32_t (*simlsh__sketch_pass_fn)(const uint64_t *su, const uint64_t *sv, uint32_t nv,
                                           uint32_t words, uint32_t need, uint32_t *out);

/* lowbytes.h: one row of low bytes against a block of rows */
typedef uint32_t (*simlsh__low_pass_fn)(const uint8_t *v, const uint8_t *const *rows, uint32_t g,
                                        uint32_t n, uint32_t need, uint32_t *out);

struct simlsh__kernels {
    int isa; /* the resolved SIMLSH_ISA_* of this row */
    simlsh__windows_fn murmur3_windows;
    simlsh__oph_fn oph_values;
    simlsh__classic_fn classic_update;
    simlsh__sketch_pass_fn sketch_pass;
    simlsh__low_pass_fn low_pass;
};

/* The row for params ISA isa (AUTO or one this CPU lacks resolve as
 * simlsh__isa_resolve does). Never NULL. */
const struct simlsh__kernels *simlsh__kernels_for(int isa);

/* The windows kernel of ISA isa, for callers that hold an ISA number, not
 * a table row (the tests). */
void simlsh__murmur3_32_windows(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                uint32_t seed, int isa);

#endif
