/*
 * The sketch pass of the pair sweep: one sketch against a block of them,
 * in one tight loop, portable or with the POPCNT instruction (the same
 * counts either way; tests/test-isa.c checks it). The POPCNT twin is
 * compiled with a target attribute and chosen through cpu.h's table, so
 * the `isa` parameter can force the portable one.
 */
#include "simd.h"
#include "sketch.h"

/* Adds to n the indices v < nv whose sketch agrees with su in need fields
 * or more, writing them to out. POPCOUNT counts a word's set bits. */
#define SKETCH_PASS_LOOP(POPCOUNT)                                \
    do {                                                          \
        for (uint32_t v = 0; v < nv; v++) {                       \
            const uint64_t *q = sv + (size_t)v * words;           \
            uint64_t c = 0;                                       \
            for (uint32_t w = 0; w < words; w++)                  \
                c += POPCOUNT(simlsh__fields_agree(su[w], q[w])); \
            out[n] = v;                                           \
            n += c >= need;                                       \
        }                                                         \
    } while (0)

uint32_t simlsh__sketch_pass_scalar(const uint64_t *su, const uint64_t *sv, uint32_t nv,
                                    uint32_t words, uint32_t need, uint32_t *out)
{
    uint32_t n = 0;
    SKETCH_PASS_LOOP(simlsh__popcount64);
    return n;
}

#ifdef SIMLSH__HAVE_X86
#define POPCNT_INSN(x) ((uint64_t)__builtin_popcountll(x))
SIMLSH__POPCNT uint32_t simlsh__sketch_pass_popcnt(const uint64_t *su, const uint64_t *sv,
                                                   uint32_t nv, uint32_t words, uint32_t need,
                                                   uint32_t *out)
{
    uint32_t n = 0;
    SKETCH_PASS_LOOP(POPCNT_INSN);
    return n;
}
#endif
