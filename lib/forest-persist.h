/*
 * Private: the saved form of the objects on the prefix-tree engine, the
 * LSH Forest (forest.c) and the LSH Ensemble (ensemble.c). Both save their
 * store the same way (docs/format-forest.md), so one saver and one reader
 * serve both; each object only adds its own checks and rebuild. Never
 * installed.
 */
#ifndef SIMLSH_FOREST_PERSIST_H
#define SIMLSH_FOREST_PERSIST_H

#include "forest-engine.h"

#define SIMLSH__MAGIC_FOREST 0x52464C53u   /* "SLFR" little-endian */
#define SIMLSH__MAGIC_ENSEMBLE 0x4E454C53u /* "SLEN" */

/* Save store s of an object with contract p (bands = trees, rows = depth):
 * one record per live document in slot order, u64 id, u64 size when the
 * store has sizes (has_aux), then num_perm u32 values. The size query,
 * SIMLSH_EBUFSIZE and SIMLSH_EINVAL are those of simlsh__frame_begin(). */
int simlsh__pf_save(void *buf, size_t cap, size_t *size, uint32_t magic,
                    const struct simlsh_params *p, const simlsh__pf_store *s);

/* The records of a saved store, read one at a time. */
typedef struct {
    const uint8_t *next;
    uint64_t count, left; /* records in all, and not read yet */
    uint32_t rec, num_perm;
    int has_aux;
} simlsh__pf_reader;

/* The load prologue (after the constructor's out check): frame, payload
 * head and record size checked against the contract and the real length,
 * before anything sized by the input is allocated. Fills *p and rd. */
int simlsh__pf_load_open(simlsh__pf_reader *rd, struct simlsh_params *p, const void *buf,
                         size_t len, const simlsh_allocator *alloc, uint32_t magic, int has_aux);
/* The next record: 1 with *id, *aux (0 without sizes) and vals[num_perm]
 * filled, 0 after the last, SIMLSH_ECORRUPT when a value is the empty
 * marker, a size is 0 or the id is already in s (the store being
 * rebuilt). */
int simlsh__pf_load_next(simlsh__pf_reader *rd, const simlsh__pf_store *s, uint64_t *id,
                         uint64_t *aux, uint32_t *vals);

#endif
