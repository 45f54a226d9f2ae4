/*
 * The LSH index: b band tables mapping band keys to documents.
 *
 * Layout (docs/format-index.md describes the bytes, this the memory):
 *  - one block of b tables, each `tcap` 8-byte entries {fingerprint, slot}:
 *    open addressing with linear probing, home = fastrange(fp, tcap), so
 *    any capacity works and growth can be 1.5x; backward-shift deletion
 *    keeps every run gap-free, which the "first member of a bucket"
 *    search of clustering relies on. fp is the high half of the band key.
 *  - an id -> slot map (linear probing on fmix64(id)), slot -> id array,
 *    and, with STORE_SIGNATURES, num_perm values per slot in one flat
 *    array. Freed slots form a list threaded through the id array.
 * A bucket is the set of entries of one band with equal fingerprint and,
 * when signatures are stored, equal r values of that band (which rules out
 * 32-bit fingerprint collisions; without stored signatures such a rare
 * collision merges two buckets and may add candidates).
 * All tables have at most one entry per document, so they share one
 * capacity and grow together, all-or-nothing.
 *
 * Large buckets: linear probing must scan a bucket's whole run to insert
 * after it, so m identical documents would cost O(m^2). A bucket that
 * would get more than INLINE_MAX entries in a band moves to an overflow
 * list (a growable array of slots) referenced by a single entry whose slot
 * field has REF_BIT set; a bucket is either all inline or one list.
 */
#include <stdlib.h>

#include "file.h"
#include "index.h"
#include "os.h"

#define NO_SLOT 0xFFFFFFFFu
/* Table capacities stay below 2^31: fastrange on 32-bit fingerprints needs
 * <= 2^32, and an insertion plan stores a position or a tagged list index
 * in 32 bits. */
#define MAX_DOCS ((size_t)1 << 30)
#define MAX_CAP ((size_t)0x7FFFFFFFu)
#define MIN_CAP 16
/* Entry slot fields with this bit reference an overflow list. */
#define REF_BIT 0x80000000u
#define MAX_LISTS ((size_t)0x7FFFFFFE)
/* Inline members of one bucket in one band before it moves to a list:
 * small enough that runs stay short, large enough that typical groups of
 * near duplicates never need a list. */
#define INLINE_MAX 8
#define LIST_MIN_CAP 32

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

typedef struct {
    uint32_t fp;
    uint32_t slot; /* NO_SLOT: empty */
} band_entry;

typedef struct {
    uint64_t id;
    uint32_t slot; /* NO_SLOT: empty */
    uint32_t unused;
} id_entry;

typedef struct {
    uint32_t *slots; /* NULL: a free list record; n is then the next free one */
    uint32_t n, cap;
} ovf_list;

struct simlsh_index {
    struct simlsh_params params; /* bands, rows resolved */
    uint64_t sig_fp, index_fp;
    uint32_t bands, rows, num_perm;
    int store;
    band_entry *tab; /* bands * tcap entries; band i at tab + i * tcap */
    size_t tcap;
    id_entry *idmap;
    size_t idcap;
    uint64_t *ids;  /* slot -> id; a free slot holds the next free slot */
    uint32_t *sigs; /* num_perm values per slot when store */
    size_t slot_cap, nslots, count;
    uint32_t free_head;
    ovf_list *ovf; /* overflow lists of large buckets, all bands */
    size_t novf, ovf_cap, ovf_nfree, ovf_bytes;
    uint32_t ovf_free;
};

/* ---- small helpers ---------------------------------------------------------- */

static inline size_t fastrange(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)h * (uint64_t)cap) >> 32);
}

static inline uint32_t id_hash(uint64_t id) { return (uint32_t)(simlsh__fmix64(id) >> 32); }

static inline uint32_t band_fp(uint64_t key) { return (uint32_t)(key >> 32); }

/* Load at most 0.8 and at least one empty entry, so probes end. */
static inline int fits(size_t n, size_t cap) { return n < cap && n / 4 <= cap - n; }

static size_t cap_for(size_t n)
{
    size_t c = n + n / 4 + 2;
    return c < MIN_CAP ? MIN_CAP : c;
}

/* reserve() sizes for load 2/3 (12 bytes per document per band): a probe
 * scans to the end of its run, about (1 + 1/(1-a)^2)/2 entries at load a,
 * which is 13 at 0.8 but 5 at 2/3, one or two cache lines instead of
 * three. Growth still happens only at 0.8. */
static size_t cap_reserve(size_t n)
{
    size_t c = n + n / 2 + 2;
    return c < MIN_CAP ? MIN_CAP : c;
}

/* Band b's table; NULL before the first allocation (capacity 0), so that
 * loops over an empty index never form NULL + offset. */
static inline band_entry *band_tab(const struct simlsh_index *ix, uint32_t b)
{
    return ix->tab != NULL ? ix->tab + (size_t)b * ix->tcap : NULL;
}

static inline const uint32_t *sig_of(const struct simlsh_index *ix, uint32_t slot)
{
    return ix->sigs + (size_t)slot * ix->num_perm;
}

static void compute_fps(const struct simlsh_index *ix, const uint32_t *values, uint32_t *fps)
{
    for (uint32_t i = 0; i < ix->bands; i++)
        fps[i] = band_fp(simlsh__band_key_inline(values + (size_t)i * ix->rows, ix->rows, i,
                                                 ix->params.seed));
}

/* compute_fps(), then every band's home line (and the next, where a
 * query's run usually continues) requested in one burst: the b misses
 * overlap instead of queueing. Keys first, so that prefetches stalling on
 * full miss buffers never hold up the key arithmetic. Prefetches never
 * fault, even past the block's end. */
static void compute_fps_prefetch(const struct simlsh_index *ix, const uint32_t *values,
                                 uint32_t *fps, int two_lines)
{
    compute_fps(ix, values, fps);
    if (ix->tab == NULL)
        return;
    for (uint32_t i = 0; i < ix->bands; i++) {
        const band_entry *h = ix->tab + (size_t)i * ix->tcap + fastrange(fps[i], ix->tcap);
        PREFETCH(h);
        if (two_lines)
            PREFETCH((const char *)h + 64);
    }
}

static inline int rows_equal(const struct simlsh_index *ix, uint32_t slot, uint32_t band,
                             const uint32_t *band_values)
{
    /* A plain loop: r is small, and a memcmp call costs more than it. */
    const uint32_t *a = sig_of(ix, slot) + (size_t)band * ix->rows;
    for (uint32_t i = 0; i < ix->rows; i++)
        if (a[i] != band_values[i])
            return 0;
    return 1;
}

static inline uint32_t count_equal(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    uint32_t eq = 0;
    for (uint32_t i = 0; i < n; i++)
        eq += a[i] == b[i];
    return eq;
}

static inline double estimate(const struct simlsh_index *ix, const uint32_t *a, const uint32_t *b)
{
    return (double)count_equal(a, b, ix->num_perm) / (double)ix->num_perm;
}

/* ---- buckets: inline entries and overflow lists ------------------------------- */

static inline int is_ref(uint32_t slot) { return slot != NO_SLOT && (slot & REF_BIT) != 0; }

static inline ovf_list *list_of(const struct simlsh_index *ix, uint32_t slot)
{
    return &ix->ovf[slot & ~REF_BIT];
}

/* A document whose rows stand for entry e's bucket. */
static inline uint32_t rep_slot(const struct simlsh_index *ix, band_entry e)
{
    return is_ref(e.slot) ? list_of(ix, e.slot)->slots[0] : e.slot;
}

/* Is occupied entry e in the bucket of (fp, band values bv)? bv NULL: no
 * stored signatures, the fingerprint alone decides. */
static inline int entry_matches(const struct simlsh_index *ix, uint32_t band, band_entry e,
                                uint32_t fp, const uint32_t *bv)
{
    return e.fp == fp && (bv == NULL || rows_equal(ix, rep_slot(ix, e), band, bv));
}

/* Band tables and the id map are probed at random, b + 1 times per insert
 * or query: with 4 KiB pages nearly every probe also misses the TLB, and
 * under virtualisation a page walk costs as much as the miss. */
static void advise_huge(void *p, size_t bytes) { simlsh__os_advise_huge(p, bytes); }

/* ---- band tables ------------------------------------------------------------ */

static inline void tab_put(band_entry *t, size_t cap, uint32_t fp, uint32_t slot)
{
    size_t p = fastrange(fp, cap);
    while (t[p].slot != NO_SLOT)
        if (++p == cap)
            p = 0;
    t[p].fp = fp;
    t[p].slot = slot;
}

/* Backward-shift deletion: pull later entries of the run into the hole
 * unless their home lies cyclically in (hole, entry]. No tombstones, so
 * runs never fill up with dead entries. */
static void tab_del_at(band_entry *t, size_t cap, size_t i)
{
    size_t j = i;
    for (;;) {
        if (++j == cap)
            j = 0;
        if (t[j].slot == NO_SLOT)
            break;
        size_t k = fastrange(t[j].fp, cap);
        int stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stay)
            continue;
        t[i] = t[j];
        i = j;
    }
    t[i].fp = 0xFFFFFFFFu;
    t[i].slot = NO_SLOT;
}

/* ---- id map --------------------------------------------------------------------- */

static size_t idmap_find(const struct simlsh_index *ix, uint64_t id)
{
    if (ix->idcap == 0)
        return SIZE_MAX;
    size_t p = fastrange(id_hash(id), ix->idcap);
    while (ix->idmap[p].slot != NO_SLOT) {
        if (ix->idmap[p].id == id)
            return p;
        if (++p == ix->idcap)
            p = 0;
    }
    return SIZE_MAX;
}

static void idmap_put(id_entry *m, size_t cap, uint64_t id, uint32_t slot)
{
    size_t p = fastrange(id_hash(id), cap);
    while (m[p].slot != NO_SLOT)
        if (++p == cap)
            p = 0;
    m[p].id = id;
    m[p].slot = slot;
}

static void idmap_del_at(id_entry *m, size_t cap, size_t i)
{
    size_t j = i;
    for (;;) {
        if (++j == cap)
            j = 0;
        if (m[j].slot == NO_SLOT)
            break;
        size_t k = fastrange(id_hash(m[j].id), cap);
        int stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stay)
            continue;
        m[i] = m[j];
        i = j;
    }
    m[i].slot = NO_SLOT;
}

/* ---- growth ------------------------------------------------------------------- */

static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return 0;
    *out = a * b;
    return 1;
}

/* Make room for `docs` documents in `slots` slots. Every new block is
 * allocated before any is used, so on ENOMEM the index is exactly as it
 * was (same memory included). `exact` (reserve) sizes to the request;
 * otherwise capacities grow by 1.5x for amortised O(1) inserts. */
static int ix_ensure(struct simlsh_index *ix, size_t docs, size_t slots, int exact)
{
    if (docs > MAX_DOCS || slots > MAX_DOCS)
        return SIMLSH_ENOMEM;
    const simlsh_allocator *al = &ix->params.alloc;
    size_t ntcap = ix->tcap, nidcap = ix->idcap, nscap = ix->slot_cap;
    if (!fits(docs, ntcap)) {
        ntcap = exact ? cap_reserve(docs) : cap_for(docs);
        if (!exact && ix->tcap + ix->tcap / 2 > ntcap)
            ntcap = ix->tcap + ix->tcap / 2;
        if (ntcap > MAX_CAP)
            ntcap = MAX_CAP;
    }
    if (!fits(docs, nidcap)) {
        nidcap = cap_for(docs);
        if (!exact && ix->idcap + ix->idcap / 2 > nidcap)
            nidcap = ix->idcap + ix->idcap / 2;
        if (nidcap > MAX_CAP)
            nidcap = MAX_CAP;
    }
    if (slots > nscap) {
        nscap = slots;
        if (!exact && ix->slot_cap + ix->slot_cap / 2 > nscap)
            nscap = ix->slot_cap + ix->slot_cap / 2;
        if (nscap < MIN_CAP)
            nscap = MIN_CAP;
        if (nscap > MAX_DOCS)
            nscap = MAX_DOCS;
    }

    band_entry *nt = NULL;
    id_entry *nid = NULL;
    uint64_t *nids = NULL;
    uint32_t *nsigs = NULL;
    size_t bytes;
    if (ntcap != ix->tcap) {
        if (!mul_ok(ntcap, (size_t)ix->bands * sizeof *nt, &bytes) ||
            (nt = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
    }
    if (nidcap != ix->idcap) {
        if (!mul_ok(nidcap, sizeof *nid, &bytes) || (nid = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
    }
    if (nscap != ix->slot_cap) {
        if (!mul_ok(nscap, sizeof *nids, &bytes) || (nids = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
        if (ix->store && (!mul_ok(nscap, (size_t)ix->num_perm * sizeof *nsigs, &bytes) ||
                          (nsigs = simlsh__malloc(al, bytes)) == NULL))
            goto fail;
    }

    if (nt != NULL) {
        advise_huge(nt, ntcap * ix->bands * sizeof *nt);
        memset(nt, 0xff, ntcap * ix->bands * sizeof *nt);
        for (uint32_t b = 0; b < ix->bands; b++) {
            const band_entry *old = band_tab(ix, b);
            band_entry *t = nt + (size_t)b * ntcap;
            for (size_t p = 0; p < ix->tcap; p++)
                if (old[p].slot != NO_SLOT)
                    tab_put(t, ntcap, old[p].fp, old[p].slot);
        }
        simlsh__free(al, ix->tab);
        ix->tab = nt;
        ix->tcap = ntcap;
    }
    if (nid != NULL) {
        advise_huge(nid, nidcap * sizeof *nid);
        memset(nid, 0xff, nidcap * sizeof *nid);
        for (size_t p = 0; p < ix->idcap; p++)
            if (ix->idmap[p].slot != NO_SLOT)
                idmap_put(nid, nidcap, ix->idmap[p].id, ix->idmap[p].slot);
        simlsh__free(al, ix->idmap);
        ix->idmap = nid;
        ix->idcap = nidcap;
    }
    if (nids != NULL) {
        if (ix->nslots > 0)
            memcpy(nids, ix->ids, ix->nslots * sizeof *nids);
        simlsh__free(al, ix->ids);
        ix->ids = nids;
        if (ix->store) {
            /* No huge-page hint here: signatures are read once per
             * candidate, not once per band, and zeroing fresh huge pages
             * made first inserts up to twice as slow on a virtual machine. */
            if (ix->nslots > 0)
                memcpy(nsigs, ix->sigs, ix->nslots * ix->num_perm * sizeof *nsigs);
            simlsh__free(al, ix->sigs);
            ix->sigs = nsigs;
        }
        ix->slot_cap = nscap;
    }
    return 0;
fail:
    simlsh__free(al, nt);
    simlsh__free(al, nid);
    simlsh__free(al, nids);
    simlsh__free(al, nsigs);
    return SIMLSH_ENOMEM;
}

/* ---- insertion in three steps: plan, prepare, put ------------------------------ */

/* plan[b] for one new document: the empty position where its entry goes
 * (< 2^31, valid while the capacity is plan_cap), PLAN_CONVERT (the bucket
 * has INLINE_MAX inline entries and moves to a new list), or REF_BIT | the
 * index of the bucket's list (append). Reads only; returns the capacity
 * the positions refer to. */
#define PLAN_CONVERT 0xFFFFFFFFu

static inline int plan_inline(uint32_t v) { return (v & REF_BIT) == 0; }

static size_t ix_plan(const struct simlsh_index *ix, const uint32_t *fps, const uint32_t *values,
                      uint32_t *plan)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        plan[b] = 0;
        if (ix->tab == NULL)
            continue;
        const band_entry *t = band_tab(ix, b);
        const uint32_t *bv = values != NULL ? values + (size_t)b * ix->rows : NULL;
        size_t p = fastrange(fps[b], ix->tcap);
        uint32_t same = 0;
        for (;;) {
            band_entry e = t[p];
            if (e.slot == NO_SLOT)
                break;
            if (entry_matches(ix, b, e, fps[b], bv)) {
                if (is_ref(e.slot))
                    break;
                same++;
            }
            if (++p == ix->tcap)
                p = 0;
        }
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
    size_t n;
    ovf_list *ovf; /* a larger list array, or NULL */
    size_t ovf_cap;
} prepared;

static void prep_free(const struct simlsh_index *ix, prepared *pr)
{
    const simlsh_allocator *al = &ix->params.alloc;
    for (size_t i = 0; pr->v != NULL && i < pr->n; i++)
        simlsh__free(al, pr->v[i].buf);
    simlsh__free(al, pr->v);
    simlsh__free(al, pr->ovf);
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
        if ((pr->ovf = simlsh__calloc(al, ncap, sizeof *pr->ovf)) == NULL)
            goto fail;
        pr->ovf_cap = ncap;
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
    simlsh__free(&ix->params.alloc, l->slots);
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
        if (++p == ix->tcap)
            p = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        p = home;
        while (t[p].slot != members[i])
            if (++p == ix->tcap)
                p = 0;
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

/* Add a document whose room ix_ensure() and ix_prepare() made; cannot
 * fail. Consumes pr. plan_cap: what ix_plan() returned; if the tables grew
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
    idmap_put(ix->idmap, ix->idcap, id, slot);
    if (pr->ovf != NULL) {
        if (ix->novf > 0)
            memcpy(pr->ovf, ix->ovf, ix->novf * sizeof *pr->ovf);
        simlsh__free(&ix->params.alloc, ix->ovf);
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
                simlsh__free(&ix->params.alloc, l->slots);
                ix->ovf_bytes += (size_t)(lb->cap - l->cap) * sizeof *l->slots;
                l->slots = lb->buf;
                l->cap = lb->cap;
            }
            l->slots[l->n++] = slot;
        }
    }
    ix->count++;
    simlsh__free(&ix->params.alloc, pr->v);
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
        size_t p = fastrange(fps[b], ix->tcap);
        uint32_t same = 0;
        for (;;) {
            band_entry e = t[p];
            if (e.slot == NO_SLOT)
                break;
            if (e.fp == fps[b] && entry_matches(ix, b, e, fps[b], bv)) {
                if (is_ref(e.slot))
                    break;
                same++;
            }
            if (++p == ix->tcap)
                p = 0;
        }
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
    idmap_put(ix->idmap, ix->idcap, id, slot);
    ix->count++;
    return 1;
undo:
    while (b-- > 0) {
        band_entry *t = ix->tab + (size_t)b * ix->tcap;
        for (size_t p = fastrange(fps[b], ix->tcap);; p = p + 1 == ix->tcap ? 0 : p + 1) {
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
static int ix_add(struct simlsh_index *ix, uint64_t id, const uint32_t *fps,
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
    rc = ix_ensure(ix, ix->count + 1, slots, 0);
    if (rc < 0) {
        prep_free(ix, &pr);
        return rc;
    }
    ix_put(ix, id, fps, values, plan, plan_cap, &pr);
    return 0;
}

/* ---- lifetime ------------------------------------------------------------------ */

static int ix_create(struct simlsh_index **out, const struct simlsh_params *p, uint32_t b,
                     uint32_t r)
{
    struct simlsh_index *ix = simlsh__calloc(&p->alloc, 1, sizeof *ix);
    if (ix == NULL)
        return SIMLSH_ENOMEM;
    ix->params = *p;
    ix->params.bands = (int32_t)b;
    ix->params.rows = (int32_t)r;
    ix->bands = b;
    ix->rows = r;
    ix->num_perm = (uint32_t)p->num_perm;
    ix->store = p->store_signatures != 0;
    ix->sig_fp = simlsh__fingerprint(&ix->params, SIMLSH_SCOPE_SIGNATURE);
    ix->index_fp = simlsh__fingerprint(&ix->params, SIMLSH_SCOPE_INDEX);
    ix->free_head = NO_SLOT;
    ix->ovf_free = NO_SLOT;
    *out = ix;
    return 0;
}

int simlsh_index_new(simlsh_index **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (params == NULL)
        return SIMLSH_EINVAL;
    uint32_t b, r;
    int rc = simlsh__params_resolve_bands(params, &b, &r);
    if (rc < 0)
        return rc;
    return ix_create(out, params, b, r);
}

void simlsh_index_free(simlsh_index *index)
{
    if (index == NULL)
        return;
    simlsh_allocator a = index->params.alloc;
    for (size_t i = 0; i < index->novf; i++)
        simlsh__free(&a, index->ovf[i].slots);
    simlsh__free(&a, index->ovf);
    simlsh__free(&a, index->tab);
    simlsh__free(&a, index->idmap);
    simlsh__free(&a, index->ids);
    simlsh__free(&a, index->sigs);
    simlsh__free(&a, index);
}

int simlsh_index_bands(uint32_t *bands, uint32_t *rows, const simlsh_index *index)
{
    if (bands == NULL || rows == NULL || index == NULL)
        return SIMLSH_EINVAL;
    *bands = index->bands;
    *rows = index->rows;
    return 0;
}

int simlsh_index_params(simlsh_params **out, const simlsh_index *index)
{
    /* The copy has bands and rows resolved: params built from it make the
     * same index, whatever the optimiser's weights were. */
    return simlsh__params_export(out, index ? &index->params : NULL);
}

int simlsh_index_fingerprint(uint64_t *out, const simlsh_index *index)
{
    if (out == NULL || index == NULL)
        return SIMLSH_EINVAL;
    *out = index->index_fp;
    return 0;
}

/* ---- insert, remove ------------------------------------------------------------ */

int simlsh_index_insert(simlsh_index *index, uint64_t id, const simlsh_signature *sig)
{
    if (index == NULL || sig == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->fingerprint != index->sig_fp)
        return SIMLSH_EMISMATCH;
    if (sig->empty)
        return SIMLSH_EEMPTY;
    if (index->idcap > 0)
        PREFETCH(index->idmap + fastrange(id_hash(id), index->idcap));
    uint32_t fps[SIMLSH__MAX_PERM], plan[SIMLSH__MAX_PERM];
    compute_fps(index, sig->values, fps);
    if (idmap_find(index, id) != SIZE_MAX)
        return SIMLSH_EEXIST;
    /* All b probes' lines requested at once: the misses overlap. */
    for (uint32_t b = 0; index->tab != NULL && b < index->bands; b++)
        PREFETCH(index->tab + (size_t)b * index->tcap + fastrange(fps[b], index->tcap));
    return ix_add(index, id, fps, sig->values, plan);
}

int simlsh_index_remove(simlsh_index *index, uint64_t id)
{
    if (index == NULL)
        return SIMLSH_EINVAL;
    if (!index->store)
        return SIMLSH_EUNSUPPORTED;
    size_t pos = idmap_find(index, id);
    if (pos == SIZE_MAX)
        return SIMLSH_ENOTFOUND;
    uint32_t slot = index->idmap[pos].slot;
    uint32_t fps[SIMLSH__MAX_PERM];
    compute_fps(index, sig_of(index, slot), fps);
    for (uint32_t b = 0; b < index->bands; b++) {
        band_entry *t = index->tab + (size_t)b * index->tcap;
        /* Present, inline or in a list, in the run of its fingerprint. */
        for (size_t p = fastrange(fps[b], index->tcap); t[p].slot != NO_SLOT;) {
            if (t[p].slot == slot) {
                tab_del_at(t, index->tcap, p);
                break;
            }
            if (is_ref(t[p].slot) && t[p].fp == fps[b]) {
                ovf_list *l = list_of(index, t[p].slot);
                uint32_t i = 0;
                while (i < l->n && l->slots[i] != slot)
                    i++;
                if (i < l->n) {
                    l->slots[i] = l->slots[--l->n];
                    if (l->n == 0) {
                        list_release(index, t[p].slot & ~REF_BIT);
                        tab_del_at(t, index->tcap, p);
                    }
                    break;
                }
            }
            if (++p == index->tcap)
                p = 0;
        }
    }
    idmap_del_at(index->idmap, index->idcap, pos);
    index->ids[slot] = index->free_head;
    index->free_head = slot;
    index->count--;
    return 0;
}

int simlsh_index_contains(const simlsh_index *index, uint64_t id)
{
    if (index == NULL)
        return SIMLSH_EINVAL;
    return idmap_find(index, id) != SIZE_MAX ? 1 : 0;
}

int simlsh_index_count(size_t *out, const simlsh_index *index)
{
    if (out == NULL || index == NULL)
        return SIMLSH_EINVAL;
    *out = index->count;
    return 0;
}

int simlsh_index_reserve(simlsh_index *index, size_t n)
{
    if (index == NULL)
        return SIMLSH_EINVAL;
    if (n <= index->count)
        return 0;
    /* n ids need at most max(nslots, n) slots: free slots are reused first. */
    size_t slots = n > index->nslots ? n : index->nslots;
    return ix_ensure(index, n, slots, 1);
}

int simlsh_index_clear(simlsh_index *index)
{
    if (index == NULL)
        return SIMLSH_EINVAL;
    if (index->tab != NULL)
        memset(index->tab, 0xff, index->tcap * index->bands * sizeof *index->tab);
    if (index->idmap != NULL)
        memset(index->idmap, 0xff, index->idcap * sizeof *index->idmap);
    for (size_t i = 0; i < index->novf; i++)
        simlsh__free(&index->params.alloc, index->ovf[i].slots);
    index->novf = 0;
    index->ovf_nfree = 0;
    index->ovf_bytes = 0;
    index->ovf_free = NO_SLOT;
    index->count = 0;
    index->nslots = 0;
    index->free_head = NO_SLOT;
    return 0;
}

int simlsh_index_memory(size_t *total, size_t *band_tables, const simlsh_index *index)
{
    if (total == NULL || index == NULL)
        return SIMLSH_EINVAL;
    size_t tabs = index->tcap * index->bands * sizeof(band_entry) + index->ovf_bytes +
                  index->ovf_cap * sizeof(ovf_list);
    size_t t = sizeof *index + tabs + index->idcap * sizeof(id_entry) +
               index->slot_cap * sizeof(uint64_t);
    if (index->store)
        t += index->slot_cap * index->num_perm * sizeof(uint32_t);
    *total = t;
    if (band_tables != NULL)
        *band_tables = tabs;
    return 0;
}

/* ---- sorting ------------------------------------------------------------------- */

typedef struct {
    uint64_t id;
    uint32_t slot;
    uint32_t eq; /* equal values with the query, when scored */
} cand;

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static void sort_small(cand *v, size_t n)
{
    if (n > 48) {
        qsort(v, n, sizeof *v, cand_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        cand x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].id > x.id) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* LSD radix sort by id for the whole-index passes (cluster, pairs):
 * linear, and passes whose byte is the same for every id are skipped, so
 * small ids cost three or four passes. */
static void radix_sort(cand *v, cand *tmp, size_t n)
{
    if (n <= 256) {
        sort_small(v, n);
        return;
    }
    size_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            hist[d][(v[i].id >> (8 * d)) & 255]++;
    cand *src = v, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        if (hist[d][(src[0].id >> (8 * d)) & 255] == n)
            continue;
        size_t sum = 0;
        for (int k = 0; k < 256; k++) {
            size_t c = hist[d][k];
            hist[d][k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[hist[d][(src[i].id >> (8 * d)) & 255]++] = src[i];
        cand *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Live documents as (id, slot), sorted by id; tmp is scratch of n. */
static void live_sorted(const struct simlsh_index *ix, cand *v, cand *tmp)
{
    size_t n = 0;
    for (size_t p = 0; p < ix->idcap; p++) {
        if (ix->idmap[p].slot != NO_SLOT) {
            v[n].id = ix->idmap[p].id;
            v[n].slot = ix->idmap[p].slot;
            v[n].eq = 0;
            n++;
        }
    }
    radix_sort(v, tmp, n);
}

/* ---- candidate collection ------------------------------------------------------ */

/* A growable candidate list that starts on the stack: most queries find a
 * handful of ids and should not touch the allocator. */
typedef struct {
    cand *v;
    size_t n, cap;
    const simlsh_allocator *alloc;
    cand local[64];
} candbuf;

static void cb_init(candbuf *cb, const simlsh_allocator *alloc)
{
    cb->v = cb->local;
    cb->n = 0;
    cb->cap = sizeof cb->local / sizeof cb->local[0];
    cb->alloc = alloc;
}

static void cb_free(candbuf *cb)
{
    if (cb->v != cb->local)
        simlsh__free(cb->alloc, cb->v);
}

static int cb_grow(candbuf *cb)
{
    size_t ncap = cb->cap * 2, bytes;
    if (!mul_ok(ncap, sizeof *cb->v, &bytes))
        return SIMLSH_ENOMEM;
    cand *nv = simlsh__malloc(cb->alloc, bytes);
    if (nv == NULL)
        return SIMLSH_ENOMEM;
    memcpy(nv, cb->v, cb->n * sizeof *nv);
    cb_free(cb);
    cb->v = nv;
    cb->cap = ncap;
    return 0;
}

static inline int cb_push(candbuf *cb, uint64_t id, uint32_t slot)
{
    if (cb->n == cb->cap) {
        int rc = cb_grow(cb);
        if (rc < 0)
            return rc;
    }
    cb->v[cb->n].id = id;
    cb->v[cb->n].slot = slot;
    cb->v[cb->n].eq = 0;
    cb->n++;
    return 0;
}

/* Phase one of a query: every entry whose fingerprint matches in some
 * band, as (slot, band in .eq), grouped by slot (sorted on .id, which holds
 * the slot until phase two). The candidates' ids and signatures are
 * prefetched for phase two, so a batch overlaps those misses with the next
 * query's probes. */
static int probe_all(const struct simlsh_index *ix, const uint32_t *fps, candbuf *cb)
{
    cb->n = 0;
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
                    int rc = cb_push(cb, e.slot, e.slot);
                    if (rc < 0)
                        return rc;
                    cb->v[cb->n - 1].eq = b;
                } else {
                    const ovf_list *l = list_of(ix, e.slot);
                    for (uint32_t i = 0; i < l->n; i++) {
                        int rc = cb_push(cb, l->slots[i], l->slots[i]);
                        if (rc < 0)
                            return rc;
                        cb->v[cb->n - 1].eq = b;
                    }
                }
            }
            if (++p == ix->tcap)
                p = 0;
        }
    }
    sort_small(cb->v, cb->n);
    size_t bytes = ix->store ? ix->num_perm * sizeof(uint32_t) : 0;
    for (size_t i = 0; i < cb->n; i++) {
        if (i > 0 && cb->v[i].slot == cb->v[i - 1].slot)
            continue;
        PREFETCH(ix->ids + cb->v[i].slot);
        if (bytes == 0)
            continue;
        const char *sp = (const char *)sig_of(ix, cb->v[i].slot);
        for (size_t off = 0; off < bytes; off += 64)
            PREFETCH(sp + off);
    }
    return 0;
}

/* Phase two: each document once, sorted by id; with stored signatures kept
 * only if one of its matching bands has equal rows (a 32-bit fingerprint
 * collision is not a bucket), scored, and filtered by the threshold with
 * verify. */
static void finish(const struct simlsh_index *ix, const uint32_t *values, int verify, candbuf *cb)
{
    size_t m = 0, n = cb->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && cb->v[j].slot == cb->v[i].slot)
            j++;
        cand c = cb->v[i];
        if (values != NULL) {
            int ok = 0;
            for (size_t k = i; k < j && !ok; k++)
                ok = rows_equal(ix, c.slot, cb->v[k].eq, values + (size_t)cb->v[k].eq * ix->rows);
            i = j;
            if (!ok)
                continue;
            c.eq = count_equal(sig_of(ix, c.slot), values, ix->num_perm);
            if (verify && (double)c.eq / (double)ix->num_perm < ix->params.threshold)
                continue;
        } else {
            c.eq = 0;
            i = j;
        }
        c.id = ix->ids[c.slot];
        cb->v[m++] = c;
    }
    cb->n = m;
    sort_small(cb->v, m);
}

/* Members of every bucket of (fps, values), each id once, sorted by id.
 * values: the query's num_perm values, or NULL (no stored signatures:
 * fingerprints alone decide). */
static int collect(const struct simlsh_index *ix, const uint32_t *fps, const uint32_t *values,
                   int verify, candbuf *cb)
{
    int rc = probe_all(ix, fps, cb);
    if (rc == 0)
        finish(ix, values, verify, cb);
    return rc;
}

static inline double cand_score(const struct simlsh_index *ix, const cand *c)
{
    return ix->store ? (double)c->eq / (double)ix->num_perm : -1.0;
}

/* Common checks of the query calls. */
static int check_query(const struct simlsh_index *ix, const struct simlsh_signature *sig)
{
    if (sig == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->fingerprint != ix->sig_fp)
        return SIMLSH_EMISMATCH;
    return 0;
}

static int check_flags(const struct simlsh_index *ix, int flags)
{
    if (flags & ~SIMLSH_QUERY_VERIFY)
        return SIMLSH_EINVAL;
    if ((flags & SIMLSH_QUERY_VERIFY) && !ix->store)
        return SIMLSH_EUNSUPPORTED;
    return 0;
}

static int query_one(const struct simlsh_index *ix, const struct simlsh_signature *sig, int flags,
                     candbuf *cb)
{
    if (sig->empty) {
        cb->n = 0;
        return 0;
    }
    uint32_t fps[SIMLSH__MAX_PERM];
    /* All b probes' lines requested before the first is read: the misses
     * overlap instead of queueing one after another. */
    compute_fps_prefetch(ix, sig->values, fps, 1);
    return collect(ix, fps, ix->store ? sig->values : NULL, flags & SIMLSH_QUERY_VERIFY, cb);
}

int simlsh_index_query(simlsh_results *res, const simlsh_index *index, const simlsh_signature *sig,
                       int flags)
{
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    rc = check_query(index, sig);
    if (rc < 0)
        return rc;
    candbuf cb;
    cb_init(&cb, &index->params.alloc);
    rc = query_one(index, sig, flags, &cb);
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
    cb_free(&cb);
    return rc;
}

int simlsh_index_query_ids(uint64_t *ids, size_t cap, size_t *count, const simlsh_index *index,
                           const simlsh_signature *sig, int flags)
{
    if (count == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    rc = check_query(index, sig);
    if (rc < 0)
        return rc;
    candbuf cb;
    cb_init(&cb, &index->params.alloc);
    rc = query_one(index, sig, flags, &cb);
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
    cb_free(&cb);
    return rc;
}

/* ---- batch queries ---------------------------------------------------------------- */

#define BATCH_CHUNK 4

typedef struct {
    uint64_t *ids;
    double *scores;
    size_t n, cap;
} rowbuf;

static int rb_append(rowbuf *rb, const simlsh_allocator *al, const struct simlsh_index *ix,
                     const candbuf *cb)
{
    size_t need = rb->n + cb->n;
    if (need > rb->cap) {
        size_t ncap = rb->cap ? rb->cap : 64;
        while (ncap < need)
            ncap *= 2;
        size_t bytes;
        if (!mul_ok(ncap, sizeof(uint64_t), &bytes))
            return SIMLSH_ENOMEM;
        uint64_t *ni = simlsh__realloc(al, rb->ids, rb->n * sizeof *ni, bytes);
        if (ni == NULL)
            return SIMLSH_ENOMEM;
        rb->ids = ni;
        double *ns = simlsh__realloc(al, rb->scores, rb->n * sizeof *ns, ncap * sizeof *ns);
        if (ns == NULL)
            return SIMLSH_ENOMEM; /* ids grew already; cap stays, harmless */
        rb->scores = ns;
        rb->cap = ncap;
    }
    for (size_t i = 0; i < cb->n; i++) {
        rb->ids[rb->n + i] = cb->v[i].id;
        rb->scores[rb->n + i] = cand_score(ix, &cb->v[i]);
    }
    rb->n = need;
    return 0;
}

static void chunk_keys(const struct simlsh_index *ix, const simlsh_signature *const *sigs,
                       size_t first, size_t n, uint32_t *fps)
{
    for (size_t q = first; q < first + n; q++) {
        uint32_t *f = fps + (q - first) * ix->bands;
        if (sigs[q]->empty)
            continue;
        compute_fps_prefetch(ix, sigs[q]->values, f, 1);
    }
}

int simlsh_index_query_batch(simlsh_results *res, const simlsh_index *index,
                             const simlsh_signature *const *sigs, size_t n, int flags)
{
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
    const simlsh_allocator *al = &index->params.alloc;
    size_t fbytes;
    size_t *offs = NULL;
    uint32_t *fps = NULL;
    rowbuf rb = {NULL, NULL, 0, 0};
    candbuf cbs[2];
    cb_init(&cbs[0], al);
    cb_init(&cbs[1], al);
    if (!mul_ok((size_t)2 * BATCH_CHUNK * index->bands, sizeof *fps, &fbytes) ||
        (fps = simlsh__malloc(al, fbytes)) == NULL ||
        (offs = simlsh__calloc(al, n + 1, sizeof *offs)) == NULL) {
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
    int verify = flags & SIMLSH_QUERY_VERIFY;
    if (n > 0)
        chunk_keys(index, sigs, 0, n < BATCH_CHUNK ? n : BATCH_CHUNK, cur);
    while (first < n) {
        size_t len = n - first < BATCH_CHUNK ? n - first : BATCH_CHUNK;
        size_t nfirst = first + len;
        /* Stage zero: the values of chunk c+2, read by chunk_keys next time
         * (callers' signatures are rarely still in cache). */
        size_t ahead = nfirst + BATCH_CHUNK;
        for (size_t q = ahead; q < n && q < ahead + BATCH_CHUNK; q++) {
            const char *vp = (const char *)sigs[q]->values;
            for (size_t off = 0; off < index->num_perm * sizeof(uint32_t); off += 64)
                PREFETCH(vp + off);
        }
        if (nfirst < n)
            chunk_keys(index, sigs, nfirst, n - nfirst < BATCH_CHUNK ? n - nfirst : BATCH_CHUNK,
                       next);
        for (size_t q = first; q < nfirst; q++) {
            candbuf *now = &cbs[q & 1], *before = &cbs[(q & 1) ^ 1];
            now->n = 0;
            if (!sigs[q]->empty) {
                rc = probe_all(index, cur + (q - first) * index->bands, now);
                if (rc < 0)
                    goto out;
            }
            if (prev != SIZE_MAX) {
                finish(index, pvals, verify, before);
                offs[prev] = rb.n;
                rc = rb_append(&rb, al, index, before);
                if (rc < 0)
                    goto out;
            }
            prev = q;
            pvals = index->store ? sigs[q]->values : NULL;
        }
        uint32_t *t = cur;
        cur = next;
        next = t;
        first = nfirst;
    }
    if (prev != SIZE_MAX) {
        candbuf *last = &cbs[prev & 1];
        finish(index, pvals, verify, last);
        offs[prev] = rb.n;
        rc = rb_append(&rb, al, index, last);
        if (rc < 0)
            goto out;
    }
    offs[n] = rb.n;

    rc = simlsh__results_reserve(res, rb.n, n);
    if (rc < 0)
        goto out;
    for (size_t q = 0; q < n; q++) {
        res->offsets[q] = offs[q];
        for (size_t i = offs[q]; i < offs[q + 1]; i++) {
            res->a[i] = rb.ids[i];
            res->b[i] = q;
            res->score[i] = rb.scores[i];
        }
    }
    res->count = rb.n;
    res->nq = n;
    res->truncated = 0;
out:
    cb_free(&cbs[0]);
    cb_free(&cbs[1]);
    simlsh__free(al, fps);
    simlsh__free(al, offs);
    simlsh__free(al, rb.ids);
    simlsh__free(al, rb.scores);
    return rc;
}

/* ---- pairs ------------------------------------------------------------------------- */

typedef struct {
    uint64_t *a, *b;
    double *s;
    size_t n, cap;
} pairbuf;

static int pb_push(pairbuf *pb, const simlsh_allocator *al, uint64_t a, uint64_t b, double s)
{
    if (pb->n == pb->cap) {
        size_t ncap = pb->cap ? pb->cap * 2 : 256, bytes;
        if (!mul_ok(ncap, sizeof(uint64_t), &bytes))
            return SIMLSH_ENOMEM;
        uint64_t *na = simlsh__realloc(al, pb->a, pb->n * sizeof *na, bytes);
        if (na == NULL)
            return SIMLSH_ENOMEM;
        pb->a = na;
        uint64_t *nb = simlsh__realloc(al, pb->b, pb->n * sizeof *nb, bytes);
        if (nb == NULL)
            return SIMLSH_ENOMEM;
        pb->b = nb;
        double *ns = simlsh__realloc(al, pb->s, pb->n * sizeof *ns, bytes);
        if (ns == NULL)
            return SIMLSH_ENOMEM;
        pb->s = ns;
        pb->cap = ncap;
    }
    pb->a[pb->n] = a;
    pb->b[pb->n] = b;
    pb->s[pb->n] = s;
    pb->n++;
    return 0;
}

/* Every document's band fingerprints, read off the tables (the only place
 * they live when signatures are not stored). */
static void gather_fps(const struct simlsh_index *ix, uint32_t *fps)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            if (!is_ref(t[p].slot)) {
                fps[(size_t)t[p].slot * ix->bands + b] = t[p].fp;
                continue;
            }
            const ovf_list *l = list_of(ix, t[p].slot);
            for (uint32_t i = 0; i < l->n; i++)
                fps[(size_t)l->slots[i] * ix->bands + b] = t[p].fp;
        }
    }
}

int simlsh_index_pairs(simlsh_results *res, const simlsh_index *index, int flags,
                       size_t max_pairs)
{
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &index->params.alloc;
    const struct simlsh_index *ix = index;
    cand *docs = NULL, *tmp = NULL;
    uint32_t *fps = NULL;
    pairbuf pb = {NULL, NULL, NULL, 0, 0};
    candbuf cb;
    cb_init(&cb, al);
    int truncated = 0;
    size_t fbytes;
    if ((docs = simlsh__calloc(al, ix->count, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, ix->count, sizeof *tmp)) == NULL ||
        !mul_ok(ix->nslots, (size_t)ix->bands * sizeof *fps, &fbytes) ||
        (fps = simlsh__malloc(al, fbytes)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    live_sorted(ix, docs, tmp);
    simlsh__free(al, tmp);
    tmp = NULL;
    gather_fps(ix, fps);

    /* Documents in id order, each with its larger-id candidates in id
     * order: the pairs come out sorted by (a, b), so a limit keeps the
     * same prefix whatever the table layout (a loaded index agrees). */
    for (size_t i = 0; i < ix->count && !truncated; i++) {
        const uint32_t *vals = ix->store ? sig_of(ix, docs[i].slot) : NULL;
        rc = collect(ix, fps + (size_t)docs[i].slot * ix->bands, vals,
                     flags & SIMLSH_QUERY_VERIFY, &cb);
        if (rc < 0)
            goto out;
        for (size_t j = 0; j < cb.n; j++) {
            if (cb.v[j].id <= docs[i].id)
                continue;
            if (max_pairs != 0 && pb.n == max_pairs) {
                truncated = 1;
                break;
            }
            rc = pb_push(&pb, al, docs[i].id, cb.v[j].id, cand_score(ix, &cb.v[j]));
            if (rc < 0)
                goto out;
        }
    }
    rc = simlsh__results_reserve(res, pb.n, 0);
    if (rc < 0)
        goto out;
    if (pb.n > 0) {
        memcpy(res->a, pb.a, pb.n * sizeof *pb.a);
        memcpy(res->b, pb.b, pb.n * sizeof *pb.b);
        memcpy(res->score, pb.s, pb.n * sizeof *pb.s);
    }
    res->count = pb.n;
    res->nq = 0;
    res->truncated = truncated;
out:
    cb_free(&cb);
    simlsh__free(al, docs);
    simlsh__free(al, tmp);
    simlsh__free(al, fps);
    simlsh__free(al, pb.a);
    simlsh__free(al, pb.b);
    simlsh__free(al, pb.s);
    return rc;
}

/* ---- clustering --------------------------------------------------------------------- */

static inline uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]]; /* path halving */
        x = parent[x];
    }
    return x;
}

static inline void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

/* Same bucket: equal fingerprint and, with stored signatures, equal rows. */
static inline int same_bucket(const struct simlsh_index *ix, uint32_t band, band_entry x,
                              band_entry y)
{
    if (x.fp != y.fp)
        return 0;
    /* A list is a whole bucket: no inline entry shares its bucket. */
    if (is_ref(x.slot) || is_ref(y.slot))
        return x.slot == y.slot;
    if (!ix->store || x.slot == y.slot)
        return 1;
    return rows_equal(ix, x.slot, band, sig_of(ix, y.slot) + (size_t)band * ix->rows);
}

/* Position of the first member of p's bucket: runs are gap-free from every
 * entry's home to the entry, so probing from home finds it before p.
 * *second (may be NULL) tells whether p is the bucket's second member. */
static size_t first_member(const struct simlsh_index *ix, uint32_t band, const band_entry *t,
                           size_t p, int *second)
{
    size_t k = fastrange(t[p].fp, ix->tcap), q = p;
    int seen = 0;
    while (k != p) {
        if (same_bucket(ix, band, t[k], t[p])) {
            if (seen++ == 0) {
                q = k;
                if (second == NULL)
                    break;
            } else {
                break;
            }
        }
        if (++k == ix->tcap)
            k = 0;
    }
    if (second != NULL)
        *second = seen == 1;
    return q;
}

/* The greedy leader split of one bucket's members. */
static int greedy_split(const struct simlsh_index *ix, uint32_t *parent, candbuf *members,
                        candbuf *leaders)
{
    if (members->n < 2)
        return 0;
    /* Members in id order, so the split does not depend on the layout. */
    sort_small(members->v, members->n);
    leaders->n = 0;
    double thr = ix->params.threshold;
    for (size_t i = 0; i < members->n; i++) {
        const uint32_t *mv = sig_of(ix, members->v[i].slot);
        size_t j = 0;
        for (; j < leaders->n; j++)
            if (estimate(ix, mv, sig_of(ix, leaders->v[j].slot)) >= thr)
                break;
        if (j < leaders->n) {
            uf_union(parent, members->v[i].slot, leaders->v[j].slot);
        } else {
            int rc = cb_push(leaders, members->v[i].id, members->v[i].slot);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* Split the bucket of the entry at head: a list, or the inline entries
 * from its first member (head) to the end of the run. */
static int split_bucket(const struct simlsh_index *ix, uint32_t band, const band_entry *t,
                        size_t head, uint32_t *parent, candbuf *members, candbuf *leaders)
{
    members->n = 0;
    if (is_ref(t[head].slot)) {
        const ovf_list *l = list_of(ix, t[head].slot);
        for (uint32_t i = 0; i < l->n; i++) {
            int rc = cb_push(members, ix->ids[l->slots[i]], l->slots[i]);
            if (rc < 0)
                return rc;
        }
        return greedy_split(ix, parent, members, leaders);
    }
    size_t k = head;
    do {
        if (same_bucket(ix, band, t[k], t[head])) {
            int rc = cb_push(members, ix->ids[t[k].slot], t[k].slot);
            if (rc < 0)
                return rc;
        }
        if (++k == ix->tcap)
            k = 0;
    } while (t[k].slot != NO_SLOT);
    return greedy_split(ix, parent, members, leaders);
}

int simlsh_index_cluster(simlsh_results *res, const simlsh_index *index, int flags)
{
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    int rc = check_flags(index, flags);
    if (rc < 0)
        return rc;
    const struct simlsh_index *ix = index;
    const simlsh_allocator *al = &ix->params.alloc;
    cand *docs = NULL, *tmp = NULL;
    uint32_t *parent = NULL, *minslot = NULL;
    candbuf members, leaders;
    cb_init(&members, al);
    cb_init(&leaders, al);
    if ((docs = simlsh__calloc(al, ix->count, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, ix->count, sizeof *tmp)) == NULL ||
        (parent = simlsh__calloc(al, ix->nslots, sizeof *parent)) == NULL ||
        (minslot = simlsh__calloc(al, ix->nslots, sizeof *minslot)) == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    for (size_t s = 0; s < ix->nslots; s++) {
        parent[s] = (uint32_t)s;
        minslot[s] = NO_SLOT;
    }

    if (!(flags & SIMLSH_QUERY_VERIFY)) {
        /* Each entry links to its bucket's first member: m - 1 links per
         * bucket of m, and a sequential sweep of every table. */
        for (uint32_t b = 0; b < ix->bands; b++) {
            const band_entry *t = band_tab(ix, b);
            for (size_t p = 0; p < ix->tcap; p++) {
                if (t[p].slot == NO_SLOT)
                    continue;
                if (is_ref(t[p].slot)) {
                    const ovf_list *l = list_of(ix, t[p].slot);
                    for (uint32_t i = 1; i < l->n; i++)
                        uf_union(parent, l->slots[i], l->slots[0]);
                    continue;
                }
                size_t q = first_member(ix, b, t, p, NULL);
                if (q != p)
                    uf_union(parent, t[p].slot, t[q].slot);
            }
        }
    } else {
        for (uint32_t b = 0; b < ix->bands; b++) {
            const band_entry *t = band_tab(ix, b);
            /* Only buckets of two or more members need a split: each is
             * handled once, when the sweep meets its second member. */
            for (size_t p = 0; p < ix->tcap; p++) {
                int second;
                if (t[p].slot == NO_SLOT)
                    continue;
                size_t q = p;
                if (!is_ref(t[p].slot)) {
                    q = first_member(ix, b, t, p, &second);
                    if (q == p || !second)
                        continue;
                }
                rc = split_bucket(ix, b, t, q, parent, &members, &leaders);
                if (rc < 0)
                    goto out;
            }
        }
    }

    live_sorted(ix, docs, tmp);
    rc = simlsh__results_reserve(res, ix->count, 0);
    if (rc < 0)
        goto out;
    /* Ids ascend, so the first member seen of each cluster has its
     * smallest id: that is the label. */
    for (size_t i = 0; i < ix->count; i++) {
        uint32_t r = uf_find(parent, docs[i].slot);
        if (minslot[r] == NO_SLOT)
            minslot[r] = docs[i].slot;
        res->a[i] = docs[i].id;
        res->b[i] = ix->ids[minslot[r]];
        res->score[i] = -1.0;
    }
    res->count = ix->count;
    res->nq = 0;
    res->truncated = 0;
out:
    cb_free(&members);
    cb_free(&leaders);
    simlsh__free(al, docs);
    simlsh__free(al, tmp);
    simlsh__free(al, parent);
    simlsh__free(al, minslot);
    return rc;
}

/* ---- persistence ------------------------------------------------------------------ */

/* Payload (docs/format-index.md): header, then one record per document:
 * u64 id, u32 fingerprint per band, u32 value per row of num_perm if stored. */
#define PAYLOAD_HEAD 24
#define FLAG_STORED 1u

static size_t record_size(const struct simlsh_index *ix)
{
    return 8 + 4 * (size_t)ix->bands + (ix->store ? 4 * (size_t)ix->num_perm : 0);
}

static int saved_size(const struct simlsh_index *ix, size_t *out)
{
    size_t recs;
    if (!mul_ok(ix->count, record_size(ix), &recs) ||
        recs > SIZE_MAX - SIMLSH__FRAME_OVERHEAD - PAYLOAD_HEAD)
        return SIMLSH_EINVAL;
    *out = SIMLSH__FRAME_OVERHEAD + PAYLOAD_HEAD + recs;
    return 0;
}

/* Live slot? Free slots hold a link, which may equal a live id: the map
 * decides. Without stored signatures nothing is removed: all slots live. */
static int slot_live(const struct simlsh_index *ix, uint32_t slot)
{
    if (!ix->store)
        return 1;
    size_t pos = idmap_find(ix, ix->ids[slot]);
    return pos != SIZE_MAX && ix->idmap[pos].slot == slot;
}

int simlsh_index_save(void *buf, size_t cap, size_t *size, const simlsh_index *index)
{
    if (size == NULL || index == NULL)
        return SIMLSH_EINVAL;
    const struct simlsh_index *ix = index;
    size_t total;
    int rc = saved_size(ix, &total);
    if (rc < 0)
        return rc;
    *size = total;
    if (buf == NULL)
        return 0;
    if (cap < total)
        return SIMLSH_EBUFSIZE;

    uint8_t *out = buf;
    size_t plen = total - SIMLSH__FRAME_OVERHEAD, rec = record_size(ix);
    simlsh__frame_write_head(out, SIMLSH__MAGIC_INDEX, plen, &ix->params);
    uint8_t *pl = out + SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    simlsh__wr32(pl, ix->bands);
    simlsh__wr32(pl + 4, ix->rows);
    simlsh__wr32(pl + 8, ix->store ? FLAG_STORED : 0);
    simlsh__wr32(pl + 12, (uint32_t)rec);
    simlsh__wr64(pl + 16, ix->count);
    uint8_t *r = pl + PAYLOAD_HEAD;
    uint32_t fps[SIMLSH__MAX_PERM];
    for (size_t s = 0; s < ix->nslots; s++) {
        if (!slot_live(ix, (uint32_t)s))
            continue;
        simlsh__wr64(r, ix->ids[s]);
        if (ix->store) {
            const uint32_t *v = sig_of(ix, (uint32_t)s);
            compute_fps(ix, v, fps);
            for (uint32_t b = 0; b < ix->bands; b++)
                simlsh__wr32(r + 8 + 4 * (size_t)b, fps[b]);
            uint8_t *vp = r + 8 + 4 * (size_t)ix->bands;
            for (uint32_t i = 0; i < ix->num_perm; i++)
                simlsh__wr32(vp + 4 * (size_t)i, v[i]);
        }
        r += rec;
    }
    if (!ix->store) {
        /* Slots are dense (no removal without signatures): record = slot. */
        uint8_t *base = pl + PAYLOAD_HEAD + 8;
        for (uint32_t b = 0; b < ix->bands; b++) {
            const band_entry *t = band_tab(ix, b);
            for (size_t p = 0; p < ix->tcap; p++) {
                if (t[p].slot == NO_SLOT)
                    continue;
                const uint32_t *m = &t[p].slot;
                uint32_t nm = 1;
                if (is_ref(t[p].slot)) {
                    m = list_of(ix, t[p].slot)->slots;
                    nm = list_of(ix, t[p].slot)->n;
                }
                for (uint32_t i = 0; i < nm; i++)
                    simlsh__wr32(base + (size_t)m[i] * rec + 4 * (size_t)b, t[p].fp);
            }
        }
    }
    simlsh__frame_write_tail(out, total);
    return 0;
}

int simlsh_index_load(simlsh_index **out, const void *buf, size_t len,
                      const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (buf == NULL || !simlsh__alloc_valid(alloc))
        return SIMLSH_EINVAL;
    struct simlsh_params p;
    const uint8_t *pl;
    uint64_t plen;
    int rc = simlsh__frame_read(buf, len, SIMLSH__MAGIC_INDEX, &p, alloc, &pl, &plen);
    if (rc < 0)
        return rc;
    if (plen < PAYLOAD_HEAD)
        return SIMLSH_ECORRUPT;
    uint32_t bands = simlsh__rd32(pl), rows = simlsh__rd32(pl + 4);
    uint32_t flags = simlsh__rd32(pl + 8), rec = simlsh__rd32(pl + 12);
    uint64_t count = simlsh__rd64(pl + 16);
    /* Everything checked against the contract and the real length before
     * anything sized by the input is allocated. */
    if (bands == 0 || rows == 0 || (uint64_t)bands * rows > (uint64_t)p.num_perm ||
        bands != (uint32_t)p.bands || rows != (uint32_t)p.rows || (flags & ~FLAG_STORED) != 0 ||
        (flags & FLAG_STORED) != (uint32_t)(p.store_signatures != 0))
        return SIMLSH_ECORRUPT;
    int store = (flags & FLAG_STORED) != 0;
    uint64_t want_rec = 8 + 4 * (uint64_t)bands + (store ? 4 * (uint64_t)p.num_perm : 0);
    if (rec != want_rec || count > MAX_DOCS || count > (plen - PAYLOAD_HEAD) / rec ||
        count * rec != plen - PAYLOAD_HEAD)
        return SIMLSH_ECORRUPT;

    struct simlsh_index *ix;
    rc = ix_create(&ix, &p, bands, rows);
    if (rc < 0)
        return rc;
    rc = ix_ensure(ix, (size_t)count, (size_t)count, 1);
    uint32_t *vals = NULL;
    if (rc == 0 && store) {
        vals = simlsh__malloc(&ix->params.alloc, ix->num_perm * sizeof *vals);
        if (vals == NULL)
            rc = SIMLSH_ENOMEM;
    }
    uint32_t fps[SIMLSH__MAX_PERM], check[SIMLSH__MAX_PERM];
    const uint8_t *r = pl + PAYLOAD_HEAD;
    /* Rebuilt by inserting: the tables' layout is never read from the
     * input, so no hostile layout can make a probe loop forever. */
    for (uint64_t d = 0; rc == 0 && d < count; d++, r += rec) {
        uint64_t id = simlsh__rd64(r);
        for (uint32_t b = 0; b < bands; b++)
            fps[b] = simlsh__rd32(r + 8 + 4 * (size_t)b);
        if (store) {
            const uint8_t *vp = r + 8 + 4 * (size_t)bands;
            for (uint32_t i = 0; i < ix->num_perm; i++)
                vals[i] = simlsh__rd32(vp + 4 * (size_t)i);
            compute_fps(ix, vals, check);
            if (memcmp(check, fps, bands * sizeof *fps) != 0) {
                rc = SIMLSH_ECORRUPT;
                break;
            }
        }
        if (idmap_find(ix, id) != SIZE_MAX) {
            rc = SIMLSH_ECORRUPT;
            break;
        }
        rc = ix_add(ix, id, fps, vals, check); /* check: done, its room reused */
    }
    simlsh__free(&ix->params.alloc, vals);
    if (rc < 0) {
        simlsh_index_free(ix);
        return rc;
    }
    *out = ix;
    return 0;
}

/* ---- files ------------------------------------------------------------------------- */

int simlsh_index_save_file(const simlsh_index *index, const char *path)
{
    if (index == NULL || path == NULL || path[0] == '\0')
        return SIMLSH_EINVAL;
    const simlsh_allocator *al = &index->params.alloc;
    size_t size;
    int rc = simlsh_index_save(NULL, 0, &size, index);
    if (rc < 0)
        return rc;
    uint8_t *buf = simlsh__malloc(al, size);
    if (buf == NULL)
        return SIMLSH_ENOMEM;
    rc = simlsh_index_save(buf, size, &size, index);
    if (rc == 0)
        rc = simlsh__file_write_atomic(path, buf, size, al);
    simlsh__free(al, buf);
    return rc;
}

int simlsh_index_load_file(simlsh_index **out, const char *path, const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (path == NULL || !simlsh__alloc_valid(alloc))
        return SIMLSH_EINVAL;
    simlsh_allocator al;
    simlsh__alloc_fill(&al, alloc);
    uint8_t *buf;
    size_t n;
    int rc = simlsh__file_read_all(path, &al, &buf, &n);
    if (rc < 0)
        return rc;
    rc = n > 0 ? simlsh_index_load(out, buf, n, alloc) : SIMLSH_ECORRUPT;
    simlsh__free(&al, buf);
    return rc;
}
