/*
 * The aligned Jaccard counts of the second pass (tools/core/dedup-jaccard.c)
 * against sort-and-merge counts, on sequences made to cover what the walk
 * meets: near-duplicates (values replaced, inserted, removed, moved, in
 * short and long stretches), repeats from small alphabets, the value 0,
 * unrelated and empty sequences; and, for the set form, the same as
 * distinct values in first-seen and in sorted order, which jc_distinct()
 * must give too. Fixed seeds. It also
 * checks that near-duplicates are in fact paired by the walk, which is
 * what makes the counts fast.
 */
#include "dedup-jaccard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t below(size_t n)
{
    return n ? (size_t)(next() % n) : 0;
}

static int failures;

static int cmp32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Distinct values of v[0..n), sorted, into out; their number. */
static size_t uniq(uint32_t *out, const uint32_t *v, size_t n)
{
    memcpy(out, v, n * sizeof *v);
    qsort(out, n, sizeof *out, cmp32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || out[m - 1] != out[i])
            out[m++] = out[i];
    return m;
}

static struct jc_counts reference(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    uint32_t *x = xmalloc(na * sizeof *x), *y = xmalloc(nb * sizeof *y);
    size_t ma = uniq(x, a, na), mb = uniq(y, b, nb), i = 0, j = 0, both = 0;
    while (i < ma && j < mb) {
        if (x[i] == y[j]) {
            both++;
            i++;
            j++;
        } else if (x[i] < y[j]) {
            i++;
        } else {
            j++;
        }
    }
    free(x);
    free(y);
    return (struct jc_counts){ma, mb, both};
}

struct vi {
    uint32_t v;
    size_t i;
};

static int cmp_vi(const void *x, const void *y)
{
    const struct vi *p = x, *q = y;
    if (p->v != q->v)
        return p->v < q->v ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

static int cmp_i(const void *x, const void *y)
{
    const struct vi *p = x, *q = y;
    return p->i < q->i ? -1 : p->i > q->i;
}

/* v's distinct values in first-seen order (or sorted); their number. */
static size_t as_set(uint32_t *out, const uint32_t *v, size_t n, int sorted)
{
    if (sorted)
        return uniq(out, v, n);
    struct vi *t = xmalloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++)
        t[i] = (struct vi){v[i], i};
    qsort(t, n, sizeof *t, cmp_vi);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || t[i].v != t[i - 1].v)
            t[m++] = t[i];
    qsort(t, m, sizeof *t, cmp_i);
    for (size_t i = 0; i < m; i++)
        out[i] = t[i].v;
    free(t);
    return m;
}

static void check(struct jc_scratch *s, const char *what, int iter, const uint32_t *a, size_t na,
                  const uint32_t *b, size_t nb, long max_lost)
{
    struct jc_counts want = reference(a, na, b, nb), got;
    jc_count_seq(s, a, na, b, nb, &got);
    if (got.a != want.a || got.b != want.b || got.both != want.both) {
        printf("FAIL %s %d: seq counts %zu %zu %zu, want %zu %zu %zu\n", what, iter, got.a, got.b,
               got.both, want.a, want.b, want.both);
        failures++;
    }
    size_t shorter = na < nb ? na : nb;
    /* max_lost < 0: the pairing is not checked */
    if (max_lost >= 0 && jc_aligned(s) + (size_t)max_lost < shorter) {
        printf("FAIL %s %d: %zu of %zu values paired, want all but %ld\n", what, iter,
               jc_aligned(s), shorter, max_lost);
        failures++;
    }
    uint32_t *x = xmalloc(na * sizeof *x), *y = xmalloc(nb * sizeof *y);
    /* jc_distinct: a's distinct low halves, first seen first */
    uint64_t *h = xmalloc(na * sizeof *h);
    uint32_t *d = xmalloc(na * sizeof *d);
    for (size_t i = 0; i < na; i++)
        h[i] = (uint64_t)(uint32_t)next() << 32 | a[i];
    size_t mf = as_set(x, a, na, 0), md = jc_distinct(s, h, na, d);
    if (md != mf || memcmp(x, d, mf * sizeof *x) != 0) {
        printf("FAIL %s %d: %zu distinct values, want %zu in first-seen order\n", what, iter, md,
               mf);
        failures++;
    }
    free(h);
    free(d);
    /* jc_fill() and jc_probe(): exact with need 0, below need when it
     * cannot be reached, the count when it can */
    {
        struct jc_table t;
        memset(&t, 0, sizeof t);
        size_t ma = as_set(x, a, na, 0), mb = as_set(y, b, nb, 0);
        jc_fill(&t, x, ma);
        size_t all = jc_probe(&t, y, mb, 0), over = jc_probe(&t, y, mb, want.both + 1),
               at = jc_probe(&t, y, mb, want.both);
        if (all != want.both || over > want.both || at != want.both) {
            printf("FAIL %s %d: probe %zu, %zu for need %zu, %zu for need %zu; want %zu\n", what,
                   iter, all, over, want.both + 1, at, want.both, want.both);
            failures++;
        }
        jc_table_free(&t);
    }
    for (int sorted = 0; sorted < 2; sorted++) {
        size_t mx = as_set(x, a, na, sorted), my = as_set(y, b, nb, sorted);
        size_t both = jc_inter_left(s, x, mx, y, my, jc_walk(s, x, mx, y, my));
        if (both != want.both) {
            printf("FAIL %s %d: set (%s) both %zu, want %zu\n", what, iter,
                   sorted ? "sorted" : "first seen", both, want.both);
            failures++;
        }
        /* and the other way round */
        both = jc_inter_left(s, y, my, x, mx, jc_walk(s, y, my, x, mx));
        if (both != want.both) {
            printf("FAIL %s %d: set (%s, swapped) both %zu, want %zu\n", what, iter,
                   sorted ? "sorted" : "first seen", both, want.both);
            failures++;
        }
    }
    free(x);
    free(y);
}

/* A value from an alphabet of `alpha` values (0 among them), or a fresh
 * random one when alpha is 0. */
static uint32_t value(size_t alpha)
{
    return alpha ? (uint32_t)below(alpha) : (uint32_t)next();
}

/* b = a with `edits` edits: replaced, inserted or removed stretches of up
 * to `span` values, and with `moves` a stretch moved elsewhere. */
static size_t edit(uint32_t *b, const uint32_t *a, size_t na, size_t edits, size_t span,
                   size_t alpha, int moves)
{
    size_t nb = 0, i = 0;
    size_t *at = xmalloc((edits + 1) * sizeof *at);
    for (size_t e = 0; e < edits; e++)
        at[e] = below(na);
    for (size_t e = 1; e < edits; e++) /* sorted, few */
        for (size_t f = e; f > 0 && at[f - 1] > at[f]; f--) {
            size_t t = at[f];
            at[f] = at[f - 1];
            at[f - 1] = t;
        }
    for (size_t e = 0; e < edits; e++) {
        if (at[e] < i)
            continue;
        while (i < at[e])
            b[nb++] = a[i++];
        size_t len = 1 + below(span);
        switch (below(3)) {
        case 0: /* replace */
            for (size_t t = 0; t < len && i < na; t++, i++)
                b[nb++] = value(alpha);
            break;
        case 1: /* insert */
            for (size_t t = 0; t < len; t++)
                b[nb++] = value(alpha);
            break;
        default: /* remove */
            i = i + len < na ? i + len : na;
        }
    }
    while (i < na)
        b[nb++] = a[i++];
    free(at);
    if (moves && nb > 20) { /* rotate a stretch: a move */
        size_t lo = below(nb / 2), len = 1 + below(nb / 4), hi = lo + len;
        size_t mid = lo + below(len);
        uint32_t *t = xmalloc(len * sizeof *t);
        memcpy(t, b + mid, (hi - mid) * sizeof *t);
        memcpy(t + (hi - mid), b + lo, (mid - lo) * sizeof *t);
        memcpy(b + lo, t, len * sizeof *t);
        free(t);
    }
    return nb;
}

int main(void)
{
    struct jc_scratch s;
    memset(&s, 0, sizeof s);
    enum {
        MAXN = 6000
    };
    uint32_t *a = calloc(MAXN, sizeof *a), *b = calloc(4 * MAXN, sizeof *b);
    if (a == NULL || b == NULL)
        abort();

    /* empty, single, identical, all zeros */
    check(&s, "empty", 0, a, 0, b, 0, 0);
    a[0] = 7;
    check(&s, "one-empty", 0, a, 1, b, 0, 0);
    check(&s, "empty-one", 0, b, 0, a, 1, 0);
    b[0] = 7;
    check(&s, "one-one", 0, a, 1, b, 1, 0);
    b[0] = 0;
    check(&s, "one-zero", 0, a, 1, b, 1, 1);
    for (size_t i = 0; i < 300; i++)
        a[i] = b[i] = 0;
    check(&s, "zeros", 0, a, 300, b, 300, 0);
    check(&s, "zeros-short", 0, a, 300, b, 5, 0);

    /* a long pair first: the tables grow for it, and are given back for
     * the short ones that follow (their counts must not change) */
    {
        size_t nl = 12000; /* a table of 2^17 entries, given back below 2^13 */
        uint32_t *la = xmalloc(nl * sizeof *la), *lb = xmalloc(2 * nl * sizeof *lb);
        for (size_t i = 0; i < nl; i++)
            la[i] = value(1u << 20);
        size_t nlb = edit(lb, la, nl, 30, 40, 1u << 20, 0);
        check(&s, "long", 0, la, nl, lb, nlb, -1);
        free(la);
        free(lb);
    }

    /* near-duplicates: few short edits, as texts with words replaced; the
     * walk must pair nearly all of them */
    for (int it = 0; it < 400; it++) {
        size_t alpha = it % 4 == 0 ? 0 : (size_t)1 << (4 + it % 12);
        size_t na = 200 + below(MAXN - 200);
        for (size_t i = 0; i < na; i++)
            a[i] = value(alpha);
        size_t nb = edit(b, a, na, 1 + below(5), 12, alpha, 0);
        /* With hash-like values (a large alphabet) the walk loses at most
         * the edited values (5 x 12 on each side) and, when edits crowd
         * the end, the last 128 + 1; small alphabets repeat so much that
         * the walk's anchors mislead it, and only the counts are checked */
        check(&s, "near", it, a, na, b, nb, alpha == 0 || alpha >= 4096 ? 2 * 5 * 12 + 129 : -1);
    }
    /* long edits, moves, many edits: counts still exact */
    for (int it = 0; it < 400; it++) {
        size_t alpha = it % 3 == 0 ? 0 : (size_t)1 << (1 + it % 14);
        size_t na = below(MAXN);
        for (size_t i = 0; i < na; i++)
            a[i] = value(alpha);
        size_t nb = edit(b, a, na, below(60), 1 + below(400), alpha, it % 2);
        check(&s, "edited", it, a, na, b, nb, -1);
    }
    /* unrelated: nothing to pair but chance */
    for (int it = 0; it < 200; it++) {
        size_t alpha = it % 2 == 0 ? 0 : (size_t)1 << (1 + it % 16);
        size_t na = below(MAXN), nb = below(MAXN);
        for (size_t i = 0; i < na; i++)
            a[i] = value(alpha);
        for (size_t i = 0; i < nb; i++)
            b[i] = value(alpha);
        check(&s, "unrelated", it, a, na, b, nb, -1);
    }
    /* a text repeated: b is a twice, a b three times */
    for (int it = 0; it < 50; it++) {
        size_t na = 1 + below(1000), alpha = (size_t)1 << (2 + it % 10);
        for (size_t i = 0; i < na; i++)
            a[i] = value(alpha);
        for (size_t i = 0; i < 2 * na; i++)
            b[i] = a[i % na];
        check(&s, "repeated", it, a, na, b, 2 * na, 0);
    }
    jc_free(&s);
    free(a);
    free(b);
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("all counts exact\n");
    return 0;
}
