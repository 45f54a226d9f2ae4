/*
 * The LSH index: b band tables mapping band keys to documents. This is the
 * module's shared header, included only by the files of index/ (the dedup
 * engine sees an index through mates.h).
 *
 * Layout (docs/format-index.md describes the bytes, this the memory):
 *  - one block of b tables, each `tcap` 8-byte entries {fingerprint, slot}:
 *    open addressing with linear probing, home = fastrange(fp, tcap), so
 *    any capacity works and growth can be 1.5x; backward-shift deletion
 *    keeps every run gap-free, which the "first member of a bucket"
 *    search of clustering relies on. fp is the high half of the band key.
 *  - an id -> slot map (../idmap.h: linear probing on fmix64(id)), slot -> id array,
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
 *
 * Files: this header (layout, inline probing helpers, candidates),
 * table.c (capacities, growth, band keys), insert.c (insertion, removal),
 * index.c (lifetime, public mutation and accessors), query.c (single and
 * batch queries), pairs.c (all pairs), cluster.c (clustering), persist.c
 * (save, load), batch.c (batch insertion, a band per unit of work on
 * ../pool.h's threads), merge.c (copy and merge), mates.c (what the dedup
 * engine may know of an index, mates.h).
 */
#ifndef SIMLSH_INDEX_INTERNAL_H
#define SIMLSH_INDEX_INTERNAL_H

#include <stdlib.h>

#include "bandkey.h"
#include "checked.h"
#include "alloc.h"
#include "cpu.h"
#include "frame.h"
#include "idmap.h"
#include "le.h"
#include "murmur3.h"
#include "params.h"
#include "signature.h"
#include "results.h"
#include "vec.h"

#define NO_SLOT SIMLSH__NO_SLOT
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

typedef simlsh__id_entry id_entry; /* ../idmap.h */

typedef struct {
    uint32_t *slots; /* NULL: a free list record; n is then the next free one */
    uint32_t n, cap;
} ovf_list;

struct simlsh_index {
    uint32_t tag;                /* SIMLSH__TAG_INDEX (handle.h), before the params' own */
    struct simlsh_params params; /* bands, rows resolved */
    uint64_t sig_fp, index_fp;
    uint32_t bands, rows, num_perm;
    int store;
    const struct simlsh__kernels *kern; /* the params' ISA row (the pair sweep's sketch pass) */
    band_entry *tab;                    /* bands * tcap entries; band i at tab + i * tcap */
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
    uint64_t gen;   /* changes with every insertion, removal or clear (dedup engine's check) */
    uint8_t *udata; /* caller bytes saved with the index (persist.c), NULL: none */
    size_t udata_len;
};

/* table.c */
void simlsh__ix_compute_fps(const struct simlsh_index *ix, const uint32_t *values, uint32_t *fps);
int simlsh__ix_ensure(struct simlsh_index *ix, size_t docs, size_t slots, int exact,
                      uint32_t nthreads);
/* insert.c */
int simlsh__ix_add(struct simlsh_index *ix, uint64_t id, const uint32_t *fps,
                   const uint32_t *values, uint32_t *plan);
void simlsh__ix_del(struct simlsh_index *ix, size_t pos);
/* index.c */
int simlsh__ix_create(struct simlsh_index **out, const struct simlsh_params *p, uint32_t b,
                      uint32_t r);

/* ---- small helpers ---------------------------------------------------------- */

/* The module's names for ../idmap.h's probing steps. */
static inline size_t fastrange(uint32_t h, size_t cap)
{
    return simlsh__fastrange(h, cap);
}

static inline size_t next_pos(size_t p, size_t cap)
{
    return simlsh__probe_next(p, cap);
}

static inline uint32_t band_fp(uint64_t key)
{
    return (uint32_t)(key >> 32);
}

/* Load at most 0.8 and at least one empty entry, so probes end. */
static inline int fits(size_t n, size_t cap)
{
    return n < cap && n / 4 <= cap - n;
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

/* simlsh__ix_compute_fps(), then every band's home line (and the next,
 * where a query's run usually continues) requested in one burst: the b misses
 * overlap instead of queueing. Keys first, so that prefetches stalling on
 * full miss buffers never hold up the key arithmetic. Prefetches never
 * fault, even past the block's end. */
static inline void compute_fps_prefetch(const struct simlsh_index *ix, const uint32_t *values,
                                        uint32_t *fps, int two_lines)
{
    simlsh__ix_compute_fps(ix, values, fps);
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

static inline int is_ref(uint32_t slot)
{
    return slot != NO_SLOT && (slot & REF_BIT) != 0;
}

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

/* ---- band tables ------------------------------------------------------------ */

static inline void tab_put(band_entry *t, size_t cap, uint32_t fp, uint32_t slot)
{
    size_t p = fastrange(fp, cap);
    while (t[p].slot != NO_SLOT)
        p = next_pos(p, cap);
    t[p].fp = fp;
    t[p].slot = slot;
}

/* Home of entry e of a band table of cap entries, or SIZE_MAX if e is
 * empty: what simlsh__probe_del() needs to know of it. */
static inline size_t band_home(const void *e, size_t cap)
{
    const band_entry *x = e;
    return x->slot == NO_SLOT ? SIZE_MAX : fastrange(x->fp, cap);
}

static inline void tab_del_at(band_entry *t, size_t cap, size_t i)
{
    simlsh__probe_del(t, sizeof *t, cap, i, band_home);
}

/* ---- id map --------------------------------------------------------------------- */

/* Position of id in the index's id map (../idmap.h), or SIZE_MAX. */
static inline size_t idmap_find(const struct simlsh_index *ix, uint64_t id)
{
    return simlsh__idmap_find(ix->idmap, ix->idcap, id);
}

/* ---- sorting ------------------------------------------------------------------- */

typedef struct {
    uint64_t id;
    uint32_t slot;
    uint32_t eq; /* equal values with the query, when scored */
} cand;

static inline int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static inline void sort_small(cand *v, size_t n)
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

/* index.c: the live documents as (id, slot), sorted by id, into v (count
 * entries); tmp is scratch of as many. For the whole-index passes
 * (pairs.c, cluster.c). */
void simlsh__ix_live_sorted(const struct simlsh_index *ix, cand *v, cand *tmp);

/* ---- candidate collection ------------------------------------------------------ */

/* Candidate vectors start on the stack: most queries find a handful of
 * ids and should not touch the allocator. */
typedef SIMLSH__VEC_LOCAL(cand, 64) candbuf;

static inline int cb_push(candbuf *cb, uint64_t id, uint32_t slot)
{
    if (cb->n == cb->cap) {
        int rc = simlsh__lvec_reserve(cb, cb->n + 1);
        if (rc < 0)
            return rc;
    }
    cb->v[cb->n].id = id;
    cb->v[cb->n].slot = slot;
    cb->v[cb->n].eq = 0;
    cb->n++;
    return 0;
}

/* What phase one of a query finds: a document (by slot) and a band in
 * which its fingerprint equals the query's. */
typedef struct {
    uint32_t slot, band;
} hit;

typedef SIMLSH__VEC_LOCAL(hit, 64) hitbuf;

/* query.c: the two phases of a query. */
int simlsh__ix_probe_all(const struct simlsh_index *ix, const uint32_t *fps, hitbuf *hits);
int simlsh__ix_confirm_and_score(const struct simlsh_index *ix, const hitbuf *hits,
                                 const uint32_t *values, double thr, candbuf *out);

/* Members of every bucket of (fps, values), each id once, sorted by id,
 * into out; hits is scratch. values: the query's num_perm values, or NULL
 * (no stored signatures: fingerprints alone decide). thr > 0: keep only
 * estimates >= thr (verification); 0: keep all. */
static inline int query_buckets(const struct simlsh_index *ix, const uint32_t *fps,
                                const uint32_t *values, double thr, hitbuf *hits, candbuf *out)
{
    int rc = simlsh__ix_probe_all(ix, fps, hits);
    if (rc == 0)
        rc = simlsh__ix_confirm_and_score(ix, hits, values, thr, out);
    return rc;
}

static inline double cand_score(const struct simlsh_index *ix, const cand *c)
{
    return ix->store ? (double)c->eq / (double)ix->num_perm : -1.0;
}

/* The verification threshold of a call: thr from the caller (<= 0 or NaN:
 * the params' one), or 0 without SIMLSH_QUERY_VERIFY. EINVAL above 1. */
static inline int call_threshold(const struct simlsh_index *ix, int flags, double thr, double *out)
{
    if (thr > 1)
        return SIMLSH_EINVAL;
    if (!(thr > 0))
        thr = ix->params.threshold;
    *out = (flags & SIMLSH_QUERY_VERIFY) ? thr : 0.0;
    return 0;
}

static inline int check_flags(const struct simlsh_index *ix, int flags)
{
    if (flags & ~SIMLSH_QUERY_VERIFY)
        return SIMLSH_EINVAL;
    if ((flags & SIMLSH_QUERY_VERIFY) && !ix->store)
        return SIMLSH_EUNSUPPORTED;
    return 0;
}

/* The flags and threshold of a call over a whole index (pairs, clusters):
 * check_flags(), then call_threshold() into *out. */
static inline int whole_index_args(const struct simlsh_index *ix, int flags, double thr,
                                   double *out)
{
    int rc = check_flags(ix, flags);
    return rc < 0 ? rc : call_threshold(ix, flags, thr, out);
}

#endif
