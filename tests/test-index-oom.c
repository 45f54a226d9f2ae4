/* Every allocating index call under allocation failure: ENOMEM, nothing
 * leaked, and the objects as they were. */
#include "index-common.h"
#include "testutil.h"

#define OOM_DOCS 40

/* One pass over every allocating call; returns 0 if nothing failed, else
 * the first failing code (which must be ENOMEM). Frees everything. */
static int oom_pass(tu_alloc_state *st, const char *path, int *bad)
{
    simlsh_allocator al = tu_allocator(st);
    simlsh_params *p = NULL;
    simlsh_index *ix = NULL, *ld = NULL;
    simlsh_results *res = NULL;
    simlsh_signature *sig[OOM_DOCS] = {0};
    uint8_t *buf = NULL;
    int rc;
#define STEP(expr)                                                                 \
    do {                                                                           \
        rc = (expr);                                                               \
        if (rc != 0) {                                                             \
            if (rc != SIMLSH_ENOMEM) {                                             \
                (*bad)++;                                                          \
                fprintf(stderr, "oom fail_at=%ld: %s -> %s\n", st->fail_at, #expr, \
                        simlsh_error_name(rc));                                    \
            }                                                                      \
            goto out;                                                              \
        }                                                                          \
    } while (0)

    STEP(simlsh_params_new(&p, &al));
    STEP(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 32));
    STEP(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5)); /* auto (b, r) */
    STEP(simlsh_index_new(&ix, p));
    STEP(simlsh_results_new(&res, &al));
    for (int i = 0; i < OOM_DOCS; i++) {
        STEP(simlsh_signature_new(&sig[i], p));
        /* Pairs of near copies, and 14 identical documents whose buckets
         * outgrow the inline entries. */
        uint64_t f[40];
        uint64_t stream = i < 14 ? 777 : (uint64_t)i / 2;
        for (int k = 0; k < 40; k++)
            f[k] = feat(stream, (uint64_t)k + (i < 14 ? 0 : (uint64_t)(i % 2)));
        STEP(simlsh_signature_add_features(sig[i], f, 40));
    }
    for (int i = 0; i < OOM_DOCS; i++) {
        size_t c0, c1, m0, m1;
        simlsh_index_count(&c0, ix);
        simlsh_index_memory(&m0, NULL, ix);
        rc = simlsh_index_insert(ix, (uint64_t)i * 3, sig[i]);
        if (rc != 0) {
            /* A failed insert leaves the index exactly as it was. */
            simlsh_index_count(&c1, ix);
            simlsh_index_memory(&m1, NULL, ix);
            if (c1 != c0 || m1 != m0 || simlsh_index_contains(ix, (uint64_t)i * 3) != 0)
                (*bad)++;
        }
        STEP(rc);
    }
    STEP(simlsh_index_query(res, ix, sig[0], SIMLSH_QUERY_VERIFY));
    size_t before = simlsh_results_count(res);
    rc = simlsh_index_query_batch(res, ix, (const simlsh_signature *const *)sig, OOM_DOCS, 0);
    if (rc != 0 && simlsh_results_count(res) != before)
        (*bad)++; /* failed fills keep the previous rows */
    STEP(rc);
    static uint32_t vals[OOM_DOCS][32];
    for (int i = 0; i < OOM_DOCS; i++) {
        size_t nv;
        STEP(simlsh_signature_values(vals[i], 32, &nv, sig[i]));
    }
    before = simlsh_results_count(res);
    rc = simlsh_index_query_values(res, ix, vals[0], OOM_DOCS, 32, 32, SIMLSH_QUERY_VERIFY, 0.0);
    if (rc != 0 && simlsh_results_count(res) != before)
        (*bad)++;
    STEP(rc);
    uint64_t ids[OOM_DOCS];
    size_t n;
    STEP(simlsh_index_query_ids(ids, OOM_DOCS, &n, ix, sig[1], 0));
    STEP(simlsh_index_pairs(res, ix, 0, 0));
    STEP(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 3));
    STEP(simlsh_index_cluster(res, ix, 0));
    STEP(simlsh_index_cluster(res, ix, SIMLSH_QUERY_VERIFY));
    STEP(simlsh_index_remove(ix, 0));
    STEP(simlsh_index_remove(ix, 3)); /* from a list */
    STEP(simlsh_index_reserve(ix, 200));
    size_t sz;
    STEP(simlsh_index_save(NULL, 0, &sz, ix));
    buf = malloc(sz);
    STEP(simlsh_index_save(buf, sz, &sz, ix));
    STEP(simlsh_index_load(&ld, buf, sz, &al));
    STEP(simlsh_index_cluster(res, ld, 0));
    simlsh_params *lp = NULL;
    STEP(simlsh_index_params(&lp, ld));
    simlsh_params_free(lp);
    simlsh_index_free(ld);
    ld = NULL;
    STEP(simlsh_index_save_file(ix, path));
    STEP(simlsh_index_load_file(&ld, path, &al));
    STEP(simlsh_index_query(res, ld, sig[2], 0));
    rc = 0;
out:
#undef STEP
    free(buf);
    simlsh_index_free(ld);
    simlsh_index_free(ix);
    simlsh_results_free(res);
    for (int i = 0; i < OOM_DOCS; i++)
        simlsh_signature_free(sig[i]);
    simlsh_params_free(p);
    return rc;
}

static void test_oom(void)
{
    char path[] = "/tmp/simlsh-test-oom-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    int bad = 0, leaks = 0;
    long fail_at;
    for (fail_at = 1; fail_at < 100000; fail_at++) {
        tu_alloc_state st = {0};
        st.fail_at = fail_at;
        int rc = oom_pass(&st, path, &bad);
        if (st.live != 0)
            leaks++;
        if (rc == 0 && st.count < fail_at)
            break; /* ran to the end without meeting the failure */
    }
    CHECK(bad == 0);
    CHECK(leaks == 0);
    CHECK(fail_at > 50);
    printf("index: OOM injection covered %ld allocation points\n", fail_at - 1);
    unlink(path);
}

int main(void)
{
    test_oom();
    return tu_finish("index-oom");
}
