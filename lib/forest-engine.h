/*
 * Private: the prefix-tree engine shared by the LSH Forest (forest.c) and the
 * LSH Ensemble (ensemble.c). Never installed.
 *
 * A store holds the documents: id, num_perm densified values and (for the
 * ensemble) a 64-bit size per slot, with an id -> slot map. A tree set holds
 * l prefix trees over some of the store's slots: tree t's key of a document
 * is its values [t*depth, (t+1)*depth), compared lexicographically, and a
 * tree is a set of sorted runs of 8-byte entries {first value of the key,
 * slot} (the first value settles almost every comparison without touching
 * the signature). docs/format-forest.md has the bytes, forest-engine.c the
 * layout and forest-persist.h the saved form.
 */
#ifndef SIMLSH_FOREST_ENGINE_H
#define SIMLSH_FOREST_ENGINE_H

#include <string.h>

#include "alloc.h"
#include "frame.h"
#include "idmap.h"
#include "le.h"
#include "minhash_simd.h"
#include "murmur3.h"
#include "params.h"
#include "signature.h"

#define SIMLSH__PF_MAX_DOCS ((size_t)1 << 30)
/* Run sizes shrink at least 4-fold from one run to the next (see
 * forest.c), so 2^30 documents need at most 14 runs; compaction leaves one. */
#define SIMLSH__PF_MAX_RUNS 40
#define SIMLSH__PF_NO_SLOT SIMLSH__NO_SLOT

typedef struct {
    simlsh_allocator alloc;
    uint32_t num_perm;
    int has_aux;
    uint32_t *vals; /* num_perm per slot */
    uint64_t *ids;  /* slot -> id; a free slot holds the next free one */
    uint64_t *aux;  /* slot -> size (ensemble), when has_aux */
    uint8_t *state; /* SIMLSH__PF_FREE / _LIVE / _DEAD */
    size_t slot_cap, nslots, count, nfree;
    uint32_t free_head;      /* list of free slots (nfree of them) */
    simlsh__id_entry *idmap; /* idmap.h */
    size_t idcap;
} simlsh__pf_store;

enum {
    SIMLSH__PF_FREE = 0,
    SIMLSH__PF_LIVE = 1,
    SIMLSH__PF_DEAD = 2
};

typedef struct {
    uint32_t head, slot;
} simlsh__pf_entry;

/* Trees 0 .. l-1 are the prefix trees. Trees l .. l+extra-1 (the ensemble's,
 * when depth is 2) hold one value each: tree l + i the second value of tree
 * i's key, so that a query may use up to l + extra one-row bands, every
 * value of the signature once (datasketch's ensemble goes to num_perm). */
typedef struct {
    uint32_t l, depth, extra;
    simlsh__pf_entry *ent;               /* (l + extra) * cap: tree t at ent + t * cap */
    simlsh__pf_entry *scratch;           /* cap entries, for merges */
    size_t cap, n, ndead;                /* n entries per tree, ndead of them dead */
    size_t run_end[SIMLSH__PF_MAX_RUNS]; /* closed runs; the rest is the buffer */
    unsigned nruns;
} simlsh__pf_trees;

/* A set of slots in insertion order (query scratch, through the hooks). */
typedef struct {
    const simlsh_allocator *alloc;
    uint32_t *tab; /* open addressing, SIMLSH__PF_NO_SLOT = empty */
    size_t tcap;
    uint32_t *v; /* members in insertion order */
    size_t n, vcap;
} simlsh__pf_set;

/* A result row before it goes into a simlsh_results. */
typedef struct {
    uint64_t id;
    double score;
} simlsh__pf_row;

/* ---- store ---------------------------------------------------------------- */
void simlsh__pf_store_init(simlsh__pf_store *s, const simlsh_allocator *alloc, uint32_t num_perm,
                           int has_aux);
void simlsh__pf_store_free(simlsh__pf_store *s);
/* Slot of live id, or SIMLSH__PF_NO_SLOT. */
uint32_t simlsh__pf_store_find(const simlsh__pf_store *s, uint64_t id);
/* Room for one more document; 0 or SIMLSH_ENOMEM (store unchanged). */
int simlsh__pf_store_reserve(simlsh__pf_store *s, size_t docs);
/* Add a document (room reserved, id absent); returns its slot. */
uint32_t simlsh__pf_store_put(simlsh__pf_store *s, uint64_t id, const uint32_t *vals, uint64_t aux);
/* Remove id's slot from the map; its entries in a tree set become dead. */
void simlsh__pf_store_kill(simlsh__pf_store *s, uint32_t slot);
static inline const uint32_t *simlsh__pf_vals(const simlsh__pf_store *s, uint32_t slot)
{
    return s->vals + (size_t)slot * s->num_perm;
}

/* ---- tree sets -------------------------------------------------------------- */
/* extra: up to l one-value trees (see above); the tree set makes them at
 * depth 2 only, and none otherwise. */
void simlsh__pf_trees_init(simlsh__pf_trees *t, uint32_t l, uint32_t depth, uint32_t extra);
void simlsh__pf_trees_free(simlsh__pf_trees *t, const simlsh_allocator *alloc);
/* Room for `docs` entries per tree; 0 or SIMLSH_ENOMEM (unchanged). */
int simlsh__pf_trees_reserve(simlsh__pf_trees *t, const simlsh_allocator *alloc, size_t docs);
/* Add a live slot to every tree (room reserved). Never fails. */
void simlsh__pf_trees_add(simlsh__pf_trees *t, const simlsh__pf_store *s, uint32_t slot);
/* One of t's slots was killed: compacts when dead entries outnumber live
 * ones, releasing the dead slots to the store. Never allocates. */
void simlsh__pf_trees_dead(simlsh__pf_trees *t, simlsh__pf_store *s);

/* ---- queries (const: safe to run concurrently) ----------------------------- */
void simlsh__pf_set_init(simlsh__pf_set *c, const simlsh_allocator *alloc);
void simlsh__pf_set_free(simlsh__pf_set *c);
/* LSH Forest descent: live slots sharing the longest prefixes with q in any
 * tree, level by level from the deepest, until a level ends with at least
 * `want` distinct slots in c or no prefix of length >= 1 is left.
 * 0 or SIMLSH_ENOMEM. */
int simlsh__pf_descend(const simlsh__pf_trees *t, const simlsh__pf_store *s, const uint32_t *q,
                       size_t want, simlsh__pf_set *c);
/* Banding with trees first..b-1 as bands of their first r rows: live slots
 * whose r-prefix equals q's in at least one of them. With r = 1, trees
 * from l on are the extra ones (b <= l + extra). 0 or SIMLSH_ENOMEM. */
int simlsh__pf_band(const simlsh__pf_trees *t, const simlsh__pf_store *s, const uint32_t *q,
                    uint32_t first, uint32_t b, uint32_t r, simlsh__pf_set *c);

/* ---- shared by both objects ------------------------------------------------- */
/* Trees and depth from BANDS / ROWS: both 0 gives the object's default
 * shape (def_l trees, or def_depth rows when def_l is 0, over num_perm);
 * one 0 is derived from the other. 0 or SIMLSH_EINVAL. */
int simlsh__pf_shape(const struct simlsh_params *p, uint32_t def_l, uint32_t def_depth, uint32_t *l,
                     uint32_t *depth);
/* Checks of a query signature against an object's signature fingerprint. */
int simlsh__pf_check_sig(const simlsh_signature *sig, uint64_t sig_fp);
uint32_t simlsh__pf_count_equal(const uint32_t *a, const uint32_t *b, uint32_t n);
/* Fill res with one query's rows (a = id, b = 0, score); 0 or
 * SIMLSH_ENOMEM with res unchanged. */
int simlsh__pf_fill(simlsh_results *res, const simlsh__pf_row *rows, size_t n);

#endif
