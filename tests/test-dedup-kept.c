/* The sample test on kept samples (simlsh__dx_kept_test, dedup/samples.c)
 * against the sample test on whole sets, written out here from its rule
 * (dedup/exact.c's sample_below()): the hashes of level s or more (their
 * low s bits 0) of both sets, for s from where the centre has 64 of them
 * down to 2, and a pair rejected at the first level where the shared ones
 * are too few (simlsh__dx_sample_rejects).
 *
 * Random pairs of sets, of 50 to 20,000 hashes, of sizes up to 3 to 1
 * apart, with Jaccard from 0.3 to 1, at thresholds 0.5 to 1; each side's
 * kept sample complete from a level of its own (2 to 15). A kept test that
 * rejects must be a pair the whole test rejects, one that says "not
 * rejected" must be one it does not reject, and with both samples
 * complete from level 2 it must always answer, and answer the same. With
 * 32- and 64-bit values (one or two words a value). */
#include <stdlib.h>

#include "dedup/internal.h"
#include "testutil.h"

#define MAXN 20000

static uint64_t A[MAXN], B[MAXN];

static int cmp64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* sample_below()'s rule on the whole sets (sorted, distinct, no 0). */
static int whole_test(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, double t)
{
    size_t ca[DX_LEVELS] = {0}, cb[DX_LEVELS] = {0}, cs[DX_LEVELS] = {0};
    for (size_t i = 0; i < na; i++)
        ca[simlsh__dx_level(a[i])]++;
    for (size_t j = 0; j < nb; j++)
        cb[simlsh__dx_level(b[j])]++;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        if (a[i] < b[j]) {
            i++;
        } else if (b[j] < a[i]) {
            j++;
        } else {
            cs[simlsh__dx_level(a[i])]++;
            i++;
            j++;
        }
    }
    unsigned s = DX_LEVELS - 1;
    size_t above = 0;
    while (s > DX_SAMPLE_MIN_LEVEL && above + ca[s] < DX_SAMPLE_FIRST)
        above += ca[s--];
    if (above + ca[s] < DX_SAMPLE_FIRST)
        return 0;
    for (;; s--) {
        size_t inter = 0, mate = 0, cent = 0;
        for (unsigned l = s; l < DX_LEVELS; l++) {
            inter += cs[l];
            mate += cb[l];
            cent += ca[l];
        }
        if (simlsh__dx_sample_rejects(inter, cent + mate - inter, t))
            return 1;
        if (s == DX_SAMPLE_MIN_LEVEL)
            return 0;
    }
}

/* The values of v of level lv or more, in sw words each. */
static size_t kept_words(const uint64_t *v, size_t n, unsigned lv, unsigned sw, uint32_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (simlsh__dx_level(v[i]) < lv)
            continue;
        out[sw * k] = (uint32_t)v[i];
        if (sw == 2)
            out[2 * k + 1] = (uint32_t)(v[i] >> 32);
        k++;
    }
    return k;
}

/* A random nonzero hash of level 2 or more, below 2^32 when narrow (the
 * levels below 2 are never sampled, and would only be skipped). */
static uint64_t hash_of(tu_rng *r, int narrow)
{
    for (;;) {
        uint64_t h = tu_next(r) & ~(uint64_t)3;
        if (narrow)
            h &= 0xFFFFFFFFu;
        if (h != 0)
            return h;
    }
}

static size_t distinct(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

int main(void)
{
    static uint32_t ka[2 * MAXN], kb[2 * MAXN];
    tu_rng r = {20261206};
    size_t rejected = 0, answered = 0, rounds = 4000;
    for (size_t round = 0; round < rounds; round++) {
        unsigned sw = round % 2 ? 2 : 1;
        /* sizes: log-uniform from 50 to MAXN / 3, the other up to 3x */
        size_t na = 50 + (size_t)(exp(log((double)MAXN / 3 / 50) * tu_unit(&r)) * 50) - 50;
        double ratio = 1.0 / 3 + tu_unit(&r) * (3 - 1.0 / 3);
        size_t nb = (size_t)((double)na * ratio);
        if (nb < 50)
            nb = 50;
        if (nb > MAXN)
            nb = MAXN;
        /* shared part: a Jaccard from 0.3 to 1 where sizes allow */
        double j = 0.3 + 0.7 * tu_unit(&r);
        size_t lo = na < nb ? na : nb;
        size_t shared = (size_t)(j * (double)(na + nb) / (1 + j));
        if (shared > lo)
            shared = lo;
        for (size_t i = 0; i < shared; i++)
            A[i] = B[i] = hash_of(&r, sw == 1);
        for (size_t i = shared; i < na; i++)
            A[i] = hash_of(&r, sw == 1);
        for (size_t i = shared; i < nb; i++)
            B[i] = hash_of(&r, sw == 1);
        na = distinct(A, na);
        nb = distinct(B, nb);
        double t = 0.5 + 0.5 * tu_unit(&r);
        if (round % 7 == 0)
            t = 1.0;
        int want = whole_test(A, na, B, nb, t);
        /* each side complete from a level of its own: 2 (all), or up to 15 */
        for (int form = 0; form < 2; form++) {
            unsigned la = form ? 2 + (unsigned)tu_below(&r, 14) : 2;
            unsigned lb = form ? 2 + (unsigned)tu_below(&r, 14) : 2;
            size_t ma = kept_words(A, na, la, sw, ka), mb = kept_words(B, nb, lb, sw, kb);
            int got = simlsh__dx_kept_test(ka, ma, la, kb, mb, lb, sw, t);
            if (form == 0) {
                CHECK(got == want);
            } else {
                CHECK(got == -1 || got == want);
            }
            rejected += got == 1;
            answered += got != -1;
        }
    }
    /* the cases mean something: both answers, and samples that cannot tell */
    CHECK(rejected > rounds / 10);
    CHECK(answered - rejected > rounds / 10);
    CHECK(answered < 2 * rounds);
    fprintf(stderr, "%zu rounds: %zu answered, %zu rejected\n", rounds, answered, rejected);
    return tu_finish("test-dedup-kept");
}
