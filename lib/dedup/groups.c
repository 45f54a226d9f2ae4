/* The dedup engine's answers: the groups in simlsh_group_star()'s rows,
 * and the census of an index's largest buckets. */
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "internal.h"
#include "handle.h"
#include "index/mates.h"
#include "results.h"

/* ---- groups ------------------------------------------------------------------------ */

int simlsh_dedup_groups(simlsh_results *res, size_t *ngroups, const simlsh_dedup *d)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_DEDUP(d);
    if (!d->finished)
        return SIMLSH_ESTATE;
    size_t n = d->nslots, ng = 0, rows = 0;
    /* members of each centre, counted; groups in their centres' rank order */
    size_t *at = simlsh__calloc(&d->al, n ? n : 1, sizeof *at);
    if (at == NULL)
        return SIMLSH_ENOMEM;
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r];
        if (d->cent[s] != s)
            at[d->cent[s]]++;
    }
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r];
        if (d->cent[s] == s && at[s] > 0) {
            ng++;
            rows += at[s] + 1;
        }
    }
    int rc = simlsh__results_reserve(res, rows, ng);
    if (rc < 0) {
        simlsh__free_sized(&d->al, at, (n ? n : 1) * sizeof *at);
        return rc;
    }
    size_t pos = 0, g = 0;
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r];
        if (d->cent[s] != s || at[s] == 0)
            continue;
        res->offsets[g++] = pos;
        size_t members = at[s];
        res->a[pos] = res->b[pos] = d->ids[s];
        res->score[pos] = 1.0;
        at[s] = ++pos; /* where its next member goes */
        pos += members;
    }
    for (size_t r = 0; r < d->nlive; r++) {
        uint32_t s = d->order[r];
        uint32_t c = d->cent[s];
        if (c == s)
            continue;
        size_t p = at[c]++;
        res->a[p] = d->ids[s];
        res->b[p] = d->ids[c];
        res->score[p] = d->score[s];
    }
    if (ng > 0)
        res->offsets[ng] = rows;
    res->count = rows;
    res->nq = ng;
    res->truncated = 0;
    if (ngroups != NULL)
        *ngroups = ng;
    simlsh__free_sized(&d->al, at, (n ? n : 1) * sizeof *at);
    return 0;
}

/* ---- the census -------------------------------------------------------------------- */

int simlsh_index_largest_buckets(simlsh_results *res, uint64_t *docs_above,
                                 const simlsh_index *index, size_t k, size_t min_size)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    const simlsh_allocator *al = &res->alloc;
    size_t bytes, found = 0;
    uint64_t above = 0;
    if (k > SIZE_MAX / 2 || !simlsh__mul_ok(k ? k : 1, sizeof(uint64_t), &bytes))
        return SIMLSH_ENOMEM;
    if (min_size < 1)
        min_size = 1;
    uint64_t *sizes = simlsh__malloc(al, bytes), *sample = simlsh__malloc(al, bytes);
    uint32_t *bands = simlsh__calloc(al, k ? k : 1, sizeof *bands);
    int rc = SIMLSH_ENOMEM;
    if (sizes && sample && bands)
        rc = simlsh__ix_census(index, k, min_size, sizes, bands, sample, &found, &above, al);
    if (rc == 0)
        rc = simlsh__results_reserve(res, found, 1);
    if (rc == 0) {
        for (size_t i = 0; i < found; i++) {
            res->a[i] = sample[i];
            res->b[i] = bands[i];
            res->score[i] = (double)sizes[i];
        }
        res->offsets[0] = 0;
        res->offsets[1] = found;
        res->count = found;
        res->nq = 1;
        res->truncated = 0;
        if (docs_above != NULL)
            *docs_above = above;
    }
    simlsh__free_sized(al, sizes, bytes);
    simlsh__free_sized(al, sample, bytes);
    simlsh__free_sized(al, bands, (k ? k : 1) * sizeof *bands);
    return rc;
}
