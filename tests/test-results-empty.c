/*
 * Result columns are never NULL (issue 16, item 4): simlsh_results_a/b/
 * scores give a pointer that a slice of simlsh_results_count() entries can
 * be made from even when that count is 0, because Rust's
 * slice::from_raw_parts and koffi's decode refuse NULL. Checked on a fresh
 * results object, after every kind of fill that finds nothing (a query
 * without hits, a batch of no queries, pairs and clusters of a cleared
 * index, a forest top-k and an ensemble query of an empty signature, the
 * grouping calls on no pairs), after fills that shrink a full object back
 * to no rows, and for NULL or a handle of another type.
 */
#include "testutil.h"

static const char *const DOCS[] = {
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "The quick brown fox jumps over the lazy dog near the river bend.",
    "An entirely different sentence about lattices, groups and rings.",
};

static void empty_columns(const simlsh_results *res, const char *what)
{
    if (simlsh_results_count(res) != 0 || simlsh_results_a(res) == NULL ||
        simlsh_results_b(res) == NULL || simlsh_results_scores(res) == NULL) {
        fprintf(stderr, "after %s: %zu rows, columns %p %p %p\n", what, simlsh_results_count(res),
                (const void *)simlsh_results_a(res), (const void *)simlsh_results_b(res),
                (const void *)simlsh_results_scores(res));
        CHECK(0);
        return;
    }
    CHECK(1);
    /* Empty means no query rows either. */
    size_t off = 99;
    CHECK_OK(simlsh_results_offset(&off, res, 0));
    CHECK(off == 0);
}

static simlsh_signature *sign(const simlsh_params *p, const char *text)
{
    simlsh_signature *g = NULL;
    CHECK_OK(simlsh_signature_new(&g, p));
    if (text != NULL)
        CHECK_OK(simlsh_signature_add_text(g, text, strlen(text)));
    return g;
}

static void test_index_fills(void)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, 1));
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    empty_columns(res, "simlsh_results_new");

    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    simlsh_signature *g[3];
    for (int i = 0; i < 3; i++)
        g[i] = sign(p, DOCS[i]);
    CHECK_OK(simlsh_index_insert(ix, 1, g[0]));
    CHECK_OK(simlsh_index_insert(ix, 2, g[1]));

    /* An empty index: a query without hits on a never-filled object. */
    simlsh_index *none = NULL;
    CHECK_OK(simlsh_index_new(&none, p));
    CHECK_OK(simlsh_index_query(res, none, g[0], 0));
    empty_columns(res, "a query of an empty index");

    /* Full, then a query with no hits: the columns stay valid. */
    CHECK_OK(simlsh_index_query(res, ix, g[0], 0));
    CHECK(simlsh_results_count(res) >= 1);
    CHECK_OK(simlsh_index_query(res, ix, g[2], SIMLSH_QUERY_VERIFY));
    empty_columns(res, "a query without hits");

    CHECK_OK(simlsh_index_query_batch(res, ix, NULL, 0, 0));
    empty_columns(res, "a batch of no queries");

    CHECK_OK(simlsh_index_pairs(res, ix, 0, 0));
    CHECK(simlsh_results_count(res) == 1);
    CHECK_OK(simlsh_index_clear(ix));
    CHECK_OK(simlsh_index_pairs(res, ix, 0, 0));
    empty_columns(res, "pairs of a cleared index");
    CHECK_OK(simlsh_index_pairs_v2(res, ix, SIMLSH_QUERY_VERIFY, 0, 0.5, 2));
    empty_columns(res, "threaded pairs of a cleared index");
    CHECK_OK(simlsh_index_cluster(res, ix, 0));
    empty_columns(res, "clusters of a cleared index");
    CHECK_OK(simlsh_index_cluster_v2(res, ix, 0, 0.0, 2));
    empty_columns(res, "threaded clusters of a cleared index");

    /* Pairs and clusters on a fresh object (the builder path, which swaps
     * columns in: with no rows there are none to swap). */
    simlsh_results *fresh = NULL;
    CHECK_OK(simlsh_results_new(&fresh, NULL));
    CHECK_OK(simlsh_index_pairs(fresh, none, 0, 0));
    empty_columns(fresh, "pairs of an empty index into fresh results");
    CHECK_OK(simlsh_index_cluster(fresh, none, 0));
    empty_columns(fresh, "clusters of an empty index into fresh results");
    simlsh_results_free(fresh);

    for (int i = 0; i < 3; i++)
        simlsh_signature_free(g[i]);
    simlsh_index_free(none);
    simlsh_index_free(ix);
    simlsh_results_free(res);
    simlsh_params_free(p);
}

static void test_forest_ensemble_group(void)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    simlsh_signature *empty = sign(p, NULL), *g = sign(p, DOCS[0]);

    simlsh_forest *f = NULL;
    CHECK_OK(simlsh_forest_new(&f, p));
    CHECK_OK(simlsh_forest_query_topk(res, f, g, 3));
    empty_columns(res, "a top-k query of an empty forest");
    CHECK_OK(simlsh_forest_insert(f, 1, g));
    CHECK_OK(simlsh_forest_query_topk(res, f, g, 3));
    CHECK(simlsh_results_count(res) == 1);
    CHECK_OK(simlsh_forest_query_topk(res, f, empty, 3));
    empty_columns(res, "a top-k query of an empty signature");

    simlsh_ensemble *e = NULL;
    CHECK_OK(simlsh_ensemble_new(&e, p));
    CHECK_OK(simlsh_ensemble_query(res, e, g, 10, 0.5, 0));
    empty_columns(res, "an ensemble query of an empty ensemble");

    size_t ng = 99;
    CHECK_OK(simlsh_group_components(res, &ng, NULL, NULL, 0));
    CHECK(ng == 0);
    empty_columns(res, "components of no pairs");
    CHECK_OK(simlsh_group_star(res, &ng, NULL, NULL, NULL, 0, NULL, 0));
    empty_columns(res, "star groups of no pairs");
    CHECK_OK(simlsh_group_batches(res, &ng, NULL, NULL, NULL, 0, 0));
    empty_columns(res, "batches of no pairs");

    simlsh_ensemble_free(e);
    simlsh_forest_free(f);
    simlsh_signature_free(g);
    simlsh_signature_free(empty);
    simlsh_results_free(res);
    simlsh_params_free(p);
}

static void test_bad_handles(void)
{
    /* Not results: count 0 and empty columns, so a binding that forgot a
     * check still makes a valid empty slice. */
    CHECK(simlsh_results_count(NULL) == 0);
    CHECK(simlsh_results_a(NULL) != NULL && simlsh_results_b(NULL) != NULL &&
          simlsh_results_scores(NULL) != NULL);
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    const simlsh_results *notres = (const simlsh_results *)(const void *)p;
    CHECK(simlsh_results_count(notres) == 0);
    CHECK(simlsh_results_a(notres) != NULL && (const void *)simlsh_results_a(notres) != p);
    CHECK(simlsh_results_scores(notres) != NULL);
    simlsh_params_free(p);
}

int main(void)
{
    test_index_fills();
    test_forest_ensemble_group();
    test_bad_handles();
    return tu_finish("results-empty");
}
