/* simlsh_index_pairs_v2 and simlsh_index_cluster_v2: byte-identical rows
 * for 1, 2, 3 and 8 threads and equal to the 0.1 calls; a per-call
 * threshold that acts as the params' one would; rows equal to those of
 * every document's own query (another code path); errors; an OOM loop that
 * leaves the results as they were. */
#include <math.h>

#include "testutil.h"

#define NUM_PERM 64
#define NDOCS 4000

static const uint32_t thread_counts[] = {1, 2, 3, 8};
#define NTC (sizeof thread_counts / sizeof thread_counts[0])

static uint64_t feat(uint64_t stream, uint64_t i)
{
    tu_rng r = {stream * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + 1};
    return tu_next(&r);
}

static simlsh_params *mk_params(const simlsh_allocator *al, int store, double thr)
{
    simlsh_params *p = NULL;
    if (simlsh_params_new(&p, al) != 0)
        return NULL;
    if (simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, NUM_PERM) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 16) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 4) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store) != 0 ||
        simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, thr) != 0) {
        simlsh_params_free(p);
        return NULL;
    }
    return p;
}

/* Chains of windows over a few streams (many similarity levels, so
 * thresholds matter), big groups of exact copies (overflow lists) and
 * unrelated documents; every 7th removed when signatures are stored. */
/* Document i's features into s: chains of windows over a few streams
 * (many similarity levels, so thresholds matter), big groups of exact
 * copies (overflow lists) and unrelated documents. */
static int doc_sig(simlsh_signature *s, size_t i)
{
    uint64_t f[40], stream, lo = 0;
    if (i % 4 == 0) {
        stream = i % 50; /* groups of 20 exact copies */
    } else if (i % 4 == 1) {
        stream = 100 + i % 97;
        lo = (i / 97) % 12 * 3;
    } else {
        stream = 1000 + i;
    }
    for (size_t k = 0; k < 40; k++)
        f[k] = feat(stream, lo + k);
    return simlsh_signature_clear(s) != 0 || simlsh_signature_add_features(s, f, 40) != 0;
}

static uint64_t doc_id(size_t i)
{
    return feat(999, i) >> 20;
}

/* Every document of doc_sig(); every 7th removed when signatures are
 * stored. */
static simlsh_index *mk_index(const simlsh_params *p, int store)
{
    simlsh_index *ix = NULL;
    simlsh_signature *s = NULL;
    if (simlsh_index_new(&ix, p) != 0 || simlsh_signature_new(&s, p) != 0)
        return NULL;
    for (size_t i = 0; i < NDOCS; i++) {
        if (doc_sig(s, i) != 0 || simlsh_index_insert(ix, doc_id(i), s) != 0)
            return NULL;
        if (store && i % 7 == 3 && simlsh_index_remove(ix, doc_id(i - 3)) != 0)
            return NULL;
    }
    simlsh_signature_free(s);
    return ix;
}

typedef struct {
    uint64_t a, b;
    double score;
} ref_row;

static int ref_cmp(const void *x, const void *y)
{
    const ref_row *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* The pairs as the definition says, from another code path: every live
 * document's own query, each pair kept from its smaller id. Checked
 * against pairs() with every thread count. */
static void check_against_queries(const simlsh_params *p, const simlsh_index *ix, int flags)
{
    simlsh_signature *s = NULL;
    simlsh_results *q = NULL, *got = NULL;
    CHECK_OK(simlsh_signature_new(&s, p));
    CHECK_OK(simlsh_results_new(&q, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    size_t n = 0, cap = 1 << 16;
    ref_row *ref = malloc(cap * sizeof *ref);
    CHECK(ref != NULL);
    for (size_t i = 0; i < NDOCS && ref != NULL; i++) {
        uint64_t id = doc_id(i);
        if (simlsh_index_contains(ix, id) != 1)
            continue;
        CHECK(doc_sig(s, i) == 0);
        CHECK_OK(simlsh_index_query(q, ix, s, flags));
        size_t m = simlsh_results_count(q);
        const uint64_t *b = simlsh_results_a(q); /* a query's rows: (id, 0, score) */
        const double *sc = simlsh_results_scores(q);
        for (size_t k = 0; k < m; k++) {
            if (b[k] <= id)
                continue;
            if (n == cap) {
                cap *= 2;
                ref = realloc(ref, cap * sizeof *ref);
                CHECK(ref != NULL);
                if (ref == NULL)
                    break;
            }
            ref[n].a = id;
            ref[n].b = b[k];
            ref[n].score = sc[k];
            n++;
        }
    }
    if (ref != NULL) {
        qsort(ref, n, sizeof *ref, ref_cmp);
        CHECK(n > 1000);
        for (size_t t = 0; t < NTC; t++) {
            CHECK_OK(simlsh_index_pairs_v2(got, ix, flags, 0, -1.0, thread_counts[t]));
            size_t m = simlsh_results_count(got), bad = 0;
            CHECK(m == n);
            const uint64_t *a = simlsh_results_a(got), *b = simlsh_results_b(got);
            const double *sc = simlsh_results_scores(got);
            for (size_t k = 0; k < m && k < n; k++)
                bad += a[k] != ref[k].a || b[k] != ref[k].b || sc[k] != ref[k].score;
            CHECK(bad == 0);
        }
    }
    free(ref);
    simlsh_results_free(q);
    simlsh_results_free(got);
    simlsh_signature_free(s);
}

static int same_results(const simlsh_results *a, const simlsh_results *b)
{
    size_t n = simlsh_results_count(a);
    if (n != simlsh_results_count(b) || simlsh_results_truncated(a) != simlsh_results_truncated(b))
        return 0;
    return n == 0 || (memcmp(simlsh_results_a(a), simlsh_results_a(b), n * 8) == 0 &&
                      memcmp(simlsh_results_b(a), simlsh_results_b(b), n * 8) == 0 &&
                      memcmp(simlsh_results_scores(a), simlsh_results_scores(b), n * 8) == 0);
}

static void test_identical(int store)
{
    simlsh_params *p = mk_params(NULL, store, 0.7);
    simlsh_index *ix = mk_index(p, store);
    CHECK(ix != NULL);
    simlsh_results *want = NULL, *got = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    int flags[2] = {0, SIMLSH_QUERY_VERIFY};
    double thr[4] = {0.0, 0.5, 0.9, NAN};
    for (int f = 0; f < (store ? 2 : 1); f++) {
        check_against_queries(p, ix, flags[f]);
        /* The 0.1 calls are the v2 ones with the params' threshold. */
        CHECK_OK(simlsh_index_pairs(want, ix, flags[f], 0));
        size_t total = simlsh_results_count(want);
        CHECK(total > 1000);
        for (size_t t = 0; t < NTC; t++) {
            CHECK_OK(simlsh_index_pairs_v2(got, ix, flags[f], 0, 0.0, thread_counts[t]));
            CHECK(same_results(want, got));
        }
        size_t limits[5] = {1, 100, total - 1, total, total + 1};
        for (size_t l = 0; l < 5; l++) {
            CHECK_OK(simlsh_index_pairs(want, ix, flags[f], limits[l]));
            CHECK(simlsh_results_truncated(want) == (limits[l] < total));
            for (size_t t = 0; t < NTC; t++) {
                CHECK_OK(
                    simlsh_index_pairs_v2(got, ix, flags[f], limits[l], -1.0, thread_counts[t]));
                CHECK(same_results(want, got));
            }
        }
        CHECK_OK(simlsh_index_cluster(want, ix, flags[f]));
        for (size_t t = 0; t < NTC; t++) {
            CHECK_OK(simlsh_index_cluster_v2(got, ix, flags[f], 0.0, thread_counts[t]));
            CHECK(same_results(want, got));
        }
        for (int k = 0; k < 4; k++) {
            CHECK_OK(simlsh_index_pairs_v2(want, ix, flags[f], 0, thr[k], 1));
            for (size_t t = 1; t < NTC; t++) {
                CHECK_OK(simlsh_index_pairs_v2(got, ix, flags[f], 0, thr[k], thread_counts[t]));
                CHECK(same_results(want, got));
            }
            CHECK_OK(simlsh_index_cluster_v2(want, ix, flags[f], thr[k], 1));
            for (size_t t = 1; t < NTC; t++) {
                CHECK_OK(simlsh_index_cluster_v2(got, ix, flags[f], thr[k], thread_counts[t]));
                CHECK(same_results(want, got));
            }
        }
    }
    simlsh_results_free(want);
    simlsh_results_free(got);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

/* A per-call threshold t acts as an index whose params say t: pairs are
 * the unverified ones with score >= t, clusters those of that index. */
/* got holds exactly the rows of all (unthresholded pairs) that score t
 * or more, in the same order; *m their number. */
static int thresholded(const simlsh_results *all, const simlsh_results *got, double t, size_t *m)
{
    size_t n = 0;
    int ok = 1;
    for (size_t i = 0; i < simlsh_results_count(all); i++) {
        if (simlsh_results_scores(all)[i] < t)
            continue;
        ok &= n < simlsh_results_count(got) &&
              simlsh_results_a(got)[n] == simlsh_results_a(all)[i] &&
              simlsh_results_b(got)[n] == simlsh_results_b(all)[i];
        n++;
    }
    *m = n;
    return ok && n == simlsh_results_count(got);
}

static void test_threshold(void)
{
    simlsh_params *p = mk_params(NULL, 1, 0.7);
    simlsh_index *ix = mk_index(p, 1);
    simlsh_results *all = NULL, *got = NULL, *want = NULL;
    CHECK_OK(simlsh_results_new(&all, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_index_pairs(all, ix, 0, 0));
    double ts[3] = {0.3, 0.6, 0.95};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(simlsh_index_pairs_v2(got, ix, SIMLSH_QUERY_VERIFY, 0, ts[k], 2));
        size_t m = 0;
        CHECK(thresholded(all, got, ts[k], &m));
        CHECK(m > 0 && m < simlsh_results_count(all));

        simlsh_params *q = mk_params(NULL, 1, ts[k]);
        simlsh_index *iq = mk_index(q, 1);
        CHECK_OK(simlsh_index_cluster(want, iq, SIMLSH_QUERY_VERIFY));
        CHECK_OK(simlsh_index_cluster_v2(got, ix, SIMLSH_QUERY_VERIFY, ts[k], 3));
        CHECK(same_results(want, got));
        simlsh_index_free(iq);
        simlsh_params_free(q);
    }
    /* Errors leave the results as they were. */
    CHECK_OK(simlsh_index_pairs_v2(want, ix, 0, 0, 0, 2));
    CHECK_RC(simlsh_index_pairs_v2(got, ix, SIMLSH_QUERY_VERIFY, 0, 1.5, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster_v2(got, ix, SIMLSH_QUERY_VERIFY, 1.01, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs_v2(got, ix, 4, 0, 0, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs_v2(NULL, ix, 0, 0, 0, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster_v2(got, NULL, 0, 0, 2), SIMLSH_EINVAL);
    CHECK_OK(simlsh_index_pairs_v2(got, ix, 0, 0, 0, 2));
    CHECK(same_results(want, got));
    simlsh_params *ns = mk_params(NULL, 0, 0.7);
    simlsh_index *in = NULL;
    CHECK_OK(simlsh_index_new(&in, ns));
    CHECK_RC(simlsh_index_pairs_v2(got, in, SIMLSH_QUERY_VERIFY, 0, 0.5, 2), SIMLSH_EUNSUPPORTED);
    CHECK_RC(simlsh_index_cluster_v2(got, in, SIMLSH_QUERY_VERIFY, 0.5, 2), SIMLSH_EUNSUPPORTED);
    /* An empty index: no rows, for any thread count. */
    CHECK_OK(simlsh_index_pairs_v2(got, in, 0, 0, 0, 8));
    CHECK(simlsh_results_count(got) == 0 && !simlsh_results_truncated(got));
    CHECK_OK(simlsh_index_cluster_v2(got, in, 0, 0, 8));
    CHECK(simlsh_results_count(got) == 0);
    simlsh_index_free(in);
    simlsh_params_free(ns);
    simlsh_results_free(all);
    simlsh_results_free(got);
    simlsh_results_free(want);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

/* Fail allocation k = 1, 2, ... (the index's and the results' hooks are
 * the same counting allocator): SIMLSH_ENOMEM and the results unchanged,
 * until the call succeeds with the right rows. */
static void test_oom(int cluster, uint32_t nthreads)
{
    static tu_alloc_state st;
    memset(&st, 0, sizeof st);
    simlsh_allocator al = tu_allocator(&st);
    simlsh_params *p = mk_params(&al, 1, 0.7);
    simlsh_index *ix = mk_index(p, 1);
    simlsh_results *want = NULL, *got = NULL, *before = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_results_new(&before, NULL));
    CHECK_OK(simlsh_results_new(&got, &al));
    int flags = SIMLSH_QUERY_VERIFY;
    if (cluster)
        CHECK_OK(simlsh_index_cluster(want, ix, flags));
    else
        CHECK_OK(simlsh_index_pairs(want, ix, flags, 0));
    /* got starts with other content: some pairs. */
    CHECK_OK(simlsh_index_pairs(got, ix, 0, 10));
    CHECK_OK(simlsh_index_pairs(before, ix, 0, 10));
    long fails = 0;
    for (long k = 1; k < 10000; k++) {
        st.count = 0;
        st.fail_at = k;
        int rc = cluster ? simlsh_index_cluster_v2(got, ix, flags, 0, nthreads)
                         : simlsh_index_pairs_v2(got, ix, flags, 0, 0, nthreads);
        st.fail_at = 0;
        if (rc == 0) {
            CHECK(same_results(want, got));
            break;
        }
        CHECK_RC(rc, SIMLSH_ENOMEM);
        CHECK(same_results(before, got));
        fails++;
    }
    CHECK(fails >= 3);
    simlsh_results_free(want);
    simlsh_results_free(got);
    simlsh_results_free(before);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    CHECK(st.live == 0);
}

/* A bucket far larger than one block of list_meets() (NUM_PERM 64: 256
 * sketches a block): 700 documents sharing 36 of 44 features, so most
 * bands put all of them in one overflow list, with their last 8 features
 * from one of 350 variants (pairs of one variant are copies, the others
 * near 0.6). Pairs above a threshold must be the unthresholded pairs
 * whose score reaches it, for every thread count. */
static void test_big_lists(void)
{
    simlsh_params *p = mk_params(NULL, 1, 0.5);
    simlsh_index *ix = NULL;
    simlsh_signature *sg = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_signature_new(&sg, p));
    for (size_t i = 0; i < 700; i++) {
        uint64_t f[44];
        for (size_t k = 0; k < 36; k++)
            f[k] = feat(7777, k);
        for (size_t k = 0; k < 8; k++)
            f[36 + k] = feat(8000 + i % 350, k);
        CHECK_OK(simlsh_signature_clear(sg));
        CHECK_OK(simlsh_signature_add_features(sg, f, 44));
        CHECK_OK(simlsh_index_insert(ix, doc_id(i), sg));
    }
    simlsh_results *all = NULL, *got = NULL;
    CHECK_OK(simlsh_results_new(&all, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    CHECK_OK(simlsh_index_pairs(all, ix, 0, 0));
    CHECK(simlsh_results_count(all) > 700 * 699 / 4); /* most pairs meet */
    double ts[2] = {0.6, 0.9};
    for (int k = 0; k < 2; k++)
        for (size_t t = 0; t < NTC; t++) {
            CHECK_OK(
                simlsh_index_pairs_v2(got, ix, SIMLSH_QUERY_VERIFY, 0, ts[k], thread_counts[t]));
            size_t m = 0;
            CHECK(thresholded(all, got, ts[k], &m));
            CHECK(m >= 350);
        }
    simlsh_results_free(all);
    simlsh_results_free(got);
    simlsh_signature_free(sg);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

int main(void)
{
    test_identical(1);
    test_identical(0);
    test_threshold();
    test_big_lists();
    for (int c = 0; c < 2; c++) {
        test_oom(c, 1);
        test_oom(c, 2);
    }
    return tu_finish("index-par");
}
