/* The dedup engine's texts calls: the texts (or the absence) of a batch's
 * documents handed over, checked whole before anything changes, and the
 * pairs whose texts are all in decided by exact.c (dedup.c says how the
 * batches are made and resolved). */
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "internal.h"
#include "handle.h"

/* ---- texts -------------------------------------------------------------------------- */

static uint32_t batch_slot(const simlsh_dedup *d, uint64_t id)
{
    size_t lo = 0, hi = d->nbidx;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->bidx[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->nbidx && d->bidx[lo].id == id ? d->bidx[lo].slot : DX_NONE;
}

/* A centre with pairs: its text makes a set. (A candidate taken ahead of
 * its turn may be a centre of none, dedup.c.) */
static int centre_with_pairs(const simlsh_dedup *d, uint32_t s)
{
    return simlsh__dx_is_centre(d, s) && d->cfirst[d->cpos[s]] < d->cfirst[d->cpos[s] + 1];
}

static void decide_by_estimate(simlsh_dedup *d, dx_pair *p)
{
    p->score = (double)p->eq / (double)d->num_perm;
    p->verdict = p->score >= d->threshold;
    d->st[SIMLSH_DEDUP_STAT_ESTIMATED]++;
}

/* Every centre of candidate m has its text (or its absence) in, counting
 * the centres of this call (marked by stamp in seen[]). */
static int centres_in(const simlsh_dedup *d, size_t m, uint32_t stamp)
{
    for (size_t k = d->mfirst[m]; k < d->mfirst[m + 1]; k++) {
        uint32_t c = d->pairs[d->mpair[k]].centre;
        if (d->got[c] != d->win && d->seen[c] != stamp)
            return 0;
    }
    return 1;
}

/* Take the texts (or, texts NULL, the absence) of n documents of the open
 * batch. */
static int take(simlsh_dedup *d, const uint64_t *ids, const void *const *texts, const size_t *lens,
                size_t n)
{
    if (n > 0 && (ids == NULL || (texts != NULL && lens == NULL)))
        return SIMLSH_EINVAL;
    if (!d->open)
        return n == 0 ? 0 : SIMLSH_EINVAL;
    /* check everything before anything changes */
    if (++d->stamp == 0) {
        memset(d->seen, 0, d->nslots * sizeof *d->seen);
        d->stamp = 1;
    }
    uint32_t st = d->stamp;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = batch_slot(d, ids[i]);
        if (s == DX_NONE || d->got[s] == d->win || d->seen[s] == st)
            return SIMLSH_EINVAL;
        if (texts != NULL && texts[i] == NULL && lens[i] > 0)
            return SIMLSH_EINVAL;
        d->seen[s] = st;
    }
    /* the job: this call's centres and the candidates ready to decide */
    size_t cap = n + d->nwm;
    int rc = 0, bad_utf8 = 0;
    const void **tx = simlsh__calloc(&d->al, cap ? cap : 1, sizeof *tx);
    size_t *tl = simlsh__calloc(&d->al, cap ? cap : 1, sizeof *tl);
    size_t *jc = simlsh__calloc(&d->al, n ? n : 1, sizeof *jc);
    dx_set **jcs = simlsh__calloc(&d->al, n ? n : 1, sizeof *jcs);
    size_t *jm = simlsh__calloc(&d->al, cap ? cap : 1, sizeof *jm);
    size_t *jmi = simlsh__calloc(&d->al, cap ? cap : 1, sizeof *jmi); /* candidate index */
    size_t *jf = simlsh__calloc(&d->al, cap + 1, sizeof *jf);
    uint32_t *jp = simlsh__calloc(&d->al, d->npairs ? d->npairs : 1, sizeof *jp);
    dx_set **so = simlsh__calloc(&d->al, d->npairs ? d->npairs : 1, sizeof *so);
    uint8_t *jmiss = simlsh__calloc(&d->al, cap ? cap : 1, 1);
    uint8_t *jdone = simlsh__calloc(&d->al, cap ? cap : 1, 1);
    uint8_t *newheld = simlsh__calloc(&d->al, d->nwm ? d->nwm : 1, 1);
    /* samples to keep: per text, whether to keep its sample, and the sample */
    uint8_t *tkeep = simlsh__calloc(&d->al, cap ? cap : 1, 1);
    dx_kept *kept = simlsh__calloc(&d->al, cap ? cap : 1, sizeof *kept);
    size_t nt = 0, nc = 0, nm = 0, np = 0;
    int room = simlsh__dx_sample_room(d);
    double seq = simlsh__dx_sample_eq(d);
    if (!tx || !tl || !jc || !jcs || !jm || !jmi || !jf || !jp || !so || !jmiss || !jdone ||
        !newheld || !tkeep || !kept) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    /* centres said to be missing are so for the candidates decided below
     * (undone if the call fails) */
    for (size_t i = 0; i < n && texts == NULL; i++) {
        uint32_t s = batch_slot(d, ids[i]);
        if (simlsh__dx_is_centre(d, s))
            d->wset[d->cpos[s]].missing = 1;
    }
    for (size_t i = 0; i < n && texts != NULL; i++) {
        uint32_t s = batch_slot(d, ids[i]);
        if (!centre_with_pairs(d, s))
            continue;
        tx[nt] = texts[i];
        tl[nt] = lens[i];
        jc[nc] = nt++;
        jcs[nc++] = &d->wset[d->cpos[s]];
        /* whole at once if a pair of the batch will need it (exact.c); its
         * sample kept if a pair is put to the sample test */
        size_t ci = d->cpos[s];
        int doubts = 0;
        for (size_t k = d->cfirst[ci]; k < d->cfirst[ci + 1]; k++) {
            int doubtful = (double)d->pairs[k].eq < seq;
            d->wset[ci].want |= !doubtful;
            doubts |= doubtful;
        }
        if (simlsh__dx_is_mate(d,
                               s)) { /* a candidate too: its doubtful pairs want the same sample */
            size_t m = d->wpos[s];
            for (size_t k = d->mfirst[m]; k < d->mfirst[m + 1]; k++)
                doubts |=
                    d->pairs[d->mpair[k]].verdict < 0 && (double)d->pairs[d->mpair[k]].eq < seq;
        }
        tkeep[nt - 1] = doubts && room && !simlsh__dx_sample_has(d, s);
    }
    /* candidates with a text now, or held from before, whose centres are all in */
    for (size_t i = 0; i < n + d->nwm; i++) {
        size_t m;
        const void *t;
        size_t len;
        if (i < n) {
            uint32_t s = batch_slot(d, ids[i]);
            if (!simlsh__dx_is_mate(d, s) || texts == NULL)
                continue;
            m = d->wpos[s];
            t = texts[i];
            len = lens[i];
        } else {
            m = i - n;
            if (d->mdone[m] || d->held[m].text == NULL || d->seen[d->wm[m]] == st)
                continue;
            t = d->held[m].text;
            len = d->held[m].len;
        }
        if (!centres_in(d, m, st)) {
            if (i >= n)
                continue;
            /* its centre's text is still to come: keep a copy until then */
            char *c = len > 0 ? simlsh__malloc(&d->al, len) : NULL;
            if (len > 0 && c == NULL) {
                rc = SIMLSH_ENOMEM;
                goto out;
            }
            if (len > 0)
                memcpy(c, t, len);
            d->held[m].text = c;
            d->held[m].len = len;
            newheld[m] = 1;
            continue;
        }
        tx[nt] = t;
        tl[nt] = len;
        jm[nm] = nt++;
        jmi[nm] = m;
        jf[nm] = np;
        int doubts = 0;
        for (size_t k = d->mfirst[m]; k < d->mfirst[m + 1]; k++) {
            const dx_pair *pk = &d->pairs[d->mpair[k]];
            doubts |= pk->verdict < 0 && (double)pk->eq < seq;
            jp[np] = d->mpair[k];
            so[d->mpair[k]] = &d->wset[d->cpos[d->pairs[d->mpair[k]].centre]];
            np++;
        }
        /* (a centre too: its sample is kept as a centre's) */
        tkeep[nt - 1] = doubts && room && !simlsh__dx_sample_has(d, d->wm[m]) &&
                        !centre_with_pairs(d, d->wm[m]);
        nm++;
    }
    jf[nm] = np;
    /* pair_of in the job indexes d->pairs; set_of is by pair index too */
    dx_job job = {0};
    job.params = &d->params;
    job.threshold = d->threshold;
    job.diff_ok = simlsh__dx_diff_ok(&d->params);
    job.sample_eq = simlsh__dx_sample_eq(d);
    job.num_perm = d->num_perm;
    job.texts = tx;
    job.lens = tl;
    job.centres = jc;
    job.centre_sets = jcs;
    job.ncentres = nc;
    job.mates = jm;
    job.first = jf;
    job.pair_of = jp;
    job.nmates = nm;
    job.pairs = d->pairs;
    job.set_of = so;
    job.mate_missing = jmiss;
    job.mate_done = jdone;
    job.nthreads = d->nthreads;
    job.al = &d->al;
    job.scratch = &d->scratch;
    job.keep_sample = tkeep;
    job.kept = kept;
    rc = simlsh__dx_run(&job);
    d->set_bytes += job.grown;
    if (rc < 0)
        goto out;
    /* commit: nothing below fails */
    for (size_t k = 0; k < nc; k++) {
        d->set_bytes += simlsh__dx_set_bytes(jcs[k]);
        bad_utf8 |= jcs[k]->missing;
    }
    if (d->set_bytes > d->st[SIMLSH_DEDUP_STAT_SET_BYTES])
        d->st[SIMLSH_DEDUP_STAT_SET_BYTES] = d->set_bytes;
    for (size_t k = 0; k < nm; k++) {
        size_t m = jmi[k];
        d->mdone[m] = 1;
        bad_utf8 |= jmiss[k];
        if (d->held[m].text != NULL && !newheld[m]) {
            simlsh__free_sized(&d->al, d->held[m].text, d->held[m].len);
            d->held[m].text = NULL;
            d->held[m].len = 0;
        }
    }
    d->st[SIMLSH_DEDUP_STAT_EXACT] += job.exact;
    d->st[SIMLSH_DEDUP_STAT_IDENTICAL] += job.identical;
    d->st[SIMLSH_DEDUP_STAT_ESTIMATED] += job.estimated;
    d->st[SIMLSH_DEDUP_STAT_EDITS] += job.edits;
    d->st[SIMLSH_DEDUP_STAT_SAMPLED] += job.sampled;
    /* in text order (centres, then the others): the same at any thread count */
    for (size_t k = 0; k < nc; k++)
        simlsh__dx_sample_store(d, d->wc[jcs[k] - d->wset], &kept[jc[k]]);
    for (size_t k = 0; k < nm; k++)
        simlsh__dx_sample_store(d, d->wm[jmi[k]], &kept[jm[k]]);
    for (size_t i = 0; i < n; i++) {
        uint32_t s = batch_slot(d, ids[i]);
        d->got[s] = d->win;
        if (texts != NULL) {
            d->st[SIMLSH_DEDUP_STAT_TEXTS]++;
            continue;
        }
        if (!simlsh__dx_is_mate(d, s))
            continue; /* a centre alone: marked above */
        size_t m = d->wpos[s];
        for (size_t k = d->mfirst[m]; k < d->mfirst[m + 1]; k++)
            decide_by_estimate(d, &d->pairs[d->mpair[k]]);
        d->mdone[m] = 1;
    }
    d->need_left -= n;
out:
    if (rc < 0) {
        for (size_t i = 0; i < n && texts == NULL; i++) {
            uint32_t s = batch_slot(d, ids[i]);
            if (simlsh__dx_is_centre(d, s))
                d->wset[d->cpos[s]].missing = 0;
        }
        for (size_t m = 0; newheld != NULL && m < d->nwm; m++) {
            if (!newheld[m])
                continue;
            simlsh__free_sized(&d->al, d->held[m].text, d->held[m].len);
            d->held[m].text = NULL;
            d->held[m].len = 0;
        }
    }
    simlsh__free_sized(&d->al, tx, (cap ? cap : 1) * sizeof *tx);
    simlsh__free_sized(&d->al, tl, (cap ? cap : 1) * sizeof *tl);
    simlsh__free_sized(&d->al, jc, (n ? n : 1) * sizeof *jc);
    simlsh__free_sized(&d->al, jcs, (n ? n : 1) * sizeof *jcs);
    simlsh__free_sized(&d->al, jm, (cap ? cap : 1) * sizeof *jm);
    simlsh__free_sized(&d->al, jmi, (cap ? cap : 1) * sizeof *jmi);
    simlsh__free_sized(&d->al, jf, (cap + 1) * sizeof *jf);
    simlsh__free_sized(&d->al, jp, (d->npairs ? d->npairs : 1) * sizeof *jp);
    simlsh__free_sized(&d->al, so, (d->npairs ? d->npairs : 1) * sizeof *so);
    simlsh__free_sized(&d->al, jmiss, cap ? cap : 1);
    simlsh__free_sized(&d->al, jdone, cap ? cap : 1);
    simlsh__free_sized(&d->al, newheld, d->nwm ? d->nwm : 1);
    for (size_t t = 0; kept != NULL && t < nt; t++)
        simlsh__free_sized(&d->al, kept[t].v, kept[t].cap * sizeof *kept[t].v);
    simlsh__free_sized(&d->al, kept, (cap ? cap : 1) * sizeof *kept);
    simlsh__free_sized(&d->al, tkeep, cap ? cap : 1);
    if (rc < 0)
        return rc;
    return bad_utf8 ? SIMLSH_EUTF8 : 0;
}

int simlsh_dedup_texts(simlsh_dedup *d, const uint64_t *ids, const void *const *texts,
                       const size_t *lens, size_t n)
{
    SIMLSH__CHECK_DEDUP(d);
    if (n > 0 && (texts == NULL || lens == NULL))
        return SIMLSH_EINVAL;
    return take(d, ids, texts, lens, n);
}

int simlsh_dedup_missing(simlsh_dedup *d, const uint64_t *ids, size_t n)
{
    SIMLSH__CHECK_DEDUP(d);
    return take(d, ids, NULL, NULL, n);
}
