/* Clustering of a whole index: a union-find over slots (../unionfind.h,
 * shared by the threads of one call) linked band by band, with the greedy
 * leader split of each bucket under verification (simlsh_index_cluster,
 * _v2). */
#include "internal.h"
#include "pool.h"
#include "unionfind.h"

/* Same bucket: equal fingerprint and, with stored signatures, equal rows. */
static inline int same_bucket(const struct simlsh_index *ix, uint32_t band, band_entry x,
                              band_entry y)
{
    if (x.fp != y.fp)
        return 0;
    /* A list is a whole bucket: no inline entry shares its bucket. */
    if (is_ref(x.slot) || is_ref(y.slot))
        return x.slot == y.slot;
    if (!ix->store || x.slot == y.slot)
        return 1;
    return rows_equal(ix, x.slot, band, sig_of(ix, y.slot) + (size_t)band * ix->rows);
}

/* Position of the first member of p's bucket: runs are gap-free from every
 * entry's home to the entry, so probing from home finds it before p.
 * *second (may be NULL) tells whether p is the bucket's second member. */
static size_t first_member(const struct simlsh_index *ix, uint32_t band, const band_entry *t,
                           size_t p, int *second)
{
    size_t k = fastrange(t[p].fp, ix->tcap), q = p;
    int seen = 0;
    while (k != p) {
        if (same_bucket(ix, band, t[k], t[p])) {
            if (seen++ == 0) {
                q = k;
                if (second == NULL)
                    break;
            } else {
                break;
            }
        }
        k = next_pos(k, ix->tcap);
    }
    if (second != NULL)
        *second = seen == 1;
    return q;
}

/* The greedy leader split of one bucket's members. */
static int greedy_split(const struct simlsh_index *ix, simlsh__uf_node *parent, double thr,
                        candbuf *members, candbuf *leaders)
{
    if (members->n < 2)
        return 0;
    /* Members in id order, so the split does not depend on the layout. */
    sort_small(members->v, members->n);
    leaders->n = 0;
    for (size_t i = 0; i < members->n; i++) {
        const uint32_t *mv = sig_of(ix, members->v[i].slot);
        size_t j = 0;
        for (; j < leaders->n; j++)
            if (estimate(ix, mv, sig_of(ix, leaders->v[j].slot)) >= thr)
                break;
        if (j < leaders->n) {
            simlsh__uf_union(parent, members->v[i].slot, leaders->v[j].slot);
        } else {
            int rc = cb_push(leaders, members->v[i].id, members->v[i].slot);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* Split the bucket of the entry at head: a list, or the inline entries
 * from its first member (head) to the end of the run. */
static int split_bucket(const struct simlsh_index *ix, uint32_t band, const band_entry *t,
                        size_t head, simlsh__uf_node *parent, double thr, candbuf *members,
                        candbuf *leaders)
{
    members->n = 0;
    if (is_ref(t[head].slot)) {
        const ovf_list *l = list_of(ix, t[head].slot);
        for (uint32_t i = 0; i < l->n; i++) {
            int rc = cb_push(members, ix->ids[l->slots[i]], l->slots[i]);
            if (rc < 0)
                return rc;
        }
        return greedy_split(ix, parent, thr, members, leaders);
    }
    size_t k = head;
    do {
        if (same_bucket(ix, band, t[k], t[head])) {
            int rc = cb_push(members, ix->ids[t[k].slot], t[k].slot);
            if (rc < 0)
                return rc;
        }
        k = next_pos(k, ix->tcap);
    } while (t[k].slot != NO_SLOT);
    return greedy_split(ix, parent, thr, members, leaders);
}

/* Without verify: each entry of band b links to its bucket's first
 * member, m - 1 links per bucket of m, in a sequential sweep of the table. */
static void link_band(const struct simlsh_index *ix, uint32_t b, simlsh__uf_node *parent)
{
    const band_entry *t = band_tab(ix, b);
    for (size_t p = 0; t != NULL && p < ix->tcap; p++) {
        if (t[p].slot == NO_SLOT)
            continue;
        if (is_ref(t[p].slot)) {
            const ovf_list *l = list_of(ix, t[p].slot);
            for (uint32_t i = 1; i < l->n; i++)
                simlsh__uf_union(parent, l->slots[i], l->slots[0]);
            continue;
        }
        size_t q = first_member(ix, b, t, p, NULL);
        if (q != p)
            simlsh__uf_union(parent, t[p].slot, t[q].slot);
    }
}

/* With verify: the greedy split of every bucket of band b. Only buckets
 * of two or more members need one: each is handled once, when the sweep
 * meets its second member. */
static int split_band(const struct simlsh_index *ix, uint32_t b, simlsh__uf_node *parent,
                      double thr, candbuf *members, candbuf *leaders)
{
    const band_entry *t = band_tab(ix, b);
    for (size_t p = 0; t != NULL && p < ix->tcap; p++) {
        int second;
        if (t[p].slot == NO_SLOT)
            continue;
        size_t q = p;
        if (!is_ref(t[p].slot)) {
            q = first_member(ix, b, t, p, &second);
            if (q == p || !second)
                continue;
        }
        int rc = split_bucket(ix, b, t, q, parent, thr, members, leaders);
        if (rc < 0)
            return rc;
    }
    return 0;
}

typedef struct {
    candbuf members, leaders;
} cluster_scratch;

typedef struct {
    const struct simlsh_index *ix;
    simlsh__uf_node *parent;
    double thr; /* > 0: verify */
    cluster_scratch *scratch;
} cluster_job;

/* One band per unit: the bands' tables are independent, and only the
 * union-find is shared. */
static int cluster_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    cluster_job *j = ctx;
    if (j->thr <= 0) {
        link_band(j->ix, (uint32_t)unit, j->parent);
        return 0;
    }
    cluster_scratch *sc = &j->scratch[worker];
    return split_band(j->ix, (uint32_t)unit, j->parent, j->thr, &sc->members, &sc->leaders);
}

int simlsh_index_cluster_v2(simlsh_results *res, const simlsh_index *index, int flags,
                            double threshold, uint32_t nthreads)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    double thr;
    int rc = whole_index_args(index, flags, threshold, &thr);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &index->params.alloc;
    uint32_t workers = simlsh__par_workers(nthreads, index->bands);
    if (index->count < 256) /* a thread costs more than such a pass */
        workers = 1;
    simlsh__lockal la;
    simlsh__lockal_init(&la, al);
    cluster_job j = {index, NULL, thr, NULL};
    cand *docs = NULL, *tmp = NULL;
    uint32_t *minslot = NULL;
    if ((docs = simlsh__calloc(al, index->count, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, index->count, sizeof *tmp)) == NULL ||
        (j.parent = simlsh__calloc(al, index->nslots, sizeof *j.parent)) == NULL ||
        (minslot = simlsh__calloc(al, index->nslots, sizeof *minslot)) == NULL ||
        (j.scratch = simlsh__calloc(al, workers, sizeof *j.scratch)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    for (uint32_t w = 0; w < workers; w++) {
        simlsh__lvec_init(&j.scratch[w].members, &la.al);
        simlsh__lvec_init(&j.scratch[w].leaders, &la.al);
    }
    simlsh__uf_init(j.parent, index->nslots);
    for (size_t s = 0; s < index->nslots; s++)
        minslot[s] = NO_SLOT;
    rc = simlsh__par_run(workers, index->bands, cluster_unit, &j, NULL);
    if (rc < 0)
        goto out;

    simlsh__ix_live_sorted(index, docs, tmp);
    rc = simlsh__results_reserve(res, index->count, 0);
    if (rc < 0)
        goto out;
    /* Ids ascend, so the first member seen of each cluster has its
     * smallest id: that is the label. */
    for (size_t i = 0; i < index->count; i++) {
        uint32_t r = simlsh__uf_find(j.parent, docs[i].slot);
        if (minslot[r] == NO_SLOT)
            minslot[r] = docs[i].slot;
        res->a[i] = docs[i].id;
        res->b[i] = index->ids[minslot[r]];
        res->score[i] = -1.0;
    }
    res->count = index->count;
    res->nq = 0;
    res->truncated = 0;
out:
    for (uint32_t w = 0; j.scratch != NULL && w < workers; w++) {
        simlsh__lvec_free(&j.scratch[w].members);
        simlsh__lvec_free(&j.scratch[w].leaders);
    }
    simlsh__free_sized(al, j.scratch, workers * sizeof *j.scratch);
    simlsh__free_sized(al, docs, index->count * sizeof *docs);
    simlsh__free_sized(al, tmp, index->count * sizeof *tmp);
    simlsh__free_sized(al, (void *)j.parent, index->nslots * sizeof *j.parent);
    simlsh__free_sized(al, minslot, index->nslots * sizeof *minslot);
    simlsh__lockal_done(&la);
    return rc;
}

int simlsh_index_cluster(simlsh_results *res, const simlsh_index *index, int flags)
{
    return simlsh_index_cluster_v2(res, index, flags, 0.0, 1);
}
