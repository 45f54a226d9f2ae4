/* The results object's layout, filled by the index (lib/index/). */
#ifndef SIMLSH_RESULTS_H
#define SIMLSH_RESULTS_H

#include "internal.h"

/* Rows are three parallel columns so that simlsh_results_a/b/scores can
 * hand out plain arrays. offsets has nq + 1 entries when nq > 0 (batch
 * queries); other fills have nq = 0 or 1. */
struct simlsh_results {
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

#endif
