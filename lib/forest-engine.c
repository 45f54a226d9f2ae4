/*
 * The prefix-tree engine shared by the LSH Forest (forest.c) and the LSH
 * Ensemble (ensemble.c); its interface is forest-engine.h, the saved form of its
 * store forest-persist.c.
 *
 *
 * Layout (docs/format-forest.md has the bytes):
 *  - a store: slot -> id, num_perm densified values and an optional size;
 *    an id -> slot map (idmap.h, the index's too); removed slots stay
 *    dead (their entries still sit in the trees) until a compaction frees
 *    them for reuse.
 *  - a tree set: l prefix trees, each an array of 8-byte entries {first
 *    value of the tree's key, slot} cut into sorted runs; for the
 *    ensemble at depth 2, also l one-value trees on the second value of
 *    each prefix tree's key (forest-engine.h), the same way. A tree is not a
 *    linked structure: the documents sharing a prefix of length d with a
 *    query are a contiguous range of every sorted run, and the ranges for
 *    d - 1 contain those for d, so "descending the tree" is widening ranges.
 *
 * Runs (the logarithmic method): an insert places its entry in a small
 * sorted buffer (insertion sort, at most RUN_MIN entries); a full buffer
 * becomes a run, and the last two runs merge while the earlier one is less
 * than RUN_RATIO times as large, so run sizes shrink at least RUN_RATIO-fold
 * from one to the next: O(log n) runs and O(log n) amortised moves per
 * insert, with no sorting left for the
 * queries, which therefore stay const and may run concurrently. All trees
 * of a set cut their arrays at the same places (they hold the same slots,
 * merged in the same steps), so the run boundaries are shared.
 *
 * Removal marks the slot dead; queries skip dead entries. When dead
 * entries outnumber live ones, the set is compacted in place (no memory
 * needed, so removal cannot fail) and merged into one run: amortised
 * O(l log n) per removal.
 */
#include <stdlib.h>

#include "checked.h"
#include "forest-engine.h"
#include "results.h"

/* Buffer size: the insertion sort moves up to RUN_MIN entries per tree,
 * a query binary-searches the buffer as one more run. */
#define RUN_MIN 32
/* A new run merges into the one before while that is less than RUN_RATIO
 * times as large. 4 rather than 2: half as many runs for a query to
 * binary-search, for about 1.5 times the merge moves per insert. */
#define RUN_RATIO 4
#define MIN_SLOTS 16

/* ---- store -------------------------------------------------------------------- */

void simlsh__pf_store_init(simlsh__pf_store *s, const simlsh_allocator *alloc, uint32_t num_perm,
                           int has_aux)
{
    memset(s, 0, sizeof *s);
    s->alloc = *alloc;
    s->num_perm = num_perm;
    s->has_aux = has_aux;
    s->free_head = SIMLSH__PF_NO_SLOT;
}

void simlsh__pf_store_free(simlsh__pf_store *s)
{
    simlsh__free_sized(&s->alloc, s->vals, s->slot_cap * s->num_perm * sizeof *s->vals);
    simlsh__free_sized(&s->alloc, s->ids, s->slot_cap * sizeof *s->ids);
    simlsh__free_sized(&s->alloc, s->aux, s->slot_cap * sizeof *s->aux);
    simlsh__free_sized(&s->alloc, s->state, s->slot_cap * sizeof *s->state);
    simlsh__free_sized(&s->alloc, s->idmap, s->idcap * sizeof *s->idmap);
}

uint32_t simlsh__pf_store_find(const simlsh__pf_store *s, uint64_t id)
{
    size_t p = simlsh__idmap_find(s->idmap, s->idcap, id);
    return p == SIZE_MAX ? SIMLSH__PF_NO_SLOT : s->idmap[p].slot;
}

int simlsh__pf_store_reserve(simlsh__pf_store *s, size_t docs)
{
    if (docs > SIMLSH__PF_MAX_DOCS)
        return SIMLSH_ENOMEM;
    if (docs <= s->count)
        return 0;
    const simlsh_allocator *al = &s->alloc;
    /* Slots of removed documents are reused only once compaction has
     * freed them; until then a new document needs a new slot. */
    size_t nfree = s->nfree;
    size_t extra = docs - s->count;
    size_t need = s->nslots + (extra > nfree ? extra - nfree : 0);
    size_t ncap = s->slot_cap, nidcap = s->idcap;
    uint32_t *nv = NULL;
    uint64_t *ni = NULL, *na = NULL;
    uint8_t *ns = NULL;
    simlsh__id_entry *nm = NULL;
    if (need > s->slot_cap) {
        ncap = s->slot_cap + s->slot_cap / 2;
        if (ncap < need)
            ncap = need;
        if (ncap < MIN_SLOTS)
            ncap = MIN_SLOTS;
        size_t vbytes;
        if (!simlsh__mul_ok(ncap, (size_t)s->num_perm * sizeof *nv, &vbytes))
            return SIMLSH_ENOMEM;
        nv = simlsh__malloc(al, vbytes);
        ni = simlsh__malloc(al, ncap * sizeof *ni);
        na = s->has_aux ? simlsh__malloc(al, ncap * sizeof *na) : NULL;
        ns = simlsh__malloc(al, ncap);
        if (nv == NULL || ni == NULL || ns == NULL || (s->has_aux && na == NULL))
            goto fail;
    }
    /* Id map load at most 0.8, with an empty entry so probes end. */
    if (docs >= s->idcap || docs / 4 > s->idcap - docs) {
        nidcap = docs + docs / 2 + 2;
        if (nidcap < MIN_SLOTS)
            nidcap = MIN_SLOTS;
        nm = simlsh__malloc(al, nidcap * sizeof *nm);
        if (nm == NULL)
            goto fail;
    }
    if (nv != NULL) {
        if (s->nslots > 0) {
            memcpy(nv, s->vals, s->nslots * (size_t)s->num_perm * sizeof *nv);
            memcpy(ni, s->ids, s->nslots * sizeof *ni);
            memcpy(ns, s->state, s->nslots);
            if (s->has_aux)
                memcpy(na, s->aux, s->nslots * sizeof *na);
        }
        simlsh__free_sized(al, s->vals, s->slot_cap * s->num_perm * sizeof *s->vals);
        simlsh__free_sized(al, s->ids, s->slot_cap * sizeof *s->ids);
        simlsh__free_sized(al, s->aux, s->slot_cap * sizeof *s->aux);
        simlsh__free_sized(al, s->state, s->slot_cap * sizeof *s->state);
        s->vals = nv;
        s->ids = ni;
        s->aux = na;
        s->state = ns;
        s->slot_cap = ncap;
    }
    if (nm != NULL) {
        for (size_t i = 0; i < nidcap; i++)
            nm[i].slot = SIMLSH__PF_NO_SLOT;
        for (size_t i = 0; i < s->idcap; i++)
            if (s->idmap[i].slot != SIMLSH__PF_NO_SLOT)
                simlsh__idmap_put(nm, nidcap, s->idmap[i].id, s->idmap[i].slot);
        simlsh__free_sized(al, s->idmap, s->idcap * sizeof *s->idmap);
        s->idmap = nm;
        s->idcap = nidcap;
    }
    return 0;
fail:
    simlsh__free_sized(al, nv, ncap * s->num_perm * sizeof *nv);
    simlsh__free_sized(al, ni, ncap * sizeof *ni);
    simlsh__free_sized(al, na, ncap * sizeof *na);
    simlsh__free_sized(al, ns, ncap * sizeof *ns);
    simlsh__free_sized(al, nm, nidcap * sizeof *nm);
    return SIMLSH_ENOMEM;
}

uint32_t simlsh__pf_store_put(simlsh__pf_store *s, uint64_t id, const uint32_t *vals, uint64_t aux)
{
    uint32_t slot;
    if (s->free_head != SIMLSH__PF_NO_SLOT) {
        slot = s->free_head;
        s->free_head = (uint32_t)s->ids[slot];
        s->nfree--;
    } else {
        slot = (uint32_t)s->nslots++;
    }
    memcpy(s->vals + (size_t)slot * s->num_perm, vals, s->num_perm * sizeof *vals);
    s->ids[slot] = id;
    if (s->has_aux)
        s->aux[slot] = aux;
    s->state[slot] = SIMLSH__PF_LIVE;
    simlsh__idmap_put(s->idmap, s->idcap, id, slot);
    s->count++;
    return slot;
}

void simlsh__pf_store_kill(simlsh__pf_store *s, uint32_t slot)
{
    simlsh__idmap_del_at(s->idmap, s->idcap, simlsh__idmap_find(s->idmap, s->idcap, s->ids[slot]));
    s->state[slot] = SIMLSH__PF_DEAD;
    s->count--;
}

/* ---- key comparisons -------------------------------------------------------------- */

/* Tree `tree`'s key: values [tree*depth, tree*depth + depth) for a prefix
 * tree; value (tree-l)*depth + 1 alone for an extra tree. */
static inline size_t key_off(const simlsh__pf_trees *t, uint32_t tree)
{
    return tree < t->l ? (size_t)tree * t->depth : (size_t)(tree - t->l) * t->depth + 1;
}

static inline uint32_t key_len(const simlsh__pf_trees *t, uint32_t tree)
{
    return tree < t->l ? t->depth : 1;
}

static inline const uint32_t *key_of(const simlsh__pf_store *s, const simlsh__pf_trees *t,
                                     uint32_t tree, uint32_t slot)
{
    return simlsh__pf_vals(s, slot) + key_off(t, tree);
}

static inline uint32_t ntrees(const simlsh__pf_trees *t)
{
    return t->l + t->extra;
}

/* Order of entries: key, then slot (any fixed tie-break would do). */
static inline int ent_cmp(const simlsh__pf_store *s, const simlsh__pf_trees *t, uint32_t tree,
                          simlsh__pf_entry x, simlsh__pf_entry y)
{
    if (x.head != y.head)
        return x.head < y.head ? -1 : 1;
    const uint32_t *a = key_of(s, t, tree, x.slot), *b = key_of(s, t, tree, y.slot);
    for (uint32_t i = 1, n = key_len(t, tree); i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return x.slot < y.slot ? -1 : x.slot > y.slot;
}

/* The entry's first len key values against qk[0 .. len). */
static inline int prefix_cmp(const simlsh__pf_store *s, const simlsh__pf_trees *t, uint32_t tree,
                             simlsh__pf_entry e, const uint32_t *qk, uint32_t len)
{
    if (e.head != qk[0])
        return e.head < qk[0] ? -1 : 1;
    const uint32_t *a = key_of(s, t, tree, e.slot);
    for (uint32_t i = 1; i < len; i++)
        if (a[i] != qk[i])
            return a[i] < qk[i] ? -1 : 1;
    return 0;
}

/* Longest common prefix of the entry's key and qk (0 .. depth). */
static inline uint32_t lcp(const simlsh__pf_store *s, const simlsh__pf_trees *t, uint32_t tree,
                           simlsh__pf_entry e, const uint32_t *qk)
{
    if (e.head != qk[0])
        return 0;
    const uint32_t *a = key_of(s, t, tree, e.slot);
    uint32_t i = 1, n = key_len(t, tree);
    while (i < n && a[i] == qk[i])
        i++;
    return i;
}

/* First position of [a, b) whose len-prefix is >= qk. */
static size_t bound(const simlsh__pf_store *s, const simlsh__pf_trees *t, uint32_t tree,
                    const simlsh__pf_entry *e, size_t a, size_t b, const uint32_t *qk, uint32_t len)
{
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (prefix_cmp(s, t, tree, e[m], qk, len) < 0)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* ---- tree sets ------------------------------------------------------------------- */

void simlsh__pf_trees_init(simlsh__pf_trees *t, uint32_t l, uint32_t depth, uint32_t extra)
{
    memset(t, 0, sizeof *t);
    t->l = l;
    t->depth = depth;
    t->extra = depth == 2 && extra <= l ? extra : 0;
}

void simlsh__pf_trees_free(simlsh__pf_trees *t, const simlsh_allocator *alloc)
{
    simlsh__free_sized(alloc, t->ent, t->cap * ntrees(t) * sizeof *t->ent);
    simlsh__free_sized(alloc, t->scratch, t->cap * sizeof *t->scratch);
}

int simlsh__pf_trees_reserve(simlsh__pf_trees *t, const simlsh_allocator *alloc, size_t docs)
{
    if (docs <= t->cap)
        return 0;
    if (docs > SIMLSH__PF_MAX_DOCS)
        return SIMLSH_ENOMEM;
    size_t ncap = t->cap + t->cap / 2, bytes;
    if (ncap < docs)
        ncap = docs;
    if (ncap < RUN_MIN)
        ncap = RUN_MIN;
    if (!simlsh__mul_ok(ncap, (size_t)ntrees(t) * sizeof(simlsh__pf_entry), &bytes))
        return SIMLSH_ENOMEM;
    simlsh__pf_entry *ne = simlsh__malloc(alloc, bytes);
    simlsh__pf_entry *ns = simlsh__malloc(alloc, ncap * sizeof *ns);
    if (ne == NULL || ns == NULL) {
        simlsh__free_sized(alloc, ne, bytes);
        simlsh__free_sized(alloc, ns, ncap * sizeof *ns);
        return SIMLSH_ENOMEM;
    }
    for (uint32_t i = 0; i < ntrees(t) && t->n > 0; i++)
        memcpy(ne + (size_t)i * ncap, t->ent + (size_t)i * t->cap, t->n * sizeof *ne);
    simlsh__free_sized(alloc, t->ent, t->cap * ntrees(t) * sizeof *t->ent);
    simlsh__free_sized(alloc, t->scratch, t->cap * sizeof *t->scratch);
    t->ent = ne;
    t->scratch = ns;
    t->cap = ncap;
    return 0;
}

/* Merge the sorted neighbours [a, m) and [m, b) of every tree. */
static void merge_runs(simlsh__pf_trees *t, const simlsh__pf_store *s, size_t a, size_t m, size_t b)
{
    for (uint32_t tree = 0; tree < ntrees(t); tree++) {
        simlsh__pf_entry *e = t->ent + (size_t)tree * t->cap, *x = t->scratch;
        size_t nl = m - a, i = 0, j = m, k = a;
        memcpy(x, e + a, nl * sizeof *x);
        while (i < nl && j < b) {
            if (ent_cmp(s, t, tree, e[j], x[i]) < 0)
                e[k++] = e[j++];
            else
                e[k++] = x[i++];
        }
        memcpy(e + k, x + i, (nl - i) * sizeof *x);
    }
}

static inline size_t run_start(const simlsh__pf_trees *t, unsigned r)
{
    return r == 0 ? 0 : t->run_end[r - 1];
}

/* Merge the last two runs while the earlier is less than RUN_RATIO times
 * as large: sizes then shrink at least RUN_RATIO-fold from run to run. */
static void cascade(simlsh__pf_trees *t, const simlsh__pf_store *s)
{
    while (t->nruns >= 2) {
        size_t a = run_start(t, t->nruns - 2), m = t->run_end[t->nruns - 2];
        size_t b = t->run_end[t->nruns - 1];
        if (m - a >= RUN_RATIO * (b - m) && t->nruns < SIMLSH__PF_MAX_RUNS)
            break;
        merge_runs(t, s, a, m, b);
        t->run_end[t->nruns - 2] = b;
        t->nruns--;
    }
}

void simlsh__pf_trees_add(simlsh__pf_trees *t, const simlsh__pf_store *s, uint32_t slot)
{
    size_t start = t->nruns ? t->run_end[t->nruns - 1] : 0;
    for (uint32_t tree = 0; tree < ntrees(t); tree++) {
        simlsh__pf_entry *e = t->ent + (size_t)tree * t->cap;
        simlsh__pf_entry ne = {key_of(s, t, tree, slot)[0], slot};
        size_t i = t->n;
        while (i > start && ent_cmp(s, t, tree, e[i - 1], ne) > 0) {
            e[i] = e[i - 1];
            i--;
        }
        e[i] = ne;
    }
    t->n++;
    if (t->n - start == RUN_MIN) {
        t->run_end[t->nruns++] = t->n;
        cascade(t, s);
    }
}

/* Drop dead entries (their slots go back to the store's free list) and
 * merge everything into one run. */
static void compact(simlsh__pf_trees *t, simlsh__pf_store *s)
{
    size_t ends[SIMLSH__PF_MAX_RUNS + 1];
    unsigned nr = t->nruns;
    memcpy(ends, t->run_end, nr * sizeof *ends);
    if (nr == 0 || ends[nr - 1] < t->n)
        ends[nr++] = t->n; /* the buffer, sorted too */
    size_t newn = 0;
    /* Tree 0 last: it frees the slots, after which the others could no
     * longer tell the dead entries. */
    for (uint32_t tree = ntrees(t); tree-- > 0;) {
        simlsh__pf_entry *e = t->ent + (size_t)tree * t->cap;
        size_t k = 0, r0 = 0;
        unsigned nk = 0;
        for (unsigned r = 0; r < nr; r++) {
            for (size_t i = r0; i < ends[r]; i++) {
                uint32_t sl = e[i].slot;
                if (s->state[sl] == SIMLSH__PF_LIVE) {
                    e[k++] = e[i];
                } else if (tree == 0) {
                    s->state[sl] = SIMLSH__PF_FREE;
                    s->ids[sl] = s->free_head;
                    s->free_head = sl;
                    s->nfree++;
                }
            }
            r0 = ends[r];
            if (k > (nk ? t->run_end[nk - 1] : 0) && tree == 0)
                t->run_end[nk++] = k;
        }
        newn = k;
        if (tree == 0)
            t->nruns = nk;
    }
    t->n = newn;
    t->ndead = 0;
    while (t->nruns >= 2) {
        merge_runs(t, s, run_start(t, t->nruns - 2), t->run_end[t->nruns - 2],
                   t->run_end[t->nruns - 1]);
        t->run_end[t->nruns - 2] = t->run_end[t->nruns - 1];
        t->nruns--;
    }
}

void simlsh__pf_trees_dead(simlsh__pf_trees *t, simlsh__pf_store *s)
{
    t->ndead++;
    if (t->ndead * 2 > t->n)
        compact(t, s);
}

/* ---- candidate sets ----------------------------------------------------------------- */

void simlsh__pf_set_init(simlsh__pf_set *c, const simlsh_allocator *alloc)
{
    memset(c, 0, sizeof *c);
    c->alloc = alloc;
}

void simlsh__pf_set_free(simlsh__pf_set *c)
{
    simlsh__free_sized(c->alloc, c->tab, c->tcap * sizeof *c->tab);
    simlsh__free_sized(c->alloc, c->v, c->vcap * sizeof *c->v);
}

static inline size_t set_home(uint32_t slot, size_t cap)
{
    return simlsh__fastrange((uint32_t)(simlsh__fmix64(slot) >> 32), cap);
}

/* Add slot once; 0 or SIMLSH_ENOMEM (set unchanged). */
static int set_add(simlsh__pf_set *c, uint32_t slot)
{
    if (c->tcap > 0) {
        for (size_t p = set_home(slot, c->tcap); c->tab[p] != SIMLSH__PF_NO_SLOT;) {
            if (c->tab[p] == slot)
                return 0;
            if (++p == c->tcap)
                p = 0;
        }
    }
    if (c->n + 1 > c->vcap) {
        size_t nv = c->vcap ? c->vcap * 2 : 64;
        uint32_t *v = simlsh__realloc_sized(c->alloc, c->v, c->vcap * sizeof *v,
                                            c->vcap * sizeof *v, nv * sizeof *v);
        if (v == NULL)
            return SIMLSH_ENOMEM;
        c->v = v;
        c->vcap = nv;
    }
    if ((c->n + 1) * 2 > c->tcap) {
        size_t nt = c->tcap ? c->tcap * 2 : 128;
        uint32_t *tab = simlsh__malloc(c->alloc, nt * sizeof *tab);
        if (tab == NULL)
            return SIMLSH_ENOMEM;
        memset(tab, 0xff, nt * sizeof *tab);
        for (size_t i = 0; i < c->n; i++) {
            size_t p = set_home(c->v[i], nt);
            while (tab[p] != SIMLSH__PF_NO_SLOT)
                if (++p == nt)
                    p = 0;
            tab[p] = c->v[i];
        }
        simlsh__free_sized(c->alloc, c->tab, c->tcap * sizeof *c->tab);
        c->tab = tab;
        c->tcap = nt;
    }
    size_t p = set_home(slot, c->tcap);
    while (c->tab[p] != SIMLSH__PF_NO_SLOT)
        if (++p == c->tcap)
            p = 0;
    c->tab[p] = slot;
    c->v[c->n++] = slot;
    return 0;
}

/* ---- queries ------------------------------------------------------------------------- */

typedef struct {
    size_t a, b, lo, hi;     /* run [a, b); taken [lo, hi) */
    uint32_t tree, llo, lhi; /* lcp of the entries just outside [lo, hi) */
} cursor;

/* The regions to search: the runs and a non-empty buffer. */
static unsigned regions(const simlsh__pf_trees *t, size_t *ends)
{
    unsigned nr = t->nruns;
    memcpy(ends, t->run_end, nr * sizeof *ends);
    if (t->n > (nr ? ends[nr - 1] : 0))
        ends[nr++] = t->n;
    return nr;
}

static inline int take(const simlsh__pf_store *s, simlsh__pf_set *c, uint32_t slot)
{
    return s->state[slot] == SIMLSH__PF_LIVE ? set_add(c, slot) : 0;
}

int simlsh__pf_descend(const simlsh__pf_trees *t, const simlsh__pf_store *s, const uint32_t *q,
                       size_t want, simlsh__pf_set *c)
{
    if (t->n == 0)
        return 0;
    size_t ends[SIMLSH__PF_MAX_RUNS + 1];
    unsigned nr = regions(t, ends);
    size_t ncur = (size_t)t->l * nr;
    cursor *cur = simlsh__malloc(c->alloc, ncur * sizeof *cur);
    if (cur == NULL)
        return SIMLSH_ENOMEM;
    uint32_t d = 0;
    for (uint32_t tree = 0; tree < t->l; tree++) {
        const simlsh__pf_entry *e = t->ent + (size_t)tree * t->cap;
        const uint32_t *qk = q + (size_t)tree * t->depth;
        for (unsigned r = 0; r < nr; r++) {
            cursor *u = &cur[(size_t)tree * nr + r];
            u->tree = tree;
            u->a = r ? ends[r - 1] : 0;
            u->b = ends[r];
            /* The keys sharing the longest prefixes with qk sit on either
             * side of its insertion point; lcp falls off monotonically
             * away from it. */
            u->lo = u->hi = bound(s, t, tree, e, u->a, u->b, qk, t->depth);
            u->llo = u->lo > u->a ? lcp(s, t, tree, e[u->lo - 1], qk) : 0;
            u->lhi = u->hi < u->b ? lcp(s, t, tree, e[u->hi], qk) : 0;
            d = u->llo > d ? u->llo : d;
            d = u->lhi > d ? u->lhi : d;
        }
    }
    int rc = 0;
    /* Level by level from the deepest shared prefix: a level takes every
     * entry (of any tree) whose lcp is >= d, so the candidates do not
     * depend on how the arrays are cut into runs. */
    while (d >= 1 && rc == 0) {
        uint32_t next = 0;
        for (size_t i = 0; i < ncur && rc == 0; i++) {
            cursor *u = &cur[i];
            const simlsh__pf_entry *e = t->ent + (size_t)u->tree * t->cap;
            const uint32_t *qk = q + (size_t)u->tree * t->depth;
            while (u->llo >= d && rc == 0) {
                rc = take(s, c, e[--u->lo].slot);
                u->llo = u->lo > u->a ? lcp(s, t, u->tree, e[u->lo - 1], qk) : 0;
            }
            while (u->lhi >= d && rc == 0) {
                rc = take(s, c, e[u->hi++].slot);
                u->lhi = u->hi < u->b ? lcp(s, t, u->tree, e[u->hi], qk) : 0;
            }
            next = u->llo > next ? u->llo : next;
            next = u->lhi > next ? u->lhi : next;
        }
        if (c->n >= want)
            break;
        d = next;
    }
    simlsh__free_sized(c->alloc, cur, ncur * sizeof *cur);
    return rc;
}

int simlsh__pf_band(const simlsh__pf_trees *t, const simlsh__pf_store *s, const uint32_t *q,
                    uint32_t first, uint32_t b, uint32_t r, simlsh__pf_set *c)
{
    size_t ends[SIMLSH__PF_MAX_RUNS + 1];
    unsigned nr = regions(t, ends);
    uint32_t last = r == 1 ? ntrees(t) : t->l;
    for (uint32_t tree = first; tree < b && tree < last; tree++) {
        const simlsh__pf_entry *e = t->ent + (size_t)tree * t->cap;
        const uint32_t *qk = q + key_off(t, tree);
        for (unsigned k = 0; k < nr; k++) {
            size_t a = k ? ends[k - 1] : 0;
            /* The bucket is usually empty or small: scanning it costs
             * less than a second binary search for its end. */
            for (size_t i = bound(s, t, tree, e, a, ends[k], qk, r);
                 i < ends[k] && prefix_cmp(s, t, tree, e[i], qk, r) == 0; i++) {
                int rc = take(s, c, e[i].slot);
                if (rc < 0)
                    return rc;
            }
        }
    }
    return 0;
}

/* ---- shared helpers --------------------------------------------------------------- */

int simlsh__pf_shape(const struct simlsh_params *p, uint32_t def_l, uint32_t def_depth, uint32_t *l,
                     uint32_t *depth)
{
    uint32_t np = (uint32_t)p->num_perm, L = (uint32_t)p->bands, D = (uint32_t)p->rows;
    if (L == 0 && D == 0) {
        if (def_l != 0) {
            L = def_l < np ? def_l : np;
            D = np / L;
        } else {
            D = def_depth < np ? def_depth : np;
            L = np / D;
        }
    } else if (L == 0) {
        if (D > np)
            return SIMLSH_EINVAL;
        L = np / D;
    } else if (D == 0) {
        if (L > np)
            return SIMLSH_EINVAL;
        D = np / L;
    } else if ((uint64_t)L * D > np) {
        return SIMLSH_EINVAL;
    }
    *l = L;
    *depth = D;
    return 0;
}

int simlsh__pf_check_sig(const simlsh_signature *sig, uint64_t sig_fp)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->fingerprint != sig_fp)
        return SIMLSH_EMISMATCH;
    return 0;
}

uint32_t simlsh__pf_count_equal(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    uint32_t eq = 0;
    for (uint32_t i = 0; i < n; i++)
        eq += a[i] == b[i];
    return eq;
}

int simlsh__pf_fill(simlsh_results *res, const simlsh__pf_row *rows, size_t n)
{
    int rc = simlsh__results_reserve(res, n, 1);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        res->a[i] = rows[i].id;
        res->b[i] = 0;
        res->score[i] = rows[i].score;
    }
    res->count = n;
    res->nq = 1;
    res->offsets[0] = 0;
    res->truncated = 0;
    return 0;
}
