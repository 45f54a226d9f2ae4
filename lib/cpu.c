/* Run-time CPU feature detection for the SIMD paths. */
#include "simlsh.h"
#include "cpu.h"

static int detect(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return SIMLSH_ISA_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return SIMLSH_ISA_AVX2;
#endif
    return SIMLSH_ISA_SCALAR;
}

int simlsh__cpu_best_isa(void)
{
    /* Benign race: every thread computes the same value. */
    static volatile int cached = -1;
    int v = cached;
    if (v < 0) {
        v = detect();
        cached = v;
    }
    return v;
}

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
