/* simlsh-dedup: the --keep priority of ids, and star groups' rows turned
 * into labels, shared by dedup-output.c (groups of pairs), dedup-star.c
 * (groups from the buckets) and simlsh-dedup-mpi. */
#include "dedup.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Room in r->store.id_bytes and r->store.id_mtime (what --keep compares) for id. */
void ensure_idmeta(struct run_store *st, uint64_t id)
{
    if (id < st->idmeta_cap)
        return;
    size_t cap = st->idmeta_cap ? st->idmeta_cap * 2 : 4096;
    while (cap <= id)
        cap *= 2;
    st->id_bytes = xrealloc(st->id_bytes, cap * sizeof *st->id_bytes);
    st->id_mtime = xrealloc(st->id_mtime, cap * sizeof *st->id_mtime);
    memset(st->id_bytes + st->idmeta_cap, 0, (cap - st->idmeta_cap) * sizeof *st->id_bytes);
    memset(st->id_mtime + st->idmeta_cap, 0, (cap - st->idmeta_cap) * sizeof *st->id_mtime);
    st->idmeta_cap = cap;
}

/* The priority of --keep, best first: ids from --index (already in the
 * collection), then the new ids by the policy, ties by id. qsort() passes
 * no context, and one run sorts at a time: the run is a file-scope
 * pointer. */
static const struct run *keep_run;

static int cmp_keep(const void *x, const void *y)
{
    const struct run *r = keep_run;
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    int old_a = a < r->store.first_new, old_b = b < r->store.first_new;
    if (old_a != old_b)
        return old_a ? -1 : 1;
    if (!old_a) {
        uint64_t ba = r->store.id_bytes[a], bb = r->store.id_bytes[b];
        int64_t ma = r->store.id_mtime[a], mb = r->store.id_mtime[b];
        int c = 0;
        switch (r->opt->keep) {
        case KEEP_SHORTEST:
            c = (ba > bb) - (ba < bb);
            break;
        case KEEP_LONGEST:
            c = (ba < bb) - (ba > bb);
            break;
        case KEEP_OLDEST:
            c = (ma > mb) - (ma < mb);
            break;
        case KEEP_NEWEST:
            c = (ma < mb) - (ma > mb);
            break;
        default:
            break;
        }
        if (c)
            return c;
    }
    return (a > b) - (a < b);
}

uint64_t *keep_order(struct run *r)
{
    size_t n = r->store.names.count;
    if (r->opt->keep == KEEP_FIRST && r->store.first_new == 0)
        return NULL;
    if (n)
        ensure_idmeta(&r->store, n - 1);
    uint64_t *order = xmalloc((n ? n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    keep_run = r;
    qsort(order, n, sizeof *order, cmp_keep);
    return order;
}

int star_labels(size_t n, const simlsh_results *res, size_t ng, uint64_t *label, uint64_t *kept)
{
    for (size_t i = 0; i < n; i++)
        label[i] = kept[i] = i;
    const uint64_t *ga = simlsh_results_a(res), *gb = simlsh_results_b(res);
    for (size_t g = 0; g < ng; g++) {
        size_t lo = 0, hi = 0;
        simlsh_results_offset(&lo, res, g);
        simlsh_results_offset(&hi, res, g + 1);
        uint64_t min = UINT64_MAX;
        for (size_t k = lo; k < hi; k++) {
            if (ga[k] >= n) {
                fprintf(stderr,
                        "simlsh-dedup: the index holds id %" PRIu64
                        " that has no name; was it saved by another program?\n",
                        ga[k]);
                return -1;
            }
            if (ga[k] < min)
                min = ga[k];
        }
        for (size_t k = lo; k < hi; k++) {
            label[ga[k]] = min;
            kept[ga[k]] = gb[k];
        }
    }
    return 0;
}

/* simlsh-dedup-mpi forms the groups on several ranks and writes the pairs
 * as they arrive from them: the same priority and the same lines as here. */
int keep_compare(const struct run *r, uint64_t a, uint64_t b)
{
    keep_run = r;
    return cmp_keep(&a, &b);
}
