/* Batch insertion, band by band, with optional threads.
 *
 * A document's b entries go to b independent tables, so the batch is cut
 * by band: one work unit fills one band's table with every document of the
 * batch, in batch order, and a last unit fills the id map (last, so that
 * with one thread a duplicate id is found after every band is done, which
 * makes the rollback below run, and be tested, whatever the timing). Within a table
 * the order of insertion is the sequential one, so every bucket gets the
 * same members; slots are handed out as one insert at a time would (free
 * slots first, most recently freed first). The saved bytes, queries, pairs
 * and clusters are therefore those of inserting the documents one at a time,
 * for any number of threads; only table positions and list numbers, which
 * nothing observable depends on, may differ.
 *
 * Steps: (1) room in every table, and the slots (nothing changed yet);
 * (2) every row checked, a range of documents per unit; then, round by
 * round of documents, (3a) band fingerprints computed into a band-major
 * scratch and, with stored signatures, rows copied into their slots, a
 * range of documents per unit (rows are read once, in order, instead of
 * once per band at a stride), and (3b) one unit per band and one for the
 * id map; (4) overflow lists made in (3b) get their global numbers. Lists are
 * global but each belongs to one band, so a band unit touches only its
 * own: a list it makes is kept in the unit's own vector under a temporary
 * number (base + k, above every global one) until (4). A failure in (3) or
 * (4), or a duplicate id, rolls every unit back, so the index holds
 * exactly its documents again (its tables may have grown).
 */
#include "internal.h"
#include "pool.h"

/* Documents per unit of step (2), and work (documents x tables) below
 * which another thread costs more than it saves. */
#define ROWS_CHUNK 8192
#define WORK_PER_THREAD 65536
/* Fingerprints per round (4 MiB of scratch): a round's band keys stay in
 * cache between step (3a), which writes them, and (3b), which reads them. */
#define ROUND_FPS ((size_t)1 << 20)
/* How often a long unit looks whether another one failed. */
#define POLL_MASK 1023
/* Band keys and home lines computed this many documents ahead. */
#define AHEAD 8

typedef struct {
    ovf_list l;
    uint32_t fp;
    size_t pos; /* its reference's position, found in step (4) */
} new_list;

typedef struct {
    new_list *v; /* lists this band made, temporary number base + index */
    size_t n, cap;
    size_t done;  /* documents inserted into this band */
    size_t grown; /* bytes added to global lists' buffers */
} band_state;

typedef struct {
    struct simlsh_index *ix;
    const uint64_t *ids;
    const uint32_t *values;              /* n x num_perm, or NULL */
    const simlsh_signature *const *sigs; /* or n signatures */
    size_t n;
    const uint32_t *popped; /* free slots taken, in order */
    size_t npopped;
    uint32_t first_fresh; /* slot of document npopped; later ones follow */
    uint32_t after_head;  /* free list head once npopped are taken */
    band_state *bands;
    size_t id_done;
    size_t base;
    simlsh__lockal la;
    size_t lo, hi; /* the round: documents [lo, hi) */
    size_t round;  /* documents per round */
    uint32_t *fps; /* the round's fingerprints, band-major: fps[b * round + i - lo] */
} batch;

static inline const uint32_t *row(const batch *bt, size_t i)
{
    return bt->values != NULL ? bt->values + i * bt->ix->num_perm : bt->sigs[i]->values;
}

static inline uint32_t slot_at(const batch *bt, size_t i)
{
    return i < bt->npopped ? bt->popped[i] : bt->first_fresh + (uint32_t)(i - bt->npopped);
}

static inline ovf_list *lst(const batch *bt, const band_state *bs, uint32_t ref)
{
    size_t li = ref & ~REF_BIT;
    return li < bt->base ? &bt->ix->ovf[li] : &bs->v[li - bt->base].l;
}

static inline int matches(const batch *bt, const band_state *bs, uint32_t b, band_entry e,
                          uint32_t fp, const uint32_t *bv)
{
    if (e.fp != fp)
        return 0;
    if (bv == NULL)
        return 1;
    uint32_t rep = is_ref(e.slot) ? lst(bt, bs, e.slot)->slots[0] : e.slot;
    return rows_equal(bt->ix, rep, b, bv);
}

static inline uint32_t key_fp(const struct simlsh_index *ix, const uint32_t *bv, uint32_t b)
{
    return band_fp(simlsh__band_key_inline(bv, ix->rows, b, ix->params.seed));
}

/* ---- step (2): rows ------------------------------------------------------------- */

static int is_empty_row(const uint32_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] != 0xFFFFFFFFu)
            return 0;
    return 1;
}

static int check_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    batch *bt = ctx;
    const struct simlsh_index *ix = bt->ix;
    size_t lo = unit * ROWS_CHUNK, hi = lo + ROWS_CHUNK < bt->n ? lo + ROWS_CHUNK : bt->n;
    for (size_t i = lo; i < hi; i++) {
        if (bt->values == NULL) {
            const simlsh_signature *s = bt->sigs[i];
            if (!simlsh__handle_is(s, SIMLSH__TAG_SIGNATURE))
                return SIMLSH_EINVAL;
            if (s->in_doc)
                return SIMLSH_ESTATE;
            if (s->fingerprint != ix->sig_fp)
                return SIMLSH_EMISMATCH;
            if (s->empty)
                return SIMLSH_EEMPTY;
        } else if (is_empty_row(row(bt, i), ix->num_perm)) {
            return SIMLSH_EEMPTY;
        }
    }
    return 0;
}

static int keys_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    batch *bt = ctx;
    const struct simlsh_index *ix = bt->ix;
    size_t lo = bt->lo + unit * ROWS_CHUNK;
    size_t hi = lo + ROWS_CHUNK < bt->hi ? lo + ROWS_CHUNK : bt->hi;
    uint32_t f[SIMLSH__MAX_PERM];
    for (size_t i = lo; i < hi; i++) {
        const uint32_t *v = row(bt, i);
        simlsh__ix_compute_fps(ix, v, f);
        for (uint32_t b = 0; b < ix->bands; b++)
            bt->fps[(size_t)b * bt->round + (i - bt->lo)] = f[b];
        /* Free slots' signatures are never read, so writing them before
         * the batch is known to succeed changes nothing observable. */
        if (ix->store)
            memcpy(ix->sigs + (size_t)slot_at(bt, i) * ix->num_perm, v,
                   ix->num_perm * sizeof(uint32_t));
    }
    return 0;
}

/* ---- step (3): the id map and the bands --------------------------------------------- */

static int idmap_unit(batch *bt, simlsh__par *par)
{
    struct simlsh_index *ix = bt->ix;
    size_t i;
    int rc = 0;
    for (i = bt->lo; i < bt->hi; i++) {
        if ((i & POLL_MASK) == 0 && simlsh__par_failed(par))
            break;
        if (i + AHEAD < bt->hi)
            PREFETCH(ix->idmap + fastrange(simlsh__id_hash(bt->ids[i + AHEAD]), ix->idcap));
        uint64_t id = bt->ids[i];
        size_t p = simlsh__idmap_probe(ix->idmap, ix->idcap, id);
        if (ix->idmap[p].slot != NO_SLOT) {
            rc = SIMLSH_EEXIST; /* present, or earlier in the batch */
            break;
        }
        uint32_t slot = slot_at(bt, i);
        ix->idmap[p].id = id;
        ix->idmap[p].slot = slot;
        ix->ids[slot] = id;
    }
    bt->id_done = i;
    return rc;
}

/* Move the INLINE_MAX inline members of (fp, bv) in band b and slot to a
 * new list of the unit's own. 0 or ENOMEM (nothing changed). */
static int convert(batch *bt, band_state *bs, uint32_t b, uint32_t fp, const uint32_t *bv,
                   uint32_t slot)
{
    struct simlsh_index *ix = bt->ix;
    const simlsh_allocator *al = &bt->la.al;
    if (bt->base + bs->n >= MAX_LISTS)
        return SIMLSH_ENOMEM;
    if (bs->n == bs->cap) {
        size_t ncap = bs->cap ? bs->cap * 2 : 8;
        new_list *nv = simlsh__malloc(al, ncap * sizeof *nv);
        if (nv == NULL)
            return SIMLSH_ENOMEM;
        if (bs->n > 0)
            memcpy(nv, bs->v, bs->n * sizeof *nv);
        simlsh__free_sized(al, bs->v, bs->cap * sizeof *bs->v);
        bs->v = nv;
        bs->cap = ncap;
    }
    uint32_t *buf = simlsh__malloc(al, LIST_MIN_CAP * sizeof *buf);
    if (buf == NULL)
        return SIMLSH_ENOMEM;
    band_entry *t = band_tab(ix, b);
    uint32_t n = 0;
    size_t home = fastrange(fp, ix->tcap), p = home;
    while (t[p].slot != NO_SLOT && n < INLINE_MAX) {
        if (!is_ref(t[p].slot) && matches(bt, bs, b, t[p], fp, bv))
            buf[n++] = t[p].slot;
        p = next_pos(p, ix->tcap);
    }
    for (uint32_t i = 0; i < n; i++) {
        p = home;
        while (t[p].slot != buf[i])
            p = next_pos(p, ix->tcap);
        tab_del_at(t, ix->tcap, p);
    }
    buf[n] = slot;
    new_list *nl = &bs->v[bs->n];
    nl->l.slots = buf;
    nl->l.n = n + 1;
    nl->l.cap = LIST_MIN_CAP;
    nl->fp = fp;
    nl->pos = 0;
    tab_put(t, ix->tcap, fp, REF_BIT | (uint32_t)(bt->base + bs->n));
    bs->n++;
    return 0;
}

static int append(batch *bt, band_state *bs, ovf_list *l, uint32_t slot, int global)
{
    if (l->n == l->cap) {
        if (l->cap > UINT32_MAX / 2)
            return SIMLSH_ENOMEM;
        uint32_t ncap = l->cap * 2;
        uint32_t *buf = simlsh__malloc(&bt->la.al, (size_t)ncap * sizeof *buf);
        if (buf == NULL)
            return SIMLSH_ENOMEM;
        memcpy(buf, l->slots, l->n * sizeof *buf);
        simlsh__free_sized(&bt->la.al, l->slots, (size_t)l->cap * sizeof *l->slots);
        if (global)
            bs->grown += (size_t)(ncap - l->cap) * sizeof *buf;
        l->slots = buf;
        l->cap = ncap;
    }
    l->slots[l->n++] = slot;
    return 0;
}

/* The inline entries of the bucket (fp, bv) in band b. */
static uint32_t same_inline(const batch *bt, const band_state *bs, uint32_t b, uint32_t fp,
                            const uint32_t *bv)
{
    const struct simlsh_index *ix = bt->ix;
    const band_entry *t = band_tab(ix, b);
    uint32_t n = 0;
    for (size_t p = fastrange(fp, ix->tcap); t[p].slot != NO_SLOT; p = next_pos(p, ix->tcap))
        n += !is_ref(t[p].slot) && matches(bt, bs, b, t[p], fp, bv);
    return n;
}

static int band_unit(batch *bt, simlsh__par *par, uint32_t b)
{
    struct simlsh_index *ix = bt->ix;
    band_state *bs = &bt->bands[b];
    band_entry *t = band_tab(ix, b);
    size_t cap = ix->tcap, off = (size_t)b * ix->rows;
    const uint32_t *fps = bt->fps + (size_t)b * bt->round - bt->lo;
    for (size_t i = bt->lo; i < bt->lo + AHEAD && i < bt->hi; i++)
        PREFETCH(t + fastrange(fps[i], cap));
    /* Progress is kept in a local and stored once: band states share cache
     * lines, and a store per document would bounce them between threads. */
    size_t i;
    int rc = 0;
    for (i = bt->lo; i < bt->hi; i++) {
        if ((i & POLL_MASK) == 0 && simlsh__par_failed(par))
            break;
        if (i + AHEAD < bt->hi)
            PREFETCH(t + fastrange(fps[i + AHEAD], cap));
        uint32_t fp = fps[i];
        /* The rows of a stored signature are compared only when a
         * fingerprint matches; they are in the slot since step (3a). */
        uint32_t slot = slot_at(bt, i);
        const uint32_t *bv = ix->store ? sig_of(ix, slot) + off : NULL;
        size_t p = fastrange(fp, cap);
        /* Inline entries are counted by fingerprint: the stored rows of
         * each (a cache miss apiece, and bands of few rows put unrelated
         * documents in one bucket often) are compared only when the count
         * reaches INLINE_MAX, which decides the same way. */
        uint32_t same_fp = 0;
        for (;;) {
            band_entry e = t[p];
            if (e.slot == NO_SLOT)
                break;
            if (e.fp == fp) {
                if (!is_ref(e.slot))
                    same_fp++;
                else if (matches(bt, bs, b, e, fp, bv))
                    break;
            }
            p = next_pos(p, cap);
        }
        if (t[p].slot != NO_SLOT)
            rc = append(bt, bs, lst(bt, bs, t[p].slot), slot, (t[p].slot & ~REF_BIT) < bt->base);
        else if (same_fp >= INLINE_MAX && same_inline(bt, bs, b, fp, bv) >= INLINE_MAX)
            rc = convert(bt, bs, b, fp, bv, slot);
        else
            t[p] = (band_entry){fp, slot};
        if (rc < 0)
            break;
    }
    bs->done = i;
    return rc;
}

static int insert_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    batch *bt = ctx;
    return unit < bt->ix->bands ? band_unit(bt, par, (uint32_t)unit) : idmap_unit(bt, par);
}

/* ---- rollback ----------------------------------------------------------------------- */

static size_t find_ref(const band_entry *t, size_t cap, uint32_t fp, uint32_t ref)
{
    size_t p = fastrange(fp, cap);
    while (t[p].slot != ref)
        p = next_pos(p, cap);
    return p;
}

/* Take band b back to where it was: the batch's documents out, newest
 * first, and buckets that became lists in the batch inline again. */
static void band_undo(batch *bt, uint32_t b)
{
    struct simlsh_index *ix = bt->ix;
    band_state *bs = &bt->bands[b];
    band_entry *t = band_tab(ix, b);
    size_t cap = ix->tcap, off = (size_t)b * ix->rows;
    for (size_t i = bs->done; i-- > 0;) {
        uint32_t fp = key_fp(ix, row(bt, i) + off, b), slot = slot_at(bt, i);
        for (size_t p = fastrange(fp, cap); t[p].slot != NO_SLOT; p = next_pos(p, cap)) {
            if (t[p].slot == slot) {
                tab_del_at(t, cap, p);
                break;
            }
            if (!is_ref(t[p].slot) || t[p].fp != fp)
                continue;
            ovf_list *l = lst(bt, bs, t[p].slot);
            uint32_t k = 0;
            while (k < l->n && l->slots[k] != slot)
                k++;
            if (k < l->n) {
                /* A list may empty here: an older one cannot (it keeps
                 * its older members), one of this batch goes below. */
                l->slots[k] = l->slots[--l->n];
                break;
            }
        }
    }
    /* What is left in a list of this batch is the older inline members
     * it took over (at most INLINE_MAX): back inline they go. */
    for (size_t k = 0; k < bs->n; k++) {
        new_list *nl = &bs->v[k];
        tab_del_at(t, cap, find_ref(t, cap, nl->fp, REF_BIT | (uint32_t)(bt->base + k)));
        for (uint32_t i = 0; i < nl->l.n; i++)
            tab_put(t, cap, nl->fp, nl->l.slots[i]);
        simlsh__free_sized(&bt->la.al, nl->l.slots, (size_t)nl->l.cap * sizeof *nl->l.slots);
    }
    bs->n = 0;
}

static void idmap_undo(batch *bt)
{
    struct simlsh_index *ix = bt->ix;
    for (size_t i = bt->id_done; i-- > 0;)
        simlsh__idmap_del_at(ix->idmap, ix->idcap, idmap_find(ix, bt->ids[i]));
    /* Free slots held the links of the free list. */
    for (size_t k = 0; k < bt->npopped; k++)
        ix->ids[bt->popped[k]] = k + 1 < bt->npopped ? bt->popped[k + 1] : bt->after_head;
}

static int undo_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    batch *bt = ctx;
    if (unit < bt->ix->bands)
        band_undo(bt, (uint32_t)unit);
    else
        idmap_undo(bt);
    return 0;
}

/* ---- step (4): global numbers for the new lists --------------------------------------- */

static int number_lists(batch *bt)
{
    struct simlsh_index *ix = bt->ix;
    size_t total = 0;
    for (uint32_t b = 0; b < ix->bands; b++)
        total += bt->bands[b].n;
    if (total == 0)
        return 0;
    size_t fresh = total > ix->ovf_nfree ? total - ix->ovf_nfree : 0;
    if (ix->novf + fresh > MAX_LISTS)
        return SIMLSH_ENOMEM;
    if (ix->novf + fresh > ix->ovf_cap) {
        size_t ncap = ix->ovf_cap * 2 > 16 ? ix->ovf_cap * 2 : 16;
        if (ncap < ix->novf + fresh)
            ncap = ix->novf + fresh;
        ovf_list *nv = simlsh__calloc(&ix->params.alloc, ncap, sizeof *nv);
        if (nv == NULL)
            return SIMLSH_ENOMEM;
        if (ix->novf > 0)
            memcpy(nv, ix->ovf, ix->novf * sizeof *nv);
        simlsh__free_sized(&ix->params.alloc, ix->ovf, ix->ovf_cap * sizeof *ix->ovf);
        ix->ovf = nv;
        ix->ovf_cap = ncap;
    }
    /* Nothing fails from here on. A band's temporary numbers are found
     * before any of its references is renumbered, since a new global
     * number may equal a temporary one of the same band. */
    for (uint32_t b = 0; b < ix->bands; b++) {
        band_state *bs = &bt->bands[b];
        band_entry *t = band_tab(ix, b);
        for (size_t k = 0; k < bs->n; k++)
            bs->v[k].pos = find_ref(t, ix->tcap, bs->v[k].fp, REF_BIT | (uint32_t)(bt->base + k));
        for (size_t k = 0; k < bs->n; k++) {
            uint32_t li;
            if (ix->ovf_free != NO_SLOT) {
                li = ix->ovf_free;
                ix->ovf_free = ix->ovf[li].n;
                ix->ovf_nfree--;
            } else {
                li = (uint32_t)ix->novf++;
            }
            ix->ovf[li] = bs->v[k].l;
            ix->ovf_bytes += (size_t)bs->v[k].l.cap * sizeof(uint32_t);
            t[bs->v[k].pos].slot = REF_BIT | li;
        }
        bs->n = 0;
    }
    return 0;
}

/* ---- the call ---------------------------------------------------------------------------- */

static int insert_rows(struct simlsh_index *ix, const uint64_t *ids, const uint32_t *values,
                       const simlsh_signature *const *sigs, size_t n, uint32_t nthreads)
{
    if (n == 0)
        return 0;
    if (n > MAX_DOCS || ix->count + n > MAX_DOCS)
        return SIMLSH_ENOMEM;
    const simlsh_allocator *al = &ix->params.alloc;
    batch bt;
    memset(&bt, 0, sizeof bt);
    bt.ix = ix;
    bt.ids = ids;
    bt.values = values;
    bt.sigs = sigs;
    bt.n = n;

    size_t nfree = ix->nslots - ix->count;
    size_t npop = n < nfree ? n : nfree;
    uint32_t *popped = NULL;
    if (npop > 0 && (popped = simlsh__malloc(al, npop * sizeof *popped)) == NULL)
        return SIMLSH_ENOMEM;
    if ((bt.bands = simlsh__calloc(al, ix->bands, sizeof *bt.bands)) == NULL) {
        simlsh__free_sized(al, popped, npop * sizeof *popped);
        return SIMLSH_ENOMEM;
    }
    size_t work = n * ((size_t)ix->bands + 1) / WORK_PER_THREAD;
    uint32_t want = nthreads == 0 ? simlsh__par_workers(0, SIZE_MAX) : nthreads;
    if (work < want)
        want = work > 0 ? (uint32_t)work : 1;
    /* Growth copies on the batch's threads too: it is the serial part
     * that remains when tables grow during a build. */
    int rc = simlsh__ix_ensure(ix, ix->count + n, ix->nslots + (n - npop), 0, want);
    if (rc < 0)
        goto out;
    uint32_t head = ix->free_head;
    for (size_t k = 0; k < npop; k++) {
        popped[k] = head;
        head = (uint32_t)ix->ids[head];
    }
    bt.popped = popped;
    bt.npopped = npop;
    bt.after_head = head;
    bt.first_fresh = (uint32_t)ix->nslots;
    bt.base = ix->novf;
    simlsh__lockal_init(&bt.la, al);

    size_t chunks = (n + ROWS_CHUNK - 1) / ROWS_CHUNK;
    size_t units = (size_t)ix->bands + 1;
    uint32_t workers = simlsh__par_workers(want, units);
    rc = simlsh__par_run(simlsh__par_workers(want, chunks), chunks, check_unit, &bt, NULL);
    if (rc < 0)
        goto done;
    bt.round = ROUND_FPS / ix->bands;
    if (bt.round > n)
        bt.round = n;
    if ((bt.fps = simlsh__malloc(al, bt.round * ix->bands * sizeof *bt.fps)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto done;
    }
    for (bt.lo = 0; rc == 0 && bt.lo < n; bt.lo = bt.hi) {
        bt.hi = n - bt.lo < bt.round ? n : bt.lo + bt.round;
        size_t rchunks = (bt.hi - bt.lo + ROWS_CHUNK - 1) / ROWS_CHUNK;
        simlsh__par_run(simlsh__par_workers(want, rchunks), rchunks, keys_unit, &bt, NULL);
        rc = simlsh__par_run(workers, units, insert_unit, &bt, NULL);
    }
    if (rc == 0)
        rc = number_lists(&bt);
    for (uint32_t b = 0; b < ix->bands; b++)
        ix->ovf_bytes += bt.bands[b].grown;
    if (rc < 0)
        simlsh__par_run(workers, units, undo_unit, &bt, NULL);
done:
    if (rc == 0) {
        ix->free_head = bt.after_head;
        if (n > npop)
            ix->nslots += n - npop;
        ix->count += n;
        ix->gen++;
    }
    for (uint32_t b = 0; b < ix->bands; b++)
        simlsh__free_sized(&bt.la.al, bt.bands[b].v, bt.bands[b].cap * sizeof *bt.bands[b].v);
    simlsh__lockal_done(&bt.la);
    simlsh__free_sized(al, bt.fps, bt.round * ix->bands * sizeof *bt.fps);
out:
    simlsh__free_sized(al, bt.bands, ix->bands * sizeof *bt.bands);
    simlsh__free_sized(al, popped, npop * sizeof *popped);
    return rc;
}

int simlsh_index_insert_values(simlsh_index *index, const uint64_t *ids, const uint32_t *values,
                               size_t n, uint32_t nthreads)
{
    SIMLSH__CHECK_INDEX(index);
    if (index == NULL || (n > 0 && (ids == NULL || values == NULL)))
        return SIMLSH_EINVAL;
    return insert_rows(index, ids, values, NULL, n, nthreads);
}

int simlsh_index_insert_batch(simlsh_index *index, const uint64_t *ids,
                              const simlsh_signature *const *sigs, size_t n, uint32_t nthreads)
{
    SIMLSH__CHECK_INDEX(index);
    if (index == NULL || (n > 0 && (ids == NULL || sigs == NULL)))
        return SIMLSH_EINVAL;
    return insert_rows(index, ids, NULL, sigs, n, nthreads);
}
