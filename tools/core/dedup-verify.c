/*
 * simlsh-dedup: candidate pairs and their verification (docs/cli.md,
 * VERIFICATION).
 *
 * In exact mode (the default) the first pass keeps only signatures. The
 * candidate pairs are cut into batches of whole components
 * (simlsh_group_batches()) that fit --verify-memory (and SET_BATCH_BYTES),
 * and a second pass reads again only the documents of candidate pairs, one
 * batch at a time, builds their shingle sets (32-bit hashes: distinct
 * values in text order, 4 bytes a shingle; 64-bit: sorted), decides each
 * pair by its exact Jaccard (32-bit: aligned first, dedup-jaccard.c) and
 * frees the batch. A pair whose two documents are in no other pair (with
 * 32-bit hashes) skips the batches: one worker hashes both texts and counts
 * the Jaccard of the two hash sequences (lone_row(), jc_count_seq()),
 * keeping no set.
 * Files are opened again by path; lines are read at their offset (pread), and
 * the needed lines of a compressed input are first copied, in one streaming
 * pass, to an unlinked temporary file. Standard input was spooled to such a
 * file before the first pass (reread_prepare()).
 */
#include "dedup-pass2.h"

#include <errno.h>
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Exact mode drops candidates whose estimate is this many standard
 * deviations below the threshold (verify_candidates). */
#define PREFILTER_SD 3.5

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "simlsh-dedup: %s: %s (%s)\n", what, simlsh_strerror(rc),
            simlsh_error_name(rc));
    return -1;
}

/* Items are taken in runs of PAR_RUN, so a thread works on neighbouring
 * rows (which share documents) and the counter is touched less often. */
#define PAR_RUN 16

static void *vworker_main(void *arg)
{
    struct vworker *w = arg;
    struct vctx *v = w->v;
    for (;;) {
        size_t i = atomic_fetch_add(&v->next, PAR_RUN);
        if (i >= v->nitems)
            break;
        size_t e = v->nitems - i < PAR_RUN ? v->nitems : i + PAR_RUN;
        for (; i < e; i++)
            v->fn(w, i);
    }
    return NULL;
}

/* fn over items 0..n-1 on the workers; the results land in per-item
 * places, so they do not depend on which thread ran what. */
static void par_for(struct vctx *v, void (*fn)(struct vworker *, size_t), size_t n)
{
    v->fn = fn;
    v->nitems = n;
    atomic_store(&v->next, 0);
    /* With two or more threads the calling thread only waits, as the
     * library's calls do (pool.c): its CPU time is then the serial part. */
    size_t want = v->nw < n ? v->nw : n, started = 0;
    if (want > 1) {
        for (size_t t = 0; t < want; t++) {
            if (pthread_create(&v->w[t].thread, NULL, vworker_main, &v->w[t]) != 0)
                break; /* fewer threads: same results */
            started++;
        }
    }
    if (started < want || want == 0)
        vworker_main(&v->w[started < v->nw ? started : 0]);
    for (size_t t = 0; t < started; t++)
        pthread_join(v->w[t].thread, NULL);
}

static void unload(struct vctx *v, struct slot *sl)
{
    if (sl->loaded == 1) {
        v->held -= (uint64_t)sl->n * v->elem;
        v->held_shingles -= sl->n;
    }
    free(sl->vals);
    sl->vals = NULL;
    free(sl->msg);
    sl->msg = NULL;
    sl->n = 0;
    sl->loaded = 0;
}

/* Document id cannot be read again (msg says why): marked, and reported
 * once. */
static void report_unread(struct vctx *v, uint64_t id, const char *msg)
{
    struct run *r = v->r;
    uint8_t *st = &v->state[id - r->store.first_new];
    *st |= DS_BAD;
    if (*st & DS_WARNED)
        return;
    *st |= DS_WARNED;
    r->stats.vs.docs_unread++;
    size_t nl = 0;
    const char *name = NULL;
    if (id < r->store.names.count)
        name = strlist_get(&r->store.names, id, &nl);
    if (name)
        warnx_doc(r, "%s: %s; its pairs are verified by estimate", qnamen(name, nl), msg);
    else /* the MPI driver's ranks know only the names they read */
        warnx_doc(r, "document %" PRIu64 ": %s; its pairs are verified by estimate", id, msg);
}

/* Loads the slots of chunks ci and cj that are not loaded and unloads the
 * others; reports documents that cannot be read (once each). */
static void load_chunks(struct vctx *v, size_t ci, size_t cj)
{
    struct run *r = v->r;
    size_t n = 0;
    for (size_t i = 0; i < v->nslots; i++) {
        struct slot *sl = &v->slots[i];
        int want = sl->chunk == ci || sl->chunk == cj;
        if (!want && sl->loaded)
            unload(v, sl);
        else if (want && !sl->loaded && !(v->state[sl->id - r->store.first_new] & DS_BAD))
            v->items[n++] = i;
    }
    par_for(v, load_slot, n);
    for (size_t k = 0; k < n; k++) {
        struct slot *sl = &v->slots[v->items[k]];
        r->stats.vs.reads++;
        if (sl->loaded == 1) {
            v->held += (uint64_t)sl->n * v->elem;
            v->held_shingles += sl->n;
            continue;
        }
        report_unread(v, sl->id, sl->msg);
    }
    if (v->held > r->stats.vs.set_bytes_peak)
        r->stats.vs.set_bytes_peak = v->held;
    if (v->held_shingles > r->stats.vs.shingles_peak)
        r->stats.vs.shingles_peak = v->held_shingles;
}

/* The MinHash estimate of a and b from the index's stored signatures, or
 * -1 (no index, or no stored signatures): what a pair whose documents
 * cannot be read again is decided by. */
static double index_estimate(const simlsh_index *index, uint64_t a, uint64_t b)
{
    simlsh_signature *x = NULL, *y = NULL;
    double s = -1;
    if (index != NULL && simlsh_index_signature(&x, index, a) == 0 &&
        simlsh_index_signature(&y, index, b) == 0 && simlsh_signature_jaccard(&s, x, y) != 0)
        s = -1;
    simlsh_signature_free(x);
    simlsh_signature_free(y);
    return s;
}

/* s: the pair's estimate, or NaN to ask the index for it. */
static void decide_by_estimate(struct run *r, struct pairvec *out, uint64_t a, uint64_t b, double s)
{
    r->stats.vs.estimated++;
    if (s != s)
        s = index_estimate(r->store.index, a, b);
    if (s < 0 || s >= r->threshold)
        pairvec_add(out, a, b, s);
}

/* Rows of a cut batch, by block (chunk lo, chunk hi), then row. */
struct blockrow {
    uint32_t lo, hi;
    size_t row;
};

static int cmp_blockrow(const void *x, const void *y)
{
    const struct blockrow *p = x, *q = y;
    if (p->lo != q->lo)
        return p->lo < q->lo ? -1 : 1;
    if (p->hi != q->hi)
        return p->hi < q->hi ? -1 : 1;
    return p->row < q->row ? -1 : p->row > q->row;
}

/* The sets of a batch: at most this much even when the budget allows more,
 * so that a batch's sets are still in cache when its rows are verified and
 * the next batch reuses their memory instead of faulting in more. */
#define SET_BATCH_BYTES (UINT64_C(16) << 20)

/* Rows verified at once: bounds the per-row scratch whatever the batch. */
#define SLICE 65536

/* Verifies rows[0..n) (row numbers of the batch; NULL: rows 0..n), whose
 * documents are loaded, slice by slice. */
static void verify_rows(struct vctx *v, const size_t *rows, size_t n, const double *rs,
                        struct pairvec *out)
{
    struct run *r = v->r;
    for (size_t at = 0; at < n; at += SLICE) {
        size_t m = n - at < SLICE ? n - at : SLICE;
        for (size_t k = 0; k < m; k++)
            v->items[k] = rows ? rows[at + k] : at + k;
        par_for(v, jaccard_row, m);
        for (size_t k = 0; k < m; k++) {
            size_t row = v->items[k];
            if (v->exact[k] >= 0) {
                r->stats.vs.exact++;
                if (v->exact[k] >= r->threshold)
                    pairvec_add(out, v->ra[row], v->rb[row], v->exact[k]);
            } else {
                decide_by_estimate(r, out, v->ra[row], v->rb[row], rs ? rs[row] : NAN);
            }
        }
    }
}

/* --verify-memory 0 (the default): the sets of one batch may take half the
 * memory the run has needed so far, plus 16 MiB, between 16 and 256 MiB. The
 * first pass (signatures, index, candidates) is what --verify estimate needs
 * too, so the second pass adds at most about half of that: exact answers
 * for about 1.5 times the memory of estimated ones. */
uint64_t verify_budget(const struct options *o)
{
    if (o->verify_memory)
        return o->verify_memory;
    struct rusage ru;
    uint64_t peak = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0)
        peak = (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
    uint64_t b = peak / 2 + (UINT64_C(16) << 20), hi = UINT64_C(256) << 20;
    return b > hi ? hi : b;
}

/* One batch: documents ids[0..nids) (ascending), rows [0, nrows). When the
 * planned sets exceed the budget, the documents are cut in chunks of half
 * the budget and the rows are verified block by block (chunk i x chunk j),
 * holding two chunks at a time. */
static void verify_batch(struct vctx *v, const uint64_t *ids, size_t nids, const uint64_t *ra,
                         const uint64_t *rb, const double *rs, size_t nrows, struct pairvec *out)
{
    struct run *r = v->r;
    uint64_t budget = r->stats.vs.budget, total = 0;
    v->slots = xrealloc(v->slots, (nids ? nids : 1) * sizeof *v->slots);
    v->nslots = nids;
    v->ids = ids;
    v->ra = ra;
    v->rb = rb;
    for (size_t i = 0; i < nids; i++) {
        struct slot *sl = &v->slots[i];
        memset(sl, 0, sizeof *sl);
        sl->id = ids[i];
        sl->est = r->store.id_bytes[ids[i]] * v->elem;
        total += sl->est;
    }
    size_t nchunks = 1;
    if (total > budget) {
        uint64_t fill = 0;
        nchunks = 0;
        for (size_t i = 0; i < nids; i++) {
            if (i > 0 && fill + v->slots[i].est > budget / 2) {
                nchunks++;
                fill = 0;
            }
            fill += v->slots[i].est;
            v->slots[i].chunk = nchunks;
        }
        nchunks++;
    }
    v->items = xmalloc((nids > SLICE ? nids : SLICE) * sizeof *v->items);
    v->exact = xmalloc(SLICE * sizeof *v->exact);
    if (nchunks == 1) {
        load_chunks(v, 0, 0);
        verify_rows(v, NULL, nrows, rs, out);
    } else {
        struct blockrow *br = xmalloc((nrows ? nrows : 1) * sizeof *br);
        for (size_t k = 0; k < nrows; k++) {
            size_t ca = v->slots[slot_of(v, ra[k])].chunk, cb = v->slots[slot_of(v, rb[k])].chunk;
            br[k].lo = (uint32_t)(ca < cb ? ca : cb);
            br[k].hi = (uint32_t)(ca < cb ? cb : ca);
            br[k].row = k;
        }
        qsort(br, nrows, sizeof *br, cmp_blockrow);
        size_t *rows = xmalloc((nrows ? nrows : 1) * sizeof *rows);
        for (size_t k = 0; k < nrows; k++)
            rows[k] = br[k].row;
        for (size_t k = 0; k < nrows;) {
            size_t e = k;
            while (e < nrows && br[e].lo == br[k].lo && br[e].hi == br[k].hi)
                e++;
            load_chunks(v, br[k].lo, br[k].hi);
            verify_rows(v, rows + k, e - k, rs, out);
            k = e;
        }
        free(rows);
        free(br);
    }
    for (size_t i = 0; i < nids; i++)
        unload(v, &v->slots[i]);
    free(v->exact);
    free(v->items);
    v->items = NULL;
    v->exact = NULL;
}

/* Exact mode: pairs with a document from --index are decided by their
 * estimate (its text is not known); the others by the second pass. The
 * candidates are columns ca, cb, cs (n rows) of ids below first_new +
 * ndocs; cs NULL: estimates, where needed, come from the index. With
 * owned, ca and cb are the caller's malloc'ed arrays, freed once the
 * candidates are in batches. */
static int verify_exact_cols(struct run *r, uint64_t *ca, uint64_t *cb, double *cs, size_t n,
                             size_t ndocs, int owned, struct pairvec *out)
{
    uint64_t first_new = r->store.first_new;
    struct vctx v;
    memset(&v, 0, sizeof v);
    v.r = r;
    v.ndocs = ndocs;
    int64_t bits = 32;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_HASH_BITS, &bits);
    v.bits32 = bits == 32;
    v.elem = v.bits32 ? 4 : 8;
    r->stats.vs.bytes_per_shingle = (int)v.elem;
    v.state = calloc(ndocs ? ndocs : 1, 1);
    if (!v.state)
        die_oom();

    /* New-new pairs go to the second pass, the others are decided now. */
    uint64_t *na = NULL, *nb = NULL;
    double *ns = NULL;
    size_t m = 0;
    if (first_new > 0) {
        na = xmalloc((n ? n : 1) * sizeof *na);
        nb = xmalloc((n ? n : 1) * sizeof *nb);
        ns = cs ? xmalloc((n ? n : 1) * sizeof *ns) : NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t x = ca[i] < cb[i] ? ca[i] : cb[i], y = ca[i] < cb[i] ? cb[i] : ca[i];
        if (x < first_new) {
            decide_by_estimate(r, out, x, y, cs ? cs[i] : NAN);
            continue;
        }
        uint8_t *sx = &v.state[x - first_new], *sy = &v.state[y - first_new];
        *sx |= (uint8_t)(*sx & DS_NEED ? DS_MULTI : DS_NEED);
        *sy |= (uint8_t)(*sy & DS_NEED ? DS_MULTI : DS_NEED);
        if (first_new > 0) {
            na[m] = x;
            nb[m] = y;
            if (ns)
                ns[m] = cs[i];
            m++;
        }
    }
    if (first_new == 0)
        m = n;
    /* Pairs whose two documents are in no other pair are fused (lone_row)
     * and leave the batches; the others stay, in order. */
    uint64_t *wa = first_new ? na : ca, *wb = first_new ? nb : cb;
    double *ws = first_new ? ns : cs;
    struct lone *lone = NULL;
    size_t nlone = 0;
    for (size_t pass = 0; v.bits32 && pass < 2; pass++) {
        size_t kept = 0;
        for (size_t i = 0; i < m; i++) {
            uint64_t x = wa[i], y = wb[i];
            int fuse = !((v.state[x - first_new] | v.state[y - first_new]) & DS_MULTI) &&
                       r->store.id_bytes[x] <= KEEP_DOC && r->store.id_bytes[y] <= KEEP_DOC;
            if (pass == 0) {
                nlone += (size_t)fuse;
                continue;
            }
            if (fuse) {
                struct lone *p = &lone[nlone++];
                p->a = x;
                p->b = y;
                p->s = ws ? ws[i] : NAN;
                p->msg = NULL;
                v.state[x - first_new] |= DS_LONE;
                v.state[y - first_new] |= DS_LONE;
                continue;
            }
            wa[kept] = x;
            wb[kept] = y;
            if (ws)
                ws[kept] = ws[i];
            kept++;
        }
        if (pass == 0) {
            lone = xmalloc((nlone ? nlone : 1) * sizeof *lone);
            nlone = 0;
        } else {
            m = kept;
        }
    }
    uint64_t planned = 0, cdocs = 0;
    for (size_t k = 0; k < ndocs; k++)
        if ((v.state[k] & DS_NEED) && !(v.state[k] & DS_LONE)) {
            planned += r->store.id_bytes[first_new + k] * v.elem;
            cdocs++;
        }
    /* Batches of whole components while they fit: max_docs from the mean
     * planned size (verify_batch cuts a batch that is larger still). */
    r->stats.vs.budget = verify_budget(r->opt);
    uint64_t budget = r->stats.vs.budget < SET_BATCH_BYTES ? r->stats.vs.budget : SET_BATCH_BYTES;
    size_t max_docs;
    if (planned <= budget)
        max_docs = cdocs;
    else
        max_docs = (size_t)((double)budget / ((double)planned / (double)cdocs));
    if (max_docs < 2)
        max_docs = 2;
    simlsh_results *batches = NULL;
    size_t nbatches = 0;
    int rc = simlsh_results_new(&batches, NULL);
    if (rc == 0 && m > 0)
        rc = simlsh_group_batches(batches, &nbatches, first_new ? na : ca, first_new ? nb : cb,
                                  first_new ? ns : cs, m, max_docs);
    free(na);
    free(nb);
    free(ns);
    if (rc != 0) {
        free(lone);
        free(v.state);
        simlsh_results_free(batches);
        return lib_fail("batches of candidate pairs", rc);
    }
    /* the candidates are in the batches now */
    if (owned) {
        free(ca);
        free(cb);
        ca = cb = NULL;
    }
    r->stats.vs.batches = nbatches;

    open_sources(&v);
    v.nw = r->nthreads > 1 ? (size_t)r->nthreads : 1;
    v.w = calloc(v.nw, sizeof *v.w);
    if (!v.w)
        die_oom();
    for (size_t t = 0; t < v.nw; t++)
        v.w[t].v = &v;
    pthread_mutex_init(&v.big, NULL);
#if defined(__GLIBC__)
    /* Sets of large documents come and go: a fixed threshold maps each
     * block of 1 MiB or more on its own, and gives it back when freed. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* and memory freed at the end of a batch stays for the next one */
    mallopt(M_TRIM_THRESHOLD, (int)(SET_BATCH_BYTES * 2));
    /* The first pass and the pairs left freed memory in the main arena;
     * the workers' sets go to arenas of their own, so that memory would
     * stay resident under them. Give it back first. */
    malloc_trim(0);
#endif
    if (nlone > 0) {
        v.lone = lone;
        v.items = xmalloc(SLICE * sizeof *v.items);
        for (size_t at = 0; at < nlone; at += SLICE) {
            size_t cnt = nlone - at < SLICE ? nlone - at : SLICE;
            for (size_t k = 0; k < cnt; k++)
                v.items[k] = at + k;
            par_for(&v, lone_row, cnt);
        }
        free(v.items);
        v.items = NULL;
        for (size_t k = 0; k < nlone; k++) {
            struct lone *p = &lone[k];
            r->stats.vs.reads += p->j >= 0 || p->bad == p->b ? 2 : 1;
            if (p->j >= 0) {
                r->stats.vs.exact++;
                if (p->j >= r->threshold)
                    pairvec_add(out, p->a, p->b, p->j);
                continue;
            }
            report_unread(&v, p->bad, p->msg);
            decide_by_estimate(r, out, p->a, p->b, p->s);
            free(p->msg);
        }
        v.lone = NULL;
    }
    free(lone);
    uint64_t *ids = xmalloc(max_docs * sizeof *ids);
    size_t idcap = max_docs;
    const uint64_t *ba = simlsh_results_a(batches), *bb = simlsh_results_b(batches);
    const double *bs = cs ? simlsh_results_scores(batches) : NULL;
    for (size_t q = 0; q < nbatches && rc == 0; q++) {
        size_t lo = 0, hi = 0, nids = 0;
        rc = simlsh_results_offset(&lo, batches, q);
        if (rc == 0)
            rc = simlsh_results_offset(&hi, batches, q + 1);
        if (rc == 0)
            rc = simlsh_group_batch_ids(NULL, 0, &nids, batches, q);
        if (rc == 0 && nids > idcap) {
            idcap = nids;
            ids = xrealloc(ids, idcap * sizeof *ids);
        }
        if (rc == 0)
            rc = simlsh_group_batch_ids(ids, idcap, &nids, batches, q);
        if (rc == 0)
            verify_batch(&v, ids, nids, ba + lo, bb + lo, bs ? bs + lo : NULL, hi - lo, out);
    }
    free(ids);
    for (size_t t = 0; t < v.nw; t++) {
        simlsh_shingleset_free(v.w[t].set);
        free(v.w[t].buf);
        free(v.w[t].hashes);
        jc_free(&v.w[t].jc);
        jc_table_free(&v.w[t].held);
        free(v.w[t].v32[0]);
        free(v.w[t].v32[1]);
        free(v.w[t].hashes2);
    }
    free(v.w);
    pthread_mutex_destroy(&v.big);
    free(v.slots);
    close_sources(&v);
    free(v.state);
    simlsh_results_free(batches);
    return rc != 0 ? lib_fail("verification", rc) : 0;
}

/* The candidates' ids go on alone (16 bytes a pair, not the results' 24),
 * and the results are freed before the batches are made: their scores are
 * needed only for a document that cannot be read again, and the index
 * gives those. */
static int verify_exact(struct run *r, simlsh_results **candp, struct pairvec *out)
{
    simlsh_results *cand = *candp;
    size_t n = simlsh_results_count(cand);
    uint64_t *ca = xmalloc((n ? n : 1) * sizeof *ca), *cb = xmalloc((n ? n : 1) * sizeof *cb);
    if (n > 0) {
        memcpy(ca, simlsh_results_a(cand), n * sizeof *ca);
        memcpy(cb, simlsh_results_b(cand), n * sizeof *cb);
    }
    simlsh_results_free(cand);
    *candp = NULL;
#if defined(__GLIBC__)
    malloc_trim(0); /* what the pairs' threads freed, before the batches */
#endif
    return verify_exact_cols(r, ca, cb, NULL, n, r->store.names.count - r->store.first_new, 1, out);
}

/* The edges out holds, sorted, handed over as *edges (never NULL) and
 * *n; on rc != 0 freed instead: -1. */
static int sorted_edges(struct pairvec *out, int rc, struct pair **edges, size_t *n)
{
    if (rc != 0) {
        free(out->v);
        return -1;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_pair);
    *edges = out->v ? out->v : xmalloc(sizeof *out->v);
    *n = out->n;
    return 0;
}

double verify_prefilter(const struct run *r)
{
    /* The banding for recall also makes many candidates far below the
     * threshold (on man pages, 60 times as many as true pairs). Their
     * MinHash estimate sorts them out first: a pair at the threshold t
     * has an estimate below t - 3.5 sd (sd = sqrt(t (1 - t) / num_perm))
     * with probability about 2.3e-4, a pair above t less often: with the
     * banding's P(t) = 0.9923 for --recall 0.99, 0.9921 together. On man
     * pages, 4 sd would keep 1.12 million candidates where 3.5 keeps 0.92
     * and the same 130 thousand pairs but 10. */
    int64_t np = 128;
    double thr = r->threshold;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &np);
    double low = thr - PREFILTER_SD * sqrt(thr * (1 - thr) / (double)np);
    return low > 0 ? low : 0;
}

int verify_exact_pairs(struct run *r, const struct pair *cand, size_t n, size_t ndocs,
                       struct pair **edges, size_t *nedges)
{
    uint64_t *ca = xmalloc((n ? n : 1) * sizeof *ca), *cb = xmalloc((n ? n : 1) * sizeof *cb);
    double *cs = xmalloc((n ? n : 1) * sizeof *cs);
    for (size_t i = 0; i < n; i++) {
        ca[i] = cand[i].a;
        cb[i] = cand[i].b;
        cs[i] = cand[i].score;
    }
    struct pairvec out = {NULL, 0, 0};
    int rc = verify_exact_cols(r, ca, cb, cs, n, ndocs, 0, &out);
    free(ca);
    free(cb);
    free(cs);
    return sorted_edges(&out, rc, edges, nedges);
}

int verify_candidates(struct run *r, struct pair **edges, size_t *n)
{
    phase_switch(&r->stats, PH_PAIRS);
#if defined(__GLIBC__)
    /* The readers' buffers were freed in arenas of their own threads; the
     * pairs and the second pass allocate elsewhere, so that memory would
     * stay resident under them. */
    if (r->opt->verify == VERIFY_EXACT)
        malloc_trim(0);
#endif
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc != 0)
        return lib_fail("results", rc);
    int mode = r->opt->verify;
    int flags = mode == VERIFY_ESTIMATE ? SIMLSH_QUERY_VERIFY : 0;
    double thr = r->threshold;
    if (mode == VERIFY_EXACT) {
        double low = verify_prefilter(r);
        if (low > 0) {
            flags = SIMLSH_QUERY_VERIFY;
            thr = low;
        }
    }
    r->stats.vs.prefilter = flags && mode == VERIFY_EXACT ? thr : 0;
    uint32_t nt = r->lib_threads;
    /* --max-pairs bounds --output pairs only: groups are never cut short */
    size_t max_pairs = r->opt->output == OUT_PAIRS ? r->opt->max_pairs : 0;
    rc = simlsh_index_pairs_v2(res, r->store.index, flags, max_pairs, thr, nt);
    if (rc == SIMLSH_EUNSUPPORTED && mode == VERIFY_EXACT && flags) {
        /* an index without stored signatures has no estimates */
        r->stats.vs.prefilter = 0;
        rc = simlsh_index_pairs_v2(res, r->store.index, 0, max_pairs, r->threshold, nt);
    }
    if (rc != 0) {
        simlsh_results_free(res);
        return lib_fail("enumerating pairs", rc);
    }
    if (simlsh_results_truncated(res) == 1) {
        r->truncated = 1;
        fprintf(stderr,
                "simlsh-dedup: warning: stopped at %zu candidate pairs (--max-pairs);"
                " results are incomplete\n",
                r->opt->max_pairs);
    }
    size_t count = simlsh_results_count(res);
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    const double *s = simlsh_results_scores(res);
    for (size_t i = 0; i < count; i++) {
        uint64_t y = a[i] < b[i] ? b[i] : a[i];
        if (y >= r->store.names.count) {
            fprintf(stderr,
                    "simlsh-dedup: the index holds id %" PRIu64
                    " that has no name; was it saved by another program?\n",
                    y);
            simlsh_results_free(res);
            return -1;
        }
    }
    r->stats.vs.candidates = count;
    struct pairvec out = {NULL, 0, 0};
    if (mode == VERIFY_EXACT) {
        phase_switch(&r->stats, PH_VERIFY);
        rc = verify_exact(r, &res, &out);
    } else {
        for (size_t i = 0; i < count; i++)
            pairvec_add(&out, a[i], b[i], s ? s[i] : -1.0);
    }
    simlsh_results_free(res);
    return sorted_edges(&out, rc, edges, n);
}
