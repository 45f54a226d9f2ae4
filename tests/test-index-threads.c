/* Concurrent const calls on one index: 4 threads run queries, batches,
 * pairs, clusters and saves at the same time and must get exactly the
 * single-threaded answers (run under ThreadSanitizer in CI). */
#include <pthread.h>

#include "testutil.h"

#define NDOCS 3000
#define NTHREADS 4
#define ROUNDS 3

static simlsh_params *params;
static simlsh_index *ix;
static simlsh_signature *sigs[NDOCS];

/* Expected answers, computed before the threads start. */
static simlsh_results *want_batch, *want_verify_batch, *want_pairs, *want_cluster;
static uint8_t *want_bytes;
static size_t want_size;

static uint64_t feat(uint64_t stream, uint64_t i)
{
    tu_rng r = {stream * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + 1};
    return tu_next(&r);
}

static int same_results(const simlsh_results *a, const simlsh_results *b)
{
    size_t n = simlsh_results_count(a);
    if (n != simlsh_results_count(b))
        return 0;
    if (n == 0)
        return 1;
    return memcmp(simlsh_results_a(a), simlsh_results_a(b), n * 8) == 0 &&
           memcmp(simlsh_results_b(a), simlsh_results_b(b), n * 8) == 0 &&
           memcmp(simlsh_results_scores(a), simlsh_results_scores(b), n * 8) == 0;
}

typedef struct {
    int id;
    int failures;
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    simlsh_results *res = NULL;
    if (simlsh_results_new(&res, NULL) != 0) {
        w->failures++;
        return NULL;
    }
    uint8_t *bytes = malloc(want_size);
    for (int round = 0; round < ROUNDS; round++) {
        /* Single queries, each thread from a different starting point. */
        for (size_t k = 0; k < NDOCS; k++) {
            size_t i = (k + (size_t)w->id * NDOCS / NTHREADS) % NDOCS;
            int flags = (k & 1) ? SIMLSH_QUERY_VERIFY : 0;
            const simlsh_results *ref = flags ? want_verify_batch : want_batch;
            if (simlsh_index_query(res, ix, sigs[i], flags) != 0) {
                w->failures++;
                continue;
            }
            size_t lo, hi;
            simlsh_results_offset(&lo, ref, i);
            simlsh_results_offset(&hi, ref, i + 1);
            if (simlsh_results_count(res) != hi - lo) {
                w->failures++;
                continue;
            }
            for (size_t r = 0; r < hi - lo; r++)
                if (simlsh_results_a(res)[r] != simlsh_results_a(ref)[lo + r] ||
                    simlsh_results_scores(res)[r] != simlsh_results_scores(ref)[lo + r])
                    w->failures++;
            uint64_t ids[64];
            size_t n;
            if (simlsh_index_query_ids(ids, 64, &n, ix, sigs[i], flags) != 0 || n != hi - lo)
                w->failures++;
        }
        if (simlsh_index_query_batch(res, ix, (const simlsh_signature *const *)sigs, NDOCS, 0) !=
                0 ||
            !same_results(res, want_batch))
            w->failures++;
        if (simlsh_index_pairs(res, ix, 0, 0) != 0 || !same_results(res, want_pairs))
            w->failures++;
        if (simlsh_index_cluster(res, ix, SIMLSH_QUERY_VERIFY) != 0 ||
            !same_results(res, want_cluster))
            w->failures++;
        size_t sz, tot;
        if (simlsh_index_save(bytes, want_size, &sz, ix) != 0 || sz != want_size ||
            memcmp(bytes, want_bytes, sz) != 0)
            w->failures++;
        if (simlsh_index_contains(ix, 5) != 1 || simlsh_index_count(&sz, ix) != 0 || sz != NDOCS ||
            simlsh_index_memory(&tot, NULL, ix) != 0)
            w->failures++;
    }
    free(bytes);
    simlsh_results_free(res);
    return NULL;
}

int main(void)
{
    CHECK_OK(simlsh_params_new(&params, NULL));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_NUM_PERM, 64));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_BANDS, 16));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_ROWS, 4));
    CHECK_OK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.6));
    CHECK_OK(simlsh_index_new(&ix, params));
    tu_rng rng = {42};
    for (size_t i = 0; i < NDOCS; i++) {
        CHECK_OK(simlsh_signature_new(&sigs[i], params));
        uint64_t f[80];
        uint64_t stream = i / 3, shift = tu_below(&rng, 12);
        for (int k = 0; k < 80; k++)
            f[k] = feat(stream, shift + (uint64_t)k);
        CHECK_OK(simlsh_signature_add_features(sigs[i], f, 80));
        CHECK_OK(simlsh_index_insert(ix, i, sigs[i]));
    }

    CHECK_OK(simlsh_results_new(&want_batch, NULL));
    CHECK_OK(simlsh_results_new(&want_verify_batch, NULL));
    CHECK_OK(simlsh_results_new(&want_pairs, NULL));
    CHECK_OK(simlsh_results_new(&want_cluster, NULL));
    CHECK_OK(
        simlsh_index_query_batch(want_batch, ix, (const simlsh_signature *const *)sigs, NDOCS, 0));
    CHECK_OK(simlsh_index_query_batch(want_verify_batch, ix, (const simlsh_signature *const *)sigs,
                                      NDOCS, SIMLSH_QUERY_VERIFY));
    CHECK_OK(simlsh_index_pairs(want_pairs, ix, 0, 0));
    CHECK_OK(simlsh_index_cluster(want_cluster, ix, SIMLSH_QUERY_VERIFY));
    CHECK_OK(simlsh_index_save(NULL, 0, &want_size, ix));
    want_bytes = malloc(want_size);
    CHECK_OK(simlsh_index_save(want_bytes, want_size, &want_size, ix));
    /* An absolute answer besides the stability checks below: documents of
     * different groups share no feature (Jaccard 0), so no pair may cross
     * groups; two members of a group differ by a shift d <= 11 of 80
     * features, J = (80-d)/(80+d) >= 0.758, and 16 bands of 4 rows find such
     * a pair with probability >= 1-(1-0.758^4)^16 = 0.998. Of the NDOCS
     * in-group pairs at least 99 % must be found: expected misses <= 6, and
     * 30 is over 9 standard deviations away. */
    size_t in_group = 0;
    for (size_t i = 0; i < simlsh_results_count(want_pairs); i++) {
        uint64_t a = simlsh_results_a(want_pairs)[i], b = simlsh_results_b(want_pairs)[i];
        CHECK(a / 3 == b / 3);
        in_group += a / 3 == b / 3;
    }
    CHECK(in_group >= NDOCS - NDOCS / 100);

    pthread_t th[NTHREADS];
    worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t].id = t;
        w[t].failures = 0;
        CHECK(pthread_create(&th[t], NULL, run, &w[t]) == 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        CHECK(w[t].failures == 0);
    }

    free(want_bytes);
    simlsh_results_free(want_batch);
    simlsh_results_free(want_verify_batch);
    simlsh_results_free(want_pairs);
    simlsh_results_free(want_cluster);
    for (size_t i = 0; i < NDOCS; i++)
        simlsh_signature_free(sigs[i]);
    simlsh_index_free(ix);
    simlsh_params_free(params);
    return tu_finish("index-threads");
}
