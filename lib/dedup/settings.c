/* The dedup engine's settings before the start: simlsh_dedup_set(), the
 * priority and sizes by id, and the counters (dedup.c runs the engine). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "handle.h"
#include "internal.h"

#define FREE_N(p, n) simlsh__free_sized(&d->al, (p), (n) * sizeof *(p))

int simlsh_dedup_set(simlsh_dedup *d, int key, double value)
{
    SIMLSH__CHECK_DEDUP(d);
    if (value != value)
        return SIMLSH_EINVAL;
    if (d->started)
        return SIMLSH_ESTATE;
    switch (key) {
    case SIMLSH_DEDUP_THREADS:
        if (!(value >= 0 && value <= 256) || value != floor(value))
            return SIMLSH_EINVAL;
        d->nthreads = (uint32_t)value;
        return 0;
    case SIMLSH_DEDUP_MEMORY:
        if (!(value >= 1 && value <= 1.8e19))
            return SIMLSH_EINVAL;
        d->memory = (uint64_t)value;
        return 0;
    case SIMLSH_DEDUP_PREFILTER:
        if (!(value >= 0 && value <= 1))
            return SIMLSH_EINVAL;
        if (d->mode == SIMLSH_DEDUP_EXACT)
            d->prefilter = value;
        return 0;
    case SIMLSH_DEDUP_KEEP_BELOW:
        if (!(value >= 0 && value <= 1.8e19))
            return SIMLSH_EINVAL;
        d->keep_below = (uint64_t)value;
        return 0;
    case SIMLSH_DEDUP_GIANT:
        if (!(value >= 0 && value <= 1.8e19) || value != floor(value))
            return SIMLSH_EINVAL;
        d->giant = (uint64_t)value;
        return 0;
    case SIMLSH_DEDUP_CLUSTER:
        if (value != SIMLSH_DEDUP_STAR && value != SIMLSH_DEDUP_COMPONENTS)
            return SIMLSH_EINVAL;
        d->cluster = (int)value;
        return 0;
    case SIMLSH_DEDUP_LINK_KEPT:
        if (value != 0 && value != 1)
            return SIMLSH_EINVAL;
        d->link_kept = (int)value;
        return 0;
    case SIMLSH_DEDUP_SAMPLE_MEMORY:
        if (!(value >= 0 && value <= 1.8e19))
            return SIMLSH_EINVAL;
        d->sample_memory = (uint64_t)value;
        return 0;
    case SIMLSH_DEDUP_GIANT_COST:
        if (!(value >= 0 && value <= 1e15))
            return SIMLSH_EINVAL;
        d->giant_cost = value;
        return 0;
    default:
        return SIMLSH_EINVAL;
    }
}

/* Copy n values into *dst (freeing what was there), or fail changing nothing. */
static int copy_u64(simlsh_dedup *d, uint64_t **dst, size_t *dn, const uint64_t *src, size_t n)
{
    size_t bytes;
    if (!simlsh__mul_ok(n, sizeof *src, &bytes))
        return SIMLSH_ENOMEM;
    uint64_t *c = NULL;
    if (n > 0) {
        if ((c = simlsh__malloc(&d->al, bytes)) == NULL)
            return SIMLSH_ENOMEM;
        memcpy(c, src, bytes);
    }
    FREE_N(*dst, *dn);
    *dst = c;
    *dn = n;
    return 0;
}

int simlsh_dedup_order(simlsh_dedup *d, const uint64_t *ids, size_t n)
{
    SIMLSH__CHECK_DEDUP(d);
    if (ids == NULL && n > 0)
        return SIMLSH_EINVAL;
    if (d->started)
        return SIMLSH_ESTATE;
    return copy_u64(d, &d->order_ids, &d->norder, ids, n);
}

int simlsh_dedup_sizes(simlsh_dedup *d, const uint64_t *ids, const uint64_t *bytes, size_t n)
{
    SIMLSH__CHECK_DEDUP(d);
    if ((ids == NULL || bytes == NULL) && n > 0)
        return SIMLSH_EINVAL;
    if (d->started)
        return SIMLSH_ESTATE;
    uint64_t *oi = NULL, *ob = NULL;
    size_t ni = 0, nb = 0;
    int rc = copy_u64(d, &oi, &ni, ids, n);
    if (rc == 0 && (rc = copy_u64(d, &ob, &nb, bytes, n)) < 0)
        FREE_N(oi, ni);
    if (rc < 0)
        return rc;
    FREE_N(d->size_ids, d->nsizes);
    FREE_N(d->size_bytes, d->nsizes);
    d->size_ids = oi;
    d->size_bytes = ob;
    d->nsizes = n;
    return 0;
}

int simlsh_dedup_stat(uint64_t *value, const simlsh_dedup *d, int key)
{
    SIMLSH__CHECK_DEDUP(d);
    if (value == NULL || key < 0 || key >= NSTATS)
        return SIMLSH_EINVAL;
    *value = d->st[key];
    return 0;
}
