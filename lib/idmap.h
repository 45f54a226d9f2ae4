/*
 * Open addressing with linear probing, and the id -> slot map built on it:
 * one copy for the LSH index (index/) and the prefix-tree engine
 * (forest-engine.c). Util layer, header only.
 *
 * A table of cap entries puts a key with 32-bit hash h at its home
 * fastrange(h, cap), or at the first empty entry after it (wrapping), so
 * any capacity works and growth can be 1.5x. Deletion shifts later
 * entries of the run back into the hole (no tombstones), so every run
 * stays gap-free, which lookups and the index's "first member of a
 * bucket" search rely on. The id map keys 64-bit ids by the high half of
 * fmix64(id); an entry whose slot is SIMLSH__NO_SLOT is empty, and an
 * empty table is all ones.
 */
#ifndef SIMLSH_IDMAP_H
#define SIMLSH_IDMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "murmur3.h"

#define SIMLSH__NO_SLOT 0xFFFFFFFFu

/* h scaled to [0, cap) (Lemire's fastrange): cap <= 2^32. */
static inline size_t simlsh__fastrange(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)h * (uint64_t)cap) >> 32);
}

/* The position after p in a table of cap entries: probes wrap around. */
static inline size_t simlsh__probe_next(size_t p, size_t cap)
{
    return p + 1 == cap ? 0 : p + 1;
}

/* Backward-shift deletion of entry i of a table of esz-byte entries: pull
 * later entries of the run into the hole unless their home lies cyclically
 * in (hole, entry]. home(e, cap) is an entry's home, or SIZE_MAX if it is
 * empty. The hole left at the end is all ones, which is how tables start.
 * Inline, so each caller gets code for its own entry size and home. */
static inline void simlsh__probe_del(void *tab, size_t esz, size_t cap, size_t i,
                                     size_t (*home)(const void *e, size_t cap))
{
    char *t = tab;
    size_t j = i;
    for (;;) {
        j = simlsh__probe_next(j, cap);
        size_t k = home(t + j * esz, cap);
        if (k == SIZE_MAX)
            break;
        int stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stay)
            continue;
        memcpy(t + i * esz, t + j * esz, esz);
        i = j;
    }
    memset(t + i * esz, 0xff, esz);
}

/* ---- the id -> slot map ------------------------------------------------------- */

typedef struct {
    uint64_t id;
    uint32_t slot; /* SIMLSH__NO_SLOT: empty */
    uint32_t unused;
} simlsh__id_entry;

static inline uint32_t simlsh__id_hash(uint64_t id)
{
    return (uint32_t)(simlsh__fmix64(id) >> 32);
}

static inline size_t simlsh__id_home(const void *e, size_t cap)
{
    const simlsh__id_entry *x = e;
    return x->slot == SIMLSH__NO_SLOT ? SIZE_MAX : simlsh__fastrange(simlsh__id_hash(x->id), cap);
}

/* Position of id in map m of cap entries, or of the empty entry where it
 * would go: cap > 0, and the map has an empty entry. */
static inline size_t simlsh__idmap_probe(const simlsh__id_entry *m, size_t cap, uint64_t id)
{
    size_t p = simlsh__fastrange(simlsh__id_hash(id), cap);
    while (m[p].slot != SIMLSH__NO_SLOT && m[p].id != id)
        p = simlsh__probe_next(p, cap);
    return p;
}

/* Position of id in map m of cap entries (cap 0: none), or SIZE_MAX. */
static inline size_t simlsh__idmap_find(const simlsh__id_entry *m, size_t cap, uint64_t id)
{
    if (cap == 0)
        return SIZE_MAX;
    size_t p = simlsh__idmap_probe(m, cap, id);
    return m[p].slot != SIMLSH__NO_SLOT ? p : SIZE_MAX;
}

/* Add id -> slot; id is absent and the map has an empty entry. */
static inline void simlsh__idmap_put(simlsh__id_entry *m, size_t cap, uint64_t id, uint32_t slot)
{
    size_t p = simlsh__idmap_probe(m, cap, id);
    m[p].id = id;
    m[p].slot = slot;
}

/* Remove the entry at position i (from simlsh__idmap_find()). */
static inline void simlsh__idmap_del_at(simlsh__id_entry *m, size_t cap, size_t i)
{
    simlsh__probe_del(m, sizeof *m, cap, i, simlsh__id_home);
}

#endif
