/* The target attributes of the SIMD twins: compiled into any x86-64 build,
 * run only where the CPU has the instructions (cpu.h's table chooses).
 * Util layer, header only: kernel files include this, not cpu.h, so the
 * table may name the kernels without the kernels depending back on it. */
#ifndef SIMLSH_SIMD_H
#define SIMLSH_SIMD_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIMLSH__HAVE_X86 1
#define SIMLSH__AVX2 __attribute__((target("avx2")))
#define SIMLSH__AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define SIMLSH__POPCNT __attribute__((target("popcnt")))
/* (every CPU with AVX2 or AVX-512 has POPCNT) */
#define SIMLSH__AVX2_POPCNT __attribute__((target("avx2,popcnt")))
#define SIMLSH__AVX512_POPCNT __attribute__((target("avx512f,avx512bw,popcnt")))
#endif

#endif
