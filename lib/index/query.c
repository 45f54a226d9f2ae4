/* Single and batch queries. */
#include "internal.h"

/* ---- candidate collection ------------------------------------------------------ */

static int hit_cmp(const void *x, const void *y)
{
    const hit *a = x, *b = y;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static inline void sort_hits(hit *v, size_t n)
{
    if (n > 48) {
        qsort(v, n, sizeof *v, hit_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        hit x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].slot > x.slot) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static inline int hit_push(hitbuf *hits, uint32_t slot, uint32_t band)
{
    if (hits->n == hits->cap) {
        int rc = simlsh__lvec_reserve(hits, hits->n + 1);
        if (rc < 0)
            return rc;
    }
    hits->v[hits->n].slot = slot;
    hits->v[hits->n].band = band;
    hits->n++;
    return 0;
}

/* Phase one of a query: every entry whose fingerprint matches in some
 * band, grouped by slot. The candidates' ids and signatures are
 * prefetched for phase two, so a batch overlaps those misses with the next
 * query's probes. */
int simlsh__ix_probe_all(const struct simlsh_index *ix, const uint32_t *fps, hitbuf *hits)
{
    hits->n = 0;
    if (ix->count == 0)
        return 0;
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = ix->tab + (size_t)b * ix->tcap;
        uint32_t fp = fps[b];
        size_t p = fastrange(fp, ix->tcap);
        /* Members of a bucket may sit anywhere in the run after home. */
        for (;;) {
            band_entry e = t[p];
            if (e.slot == NO_SLOT)
                break;
            if (e.fp == fp) {
                if (!is_ref(e.slot)) {
                    int rc = hit_push(hits, e.slot, b);
                    if (rc < 0)
                        return rc;
                } else {
                    const ovf_list *l = list_of(ix, e.slot);
                    for (uint32_t i = 0; i < l->n; i++) {
                        int rc = hit_push(hits, l->slots[i], b);
                        if (rc < 0)
                            return rc;
                    }
                }
            }
            p = next_pos(p, ix->tcap);
        }
    }
    sort_hits(hits->v, hits->n);
    size_t bytes = ix->store ? ix->num_perm * sizeof(uint32_t) : 0;
    for (size_t i = 0; i < hits->n; i++) {
        if (i > 0 && hits->v[i].slot == hits->v[i - 1].slot)
            continue;
        PREFETCH(ix->ids + hits->v[i].slot);
        if (bytes == 0)
            continue;
        const char *sp = (const char *)sig_of(ix, hits->v[i].slot);
        for (size_t off = 0; off < bytes; off += 64)
            PREFETCH(sp + off);
    }
    return 0;
}

/* Phase two: each document of hits once, sorted by id, into out; with
 * stored signatures kept only if one of its matching bands has equal rows
 * (a 32-bit fingerprint collision is not a bucket), scored, and filtered
 * by the threshold with verify. */
int simlsh__ix_confirm_and_score(const struct simlsh_index *ix, const hitbuf *hits,
                                 const uint32_t *values, double thr, candbuf *out)
{
    size_t m = 0, n = hits->n;
    const hit *h = hits->v;
    out->n = 0;
    int rc = simlsh__lvec_reserve(out, n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && h[j].slot == h[i].slot)
            j++;
        cand c = {0, h[i].slot, 0};
        if (values != NULL) {
            int ok = 0;
            for (size_t k = i; k < j && !ok; k++)
                ok = rows_equal(ix, c.slot, h[k].band, values + (size_t)h[k].band * ix->rows);
            i = j;
            if (!ok)
                continue;
            c.eq = count_equal(sig_of(ix, c.slot), values, ix->num_perm);
            if (thr > 0 && (double)c.eq / (double)ix->num_perm < thr)
                continue;
        } else {
            i = j;
        }
        c.id = ix->ids[c.slot];
        out->v[m++] = c;
    }
    out->n = m;
    sort_small(out->v, m);
    return 0;
}

/* Common checks of the query calls. */
static int check_query(const struct simlsh_index *ix, const struct simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->fingerprint != ix->sig_fp)
        return SIMLSH_EMISMATCH;
    return 0;
}

/* thr: the verification threshold of the call, 0 without verify. */
static int query_one(const struct simlsh_index *ix, const struct simlsh_signature *sig, double thr,
                     hitbuf *hits, candbuf *cb)
{
    if (sig->empty) {
        cb->n = 0;
        return 0;
    }
    uint32_t fps[SIMLSH__MAX_PERM];
    /* All b probes' lines requested before the first is read: the misses
     * overlap instead of queueing one after another. */
    compute_fps_prefetch(ix, sig->values, fps, 1);
    return query_buckets(ix, fps, ix->store ? sig->values : NULL, thr, hits, cb);
}

/* The threshold of a v2 call: in (0, 1] (NaN fails every comparison),
 * applied only with verify, like the params' one by the first calls. */
static int v2_threshold(int flags, double threshold, double *thr)
{
    if (!(threshold > 0 && threshold <= 1))
        return SIMLSH_EINVAL;
    *thr = (flags & SIMLSH_QUERY_VERIFY) ? threshold : 0.0;
    return 0;
}

/* The threshold is read before query_res's checks: only from an index. */
static int is_index(const simlsh_index *ix)
{
    return simlsh__handle_is(ix, SIMLSH__TAG_INDEX);
}

static double params_threshold(const struct simlsh_index *ix, int flags)
{
    return (flags & SIMLSH_QUERY_VERIFY) ? ix->params.threshold : 0.0;
}

static int query_res(simlsh_results *res, const simlsh_index *index, const simlsh_signature *sig,
                     int flags, double thr)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    rc = check_query(index, sig);
    if (rc < 0)
        return rc;
    hitbuf hits;
    candbuf cb;
    simlsh__lvec_init(&hits, &index->params.alloc);
    simlsh__lvec_init(&cb, &index->params.alloc);
    rc = query_one(index, sig, thr, &hits, &cb);
    if (rc == 0)
        rc = simlsh__results_reserve(res, cb.n, 1);
    if (rc == 0) {
        for (size_t i = 0; i < cb.n; i++) {
            res->a[i] = cb.v[i].id;
            res->b[i] = 0;
            res->score[i] = cand_score(index, &cb.v[i]);
        }
        res->count = cb.n;
        res->nq = 1;
        res->offsets[0] = 0;
        res->truncated = 0;
    }
    simlsh__lvec_free(&hits);
    simlsh__lvec_free(&cb);
    return rc;
}

int simlsh_index_query(simlsh_results *res, const simlsh_index *index, const simlsh_signature *sig,
                       int flags)
{
    return query_res(res, index, sig, flags,
                     is_index(index) ? params_threshold(index, flags) : 0.0);
}

int simlsh_index_query_v2(simlsh_results *res, const simlsh_index *index,
                          const simlsh_signature *sig, int flags, double threshold)
{
    double thr;
    int rc = v2_threshold(flags, threshold, &thr);
    return rc < 0 ? rc : query_res(res, index, sig, flags, thr);
}

int simlsh_index_query_ids(uint64_t *ids, size_t cap, size_t *count, const simlsh_index *index,
                           const simlsh_signature *sig, int flags)
{
    SIMLSH__CHECK_INDEX(index);
    if (count == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    rc = check_query(index, sig);
    if (rc < 0)
        return rc;
    hitbuf hits;
    candbuf cb;
    simlsh__lvec_init(&hits, &index->params.alloc);
    simlsh__lvec_init(&cb, &index->params.alloc);
    rc = query_one(index, sig, params_threshold(index, flags), &hits, &cb);
    if (rc == 0) {
        *count = cb.n;
        if (ids != NULL) {
            if (cap < cb.n) {
                rc = SIMLSH_EBUFSIZE;
            } else {
                for (size_t i = 0; i < cb.n; i++)
                    ids[i] = cb.v[i].id;
            }
        }
    }
    simlsh__lvec_free(&hits);
    simlsh__lvec_free(&cb);
    return rc;
}

/* ---- batch queries ---------------------------------------------------------------- */

#define BATCH_CHUNK 4

/* Query q's rows, confirmed and scored, appended to the builder. */
static int append_rows(simlsh__builder *bd, const struct simlsh_index *ix, size_t q,
                       const candbuf *cb)
{
    int rc = simlsh__builder_reserve(bd, cb->n);
    if (rc < 0)
        return rc;
    bd->offsets[q] = bd->n;
    for (size_t i = 0; i < cb->n; i++)
        simlsh__builder_put(bd, cb->v[i].id, q, cand_score(ix, &cb->v[i]));
    return 0;
}

/* The queries of a batch: n signatures, or n rows of values @p stride
 * entries apart (checked by the caller: num_perm values each, all below
 * the empty mark or all equal to it). */
typedef struct {
    const simlsh_signature *const *sigs;
    const uint32_t *values; /* read when sigs is NULL */
    size_t stride;
} qsrc;

static inline const uint32_t *q_values(const qsrc *src, size_t q)
{
    return src->sigs != NULL ? src->sigs[q]->values : src->values + q * src->stride;
}

static inline int q_empty(const qsrc *src, size_t q)
{
    return src->sigs != NULL ? src->sigs[q]->empty : src->values[q * src->stride] == 0xFFFFFFFFu;
}

static void chunk_keys(const struct simlsh_index *ix, const qsrc *src, size_t first, size_t n,
                       uint32_t *fps)
{
    for (size_t q = first; q < first + n; q++) {
        uint32_t *f = fps + (q - first) * ix->bands;
        if (q_empty(src, q))
            continue;
        compute_fps_prefetch(ix, q_values(src, q), f, 1);
    }
}

/* The batch itself, once every argument has been checked; res is filled
 * only on success. */
static int run_batch(simlsh_results *res, const simlsh_index *index, const qsrc *src, size_t n,
                     double verify)
{
    const simlsh_allocator *al = &index->params.alloc;
    size_t fbytes = 0;
    uint32_t *fps = NULL;
    simlsh__builder bd;
    simlsh__builder_init(&bd, res);
    hitbuf hits[2];
    candbuf cb;
    int rc = 0;
    simlsh__lvec_init(&hits[0], al);
    simlsh__lvec_init(&hits[1], al);
    simlsh__lvec_init(&cb, al);
    if (!simlsh__mul_ok((size_t)2 * BATCH_CHUNK * index->bands, sizeof *fps, &fbytes) ||
        (fps = simlsh__malloc(al, fbytes)) == NULL || simlsh__builder_per_query(&bd, n) < 0) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }

    /* Software pipeline, two stages deep: keys of chunk c+1 are computed
     * and their table lines prefetched while chunk c's lines arrive; query
     * q probes (prefetching its candidates' signatures) before query q-1
     * is confirmed and scored, so those misses overlap too. */
    uint32_t *cur = fps, *next = fps + (size_t)BATCH_CHUNK * index->bands;
    const uint32_t *pvals = NULL;
    size_t first = 0, prev = SIZE_MAX;
    if (n > 0)
        chunk_keys(index, src, 0, n < BATCH_CHUNK ? n : BATCH_CHUNK, cur);
    while (first < n) {
        size_t len = n - first < BATCH_CHUNK ? n - first : BATCH_CHUNK;
        size_t nfirst = first + len;
        /* Stage zero: the values of chunk c+2, read by chunk_keys next time
         * (callers' signatures are rarely still in cache). */
        size_t ahead = nfirst + BATCH_CHUNK;
        for (size_t q = ahead; q < n && q < ahead + BATCH_CHUNK; q++) {
            const char *vp = (const char *)q_values(src, q);
            for (size_t off = 0; off < index->num_perm * sizeof(uint32_t); off += 64)
                PREFETCH(vp + off);
        }
        if (nfirst < n)
            chunk_keys(index, src, nfirst, n - nfirst < BATCH_CHUNK ? n - nfirst : BATCH_CHUNK,
                       next);
        for (size_t q = first; q < nfirst; q++) {
            hitbuf *now = &hits[q & 1], *before = &hits[(q & 1) ^ 1];
            now->n = 0;
            if (!q_empty(src, q)) {
                rc = simlsh__ix_probe_all(index, cur + (q - first) * index->bands, now);
                if (rc < 0)
                    goto out;
            }
            if (prev != SIZE_MAX) {
                rc = simlsh__ix_confirm_and_score(index, before, pvals, verify, &cb);
                if (rc == 0)
                    rc = append_rows(&bd, index, prev, &cb);
                if (rc < 0)
                    goto out;
            }
            prev = q;
            pvals = index->store ? q_values(src, q) : NULL;
        }
        uint32_t *t = cur;
        cur = next;
        next = t;
        first = nfirst;
    }
    if (prev != SIZE_MAX) {
        rc = simlsh__ix_confirm_and_score(index, &hits[prev & 1], pvals, verify, &cb);
        if (rc == 0)
            rc = append_rows(&bd, index, prev, &cb);
        if (rc < 0)
            goto out;
        bd.offsets[n] = bd.n;
    }
    simlsh__builder_commit(&bd, res, 0);
out:
    simlsh__lvec_free(&hits[0]);
    simlsh__lvec_free(&hits[1]);
    simlsh__lvec_free(&cb);
    simlsh__free_sized(al, fps, fbytes);
    simlsh__builder_free(&bd);
    return rc;
}

static int query_batch(simlsh_results *res, const simlsh_index *index,
                       const simlsh_signature *const *sigs, size_t n, int flags, double verify)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    if (res == NULL || index == NULL || (sigs == NULL && n > 0))
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    for (size_t q = 0; q < n; q++) {
        rc = check_query(index, sigs[q]);
        if (rc < 0)
            return rc;
    }
    qsrc src = {sigs, NULL, 0};
    return run_batch(res, index, &src, n, verify);
}

int simlsh_index_query_batch(simlsh_results *res, const simlsh_index *index,
                             const simlsh_signature *const *sigs, size_t n, int flags)
{
    return query_batch(res, index, sigs, n, flags,
                       is_index(index) ? params_threshold(index, flags) : 0.0);
}

int simlsh_index_query_batch_v2(simlsh_results *res, const simlsh_index *index,
                                const simlsh_signature *const *sigs, size_t n, int flags,
                                double threshold)
{
    double thr;
    int rc = v2_threshold(flags, threshold, &thr);
    return rc < 0 ? rc : query_batch(res, index, sigs, n, flags, thr);
}

/* Every row holds num_perm densified values or is the empty mark, as
 * simlsh_signature_from_values() asks: 0 or SIMLSH_EINVAL. */
static int check_rows(const uint32_t *values, size_t n, size_t num_perm, size_t stride)
{
    for (size_t q = 0; q < n; q++) {
        size_t marks = simlsh__empty_marks(values + q * stride, num_perm);
        if (marks != 0 && marks != num_perm)
            return SIMLSH_EINVAL;
    }
    return 0;
}

int simlsh_index_query_values(simlsh_results *res, const simlsh_index *index,
                              const uint32_t *values, size_t n, size_t num_perm, size_t stride,
                              int flags, double threshold)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    if (res == NULL || index == NULL || (values == NULL && n > 0))
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    if (num_perm != index->num_perm)
        return SIMLSH_EMISMATCH;
    /* The last row must end within the address space: (n - 1) * stride +
     * num_perm entries. */
    size_t span;
    if (stride < num_perm ||
        (n > 0 && (!simlsh__mul_ok(n - 1, stride, &span) || span > SIZE_MAX / 4 - num_perm)))
        return SIMLSH_EINVAL;
    double thr;
    if (threshold == 0.0)
        thr = params_threshold(index, flags);
    else if ((rc = v2_threshold(flags, threshold, &thr)) < 0)
        return rc;
    rc = check_rows(values, n, num_perm, stride);
    if (rc < 0)
        return rc;
    qsrc src = {NULL, values, stride};
    return run_batch(res, index, &src, n, thr);
}
