/* The exact comparison of the texts a batch of the dedup engine asked for:
 * each centre's shingle set becomes a hash table, then each other text is
 * shingled once, its distinct hashes found, and each of its pairs decided
 * by probing its centre's table, stopping as soon as the threshold can no
 * longer be reached. A text identical to its centre's is decided without
 * shingling. Sets hold 64-bit values (32-bit hashes widened), so both hash
 * widths give the Jaccard of the same sets the rest of the library
 * compares. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "checked.h"
#include "radix.h"
#include "internal.h"
#include "pool.h"
#include "shingle.h"
#include "util/min-inter.h"
#include "worker.h"

size_t simlsh__dx_set_bytes(const dx_set *s)
{
    return s->cap * (sizeof *s->tab + (s->cnt != NULL ? sizeof *s->cnt : 0)) + s->len;
}

void simlsh__dx_set_free(const simlsh_allocator *al, dx_set *s)
{
    simlsh__free_sized(al, s->tab, s->cap * sizeof *s->tab);
    simlsh__free_sized(al, s->cnt, s->cap * sizeof *s->cnt);
    simlsh__free_sized(al, s->text, s->len);
    memset(s, 0, sizeof *s);
}

/* ---- centres -------------------------------------------------------------------- */

#define SAMPLE_MASK (((uint64_t)1 << DX_SAMPLE_MIN_LEVEL) - 1)

/* An empty table of cap entries (a power of 2) for s, with counts if asked
 * (a whole set; a sample has none); 0 or ENOMEM (then
 * s is unchanged). */
static int table_new(const simlsh_allocator *al, dx_set *s, size_t cap, int counts)
{
    uint64_t *tab = simlsh__calloc(al, cap, sizeof *tab);
    uint32_t *cnt = counts ? simlsh__calloc(al, cap, sizeof *cnt) : NULL;
    if (tab == NULL || (counts && cnt == NULL)) {
        simlsh__free_sized(al, tab, cap * sizeof *tab);
        simlsh__free_sized(al, cnt, cap * sizeof *cnt);
        return SIMLSH_ENOMEM;
    }
    s->tab = tab;
    s->cnt = cnt;
    s->cap = cap;
    unsigned bits = 0;
    while (((size_t)1 << bits) < cap)
        bits++;
    s->shift = 64 - bits;
    return 0;
}

/* Add h (not 0) once more to s's table; n counts distinct entries. */
static inline void table_add(dx_set *s, uint64_t h, uint32_t times, size_t *n)
{
    size_t p = home_of(h, s->shift);
    while (s->tab[p] != 0 && s->tab[p] != h)
        p = (p + 1) & (s->cap - 1);
    *n += s->tab[p] == 0;
    s->tab[p] = h;
    if (s->cnt != NULL)
        s->cnt[p] += times;
}

/* Twice the table, its entries and counts kept. */
static int table_grow(const simlsh_allocator *al, dx_set *s)
{
    dx_set old = *s;
    size_t n = 0;
    if (table_new(al, s, 2 * old.cap, old.cnt != NULL) < 0) {
        *s = old;
        return SIMLSH_ENOMEM;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.tab[i] != 0)
            table_add(s, old.tab[i], old.cnt != NULL ? old.cnt[i] : 0, &n);
    simlsh__free_sized(al, old.tab, old.cap * sizeof *old.tab);
    simlsh__free_sized(al, old.cnt, old.cap * sizeof *old.cnt);
    return 0;
}

/* t's table from w->h: with mask 0 the whole set, every hash with its
 * multiplicity (a near-copy's set is then this text's, less what its
 * edits remove and plus what they add); with SAMPLE_MASK only its sample,
 * the hashes whose masked bits are 0. The level counts of what it holds
 * go with it. The table is sized for a quarter of the hashes (a sample's
 * for half of those it may keep) and grown at half full: texts that
 * repeat themselves (licences pasted many times) need far less. On ENOMEM t's table fields are as they were; on
 * success the old table is the caller's to free. */
static int fill(dx_worker *w, dx_set *t, uint64_t mask)
{
    dx_set u = *t;
    size_t cap = 16, n = 0;
    while (cap < (mask ? w->hn >> DX_SAMPLE_MIN_LEVEL : w->hn / 2))
        cap *= 2;
    int rc = table_new(w->al, &u, cap, mask == 0); /* a sample needs no counts */
    if (rc < 0)
        return rc;
    u.zero = 0;
    u.zcnt = 0;
    memset(u.level, 0, sizeof u.level);
    for (size_t i = 0; i < w->hn; i++) {
        uint64_t h = w->h[i];
        if (h == 0) { /* (never in a sample) */
            u.zero = mask == 0;
            u.zcnt += mask == 0;
            continue;
        }
        if ((h & mask) != 0)
            continue;
        if (2 * (n + 1) > u.cap && (rc = table_grow(w->al, &u)) < 0) {
            simlsh__free_sized(w->al, u.tab, u.cap * sizeof *u.tab);
            simlsh__free_sized(w->al, u.cnt, u.cap * sizeof *u.cnt);
            return rc;
        }
        size_t before = n;
        table_add(&u, h, 1, &n);
        if (n != before)
            u.level[simlsh__dx_level(h)]++;
    }
    u.n = n + u.zero;
    u.full = mask == 0;
    *t = u;
    return 0;
}

/* ---- samples kept between batches ------------------------------------------------ */

/* A kept sample holds at least this many distinct hashes, unless the text
 * has fewer of level 2 or more (then all of them): enough for the sample
 * test to reject a pair of a shared template (J about 0.6 at t 0.8 needs
 * about 150 in the union) without its texts. */
#define KEEP_AT_LEAST 128
/* ... and is not kept when it would take more (a text of repeats) */
#define KEEP_AT_MOST ((size_t)1 << 16)

static int mate_levels(dx_worker *w);

/* The sample of the text whose hashes are in w->h, to keep between
 * batches: its distinct hashes of the highest level s that gives
 * KEEP_AT_LEAST of them (level s or more), ascending. The test on kept
 * samples (samples.c) sees at every level from s up what sample_below()
 * sees. Nothing (k->v NULL) on ENOMEM or past KEEP_AT_MOST. */
static void keep_sample(dx_worker *w, dx_kept *k)
{
    /* the text's sampled hashes by level, highest first: those of level s
     * or more are w->lvh[0 .. lvend[s]), with repeats */
    if (mate_levels(w) < 0)
        return;
    unsigned s = DX_LEVELS - 1;
    while (s > DX_SAMPLE_MIN_LEVEL && w->lvend[s] < KEEP_AT_LEAST)
        s--;
    for (;;) {
        size_t n = w->lvend[s];
        if (n > KEEP_AT_MOST)
            return;
        size_t m = n ? n : 1;
        uint64_t *v = simlsh__malloc(w->al, m * sizeof *v);
        uint64_t *tmp = simlsh__malloc(w->al, m * sizeof *tmp);
        if (v == NULL || tmp == NULL) {
            simlsh__free_sized(w->al, v, m * sizeof *v);
            simlsh__free_sized(w->al, tmp, m * sizeof *tmp);
            return;
        }
        memcpy(v, w->lvh, n * sizeof *v);
        simlsh__sort_hashes64(v, tmp, n, w->top);
        simlsh__free_sized(w->al, tmp, m * sizeof *tmp);
        size_t nd = 0;
        for (size_t i = 0; i < n; i++)
            if (nd == 0 || v[nd - 1] != v[i])
                v[nd++] = v[i];
        /* repeats: a level with too few distinct ones goes lower */
        if (nd < KEEP_AT_LEAST && s > DX_SAMPLE_MIN_LEVEL) {
            simlsh__free_sized(w->al, v, m * sizeof *v);
            s--;
            continue;
        }
        k->v = v;
        k->n = (uint32_t)nd;
        k->level = (uint8_t)s;
        k->cap = m;
        return;
    }
}

/* Centre k's set: whole if one of its pairs needs it (want), else its
 * sample (made whole later by make_whole() if a pair passes the sample). */
static int build_centre(dx_worker *w, const dx_job *j, size_t k)
{
    size_t ti = j->centres[k];
    dx_set *s = j->centre_sets[k];
    const void *text = j->texts[ti];
    size_t len = j->lens[ti];
    int rc = simlsh__dx_shingle(w, j->params, text, len);
    if (rc == SIMLSH_EUTF8) {
        s->missing = 1;
        return 0;
    }
    if (rc < 0)
        return rc;
    if (j->keep_sample != NULL && j->keep_sample[ti])
        keep_sample(w, &j->kept[ti]);
    dx_set t = {0};
    t.text = len > 0 ? simlsh__malloc(w->al, len) : NULL;
    if (len > 0 && t.text == NULL)
        return SIMLSH_ENOMEM;
    t.len = len;
    if (len > 0)
        memcpy(t.text, text, len);
    rc = fill(w, &t, s->want ? 0 : SAMPLE_MASK);
    if (rc < 0) {
        simlsh__dx_set_free(w->al, &t);
        return rc;
    }
    t.ready = 1;
    *s = t;
    return 0;
}

/* A sampled set made whole from its kept text; its sample table goes. */
static int make_whole(dx_worker *w, const dx_job *j, dx_set *s)
{
    int rc = simlsh__dx_shingle(w, j->params, s->text, s->len);
    if (rc == SIMLSH_EUTF8) { /* (it was shingled before: cannot happen) */
        s->missing = 1;
        return 0;
    }
    dx_set sample = *s;
    if (rc < 0 || (rc = fill(w, s, 0)) < 0)
        return rc;
    simlsh__free_sized(w->al, sample.tab, sample.cap * sizeof *sample.tab);
    simlsh__free_sized(w->al, sample.cnt, sample.cap * sizeof *sample.cnt);
    return 0;
}

/* ---- mates -------------------------------------------------------------------------- */

/* Room for the matched marks of a table of cap entries, all stale. */
static int hit_room(dx_worker *w, size_t cap)
{
    if (cap > w->hitcap) {
        uint32_t *h = simlsh__calloc(w->al, cap, sizeof *h);
        if (h == NULL)
            return SIMLSH_ENOMEM;
        simlsh__free_sized(w->al, w->hit, w->hitcap * sizeof *w->hit);
        w->hit = h;
        w->hitcap = cap;
        w->hcur = 0;
    }
    if (++w->hcur == 0) {
        memset(w->hit, 0, w->hitcap * sizeof *w->hit);
        w->hcur = 1;
    }
    return 0;
}

/* Count hash h (not 0) of the mate in w->h against centre c's table: a
 * shared one once (its entry marked), another distinct one once (the
 * distinct-finding table). The one count of the sample test and of the
 * whole comparison. 0 or SIMLSH_ENOMEM. */
static inline int tally(dx_worker *w, const dx_set *c, uint64_t h, size_t *inter, size_t *others)
{
    size_t e = set_find(c, h);
    if (e != SIZE_MAX) {
        if (w->hit[e] != w->hcur) {
            w->hit[e] = w->hcur;
            (*inter)++;
        }
        return 0;
    }
    if (2 * (w->kn + 1) > w->kcap) {
        int rc = simlsh__dx_key_grow(w);
        if (rc < 0)
            return rc;
    }
    int fresh = key_new(w, h);
    *others += (size_t)fresh;
    w->kn += (size_t)fresh;
    return 0;
}

/* The sampled hashes of w->h (level DX_SAMPLE_MIN_LEVEL or more, with
 * repeats) into w->lvh, the higher levels first, once per text: gathered
 * without a branch behind the output, then sorted by level (counting). */
static int mate_levels(dx_worker *w)
{
    if (w->lv_ok)
        return 0;
    size_t hn = w->hn, room;
    if (!simlsh__mul_ok(hn, 2 * sizeof *w->lvh, &room))
        return SIMLSH_ENOMEM;
    if (2 * hn > w->lvcap) {
        uint64_t *v = simlsh__malloc(w->al, room);
        if (v == NULL)
            return SIMLSH_ENOMEM;
        simlsh__free_sized(w->al, w->lvh, w->lvcap * sizeof *w->lvh);
        w->lvh = v;
        w->lvcap = 2 * hn;
    }
    uint64_t *got = w->lvh + hn;
    size_t n = 0, cnt[DX_LEVELS] = {0}, at[DX_LEVELS];
    for (size_t i = 0; i < hn; i++) {
        uint64_t h = w->h[i];
        got[n] = h;
        n += h != 0 && (h & SAMPLE_MASK) == 0;
    }
    for (size_t i = 0; i < n; i++)
        cnt[simlsh__dx_level(got[i])]++;
    w->lvend[DX_LEVELS] = 0;
    for (unsigned l = DX_LEVELS; l-- > 0;) {
        at[l] = w->lvend[l + 1];
        w->lvend[l] = w->lvend[l + 1] + cnt[l];
    }
    for (size_t i = 0; i < n; i++)
        w->lvh[at[simlsh__dx_level(got[i])]++] = got[i];
    w->lv_ok = 1;
    return 0;
}

/* Is the pair of centre c and the mate whose hashes are in w->h below t
 * beyond doubt, judged from samples of the two sets? The hashes of level
 * s or more (simlsh__dx_level()) are taken from both sides, for s going down from
 * where c has DX_SAMPLE_FIRST of them to DX_SAMPLE_MIN_LEVEL, each level adding
 * the hashes of that level. Given the u hashes of the union sampled so
 * far, the i shared ones are drawn from the union without replacement, so
 * (Hoeffding) P(i or fewer) is at most the binomial's, and by Chernoff at
 * most exp(-u KL(i/u || t)) for a pair at J >= t. The pair is rejected
 * when that is under e^-SAMPLE_DOUBT: a pair at or above t is rejected
 * with probability under 1.2e-7 a level. The sample depends on the hashes
 * alone, so a pair gets the same answer in every run and at every thread
 * count. With SIMLSH_ENOMEM the sample is not taken (0). */
static int sample_below(dx_worker *w, const dx_job *j, const dx_set *c)
{
    double t = j->threshold;
    size_t above = 0; /* c's hashes of level s or more, once level s is in */
    unsigned s = DX_LEVELS - 1;
    while (s > DX_SAMPLE_MIN_LEVEL && above + c->level[s] < DX_SAMPLE_FIRST)
        above += c->level[s--];
    if (above + c->level[s] < DX_SAMPLE_FIRST || mate_levels(w) < 0 || hit_room(w, c->cap) < 0 ||
        simlsh__dx_key_room(w, 64) < 0)
        return 0;
    w->kn = 0;
    size_t inter = 0, others = 0;
    for (size_t at = 0;; s--) {
        above += c->level[s];
        for (; at < w->lvend[s]; at++) { /* level s or more */
            uint64_t h = w->lvh[at];
            if (tally(w, c, h, &inter, &others) < 0)
                return 0;
        }
        if (simlsh__dx_sample_rejects(inter, above + others, t)) {
            w->sampled++;
            return 1;
        }
        if (s == DX_SAMPLE_MIN_LEVEL)
            return 0;
    }
}

/* Decide pair p for the mate whose hashes (with repeats, in text order)
 * are w->h[0 .. w->hn). A near-duplicate's hashes are nearly all in the
 * centre's set: each is found there once (its entry marked, so a repeat
 * is not counted twice), and only the others go to the distinct-finding
 * table. Stops once the threshold is out of reach: with i shared and m
 * other distinct values so far and r hashes left, at most i + r are
 * shared and at least i + m distinct in all. */
static int decide_exact(dx_worker *w, const dx_job *j, dx_pair *p, const dx_set *c)
{
    double t = j->threshold;
    size_t na = c->n, n = w->hn, inter = 0, others = 0;
    int zero = 0;
    int rc = hit_room(w, c->cap);
    if (rc < 0)
        return rc;
    w->exact++;
    p->verdict = 0;
    p->score = 0;
    /* the other values' table starts small and grows with them: a
     * near-copy has few, an unlike text stops early */
    if ((rc = simlsh__dx_key_room(w, n < 512 ? n : 512)) < 0)
        return rc;
    w->kn = 0;
    for (size_t at = 0; at < n;) {
        size_t end = n - at > 256 ? at + 256 : n;
        for (; at < end; at++) {
            uint64_t h = w->h[at];
            if (h == 0) {
                if (!zero) {
                    zero = 1;
                    if (c->zero)
                        inter++;
                    else
                        others++;
                }
                continue;
            }
            if ((rc = tally(w, c, h, &inter, &others)) < 0)
                return rc;
        }
        /* reachable: at most i + r shared, at least na + i + m in all, and
         * the shared count a total needs grows with it; in integers, as
         * the final decision, so a pair exactly at t is never cut */
        if (inter + (n - at) < simlsh__min_inter(na + inter + others, t))
            return 0;
    }
    size_t nb = inter + others, total = na + nb;
    if (inter < simlsh__min_inter(total, t))
        return 0;
    size_t uni = total - inter;
    p->verdict = 1;
    p->score = uni == 0 ? 1.0 : (double)inter / (double)uni;
    return 0;
}

static void decide_estimate(dx_worker *w, const dx_job *j, dx_pair *p)
{
    w->estimated++;
    p->score = (double)p->eq / (double)j->num_perm;
    p->verdict = p->score >= j->threshold;
}

/* Is pair p doubtful: an estimate well below the threshold (simlsh__dx_sample_eq())? */
static inline int doubtful(const dx_job *j, const dx_pair *p)
{
    return (double)p->eq < j->sample_eq;
}

/* Decide the pairs of mate m. A doubtful pair is first put to the sample
 * test; one that passes it and whose centre has only its sample waits
 * (mate_pending) for the run to make that set whole. Late: the second
 * time, for the pairs that waited. */
static int decide_mate(dx_worker *w, const dx_job *j, size_t m, int late)
{
    size_t ti = j->mates[m];
    const void *text = j->texts[ti];
    size_t len = j->lens[ti];
    int shingled = 0, missing = 0, waits = 0;
    for (size_t k = j->first[m]; k < j->first[m + 1]; k++) {
        dx_pair *p = &j->pairs[j->pair_of[k]];
        const dx_set *c = j->set_of[j->pair_of[k]];
        if (p->verdict >= 0)
            continue; /* (decided from kept samples, or early) */
        if (c->missing || missing) {
            decide_estimate(w, j, p);
            continue;
        }
        if (!late && c->len == len && (len == 0 || memcmp(c->text, text, len) == 0)) {
            w->exact++;
            w->identical++;
            p->verdict = 1;
            p->score = 1.0;
            continue;
        }
        if (!late && c->full) {
            int rd = simlsh__dx_decide_diff(w, j, p, c, text, len);
            if (rd < 0)
                return rd;
            if (rd == 1)
                continue;
        }
        if (w->h_window)
            shingled = 0; /* the windows' hashes replaced the text's */
        if (!shingled) {
            w->h_window = 0;
            int rc = simlsh__dx_shingle(w, j->params, text, len);
            if (rc == SIMLSH_EUTF8) {
                missing = 1;
                j->mate_missing[m] = 1;
                decide_estimate(w, j, p);
                continue;
            }
            if (rc < 0)
                return rc;
            shingled = 1;
            if (j->keep_sample != NULL && j->keep_sample[ti] && j->kept[ti].v == NULL)
                keep_sample(w, &j->kept[ti]);
        }
        if (!late && doubtful(j, p) && sample_below(w, j, c)) {
            w->exact++;
            p->verdict = 0;
            p->score = 0;
            continue;
        }
        if (!c->full) {
            waits = 1;
            continue;
        }
        int rc = decide_exact(w, j, p, c);
        if (rc < 0)
            return rc;
    }
    if (waits)
        j->mate_pending[m] = 1;
    else
        j->mate_done[m] = 1;
    return 0;
}

/* ---- the job ---------------------------------------------------------------------- */

typedef struct {
    dx_job *job;
    dx_worker *w;
    uint32_t nw;    /* workers set up (w[0 .. nw)) */
    dx_set **whole; /* sets to make whole (stage 3) */
    size_t *late;   /* mates with pairs waiting for them (stage 4) */
} dx_run;

#define CENTRE_RUN 4
#define MATE_RUN 16

static int centre_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    size_t lo = unit * CENTRE_RUN, hi = lo + CENTRE_RUN;
    if (hi > r->job->ncentres)
        hi = r->job->ncentres;
    for (size_t k = lo; k < hi; k++) {
        int rc = build_centre(&r->w[worker], r->job, k);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int mate_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    size_t lo = unit * MATE_RUN, hi = lo + MATE_RUN;
    if (hi > r->job->nmates)
        hi = r->job->nmates;
    for (size_t m = lo; m < hi; m++) {
        int rc = decide_mate(&r->w[worker], r->job, m, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int whole_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    return make_whole(&r->w[worker], r->job, r->whole[unit]);
}

static int late_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    return decide_mate(&r->w[worker], r->job, r->late[unit], 1);
}

struct dx_scratch {
    dx_worker *w;
    uint32_t n;
};

static void worker_free(const simlsh_allocator *al, dx_worker *w)
{
    simlsh__free_sized(al, w->h, w->hcap * sizeof *w->h);
    simlsh__free_sized(al, w->key, w->kcap * sizeof *w->key);
    simlsh__free_sized(al, w->stamp, w->kcap * sizeof *w->stamp);
    simlsh__free_sized(al, w->kval, w->kcap * sizeof *w->kval);
    simlsh__free_sized(al, w->touched, w->tcap * sizeof *w->touched);
    simlsh__free_sized(al, w->hit, w->hitcap * sizeof *w->hit);
    simlsh__free_sized(al, w->lvh, w->lvcap * sizeof *w->lvh);
}

void simlsh__dx_scratch_free(const simlsh_allocator *al, dx_scratch *sc)
{
    if (sc == NULL)
        return;
    for (uint32_t i = 0; i < sc->n; i++)
        worker_free(al, &sc->w[i]);
    simlsh__free_sized(al, sc->w, sc->n * sizeof *sc->w);
    simlsh__free_sized(al, sc, sizeof *sc);
}

/* Workers' buffers are kept between calls in *j->scratch: a batch's
 * tables are in the next batch's way already grown and faulted in. */
static dx_worker *workers_for(dx_job *j, uint32_t n)
{
    dx_scratch *sc = *j->scratch;
    if (sc == NULL) {
        if ((sc = simlsh__calloc(j->al, 1, sizeof *sc)) == NULL)
            return NULL;
        *j->scratch = sc;
    }
    if (sc->n < n) {
        dx_worker *w = simlsh__calloc(j->al, n, sizeof *w);
        if (w == NULL)
            return NULL;
        if (sc->n)
            memcpy(w, sc->w, sc->n * sizeof *w);
        simlsh__free_sized(j->al, sc->w, sc->n * sizeof *sc->w);
        sc->w = w;
        sc->n = n;
    }
    return sc->w;
}

/* Stages 3 and 4 of a run: the sets that waiting pairs need are made
 * whole, then those pairs decided. */
static int run_waiting(dx_job *j, dx_run *r, const simlsh_allocator *al)
{
    size_t nlate = 0, nwhole = 0, npairs = j->first[j->nmates];
    for (size_t m = 0; m < j->nmates; m++)
        nlate += j->mate_pending[m];
    if (nlate == 0)
        return 0;
    size_t *late = simlsh__malloc(al, nlate * sizeof *late);
    dx_set **whole = simlsh__malloc(al, npairs * sizeof *whole);
    size_t *before = simlsh__malloc(al, npairs * sizeof *before);
    int rc = late == NULL || whole == NULL || before == NULL ? SIMLSH_ENOMEM : 0;
    nlate = 0;
    for (size_t m = 0; rc == 0 && m < j->nmates; m++) {
        if (!j->mate_pending[m])
            continue;
        late[nlate++] = m;
        for (size_t k = j->first[m]; k < j->first[m + 1]; k++) {
            dx_set *c = j->set_of[j->pair_of[k]];
            /* want 2: listed (1 may be an earlier set's, wanted in stage 0) */
            if (j->pairs[j->pair_of[k]].verdict < 0 && !c->full && !c->missing && c->want < 2) {
                c->want = 2;
                before[nwhole] = simlsh__dx_set_bytes(c);
                whole[nwhole++] = c;
            }
        }
    }
    r->whole = whole;
    r->late = late;
    /* no more workers than were set up for the first stages */
    uint32_t nw = simlsh__par_workers(j->nthreads, nwhole);
    if (rc == 0 && nwhole > 0)
        rc = simlsh__par_run(nw < r->nw ? nw : r->nw, nwhole, whole_unit, r, NULL);
    for (size_t i = 0; i < nwhole; i++)
        if (whole[i]->old)
            j->grown += simlsh__dx_set_bytes(whole[i]) - before[i];
    nw = simlsh__par_workers(j->nthreads, nlate);
    if (rc == 0)
        rc = simlsh__par_run(nw < r->nw ? nw : r->nw, nlate, late_unit, r, NULL);
    simlsh__free_sized(al, late, nlate * sizeof *late);
    simlsh__free_sized(al, whole, npairs * sizeof *whole);
    simlsh__free_sized(al, before, npairs * sizeof *before);
    return rc;
}

int simlsh__dx_run(dx_job *j)
{
    size_t units_c = (j->ncentres + CENTRE_RUN - 1) / CENTRE_RUN;
    size_t units_m = (j->nmates + MATE_RUN - 1) / MATE_RUN;
    size_t most = units_c > units_m ? units_c : units_m;
    if (most == 0)
        return 0;
    uint32_t workers = simlsh__par_workers(j->nthreads, most);
    simlsh__lockal la;
    simlsh__lockal_init(&la, j->al);
    struct simlsh_params p = *j->params;
    p.alloc = la.al;
    int rc = 0;
    dx_worker *w = workers_for(j, workers);
    if (w == NULL)
        rc = SIMLSH_ENOMEM;
    for (uint32_t i = 0; w != NULL && i < workers; i++) {
        w[i].al = &la.al;
        w[i].top = j->params->hash_bits == 32 ? 32 : 64;
        w[i].sh = NULL;
        w[i].exact = w[i].identical = w[i].estimated = w[i].edits = w[i].sampled = 0;
    }
    for (uint32_t i = 0; rc == 0 && i < workers; i++)
        rc = simlsh__shingler_new(&w[i].sh, &p);
    dx_run r = {j, w, workers, NULL, NULL};
    /* stage 0: a set is made whole at once when a pair needs it (not
     * doubtful, or no sample test) */
    uint8_t *pending = rc == 0 ? simlsh__calloc(&la.al, j->nmates ? j->nmates : 1, 1) : NULL;
    if (rc == 0 && pending == NULL)
        rc = SIMLSH_ENOMEM;
    j->mate_pending = pending;
    for (size_t m = 0; rc == 0 && m < j->nmates; m++)
        for (size_t k = j->first[m]; k < j->first[m + 1]; k++) {
            dx_set *c = j->set_of[j->pair_of[k]];
            c->old = c->ready;
            c->want |= !doubtful(j, &j->pairs[j->pair_of[k]]);
        }
    if (rc == 0 && units_c > 0)
        rc = simlsh__par_run(simlsh__par_workers(j->nthreads, units_c), units_c, centre_unit, &r,
                             NULL);
    if (rc == 0 && units_m > 0)
        rc = simlsh__par_run(simlsh__par_workers(j->nthreads, units_m), units_m, mate_unit, &r,
                             NULL);
    if (rc == 0)
        rc = run_waiting(j, &r, &la.al);
    for (size_t m = 0; m < j->nmates; m++)
        for (size_t k = j->first[m]; k < j->first[m + 1]; k++)
            j->set_of[j->pair_of[k]]->want = 0;
    simlsh__free_sized(&la.al, pending, j->nmates ? j->nmates : 1);
    j->mate_pending = NULL;
    if (rc < 0) {
        /* nothing taken: the sets built so far go, the verdicts are undone */
        for (size_t k = 0; k < j->ncentres; k++)
            simlsh__dx_set_free(&la.al, j->centre_sets[k]);
        for (size_t m = 0; m < j->nmates; m++) {
            j->mate_done[m] = 0;
            j->mate_missing[m] = 0;
            for (size_t k = j->first[m]; k < j->first[m + 1]; k++)
                if (!j->pairs[j->pair_of[k]].planned)
                    j->pairs[j->pair_of[k]].verdict = -1;
        }
    }
    for (uint32_t i = 0; w != NULL && i < workers; i++) {
        j->exact += rc == 0 ? w[i].exact : 0;
        j->identical += rc == 0 ? w[i].identical : 0;
        j->estimated += rc == 0 ? w[i].estimated : 0;
        j->edits += rc == 0 ? w[i].edits : 0;
        j->sampled += rc == 0 ? w[i].sampled : 0;
        simlsh__shingler_free(w[i].sh); /* it holds the call's allocator */
        w[i].sh = NULL;
        w[i].al = NULL;
    }
    simlsh__lockal_done(&la);
    return rc;
}
