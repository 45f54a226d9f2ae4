/* simlsh_index_query_values(): a batch of queries from a values matrix
 * with a row stride gives the rows of simlsh_index_query_batch_v2() on the
 * signatures made from those rows (the reference corpus is checked in
 * index-common.h's check_queries, through test-index-query); here: strides,
 * the empty mark, the per-call threshold, n = 0, and every bad argument,
 * which leaves the results as they were. */
#include "index-common.h"
#include "testutil.h"

#define NP 64
#define NQ 40

static void check_unchanged(const simlsh_results *res, const simlsh_results *before)
{
    CHECK(results_equal(res, before, NQ));
}

int main(void)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, NP, 16, 4, 1);
    CHECK(p != NULL);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 200, 11, 0);
    simlsh_index *ix = corpus_index(&c, p);
    simlsh_results *res = NULL, *want = NULL, *before = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_results_new(&before, NULL));

    /* NQ queries: corpus rows, with query 3 the empty mark; laid out at
     * strides NP (dense), NP + 3 and 3 NP. */
    static uint32_t m[NQ * 3 * NP];
    const simlsh_signature *sigs[NQ];
    simlsh_signature *empty = NULL;
    CHECK_OK(simlsh_signature_new(&empty, p));
    size_t strides[3] = {NP, NP + 3, 3 * NP};
    for (int verify = 0; verify <= 1; verify++) {
        int flags = verify ? SIMLSH_QUERY_VERIFY : 0;
        for (size_t s = 0; s < 3; s++) {
            size_t st = strides[s];
            memset(m, 0xAB, sizeof m); /* the gaps between rows are junk */
            for (size_t q = 0; q < NQ; q++) {
                size_t doc = (q * 7) % c.n;
                sigs[q] = q == 3 ? empty : c.sig[doc];
                if (q == 3)
                    memset(m + q * st, 0xFF, NP * sizeof *m);
                else
                    memcpy(m + q * st, c.val[doc], NP * sizeof *m);
            }
            /* threshold 0 stands for the params' one */
            CHECK_OK(simlsh_index_query_batch(want, ix, sigs, NQ, flags));
            CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, st, flags, 0.0));
            CHECK(results_equal(res, want, NQ));
            size_t lo, hi;
            CHECK_OK(simlsh_results_offset(&lo, res, 3));
            CHECK_OK(simlsh_results_offset(&hi, res, 4));
            CHECK(lo == hi); /* the empty query found nothing */
            CHECK(simlsh_results_count(res) > NQ / 2);
            /* a threshold of this call */
            CHECK_OK(simlsh_index_query_batch_v2(want, ix, sigs, NQ, flags, 0.9));
            CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, st, flags, 0.9));
            CHECK(results_equal(res, want, NQ));
        }
    }
    /* with verify, a higher threshold keeps fewer rows: it was applied */
    size_t n5, n9;
    CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, 3 * NP, SIMLSH_QUERY_VERIFY, 0.5));
    n5 = simlsh_results_count(res);
    CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, 3 * NP, SIMLSH_QUERY_VERIFY, 0.99));
    n9 = simlsh_results_count(res);
    CHECK(n9 < n5);

    /* n = 0: no rows, no queries, values may be NULL. */
    CHECK_OK(simlsh_index_query_values(res, ix, NULL, 0, NP, NP, 0, 0.0));
    CHECK(simlsh_results_count(res) == 0);
    size_t off;
    CHECK_OK(simlsh_results_offset(&off, res, 0));
    CHECK(off == 0);
    CHECK_RC(simlsh_results_offset(&off, res, 1), SIMLSH_EINVAL);

    /* Bad arguments: a clear code, and the previous rows stay. */
    for (size_t q = 0; q < NQ; q++)
        memcpy(m + q * NP, c.val[q], NP * sizeof *m);
    CHECK_OK(simlsh_index_query_values(before, ix, m, NQ, NP, NP, 0, 0.0));
    CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, NP, 0, 0.0));
    CHECK(simlsh_results_count(res) > 0);
    check_unchanged(res, before);
    CHECK_RC(simlsh_index_query_values(NULL, ix, m, NQ, NP, NP, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, NULL, m, NQ, NP, NP, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, ix, NULL, NQ, NP, NP, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, NP, 4, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP - 1, NP, 0, 0.0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP + 1, NP + 1, 0, 0.0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, 0, 0, 0, 0.0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, NP - 1, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, 0, 0, 0.0), SIMLSH_EINVAL);
    /* a matrix beyond the address space */
    CHECK_RC(simlsh_index_query_values(res, ix, m, 3, NP, SIZE_MAX / 2, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, ix, m, SIZE_MAX / NP, NP, NP, 0, 0.0), SIMLSH_EINVAL);
    double bad_thr[4] = {-0.5, 1.5, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, NP, 0, bad_thr[i]), SIMLSH_EINVAL);
        CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, NP, SIMLSH_QUERY_VERIFY, bad_thr[i]),
                 SIMLSH_EINVAL);
    }
    /* a row with the empty mark in some entries only, even the last row */
    m[(NQ - 1) * NP + 5] = 0xFFFFFFFFu;
    CHECK_RC(simlsh_index_query_values(res, ix, m, NQ, NP, NP, 0, 0.0), SIMLSH_EINVAL);
    check_unchanged(res, before);
    CHECK_OK(simlsh_index_query_values(res, ix, m, NQ - 1, NP, NP, 0, 0.0));
    CHECK(!results_equal(res, before, NQ - 1));
    m[(NQ - 1) * NP + 5] = c.val[NQ - 1][5];
    CHECK_OK(simlsh_index_query_values(res, ix, m, NQ, NP, NP, 0, 0.0));
    check_unchanged(res, before);

    /* verify without stored signatures */
    simlsh_params *pn = mk_params(NULL, NP, 16, 4, 0);
    simlsh_index *ixn = NULL;
    CHECK_OK(simlsh_index_new(&ixn, pn));
    CHECK_OK(simlsh_index_insert(ixn, 1, c.sig[0]));
    CHECK_RC(simlsh_index_query_values(res, ixn, m, NQ, NP, NP, SIMLSH_QUERY_VERIFY, 0.0),
             SIMLSH_EUNSUPPORTED);
    check_unchanged(res, before);
    CHECK_OK(simlsh_index_query_values(res, ixn, m, 1, NP, NP, 0, 0.0));
    CHECK(simlsh_results_count(res) == 1 && simlsh_results_a(res)[0] == 1);

    /* handles of the wrong type in either position */
    CHECK_RC(simlsh_index_query_values((simlsh_results *)(void *)ix, ix, m, 1, NP, NP, 0, 0.0),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(res, (simlsh_index *)(void *)res, m, 1, NP, NP, 0, 0.0),
             SIMLSH_EINVAL);

    simlsh_index_free(ixn);
    simlsh_params_free(pn);
    simlsh_signature_free(empty);
    simlsh_results_free(res);
    simlsh_results_free(want);
    simlsh_results_free(before);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
    return tu_finish("index-query-values");
}
