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

#define CHECK(cond)                                                                  \
    do {                                                                             \
        tu_checks++;                                                                 \
        if (!(cond)) {                                                               \
            tu_failures++;                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

/* Expect an exact return code. */
#define CHECK_RC(expr, want)                                                                      \
    do {                                                                                          \
        int tu_rc_ = (expr);                                                                      \
        tu_checks++;                                                                              \
        if (tu_rc_ != (want)) {                                                                   \
            tu_failures++;                                                                        \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__, __LINE__, \
                    #expr, tu_rc_, simlsh_error_name(tu_rc_), (int)(want),                        \
                    simlsh_error_name(want));                                                     \
        }                                                                                         \
    } while (0)
#define CHECK_OK(expr) CHECK_RC(expr, 0)

#define CHECK_NEAR(a, b, tol)                                                                    \
    do {                                                                                         \
        double tu_a_ = (a), tu_b_ = (b);                                                         \
        tu_checks++;                                                                             \
        if (!(fabs(tu_a_ - tu_b_) <= (tol))) {                                                   \
            tu_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s = %.12g, expected %.12g +- %g\n", __FILE__, __LINE__, #a, \
                    tu_a_, tu_b_, (double)(tol));                                                \
        }                                                                                        \
    } while (0)

/* Print a summary and return the process exit code. */
/* Two results with the same rows (a, b, score) in the same order, the
 * same count and the same truncated flag. */
static inline int tu_same_results(const simlsh_results *a, const simlsh_results *b)
{
    size_t n = simlsh_results_count(a);
    if (n != simlsh_results_count(b) || simlsh_results_truncated(a) != simlsh_results_truncated(b))
        return 0;
    return n == 0 || (memcmp(simlsh_results_a(a), simlsh_results_a(b), n * 8) == 0 &&
                      memcmp(simlsh_results_b(a), simlsh_results_b(b), n * 8) == 0 &&
                      memcmp(simlsh_results_scores(a), simlsh_results_scores(b), n * 8) == 0);
}

static inline int tu_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

/* splitmix64: fixed-seed deterministic randomness. */
typedef struct {
    uint64_t s;
} tu_rng;
static inline uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline uint64_t tu_below(tu_rng *r, uint64_t n)
{
    return n ? tu_next(r) % n : 0;
}
static inline double tu_unit(tu_rng *r)
{
    return (double)(tu_next(r) >> 11) * 0x1.0p-53;
}

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

/* Little-endian field access for serialised objects (docs/format.md). */
static inline void tu_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tu_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t tu_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tu_get64(const uint8_t *p)
{
    return (uint64_t)tu_get32(p) | (uint64_t)tu_get32(p + 4) << 32;
}

/* Recompute the trailing checksum of a serialised object after a hostile
 * edit, so that the loader's validators behind the checksum must catch the
 * edit. docs/format.md: first 64-bit word of MurmurHash3 x64_128, seed
 * 0x5eedc0de, of every byte before the checksum; that is exactly
 * simlsh_hash_bytes with HASH_BITS 64 and that seed, so no private code is
 * needed. */
static inline void tu_reseal(uint8_t *buf, size_t total)
{
    simlsh_params *p = NULL;
    uint64_t h = 0;
    if (simlsh_params_new(&p, NULL) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 0x5eedc0de) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, 64) != 0 ||
        simlsh_hash_bytes(&h, p, buf, total - 8) != 0) {
        fprintf(stderr, "tu_reseal: cannot hash\n");
        exit(1);
    }
    tu_put64(buf + total - 8, h);
    simlsh_params_free(p);
}

#endif
