/* The results object's layout, filled by the index (lib/index/). */
#ifndef SIMLSH_RESULTS_H
#define SIMLSH_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "handle.h"
#include "simlsh.h"

/* Rows are three parallel columns so that simlsh_results_a/b/scores can
 * hand out plain arrays. offsets has nq + 1 entries when nq > 0 (batch
 * queries); other fills have nq = 0 or 1. Each column is NULL or a block
 * of cap elements, offsets NULL or a block of ocap: the sizes the blocks
 * are freed with. */
struct simlsh_results {
    uint32_t tag; /* SIMLSH__TAG_RESULTS (handle.h) */
    simlsh_allocator alloc;
    uint64_t *a;
    uint64_t *b;
    double *score;
    size_t count, cap;
    size_t *offsets;
    size_t nq, ocap;
    int truncated;
};

/* Make room for rows rows and nq queries (offsets), keeping the current
 * content untouched: a fill reserves first and writes only once nothing can
 * fail, so a failed call leaves the results as they were. 0 or ENOMEM. */
int simlsh__results_reserve(struct simlsh_results *res, size_t rows, size_t nq);

/* A fill whose row count is known only at the end (batch queries, pairs):
 * rows go to columns of the builder's own, from the results' allocator,
 * and commit swaps them into the results. So each row is written once,
 * and a fill that fails before commit leaves the results as they were. */
typedef struct {
    const simlsh_allocator *alloc;
    uint64_t *a, *b;
    double *score;
    size_t n, cap;
    size_t *offsets; /* nq + 1 entries for a per-query fill, else NULL */
    size_t nq;
} simlsh__builder;

void simlsh__builder_init(simlsh__builder *bd, const struct simlsh_results *res);
void simlsh__builder_free(simlsh__builder *bd);
/* Room for need rows in all; 0 or SIMLSH_ENOMEM (builder unchanged). */
int simlsh__builder_grow(simlsh__builder *bd, size_t need);
/* A per-query fill of nq queries: offsets[q] is set by the caller. 0 or
 * SIMLSH_ENOMEM. */
int simlsh__builder_per_query(simlsh__builder *bd, size_t nq);
/* Hand the rows over: res's old columns are freed, and bd is left empty
 * (free it as usual). Cannot fail. */
void simlsh__builder_commit(simlsh__builder *bd, struct simlsh_results *res, int truncated);

/* Room for more rows after the current ones; 0 or SIMLSH_ENOMEM. */
static inline int simlsh__builder_reserve(simlsh__builder *bd, size_t more)
{
    if (more <= bd->cap - bd->n)
        return 0;
    if (more > SIZE_MAX - bd->n)
        return SIMLSH_ENOMEM;
    return simlsh__builder_grow(bd, bd->n + more);
}

/* Append a row; room must have been reserved. */
static inline void simlsh__builder_put(simlsh__builder *bd, uint64_t a, uint64_t b, double score)
{
    bd->a[bd->n] = a;
    bd->b[bd->n] = b;
    bd->score[bd->n] = score;
    bd->n++;
}

#endif
