/* Samples kept between batches: the sample test of exact.c (sample_below())
 * run before any text is asked for, on samples kept from the texts handed
 * over before.
 *
 * A template most of a corpus shares puts each document in many batches,
 * each time as a candidate that the sample test rejects: its text was read
 * and shingled again for each of them. A kept sample is a text's distinct
 * hashes of level s or more (exact.c's keep_sample()), complete from s up,
 * so at every level from the higher of the two documents' s up the test
 * counts exactly what sample_below() counts on their texts. A pair it
 * rejects there is rejected with the same verdict the texts would give; one
 * it cannot decide goes on to its texts as before. So the groups are the
 * same, and only the texts asked for change. */
#include <string.h>

#include "checked.h"
#include "internal.h"
#include "pool.h"

#define FREE_N(p, n) simlsh__free_sized(&d->al, (p), (n) * sizeof *(p))

/* Samples go in chunks of this many values (a sample never spans two), so
 * that keeping more never copies what is kept. */
#define CHUNK_VALUES ((size_t)1 << 17)

/* Where slot s's sample starts. */
static inline const uint32_t *words_of(const simlsh_dedup *d, uint32_t s)
{
    uint64_t at = d->soff[s];
    return d->chunk[at >> 32] + (size_t)(uint32_t)at * d->sw;
}

static inline uint64_t value_at(const uint32_t *w, unsigned sw, size_t i)
{
    if (sw == 1)
        return w[i];
    return (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
}

int simlsh__dx_sample_has(const simlsh_dedup *d, uint32_t s)
{
    return d->scnt != NULL && d->scnt[s] != 0;
}

static size_t chunk_bytes(const simlsh_dedup *d)
{
    return CHUNK_VALUES * (d->params.hash_bits == 32 ? 1 : 2) * sizeof **d->chunk;
}

int simlsh__dx_sample_room(const simlsh_dedup *d)
{
    return d->mode == SIMLSH_DEDUP_EXACT && d->prefilter > 0 &&
           ((d->nchunks > 0 && d->cused < CHUNK_VALUES) ||
            d->sample_bytes + chunk_bytes(d) <= d->sample_memory);
}

void simlsh__dx_sample_store(simlsh_dedup *d, uint32_t s, const dx_kept *k)
{
    if (k->v == NULL || k->n == 0 || k->n > CHUNK_VALUES || simlsh__dx_sample_has(d, s))
        return;
    int fresh = d->nchunks == 0 || d->cused + k->n > CHUNK_VALUES; /* needs a new chunk */
    if (fresh && d->sample_bytes + chunk_bytes(d) > d->sample_memory)
        return;
    if (d->scnt == NULL) {
        d->sw = d->params.hash_bits == 32 ? 1 : 2;
        d->soff = simlsh__calloc(&d->al, d->slot_cap, sizeof *d->soff);
        d->scnt = simlsh__calloc(&d->al, d->slot_cap, sizeof *d->scnt);
        d->slvl = simlsh__calloc(&d->al, d->slot_cap, sizeof *d->slvl);
        if (d->soff == NULL || d->scnt == NULL || d->slvl == NULL) {
            simlsh__dx_samples_free(d);
            d->sample_memory = 0; /* none, then */
            return;
        }
    }
    if (fresh) {
        if (d->nchunks == d->chunk_cap) {
            size_t c = d->chunk_cap ? 2 * d->chunk_cap : 16;
            uint32_t **v = simlsh__calloc(&d->al, c, sizeof *v);
            if (v == NULL)
                return;
            if (d->nchunks)
                memcpy(v, d->chunk, d->nchunks * sizeof *v);
            FREE_N(d->chunk, d->chunk_cap);
            d->chunk = v;
            d->chunk_cap = c;
        }
        size_t bytes = chunk_bytes(d);
        uint32_t *c = simlsh__malloc(&d->al, bytes);
        if (c == NULL)
            return;
        d->chunk[d->nchunks++] = c;
        d->cused = 0;
        d->sample_bytes += bytes;
    }
    uint32_t *w = d->chunk[d->nchunks - 1] + d->cused * d->sw;
    for (uint32_t i = 0; i < k->n; i++) {
        uint64_t h = k->v[i];
        if (d->sw == 1) {
            w[i] = (uint32_t)h;
        } else {
            w[2 * i] = (uint32_t)h;
            w[2 * i + 1] = (uint32_t)(h >> 32);
        }
    }
    d->soff[s] = (uint64_t)(d->nchunks - 1) << 32 | d->cused;
    d->scnt[s] = k->n;
    d->slvl[s] = k->level;
    d->cused += k->n;
}

void simlsh__dx_samples_free(simlsh_dedup *d)
{
    for (size_t i = 0; i < d->nchunks; i++)
        simlsh__free_sized(&d->al, d->chunk[i], chunk_bytes(d));
    FREE_N(d->chunk, d->chunk_cap);
    FREE_N(d->soff, d->slot_cap);
    FREE_N(d->scnt, d->slot_cap);
    FREE_N(d->slvl, d->slot_cap);
    d->chunk = NULL;
    d->soff = NULL;
    d->scnt = NULL;
    d->slvl = NULL;
    d->nchunks = d->chunk_cap = d->cused = 0;
    d->sample_bytes = 0;
}

int simlsh__dx_kept_test(const uint32_t *a, size_t na, unsigned la, const uint32_t *b, size_t nb,
                         unsigned lb, unsigned sw, double t)
{
    size_t lc[DX_LEVELS] = {0}, mc[DX_LEVELS] = {0}, ic[DX_LEVELS] = {0};
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        uint64_t x = value_at(a, sw, i), y = value_at(b, sw, j);
        if (x < y) {
            lc[simlsh__dx_level(x)]++;
            i++;
        } else if (y < x) {
            mc[simlsh__dx_level(y)]++;
            j++;
        } else {
            unsigned l = simlsh__dx_level(x);
            lc[l]++;
            mc[l]++;
            ic[l]++;
            i++;
            j++;
        }
    }
    for (; i < na; i++)
        lc[simlsh__dx_level(value_at(a, sw, i))]++;
    for (; j < nb; j++)
        mc[simlsh__dx_level(value_at(b, sw, j))]++;
    /* complete from here up on both sides */
    unsigned low = la > lb ? la : lb;
    /* the first level as sample_below() takes it: the centre's counts from
     * its kept level up are its text's */
    unsigned s = DX_LEVELS - 1;
    size_t above = 0;
    while (s > DX_SAMPLE_MIN_LEVEL && s > la && above + lc[s] < DX_SAMPLE_FIRST)
        above += lc[s--];
    if (above + lc[s] < DX_SAMPLE_FIRST)
        return s == DX_SAMPLE_MIN_LEVEL ? 0 : -1;
    /* the mate's hashes above the first level count with it, as its
     * hashes of level s or more do in sample_below() */
    size_t inter = 0, others = 0;
    for (unsigned l = s + 1; l < DX_LEVELS; l++) {
        inter += ic[l];
        others += mc[l] - ic[l];
    }
    for (;; s--) {
        if (s < low)
            return -1;
        above += lc[s];
        inter += ic[s];
        others += mc[s] - ic[s];
        if (simlsh__dx_sample_rejects(inter, above + others, t))
            return 1;
        if (s == DX_SAMPLE_MIN_LEVEL)
            return 0;
    }
}

static int kept_below(const simlsh_dedup *d, uint32_t c, uint32_t m)
{
    return simlsh__dx_kept_test(words_of(d, c), d->scnt[c], d->slvl[c], words_of(d, m), d->scnt[m],
                                d->slvl[m], d->sw, d->threshold);
}

/* Pairs decided a unit at a time on threads: each writes only its pairs. */
#define PLAN_RUN 256

typedef struct {
    simlsh_dedup *d;
    double seq;
} plan_ctx;

static int plan_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    (void)worker;
    plan_ctx *pc = ctx;
    simlsh_dedup *d = pc->d;
    size_t lo = unit * PLAN_RUN, hi = lo + PLAN_RUN < d->npairs ? lo + PLAN_RUN : d->npairs;
    for (size_t k = lo; k < hi; k++) {
        dx_pair *p = &d->pairs[k];
        if (p->verdict >= 0 || !((double)p->eq < pc->seq) || d->scnt[p->centre] == 0 ||
            d->scnt[p->mate] == 0 || kept_below(d, p->centre, p->mate) != 1)
            continue;
        p->verdict = 0;
        p->score = 0;
        p->planned = 1;
    }
    return 0;
}

void simlsh__dx_sample_plan(simlsh_dedup *d)
{
    if (d->scnt == NULL || d->prefilter <= 0 || d->npairs == 0)
        return;
    plan_ctx pc = {d, simlsh__dx_sample_eq(d)};
    size_t units = (d->npairs + PLAN_RUN - 1) / PLAN_RUN;
    /* (no unit fails: each only reads the samples and writes its pairs) */
    (void)simlsh__par_run(simlsh__par_workers(d->nthreads, units), units, plan_unit, &pc, NULL);
    size_t decided = 0;
    for (size_t k = 0; k < d->npairs; k++)
        decided += d->pairs[k].planned;
    if (decided == 0)
        return;
    d->st[SIMLSH_DEDUP_STAT_EXACT] += decided;
    d->st[SIMLSH_DEDUP_STAT_SAMPLED] += decided;
    /* texts no undecided pair needs are not asked for: those of neither
     * side of one (seen[] marks the others; a document can be a centre
     * and a candidate of the batch at once) */
    if (++d->stamp == 0) {
        memset(d->seen, 0, d->nslots * sizeof *d->seen);
        d->stamp = 1;
    }
    for (size_t k = 0; k < d->npairs; k++)
        if (d->pairs[k].verdict < 0)
            d->seen[d->pairs[k].centre] = d->seen[d->pairs[k].mate] = d->stamp;
    for (size_t m = 0; m < d->nwm; m++) {
        uint32_t v = d->wm[m];
        if (d->seen[v] == d->stamp)
            continue;
        d->mdone[m] = 1;
        if (d->got[v] != d->win) {
            d->got[v] = d->win;
            d->need_left--;
        }
    }
    for (size_t ci = 0; ci < d->nwc; ci++) {
        uint32_t x = d->wc[ci];
        if (d->seen[x] != d->stamp && d->got[x] != d->win) {
            d->got[x] = d->win;
            d->need_left--;
        }
    }
}
