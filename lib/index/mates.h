/* What the dedup engine (lib/dedup/) may know of an index: its slots, and
 * the bucket-mates of a slot. Layer 4; the engine treats the index as
 * opaque through these calls, so index/internal.h stays private to index/.
 *
 * Slots number the documents densely (0 .. simlsh__ix_nslots() - 1; a
 * removed document's slot is free until reused), and stay valid while the
 * index is unchanged (simlsh__ix_gen()). */
#ifndef SIMLSH_INDEX_MATES_H
#define SIMLSH_INDEX_MATES_H

#include <stddef.h>
#include <stdint.h>

#include "simlsh.h"
#include "alloc.h"
#include "unionfind.h"

struct simlsh_index;

/* A bucket-mate: its slot and the values its signature shares with the
 * slot asked about. */
typedef struct {
    uint32_t slot, eq;
} simlsh__mate;

typedef struct {
    simlsh__mate *v;
    size_t n, cap;
} simlsh__matevec;

struct simlsh_params;
const struct simlsh_params *simlsh__ix_params(const struct simlsh_index *ix);
size_t simlsh__ix_nslots(const struct simlsh_index *ix);
uint64_t simlsh__ix_gen(const struct simlsh_index *ix);
uint32_t simlsh__ix_num_perm(const struct simlsh_index *ix);
int simlsh__ix_has_sigs(const struct simlsh_index *ix);
/* 1 if slot holds a document (then *id is its id), 0 if it is free. */
int simlsh__ix_slot_id(const struct simlsh_index *ix, uint32_t slot, uint64_t *id);
/* The slot of id, or 0xFFFFFFFF if the index does not hold it. */
uint32_t simlsh__ix_slot_of(const struct simlsh_index *ix, uint64_t id);

/* The smallest count of equal values whose estimate count / num_perm is at
 * least thr, as the pairs and queries compare (0 for thr <= 0). */
uint32_t simlsh__ix_need(uint32_t num_perm, double thr);

/* Buckets of more than INLINE_MAX members are lists, numbered
 * 0 .. simlsh__ix_nlists() - 1 (free numbers included). */
size_t simlsh__ix_nlists(const struct simlsh_index *ix);

/* Mark skip[l] = 1 (skip: simlsh__ix_nlists() bytes) for the largest
 * lists of more than min_size members that hold unlike documents, until
 * what the unlike lists left would cost, the sum of their sizes squared,
 * is at most budget. A list is unlike when, of its SIMLSH__IX_SAMPLE
 * members with the smallest fmix64(id) (a sample that depends on the
 * bucket's members alone, not on their order), fewer than a quarter of the
 * pairs share need values. Adds the lists marked to *nskip and their
 * members to *members. 0 or SIMLSH_ENOMEM (nothing marked). */
#define SIMLSH__IX_SAMPLE 16
int simlsh__ix_unlike_lists(const struct simlsh_index *ix, size_t min_size, uint32_t need,
                            double budget, uint8_t *skip, uint64_t *nskip, uint64_t *members,
                            const simlsh_allocator *al);

/* Every document that shares a bucket with slot x in some band, once,
 * except x, the members of the lists whose lists[] byte is set (lists may
 * be NULL), and the slots whose closed[] byte is set, whose signature
 * shares at least need values with x's, into out (appended, in no
 * particular order; grown with al). With parent (components, unionfind.h;
 * NULL for stars) only the mates not yet in x's component, and a list
 * whose members are all in it becomes settled, lists[l] = 2: connectivity
 * only grows, so it never holds a pair to look at again. seen[] is
 * scratch of nslots words, all different from stamp before the call; the
 * call leaves stamp in the entries of the mates it scored. Needs stored
 * signatures. *visits grows by the bucket members looked at. 0 or
 * SIMLSH_ENOMEM. */
int simlsh__ix_mates(const struct simlsh_index *ix, uint32_t x, uint32_t need, uint8_t *lists,
                     const uint8_t *closed, simlsh__uf_node *parent, uint32_t *seen, uint32_t stamp,
                     const uint8_t *low, const simlsh_allocator *al, simlsh__matevec *out,
                     uint64_t *visits);

/* A star's next centres at once (dedup/ahead.c): simlsh__ix_mates() for
 * each of the n slots xs[] (no parent, and the same lists[] and closed[]
 * for all), one band at a time, so that bands can go to threads. For
 * band b: fps[i] is xs[i]'s fingerprint in band b (simlsh__ix_slot_fps()),
 * the mates of xs[i] met in band b are appended to outs[i] in the order
 * simlsh__ix_mates() meets them, and its looks are added to visits[i]. A
 * mate met in several bands is in each band's outs (the caller keeps the
 * first: simlsh__ix_mates() would not score it again, and would give the
 * same score). A list that several centres share is read once for all of
 * them: with a shared template's giant buckets that is what the walk
 * costs. Needs stored signatures and low (simlsh__ix_low_bytes()); n at
 * most SIMLSH__IX_BLOCK. 0, SIMLSH_EINVAL or SIMLSH_ENOMEM. */
#define SIMLSH__IX_BLOCK 64
int simlsh__ix_mates_band(const struct simlsh_index *ix, const uint32_t *xs, size_t n, uint32_t b,
                          const uint32_t *fps, uint32_t need, const uint8_t *lists,
                          const uint8_t *closed, const uint8_t *low, const simlsh_allocator *al,
                          simlsh__matevec *outs, uint64_t *visits);
uint32_t simlsh__ix_bands(const struct simlsh_index *ix);
/* slot's fingerprint in every band (simlsh__ix_bands() of them) into fps. */
void simlsh__ix_slot_fps(const struct simlsh_index *ix, uint32_t slot, uint32_t *fps);

/* The lowest byte of every value of every slot's signature, num_perm
 * bytes a slot, into low (nslots x num_perm bytes): simlsh__ix_mates()'s
 * first test when low is given. Two signatures agree on at most as many
 * values as on these bytes, so a mate whose bytes agree fewer than need
 * times is out, decided from a quarter of the bytes; the others are
 * scored on their whole signatures, as without. */
void simlsh__ix_low_bytes(const struct simlsh_index *ix, uint8_t *low);

/* Buckets by size (the census of simlsh_index_largest_buckets()). */
int simlsh__ix_census(const struct simlsh_index *ix, size_t k, size_t min_size, uint64_t *sizes,
                      uint32_t *bands, uint64_t *sample, size_t *nfound, uint64_t *docs_above,
                      const simlsh_allocator *al);

#endif
