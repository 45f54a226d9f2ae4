/* The fewest shared elements that make |A and B| / |A or B| reach a
 * threshold: the bound of every exact Jaccard with an early exit, the
 * library's (lib/dedup/exact.c) and the tool's (tools/core/dedup-exact.c),
 * in one copy so that both decide a pair alike. Layer 1, libc only. */
#ifndef SIMLSH_UTIL_MIN_INTER_H
#define SIMLSH_UTIL_MIN_INTER_H

#include <stddef.h>

/* The smallest i with i / (total - i) >= t, for |A| + |B| = total,
 * computed as the full division decides it (so an early exit on it never
 * cuts a pair exactly at t). */
static inline size_t simlsh__min_inter(size_t total, double t)
{
    double guess = t * (double)total / (1.0 + t);
    size_t i = guess > 2.0 ? (size_t)guess - 2 : 0;
    while (i > 0 && (double)(i - 1) / (double)(total - i + 1) >= t)
        i--;
    while (i < total && (double)i / (double)(total - i) < t)
        i++;
    return i;
}

#endif
