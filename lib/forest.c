/*
 * LSH Forest (Bawa, Condie, Ganesan, WWW 2005): top-k neighbours without a
 * threshold, on the prefix-tree engine (forest-engine.c, forest-engine.h). A query
 * descends from the longest prefixes shared with the query signature until
 * enough candidates are found, then ranks them by estimated Jaccard.
 */
#include <stdlib.h>

#include "forest-persist.h"
#include "forest-engine.h"

/* The forest's defaults: datasketch's MinHashLSHForest uses l = 8 too. */
#define FOREST_TREES 8
/* The descent stops after the first level with this many candidates per
 * result wanted: ranking more candidates by their estimate buys recall
 * (docs/tuning.md has the measurements). */
#define FOREST_MULT 4

/* ---- the forest ------------------------------------------------------------------- */

struct simlsh_forest {
    uint32_t tag;                /* SIMLSH__TAG_FOREST (handle.h), before the params' own */
    struct simlsh_params params; /* bands = trees, rows = depth, store = 1 */
    uint64_t sig_fp;
    simlsh__pf_store store;
    simlsh__pf_trees trees;
};

static int forest_create(simlsh_forest **out, const struct simlsh_params *p, uint32_t l,
                         uint32_t depth)
{
    struct simlsh_forest *f = simlsh__calloc(&p->alloc, 1, sizeof *f);
    if (f == NULL)
        return SIMLSH_ENOMEM;
    f->tag = SIMLSH__TAG_FOREST;
    f->params = *p;
    f->params.bands = (int32_t)l;
    f->params.rows = (int32_t)depth;
    f->params.store_signatures = 1;
    f->sig_fp = simlsh__fingerprint(&f->params, SIMLSH_SCOPE_SIGNATURE);
    simlsh__pf_store_init(&f->store, &f->params.alloc, (uint32_t)p->num_perm, 0);
    simlsh__pf_trees_init(&f->trees, l, depth, 0);
    *out = f;
    return 0;
}

int simlsh_forest_new(simlsh_forest **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    uint32_t l, depth;
    int rc = simlsh__pf_shape(params, FOREST_TREES, 0, &l, &depth);
    if (rc < 0)
        return rc;
    return forest_create(out, params, l, depth);
}

void simlsh_forest_free(simlsh_forest *forest)
{
    if (!simlsh__handle_is(forest, SIMLSH__TAG_FOREST))
        return;
    forest->tag = SIMLSH__TAG_DEAD;
    simlsh_allocator a = forest->params.alloc;
    simlsh__pf_trees_free(&forest->trees, &a);
    simlsh__pf_store_free(&forest->store);
    simlsh__free_sized(&a, forest, sizeof *forest);
}

int simlsh_forest_params(simlsh_params **out, const simlsh_forest *forest)
{
    return simlsh__params_export(
        out, simlsh__handle_is(forest, SIMLSH__TAG_FOREST) ? &forest->params : NULL);
}

int simlsh_forest_insert(simlsh_forest *forest, uint64_t id, const simlsh_signature *sig)
{
    SIMLSH__CHECK_FOREST(forest);
    if (forest == NULL)
        return SIMLSH_EINVAL;
    int rc = simlsh__pf_check_sig(sig, forest->sig_fp);
    if (rc < 0)
        return rc;
    if (sig->empty)
        return SIMLSH_EEMPTY;
    if (simlsh__pf_store_find(&forest->store, id) != SIMLSH__PF_NO_SLOT)
        return SIMLSH_EEXIST;
    rc = simlsh__pf_store_reserve(&forest->store, forest->store.count + 1);
    if (rc == 0)
        rc = simlsh__pf_trees_reserve(&forest->trees, &forest->params.alloc, forest->trees.n + 1);
    if (rc < 0)
        return rc;
    uint32_t slot = simlsh__pf_store_put(&forest->store, id, sig->values, 0);
    simlsh__pf_trees_add(&forest->trees, &forest->store, slot);
    return 0;
}

int simlsh_forest_remove(simlsh_forest *forest, uint64_t id)
{
    SIMLSH__CHECK_FOREST(forest);
    if (forest == NULL)
        return SIMLSH_EINVAL;
    uint32_t slot = simlsh__pf_store_find(&forest->store, id);
    if (slot == SIMLSH__PF_NO_SLOT)
        return SIMLSH_ENOTFOUND;
    simlsh__pf_store_kill(&forest->store, slot);
    simlsh__pf_trees_dead(&forest->trees, &forest->store);
    return 0;
}

int simlsh_forest_count(size_t *out, const simlsh_forest *forest)
{
    SIMLSH__CHECK_FOREST(forest);
    if (out == NULL || forest == NULL)
        return SIMLSH_EINVAL;
    *out = forest->store.count;
    return 0;
}

static int row_rank_cmp(const void *x, const void *y)
{
    const simlsh__pf_row *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

int simlsh_forest_query_topk(simlsh_results *res, const simlsh_forest *forest,
                             const simlsh_signature *sig, size_t k)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_FOREST(forest);
    if (res == NULL || forest == NULL || k == 0)
        return SIMLSH_EINVAL;
    int rc = simlsh__pf_check_sig(sig, forest->sig_fp);
    if (rc < 0)
        return rc;
    if (sig->empty)
        return simlsh__pf_fill(res, NULL, 0);
    const simlsh__pf_store *s = &forest->store;
    size_t want = k > SIZE_MAX / FOREST_MULT ? SIZE_MAX : k * FOREST_MULT;
    simlsh__pf_set c;
    simlsh__pf_set_init(&c, &forest->params.alloc);
    rc = simlsh__pf_descend(&forest->trees, s, sig->values, want, &c);
    simlsh__pf_row *rows = NULL;
    if (rc == 0 && c.n > 0) {
        rows = simlsh__malloc(&forest->params.alloc, c.n * sizeof *rows);
        if (rows == NULL)
            rc = SIMLSH_ENOMEM;
    }
    if (rc == 0) {
        /* Exact ranks by the estimate eq / num_perm, ties by id. */
        for (size_t i = 0; i < c.n; i++) {
            uint32_t eq =
                simlsh__pf_count_equal(simlsh__pf_vals(s, c.v[i]), sig->values, s->num_perm);
            rows[i].id = s->ids[c.v[i]];
            rows[i].score = (double)eq / (double)s->num_perm;
        }
        if (c.n > 1)
            qsort(rows, c.n, sizeof *rows, row_rank_cmp);
        rc = simlsh__pf_fill(res, rows, c.n < k ? c.n : k);
    }
    simlsh__free_sized(&forest->params.alloc, rows, c.n * sizeof *rows);
    simlsh__pf_set_free(&c);
    return rc;
}

/* ---- persistence (forest-persist.c, docs/format-forest.md) ------------------------------ */

int simlsh_forest_save(void *buf, size_t cap, size_t *size, const simlsh_forest *forest)
{
    SIMLSH__CHECK_FOREST(forest);
    if (size == NULL || forest == NULL)
        return SIMLSH_EINVAL;
    return simlsh__pf_save(buf, cap, size, SIMLSH__MAGIC_FOREST, &forest->params, &forest->store);
}

int simlsh_forest_load(simlsh_forest **out, const void *buf, size_t len,
                       const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    struct simlsh_params p;
    simlsh__pf_reader rd;
    int rc = simlsh__pf_load_open(&rd, &p, buf, len, alloc, SIMLSH__MAGIC_FOREST, 0);
    if (rc < 0)
        return rc;
    struct simlsh_forest *f;
    rc = forest_create(&f, &p, (uint32_t)p.bands, (uint32_t)p.rows);
    if (rc < 0)
        return rc;
    simlsh__pf_store *s = &f->store;
    rc = simlsh__pf_store_reserve(s, (size_t)rd.count);
    if (rc == 0)
        rc = simlsh__pf_trees_reserve(&f->trees, &f->params.alloc, (size_t)rd.count);
    uint32_t vals[SIMLSH__MAX_PERM];
    uint64_t id, unused;
    /* Rebuilt by inserting in file order: no layout is read from the
     * input, and slots follow the file, so saving again gives the same
     * bytes. */
    while (rc == 0 && (rc = simlsh__pf_load_next(&rd, s, &id, &unused, vals)) > 0) {
        simlsh__pf_trees_add(&f->trees, s, simlsh__pf_store_put(s, id, vals, 0));
        rc = 0;
    }
    if (rc < 0) {
        simlsh_forest_free(f);
        return rc;
    }
    *out = f;
    return 0;
}
