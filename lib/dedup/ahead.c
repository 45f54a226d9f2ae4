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
} ahead_ctx;

void simlsh__dx_ahead_free(simlsh_dedup *d)
{
    dx_ahead *a = d->ahead;
    if (a == NULL)
        return;
    for (size_t i = 0; i < AHEAD_DOCS; i++)
        simlsh__free_sized(&d->al, a->row[i].v.v, a->row[i].v.cap * sizeof *a->row[i].v.v);
    for (uint32_t w = 0; w < a->nw; w++)
        simlsh__free_sized(&d->al, a->seen[w], d->slot_cap * sizeof *a->seen[w]);
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

/* Make the lists of x and the unplaced documents after it (up to the first
 * candidate of the batch, where the walk stops). */
static int fill(simlsh_dedup *d, const simlsh_index *ix, uint32_t x, uint32_t need)
{
    dx_ahead *a = d->ahead;
    size_t n = 0;
    for (size_t k = d->cur; k < d->nlive && n < AHEAD_DOCS; k++) {
        uint32_t y = d->order[k];
        if (d->cent[y] != DX_NONE)
            continue;
        if (n > 0 && d->pend[y] == d->win)
            break;
        a->row[n++].x = y;
    }
    if (n == 0 || a->row[0].x != x)
        return SIMLSH_EINVAL; /* (cannot happen: x is the walk's next) */
    uint32_t workers = 1;
    if (a->last_docs > 0 && a->last_visits > AHEAD_THREADED * a->last_docs) {
        workers = simlsh__par_workers(d->nthreads, n);
        if (workers > AHEAD_WORKERS)
            workers = AHEAD_WORKERS;
    }
    for (; a->nw < workers; a->nw++) {
        a->seen[a->nw] = simlsh__calloc(&d->al, d->slot_cap, sizeof *a->seen[a->nw]);
        if (a->seen[a->nw] == NULL)
            return SIMLSH_ENOMEM;
        a->stamp[a->nw] = 0;
    }
    simlsh__lockal la;
    simlsh__lockal_init(&la, &d->al);
    ahead_ctx c = {d, ix, a, need, &la.al};
    int rc = simlsh__par_run(workers, n, ahead_unit, &c, NULL);
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
