/* Candidates worked out ahead, on the engine's threads (star groups).
 *
 * The walk of form_batch() asks for the candidates of documents in rank
 * order. A list depends on nothing but the index and closed[], and the walk
 * only ever adds to closed[] (centres placed, documents claimed). So the
 * lists of the next AHEAD_DOCS unplaced documents are made at once, on
 * threads, with the closed[] of that moment; when the walk reaches one of
 * them, the members closed since are dropped, which leaves exactly what a
 * look at that moment finds, in the same order, and the looks are counted
 * as they would have been. A document the walk skips (claimed meanwhile)
 * loses its list. Threads start only once the lists are long (a shared
 * template's buckets): short ones are made in the calling thread.
 *
 * Long lists are made as a block, one band a unit (simlsh__ix_mates_band):
 * the next documents of a template share its giant buckets, and a bucket
 * read once for all of them costs one fetch of each member's low bytes
 * instead of one for each document. Each document's list is then its
 * bands' mates in band order, each mate once, which is what
 * simlsh__ix_mates() gives.
 *
 * Components walk one document at a time, as before: their looks mark
 * buckets settled, which the next looks read. */
#include <string.h>

#include "checked.h"
#include "index/mates.h"
#include "internal.h"
#include "pool.h"
#include "vec.h"

#define AHEAD_DOCS 64
/* looks a document, on average over the last lists, past which threads start */
#define AHEAD_THREADED 256
#define AHEAD_WORKERS 8

typedef struct {
    uint32_t x;
    simlsh__matevec v;
    uint64_t visits;
} ahead_row;

typedef struct dx_ahead {
    ahead_row row[AHEAD_DOCS];
    /* the block's scratch, band-major ([b * n + i]): fingerprints, mates
     * and looks of document i in band b; nb bands' worth allocated */
    uint32_t *fps;
    simlsh__matevec *bm;
    uint64_t *bvisits;
    uint32_t nb;
    size_t n, at; /* rows made, the next one to take */
    uint32_t *seen[AHEAD_WORKERS];
    uint32_t stamp[AHEAD_WORKERS];
    uint32_t nw; /* workers with a seen[] */
    uint64_t last_visits, last_docs;
    uint32_t need; /* the rows' */
} dx_ahead;

typedef struct {
    simlsh_dedup *d;
    const simlsh_index *ix;
    dx_ahead *a;
    uint32_t need;
    const simlsh_allocator *al;
    uint32_t xs[AHEAD_DOCS];
    size_t n; /* the block's documents */
} ahead_ctx;

/* The block's scratch (a->nb bands' worth) freed. */
static void block_free(simlsh_dedup *d, dx_ahead *a)
{
    size_t m = (size_t)a->nb * AHEAD_DOCS;
    for (size_t i = 0; a->bm != NULL && i < m; i++)
        simlsh__free_sized(&d->al, a->bm[i].v, a->bm[i].cap * sizeof *a->bm[i].v);
    simlsh__free_sized(&d->al, a->bm, m * sizeof *a->bm);
    simlsh__free_sized(&d->al, a->fps, m * sizeof *a->fps);
    simlsh__free_sized(&d->al, a->bvisits, m * sizeof *a->bvisits);
}

void simlsh__dx_ahead_free(simlsh_dedup *d)
{
    dx_ahead *a = d->ahead;
    if (a == NULL)
        return;
    for (size_t i = 0; i < AHEAD_DOCS; i++)
        simlsh__free_sized(&d->al, a->row[i].v.v, a->row[i].v.cap * sizeof *a->row[i].v.v);
    for (uint32_t w = 0; w < a->nw; w++)
        simlsh__free_sized(&d->al, a->seen[w], d->slot_cap * sizeof *a->seen[w]);
    block_free(d, a);
    simlsh__free_sized(&d->al, a, sizeof *a);
    d->ahead = NULL;
}

void simlsh__dx_ahead_drop(simlsh_dedup *d)
{
    if (d->ahead != NULL)
        d->ahead->n = d->ahead->at = 0;
}

static int ahead_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    ahead_ctx *c = ctx;
    dx_ahead *a = c->a;
    ahead_row *r = &a->row[unit];
    if (++a->stamp[worker] == 0) {
        memset(a->seen[worker], 0, c->d->nslots * sizeof *a->seen[worker]);
        a->stamp[worker] = 1;
    }
    r->v.n = 0;
    r->visits = 0;
    return simlsh__ix_mates(c->ix, r->x, c->need, c->d->skip, c->d->closed, NULL, a->seen[worker],
                            a->stamp[worker], c->d->low, c->al, &r->v, &r->visits);
}

static int band_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t b)
{
    (void)par;
    (void)worker;
    ahead_ctx *c = ctx;
    dx_ahead *a = c->a;
    size_t o = b * c->n;
    for (size_t i = 0; i < c->n; i++) {
        a->bm[o + i].n = 0;
        a->bvisits[o + i] = 0;
    }
    return simlsh__ix_mates_band(c->ix, c->xs, c->n, (uint32_t)b, a->fps + o, c->need, c->d->skip,
                                 c->d->closed, c->d->low, c->al, a->bm + o, a->bvisits + o);
}

/* The block's scratch for nb bands. */
static int block_scratch(simlsh_dedup *d, dx_ahead *a, uint32_t nb)
{
    if (a->nb >= nb)
        return 0;
    size_t m = (size_t)nb * AHEAD_DOCS;
    uint32_t *fps = simlsh__calloc(&d->al, m, sizeof *fps);
    simlsh__matevec *bm = simlsh__calloc(&d->al, m, sizeof *bm);
    uint64_t *bv = simlsh__calloc(&d->al, m, sizeof *bv);
    if (fps == NULL || bm == NULL || bv == NULL) {
        simlsh__free_sized(&d->al, fps, fps != NULL ? m * sizeof *fps : 0);
        simlsh__free_sized(&d->al, bm, bm != NULL ? m * sizeof *bm : 0);
        simlsh__free_sized(&d->al, bv, bv != NULL ? m * sizeof *bv : 0);
        return SIMLSH_ENOMEM;
    }
    block_free(d, a);
    a->fps = fps;
    a->bm = bm;
    a->bvisits = bv;
    a->nb = nb;
    return 0;
}

/* The block's lists, from its bands' (on workers threads, at most one a
 * band): each document's
 * mates in band order, each once (seen[0] marks them). */
static int fill_block(simlsh_dedup *d, const simlsh_index *ix, ahead_ctx *c, uint32_t workers)
{
    dx_ahead *a = d->ahead;
    uint32_t nb = simlsh__ix_bands(ix);
    uint32_t fps[SIMLSH__MAX_PERM];
    size_t n = c->n;
    int rc = block_scratch(d, a, nb);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        simlsh__ix_slot_fps(ix, c->xs[i], fps);
        for (uint32_t b = 0; b < nb; b++)
            a->fps[(size_t)b * n + i] = fps[b];
    }
    rc = simlsh__par_run(workers, nb, band_unit, c, NULL);
    for (size_t i = 0; i < n && rc == 0; i++) {
        ahead_row *r = &a->row[i];
        r->v.n = 0;
        r->visits = 0;
        if (++a->stamp[0] == 0) {
            memset(a->seen[0], 0, d->nslots * sizeof *a->seen[0]);
            a->stamp[0] = 1;
        }
        for (uint32_t b = 0; b < nb && rc == 0; b++) {
            const simlsh__matevec *m = &a->bm[(size_t)b * n + i];
            r->visits += a->bvisits[(size_t)b * n + i];
            if (r->v.n + m->n > r->v.cap &&
                simlsh__vec_reserve(&d->al, &r->v, r->v.n + m->n, NULL) < 0)
                rc = SIMLSH_ENOMEM;
            for (size_t k = 0; k < m->n && rc == 0; k++)
                if (a->seen[0][m->v[k].slot] != a->stamp[0]) {
                    a->seen[0][m->v[k].slot] = a->stamp[0];
                    r->v.v[r->v.n++] = m->v[k];
                }
        }
    }
    return rc;
}

/* Make the lists of x and the unplaced documents after it (up to the first
 * candidate of the batch where the walk stops: one not ahead of its turn). */
static int fill(simlsh_dedup *d, const simlsh_index *ix, uint32_t x, uint32_t need)
{
    dx_ahead *a = d->ahead;
    size_t n = 0;
    for (size_t k = d->cur; k < d->nlive && n < AHEAD_DOCS; k++) {
        uint32_t y = d->order[k];
        if (d->cent[y] != DX_NONE)
            continue;
        if (n > 0 && simlsh__dx_is_mate(d, y) && !simlsh__dx_ahead_of_turn(d, y))
            break;
        a->row[n++].x = y;
    }
    if (n == 0 || a->row[0].x != x)
        return SIMLSH_EINVAL; /* (cannot happen: x is the walk's next) */
    uint32_t workers = 1;
    int long_lists = a->last_docs > 0 && a->last_visits > AHEAD_THREADED * a->last_docs;
    int block = long_lists && n > 1 && d->low != NULL;
    if (long_lists) {
        workers = simlsh__par_workers(d->nthreads, block ? simlsh__ix_bands(ix) : n);
        if (workers > AHEAD_WORKERS)
            workers = AHEAD_WORKERS;
    }
    for (; a->nw < (block ? 1u : workers); a->nw++) {
        a->seen[a->nw] = simlsh__calloc(&d->al, d->slot_cap, sizeof *a->seen[a->nw]);
        if (a->seen[a->nw] == NULL)
            return SIMLSH_ENOMEM;
        a->stamp[a->nw] = 0;
    }
    simlsh__lockal la;
    simlsh__lockal_init(&la, &d->al);
    ahead_ctx c = {d, ix, a, need, &la.al, {0}, n};
    int rc;
    if (block) {
        for (size_t i = 0; i < n; i++)
            c.xs[i] = a->row[i].x;
        rc = fill_block(d, ix, &c, workers);
    } else {
        rc = simlsh__par_run(workers, n, ahead_unit, &c, NULL);
    }
    simlsh__lockal_done(&la);
    a->n = rc == 0 ? n : 0;
    a->at = 0;
    a->need = need;
    a->last_docs = n;
    a->last_visits = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        a->last_visits += a->row[i].visits;
    return rc;
}

int simlsh__dx_ahead_candidates(simlsh_dedup *d, const simlsh_index *ix, uint32_t x, uint32_t need)
{
    if (d->ahead == NULL && (d->ahead = simlsh__calloc(&d->al, 1, sizeof *d->ahead)) == NULL)
        return SIMLSH_ENOMEM;
    dx_ahead *a = d->ahead;
    if (a->need != need)
        a->n = a->at = 0;
    while (a->at < a->n && a->row[a->at].x != x)
        a->at++; /* placed since: its list is of no use */
    if (a->at == a->n) {
        int rc = fill(d, ix, x, need);
        if (rc < 0)
            return rc;
    }
    ahead_row *r = &a->row[a->at++];
    d->cands.n = 0;
    if (r->v.n > d->cands.cap && simlsh__vec_reserve(&d->al, &d->cands, r->v.n, NULL) < 0)
        return SIMLSH_ENOMEM;
    for (size_t i = 0; i < r->v.n; i++)
        if (!d->closed[r->v.v[i].slot])
            d->cands.v[d->cands.n++] = r->v.v[i];
    d->st[SIMLSH_DEDUP_STAT_VISITS] += r->visits;
    return 0;
}
