/*
 * simlsh-dedup: exact Jaccard counts of two sequences of 32-bit values,
 * aligned first (see dedup-jaccard.h).
 *
 * The walk. From the start of both sequences, a run of equal values is
 * paired; at a difference, the value K places further in a (K = 8, 32,
 * 128 in turn) is looked for among the next K + WINDOW values of b, and
 * where it is found with its successor, the match is extended backwards
 * to where the difference ends; the walk goes on from there. The values
 * skipped on each side are "left over". A word replaced in a text changes
 * about its length plus k - 1 shingles on each side, so the first or
 * second K finds the place where the texts agree again; a text inserted or
 * removed up to about WINDOW shingles long is crossed by the third. When
 * no K finds a place, or when more is left over than paired (texts that
 * are not near-duplicates), the walk stops and the rest of both is left
 * over.
 *
 * Why any pairing counts exactly: with C the paired values (each in both
 * sequences) and XA, XB the left-over ones, set(A) = set(C) + set(XA) and
 * set(B) = set(C) + set(XB). So the paired values go to the table marked
 * as in both, XA's as in A, and XB's are looked up: |A|, |B| and |A and B|
 * come out of one pass over C, XA and XB, and the table sees each paired
 * value once instead of twice. When each sequence holds distinct values
 * (a set), a paired value is in neither left-over part, and
 * |A and B| = |C| + |XA and XB|: only the left-over parts need a table.
 */
#include "dedup-jaccard.h"

#include <stdlib.h>
#include <string.h>

#define WINDOW 128
#define JC_A 1
#define JC_B 2

static const size_t skips[] = {8, 32, 128};

/* The number of equal values at the start of a and b, n at most. */
static size_t common_len(const uint32_t *a, const uint32_t *b, size_t n)
{
    size_t k = 0;
    /* eight at a time without a branch inside: the runs are long */
    while (k + 8 <= n) {
        uint32_t d = 0;
        for (size_t t = 0; t < 8; t++)
            d |= a[k + t] ^ b[k + t];
        if (d != 0)
            break;
        k += 8;
    }
    while (k < n && a[k] == b[k])
        k++;
    return k;
}

/* a[i] != b[j]: the next place (*ni >= i, *nj >= j, a[*ni] == b[*nj])
 * where the sequences agree again, as the walk above finds it; 0 if none. */
static int resync(const uint32_t *a, size_t na, size_t i, const uint32_t *b, size_t nb, size_t j,
                  size_t *ni, size_t *nj)
{
    for (size_t s = 0; s < sizeof skips / sizeof *skips; s++) {
        size_t k = skips[s];
        if (k >= na - i)
            break;
        uint32_t x = a[i + k];
        int two = i + k + 1 < na;
        uint32_t y = two ? a[i + k + 1] : 0;
        size_t hi = nb - j < k + WINDOW ? nb - j : k + WINDOW;
        const uint32_t *q = b + j;
        for (size_t m = 0; m < hi; m++) {
            if (q[m] != x || (two && (j + m + 1 >= nb || q[m + 1] != y)))
                continue;
            size_t ii = i + k, jj = j + m;
            while (ii > i && jj > j && a[ii - 1] == b[jj - 1]) {
                ii--;
                jj--;
            }
            *ni = ii;
            *nj = jj;
            return 1;
        }
    }
    return 0;
}

static void push_run(struct jc_scratch *s, size_t i, size_t j, size_t len)
{
    if (s->nruns + 3 > s->rcap) {
        s->rcap = s->rcap ? 2 * s->rcap : 96;
        s->runs = xrealloc(s->runs, s->rcap * sizeof *s->runs);
    }
    s->runs[s->nruns++] = i;
    s->runs[s->nruns++] = j;
    s->runs[s->nruns++] = len;
}

/* The walk: runs into s->runs; the number of values paired. */
size_t jc_walk(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t i = 0, j = 0, paired = 0;
    s->nruns = 0;
    while (i < na && j < nb) {
        size_t n = na - i < nb - j ? na - i : nb - j;
        size_t len = common_len(a + i, b + j, n);
        if (len > 0) {
            push_run(s, i, j, len);
            paired += len;
            i += len;
            j += len;
            continue;
        }
        size_t ni, nj;
        if ((i + j) - 2 * paired > paired + 64 || !resync(a, na, i, b, nb, j, &ni, &nj))
            break;
        i = ni;
        j = nj;
    }
    return paired;
}

size_t jc_aligned(const struct jc_scratch *s)
{
    size_t n = 0;
    for (size_t r = 0; r < s->nruns; r += 3)
        n += s->runs[r + 2];
    return n;
}

/* Table t emptied, with room for n values at load <= 1/8 (1/2 for more
 * than 8,192 values), and tags if asked for. Most lookups end at their
 * first entry at load 1/8, which pays for a table larger than the
 * first-level cache: the lone pairs of the e2e benchmark were counted in
 * 4.3 us a pair, against 4.6 us at load 1/4 and 6.1 us at 1/2 (best of
 * nine runs each), and the second pass took 0.75 s instead of 0.82 s at
 * 1/4 (best of six). */
static void tab_reset(struct jc_table *t, size_t n, int tags)
{
    size_t cap = 16;
    unsigned shift = 28;
    /* 8 entries a value while that stays in the second-level cache (up to
     * 2^16 entries), 2 beyond: a larger table would miss it */
    size_t want = n <= ((size_t)1 << 13) ? 8 * n : 2 * n;
    while (cap < want) {
        cap *= 2;
        shift--;
    }
    /* grown for a long text, given back when the texts are short again */
    if (cap > t->v_n || (t->v_n > ((size_t)1 << 16) && t->v_n / 16 > cap)) {
        free(t->v);
        t->v = xmalloc(cap * sizeof *t->v);
        t->v_n = cap;
    }
    t->cap = cap;
    t->shift = shift;
    t->zero = 0;
    memset(t->v, 0, cap * sizeof *t->v);
    if (tags) {
        if (cap > t->tag_n || (t->tag_n > ((size_t)1 << 16) && t->tag_n / 16 > cap)) {
            free(t->tag);
            t->tag = xmalloc(cap);
            t->tag_n = cap;
        }
        memset(t->tag, 0, cap);
    }
}

/* The values are MurmurHash3 outputs: their top bits are as good a home
 * as any mix of them, and cost no multiply. */
static inline size_t home(uint32_t v, unsigned shift)
{
    return (size_t)(v >> shift);
}

/* The entry of v (not 0): where it is, or the empty entry where it goes. */
static inline size_t slot(const struct jc_table *t, uint32_t v)
{
    size_t p = home(v, t->shift), mask = t->cap - 1;
    while (t->v[p] != v && t->v[p] != 0)
        p = (p + 1) & mask;
    return p;
}

/* Puts v (not 0) in the entries tab[0..mask] (homes v >> shift): 1 if it
 * was not there. The counting loops call it with the table in locals, so
 * that its stores cannot change them. */
static inline int put(uint32_t *restrict tab, size_t mask, unsigned shift, uint32_t v)
{
    size_t p = home(v, shift);
    while (tab[p] != v && tab[p] != 0)
        p = (p + 1) & mask;
    int fresh = tab[p] == 0;
    tab[p] = v;
    return fresh;
}

/* Adds v to t: 1 if it was not there. */
static inline int add(struct jc_table *t, uint32_t v)
{
    if (v == 0) {
        unsigned had = t->zero;
        t->zero = 1;
        return !had;
    }
    return put(t->v, t->cap - 1, t->shift, v);
}

static inline int has(const struct jc_table *t, uint32_t v)
{
    return v == 0 ? (int)t->zero : t->v[slot(t, v)] == v;
}

/* Adds v to t with tags g: the tags it had before (0: it was new). */
static inline unsigned mark(struct jc_table *t, uint32_t v, unsigned g)
{
    unsigned old;
    if (v == 0) {
        old = t->zero >> 1;
        t->zero = 1 | ((old | g) << 1);
        return old;
    }
    size_t p = slot(t, v);
    t->v[p] = v;
    old = t->tag[p];
    t->tag[p] = (uint8_t)(old | g);
    return old;
}

/* The parts of a sequence of n values that no run covers, side 0 (a) or 1
 * (b): calls body for each value x. */
#define FOR_LEFT_OVER(s, seq, n, side, x, body)                           \
    do {                                                                  \
        size_t at_ = 0;                                                   \
        for (size_t r_ = 0; r_ <= (s)->nruns; r_ += 3) {                  \
            size_t end_ = r_ < (s)->nruns ? (s)->runs[r_ + (side)] : (n); \
            for (; at_ < end_; at_++) {                                   \
                uint32_t x = (seq)[at_];                                  \
                body                                                      \
            }                                                             \
            if (r_ < (s)->nruns)                                          \
                at_ = (s)->runs[r_ + (side)] + (s)->runs[r_ + 2];         \
        }                                                                 \
    } while (0)

void jc_count_seq(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                  struct jc_counts *out)
{
    size_t paired = jc_walk(s, a, na, b, nb);
    /* paired values: in both; their own table, untagged */
    tab_reset(&s->c, paired, 0);
    size_t both = 0;
    {
        /* most of the count: add() with the table in locals */
        uint32_t *restrict tab = s->c.v;
        size_t mask = s->c.cap - 1;
        unsigned shift = s->c.shift;
        int zero = 0;
        for (size_t r = 0; r < s->nruns; r += 3) {
            const uint32_t *c = a + s->runs[r];
            for (size_t t = 0, n = s->runs[r + 2]; t < n; t++) {
                uint32_t v = c[t];
                if (v != 0) {
                    both += (size_t)put(tab, mask, shift, v);
                } else {
                    both += !zero;
                    zero = 1;
                }
            }
        }
        s->c.zero = (unsigned)zero;
    }
    /* left-over values not among them: tagged with their side */
    size_t da = both, db = both;
    tab_reset(&s->x, na + nb - 2 * paired, 1);
    FOR_LEFT_OVER(s, a, na, 0, x, {
        if (!has(&s->c, x))
            da += mark(&s->x, x, JC_A) == 0;
    });
    FOR_LEFT_OVER(s, b, nb, 1, x, {
        if (!has(&s->c, x)) {
            unsigned old = mark(&s->x, x, JC_B);
            if (!(old & JC_B)) { /* first seen in B: in A too if A marked it */
                db++;
                both += old & JC_A;
            }
        }
    });
    out->a = da;
    out->b = db;
    out->both = both;
}

size_t jc_inter_left(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b,
                     size_t nb, size_t paired)
{
    size_t xa = na - paired, xb = nb - paired;
    if (xa == 0 || xb == 0)
        return paired;
    const uint32_t *small = a, *large = b;
    size_t nsmall = na, nlarge = nb;
    int sa = 0, sb = 1;
    if (xb < xa) {
        small = b;
        large = a;
        nsmall = nb;
        nlarge = na;
        sa = 1;
        sb = 0;
    }
    tab_reset(&s->x, xa < xb ? xa : xb, 0);
    FOR_LEFT_OVER(s, small, nsmall, sa, x, { add(&s->x, x); });
    size_t both = paired;
    FOR_LEFT_OVER(s, large, nlarge, sb, x, { both += (size_t)has(&s->x, x); });
    return both;
}

void jc_fill(struct jc_table *t, const uint32_t *a, size_t na)
{
    tab_reset(t, na, 0);
    for (size_t i = 0; i < na; i++)
        add(t, a[i]);
}

size_t jc_probe(const struct jc_table *t, const uint32_t *b, size_t nb, size_t need)
{
    size_t both = 0;
    for (size_t j = 0; j < nb; j++) {
        both += (size_t)has(t, b[j]);
        /* every 256 values: can the rest still reach need? */
        if ((j & 255) == 255 && both + (nb - 1 - j) < need)
            return both;
    }
    return both;
}

void jc_table_free(struct jc_table *t)
{
    free(t->v);
    free(t->tag);
    memset(t, 0, sizeof *t);
}

size_t jc_distinct(struct jc_scratch *s, const uint64_t *h, size_t n, uint32_t *out)
{
    tab_reset(&s->c, n, 0);
    uint32_t *restrict tab = s->c.v;
    size_t mask = s->c.cap - 1, m = 0;
    unsigned shift = s->c.shift;
    int zero = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)h[i];
        if (v == 0) {
            if (!zero)
                out[m++] = 0;
            zero = 1;
            continue;
        }
        /* written either way, kept (m moves on) only when new */
        out[m] = v;
        m += (size_t)put(tab, mask, shift, v);
    }
    return m;
}

void jc_free(struct jc_scratch *s)
{
    jc_table_free(&s->c);
    jc_table_free(&s->x);
    free(s->runs);
    memset(s, 0, sizeof *s);
}
