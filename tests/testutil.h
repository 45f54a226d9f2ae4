/* Tiny test harness: CHECK macros that report file:line and keep going,
 * a deterministic PRNG, and a counting/failing allocator for OOM tests. */
#ifndef SIMLSH_TESTUTIL_H
#define SIMLSH_TESTUTIL_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

static int tu_failures = 0;
static int tu_checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        tu_checks++;                                                             \
        if (!(cond)) {                                                           \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

/* Expect an exact return code. */
#define CHECK_RC(expr, want)                                                     \
    do {                                                                         \
        int tu_rc_ = (expr);                                                     \
        tu_checks++;                                                             \
        if (tu_rc_ != (want)) {                                                  \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n",     \
                    __FILE__, __LINE__, #expr, tu_rc_, simlsh_error_name(tu_rc_), \
                    (int)(want), simlsh_error_name(want));                       \
        }                                                                        \
    } while (0)
#define CHECK_OK(expr) CHECK_RC(expr, 0)

#define CHECK_NEAR(a, b, tol)                                                    \
    do {                                                                         \
        double tu_a_ = (a), tu_b_ = (b);                                         \
        tu_checks++;                                                             \
        if (!(fabs(tu_a_ - tu_b_) <= (tol))) {                                   \
            tu_failures++;                                                       \
            fprintf(stderr, "%s:%d: %s = %.12g, expected %.12g +- %g\n", __FILE__, \
                    __LINE__, #a, tu_a_, tu_b_, (double)(tol));                  \
        }                                                                        \
    } while (0)

/* Print a summary and return the process exit code. */
static inline int tu_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

/* splitmix64: fixed-seed deterministic randomness. */
typedef struct { uint64_t s; } tu_rng;
static inline uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline uint64_t tu_below(tu_rng *r, uint64_t n) { return n ? tu_next(r) % n : 0; }
static inline double tu_unit(tu_rng *r) { return (double)(tu_next(r) >> 11) * 0x1.0p-53; }

/* Counting allocator that fails allocation number fail_at (1-based; 0 never). */
typedef struct {
    long allocs, frees, live;
    long fail_at;
    long count;
} tu_alloc_state;

static inline void *tu_alloc_fn(void *user, size_t size)
{
    tu_alloc_state *s = user;
    s->count++;
    if (s->fail_at && s->count == s->fail_at)
        return NULL;
    void *p = malloc(size);
    if (p) {
        s->allocs++;
        s->live++;
    }
    return p;
}
static inline void tu_free_fn(void *user, void *p)
{
    tu_alloc_state *s = user;
    s->frees++;
    s->live--;
    free(p);
}
static inline simlsh_allocator tu_allocator(tu_alloc_state *s)
{
    simlsh_allocator a = {tu_alloc_fn, tu_free_fn, s};
    return a;
}

#endif
