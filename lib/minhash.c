/*
 * MinHash row updates and densification.
 *
 * OPH (default): each element x is folded to 32 bits and permuted,
 * v = fmix32(x32 ^ s); its bin is the top of v's range, (v * P) >> 32, and the
 * bin keeps the minimum v (that is one random permutation of the universe cut
 * into P contiguous ranges). Values keep all 32 bits, so a value copied into
 * an empty bin from bin j can never equal a genuine value of the empty bin.
 * Empty bins are filled at read time by optimal densification: bin i takes the
 * value of the first non-empty bin in the probe sequence probe(i, 1),
 * probe(i, 2), ... which depends only on (i, attempt, seed).
 *
 * Classic: row i is min over x of hi32(a_i * x + b_i mod 2^64) with odd a_i;
 * (a_i, b_i) come from splitmix64 seeded by the contract seed.
 *
 * 0xFFFFFFFF marks an empty row; real values are clamped to 0xFFFFFFFE.
 * The per-element kernels (scalar and SIMD) are in minhash_simd.c, reached
 * through the signature's row of cpu.h's kernel table.
 */
#include <string.h>

#include "alloc.h"
#include "cpu.h"
#include "minhash.h"
#include "minhash_simd.h"
#include "params.h"

#define OPH_SALT 0x4f5048u         /* "OPH" */
#define PROBE_SALT 0x50524f42ULL   /* "PROB" */
#define CLASSIC_SALT 0x434c4153ULL /* "CLAS" */

static uint32_t oph_salt(uint32_t seed)
{
    return (uint32_t)simlsh__fmix64(((uint64_t)seed << 32) | OPH_SALT);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int simlsh__minhash_init(const simlsh__rows *r)
{
    if (r->scheme != SIMLSH_SCHEME_CLASSIC || *r->coef != NULL)
        return 0;
    uint32_t P = r->num_perm;
    uint64_t *c = simlsh__malloc(r->alloc, 2 * (size_t)P * sizeof *c);
    if (c == NULL)
        return SIMLSH_ENOMEM;
    uint64_t st = ((uint64_t)r->seed << 32) ^ CLASSIC_SALT;
    for (uint32_t i = 0; i < P; i++) {
        c[i] = splitmix64(&st) | 1; /* a_i: odd */
        c[P + i] = splitmix64(&st); /* b_i */
    }
    *r->coef = c;
    return 0;
}

#define BATCH 2048

static void oph_scatter(uint32_t *raw, uint32_t P, const uint32_t *v, size_t n)
{
    /* Four interleaved streams into four row arrays, merged at the end: a
     * store and a later load of the same row would otherwise chain
     * iterations through memory. Branch-free minimum: new minima are
     * unpredictable early on. Values are already clamped below 0xFFFFFFFF. */
    uint32_t aux[3][SIMLSH__MAX_PERM];
    memcpy(aux[0], raw, P * sizeof *raw);
    memcpy(aux[1], raw, P * sizeof *raw);
    memcpy(aux[2], raw, P * sizeof *raw);
    uint32_t *r0 = raw, *r1 = aux[0], *r2 = aux[1], *r3 = aux[2];
    size_t i = 0;
#define SCATTER_ONE(r, x)                                  \
    do {                                                   \
        uint32_t b_ = (uint32_t)(((uint64_t)(x)*P) >> 32); \
        uint32_t c_ = (r)[b_];                             \
        (r)[b_] = (x) < c_ ? (x) : c_;                     \
    } while (0)
    for (; i + 4 <= n; i += 4) {
        SCATTER_ONE(r0, v[i]);
        SCATTER_ONE(r1, v[i + 1]);
        SCATTER_ONE(r2, v[i + 2]);
        SCATTER_ONE(r3, v[i + 3]);
    }
    for (; i < n; i++)
        SCATTER_ONE(r0, v[i]);
#undef SCATTER_ONE
    for (uint32_t j = 0; j < P; j++) {
        uint32_t a = r1[j] < r2[j] ? r1[j] : r2[j];
        a = r3[j] < a ? r3[j] : a;
        raw[j] = a < raw[j] ? a : raw[j];
    }
}

void simlsh__minhash_add32(const simlsh__rows *r, const uint32_t *h, size_t n)
{
    if (n == 0)
        return;
    *r->empty = 0;
    if (r->scheme == SIMLSH_SCHEME_OPH) {
        simlsh__oph_fn values = r->kern->oph_values;
        uint32_t s = oph_salt(r->seed);
        uint32_t v[BATCH];
        for (size_t off = 0; off < n; off += BATCH) {
            size_t m = n - off < BATCH ? n - off : BATCH;
            values(v, h + off, m, s);
            oph_scatter(r->raw, r->num_perm, v, m);
        }
        return;
    }
    simlsh__classic_fn update = r->kern->classic_update;
    uint64_t x[BATCH];
    for (size_t off = 0; off < n; off += BATCH) {
        size_t m = n - off < BATCH ? n - off : BATCH;
        for (size_t i = 0; i < m; i++)
            x[i] = h[off + i];
        update(r->raw, *r->coef, *r->coef + r->num_perm, r->num_perm, x, m);
    }
}

void simlsh__minhash_add(const simlsh__rows *r, const uint64_t *h, size_t n)
{
    if (n == 0)
        return;
    if (r->scheme == SIMLSH_SCHEME_OPH) {
        uint32_t x[BATCH];
        for (size_t off = 0; off < n; off += BATCH) {
            size_t m = n - off < BATCH ? n - off : BATCH;
            for (size_t i = 0; i < m; i++)
                x[i] = simlsh__fold64(h[off + i]);
            simlsh__minhash_add32(r, x, m);
        }
        return;
    }
    *r->empty = 0;
    simlsh__classic_fn update = r->kern->classic_update;
    update(r->raw, *r->coef, *r->coef + r->num_perm, r->num_perm, h, n);
}

/* Optimal densification (Shrivastava 2017): the probe sequence depends on
 * (bin, attempt, seed) only, so two documents fill an empty bin from the same
 * source bin whenever both have it non-empty. After 32*P attempts (only
 * reachable with almost every bin empty) a circular scan from the last probe
 * finishes the job; it too depends only on (bin, seed). */
void simlsh__minhash_finish(const simlsh__rows *r)
{
    uint32_t P = r->num_perm;
    if (r->scheme != SIMLSH_SCHEME_OPH) {
        if (r->values != r->raw)
            memcpy(r->values, r->raw, P * sizeof *r->raw);
        return;
    }
    memcpy(r->values, r->raw, P * sizeof *r->raw);
    if (*r->empty)
        return;
    uint64_t salt = simlsh__fmix64(((uint64_t)r->seed << 32) ^ PROBE_SALT);
    for (uint32_t i = 0; i < P; i++) {
        if (r->raw[i] != SIMLSH__EMPTY_VALUE)
            continue;
        uint32_t j = i;
        uint32_t limit = 32 * P;
        for (uint32_t t = 1;; t++) {
            uint64_t h = simlsh__fmix64(salt ^ (((uint64_t)i << 32) | t));
            j = (uint32_t)(((h >> 32) * P) >> 32);
            if (r->raw[j] != SIMLSH__EMPTY_VALUE)
                break;
            if (t >= limit) {
                while (r->raw[j] == SIMLSH__EMPTY_VALUE)
                    j = j + 1 == P ? 0 : j + 1;
                break;
            }
        }
        r->values[i] = r->raw[j];
    }
}
