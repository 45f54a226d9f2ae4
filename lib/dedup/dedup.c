/* The deduplication engine: star groups straight from the index's buckets
 * (include/simlsh.h, "Deduplication engine").
 *
 * Documents are visited by priority (rank). A document that no group holds
 * when its turn comes is a centre; its candidates are the bucket-mates that
 * are still unplaced (closed[] clear) and pass the estimate (or, in exact
 * mode, the prefilter), found through the index's band tables
 * (index/mates.h). Without texts the centre claims them at once.
 *
 * Exact mode works in batches. A batch is built by walking on from the
 * cursor: each unplaced document is certainly a centre unless it is a
 * candidate of a centre of the batch (pend[] == win), whose verdict is not
 * known yet, so the walk stops there. The batch asks for the texts of its
 * centres and their candidates (at most SIMLSH_DEDUP_MEMORY bytes); when
 * all are in, the claims are applied in the centres' order, which is what
 * the sequential star would do, and the next batch starts. A centre with
 * more candidates than a batch holds keeps its set and goes on with the
 * rest in the next batches (the carry).
 *
 * Cost: a centre looks at the members of its buckets once; a claimed
 * document never looks at its own, so a bucket of m copies costs O(m)
 * visits and m verifications.
 *
 * A giant bucket of unlike documents (a template that most of a corpus
 * shares: pairwise similarity under the threshold, yet equal rows in some
 * band) would cost every member a look at every other: m^2, and the
 * prefilter passes a few per cent of such pairs to exact verification. At
 * the start (estimate and exact modes), each bucket of more than
 * SIMLSH_DEDUP_GIANT members is judged from a sample of its members that
 * depends on the members alone (index/mates.h): unlike when fewer than a
 * quarter of the sample's pairs pass the prefilter. The unlike buckets
 * are then set aside, largest first, until those left would cost at most
 * SIMLSH_DEDUP_GIANT_COST looks per document and band (a bucket of s
 * unlike members costs s^2); a set-aside bucket is not a bucket for the
 * star, and its members meet only through their other buckets. A bucket
 * of copies stays: its first centre claims it whole.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "internal.h"
#include "handle.h"
#include "index/mates.h"
#include "pool.h"
#include "results.h"

#define DEFAULT_MEMORY (UINT64_C(64) << 20)
#define DEFAULT_SAMPLE_MEMORY (UINT64_C(64) << 20)
#define DEFAULT_WEIGHT 4096
#define DEFAULT_GIANT 64
#define DEFAULT_GIANT_COST 64.0
/* looks a document and band after which the low bytes are made (below) */
#define LOW_BYTES_AFTER 4
/* ... or, once LOW_BYTES_WALKED centres are walked, looks a band past this
 * many per centre and candidate */
#define LOW_BYTES_WALKED 64
#define LOW_BYTES_RATE 4

/* ---- lifetime ------------------------------------------------------- */

#define FREE_N(p, n) simlsh__free_sized(&d->al, (p), (n) * sizeof *(p))

static void free_batch(simlsh_dedup *d)
{
    for (size_t i = 0; i < d->nwc; i++)
        simlsh__dx_set_free(&d->al, &d->wset[i]);
    for (size_t i = 0; i < d->nwm && d->held != NULL; i++)
        simlsh__free_sized(&d->al, d->held[i].text, d->held[i].len);
    FREE_N(d->bidx, d->cap_bidx);
    d->bidx = NULL;
    d->nbidx = d->cap_bidx = 0;
    FREE_N(d->wc, d->cap_wc);
    FREE_N(d->wset, d->cap_wc);
    FREE_N(d->cfirst, d->cap_wc + 1);
    FREE_N(d->pairs, d->cap_pairs);
    FREE_N(d->mpair, d->cap_pairs);
    FREE_N(d->wm, d->cap_wm);
    FREE_N(d->mfirst, d->cap_wm + 1);
    FREE_N(d->mdone, d->cap_wm);
    FREE_N(d->mmissing, d->cap_wm);
    FREE_N(d->held, d->cap_wm);
    d->wc = NULL;
    d->wset = NULL;
    d->cfirst = NULL;
    d->pairs = NULL;
    d->mpair = NULL;
    d->wm = NULL;
    d->mfirst = NULL;
    d->mdone = d->mmissing = NULL;
    d->held = NULL;
    d->nwc = d->cap_wc = d->npairs = d->cap_pairs = d->nwm = d->cap_wm = 0;
}

void simlsh_dedup_free(simlsh_dedup *d)
{
    if (!simlsh__handle_is(d, SIMLSH__TAG_DEDUP))
        return;
    size_t n = d->slot_cap;
    free_batch(d);
    simlsh__dx_set_free(&d->al, &d->carry_set);
    simlsh__dx_scratch_free(&d->al, d->scratch);
    simlsh__dx_ahead_free(d);
    simlsh__dx_samples_free(d);
    FREE_N(d->cands.v, d->cands.cap);
    FREE_N(d->skip, d->nskip);
    FREE_N(d->parent, n);
    FREE_N(d->order_ids, d->norder);
    FREE_N(d->size_ids, d->nsizes);
    FREE_N(d->size_bytes, d->nsizes);
    FREE_N(d->ids, n);
    FREE_N(d->rank, n);
    FREE_N(d->order, n);
    FREE_N(d->cent, n);
    FREE_N(d->score, n);
    FREE_N(d->closed, n);
    FREE_N(d->seen, n);
    FREE_N(d->low, d->nlow);
    FREE_N(d->pend, n);
    FREE_N(d->got, n);
    FREE_N(d->wpos, n);
    FREE_N(d->cpos, n);
    FREE_N(d->best, n);
    FREE_N(d->weight, n);
    simlsh_allocator al = d->al;
    d->tag = SIMLSH__TAG_DEAD;
    simlsh__free_sized(&al, d, sizeof *d);
}

int simlsh_dedup_new(simlsh_dedup **out, const simlsh_index *index, int mode, double threshold)
{
    SIMLSH__CHECK_INDEX(index);
    if (out == NULL || mode < SIMLSH_DEDUP_NONE || mode > SIMLSH_DEDUP_EXACT)
        return SIMLSH_EINVAL;
    if (mode != SIMLSH_DEDUP_NONE && !(threshold > 0 && threshold <= 1))
        return SIMLSH_EINVAL;
    if (!simlsh__ix_has_sigs(index))
        return SIMLSH_EUNSUPPORTED;
    const struct simlsh_params *p = simlsh__ix_params(index);
    size_t n = simlsh__ix_nslots(index);
    simlsh_dedup *d = simlsh__calloc(&p->alloc, 1, sizeof *d);
    if (d == NULL)
        return SIMLSH_ENOMEM;
    d->tag = SIMLSH__TAG_DEDUP;
    d->al = p->alloc;
    d->params = *p;
    d->ix = index;
    d->gen = simlsh__ix_gen(index);
    d->nslots = n;
    d->num_perm = simlsh__ix_num_perm(index);
    d->mode = mode;
    d->threshold = mode == SIMLSH_DEDUP_NONE ? 0 : threshold;
    d->prefilter = mode == SIMLSH_DEDUP_EXACT ? simlsh_dedup_prefilter(threshold, d->num_perm) : 0;
    d->need_claim = simlsh__ix_need(d->num_perm, d->threshold);
    d->nthreads = 1;
    d->memory = DEFAULT_MEMORY;
    d->sample_memory = DEFAULT_SAMPLE_MEMORY;
    d->giant = DEFAULT_GIANT;
    d->giant_cost = DEFAULT_GIANT_COST;
    d->link_kept = 1;
    d->carry = DX_NONE;
    d->win = 1;
    d->stamp = 0;
    size_t m = n ? n : 1;
    d->slot_cap = m;
    d->ids = simlsh__calloc(&d->al, m, sizeof *d->ids);
    d->rank = simlsh__calloc(&d->al, m, sizeof *d->rank);
    d->order = simlsh__calloc(&d->al, m, sizeof *d->order);
    d->cent = simlsh__calloc(&d->al, m, sizeof *d->cent);
    d->score = simlsh__calloc(&d->al, m, sizeof *d->score);
    d->closed = simlsh__calloc(&d->al, m, sizeof *d->closed);
    d->seen = simlsh__calloc(&d->al, m, sizeof *d->seen);
    d->pend = simlsh__calloc(&d->al, m, sizeof *d->pend);
    d->got = simlsh__calloc(&d->al, m, sizeof *d->got);
    d->wpos = simlsh__calloc(&d->al, m, sizeof *d->wpos);
    d->cpos = simlsh__calloc(&d->al, m, sizeof *d->cpos);
    d->best = simlsh__calloc(&d->al, m, sizeof *d->best);
    d->weight = simlsh__calloc(&d->al, m, sizeof *d->weight);
    d->slot_cap = m;
    if (!d->ids || !d->rank || !d->order || !d->cent || !d->score || !d->closed || !d->seen ||
        !d->pend || !d->got || !d->wpos || !d->cpos || !d->best || !d->weight) {
        simlsh_dedup_free(d);
        return SIMLSH_ENOMEM;
    }
    *out = d;
    return 0;
}

/* ---- the start: ranks, sizes --------------------------------------------------- */

static int idslot_cmp(const void *x, const void *y)
{
    const idslot *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The giant buckets of unlike documents, set aside (see the top). */
static int set_aside(simlsh_dedup *d, const simlsh_index *ix)
{
    size_t nl = simlsh__ix_nlists(ix);
    int judge = d->mode != SIMLSH_DEDUP_NONE && d->giant > 0;
    if (nl == 0 || d->skip != NULL || (!judge && d->cluster != SIMLSH_DEDUP_COMPONENTS))
        return 0; /* (set already: a start that failed later is repeated) */
    if ((d->skip = simlsh__calloc(&d->al, nl, 1)) == NULL)
        return SIMLSH_ENOMEM;
    d->nskip = nl;
    if (!judge)
        return 0;
    double pf = simlsh_dedup_prefilter(d->threshold, d->num_perm);
    uint32_t bands = 0, rows = 0;
    simlsh_index_bands(&bands, &rows, ix);
    double budget = d->giant_cost * (double)d->nlive * bands;
    uint64_t ns = 0, nm = 0;
    int rc = simlsh__ix_unlike_lists(ix, d->giant > SIZE_MAX ? SIZE_MAX : (size_t)d->giant,
                                     simlsh__ix_need(d->num_perm, pf), budget, d->skip, &ns, &nm,
                                     &d->al);
    if (rc < 0) {
        FREE_N(d->skip, d->nskip);
        d->skip = NULL;
        d->nskip = 0;
        return rc;
    }
    d->st[SIMLSH_DEDUP_STAT_SET_ASIDE] = ns;
    d->st[SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS] = nm;
    return 0;
}

static int start(simlsh_dedup *d, const simlsh_index *ix)
{
    size_t n = d->nslots, live = 0;
    if (d->cluster == SIMLSH_DEDUP_COMPONENTS && d->parent == NULL) {
        if ((d->parent = simlsh__calloc(&d->al, d->slot_cap, sizeof *d->parent)) == NULL)
            return SIMLSH_ENOMEM;
        simlsh__uf_init(d->parent, d->slot_cap);
    }
    idslot *rest = simlsh__calloc(&d->al, n ? n : 1, sizeof *rest);
    if (rest == NULL)
        return SIMLSH_ENOMEM;
    for (size_t s = 0; s < n; s++) {
        d->rank[s] = DX_NONE;
        d->cent[s] = DX_NONE;
        d->closed[s] = 1;
        uint64_t id;
        if (simlsh__ix_slot_id(ix, (uint32_t)s, &id)) {
            d->ids[s] = id;
            /* a kept document is never claimed; in components it is a
             * mate like any other */
            d->closed[s] = d->cluster == SIMLSH_DEDUP_STAR && id < d->keep_below;
            rest[live].id = id;
            rest[live].slot = (uint32_t)s;
            live++;
        }
    }
    size_t r = 0;
    for (size_t i = 0; i < d->norder; i++) {
        uint32_t s = simlsh__ix_slot_of(ix, d->order_ids[i]);
        if (s == DX_NONE || s >= n || d->rank[s] != DX_NONE)
            continue;
        d->rank[s] = (uint32_t)r;
        d->order[r++] = s;
    }
    qsort(rest, live, sizeof *rest, idslot_cmp);
    for (size_t i = 0; i < live; i++) {
        if (d->rank[rest[i].slot] != DX_NONE)
            continue;
        d->rank[rest[i].slot] = (uint32_t)r;
        d->order[r++] = rest[i].slot;
    }
    simlsh__free_sized(&d->al, rest, (n ? n : 1) * sizeof *rest);
    d->nlive = r;
    for (size_t i = 0; i < d->nsizes; i++) {
        uint32_t s = simlsh__ix_slot_of(ix, d->size_ids[i]);
        if (s != DX_NONE && s < n)
            d->weight[s] = d->size_bytes[i];
    }
    int rc = set_aside(d, ix);
    if (rc < 0)
        return rc;
    uint32_t bands = 0, rows = 0;
    simlsh_index_bands(&bands, &rows, ix);
    /* (no verification, no need: the low bytes would rule nothing out) */
    d->low_tried = d->mode == SIMLSH_DEDUP_NONE;
    d->low_after = LOW_BYTES_AFTER * (double)d->nlive * bands;
    d->walked = 0;
    d->started = 1;
    return 0;
}

/* ---- candidates ------------------------------------------------------------------ */

/* Where large buckets of unlike documents stay (templates, boilerplate
 * within the giant-bucket cost), most of the walk compares a centre with
 * members it rules out: once the looks pass LOW_BYTES_AFTER a document
 * and band, or, after the first LOW_BYTES_WALKED centres, LOW_BYTES_RATE
 * a band for each centre and candidate so far, the values' low bytes (a
 * quarter of the signatures' bytes) rule most of them out first. Not
 * before: they cost num_perm bytes a slot, and copies, claimed as they
 * are met, need few looks, about one a band for each centre and claim. The
 * rate sees a template within its first centres: a look without the low
 * bytes fetches a whole signature, and the first template of 60,000
 * documents took as long as all the rest. They change no answer, so
 * without the memory the walk goes on without them. */
static void low_bytes_when_due(simlsh_dedup *d, const simlsh_index *ix)
{
    if (d->low_tried)
        return;
    double looks = (double)d->st[SIMLSH_DEDUP_STAT_VISITS];
    double met = (double)d->walked + (double)d->st[SIMLSH_DEDUP_STAT_CANDIDATES];
    if (looks <= d->low_after && (d->walked < LOW_BYTES_WALKED ||
                                  looks <= LOW_BYTES_RATE * (double)simlsh__ix_bands(ix) * met))
        return;
    d->low_tried = 1;
    size_t bytes;
    if (!simlsh__mul_ok(d->nslots, d->num_perm, &bytes) ||
        (d->low = simlsh__malloc(&d->al, bytes)) == NULL)
        return;
    d->nlow = bytes;
    simlsh__ix_low_bytes(ix, d->low);
}

/* The candidates of centre x into d->cands: unplaced bucket-mates whose
 * estimate reaches thr. */
static int candidates(simlsh_dedup *d, const simlsh_index *ix, uint32_t x, double thr)
{
    if (++d->stamp == 0) {
        memset(d->seen, 0, d->nslots * sizeof *d->seen);
        d->stamp = 1;
    }
    d->cands.n = 0;
    uint32_t need = simlsh__ix_need(d->num_perm, thr);
    /* components (d->parent set): only mates still apart from x; star
     * groups: with the next documents' (ahead.c) */
    d->walked++;
    int rc = d->parent == NULL
                 ? simlsh__dx_ahead_candidates(d, ix, x, need)
                 : simlsh__ix_mates(ix, x, need, d->skip, d->closed, d->parent, d->seen, d->stamp,
                                    d->low, &d->al, &d->cands, &d->st[SIMLSH_DEDUP_STAT_VISITS]);
    if (rc == 0)
        low_bytes_when_due(d, ix);
    if (rc == 0 && d->parent != NULL && !d->link_kept && d->ids[x] < d->keep_below) {
        /* two kept documents do not link: only the new mates */
        size_t k = 0;
        for (size_t i = 0; i < d->cands.n; i++)
            if (d->ids[d->cands.v[i].slot] >= d->keep_below)
                d->cands.v[k++] = d->cands.v[i];
        d->cands.n = k;
    }
    if (rc < 0)
        return rc;
    d->st[SIMLSH_DEDUP_STAT_CANDIDATES] += d->cands.n;
    return 0;
}

static void link(simlsh_dedup *d, uint32_t x, uint32_t v)
{
    simlsh__uf_union(d->parent, x, v);
}

/* x's turn has come: a centre (star), or done with (components, where
 * only later documents are x's mates). */
static void place_centre(simlsh_dedup *d, uint32_t x)
{
    if (d->cluster == SIMLSH_DEDUP_COMPONENTS) {
        d->closed[x] = 1;
        return;
    }
    d->cent[x] = x;
    d->score[x] = 1.0;
    d->closed[x] = 1;
}

static void claim(simlsh_dedup *d, uint32_t x, uint32_t v, double s)
{
    d->cent[v] = x;
    d->score[v] = s;
    d->closed[v] = 1;
}

/* The modes without texts: the whole star at once. */
static int star_now(simlsh_dedup *d, const simlsh_index *ix)
{
    for (; d->cur < d->nlive; d->cur++) {
        uint32_t x = d->order[d->cur];
        if (d->cent[x] != DX_NONE)
            continue;
        int rc = candidates(d, ix, x, d->threshold);
        if (rc < 0)
            return rc; /* x is unplaced still: a repeated call goes on here */
        place_centre(d, x);
        for (size_t i = 0; i < d->cands.n && d->cluster == SIMLSH_DEDUP_COMPONENTS; i++)
            link(d, x, d->cands.v[i].slot);
        for (size_t i = 0; i < d->cands.n && d->cluster == SIMLSH_DEDUP_STAR; i++) {
            const simlsh__mate *m = &d->cands.v[i];
            double s = d->mode == SIMLSH_DEDUP_NONE ? -1.0 : (double)m->eq / d->num_perm;
            claim(d, x, m->slot, s);
        }
    }
    return 0;
}

/* ---- exact mode: batches ----------------------------------------------------------- */

static uint64_t weight_of(const simlsh_dedup *d, uint32_t s)
{
    return d->weight[s] ? d->weight[s] : DEFAULT_WEIGHT;
}

/* Room for nc centres, np pairs and nm candidates in the batch arrays. */
static int batch_room(simlsh_dedup *d, size_t nc, size_t np, size_t nm)
{
    if (nc > d->cap_wc) {
        size_t c = d->cap_wc ? d->cap_wc * 2 : 64;
        while (c < nc)
            c *= 2;
        uint32_t *wc = simlsh__calloc(&d->al, c, sizeof *wc);
        dx_set *ws = simlsh__calloc(&d->al, c, sizeof *ws);
        size_t *cf = simlsh__calloc(&d->al, c + 1, sizeof *cf);
        if (!wc || !ws || !cf) {
            simlsh__free_sized(&d->al, wc, c * sizeof *wc);
            simlsh__free_sized(&d->al, ws, c * sizeof *ws);
            simlsh__free_sized(&d->al, cf, (c + 1) * sizeof *cf);
            return SIMLSH_ENOMEM;
        }
        if (d->nwc) {
            memcpy(wc, d->wc, d->nwc * sizeof *wc);
            memcpy(ws, d->wset, d->nwc * sizeof *ws);
            memcpy(cf, d->cfirst, (d->nwc + 1) * sizeof *cf);
        }
        FREE_N(d->wc, d->cap_wc);
        FREE_N(d->wset, d->cap_wc);
        if (d->cfirst)
            FREE_N(d->cfirst, d->cap_wc + 1);
        d->wc = wc;
        d->wset = ws;
        d->cfirst = cf;
        d->cap_wc = c;
    }
    if (np > d->cap_pairs) {
        size_t c = d->cap_pairs ? d->cap_pairs * 2 : 256;
        while (c < np)
            c *= 2;
        dx_pair *p = simlsh__calloc(&d->al, c, sizeof *p);
        uint32_t *mp = simlsh__calloc(&d->al, c, sizeof *mp);
        if (!p || !mp) {
            simlsh__free_sized(&d->al, p, c * sizeof *p);
            simlsh__free_sized(&d->al, mp, c * sizeof *mp);
            return SIMLSH_ENOMEM;
        }
        if (d->npairs)
            memcpy(p, d->pairs, d->npairs * sizeof *p);
        FREE_N(d->pairs, d->cap_pairs);
        FREE_N(d->mpair, d->cap_pairs);
        d->pairs = p;
        d->mpair = mp;
        d->cap_pairs = c;
    }
    if (nm > d->cap_wm) {
        size_t c = d->cap_wm ? d->cap_wm * 2 : 256;
        while (c < nm)
            c *= 2;
        uint32_t *wm = simlsh__calloc(&d->al, c, sizeof *wm);
        size_t *mf = simlsh__calloc(&d->al, c + 1, sizeof *mf);
        uint8_t *md = simlsh__calloc(&d->al, c, 1), *mm = simlsh__calloc(&d->al, c, 1);
        dx_held *h = simlsh__calloc(&d->al, c, sizeof *h);
        if (!wm || !mf || !md || !mm || !h) {
            simlsh__free_sized(&d->al, wm, c * sizeof *wm);
            simlsh__free_sized(&d->al, mf, (c + 1) * sizeof *mf);
            simlsh__free_sized(&d->al, md, c);
            simlsh__free_sized(&d->al, mm, c);
            simlsh__free_sized(&d->al, h, c * sizeof *h);
            return SIMLSH_ENOMEM;
        }
        if (d->nwm)
            memcpy(wm, d->wm, d->nwm * sizeof *wm);
        FREE_N(d->wm, d->cap_wm);
        if (d->mfirst)
            FREE_N(d->mfirst, d->cap_wm + 1);
        FREE_N(d->mdone, d->cap_wm);
        FREE_N(d->mmissing, d->cap_wm);
        FREE_N(d->held, d->cap_wm);
        d->wm = wm;
        d->mfirst = mf;
        d->mdone = md;
        d->mmissing = mm;
        d->held = h;
        d->cap_wm = c;
    }
    return 0;
}

/* Add centre x with candidates d->cands.v[from .. to) to the batch. A
 * centre that is a candidate of the batch too (ahead of its turn:
 * form_batch()) has its text asked for once, for both. */
static int batch_add(simlsh_dedup *d, uint32_t x, size_t from, size_t to, uint64_t *bytes)
{
    size_t nnew = 0;
    for (size_t i = from; i < to; i++)
        nnew += d->pend[d->cands.v[i].slot] != d->win;
    int rc = batch_room(d, d->nwc + 1, d->npairs + (to - from), d->nwm + nnew);
    if (rc < 0)
        return rc;
    size_t ci = d->nwc++;
    d->wc[ci] = x;
    memset(&d->wset[ci], 0, sizeof d->wset[ci]);
    if (x == d->carry && d->carry_set.ready + d->carry_set.missing > 0) {
        d->wset[ci] = d->carry_set; /* kept from the last batch */
        memset(&d->carry_set, 0, sizeof d->carry_set);
        d->got[x] = d->win;
    } else if (simlsh__dx_is_mate(d, x)) {
        *bytes += weight_of(d, x); /* its set, besides its text */
    } else {
        d->got[x] = 0;
        *bytes += weight_of(d, x);
        d->need_left++;
    }
    d->cpos[x] = (uint32_t)ci;
    d->cfirst[ci] = d->npairs;
    for (size_t i = from; i < to; i++) {
        uint32_t v = d->cands.v[i].slot;
        if (d->pend[v] != d->win) {
            d->pend[v] = d->win;
            d->got[v] = 0;
            d->wpos[v] = (uint32_t)d->nwm;
            d->wm[d->nwm] = v;
            d->mdone[d->nwm] = 0;
            d->mmissing[d->nwm] = 0;
            d->held[d->nwm].text = NULL;
            d->held[d->nwm].len = 0;
            d->nwm++;
            *bytes += weight_of(d, v);
            d->need_left++;
            d->best[v] = 0;
        }
        if (d->cands.v[i].eq > d->best[v])
            d->best[v] = d->cands.v[i].eq;
        dx_pair *p = &d->pairs[d->npairs++];
        p->centre = x;
        p->mate = v;
        p->eq = d->cands.v[i].eq;
        p->verdict = -1;
        p->planned = 0;
        p->score = 0;
    }
    d->cfirst[d->nwc] = d->npairs;
    return 0;
}

/* Each candidate's pairs, for the texts calls (a counting sort). */
/* The batch's documents by id (batch_slot() in texts.c). */
static int bidx_cmp(const void *x, const void *y)
{
    const idslot *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int index_mates(simlsh_dedup *d)
{
    size_t nb = d->nwc + d->nwm;
    d->nbidx = 0;
    if (d->nwc == 0)
        return 0; /* the cursor reached the end: no batch */
    if (nb > d->cap_bidx) {
        size_t c = d->cap_bidx ? d->cap_bidx : 256;
        while (c < nb)
            c *= 2;
        idslot *b = simlsh__calloc(&d->al, c, sizeof *b);
        if (b == NULL)
            return SIMLSH_ENOMEM;
        FREE_N(d->bidx, d->cap_bidx);
        d->bidx = b;
        d->cap_bidx = c;
    }
    for (size_t i = 0; i < d->nwc; i++) {
        d->bidx[i].id = d->ids[d->wc[i]];
        d->bidx[i].slot = d->wc[i];
    }
    for (size_t i = 0; i < d->nwm; i++) {
        d->bidx[d->nwc + i].id = d->ids[d->wm[i]];
        d->bidx[d->nwc + i].slot = d->wm[i];
    }
    d->nbidx = nb;
    qsort(d->bidx, nb, sizeof *d->bidx, bidx_cmp);
    size_t *f = d->mfirst;
    memset(f, 0, (d->nwm + 1) * sizeof *f);
    for (size_t k = 0; k < d->npairs; k++)
        f[d->wpos[d->pairs[k].mate] + 1]++;
    for (size_t m = 0; m < d->nwm; m++)
        f[m + 1] += f[m];
    for (size_t k = 0; k < d->npairs; k++)
        d->mpair[f[d->wpos[d->pairs[k].mate]]++] = (uint32_t)k;
    for (size_t m = d->nwm; m > 0; m--)
        f[m] = f[m - 1];
    f[0] = 0;
    return 0;
}

/* Centre x taken ahead of its turn: closed (no later centre lists it, as
 * none would at its turn: a centre or claimed by then), placed at
 * resolve_batch(). */
static void place_ahead(simlsh_dedup *d, uint32_t x)
{
    d->closed[x] = 1;
    d->nahead++;
}

/* Build the next batch from the cursor (or the carry). 0 with an empty
 * batch when everything is placed. */
static int form_batch(simlsh_dedup *d, const simlsh_index *ix)
{
    uint64_t bytes = 0;
    d->nwc = d->npairs = d->nwm = 0;
    d->need_left = 0;
    d->nahead = 0;
    if (d->carry != DX_NONE) {
        /* the rest of a large centre's candidates; no other centre joins */
        uint32_t x = d->carry;
        size_t to = d->carry_at;
        uint64_t b = 0;
        while (to < d->cands.n &&
               (to == d->carry_at || b + weight_of(d, d->cands.v[to].slot) <= d->memory))
            b += weight_of(d, d->cands.v[to++].slot);
        int rc = batch_add(d, x, d->carry_at, to, &bytes);
        if (rc < 0)
            return rc;
        d->carry_at = to;
        return index_mates(d);
    }
    while (d->cur < d->nlive) {
        uint32_t x = d->order[d->cur];
        if (d->cent[x] != DX_NONE) {
            d->cur++;
            continue;
        }
        /* a candidate of this batch: its fate is not known yet */
        int ahead = simlsh__dx_is_mate(d, x);
        if (ahead && !simlsh__dx_ahead_of_turn(d, x))
            break;
        int rc = candidates(d, ix, x, d->prefilter);
        if (rc < 0)
            return rc;
        /* (ahead of its turn, a centre of no pairs joins the batch: it is
         * a centre only if no centre before it claims it) */
        if (d->cands.n == 0 && !ahead) {
            place_centre(d, x);
            d->cur++;
            continue;
        }
        uint64_t more = weight_of(d, x);
        for (size_t i = 0; i < d->cands.n; i++)
            if (d->pend[d->cands.v[i].slot] != d->win)
                more += weight_of(d, d->cands.v[i].slot);
        if (d->nwc > 0 && bytes + more > d->memory)
            break;
        if (d->nwc == 0 && more > d->memory && d->cands.n > 1) {
            /* too many for one batch: this centre alone, in parts */
            size_t to = 0;
            uint64_t b = weight_of(d, x);
            while (to < d->cands.n &&
                   (to == 0 || b + weight_of(d, d->cands.v[to].slot) <= d->memory))
                b += weight_of(d, d->cands.v[to++].slot);
            rc = batch_add(d, x, 0, to, &bytes);
            if (rc < 0)
                return rc;
            place_centre(d, x);
            d->cur++;
            d->carry = x;
            d->carry_at = to;
            return index_mates(d);
        }
        rc = batch_add(d, x, 0, d->cands.n, &bytes);
        if (rc < 0)
            return rc;
        if (ahead)
            place_ahead(d, x);
        else
            place_centre(d, x);
        d->cur++;
    }
    return index_mates(d);
}

/* All texts are in and every pair decided: claims in centre order. */
static void resolve_batch(simlsh_dedup *d)
{
    for (size_t ci = 0; ci < d->nwc; ci++) {
        uint32_t x = d->wc[ci];
        if (simlsh__dx_is_mate(d, x)) {
            /* ahead of its turn: a centre unless one before it claimed it */
            if (d->cent[x] != DX_NONE)
                continue;
            d->cent[x] = x;
            d->score[x] = 1.0;
        }
        for (size_t k = d->cfirst[ci]; k < d->cfirst[ci + 1]; k++) {
            dx_pair *p = &d->pairs[k];
            if (p->verdict == 1 && d->cluster == SIMLSH_DEDUP_COMPONENTS)
                link(d, x, p->mate);
            else if (p->verdict == 1 && d->cent[p->mate] == DX_NONE)
                claim(d, x, p->mate, p->score);
        }
    }
    /* the carry keeps its centre's set while candidates remain */
    int carry_on = d->carry != DX_NONE && d->carry_at < d->cands.n;
    for (size_t ci = 0; ci < d->nwc; ci++) {
        if (carry_on && d->wc[ci] == d->carry) {
            d->carry_set = d->wset[ci];
            memset(&d->wset[ci], 0, sizeof d->wset[ci]);
        } else {
            d->set_bytes -= simlsh__dx_set_bytes(&d->wset[ci]);
            simlsh__dx_set_free(&d->al, &d->wset[ci]);
        }
    }
    if (!carry_on && d->carry != DX_NONE) {
        d->carry = DX_NONE;
        d->cands.n = 0;
    }
    d->nwc = d->npairs = d->nwm = 0;
    d->open = 0;
    d->win++;
    if (d->win == 0) { /* wrapped: no stale stamp may look current */
        memset(d->pend, 0, d->nslots * sizeof *d->pend);
        memset(d->got, 0, d->nslots * sizeof *d->got);
        d->win = 1;
    }
}

static void count_groups(simlsh_dedup *d)
{
    uint64_t groups = 0, members = 0;
    for (size_t s = 0; s < d->nslots; s++) {
        if (d->rank[s] == DX_NONE || d->cent[s] == DX_NONE)
            continue;
        if (d->cent[s] != s) {
            members++;
            /* a centre counts once: when its first member is seen */
            if (d->seen[d->cent[s]] != d->stamp) {
                d->seen[d->cent[s]] = d->stamp;
                groups++;
            }
        }
    }
    d->st[SIMLSH_DEDUP_STAT_GROUPS] = groups;
    d->st[SIMLSH_DEDUP_STAT_MEMBERS] = members;
}

/* Components: each document's centre is its component's first in rank
 * order (the one to keep), its score -1 (no pair decides it alone). */
static void label_components(simlsh_dedup *d)
{
    for (size_t s = 0; s < d->nslots; s++)
        d->cent[s] = DX_NONE;
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r], root = simlsh__uf_find(d->parent, s);
        if (d->cent[root] == DX_NONE)
            d->cent[root] = s; /* the root holds its component's first for now */
        d->score[s] = -1.0;
    }
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r], root = simlsh__uf_find(d->parent, s);
        if (s != root)
            d->cent[s] = d->cent[root];
    }
    /* roots last: others read them above */
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r];
        if (d->cent[s] == s)
            d->score[s] = 1.0;
    }
}

static void finish(simlsh_dedup *d)
{
    if (d->cluster == SIMLSH_DEDUP_COMPONENTS)
        label_components(d);
    if (++d->stamp == 0) {
        memset(d->seen, 0, d->nslots * sizeof *d->seen);
        d->stamp = 1;
    }
    count_groups(d);
    d->finished = 1;
}

static int check_index(const simlsh_dedup *d, const simlsh_index *ix)
{
    SIMLSH__CHECK_INDEX(ix);
    if ((const void *)ix != d->ix)
        return SIMLSH_EINVAL;
    if (simlsh__ix_gen(ix) != d->gen || simlsh__ix_nslots(ix) != d->nslots)
        return SIMLSH_ESTATE;
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The ids of the batch still to come: centres in rank order, then the
 * others by id. */
static int list_needed(const simlsh_dedup *d, simlsh_results *need)
{
    size_t n = 0;
    for (size_t i = 0; i < d->nwc; i++)
        n += d->got[d->wc[i]] != d->win;
    size_t nc = n;
    for (size_t i = 0; i < d->nwm; i++) /* (a centre too: listed once) */
        n += d->got[d->wm[i]] != d->win && !simlsh__dx_is_centre(d, d->wm[i]);
    int rc = simlsh__results_reserve(need, n, 0);
    if (rc < 0)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < d->nwc; i++)
        if (d->got[d->wc[i]] != d->win)
            need->a[k++] = d->ids[d->wc[i]];
    for (size_t i = 0; i < d->nwm; i++)
        if (d->got[d->wm[i]] != d->win && !simlsh__dx_is_centre(d, d->wm[i]))
            need->a[k++] = d->ids[d->wm[i]];
    if (n > nc)
        qsort(need->a + nc, n - nc, sizeof *need->a, cmp_u64);
    for (size_t i = 0; i < n; i++) {
        need->b[i] = need->a[i];
        need->score[i] = -1.0;
    }
    need->count = n;
    need->nq = 0;
    need->truncated = 0;
    return 0;
}

int simlsh_dedup_next(simlsh_results *need, simlsh_dedup *d, const simlsh_index *index)
{
    SIMLSH__CHECK_RESULTS(need);
    SIMLSH__CHECK_DEDUP(d);
    int rc = check_index(d, index);
    if (rc < 0)
        return rc;
    if (!d->started && (rc = start(d, index)) < 0)
        return rc;
    /* room for an answer first, so that nothing below fails after it moved on */
    if (d->mode != SIMLSH_DEDUP_EXACT) {
        if ((rc = star_now(d, index)) < 0)
            return rc;
        finish(d);
        return list_needed(d, need);
    }
    for (;;) {
        if (d->open && d->need_left > 0)
            return list_needed(d, need);
        if (d->open)
            resolve_batch(d);
        if (d->cur >= d->nlive && d->carry == DX_NONE) {
            if (!d->finished)
                finish(d);
            return list_needed(d, need);
        }
        if ((rc = form_batch(d, index)) < 0) {
            /* an unfinished batch is dropped: its centres were placed, so
             * undo them and start it again next time */
            for (size_t i = 0; i < d->nwc; i++) {
                uint32_t x = d->wc[i];
                if (x != d->carry) {
                    d->cent[x] = DX_NONE;
                    d->closed[x] = d->cluster == SIMLSH_DEDUP_STAR && d->ids[x] < d->keep_below;
                }
            }
            if (d->nwc > 0 && d->wc[0] != d->carry)
                d->cur = d->rank[d->wc[0]];
            simlsh__dx_ahead_drop(d); /* made while those were closed */
            d->nwc = d->npairs = d->nwm = 0;
            d->win++;
            return rc;
        }
        if (d->nwc == 0)
            continue; /* the cursor reached the end */
        simlsh__dx_sample_plan(d);
        d->open = 1;
        d->st[SIMLSH_DEDUP_STAT_BATCHES]++;
    }
}
