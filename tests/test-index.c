/* The LSH index and results objects: lifecycle, parameters, insertion
 * errors (a failed call changes nothing) and memory accounting. The other
 * concerns have their own tests/test-index-*.c. */
#include "index-common.h"
#include "testutil.h"

static void test_results_api(void)
{
    simlsh_results *res = NULL;
    CHECK_RC(simlsh_results_new(NULL, NULL), SIMLSH_EINVAL);
    simlsh_allocator half = {tu_alloc_fn, NULL, NULL};
    CHECK_RC(simlsh_results_new(&res, &half), SIMLSH_EINVAL);
    CHECK(res == NULL);
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK(simlsh_results_count(res) == 0);
    CHECK(simlsh_results_count(NULL) == 0);
    /* Columns are never NULL (tests/test-results-empty.c has the rest). */
    CHECK(simlsh_results_a(res) != NULL);
    CHECK(simlsh_results_b(res) != NULL);
    CHECK(simlsh_results_scores(res) != NULL);
    CHECK(simlsh_results_a(NULL) != NULL);
    CHECK(simlsh_results_truncated(res) == 0);
    CHECK_RC(simlsh_results_truncated(NULL), SIMLSH_EINVAL);
    uint64_t a;
    CHECK_RC(simlsh_results_row(res, 0, &a, NULL, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_results_row(NULL, 0, &a, NULL, NULL), SIMLSH_EINVAL);
    size_t off = 99;
    CHECK_OK(simlsh_results_offset(&off, res, 0));
    CHECK(off == 0);
    CHECK_RC(simlsh_results_offset(&off, res, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_results_offset(NULL, res, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_results_offset(&off, NULL, 0), SIMLSH_EINVAL);
    simlsh_results_free(res);
    simlsh_results_free(NULL);
}

static void test_new_and_params(void)
{
    simlsh_index *ix = NULL;
    simlsh_params *p = mk_params(NULL, 64, 8, 8, 1);
    CHECK_RC(simlsh_index_new(NULL, p), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_new(&ix, NULL), SIMLSH_EINVAL);
    CHECK(ix == NULL);
    CHECK_OK(simlsh_index_new(&ix, p));
    uint32_t b = 0, r = 0;
    CHECK_OK(simlsh_index_bands(&b, &r, ix));
    CHECK(b == 8 && r == 8);
    CHECK_RC(simlsh_index_bands(NULL, &r, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_bands(&b, NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_bands(&b, &r, NULL), SIMLSH_EINVAL);
    uint64_t f1, f2;
    CHECK_OK(simlsh_index_fingerprint(&f1, ix));
    CHECK_OK(simlsh_params_fingerprint(&f2, p, SIMLSH_SCOPE_INDEX));
    CHECK(f1 == f2);
    CHECK_RC(simlsh_index_fingerprint(NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_fingerprint(&f1, NULL), SIMLSH_EINVAL);
    size_t n = 7;
    CHECK_OK(simlsh_index_count(&n, ix));
    CHECK(n == 0);
    CHECK_RC(simlsh_index_count(NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_count(&n, NULL), SIMLSH_EINVAL);
    CHECK(simlsh_index_contains(ix, 1) == 0);
    CHECK_RC(simlsh_index_contains(NULL, 1), SIMLSH_EINVAL);
    size_t tot, tabs;
    CHECK_OK(simlsh_index_memory(&tot, &tabs, ix));
    CHECK(tot >= tabs);
    CHECK_OK(simlsh_index_memory(&tot, NULL, ix));
    CHECK_RC(simlsh_index_memory(NULL, &tabs, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_memory(&tot, &tabs, NULL), SIMLSH_EINVAL);
    simlsh_index_free(ix);
    simlsh_index_free(NULL);

    /* b * r > num_perm; one of b, r zero. */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 9));
    ix = (simlsh_index *)p; /* must be reset to NULL */
    CHECK_RC(simlsh_index_new(&ix, p), SIMLSH_EINVAL);
    CHECK(ix == NULL);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 0));
    CHECK_RC(simlsh_index_new(&ix, p), SIMLSH_EINVAL);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 4));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 0));
    CHECK_RC(simlsh_index_new(&ix, p), SIMLSH_EINVAL);

    /* Both 0: the optimiser picks. */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 0));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    CHECK_OK(simlsh_index_new(&ix, p));
    uint32_t ob, orr, un;
    CHECK_OK(simlsh_lsh_optimal_params(&ob, &orr, &un, 64, 0.5, 0.5, 0.5));
    CHECK_OK(simlsh_index_bands(&b, &r, ix));
    CHECK(b == ob && r == orr);
    CHECK_OK(simlsh_index_fingerprint(&f1, ix));
    CHECK_OK(simlsh_params_fingerprint(&f2, p, SIMLSH_SCOPE_INDEX));
    CHECK(f1 == f2);

    /* The index's params: bands and rows resolved, same fingerprints. */
    simlsh_params *ip = (simlsh_params *)ix; /* must be reset */
    CHECK_RC(simlsh_index_params(&ip, NULL), SIMLSH_EINVAL);
    CHECK(ip == NULL);
    CHECK_RC(simlsh_index_params(NULL, ix), SIMLSH_EINVAL);
    CHECK_OK(simlsh_index_params(&ip, ix));
    int64_t vb, vr;
    CHECK_OK(simlsh_params_get_int(ip, SIMLSH_PARAM_BANDS, &vb));
    CHECK_OK(simlsh_params_get_int(ip, SIMLSH_PARAM_ROWS, &vr));
    CHECK(vb == ob && vr == orr);
    CHECK_OK(simlsh_params_fingerprint(&f2, ip, SIMLSH_SCOPE_INDEX));
    CHECK(f1 == f2);
    simlsh_index *ix2 = NULL;
    CHECK_OK(simlsh_index_new(&ix2, ip));
    CHECK_OK(simlsh_index_fingerprint(&f2, ix2));
    CHECK(f1 == f2);
    simlsh_index_free(ix2);
    simlsh_params_free(ip);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

/* Snapshot of observable state, to prove failed calls change nothing. */
typedef struct {
    size_t count, mem, tabs;
    size_t nres;
    uint64_t ids[64];
} snap;

static void take_snap(snap *s, const simlsh_index *ix, const simlsh_signature *probe)
{
    memset(s, 0, sizeof *s);
    simlsh_index_count(&s->count, ix);
    simlsh_index_memory(&s->mem, &s->tabs, ix);
    simlsh_index_query_ids(s->ids, 64, &s->nres, ix, probe, 0);
}

static bool same_snap(const snap *a, const snap *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static void test_insert_errors(void)
{
    simlsh_params *p = mk_params(NULL, 64, 16, 4, 1);
    simlsh_params *q = mk_params(NULL, 64, 16, 4, 1);
    CHECK_OK(simlsh_params_set_int(q, SIMLSH_PARAM_SEED, 99));
    simlsh_params *q2 = mk_params(NULL, 32, 16, 2, 1);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    simlsh_signature *s1 = mk_sig(p, 1, 0, 80), *s2 = mk_sig(p, 1, 5, 85);
    simlsh_signature *other = mk_sig(q, 1, 0, 80), *other2 = mk_sig(q2, 1, 0, 80);
    simlsh_signature *empty = NULL, *streaming = mk_sig(p, 2, 0, 50);
    CHECK_OK(simlsh_signature_new(&empty, p));
    CHECK_OK(simlsh_index_insert(ix, 10, s1));
    CHECK_OK(simlsh_index_insert(ix, 20, s2));
    CHECK_OK(simlsh_signature_begin(streaming));

    snap before, after;
    take_snap(&before, ix, s1);
    CHECK(before.count == 2 && before.nres == 2);
    CHECK_RC(simlsh_index_insert(NULL, 30, s1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert(ix, 30, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert(ix, 30, other), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_insert(ix, 30, other2), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_insert(ix, 10, s2), SIMLSH_EEXIST);
    CHECK_RC(simlsh_index_insert(ix, 30, empty), SIMLSH_EEMPTY);
    CHECK_RC(simlsh_index_insert(ix, 30, streaming), SIMLSH_ESTATE);
    take_snap(&after, ix, s1);
    CHECK(same_snap(&before, &after));
    CHECK(simlsh_index_contains(ix, 30) == 0);

    /* Query errors. */
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_index_query(res, ix, s1, 0));
    CHECK(simlsh_results_count(res) == 2);
    CHECK_RC(simlsh_index_query(NULL, ix, s1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(res, NULL, s1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(res, ix, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(res, ix, s1, 4), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(res, ix, other, 0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query(res, ix, streaming, 0), SIMLSH_ESTATE);
    CHECK(simlsh_results_count(res) == 2); /* failed calls keep the rows */
    CHECK_OK(simlsh_index_query(res, ix, empty, 0));
    CHECK(simlsh_results_count(res) == 0);
    size_t off;
    CHECK_OK(simlsh_results_offset(&off, res, 1));
    CHECK(off == 0);

    uint64_t ids[4];
    size_t cnt = 0;
    CHECK_RC(simlsh_index_query_ids(ids, 1, &cnt, ix, s1, 0), SIMLSH_EBUFSIZE);
    CHECK(cnt == 2);
    CHECK_OK(simlsh_index_query_ids(ids, 2, &cnt, ix, s1, 0));
    CHECK(cnt == 2 && ids[0] == 10 && ids[1] == 20);
    CHECK_RC(simlsh_index_query_ids(ids, 4, NULL, ix, s1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_ids(ids, 4, &cnt, NULL, s1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_ids(ids, 4, &cnt, ix, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_ids(ids, 4, &cnt, ix, other, 0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query_ids(ids, 4, &cnt, ix, streaming, 0), SIMLSH_ESTATE);
    CHECK_RC(simlsh_index_query_ids(ids, 4, &cnt, ix, s1, -1), SIMLSH_EINVAL);
    CHECK_OK(simlsh_index_query_ids(ids, 4, &cnt, ix, empty, 0));
    CHECK(cnt == 0);

    const simlsh_signature *batch[3] = {s1, empty, s2};
    CHECK_OK(simlsh_index_query_batch(res, ix, batch, 3, 0));
    CHECK(simlsh_results_count(res) == 4);
    CHECK_OK(simlsh_results_offset(&off, res, 1));
    CHECK(off == 2);
    CHECK_OK(simlsh_results_offset(&off, res, 2));
    CHECK(off == 2);
    CHECK_OK(simlsh_results_offset(&off, res, 3));
    CHECK(off == 4);
    CHECK_RC(simlsh_results_offset(&off, res, 4), SIMLSH_EINVAL);
    const simlsh_signature *bad1[2] = {s1, NULL};
    const simlsh_signature *bad2[2] = {s1, other};
    const simlsh_signature *bad3[2] = {streaming, s1};
    CHECK_RC(simlsh_index_query_batch(res, ix, bad1, 2, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(res, ix, bad2, 2, 0), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_index_query_batch(res, ix, bad3, 2, 0), SIMLSH_ESTATE);
    CHECK_RC(simlsh_index_query_batch(res, ix, NULL, 2, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(NULL, ix, batch, 3, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(res, NULL, batch, 3, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(res, ix, batch, 3, 2), SIMLSH_EINVAL);
    CHECK(simlsh_results_count(res) == 4);
    CHECK_OK(simlsh_index_query_batch(res, ix, NULL, 0, 0));
    CHECK(simlsh_results_count(res) == 0);
    CHECK_OK(simlsh_results_offset(&off, res, 0));
    CHECK(off == 0);

    CHECK_RC(simlsh_index_pairs(NULL, ix, 0, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs(res, NULL, 0, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs(res, ix, 8, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster(NULL, ix, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster(res, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster(res, ix, 8), SIMLSH_EINVAL);

    CHECK_OK(simlsh_signature_abort(streaming));
    simlsh_results_free(res);
    simlsh_signature_free(s1);
    simlsh_signature_free(s2);
    simlsh_signature_free(other);
    simlsh_signature_free(other2);
    simlsh_signature_free(empty);
    simlsh_signature_free(streaming);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    simlsh_params_free(q);
    simlsh_params_free(q2);
}

static void test_memory_reserve(void)
{
    simlsh_params *p = mk_params(NULL, 32, 8, 4, 1);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_RC(simlsh_index_reserve(NULL, 10), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_reserve(ix, (size_t)1 << 40), SIMLSH_ENOMEM);
    CHECK_OK(simlsh_index_reserve(ix, 5000));
    size_t m0, t0, m1, t1;
    CHECK_OK(simlsh_index_memory(&m0, &t0, ix));
    CHECK(t0 <= (size_t)12 * 5000 * 8 + 8 * 64); /* 8 B entries at load 2/3 */
    simlsh_signature *s = NULL;
    CHECK_OK(simlsh_signature_new(&s, p));
    bool ok = true;
    double worst = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t f[3] = {i, i * 7 + 1, i * 13 + 2};
        simlsh_signature_clear(s);
        simlsh_signature_add_features(s, f, 3);
        ok = ok && simlsh_index_insert(ix, i, s) == 0;
    }
    CHECK(ok);
    CHECK_OK(simlsh_index_memory(&m1, &t1, ix));
    CHECK(m1 == m0 && t1 == t0);            /* reserved: no growth */
    CHECK_OK(simlsh_index_reserve(ix, 10)); /* smaller than count: no-op */
    CHECK_OK(simlsh_index_memory(&m1, &t1, ix));
    CHECK(m1 == m0);

    /* Without reserve, growth keeps band tables <= 16 B per doc per band
     * at every size from 100 up. */
    simlsh_index_free(ix);
    CHECK_OK(simlsh_index_new(&ix, p));
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t f[3] = {i, i * 7 + 1, i * 13 + 2};
        simlsh_signature_clear(s);
        simlsh_signature_add_features(s, f, 3);
        CHECK_OK(simlsh_index_insert(ix, i * 1000003, s));
        if (i >= 99) {
            CHECK_OK(simlsh_index_memory(&m1, &t1, ix));
            double per = (double)t1 / (double)(i + 1) / 8;
            if (per > worst)
                worst = per;
        }
    }
    CHECK(worst <= 16.0);
    printf("index: worst band-table bytes per doc per band while growing: %.2f\n", worst);
    simlsh_signature_free(s);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

int main(void)
{
    test_results_api();
    test_new_and_params();
    test_insert_errors();
    test_memory_reserve();
    return tu_finish("index");
}
