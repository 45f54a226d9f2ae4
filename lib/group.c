/* Grouping over lists of pairs (a, b): connected components, star groups
 * that are safe to delete from, and batches of candidate pairs for exact
 * verification in bounded memory. Every output is a function of the set of
 * pairs (and of the priority order for stars), never of the input order,
 * so the tool, MPI ranks and bindings that share these calls agree. */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "radix.h"
#include "results.h"
#include "unionfind.h"

#define NONE UINT32_MAX

/* Scratch bytes per input pair at the peak (ids and their radix copy:
 * 32; dense endpoints and lookup table: 16; sort keys, values and copies:
 * 40), with headroom; a larger n cannot be allocated, so it fails before
 * any read. */
#define BYTES_PER_PAIR 128

/* ---- input checks and the dense id map ------------------------------------ */

static int check_pairs(const uint64_t *a, const uint64_t *b, const double *score, size_t n)
{
    if (n == 0)
        return 0;
    if (a == NULL || b == NULL)
        return SIMLSH_EINVAL;
    if (n > SIZE_MAX / BYTES_PER_PAIR)
        return SIMLSH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (a[i] == b[i] || (score != NULL && isnan(score[i])))
            return SIMLSH_EINVAL;
    return 0;
}

/* The distinct ids of the pairs, ascending, and every pair's endpoints as
 * indices into them: dense indices keep the id order. */
typedef struct {
    const simlsh_allocator *al;
    uint64_t *ids;
    size_t m;
    uint32_t *ea, *eb;
    /* Lookup table: ids[start[x] .. start[x + 1]) are the ids whose
     * (id - ids[0]) >> shift is x; 2^k >= m buckets, so evenly spread ids
     * (random or consecutive) take one or two probes, and any other
     * spread is no worse than a binary search over all of them. */
    uint32_t *start;
    unsigned shift;
    size_t nids, n, nstart; /* elements in ids, ea and eb, start: their sizes */
} dense_map;

static void dense_free(dense_map *d)
{
    simlsh__free_sized(d->al, d->ids, d->nids * sizeof *d->ids);
    simlsh__free_sized(d->al, d->ea, d->n * sizeof *d->ea);
    simlsh__free_sized(d->al, d->eb, d->n * sizeof *d->eb);
    simlsh__free_sized(d->al, d->start, d->nstart * sizeof *d->start);
}

static uint32_t dense_find(const dense_map *d, uint64_t id)
{
    if (d->m == 0 || id < d->ids[0] || id > d->ids[d->m - 1])
        return NONE;
    uint64_t x = (id - d->ids[0]) >> d->shift;
    size_t lo = d->start[x], len = d->start[x + 1] - lo;
    while (len > 0) {
        size_t half = len / 2;
        if (d->ids[lo + half] < id) {
            lo += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    return lo < d->m && d->ids[lo] == id ? (uint32_t)lo : NONE;
}

static void dense_index(dense_map *d, const uint64_t *a, const uint64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d->ea[i] = dense_find(d, a[i]);
        d->eb[i] = dense_find(d, b[i]);
    }
}

/* dense_build() when the ids span fewer than 2n values (as a program's
 * document numbers do): one bucket per value of the span, each holding its
 * id or nothing, so the ids need no sort and no copy of 2n of them (on man
 * pages, a third of the batches' peak memory). */
static int dense_build_range(dense_map *d, const simlsh_allocator *al, const uint64_t *a,
                             const uint64_t *b, size_t n, uint64_t lo, uint64_t hi)
{
    size_t span = (size_t)(hi - lo) + 1;
    d->nstart = span + 1;
    d->n = n;
    if ((d->start = simlsh__calloc(al, span + 1, sizeof *d->start)) == NULL)
        return SIMLSH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        d->start[a[i] - lo + 1] = 1;
        d->start[b[i] - lo + 1] = 1;
    }
    for (size_t x = 0; x < span; x++)
        d->start[x + 1] += d->start[x];
    d->m = d->start[span];
    d->nids = d->m;
    d->shift = 0;
    if ((d->ids = simlsh__calloc(al, d->m, sizeof *d->ids)) == NULL ||
        (d->ea = simlsh__calloc(al, n, sizeof *d->ea)) == NULL ||
        (d->eb = simlsh__calloc(al, n, sizeof *d->eb)) == NULL) {
        dense_free(d);
        return SIMLSH_ENOMEM;
    }
    for (size_t x = 0; x < span; x++)
        if (d->start[x + 1] != d->start[x])
            d->ids[d->start[x]] = lo + x;
    dense_index(d, a, b, n);
    return 0;
}

static int dense_build(dense_map *d, const simlsh_allocator *al, const uint64_t *a,
                       const uint64_t *b, size_t n)
{
    memset(d, 0, sizeof *d);
    d->al = al;
    if (n == 0)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = a[i] < b[i] ? a[i] : b[i], y = a[i] < b[i] ? b[i] : a[i];
        lo = x < lo ? x : lo;
        hi = y > hi ? y : hi;
    }
    if (hi - lo < 2 * (uint64_t)n && hi - lo < NONE - 1)
        return dense_build_range(d, al, a, b, n, lo, hi);
    uint64_t *tmp = simlsh__calloc(al, 2 * n, sizeof *tmp);
    d->ids = simlsh__calloc(al, 2 * n, sizeof *d->ids);
    d->nids = 2 * n;
    d->n = n;
    if (tmp == NULL || d->ids == NULL) {
        simlsh__free_sized(al, tmp, 2 * n * sizeof *tmp);
        dense_free(d);
        return SIMLSH_ENOMEM;
    }
    memcpy(d->ids, a, n * sizeof *a);
    memcpy(d->ids + n, b, n * sizeof *b);
    simlsh__radix_sort64(d->ids, NULL, tmp, NULL, 2 * n);
    simlsh__free_sized(al, tmp, 2 * n * sizeof *tmp);
    size_t m = 1;
    for (size_t i = 1; i < 2 * n; i++)
        if (d->ids[i] != d->ids[m - 1])
            d->ids[m++] = d->ids[i];
    d->m = m;
    /* Give back the slots of repeated ids before the next allocations. */
    uint64_t *shrunk = simlsh__realloc_sized(al, d->ids, m * sizeof *d->ids, 2 * n * sizeof *d->ids,
                                             m * sizeof *d->ids);
    if (shrunk == NULL) {
        dense_free(d);
        return SIMLSH_ENOMEM;
    }
    d->ids = shrunk;
    d->nids = m;
    unsigned k = 0, bits = 0;
    while (((size_t)1 << k) < m)
        k++;
    for (uint64_t range = d->ids[m - 1] - d->ids[0]; range != 0; range >>= 1)
        bits++;
    d->shift = bits > k ? bits - k : 0;
    size_t nb = (size_t)1 << k;
    /* Dense indices are 32-bit, NONE excluded. */
    d->nstart = nb + 1;
    if (m >= NONE || (d->start = simlsh__calloc(al, nb + 1, sizeof *d->start)) == NULL ||
        (d->ea = simlsh__calloc(al, n, sizeof *d->ea)) == NULL ||
        (d->eb = simlsh__calloc(al, n, sizeof *d->eb)) == NULL) {
        dense_free(d);
        return SIMLSH_ENOMEM;
    }
    size_t j = 0;
    for (size_t x = 0; x <= nb; x++) {
        while (j < m && (d->ids[j] - d->ids[0]) >> d->shift < x)
            j++;
        d->start[x] = (uint32_t)j;
    }
    dense_index(d, a, b, n);
    return 0;
}

/* ---- union-find and component numbers -------------------------------------- */

/* comp[i] = number of i's component, numbered in the order of their
 * smallest members, i.e. by label; *ncomp receives the count. The
 * union-find (unionfind.h) halves paths, so long chains stay cheap for any
 * pair order, and the numbers do not depend on which member is a root. */
static int components_of(uint32_t *comp, size_t *ncomp, const dense_map *d, size_t n)
{
    simlsh__uf_node *parent = simlsh__calloc(d->al, d->m, sizeof *parent);
    uint32_t *num = simlsh__calloc(d->al, d->m, sizeof *num);
    if (parent == NULL || num == NULL) {
        simlsh__free_sized(d->al, (void *)parent, d->m * sizeof *parent);
        simlsh__free_sized(d->al, num, d->m * sizeof *num);
        return SIMLSH_ENOMEM;
    }
    simlsh__uf_init(parent, d->m);
    for (size_t i = 0; i < n; i++)
        simlsh__uf_union(parent, d->ea[i], d->eb[i]);
    /* num[] is root -> component number. */
    for (size_t i = 0; i < d->m; i++)
        num[i] = NONE;
    uint32_t nc = 0;
    for (size_t i = 0; i < d->m; i++) {
        uint32_t r = simlsh__uf_find(parent, (uint32_t)i);
        if (num[r] == NONE)
            num[r] = nc++;
        comp[i] = num[r];
    }
    *ncomp = nc;
    simlsh__free_sized(d->al, (void *)parent, d->m * sizeof *parent);
    simlsh__free_sized(d->al, num, d->m * sizeof *num);
    return 0;
}

/* ---- connected components ------------------------------------------------- */

int simlsh_group_components(simlsh_results *res, size_t *ngroups, const uint64_t *a,
                            const uint64_t *b, size_t n)
{
    SIMLSH__CHECK_RESULTS(res);
    if (res == NULL)
        return SIMLSH_EINVAL;
    int rc = check_pairs(a, b, NULL, n);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &res->alloc;
    dense_map d;
    uint32_t *comp = NULL;
    size_t *start = NULL, nc = 0;
    if ((rc = dense_build(&d, al, a, b, n)) < 0)
        return rc;
    simlsh__free_sized(al, d.start, d.nstart * sizeof *d.start); /* no lookups after the build */
    d.start = NULL;
    if (d.m > 0 && ((comp = simlsh__calloc(al, d.m, sizeof *comp)) == NULL ||
                    (rc = components_of(comp, &nc, &d, n)) < 0 ||
                    (start = simlsh__calloc(al, nc + 1, sizeof *start)) == NULL)) {
        rc = rc < 0 ? rc : SIMLSH_ENOMEM;
        goto out;
    }
    if ((rc = simlsh__results_reserve(res, d.m, nc)) < 0)
        goto out;
    /* Counting sort by component; ascending ids within each. */
    for (size_t i = 0; i < d.m; i++)
        start[comp[i] + 1]++;
    for (size_t c = 0; c < nc; c++) {
        start[c + 1] += start[c];
        res->offsets[c] = start[c];
    }
    for (size_t i = 0; i < d.m; i++) {
        size_t p = start[comp[i]]++;
        res->a[p] = d.ids[i];
        res->score[p] = -1.0;
    }
    /* The first row of each component holds its smallest id: the label. */
    for (size_t c = 0; c < nc; c++) {
        size_t end = c + 1 < nc ? res->offsets[c + 1] : d.m;
        for (size_t p = res->offsets[c]; p < end; p++)
            res->b[p] = res->a[res->offsets[c]];
    }
    res->count = d.m;
    res->nq = nc;
    res->truncated = 0;
    if (ngroups != NULL)
        *ngroups = nc;
out:
    dense_free(&d);
    simlsh__free_sized(al, comp, d.m * sizeof *comp);
    simlsh__free_sized(al, start, (nc + 1) * sizeof *start);
    return rc;
}

/* ---- star groups ---------------------------------------------------------- */

int simlsh_group_star(simlsh_results *res, size_t *ngroups, const uint64_t *a, const uint64_t *b,
                      const double *score, size_t n, const uint64_t *order, size_t norder)
{
    SIMLSH__CHECK_RESULTS(res);
    if (res == NULL || (order == NULL && norder > 0))
        return SIMLSH_EINVAL;
    int rc = check_pairs(a, b, score, n);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &res->alloc;
    dense_map d;
    uint32_t *visit = NULL, *adj = NULL, *centre = NULL, *group = NULL;
    size_t *first = NULL, *start = NULL;
    double *adjs = NULL, *mscore = NULL;
    size_t m, ng = 0;
    if ((rc = dense_build(&d, al, a, b, n)) < 0)
        return rc;
    m = d.m;
    /* Allocated even for m = 0: the adjacency offsets have m + 1 entries. */
    if ((visit = simlsh__calloc(al, m, sizeof *visit)) == NULL ||
        (centre = simlsh__calloc(al, m, sizeof *centre)) == NULL ||
        (group = simlsh__calloc(al, m, sizeof *group)) == NULL ||
        (mscore = simlsh__calloc(al, m, sizeof *mscore)) == NULL ||
        (first = simlsh__calloc(al, m + 1, sizeof *first)) == NULL ||
        (adj = simlsh__calloc(al, 2 * n, sizeof *adj)) == NULL ||
        (score != NULL && (adjs = simlsh__calloc(al, 2 * n, sizeof *adjs)) == NULL)) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }

    /* Priority: the caller's order (first occurrence counts; ids without
     * pairs are ignored), then the rest by ascending id. centre[] marks
     * who is placed while the visiting order is built. */
    size_t nv = 0;
    for (size_t i = 0; i < m; i++)
        centre[i] = NONE;
    for (size_t k = 0; k < norder; k++) {
        uint32_t x = dense_find(&d, order[k]);
        if (x != NONE && centre[x] == NONE) {
            centre[x] = 0;
            visit[nv++] = x;
        }
    }
    for (size_t i = 0; i < m; i++) {
        if (centre[i] == NONE)
            visit[nv++] = (uint32_t)i;
        centre[i] = NONE;
    }
    simlsh__free_sized(al, d.start, d.nstart * sizeof *d.start); /* no lookups after the order */
    d.start = NULL;

    /* Adjacency lists (both directions). */
    for (size_t i = 0; i < n; i++) {
        first[d.ea[i] + 1]++;
        first[d.eb[i] + 1]++;
    }
    for (size_t i = 0; i < m; i++)
        first[i + 1] += first[i];
    for (size_t i = 0; i < n; i++) {
        size_t pa = first[d.ea[i]]++, pb = first[d.eb[i]]++;
        adj[pa] = d.eb[i];
        adj[pb] = d.ea[i];
        if (adjs != NULL)
            adjs[pa] = adjs[pb] = score[i];
    }
    /* first[i] now holds the end of i's list, which is the start of i+1's. */
    for (size_t i = m; i > 0; i--)
        first[i] = first[i - 1];
    first[0] = 0;

    /* Each unplaced document, by priority, becomes a centre and takes every
     * unplaced neighbour. A member's score is its best edge to the centre
     * (duplicate pairs may carry different scores). */
    for (size_t k = 0; k < m; k++) {
        uint32_t c = visit[k];
        if (centre[c] != NONE)
            continue;
        centre[c] = c;
        group[c] = (uint32_t)ng;
        mscore[c] = 1.0;
        for (size_t e = first[c]; e < first[c + 1]; e++) {
            uint32_t v = adj[e];
            double s = adjs != NULL ? adjs[e] : -1.0;
            if (centre[v] == NONE) {
                centre[v] = c;
                group[v] = (uint32_t)ng;
                mscore[v] = s;
            } else if (centre[v] == c && s > mscore[v]) {
                mscore[v] = s;
            }
        }
        ng++;
    }
    simlsh__free_sized(al, adj, 2 * n * sizeof *adj);
    adj = NULL;
    simlsh__free_sized(al, adjs, 2 * n * sizeof *adjs);
    adjs = NULL;

    if ((start = simlsh__calloc(al, ng + 1, sizeof *start)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    if ((rc = simlsh__results_reserve(res, m, ng)) < 0)
        goto out;
    /* Rows by group (centres' priority), then by member priority; the
     * centre is its group's first row, as it outranks every member. */
    for (size_t i = 0; i < m; i++)
        start[group[i] + 1]++;
    for (size_t g = 0; g < ng; g++) {
        start[g + 1] += start[g];
        res->offsets[g] = start[g];
    }
    for (size_t k = 0; k < m; k++) {
        uint32_t x = visit[k];
        size_t p = start[group[x]]++;
        res->a[p] = d.ids[x];
        res->b[p] = d.ids[centre[x]];
        res->score[p] = mscore[x];
    }
    res->count = m;
    res->nq = ng;
    res->truncated = 0;
    if (ngroups != NULL)
        *ngroups = ng;
out:
    dense_free(&d);
    simlsh__free_sized(al, visit, m * sizeof *visit);
    simlsh__free_sized(al, adj, 2 * n * sizeof *adj);
    simlsh__free_sized(al, adjs, 2 * n * sizeof *adjs);
    simlsh__free_sized(al, centre, m * sizeof *centre);
    simlsh__free_sized(al, group, m * sizeof *group);
    simlsh__free_sized(al, mscore, m * sizeof *mscore);
    simlsh__free_sized(al, first, (m + 1) * sizeof *first);
    simlsh__free_sized(al, start, (ng + 1) * sizeof *start);
    return rc;
}

/* ---- batches of candidate pairs ------------------------------------------- */

int simlsh_group_batches(simlsh_results *res, size_t *nbatches, const uint64_t *a,
                         const uint64_t *b, const double *score, size_t n, size_t max_docs)
{
    SIMLSH__CHECK_RESULTS(res);
    if (res == NULL || max_docs == 1)
        return SIMLSH_EINVAL;
    int rc = check_pairs(a, b, score, n);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &res->alloc;
    dense_map d;
    uint32_t *comp = NULL, *rank = NULL, *csize = NULL;
    uint64_t *key = NULL, *sub = NULL, *idx = NULL, *tk = NULL, *tv = NULL, *bounds = NULL;
    double *sc = NULL;
    size_t *cstart = NULL, nc = 0, np = 0, nb = 0, nsc = 0; /* nsc: sc's entries */
    if ((rc = dense_build(&d, al, a, b, n)) < 0)
        return rc;
    /* Arrays of n entries dominate: each is made as late and freed as
     * early as it can be, so that at most four of them (eight bytes an
     * entry, the caller's two included) meet, and the output's columns
     * meet only three. */
    simlsh__free_sized(al, d.start, d.nstart * sizeof *d.start);
    d.start = NULL;
    if (n > 0 && ((comp = simlsh__calloc(al, d.m, sizeof *comp)) == NULL ||
                  (rc = components_of(comp, &nc, &d, n)) < 0 ||
                  (csize = simlsh__calloc(al, nc, sizeof *csize)) == NULL ||
                  (cstart = simlsh__calloc(al, nc + 1, sizeof *cstart)) == NULL ||
                  (key = simlsh__calloc(al, n, sizeof *key)) == NULL ||
                  /* without scores the first sort needs no payload, and
                   * idx and tv are made only if a component is cut */
                  (score != NULL && ((idx = simlsh__calloc(al, n, sizeof *idx)) == NULL ||
                                     (tv = simlsh__calloc(al, n, sizeof *tv)) == NULL)))) {
        rc = rc < 0 ? rc : SIMLSH_ENOMEM;
        goto out;
    }

    /* Pairs as (smaller, larger) dense indices, sorted, duplicates merged
     * keeping the best score. */
    for (size_t i = 0; i < n; i++) {
        uint64_t x = d.ea[i], y = d.eb[i];
        key[i] = x < y ? x << 32 | y : y << 32 | x;
        if (idx != NULL)
            idx[i] = i;
    }
    simlsh__free_sized(al, d.ea, d.n * sizeof *d.ea);
    simlsh__free_sized(al, d.eb, d.n * sizeof *d.eb);
    d.ea = d.eb = NULL;
    /* the sort's scratch only now, with the dense pairs gone */
    if ((tk = simlsh__calloc(al, n, sizeof *tk)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    if (idx != NULL)
        simlsh__radix_sort64(key, idx, tk, tv, n);
    else
        simlsh__radix_sort64(key, NULL, tk, NULL, n);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || key[i] != key[np - 1])
            np++;
    /* Without scores there is nothing to keep per pair: the rows get -1. */
    nsc = score != NULL ? np : 0;
    if (nsc > 0 && (sc = simlsh__calloc(al, nsc, sizeof *sc)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    np = 0;
    for (size_t i = 0; i < n; i++) {
        double s = score != NULL ? score[idx[i]] : -1.0;
        if (np > 0 && key[i] == key[np - 1]) {
            if (sc != NULL && s > sc[np - 1])
                sc[np - 1] = s;
            continue;
        }
        key[np] = key[i];
        if (sc != NULL)
            sc[np] = s;
        np++;
    }

    /* A component of more than max_docs documents is cut, by ascending
     * id, into chunks of max_docs / 2, and its pairs go to blocks (i, j)
     * by the chunks of their ends: a block touches at most max_docs. */
    int any_big = 0;
    for (size_t i = 0; i < d.m; i++)
        if (++csize[comp[i]] > max_docs && max_docs != 0)
            any_big = 1;
    if (any_big) {
        uint32_t half = max_docs / 2 < NONE ? (uint32_t)(max_docs / 2) : NONE;
        if ((rank = simlsh__calloc(al, d.m, sizeof *rank)) == NULL ||
            (sub = simlsh__calloc(al, np, sizeof *sub)) == NULL ||
            (idx == NULL && (idx = simlsh__calloc(al, n, sizeof *idx)) == NULL) ||
            (tv == NULL && (tv = simlsh__calloc(al, n, sizeof *tv)) == NULL)) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < d.m; i++)
            rank[i] = cstart[comp[i]]++;
        memset(cstart, 0, (nc + 1) * sizeof *cstart);
        for (size_t j = 0; j < np; j++) {
            uint32_t lo = (uint32_t)(key[j] >> 32), hi = (uint32_t)key[j];
            sub[j] = 0;
            if (csize[comp[lo]] > max_docs)
                sub[j] = (uint64_t)(rank[lo] / half) << 32 | (rank[hi] / half);
            idx[j] = j;
        }
        simlsh__free_sized(al, rank, d.m * sizeof *rank);
        rank = NULL;
        /* Stable by block first; the stable pass by component follows. */
        simlsh__radix_sort64(sub, idx, tk, tv, np);
    } else if (idx != NULL) {
        for (size_t j = 0; j < np; j++)
            idx[j] = j;
    }

    /* Order (component, block, a, b): tk[] receives the pairs' order, and
     * tv[] their blocks when a component is cut. */
    for (size_t j = 0; j < np; j++)
        cstart[comp[key[j] >> 32] + 1]++;
    for (size_t c = 0; c < nc; c++)
        cstart[c + 1] += cstart[c];
    for (size_t k = 0; k < np; k++) {
        uint64_t j = idx != NULL ? idx[k] : k;
        size_t p = cstart[comp[key[j] >> 32]]++;
        tk[p] = j;
        if (tv != NULL)
            tv[p] = any_big ? sub[k] : 0;
    }

    /* Batch boundaries: every block of a cut component is a batch; whole
     * components are packed, in label order, while they fit max_docs (with
     * max_docs 0, one batch per component). Counted first, then written to
     * an array of their own. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && (bounds = simlsh__calloc(al, nb > 0 ? nb : 1, sizeof *bounds)) == NULL) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        size_t docs = 0, q = 0;
        uint32_t prev_c = NONE;
        int prev_big = 0;
        for (size_t k = 0; k < np; k++) {
            uint32_t c = comp[key[tk[k]] >> 32];
            int big = max_docs != 0 && csize[c] > max_docs;
            int cut;
            if (k == 0)
                cut = 1;
            else if (c == prev_c)
                cut = big && tv[k] != tv[k - 1];
            else
                cut = max_docs == 0 || big || prev_big || docs + csize[c] > max_docs;
            if (c != prev_c)
                docs = cut ? csize[c] : docs + csize[c];
            if (cut) {
                if (pass == 1)
                    bounds[q] = k;
                q++;
            }
            prev_c = c;
            prev_big = big;
        }
        nb = q;
    }
    simlsh__free_sized(al, tv, n * sizeof *tv);
    simlsh__free_sized(al, sub, np * sizeof *sub);
    simlsh__free_sized(al, comp, d.m * sizeof *comp);
    tv = sub = NULL;
    comp = NULL;
    /* The pairs in output order go to tk and their scores (bits) to idx,
     * so that key and sc are freed before the output's columns are made
     * (and idx too when there are no scores). */
    for (size_t k = 0; k < np; k++) {
        uint64_t j = tk[k];
        if (sc != NULL)
            memcpy(&idx[k], &sc[j], sizeof idx[k]);
        tk[k] = key[j];
    }
    simlsh__free_sized(al, key, n * sizeof *key);
    simlsh__free_sized(al, sc, nsc * sizeof *sc);
    key = NULL;
    sc = NULL;
    if (nsc == 0) {
        simlsh__free_sized(al, idx, n * sizeof *idx);
        idx = NULL;
    }

    if ((rc = simlsh__results_reserve(res, np, nb)) < 0)
        goto out;
    for (size_t k = 0; k < np; k++) {
        res->a[k] = d.ids[tk[k] >> 32];
        res->b[k] = d.ids[(uint32_t)tk[k]];
        res->score[k] = -1.0;
        if (idx != NULL)
            memcpy(&res->score[k], &idx[k], sizeof res->score[k]);
    }
    for (size_t q = 0; q < nb; q++)
        res->offsets[q] = bounds[q];
    res->count = np;
    res->nq = nb;
    res->truncated = 0;
    if (nbatches != NULL)
        *nbatches = nb;
out:
    dense_free(&d);
    simlsh__free_sized(al, comp, d.m * sizeof *comp);
    simlsh__free_sized(al, rank, d.m * sizeof *rank);
    simlsh__free_sized(al, csize, nc * sizeof *csize);
    simlsh__free_sized(al, cstart, (nc + 1) * sizeof *cstart);
    simlsh__free_sized(al, key, n * sizeof *key);
    simlsh__free_sized(al, sub, np * sizeof *sub);
    simlsh__free_sized(al, idx, n * sizeof *idx);
    simlsh__free_sized(al, bounds, (nb > 0 ? nb : 1) * sizeof *bounds);
    simlsh__free_sized(al, tk, n * sizeof *tk);
    simlsh__free_sized(al, tv, n * sizeof *tv);
    simlsh__free_sized(al, sc, nsc * sizeof *sc);
    return rc;
}

int simlsh_group_batch_ids(uint64_t *ids, size_t cap, size_t *count, const simlsh_results *res,
                           size_t q)
{
    SIMLSH__CHECK_RESULTS(res);
    if (count == NULL || res == NULL || q >= res->nq)
        return SIMLSH_EINVAL;
    size_t lo = res->offsets[q], hi = q + 1 < res->nq ? res->offsets[q + 1] : res->count;
    if (lo > hi || hi > res->count)
        return SIMLSH_EINVAL;
    size_t np = hi - lo, u = 0;
    if (np > SIZE_MAX / 4)
        return SIMLSH_ENOMEM;
    const simlsh_allocator *al = &res->alloc;
    uint64_t *k = simlsh__calloc(al, 2 * np, sizeof *k), *t = simlsh__calloc(al, 2 * np, sizeof *t);
    if (k == NULL || t == NULL) {
        simlsh__free_sized(al, k, 2 * np * sizeof *k);
        simlsh__free_sized(al, t, 2 * np * sizeof *t);
        return SIMLSH_ENOMEM;
    }
    memcpy(k, res->a + lo, np * sizeof *k);
    memcpy(k + np, res->b + lo, np * sizeof *k);
    simlsh__radix_sort64(k, NULL, t, NULL, 2 * np);
    for (size_t i = 0; i < 2 * np; i++)
        if (u == 0 || k[i] != k[u - 1])
            k[u++] = k[i];
    int rc = 0;
    *count = u;
    if (ids != NULL) {
        if (cap < u)
            rc = SIMLSH_EBUFSIZE;
        else if (u > 0)
            memcpy(ids, k, u * sizeof *ids);
    }
    simlsh__free_sized(al, k, 2 * np * sizeof *k);
    simlsh__free_sized(al, t, 2 * np * sizeof *t);
    return rc;
}
