/* The 2-bit sketch kernels of the pair sweep (sketch.c), reached through
 * cpu.h's table: a portable version and a POPCNT twin with identical
 * counts. A sketch holds the lowest 2 bits of each of a signature's
 * values, 32 values a 64-bit word; they know nothing of indexes. */
#ifndef SIMLSH_SKETCH_H
#define SIMLSH_SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* Set bits of x, without the POPCNT instruction. */
static inline uint64_t simlsh__popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (x * 0x0101010101010101ULL) >> 56;
}

/* The fields where sketch words a and b agree: one bit each, in the
 * field's low bit. */
static inline uint64_t simlsh__fields_agree(uint64_t a, uint64_t b)
{
    uint64_t d = a ^ b;
    return ~(d | d >> 1) & 0x5555555555555555ULL;
}

/* The indices v < nv whose sketch sv[v] (words words each) agrees with su
 * in need fields or more, into out (room for nv); their number. */
uint32_t simlsh__sketch_pass_scalar(const uint64_t *su, const uint64_t *sv, uint32_t nv,
                                    uint32_t words, uint32_t need, uint32_t *out);
uint32_t simlsh__sketch_pass_popcnt(const uint64_t *su, const uint64_t *sv, uint32_t nv,
                                    uint32_t words, uint32_t need, uint32_t *out);

#endif
