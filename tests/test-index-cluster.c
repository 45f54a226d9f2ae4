/* Whole-index passes: pairs and clustering against brute-force
 * references, and planted duplicates with explicit expectations. */
#include "index-common.h"
#include "testutil.h"

static void test_reference_pairs_cluster(int store, int big)
{
    reference_scenario(store, big, check_pairs_and_cluster);
}

/* Planted duplicates and the a~b~c chain, with explicit expectations. */
static void test_planted(void)
{
    simlsh_params *p = mk_params(NULL, 128, 32, 4, 1);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.65));
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    /* 50 unrelated background documents. */
    simlsh_signature *bg[50];
    for (int i = 0; i < 50; i++) {
        bg[i] = mk_sig(p, 500 + (uint64_t)i, 0, 100);
        CHECK_OK(simlsh_index_insert(ix, 1000 + (uint64_t)i, bg[i]));
    }
    /* Identical twins 7 and 3 (label 3); near copy 5 of 3 (J = 0.96). */
    simlsh_signature *t1 = mk_sig(p, 1, 0, 100), *t2 = mk_sig(p, 1, 0, 100);
    simlsh_signature *near = mk_sig(p, 1, 2, 102);
    CHECK_OK(simlsh_index_insert(ix, 7, t1));
    CHECK_OK(simlsh_index_insert(ix, 3, t2));
    CHECK_OK(simlsh_index_insert(ix, 5, near));
    /* Chain a=20 ~ b=21 ~ c=22: J(a,b) = J(b,c) = 85/115, J(a,c) = 70/130. */
    simlsh_signature *a = mk_sig(p, 2, 0, 100), *b = mk_sig(p, 2, 15, 115);
    simlsh_signature *c = mk_sig(p, 2, 30, 130);
    CHECK_OK(simlsh_index_insert(ix, 22, c));
    CHECK_OK(simlsh_index_insert(ix, 20, a));
    CHECK_OK(simlsh_index_insert(ix, 21, b));
    double jab, jbc, jac;
    CHECK_OK(simlsh_signature_jaccard(&jab, a, b));
    CHECK_OK(simlsh_signature_jaccard(&jbc, b, c));
    CHECK_OK(simlsh_signature_jaccard(&jac, a, c));
    CHECK(jab >= 0.65 && jbc >= 0.65 && jac < 0.65);

    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    uint64_t ids[16];
    size_t n;
    CHECK_OK(simlsh_index_query_ids(ids, 16, &n, ix, t1, SIMLSH_QUERY_VERIFY));
    CHECK(n == 3 && ids[0] == 3 && ids[1] == 5 && ids[2] == 7);
    CHECK_OK(simlsh_index_query(res, ix, t1, 0));
    double s;
    CHECK_OK(simlsh_results_row(res, 0, NULL, NULL, &s));
    CHECK(s == 1.0); /* twin: identical signature */
    CHECK_OK(simlsh_index_query_ids(ids, 16, &n, ix, a, SIMLSH_QUERY_VERIFY));
    CHECK(n == 2 && ids[0] == 20 && ids[1] == 21);

    for (int verify = 0; verify <= 1; verify++) {
        CHECK_OK(simlsh_index_cluster(res, ix, verify ? SIMLSH_QUERY_VERIFY : 0));
        CHECK(simlsh_results_count(res) == 56);
        const uint64_t *ca = simlsh_results_a(res), *cb = simlsh_results_b(res);
        for (size_t i = 0; i < simlsh_results_count(res); i++) {
            if (ca[i] == 3 || ca[i] == 5 || ca[i] == 7)
                CHECK(cb[i] == 3);
            else if (ca[i] >= 20 && ca[i] <= 22)
                CHECK(cb[i] == 20); /* the chain holds with and without verify */
            else
                CHECK(cb[i] == ca[i]);
        }
    }
    /* Pairs with verify: {3,5},{3,7},{5,7},{20,21},{21,22}. */
    CHECK_OK(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 0));
    CHECK(simlsh_results_count(res) == 5);
    static const uint64_t want[5][2] = {{3, 5}, {3, 7}, {5, 7}, {20, 21}, {21, 22}};
    for (size_t i = 0; i < 5 && i < simlsh_results_count(res); i++) {
        uint64_t x, y;
        CHECK_OK(simlsh_results_row(res, i, &x, &y, &s));
        CHECK(x == want[i][0] && y == want[i][1] && s >= 0.65);
    }
    CHECK_OK(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 2));
    CHECK(simlsh_results_count(res) == 2 && simlsh_results_truncated(res) == 1);
    CHECK_OK(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 5));
    CHECK(simlsh_results_count(res) == 5 && simlsh_results_truncated(res) == 0);

    /* Many identical documents: one bucket per band, one cluster. */
    simlsh_index_clear(ix);
    for (uint64_t i = 0; i < 300; i++)
        CHECK_OK(simlsh_index_insert(ix, 300 - i, t1));
    CHECK_OK(simlsh_index_cluster(res, ix, SIMLSH_QUERY_VERIFY));
    CHECK(simlsh_results_count(res) == 300);
    bool all1 = true;
    for (size_t i = 0; i < 300; i++)
        all1 = all1 && simlsh_results_b(res)[i] == 1 && simlsh_results_a(res)[i] == i + 1;
    CHECK(all1);
    CHECK_OK(simlsh_index_pairs(res, ix, 0, 0));
    CHECK(simlsh_results_count(res) == 300 * 299 / 2);
    for (uint64_t i = 1; i <= 300; i += 2)
        CHECK_OK(simlsh_index_remove(ix, i));
    CHECK_OK(simlsh_index_query_ids(NULL, 0, &n, ix, t1, 0));
    CHECK(n == 150);
    /* Empty the lists entirely (they are released), then fill them again
     * (their records and the freed slots are reused). */
    size_t mem_full, mem_empty, mem_again;
    CHECK_OK(simlsh_index_memory(&mem_full, NULL, ix));
    for (uint64_t i = 2; i <= 300; i += 2)
        CHECK_OK(simlsh_index_remove(ix, i));
    CHECK_OK(simlsh_index_count(&n, ix));
    CHECK(n == 0);
    CHECK_OK(simlsh_index_memory(&mem_empty, NULL, ix));
    CHECK(mem_empty < mem_full);
    CHECK_OK(simlsh_index_query_ids(NULL, 0, &n, ix, t1, 0));
    CHECK(n == 0);
    for (uint64_t i = 0; i < 40; i++)
        CHECK_OK(simlsh_index_insert(ix, 1000 + i, i % 2 ? t1 : t2));
    CHECK_OK(simlsh_index_insert(ix, 5000, near));
    CHECK_OK(simlsh_index_memory(&mem_again, NULL, ix));
    CHECK(mem_again <= mem_full);
    CHECK_OK(simlsh_index_query_ids(NULL, 0, &n, ix, t1, 0));
    CHECK(n == 41);
    CHECK_OK(simlsh_index_cluster(res, ix, 0));
    CHECK(simlsh_results_count(res) == 41);
    bool one = true;
    for (size_t i = 0; i < simlsh_results_count(res); i++)
        one = one && simlsh_results_b(res)[i] == 1000;
    CHECK(one);
    CHECK_OK(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 0));
    CHECK(simlsh_results_count(res) == 41 * 40 / 2);

    simlsh_results_free(res);
    for (int i = 0; i < 50; i++)
        simlsh_signature_free(bg[i]);
    simlsh_signature_free(t1);
    simlsh_signature_free(t2);
    simlsh_signature_free(near);
    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_signature_free(c);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

int main(void)
{
    test_reference_pairs_cluster(1, 0);
    test_reference_pairs_cluster(0, 0);
    test_reference_pairs_cluster(1, 1);
    test_reference_pairs_cluster(0, 1);
    test_planted();
    return tu_finish("index-cluster");
}
