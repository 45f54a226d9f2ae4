/* Run-time CPU feature detection and the kernel table (cpu.h). */
#ifndef __STDC_NO_ATOMICS__
#include <stdatomic.h>
#endif

#include "simlsh.h"
#include "cpu.h"
#include "minhash_simd.h"
#include "murmur3.h"
#include "lowbytes.h"
#include "sketch.h"

static int detect(void)
{
#ifdef SIMLSH__HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return SIMLSH_ISA_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return SIMLSH_ISA_AVX2;
#endif
    return SIMLSH_ISA_SCALAR;
}

/* Threads may race to fill the cache on first use: each computes the same
 * value, and a relaxed atomic makes that race defined behaviour (a plain
 * int is a data race, which TSan reports). Relaxed is enough because the
 * value carries no other memory with it. */
#ifndef __STDC_NO_ATOMICS__
int simlsh__cpu_best_isa(void)
{
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}
#else
int simlsh__cpu_best_isa(void)
{
    return detect(); /* no atomics: no cache; callers resolve once per object */
}
#endif

int simlsh_isa_supported(int isa)
{
    switch (isa) {
    case SIMLSH_ISA_AUTO:
    case SIMLSH_ISA_SCALAR:
        return 1;
    case SIMLSH_ISA_AVX2:
        return simlsh__cpu_best_isa() >= SIMLSH_ISA_AVX2;
    case SIMLSH_ISA_AVX512:
        return simlsh__cpu_best_isa() >= SIMLSH_ISA_AVX512;
    default:
        return 0;
    }
}

int simlsh__isa_resolve(int isa)
{
    if (isa == SIMLSH_ISA_AUTO || !simlsh_isa_supported(isa))
        return simlsh__cpu_best_isa();
    return isa;
}

/* One row per ISA, in the style of xxHash's dispatch table. Rows this build
 * has no kernels for stay zero: simlsh__isa_resolve never returns them.
 * Every CPU with AVX2 has POPCNT, so the AVX rows take its sketch pass. */
static const struct simlsh__kernels kernels[SIMLSH_ISA_AVX512 + 1] = {
    [SIMLSH_ISA_SCALAR] = {SIMLSH_ISA_SCALAR, simlsh__murmur3_windows_scalar,
                           simlsh__oph_values_scalar, simlsh__classic_update_scalar,
                           simlsh__sketch_pass_scalar, simlsh__low_pass_scalar},
#ifdef SIMLSH__HAVE_X86
    [SIMLSH_ISA_AVX2] = {SIMLSH_ISA_AVX2, simlsh__murmur3_windows_avx2, simlsh__oph_values_avx2,
                         simlsh__classic_update_avx2, simlsh__sketch_pass_popcnt,
                         simlsh__low_pass_avx2},
    [SIMLSH_ISA_AVX512] = {SIMLSH_ISA_AVX512, simlsh__murmur3_windows_avx512,
                           simlsh__oph_values_avx512, simlsh__classic_update_avx512,
                           simlsh__sketch_pass_popcnt, simlsh__low_pass_avx512},
#endif
};

const struct simlsh__kernels *simlsh__kernels_for(int isa)
{
    return &kernels[simlsh__isa_resolve(isa)];
}

void simlsh__murmur3_32_windows(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                uint32_t seed, int isa)
{
    simlsh__kernels_for(isa)->murmur3_windows(out, buf, n, k, seed);
}
