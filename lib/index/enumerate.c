/* Whole-index passes: all pairs and clustering. */
#include "index.h"

/* ---- sorting ------------------------------------------------------------------- */

/* LSD radix sort by id for the whole-index passes (cluster, pairs):
 * linear, and passes whose byte is the same for every id are skipped, so
 * small ids cost three or four passes. */
static void radix_sort(cand *v, cand *tmp, size_t n)
{
    if (n <= 256) {
        sort_small(v, n);
        return;
    }
    size_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            hist[d][(v[i].id >> (8 * d)) & 255]++;
    cand *src = v, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        if (hist[d][(src[0].id >> (8 * d)) & 255] == n)
            continue;
        size_t sum = 0;
        for (int k = 0; k < 256; k++) {
            size_t c = hist[d][k];
            hist[d][k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[hist[d][(src[i].id >> (8 * d)) & 255]++] = src[i];
        cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Live documents as (id, slot), sorted by id; tmp is scratch of n. */
static void live_sorted(const struct simlsh_index *ix, cand *v, cand *tmp)
{
    size_t n = 0;
    for (size_t p = 0; p < ix->idcap; p++) {
        if (ix->idmap[p].slot != NO_SLOT) {
            v[n].id = ix->idmap[p].id;
            v[n].slot = ix->idmap[p].slot;
            v[n].eq = 0;
            n++;
        }
    }
    radix_sort(v, tmp, n);
}

/* ---- pairs ------------------------------------------------------------------------- */

/* Every document's band fingerprints, read off the tables (the only place
 * they live when signatures are not stored). */
static void gather_fps(const struct simlsh_index *ix, uint32_t *fps)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            if (!is_ref(t[p].slot)) {
                fps[(size_t)t[p].slot * ix->bands + b] = t[p].fp;
                continue;
            }
            const ovf_list *l = list_of(ix, t[p].slot);
            for (uint32_t i = 0; i < l->n; i++)
                fps[(size_t)l->slots[i] * ix->bands + b] = t[p].fp;
        }
    }
}

int simlsh_index_pairs(simlsh_results *res, const simlsh_index *index, int flags,
                       size_t max_pairs)
{
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &index->params.alloc;
    cand *docs = NULL, *tmp = NULL;
    uint32_t *fps = NULL;
    simlsh__builder bd;
    simlsh__builder_init(&bd, res);
    hitbuf hits;
    candbuf cb;
    simlsh__lvec_init(&hits, al);
    simlsh__lvec_init(&cb, al);
    int truncated = 0;
    size_t fbytes;
    if ((docs = simlsh__calloc(al, index->count, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, index->count, sizeof *tmp)) == NULL ||
        !simlsh__mul_ok(index->nslots, (size_t)index->bands * sizeof *fps, &fbytes) ||
        (fps = simlsh__malloc(al, fbytes)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    live_sorted(index, docs, tmp);
    simlsh__free(al, tmp);
    tmp = NULL;
    gather_fps(index, fps);

    /* Documents in id order, each with its larger-id candidates in id
     * order: the pairs come out sorted by (a, b), so a limit keeps the
     * same prefix whatever the table layout (a loaded index agrees). */
    for (size_t i = 0; i < index->count && !truncated; i++) {
        const uint32_t *vals = index->store ? sig_of(index, docs[i].slot) : NULL;
        rc = query_buckets(index, fps + (size_t)docs[i].slot * index->bands, vals,
                           flags & SIMLSH_QUERY_VERIFY, &hits, &cb);
        if (rc < 0)
            goto out;
        rc = simlsh__builder_reserve(&bd, cb.n);
        if (rc < 0)
            goto out;
        for (size_t j = 0; j < cb.n; j++) {
            if (cb.v[j].id <= docs[i].id)
                continue;
            if (max_pairs != 0 && bd.n == max_pairs) {
                truncated = 1;
                break;
            }
            simlsh__builder_put(&bd, docs[i].id, cb.v[j].id, cand_score(index, &cb.v[j]));
        }
    }
    simlsh__builder_commit(&bd, res, truncated);
out:
    simlsh__lvec_free(&hits);
    simlsh__lvec_free(&cb);
    simlsh__free(al, docs);
    simlsh__free(al, tmp);
    simlsh__free(al, fps);
    simlsh__builder_free(&bd);
    return rc;
}

/* ---- clustering --------------------------------------------------------------------- */

static inline uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]]; /* path halving */
        x = parent[x];
    }
    return x;
}

static inline void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

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
static int greedy_split(const struct simlsh_index *ix, uint32_t *parent, candbuf *members,
                        candbuf *leaders)
{
    if (members->n < 2)
        return 0;
    /* Members in id order, so the split does not depend on the layout. */
    sort_small(members->v, members->n);
    leaders->n = 0;
    double thr = ix->params.threshold;
    for (size_t i = 0; i < members->n; i++) {
        const uint32_t *mv = sig_of(ix, members->v[i].slot);
        size_t j = 0;
        for (; j < leaders->n; j++)
            if (estimate(ix, mv, sig_of(ix, leaders->v[j].slot)) >= thr)
                break;
        if (j < leaders->n) {
            uf_union(parent, members->v[i].slot, leaders->v[j].slot);
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
                        size_t head, uint32_t *parent, candbuf *members, candbuf *leaders)
{
    members->n = 0;
    if (is_ref(t[head].slot)) {
        const ovf_list *l = list_of(ix, t[head].slot);
        for (uint32_t i = 0; i < l->n; i++) {
            int rc = cb_push(members, ix->ids[l->slots[i]], l->slots[i]);
            if (rc < 0)
                return rc;
        }
        return greedy_split(ix, parent, members, leaders);
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
    return greedy_split(ix, parent, members, leaders);
}

/* Without verify: each entry links to its bucket's first member, m - 1
 * links per bucket of m, in a sequential sweep of every table. */
static void link_buckets(const struct simlsh_index *ix, uint32_t *parent)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            if (is_ref(t[p].slot)) {
                const ovf_list *l = list_of(ix, t[p].slot);
                for (uint32_t i = 1; i < l->n; i++)
                    uf_union(parent, l->slots[i], l->slots[0]);
                continue;
            }
            size_t q = first_member(ix, b, t, p, NULL);
            if (q != p)
                uf_union(parent, t[p].slot, t[q].slot);
        }
    }
}

/* With verify: the greedy split of every bucket. Only buckets of two or
 * more members need one: each is handled once, when the sweep meets its
 * second member. */
static int split_buckets(const struct simlsh_index *ix, uint32_t *parent, candbuf *members,
                         candbuf *leaders)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            int second;
            if (t[p].slot == NO_SLOT)
                continue;
            size_t q = p;
            if (!is_ref(t[p].slot)) {
                q = first_member(ix, b, t, p, &second);
                if (q == p || !second)
                    continue;
            }
            int rc = split_bucket(ix, b, t, q, parent, members, leaders);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

int simlsh_index_cluster(simlsh_results *res, const simlsh_index *index, int flags)
{
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &index->params.alloc;
    cand *docs = NULL, *tmp = NULL;
    uint32_t *parent = NULL, *minslot = NULL;
    candbuf members, leaders;
    simlsh__lvec_init(&members, al);
    simlsh__lvec_init(&leaders, al);
    if ((docs = simlsh__calloc(al, index->count, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, index->count, sizeof *tmp)) == NULL ||
        (parent = simlsh__calloc(al, index->nslots, sizeof *parent)) == NULL ||
        (minslot = simlsh__calloc(al, index->nslots, sizeof *minslot)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    for (size_t s = 0; s < index->nslots; s++) {
        parent[s] = (uint32_t)s;
        minslot[s] = NO_SLOT;
    }

    if (!(flags & SIMLSH_QUERY_VERIFY))
        link_buckets(index, parent);
    else
        rc = split_buckets(index, parent, &members, &leaders);
    if (rc < 0)
        goto out;

    live_sorted(index, docs, tmp);
    rc = simlsh__results_reserve(res, index->count, 0);
    if (rc < 0)
        goto out;
    /* Ids ascend, so the first member seen of each cluster has its
     * smallest id: that is the label. */
    for (size_t i = 0; i < index->count; i++) {
        uint32_t r = uf_find(parent, docs[i].slot);
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
    simlsh__lvec_free(&members);
    simlsh__lvec_free(&leaders);
    simlsh__free(al, docs);
    simlsh__free(al, tmp);
    simlsh__free(al, parent);
    simlsh__free(al, minslot);
    return rc;
}
