/* Grouping over pairs: simlsh_group_components(), simlsh_group_star(),
 * simlsh_group_batches() and simlsh_group_batch_ids() against reference
 * implementations written here (adjacency matrices and flood fill, the
 * greedy star rule read literally, the batch rule with qsort), on random
 * graphs, chains, stars and cliques, with repeated, flipped and shuffled
 * input; error paths and failing allocations. */
#include "testutil.h"

/* ---- a pair list and its reference view ----------------------------------- */

typedef struct {
    uint64_t *a, *b;
    double *s;
    size_t n, cap;
} plist;

static void pl_push(plist *p, uint64_t a, uint64_t b, double s)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->a = realloc(p->a, p->cap * sizeof *p->a);
        p->b = realloc(p->b, p->cap * sizeof *p->b);
        p->s = realloc(p->s, p->cap * sizeof *p->s);
        if (p->a == NULL || p->b == NULL || p->s == NULL)
            abort();
    }
    p->a[p->n] = a;
    p->b[p->n] = b;
    p->s[p->n++] = s;
}

static void pl_free(plist *p)
{
    free(p->a);
    free(p->b);
    free(p->s);
    memset(p, 0, sizeof *p);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Distinct ids (sorted), a matrix of best scores (NAN = no edge) and the
 * components by flood fill, each labelled with its smallest id. */
typedef struct {
    uint64_t *ids;
    size_t m;
    double *w;     /* m x m */
    size_t *label; /* index of the smallest id of the component */
} refgraph;

static size_t ref_index(const refgraph *g, uint64_t id)
{
    const uint64_t *p = bsearch(&id, g->ids, g->m, sizeof id, cmp_u64);
    if (p == NULL)
        abort();
    return (size_t)(p - g->ids);
}

static int has_edge(const refgraph *g, size_t x, size_t y)
{
    return !isnan(g->w[x * g->m + y]);
}

static void ref_build(refgraph *g, const plist *p, int with_scores)
{
    g->ids = malloc((2 * p->n + 1) * sizeof *g->ids);
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        g->ids[k++] = p->a[i];
        g->ids[k++] = p->b[i];
    }
    qsort(g->ids, k, sizeof *g->ids, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (m == 0 || g->ids[i] != g->ids[m - 1])
            g->ids[m++] = g->ids[i];
    g->m = m;
    g->w = malloc((m * m + 1) * sizeof *g->w);
    for (size_t i = 0; i < m * m; i++)
        g->w[i] = NAN;
    for (size_t i = 0; i < p->n; i++) {
        size_t x = ref_index(g, p->a[i]), y = ref_index(g, p->b[i]);
        double s = with_scores ? p->s[i] : -1.0;
        if (isnan(g->w[x * m + y]) || s > g->w[x * m + y])
            g->w[x * m + y] = g->w[y * m + x] = s;
    }
    g->label = malloc((m + 1) * sizeof *g->label);
    size_t *stack = malloc((m + 1) * sizeof *stack);
    for (size_t i = 0; i < m; i++)
        g->label[i] = SIZE_MAX;
    for (size_t i = 0; i < m; i++) {
        if (g->label[i] != SIZE_MAX)
            continue;
        size_t top = 0;
        stack[top++] = i;
        g->label[i] = i;
        while (top > 0) {
            size_t x = stack[--top];
            for (size_t y = 0; y < m; y++)
                if (has_edge(g, x, y) && g->label[y] == SIZE_MAX) {
                    g->label[y] = i;
                    stack[top++] = y;
                }
        }
    }
    free(stack);
}

static void ref_free(refgraph *g)
{
    free(g->ids);
    free(g->w);
    free(g->label);
}

/* ---- graph generators ------------------------------------------------------ */

static uint64_t random_id(tu_rng *r)
{
    /* Mix small ids, huge ids and the extremes. */
    switch (tu_below(r, 4)) {
    case 0:
        return tu_below(r, 1000);
    case 1:
        return UINT64_MAX - tu_below(r, 1000);
    default:
        return tu_next(r);
    }
}

/* m distinct ids, pairs among them with probability p, then repeated and
 * flipped pairs. With compact, the ids are base .. base + m - 1 in random
 * order (as a program's document numbers are), at 0, in the middle or at
 * the top of the range: the library then maps ids without sorting them
 * when they span fewer than twice as many values as there are pairs. */
static void gen_random(plist *out, tu_rng *r, size_t m, double p, int compact)
{
    uint64_t *ids = malloc(m * sizeof *ids);
    uint64_t base = tu_below(r, 3) == 0 ? 0 : tu_below(r, 2) ? UINT64_MAX - m + 1 : tu_next(r) >> 1;
    for (size_t i = 0; compact && i < m; i++) {
        size_t j = tu_below(r, i + 1);
        ids[i] = ids[j];
        ids[j] = base + i;
    }
    for (size_t i = 0; !compact && i < m; i++) {
    again:
        ids[i] = random_id(r);
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                goto again;
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++)
            if (tu_unit(r) < p) {
                double s = 0.5 + 0.5 * tu_unit(r);
                if (tu_below(r, 2))
                    pl_push(out, ids[i], ids[j], s);
                else
                    pl_push(out, ids[j], ids[i], s);
                if (tu_below(r, 8) == 0) /* a repeat, maybe with another score */
                    pl_push(out, ids[j], ids[i], tu_below(r, 2) ? s : 0.5 * s);
            }
    free(ids);
}

static void shuffle(plist *p, tu_rng *r)
{
    for (size_t i = p->n; i > 1; i--) {
        size_t j = tu_below(r, i);
        uint64_t t = p->a[i - 1];
        p->a[i - 1] = p->a[j];
        p->a[j] = t;
        t = p->b[i - 1];
        p->b[i - 1] = p->b[j];
        p->b[j] = t;
        double s = p->s[i - 1];
        p->s[i - 1] = p->s[j];
        p->s[j] = s;
    }
}

/* ---- helpers on results ----------------------------------------------------- */

static size_t offset_of(const simlsh_results *res, size_t q)
{
    size_t o = SIZE_MAX;
    if (simlsh_results_offset(&o, res, q) != 0)
        return SIZE_MAX;
    return o;
}

static int same_results(const simlsh_results *x, const simlsh_results *y, size_t ngroups)
{
    size_t n = simlsh_results_count(x);
    if (n != simlsh_results_count(y))
        return 0;
    for (size_t q = 0; q <= ngroups; q++)
        if (offset_of(x, q) != offset_of(y, q))
            return 0;
    if (n == 0)
        return 1;
    return memcmp(simlsh_results_a(x), simlsh_results_a(y), n * 8) == 0 &&
           memcmp(simlsh_results_b(x), simlsh_results_b(y), n * 8) == 0 &&
           memcmp(simlsh_results_scores(x), simlsh_results_scores(y), n * 8) == 0;
}

/* ---- components --------------------------------------------------------------- */

static void check_components(const plist *p)
{
    refgraph g;
    ref_build(&g, p, 0);
    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    size_t ng = 12345;
    CHECK_OK(simlsh_group_components(res, &ng, p->a, p->b, p->n));
    CHECK(simlsh_results_count(res) == g.m);

    /* Expected rows: components by label, ids ascending. */
    size_t ncomp = 0, row = 0;
    int ok = 1;
    for (size_t l = 0; l < g.m && ok; l++) {
        if (g.label[l] != l)
            continue;
        if (offset_of(res, ncomp) != row)
            ok = 0;
        ncomp++;
        for (size_t i = l; i < g.m; i++) {
            if (g.label[i] != l)
                continue;
            uint64_t a, b;
            double s;
            if (simlsh_results_row(res, row++, &a, &b, &s) != 0 || a != g.ids[i] || b != g.ids[l] ||
                s != -1.0)
                ok = 0;
        }
    }
    CHECK(ok);
    CHECK(ng == ncomp);
    CHECK(offset_of(res, ncomp) == g.m);
    CHECK(offset_of(res, ncomp + 1) == SIZE_MAX);
    simlsh_results_free(res);
    ref_free(&g);
}

/* ---- stars --------------------------------------------------------------------- */

/* The rule read literally: visit by priority, an unplaced document becomes
 * a centre and takes its unplaced neighbours. */
static void check_star(const plist *p, const uint64_t *order, size_t norder, int with_scores)
{
    refgraph g;
    ref_build(&g, p, with_scores);
    size_t m = g.m;
    size_t *visit = malloc((m + 1) * sizeof *visit), nv = 0;
    size_t *prio = malloc((m + 1) * sizeof *prio), *centre = malloc((m + 1) * sizeof *centre);
    for (size_t i = 0; i < m; i++)
        prio[i] = centre[i] = SIZE_MAX;
    for (size_t k = 0; k < norder; k++) {
        const uint64_t *f = bsearch(&order[k], g.ids, m, sizeof *g.ids, cmp_u64);
        if (f != NULL && prio[f - g.ids] == SIZE_MAX) {
            prio[f - g.ids] = nv;
            visit[nv++] = (size_t)(f - g.ids);
        }
    }
    for (size_t i = 0; i < m; i++)
        if (prio[i] == SIZE_MAX) {
            prio[i] = nv;
            visit[nv++] = i;
        }
    for (size_t k = 0; k < m; k++) {
        size_t c = visit[k];
        if (centre[c] != SIZE_MAX)
            continue;
        centre[c] = c;
        for (size_t v = 0; v < m; v++)
            if (v != c && has_edge(&g, c, v) && centre[v] == SIZE_MAX)
                centre[v] = c;
    }

    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    size_t ng = 0;
    CHECK_OK(
        simlsh_group_star(res, &ng, p->a, p->b, with_scores ? p->s : NULL, p->n, order, norder));
    CHECK(simlsh_results_count(res) == m);
    /* Expected rows: groups by centre priority, members by priority. */
    size_t row = 0, groups = 0;
    int ok = 1;
    for (size_t k = 0; k < m && ok; k++) {
        size_t c = visit[k];
        if (centre[c] != c)
            continue;
        if (offset_of(res, groups++) != row)
            ok = 0;
        for (size_t j = 0; j < m; j++) {
            size_t v = visit[j];
            if (centre[v] != c)
                continue;
            uint64_t a, b;
            double s, want = v == c ? 1.0 : g.w[v * m + c];
            if (simlsh_results_row(res, row++, &a, &b, &s) != 0 || a != g.ids[v] || b != g.ids[c] ||
                s != want)
                ok = 0;
            /* The guarantee itself: an edge to the centre. */
            if (v != c && !has_edge(&g, v, c))
                ok = 0;
        }
    }
    CHECK(ok);
    CHECK(ng == groups);
    CHECK(offset_of(res, groups) == m);
    /* Centres form a maximal independent set. */
    ok = 1;
    for (size_t x = 0; x < m; x++)
        for (size_t y = 0; y < m; y++)
            if (centre[x] == x && centre[y] == y && x != y && has_edge(&g, x, y))
                ok = 0;
    CHECK(ok);
    simlsh_results_free(res);
    free(visit);
    free(prio);
    free(centre);
    ref_free(&g);
}

/* ---- batches --------------------------------------------------------------------- */

typedef struct {
    uint64_t a, b; /* a < b */
    double s;
    size_t comp;   /* label index */
    size_t bi, bj; /* block */
} refpair;

static int cmp_refpair(const void *x, const void *y)
{
    const refpair *p = x, *q = y;
    if (p->comp != q->comp)
        return p->comp < q->comp ? -1 : 1;
    if (p->bi != q->bi)
        return p->bi < q->bi ? -1 : 1;
    if (p->bj != q->bj)
        return p->bj < q->bj ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static void check_batches(const plist *p, size_t max_docs, int with_scores)
{
    refgraph g;
    ref_build(&g, p, with_scores);
    size_t m = g.m;
    /* Component sizes and ranks by id. */
    size_t *csize = calloc(m + 1, sizeof *csize), *rank = calloc(m + 1, sizeof *rank);
    for (size_t i = 0; i < m; i++)
        rank[i] = csize[g.label[i]]++;
    refpair *rp = malloc((m * m / 2 + 1) * sizeof *rp);
    size_t np = 0;
    for (size_t x = 0; x < m; x++)
        for (size_t y = x + 1; y < m; y++) {
            if (!has_edge(&g, x, y))
                continue;
            refpair q = {g.ids[x], g.ids[y], g.w[x * m + y], g.label[x], 0, 0};
            if (max_docs != 0 && csize[g.label[x]] > max_docs) {
                q.bi = rank[x] / (max_docs / 2);
                q.bj = rank[y] / (max_docs / 2);
            }
            rp[np++] = q;
        }
    qsort(rp, np, sizeof *rp, cmp_refpair);
    size_t *start = malloc((np + 1) * sizeof *start), nb = 0, docs = 0;
    for (size_t k = 0; k < np; k++) {
        size_t c = rp[k].comp;
        int big = max_docs != 0 && csize[c] > max_docs;
        int cut;
        if (k == 0) {
            cut = 1;
        } else if (c == rp[k - 1].comp) {
            cut = big && (rp[k].bi != rp[k - 1].bi || rp[k].bj != rp[k - 1].bj);
        } else {
            int prev_big = max_docs != 0 && csize[rp[k - 1].comp] > max_docs;
            cut = max_docs == 0 || big || prev_big || docs + csize[c] > max_docs;
        }
        if (k == 0 || c != rp[k - 1].comp)
            docs = cut ? csize[c] : docs + csize[c];
        if (cut)
            start[nb++] = k;
    }

    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    size_t got_nb = 0;
    CHECK_OK(
        simlsh_group_batches(res, &got_nb, p->a, p->b, with_scores ? p->s : NULL, p->n, max_docs));
    CHECK(got_nb == nb);
    CHECK(simlsh_results_count(res) == np);
    int ok = got_nb == nb && simlsh_results_count(res) == np;
    for (size_t k = 0; k < np && ok; k++) {
        uint64_t a, b;
        double s;
        if (simlsh_results_row(res, k, &a, &b, &s) != 0 || a != rp[k].a || b != rp[k].b ||
            s != rp[k].s)
            ok = 0;
    }
    for (size_t q = 0; q < nb && ok; q++)
        if (offset_of(res, q) != start[q])
            ok = 0;
    CHECK(ok);

    /* Each batch's ids: the distinct ends of its pairs, at most max_docs. */
    uint64_t *ids = malloc((m + 1) * sizeof *ids), *want = malloc((2 * np + 1) * sizeof *want);
    ok = 1;
    for (size_t q = 0; q < nb && ok; q++) {
        size_t hi = q + 1 < nb ? start[q + 1] : np, w = 0, cnt = SIZE_MAX;
        for (size_t k = start[q]; k < hi; k++) {
            want[w++] = rp[k].a;
            want[w++] = rp[k].b;
        }
        qsort(want, w, sizeof *want, cmp_u64);
        size_t u = 0;
        for (size_t i = 0; i < w; i++)
            if (u == 0 || want[i] != want[u - 1])
                want[u++] = want[i];
        if (simlsh_group_batch_ids(NULL, 0, &cnt, res, q) != 0 || cnt != u)
            ok = 0;
        if (simlsh_group_batch_ids(ids, m, &cnt, res, q) != 0 || cnt != u ||
            memcmp(ids, want, u * sizeof *ids) != 0)
            ok = 0;
        if (max_docs != 0 && u > max_docs)
            ok = 0;
        if (u > 0 &&
            (simlsh_group_batch_ids(ids, u - 1, &cnt, res, q) != SIMLSH_EBUFSIZE || cnt != u))
            ok = 0;
    }
    CHECK(ok);
    size_t cnt;
    CHECK_RC(simlsh_group_batch_ids(ids, m, &cnt, res, nb), SIMLSH_EINVAL);
    free(ids);
    free(want);
    free(start);
    free(rp);
    free(csize);
    free(rank);
    simlsh_results_free(res);
    ref_free(&g);
}

/* ---- the input's order and repetition do not matter ------------------------- */

static void check_invariance(const plist *p, tu_rng *r)
{
    plist q = {0};
    for (size_t i = 0; i < p->n; i++) {
        int flip = (int)tu_below(r, 2);
        pl_push(&q, flip ? p->b[i] : p->a[i], flip ? p->a[i] : p->b[i], p->s[i]);
        if (tu_below(r, 3) == 0) /* repeat with a lower score: the best one counts */
            pl_push(&q, p->b[i], p->a[i], p->s[i] - 0.25);
    }
    shuffle(&q, r);
    simlsh_results *x, *y;
    CHECK_OK(simlsh_results_new(&x, NULL));
    CHECK_OK(simlsh_results_new(&y, NULL));
    size_t nx = 0, ny = 0;
    CHECK_OK(simlsh_group_components(x, &nx, p->a, p->b, p->n));
    CHECK_OK(simlsh_group_components(y, &ny, q.a, q.b, q.n));
    CHECK(nx == ny && same_results(x, y, nx));
    CHECK_OK(simlsh_group_star(x, &nx, p->a, p->b, p->s, p->n, p->b, p->n));
    CHECK_OK(simlsh_group_star(y, &ny, q.a, q.b, q.s, q.n, p->b, p->n));
    CHECK(nx == ny && same_results(x, y, nx));
    size_t budgets[] = {0, 2, 3, 8};
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        CHECK_OK(simlsh_group_batches(x, &nx, p->a, p->b, p->s, p->n, budgets[i]));
        CHECK_OK(simlsh_group_batches(y, &ny, q.a, q.b, q.s, q.n, budgets[i]));
        CHECK(nx == ny && same_results(x, y, nx));
    }
    simlsh_results_free(x);
    simlsh_results_free(y);
    pl_free(&q);
}

static void test_random(void)
{
    tu_rng r = {20261123};
    struct {
        size_t m;
        double p;
    } shapes[] = {{2, 1.0},  {5, 0.5},    {30, 0.05},   {60, 0.03},
                  {80, 0.2}, {150, 0.01}, {200, 0.004}, {120, 0.5}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        for (int rep = 0; rep < 3; rep++) {
            plist p = {0};
            gen_random(&p, &r, shapes[t].m, shapes[t].p, rep == 2);
            check_components(&p);
            check_star(&p, NULL, 0, 1);
            check_star(&p, NULL, 0, 0);
            /* Priority: a random selection of ids, with repeats and with
             * ids that are in no pair. */
            size_t norder = p.n;
            uint64_t *order = malloc((norder + 1) * sizeof *order);
            for (size_t i = 0; i < norder; i++)
                order[i] = tu_below(&r, 5) == 0 ? random_id(&r)
                                                : (tu_below(&r, 2) ? p.a : p.b)[tu_below(&r, p.n)];
            check_star(&p, order, norder, 1);
            free(order);
            size_t budgets[] = {0, 2, 3, 4, 7, 16, 1000};
            for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++)
                check_batches(&p, budgets[i], rep != 1);
            check_invariance(&p, &r);
            pl_free(&p);
        }
    }
}

/* ---- known answers on chains, stars and cliques ----------------------------------- */

static void test_chain(void)
{
    /* 0 - 1 - 2 - ... - (L-1) under scrambled ids, in random order: one
     * component; with the chain's order as priority, the centres are the
     * even positions and each takes the next one. */
    enum {
        L = 20001
    };
    tu_rng r = {7};
    uint64_t *id = malloc(L * sizeof *id);
    uint64_t minid = UINT64_MAX;
    for (size_t i = 0; i < L; i++) {
        id[i] = tu_next(&r); /* distinct with overwhelming odds: the row count checks */
        if (id[i] < minid)
            minid = id[i];
    }
    /* Ascending along the chain, so that the batches' chunks (by id) are
     * runs of the chain. */
    qsort(id, L, sizeof *id, cmp_u64);
    plist p = {0};
    for (size_t i = 0; i + 1 < L; i++)
        pl_push(&p, id[i], id[i + 1], 0.9);
    shuffle(&p, &r);
    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    size_t ng = 0;
    CHECK_OK(simlsh_group_components(res, &ng, p.a, p.b, p.n));
    CHECK(ng == 1);
    CHECK(simlsh_results_count(res) == L);
    int ok = 1;
    const uint64_t *b = simlsh_results_b(res), *a = simlsh_results_a(res);
    for (size_t i = 0; i < L; i++)
        if (b[i] != minid || (i > 0 && a[i] <= a[i - 1]))
            ok = 0;
    CHECK(ok);

    CHECK_OK(simlsh_group_star(res, &ng, p.a, p.b, p.s, p.n, id, L));
    CHECK(ng == (L + 1) / 2);
    ok = simlsh_results_count(res) == L;
    for (size_t i = 0; i < L && ok; i++) {
        uint64_t x, c;
        double s;
        simlsh_results_row(res, i, &x, &c, &s);
        if (x != id[i] || c != id[i & ~(size_t)1] || s != ((i & 1) ? 0.9 : 1.0))
            ok = 0;
    }
    CHECK(ok);
    /* Batches of at most 100 documents: the chain is cut into 401 chunks
     * of 50 (the last holds one document) and only neighbouring chunks
     * share pairs: 400 blocks within chunks and 400 links between them. */
    CHECK_OK(simlsh_group_batches(res, &ng, p.a, p.b, NULL, p.n, 100));
    CHECK(simlsh_results_count(res) == L - 1);
    CHECK(ng == 400 + 400);
    uint64_t ids[100];
    size_t cnt, most = 0;
    ok = 1;
    for (size_t q = 0; q < ng; q++) {
        if (simlsh_group_batch_ids(ids, 100, &cnt, res, q) != 0)
            ok = 0;
        if (cnt > most)
            most = cnt;
    }
    CHECK(ok);
    CHECK(most == 50);
    simlsh_results_free(res);
    pl_free(&p);
    free(id);
}

static void test_star_and_clique(void)
{
    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    /* A hub 100 with leaves 1..9. */
    plist p = {0};
    for (uint64_t leaf = 1; leaf <= 9; leaf++)
        pl_push(&p, 100, leaf, 0.8 + leaf / 100.0);
    size_t ng = 0;
    uint64_t a, b;
    double s;
    /* Ascending ids: leaf 1 is first, takes the hub; every other leaf has
     * no unplaced neighbour left and is a group of one. */
    CHECK_OK(simlsh_group_star(res, &ng, p.a, p.b, p.s, p.n, NULL, 0));
    CHECK(ng == 9);
    CHECK_OK(simlsh_results_row(res, 0, &a, &b, &s));
    CHECK(a == 1 && b == 1 && s == 1.0);
    CHECK_OK(simlsh_results_row(res, 1, &a, &b, &s));
    CHECK(a == 100 && b == 1 && s == 0.81);
    CHECK_OK(simlsh_results_row(res, 9, &a, &b, &s));
    CHECK(a == 9 && b == 9 && s == 1.0);
    /* The hub first: one group of ten, leaves by ascending id. */
    uint64_t hub = 100;
    CHECK_OK(simlsh_group_star(res, &ng, p.a, p.b, p.s, p.n, &hub, 1));
    CHECK(ng == 1 && simlsh_results_count(res) == 10);
    int ok = 1;
    for (size_t i = 0; i < 10; i++) {
        simlsh_results_row(res, i, &a, &b, &s);
        if (b != 100 || a != (i == 0 ? 100 : i) || s != (i == 0 ? 1.0 : 0.8 + i / 100.0))
            ok = 0;
    }
    CHECK(ok);
    /* The leaves in descending order as priority: leaf 9 takes the hub. */
    uint64_t desc[9];
    for (size_t i = 0; i < 9; i++)
        desc[i] = 9 - i;
    CHECK_OK(simlsh_group_star(res, &ng, p.a, p.b, p.s, p.n, desc, 9));
    CHECK(ng == 9);
    CHECK_OK(simlsh_results_row(res, 1, &a, &b, &s));
    CHECK(a == 100 && b == 9);
    CHECK_OK(simlsh_results_row(res, 2, &a, &b, &s));
    CHECK(a == 8 && b == 8);
    pl_free(&p);

    /* A clique of 40 plus the chain 1000 ~ 1001 ~ 1002 (1000 and 1002 not
     * similar): the clique is one group led by its first id; the chain
     * splits into {1000, 1001} and {1002}, where components join all three. */
    for (uint64_t x = 10; x < 50; x++)
        for (uint64_t y = x + 1; y < 50; y++)
            pl_push(&p, y, x, 0.95);
    pl_push(&p, 1000, 1001, 0.85);
    pl_push(&p, 1002, 1001, 0.85);
    CHECK_OK(simlsh_group_star(res, &ng, p.a, p.b, p.s, p.n, NULL, 0));
    CHECK(ng == 3 && simlsh_results_count(res) == 43);
    size_t off;
    CHECK_OK(simlsh_results_offset(&off, res, 1));
    CHECK(off == 40);
    CHECK_OK(simlsh_results_row(res, 41, &a, &b, &s));
    CHECK(a == 1001 && b == 1000 && s == 0.85);
    CHECK_OK(simlsh_results_row(res, 42, &a, &b, &s));
    CHECK(a == 1002 && b == 1002 && s == 1.0);
    CHECK_OK(simlsh_group_components(res, &ng, p.a, p.b, p.n));
    CHECK(ng == 2);
    CHECK_OK(simlsh_results_row(res, 42, &a, &b, &s));
    CHECK(a == 1002 && b == 1000 && s == -1.0);
    /* Batches of 0 and of 40 documents: the two components, the clique's
     * 780 pairs first; of 43 the two packed together; of 39 the clique is
     * cut into chunks of 19, 19 and 2: six blocks, then the chain. */
    size_t budgets[] = {0, 40, 43, 39}, want[] = {2, 2, 1, 7};
    for (size_t i = 0; i < 4; i++) {
        CHECK_OK(simlsh_group_batches(res, &ng, p.a, p.b, p.s, p.n, budgets[i]));
        CHECK(ng == want[i]);
        CHECK(simlsh_results_count(res) == 780 + 2);
    }
    pl_free(&p);
    simlsh_results_free(res);
}

/* ---- agreement with the index's own clustering ---------------------------------------- */

/* Without verification simlsh_index_cluster() gives the components of
 * "shares a bucket", which are the components of simlsh_index_pairs():
 * the two must agree on every id that has a pair, and the others must be
 * alone in their clusters. Documents are windows over a few feature
 * streams, so that chains and clusters of every size occur. */
static void test_index_agreement(void)
{
    enum {
        DOCS = 600,
        WIDTH = 60
    };
    simlsh_params *params;
    simlsh_index *index;
    simlsh_signature *sig;
    simlsh_results *pairs, *clusters, *groups;
    tu_rng r = {4242};
    CHECK_OK(simlsh_params_new(&params, NULL));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_BANDS, 32));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_ROWS, 4));
    CHECK_OK(simlsh_index_new(&index, params));
    CHECK_OK(simlsh_signature_new(&sig, params));
    for (uint64_t i = 0; i < DOCS; i++) {
        uint64_t f[WIDTH], stream = tu_below(&r, 40), start = tu_below(&r, 400);
        for (size_t k = 0; k < WIDTH; k++)
            f[k] = stream << 32 | (start + k);
        CHECK_OK(simlsh_signature_clear(sig));
        CHECK_OK(simlsh_signature_add_features(sig, f, WIDTH));
        CHECK_OK(simlsh_index_insert(index, i * 7919 + 3, sig));
    }
    CHECK_OK(simlsh_results_new(&pairs, NULL));
    CHECK_OK(simlsh_results_new(&clusters, NULL));
    CHECK_OK(simlsh_results_new(&groups, NULL));
    CHECK_OK(simlsh_index_pairs(pairs, index, 0, 0));
    CHECK_OK(simlsh_index_cluster(clusters, index, 0));
    size_t ng = 0, np = simlsh_results_count(pairs);
    CHECK(np > DOCS);
    CHECK_OK(
        simlsh_group_components(groups, &ng, simlsh_results_a(pairs), simlsh_results_b(pairs), np));
    CHECK(ng > 1);
    /* Cluster rows are sorted by id; look each one up among the groups. */
    const uint64_t *ga = simlsh_results_a(groups), *gb = simlsh_results_b(groups);
    size_t gn = simlsh_results_count(groups), in_pairs = 0;
    int ok = 1;
    for (size_t i = 0; i < simlsh_results_count(clusters); i++) {
        uint64_t id, label;
        simlsh_results_row(clusters, i, &id, &label, NULL);
        size_t k = 0;
        while (k < gn && ga[k] != id)
            k++;
        if (k < gn) {
            in_pairs++;
            if (gb[k] != label)
                ok = 0;
        } else if (label != id) {
            ok = 0;
        }
    }
    CHECK(ok);
    CHECK(in_pairs == gn);
    simlsh_results_free(pairs);
    simlsh_results_free(clusters);
    simlsh_results_free(groups);
    simlsh_signature_free(sig);
    simlsh_index_free(index);
    simlsh_params_free(params);
}

/* ---- errors, empty input, failing allocations ---------------------------------------- */

static void fill_known(simlsh_results *res)
{
    uint64_t a[] = {1, 2}, b[] = {2, 3};
    size_t ng;
    CHECK_OK(simlsh_group_components(res, &ng, a, b, 2));
}

static int is_known(const simlsh_results *res)
{
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    size_t off0 = 0, off1 = 0;
    return simlsh_results_count(res) == 3 && a[0] == 1 && a[1] == 2 && a[2] == 3 && b[0] == 1 &&
           b[1] == 1 && b[2] == 1 && simlsh_results_offset(&off0, res, 0) == 0 && off0 == 0 &&
           simlsh_results_offset(&off1, res, 1) == 0 && off1 == 3;
}

static void test_errors(void)
{
    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    uint64_t a[] = {1, 2, 3}, b[] = {2, 3, 3}, ord[] = {3};
    double s[] = {0.9, NAN, 0.5};
    size_t ng = 99, cnt = 99;
    uint64_t ids[4];

    CHECK_RC(simlsh_group_components(NULL, &ng, a, b, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_star(NULL, &ng, a, b, NULL, 2, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batches(NULL, &ng, a, b, NULL, 2, 0), SIMLSH_EINVAL);
    CHECK(ng == 99);

    fill_known(res);
    /* NULL arrays, self-pairs, NaN scores, a NULL order, max_docs 1. */
    CHECK_RC(simlsh_group_components(res, &ng, NULL, b, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_components(res, &ng, a, NULL, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_components(res, &ng, a, b, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_star(res, &ng, a, b, NULL, 3, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_star(res, &ng, a, b, s, 2, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_star(res, &ng, a, b, NULL, 2, NULL, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batches(res, &ng, a, b, NULL, 3, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batches(res, &ng, a, b, s, 2, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batches(res, &ng, a, b, NULL, 2, 1), SIMLSH_EINVAL);
    /* A count no memory can hold fails before the arrays are read. */
    CHECK_RC(simlsh_group_components(res, &ng, a, b, SIZE_MAX / 2), SIMLSH_ENOMEM);
    CHECK_RC(simlsh_group_star(res, &ng, a, b, NULL, SIZE_MAX, ord, 1), SIMLSH_ENOMEM);
    CHECK_RC(simlsh_group_batches(res, &ng, a, b, s, SIZE_MAX / 100, 0), SIMLSH_ENOMEM);
    CHECK(ng == 99);
    CHECK(is_known(res));

    /* batch ids of a group result work too; bad q, NULL count or res. */
    CHECK_OK(simlsh_group_batch_ids(ids, 4, &cnt, res, 0));
    CHECK(cnt == 3 && ids[0] == 1 && ids[2] == 3);
    CHECK_RC(simlsh_group_batch_ids(ids, 4, &cnt, res, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batch_ids(ids, 4, NULL, res, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batch_ids(ids, 4, &cnt, NULL, 0), SIMLSH_EINVAL);

    /* n = 0 (NULL arrays allowed): no rows, no groups. */
    CHECK_OK(simlsh_group_components(res, &ng, NULL, NULL, 0));
    CHECK(ng == 0 && simlsh_results_count(res) == 0);
    size_t off = 9;
    CHECK_OK(simlsh_results_offset(&off, res, 0));
    CHECK(off == 0);
    CHECK_RC(simlsh_group_batch_ids(ids, 4, &cnt, res, 0), SIMLSH_EINVAL);
    fill_known(res);
    CHECK_OK(simlsh_group_star(res, &ng, NULL, NULL, NULL, 0, ord, 1));
    CHECK(ng == 0 && simlsh_results_count(res) == 0);
    fill_known(res);
    CHECK_OK(simlsh_group_batches(res, NULL, NULL, NULL, NULL, 0, 10));
    CHECK(simlsh_results_count(res) == 0);
    /* ngroups may be NULL. */
    CHECK_OK(simlsh_group_components(res, NULL, a, b, 2));
    CHECK(is_known(res));
    simlsh_results_free(res);
}

typedef int (*fill_fn)(simlsh_results *res, size_t *ng, const plist *p);

static int fill_components(simlsh_results *res, size_t *ng, const plist *p)
{
    return simlsh_group_components(res, ng, p->a, p->b, p->n);
}
static int fill_star(simlsh_results *res, size_t *ng, const plist *p)
{
    return simlsh_group_star(res, ng, p->a, p->b, p->s, p->n, p->b, p->n);
}
static int fill_batches(simlsh_results *res, size_t *ng, const plist *p)
{
    return simlsh_group_batches(res, ng, p->a, p->b, p->s, p->n, 6);
}
static int fill_batches_whole(simlsh_results *res, size_t *ng, const plist *p)
{
    return simlsh_group_batches(res, ng, p->a, p->b, p->s, p->n, 0);
}

/* Fail each allocation in turn: the call reports SIMLSH_ENOMEM and leaves
 * the results as they were, until it succeeds; nothing leaks. */
static void test_oom(void)
{
    tu_rng r = {99};
    plist p = {0};
    gen_random(&p, &r, 40, 0.1, 0);
    fill_fn fills[] = {fill_components, fill_star, fill_batches, fill_batches_whole};
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
        tu_alloc_state st = {0};
        simlsh_allocator al = tu_allocator(&st);
        simlsh_results *res, *want;
        CHECK_OK(simlsh_results_new(&res, &al));
        CHECK_OK(simlsh_results_new(&want, NULL));
        size_t nwant = 0, ngot = 0;
        CHECK_OK(fills[f](want, &nwant, &p));
        CHECK(nwant >= 1);
        int ok = 1, done = 0;
        for (long k = 1; k < 200 && !done; k++) {
            fill_known(res);
            st.count = 0;
            st.fail_at = k;
            int rc = fills[f](res, &ngot, &p);
            st.fail_at = 0;
            if (rc == 0) {
                done = 1;
                if (ngot != nwant || !same_results(res, want, nwant))
                    ok = 0;
            } else if (rc != SIMLSH_ENOMEM || !is_known(res)) {
                ok = 0;
            }
            /* batch ids: scratch allocation only. */
            if (!done) {
                uint64_t ids[8];
                size_t cnt = 0;
                st.count = 0;
                st.fail_at = 1;
                if (simlsh_group_batch_ids(ids, 8, &cnt, res, 0) != SIMLSH_ENOMEM)
                    ok = 0;
                st.fail_at = 0;
            }
        }
        CHECK(done);
        CHECK(ok);
        simlsh_results_free(res);
        simlsh_results_free(want);
        CHECK(st.live == 0);
    }
    pl_free(&p);
}

int main(void)
{
    test_random();
    test_chain();
    test_star_and_clique();
    test_index_agreement();
    test_errors();
    test_oom();
    return tu_finish("group");
}
