/* Insertion (plan, prepare and put, with a one-pass fast path) and removal. */
#include "internal.h"

/* ---- insertion in three steps: plan, prepare, put ------------------------------ */

/* plan[b] for one new document: the empty position where its entry goes
 * (< 2^31, valid while the capacity is plan_cap), PLAN_CONVERT (the bucket
 * has INLINE_MAX inline entries and moves to a new list), or REF_BIT | the
 * index of the bucket's list (append). Reads only; returns the capacity
 * the positions refer to. */
#define PLAN_CONVERT 0xFFFFFFFFu

static inline int plan_inline(uint32_t v)
{
    return (v & REF_BIT) == 0;
}

/* Scan the run of band b from the home of fp, counting the inline members
 * of the bucket (fp, bv) into *same (below INLINE_MAX, those with its
 * fingerprint: it is compared with INLINE_MAX only), up to the end of the run or to the
 * bucket's list reference, whichever comes first: returns that position,
 * an empty entry (where a new inline member goes) or the reference. The
 * table must exist. */
static inline size_t scan_bucket(const struct simlsh_index *ix, uint32_t b, uint32_t fp,
                                 const uint32_t *bv, uint32_t *same)
{
    const band_entry *t = ix->tab + (size_t)b * ix->tcap;
    size_t home = fastrange(fp, ix->tcap), p = home;
    uint32_t n = 0;
    /* Inline entries are counted by fingerprint, their stored rows compared
     * only when that count reaches INLINE_MAX (as batch.c does): callers
     * only ask whether *same reaches it. */
    for (;;) {
        band_entry e = t[p];
        if (e.slot == NO_SLOT)
            break;
        if (e.fp == fp) {
            if (!is_ref(e.slot))
                n++;
            else if (entry_matches(ix, b, e, fp, bv))
                break;
        }
        p = next_pos(p, ix->tcap);
    }
    if (n >= INLINE_MAX && bv != NULL) {
        n = 0;
        for (size_t q = home; q != p; q = next_pos(q, ix->tcap))
            n += !is_ref(t[q].slot) && entry_matches(ix, b, t[q], fp, bv);
    }
    *same = n;
    return p;
}

static size_t ix_plan(const struct simlsh_index *ix, const uint32_t *fps, const uint32_t *values,
                      uint32_t *plan)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        plan[b] = 0;
        if (ix->tab == NULL)
            continue;
        const band_entry *t = band_tab(ix, b);
        const uint32_t *bv = values != NULL ? values + (size_t)b * ix->rows : NULL;
        uint32_t same;
        size_t p = scan_bucket(ix, b, fps[b], bv, &same);
        if (t[p].slot != NO_SLOT)
            plan[b] = t[p].slot; /* the list's reference */
        else
            plan[b] = same >= INLINE_MAX ? PLAN_CONVERT : (uint32_t)p;
    }
    return ix->tcap;
}

/* Memory a plan needs, allocated before anything changes. */
typedef struct {
    uint32_t *buf;
    uint32_t cap;
} list_buf;

typedef struct {
    list_buf *v; /* one per band that needs a buffer, in band order */
    size_t n, vcap;
    ovf_list *ovf; /* a larger list array, or NULL */
    size_t ovf_cap;
} prepared;

static void prep_free(const struct simlsh_index *ix, prepared *pr)
{
    const simlsh_allocator *al = &ix->params.alloc;
    for (size_t i = 0; pr->v != NULL && i < pr->n; i++)
        simlsh__free_sized(al, pr->v[i].buf, (size_t)pr->v[i].cap * sizeof *pr->v[i].buf);
    simlsh__free_sized(al, pr->v, pr->vcap * sizeof *pr->v);
    simlsh__free_sized(al, pr->ovf, pr->ovf_cap * sizeof *pr->ovf);
    memset(pr, 0, sizeof *pr);
}

static int ix_prepare(const struct simlsh_index *ix, const uint32_t *plan, prepared *pr)
{
    const simlsh_allocator *al = &ix->params.alloc;
    memset(pr, 0, sizeof *pr);
    size_t need = 0, converts = 0;
    for (uint32_t b = 0; b < ix->bands; b++) {
        if (plan[b] == PLAN_CONVERT) {
            need++;
            converts++;
        } else if (!plan_inline(plan[b])) {
            const ovf_list *l = list_of(ix, plan[b]);
            need += l->n == l->cap;
        }
    }
    if (need == 0)
        return 0;
    if ((pr->v = simlsh__calloc(al, need, sizeof *pr->v)) == NULL)
        return SIMLSH_ENOMEM;
    pr->vcap = need;
    for (uint32_t b = 0; b < ix->bands; b++) {
        uint32_t cap;
        if (plan[b] == PLAN_CONVERT) {
            cap = LIST_MIN_CAP;
        } else if (!plan_inline(plan[b]) && list_of(ix, plan[b])->n == list_of(ix, plan[b])->cap) {
            uint32_t old = list_of(ix, plan[b])->cap;
            if (old > UINT32_MAX / 2)
                goto fail;
            cap = old * 2;
        } else {
            continue;
        }
        list_buf *lb = &pr->v[pr->n++];
        lb->cap = cap;
        if ((lb->buf = simlsh__malloc(al, (size_t)cap * sizeof *lb->buf)) == NULL)
            goto fail;
    }
    size_t fresh = converts > ix->ovf_nfree ? converts - ix->ovf_nfree : 0;
    if (ix->novf + fresh > ix->ovf_cap) {
        if (ix->novf + fresh > MAX_LISTS)
            goto fail;
        size_t ncap = ix->ovf_cap * 2 > 16 ? ix->ovf_cap * 2 : 16;
        if (ncap < ix->novf + fresh)
            ncap = ix->novf + fresh;
        pr->ovf_cap = ncap;
        if ((pr->ovf = simlsh__calloc(al, ncap, sizeof *pr->ovf)) == NULL)
            goto fail;
    }
    return 0;
fail:
    prep_free(ix, pr);
    return SIMLSH_ENOMEM;
}

static void list_release(struct simlsh_index *ix, uint32_t li)
{
    ovf_list *l = &ix->ovf[li];
    ix->ovf_bytes -= (size_t)l->cap * sizeof *l->slots;
    simlsh__free_sized(&ix->params.alloc, l->slots, (size_t)l->cap * sizeof *l->slots);
    l->slots = NULL;
    l->n = ix->ovf_free;
    l->cap = 0;
    ix->ovf_free = li;
    ix->ovf_nfree++;
}

/* Move the INLINE_MAX inline entries of (fp, bv) in band b to a new list
 * (buffer lb) together with slot, and reference it from one entry. */
static void bucket_convert(struct simlsh_index *ix, uint32_t b, uint32_t fp, const uint32_t *bv,
                           uint32_t slot, const list_buf *lb)
{
    band_entry *t = band_tab(ix, b);
    uint32_t members[INLINE_MAX];
    uint32_t n = 0;
    size_t home = fastrange(fp, ix->tcap), p = home;
    while (t[p].slot != NO_SLOT && n < INLINE_MAX) {
        if (!is_ref(t[p].slot) && entry_matches(ix, b, t[p], fp, bv))
            members[n++] = t[p].slot;
        p = next_pos(p, ix->tcap);
    }
    for (uint32_t i = 0; i < n; i++) {
        p = home;
        while (t[p].slot != members[i])
            p = next_pos(p, ix->tcap);
        tab_del_at(t, ix->tcap, p);
    }
    uint32_t li;
    if (ix->ovf_free != NO_SLOT) {
        li = ix->ovf_free;
        ix->ovf_free = ix->ovf[li].n;
        ix->ovf_nfree--;
    } else {
        li = (uint32_t)ix->novf++;
    }
    ovf_list *l = &ix->ovf[li];
    l->slots = lb->buf;
    l->cap = lb->cap;
    memcpy(l->slots, members, n * sizeof *members);
    l->slots[n] = slot;
    l->n = n + 1;
    ix->ovf_bytes += (size_t)l->cap * sizeof *l->slots;
    tab_put(t, ix->tcap, fp, REF_BIT | li);
}

/* Add a document whose room simlsh__ix_ensure() and ix_prepare() made;
 * cannot fail. Consumes pr. plan_cap: what ix_plan() returned; if the tables grew
 * since, planned positions are stale and inline entries probe again. */
static void ix_put(struct simlsh_index *ix, uint64_t id, const uint32_t *fps,
                   const uint32_t *values, const uint32_t *plan, size_t plan_cap, prepared *pr)
{
    int stale = plan_cap != ix->tcap;
    uint32_t slot;
    if (ix->free_head != NO_SLOT) {
        slot = ix->free_head;
        ix->free_head = (uint32_t)ix->ids[slot];
    } else {
        slot = (uint32_t)ix->nslots++;
    }
    ix->ids[slot] = id;
    if (ix->store)
        memcpy(ix->sigs + (size_t)slot * ix->num_perm, values, ix->num_perm * sizeof *values);
    simlsh__idmap_put(ix->idmap, ix->idcap, id, slot);
    if (pr->ovf != NULL) {
        if (ix->novf > 0)
            memcpy(pr->ovf, ix->ovf, ix->novf * sizeof *pr->ovf);
        simlsh__free_sized(&ix->params.alloc, ix->ovf, ix->ovf_cap * sizeof *ix->ovf);
        ix->ovf = pr->ovf;
        ix->ovf_cap = pr->ovf_cap;
    }
    size_t k = 0;
    for (uint32_t b = 0; b < ix->bands; b++) {
        band_entry *t = ix->tab + (size_t)b * ix->tcap;
        if (plan_inline(plan[b])) {
            if (stale) {
                tab_put(t, ix->tcap, fps[b], slot);
            } else {
                t[plan[b]].fp = fps[b];
                t[plan[b]].slot = slot;
            }
        } else if (plan[b] == PLAN_CONVERT) {
            bucket_convert(ix, b, fps[b], ix->store ? values + (size_t)b * ix->rows : NULL, slot,
                           &pr->v[k++]);
        } else {
            ovf_list *l = list_of(ix, plan[b]);
            if (l->n == l->cap) {
                const list_buf *lb = &pr->v[k++];
                memcpy(lb->buf, l->slots, l->n * sizeof *l->slots);
                simlsh__free_sized(&ix->params.alloc, l->slots, (size_t)l->cap * sizeof *l->slots);
                ix->ovf_bytes += (size_t)(lb->cap - l->cap) * sizeof *l->slots;
                l->slots = lb->buf;
                l->cap = lb->cap;
            }
            l->slots[l->n++] = slot;
        }
    }
    ix->count++;
    ix->gen++;
    simlsh__free_sized(&ix->params.alloc, pr->v, pr->vcap * sizeof *pr->v);
    memset(pr, 0, sizeof *pr);
}

/* The common case in one pass, as plain linear probing: no table growth
 * and no list allocation needed. Each band's entry is written as soon as
 * its run is scanned; if a band turns out to need an allocation, the bands
 * already written are undone and 0 is returned (nothing changed), and the
 * caller takes the plan / prepare / put path. 1: inserted. */
static int put_fast(struct simlsh_index *ix, uint64_t id, const uint32_t *fps,
                    const uint32_t *values)
{
    size_t slots = ix->free_head != NO_SLOT ? ix->nslots : ix->nslots + 1;
    if (ix->tab == NULL || !fits(ix->count + 1, ix->tcap) || !fits(ix->count + 1, ix->idcap) ||
        slots > ix->slot_cap)
        return 0;
    uint32_t slot = ix->free_head != NO_SLOT ? ix->free_head : (uint32_t)ix->nslots;
    const uint32_t *vb = ix->store ? values : NULL;
    uint32_t b;
    for (b = 0; b < ix->bands; b++) {
        band_entry *t = ix->tab + (size_t)b * ix->tcap;
        const uint32_t *bv = vb != NULL ? vb + (size_t)b * ix->rows : NULL;
        uint32_t same;
        size_t p = scan_bucket(ix, b, fps[b], bv, &same);
        if (t[p].slot != NO_SLOT) {
            ovf_list *l = list_of(ix, t[p].slot);
            if (l->n == l->cap)
                goto undo;
            l->slots[l->n++] = slot;
        } else {
            if (same >= INLINE_MAX)
                goto undo;
            t[p].fp = fps[b];
            t[p].slot = slot;
        }
    }
    if (ix->free_head != NO_SLOT)
        ix->free_head = (uint32_t)ix->ids[slot];
    else
        ix->nslots++;
    ix->ids[slot] = id;
    if (ix->store)
        memcpy(ix->sigs + (size_t)slot * ix->num_perm, values, ix->num_perm * sizeof *values);
    simlsh__idmap_put(ix->idmap, ix->idcap, id, slot);
    ix->count++;
    ix->gen++;
    return 1;
undo:
    while (b-- > 0) {
        band_entry *t = ix->tab + (size_t)b * ix->tcap;
        for (size_t p = fastrange(fps[b], ix->tcap);; p = next_pos(p, ix->tcap)) {
            if (t[p].slot == slot) {
                tab_del_at(t, ix->tcap, p);
                break;
            }
            if (is_ref(t[p].slot) && t[p].fp == fps[b]) {
                ovf_list *l = list_of(ix, t[p].slot);
                if (l->n > 0 && l->slots[l->n - 1] == slot) {
                    l->n--;
                    break;
                }
            }
        }
    }
    return 0;
}

/* Insert a document (id absent); 0 or ENOMEM, and then nothing changed. */
int simlsh__ix_add(struct simlsh_index *ix, uint64_t id, const uint32_t *fps,
                   const uint32_t *values, uint32_t *plan)
{
    if (put_fast(ix, id, fps, values))
        return 0;
    /* Plan on the current tables (a plan does not depend on their layout),
     * allocate what it needs, grow the tables, and only then change. */
    size_t plan_cap = ix_plan(ix, fps, ix->store ? values : NULL, plan);
    prepared pr;
    int rc = ix_prepare(ix, plan, &pr);
    if (rc < 0)
        return rc;
    size_t slots = ix->free_head != NO_SLOT ? ix->nslots : ix->nslots + 1;
    rc = simlsh__ix_ensure(ix, ix->count + 1, slots, 0, 1);
    if (rc < 0) {
        prep_free(ix, &pr);
        return rc;
    }
    ix_put(ix, id, fps, values, plan, plan_cap, &pr);
    return 0;
}

/* Remove the document at id map position pos: its entry in every band,
 * inline or in a list (a list left empty is released), and its slot. */
void simlsh__ix_del(struct simlsh_index *ix, size_t pos)
{
    uint32_t slot = ix->idmap[pos].slot;
    uint32_t fps[SIMLSH__MAX_PERM];
    simlsh__ix_compute_fps(ix, sig_of(ix, slot), fps);
    for (uint32_t b = 0; b < ix->bands; b++) {
        band_entry *t = ix->tab + (size_t)b * ix->tcap;
        /* Present, inline or in a list, in the run of its fingerprint. */
        for (size_t p = fastrange(fps[b], ix->tcap); t[p].slot != NO_SLOT;) {
            if (t[p].slot == slot) {
                tab_del_at(t, ix->tcap, p);
                break;
            }
            if (is_ref(t[p].slot) && t[p].fp == fps[b]) {
                ovf_list *l = list_of(ix, t[p].slot);
                uint32_t i = 0;
                while (i < l->n && l->slots[i] != slot)
                    i++;
                if (i < l->n) {
                    l->slots[i] = l->slots[--l->n];
                    if (l->n == 0) {
                        list_release(ix, t[p].slot & ~REF_BIT);
                        tab_del_at(t, ix->tcap, p);
                    }
                    break;
                }
            }
            p = next_pos(p, ix->tcap);
        }
    }
    simlsh__idmap_del_at(ix->idmap, ix->idcap, pos);
    ix->ids[slot] = ix->free_head;
    ix->free_head = slot;
    ix->count--;
    ix->gen++;
}
