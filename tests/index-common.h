/* Shared by the tests/test-index*.c files: documents, a corpus with
 * brute-force references computed from the signatures' values (a bucket =
 * equal values in one band), and checks of an index against them. Header
 * only (static inline) so that every CHECK counts in the including test. */
#ifndef SIMLSH_TEST_INDEX_COMMON_H
#define SIMLSH_TEST_INDEX_COMMON_H

#include <stdbool.h>
#include <unistd.h>

#include "bandkey.h"
#include "frame.h"
#include "le.h"
#include "testutil.h"

/* ---- documents and signatures ---------------------------------------------- */

static inline uint64_t feat(uint64_t stream, uint64_t i)
{
    tu_rng r = {stream * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + 1};
    return tu_next(&r);
}

static inline simlsh_params *mk_params(const simlsh_allocator *al, int num_perm, int bands,
                                       int rows, int store)
{
    simlsh_params *p = NULL;
    if (simlsh_params_new(&p, al) != 0)
        return NULL;
    if (simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, bands) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, rows) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store) != 0) {
        simlsh_params_free(p);
        return NULL;
    }
    return p;
}

/* Features [lo, hi) of stream s: overlapping windows make documents of
 * known Jaccard (|overlap| / |union|). */
static inline simlsh_signature *mk_sig(const simlsh_params *p, uint64_t s, uint64_t lo, uint64_t hi)
{
    simlsh_signature *sig = NULL;
    if (simlsh_signature_new(&sig, p) != 0)
        return NULL;
    uint64_t f[512];
    size_t n = 0;
    for (uint64_t i = lo; i < hi; i++) {
        f[n++] = feat(s, i);
        if (n == 512 || i + 1 == hi) {
            if (simlsh_signature_add_features(sig, f, n) != 0) {
                simlsh_signature_free(sig);
                return NULL;
            }
            n = 0;
        }
    }
    return sig;
}

/* ---- a corpus with its brute-force reference -------------------------------- */

#define MAXDOCS 600

typedef struct {
    int num_perm, bands, rows;
    double thr;
    size_t n;
    uint64_t id[MAXDOCS];
    simlsh_signature *sig[MAXDOCS];
    uint32_t val[MAXDOCS][128];
    bool live[MAXDOCS];
} corpus;

/* n documents: groups of related documents (near copies, chains) mixed
 * with unrelated ones; ids are scattered, not in insertion order. With
 * big groups (big = 1) of near-identical documents, buckets outgrow the
 * inline entries and move to overflow lists. */
static inline void corpus_make(corpus *c, const simlsh_params *p, size_t n, uint64_t seed, int big)
{
    int64_t v;
    simlsh_params_get_int(p, SIMLSH_PARAM_NUM_PERM, &v);
    c->num_perm = (int)v;
    simlsh_params_get_int(p, SIMLSH_PARAM_BANDS, &v);
    c->bands = (int)v;
    simlsh_params_get_int(p, SIMLSH_PARAM_ROWS, &v);
    c->rows = (int)v;
    simlsh_params_get_double(p, SIMLSH_PARAM_THRESHOLD, &c->thr);
    c->n = n;
    tu_rng rng = {seed};
    for (size_t i = 0; i < n; i++) {
        uint64_t stream = 1000 + i / 4; /* groups of 4 share a stream */
        uint64_t shift = (i % 4) * tu_below(&rng, 30), len = 60 + tu_below(&rng, 40);
        if (big) {
            stream = 1000 + i % 7; /* 7 groups, interleaved */
            shift = tu_below(&rng, 3);
            len = 80;
        }
        if (tu_below(&rng, 3) == 0)
            stream = 100000 + i;                                   /* unrelated */
        c->id[i] = (tu_next(&rng) & 0xFFFFFFFFFULL) * MAXDOCS + i; /* unique */
        c->sig[i] = mk_sig(p, stream, shift, shift + len);
        size_t cnt;
        simlsh_signature_values(c->val[i], 128, &cnt, c->sig[i]);
        c->live[i] = true;
    }
}

static inline void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        simlsh_signature_free(c->sig[i]);
}

static inline bool share_bucket(const corpus *c, size_t i, const uint32_t *q)
{
    for (int b = 0; b < c->bands; b++)
        if (memcmp(c->val[i] + b * c->rows, q + b * c->rows, (size_t)c->rows * 4) == 0)
            return true;
    return false;
}

static inline bool same_band(const corpus *c, size_t i, size_t j, int b)
{
    return memcmp(c->val[i] + b * c->rows, c->val[j] + b * c->rows, (size_t)c->rows * 4) == 0;
}

static inline double est(const corpus *c, const uint32_t *a, const uint32_t *b)
{
    int eq = 0;
    for (int k = 0; k < c->num_perm; k++)
        eq += a[k] == b[k];
    return (double)eq / c->num_perm;
}

static inline int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Expected ids (sorted) and scores of a query with values q. */
static inline size_t ref_query(const corpus *c, const uint32_t *q, bool verify, uint64_t *ids,
                               double *scores)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->live[i] || !share_bucket(c, i, q))
            continue;
        if (verify && est(c, c->val[i], q) < c->thr)
            continue;
        ids[n++] = c->id[i];
    }
    qsort(ids, n, sizeof *ids, cmp_u64);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < c->n; i++)
            if (c->id[i] == ids[k])
                scores[k] = est(c, c->val[i], q);
    return n;
}

static inline size_t find_doc(const corpus *c, uint64_t id)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->id[i] == id)
            return i;
    return SIZE_MAX;
}

/* Union-find for the reference clustering. */
static inline size_t rf_find(size_t *par, size_t x)
{
    while (par[x] != x)
        x = par[x] = par[par[x]];
    return x;
}

static inline void rf_union(size_t *par, size_t a, size_t b)
{
    a = rf_find(par, a);
    b = rf_find(par, b);
    if (a != b)
        par[a > b ? a : b] = a < b ? a : b;
}

static const corpus *sort_ctx;
static inline int cmp_idx_by_id(const void *x, const void *y)
{
    uint64_t a = sort_ctx->id[*(const size_t *)x], b = sort_ctx->id[*(const size_t *)y];
    return a < b ? -1 : a > b;
}

/* Reference clustering: labels[i] = smallest id of doc i's cluster. With
 * verify, the greedy leader split of the header, buckets in id order. */
static inline void ref_cluster(const corpus *c, bool verify, uint64_t *label)
{
    static size_t par[MAXDOCS], members[MAXDOCS], leaders[MAXDOCS];
    static bool done[MAXDOCS];
    for (size_t i = 0; i < c->n; i++)
        par[i] = i;
    for (int b = 0; b < c->bands; b++) {
        memset(done, 0, sizeof done);
        for (size_t i = 0; i < c->n; i++) {
            if (!c->live[i] || done[i])
                continue;
            size_t m = 0;
            for (size_t j = 0; j < c->n; j++)
                if (c->live[j] && !done[j] && same_band(c, i, j, b)) {
                    members[m++] = j;
                    done[j] = true;
                }
            sort_ctx = c;
            qsort(members, m, sizeof *members, cmp_idx_by_id);
            if (!verify) {
                for (size_t k = 1; k < m; k++)
                    rf_union(par, members[0], members[k]);
                continue;
            }
            size_t nl = 0;
            for (size_t k = 0; k < m; k++) {
                size_t l = 0;
                for (; l < nl; l++)
                    if (est(c, c->val[members[k]], c->val[leaders[l]]) >= c->thr)
                        break;
                if (l < nl)
                    rf_union(par, members[k], leaders[l]);
                else
                    leaders[nl++] = members[k];
            }
        }
    }
    for (size_t i = 0; i < c->n; i++)
        label[i] = UINT64_MAX;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->live[i])
            continue;
        size_t r = rf_find(par, i);
        if (c->id[i] < label[r])
            label[r] = c->id[i];
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->live[i])
            label[i] = label[rf_find(par, i)];
}

static inline simlsh_index *corpus_index(const corpus *c, const simlsh_params *p)
{
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < c->n; i++)
        if (c->live[i])
            CHECK_OK(simlsh_index_insert(ix, c->id[i], c->sig[i]));
    return ix;
}

/* Same rows (a, b, score, in order) and the same per-query offsets. */
static inline bool results_equal(const simlsh_results *x, const simlsh_results *y, size_t nq)
{
    size_t n = simlsh_results_count(x);
    if (n != simlsh_results_count(y))
        return false;
    if (n > 0 && (memcmp(simlsh_results_a(x), simlsh_results_a(y), n * 8) != 0 ||
                  memcmp(simlsh_results_b(x), simlsh_results_b(y), n * 8) != 0 ||
                  memcmp(simlsh_results_scores(x), simlsh_results_scores(y), n * 8) != 0))
        return false;
    for (size_t q = 0; q <= nq; q++) {
        size_t ox = SIZE_MAX, oy = SIZE_MAX - 1;
        if (simlsh_results_offset(&ox, x, q) != 0 || simlsh_results_offset(&oy, y, q) != 0 ||
            ox != oy)
            return false;
    }
    return true;
}

/* Single, ids and batch queries against the reference. */
static inline void check_queries(const corpus *c, const simlsh_index *ix, bool store)
{
    static uint64_t want[MAXDOCS], got[MAXDOCS];
    static double wsc[MAXDOCS];
    simlsh_results *res = NULL, *bres = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_results_new(&bres, NULL));
    size_t cnt;
    CHECK_OK(simlsh_index_count(&cnt, ix));
    size_t live = 0;
    for (size_t i = 0; i < c->n; i++)
        live += c->live[i];
    CHECK(cnt == live);

    for (int verify = 0; verify <= (store ? 1 : 0); verify++) {
        int flags = verify ? SIMLSH_QUERY_VERIFY : 0;
        const simlsh_signature *sigs[MAXDOCS];
        for (size_t i = 0; i < c->n; i++)
            sigs[i] = c->sig[i];
        CHECK_OK(simlsh_index_query_batch(bres, ix, sigs, c->n, flags));
        size_t off;
        CHECK_OK(simlsh_results_offset(&off, bres, c->n));
        CHECK(off == simlsh_results_count(bres));
        /* The same batch from the values matrix, whose rows are 128 apart
         * whatever num_perm: the same rows, byte for byte. */
        CHECK_OK(simlsh_index_query_values(res, ix, &c->val[0][0], c->n, (size_t)c->num_perm, 128,
                                           flags, 0.0));
        CHECK(results_equal(res, bres, c->n));
        int mismatches = 0;
        for (size_t i = 0; i < c->n; i++) {
            size_t n = ref_query(c, c->val[i], verify, want, wsc);
            CHECK_OK(simlsh_index_query(res, ix, c->sig[i], flags));
            bool ok = simlsh_results_count(res) == n;
            for (size_t k = 0; ok && k < n; k++) {
                uint64_t a, b;
                double s;
                CHECK_OK(simlsh_results_row(res, k, &a, &b, &s));
                ok = a == want[k] && b == 0 && (store ? fabs(s - wsc[k]) < 1e-12 : s == -1.0);
            }
            size_t m = 0;
            CHECK_OK(simlsh_index_query_ids(NULL, 0, &m, ix, c->sig[i], flags));
            ok = ok && m == n;
            CHECK_OK(simlsh_index_query_ids(got, MAXDOCS, &m, ix, c->sig[i], flags));
            ok = ok && m == n && (n == 0 || memcmp(got, want, n * sizeof *got) == 0);
            size_t lo, hi;
            CHECK_OK(simlsh_results_offset(&lo, bres, i));
            CHECK_OK(simlsh_results_offset(&hi, bres, i + 1));
            ok = ok && hi - lo == n;
            for (size_t k = 0; ok && k < n; k++) {
                uint64_t a, b;
                double s;
                CHECK_OK(simlsh_results_row(bres, lo + k, &a, &b, &s));
                ok = a == want[k] && b == i && (store ? fabs(s - wsc[k]) < 1e-12 : s == -1.0);
            }
            if (!ok)
                mismatches++;
        }
        CHECK(mismatches == 0);
    }
    simlsh_results_free(res);
    simlsh_results_free(bres);
}

/* Pairs against the reference, with and without a limit. */
static inline void check_pairs(const corpus *c, const simlsh_index *ix, bool store)
{
    static uint64_t want[MAXDOCS];
    static double wsc[MAXDOCS];
    simlsh_results *res = NULL, *bres = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_results_new(&bres, NULL));
    for (int verify = 0; verify <= (store ? 1 : 0); verify++) {
        int flags = verify ? SIMLSH_QUERY_VERIFY : 0;
        /* Pairs: every unordered pair sharing a bucket, sorted by (a, b). */
        CHECK_OK(simlsh_index_pairs(res, ix, flags, 0));
        CHECK(simlsh_results_truncated(res) == 0);
        size_t np = 0;
        int bad = 0;
        uint64_t pa = 0, pb = 0;
        for (size_t i = 0; i < c->n; i++) {
            if (!c->live[i])
                continue;
            size_t n = ref_query(c, c->val[i], verify, want, wsc);
            for (size_t k = 0; k < n; k++)
                if (want[k] > c->id[i])
                    np++;
        }
        CHECK(simlsh_results_count(res) == np);
        for (size_t k = 0; k < simlsh_results_count(res); k++) {
            uint64_t a, b;
            double s;
            simlsh_results_row(res, k, &a, &b, &s);
            size_t ia = find_doc(c, a), ib = find_doc(c, b);
            if (a >= b || ia == SIZE_MAX || ib == SIZE_MAX || !share_bucket(c, ia, c->val[ib]))
                bad++;
            else if (k > 0 && (a < pa || (a == pa && b <= pb)))
                bad++;
            else if (store ? fabs(s - est(c, c->val[ia], c->val[ib])) > 1e-12 : s != -1.0)
                bad++;
            else if (verify && s < c->thr)
                bad++;
            pa = a;
            pb = b;
        }
        CHECK(bad == 0);
        /* A limit keeps a prefix of the same order. */
        if (np > 3) {
            CHECK_OK(simlsh_index_pairs(bres, ix, flags, np / 2));
            CHECK(simlsh_results_count(bres) == np / 2);
            CHECK(simlsh_results_truncated(bres) == 1);
            CHECK(memcmp(simlsh_results_a(bres), simlsh_results_a(res), np / 2 * 8) == 0);
            CHECK(memcmp(simlsh_results_b(bres), simlsh_results_b(res), np / 2 * 8) == 0);
            CHECK_OK(simlsh_index_pairs(bres, ix, flags, np));
            CHECK(simlsh_results_count(bres) == np);
            CHECK(simlsh_results_truncated(bres) == 0);
            CHECK_OK(simlsh_index_pairs(bres, ix, flags, np - 1));
            CHECK(simlsh_results_truncated(bres) == 1);
        }
    }
    simlsh_results_free(res);
    simlsh_results_free(bres);
}

/* Cluster labels against the reference clustering. */
static inline void check_cluster(const corpus *c, const simlsh_index *ix, bool store)
{
    simlsh_results *res = NULL, *bres = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_results_new(&bres, NULL));
    size_t live = 0;
    for (size_t i = 0; i < c->n; i++)
        live += c->live[i];
    uint64_t pa = 0;
    int bad;
    for (int verify = 0; verify <= (store ? 1 : 0); verify++) {
        int flags = verify ? SIMLSH_QUERY_VERIFY : 0;
        /* Cluster. */
        static uint64_t label[MAXDOCS];
        ref_cluster(c, verify, label);
        CHECK_OK(simlsh_index_cluster(res, ix, flags));
        CHECK(simlsh_results_count(res) == live);
        bad = 0;
        for (size_t k = 0; k < simlsh_results_count(res); k++) {
            uint64_t a, b;
            double s;
            simlsh_results_row(res, k, &a, &b, &s);
            size_t ia = find_doc(c, a);
            if (ia == SIZE_MAX || !c->live[ia] || label[ia] != b || s != -1.0)
                bad++;
            if (k > 0 && a <= pa)
                bad++;
            pa = a;
        }
        CHECK(bad == 0);
    }
    simlsh_results_free(res);
    simlsh_results_free(bres);
}

/* Every query (single, ids, batch), pairs and cluster against the reference. */
static inline void check_against_ref(const corpus *c, const simlsh_index *ix, bool store)
{
    check_queries(c, ix, store);
    check_pairs(c, ix, store);
    check_cluster(c, ix, store);
}

static inline void check_pairs_and_cluster(const corpus *c, const simlsh_index *ix, bool store)
{
    check_pairs(c, ix, store);
    check_cluster(c, ix, store);
}

/* The reference corpus indexed, then after removals, re-insertions and a
 * clear, checked by check at each step. */
static inline void reference_scenario(int store, int big,
                                      void (*check)(const corpus *, const simlsh_index *, bool))
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 400, 7 + (uint64_t)store, big);
    simlsh_index *ix = corpus_index(&c, p);
    check(&c, ix, store);

    if (store) {
        /* Remove a third, check, put some back (slots are reused), check. */
        size_t mem0, mem1;
        for (size_t i = 0; i < c.n; i += 3) {
            CHECK_OK(simlsh_index_remove(ix, c.id[i]));
            CHECK(simlsh_index_contains(ix, c.id[i]) == 0);
            c.live[i] = false;
        }
        CHECK_RC(simlsh_index_remove(ix, c.id[0]), SIMLSH_ENOTFOUND);
        CHECK_RC(simlsh_index_remove(NULL, c.id[0]), SIMLSH_EINVAL);
        check(&c, ix, store);
        CHECK_OK(simlsh_index_memory(&mem0, NULL, ix));
        for (size_t i = 0; i < c.n; i += 6) {
            CHECK_OK(simlsh_index_insert(ix, c.id[i], c.sig[i]));
            c.live[i] = true;
        }
        CHECK_OK(simlsh_index_memory(&mem1, NULL, ix));
        CHECK(mem1 == mem0); /* freed slots and table room reused */
        check(&c, ix, store);
    } else {
        CHECK_RC(simlsh_index_remove(ix, c.id[0]), SIMLSH_EUNSUPPORTED);
        simlsh_results *res = NULL;
        CHECK_OK(simlsh_results_new(&res, NULL));
        CHECK_RC(simlsh_index_query(res, ix, c.sig[0], SIMLSH_QUERY_VERIFY), SIMLSH_EUNSUPPORTED);
        uint64_t ids[8];
        size_t n;
        CHECK_RC(simlsh_index_query_ids(ids, 8, &n, ix, c.sig[0], SIMLSH_QUERY_VERIFY),
                 SIMLSH_EUNSUPPORTED);
        CHECK_RC(simlsh_index_query_batch(res, ix, (const simlsh_signature *const *)c.sig, 2,
                                          SIMLSH_QUERY_VERIFY),
                 SIMLSH_EUNSUPPORTED);
        CHECK_RC(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 0), SIMLSH_EUNSUPPORTED);
        CHECK_RC(simlsh_index_cluster(res, ix, SIMLSH_QUERY_VERIFY), SIMLSH_EUNSUPPORTED);
        simlsh_results_free(res);
    }

    /* Clear keeps the tables' memory (it releases the overflow lists of
     * large buckets), empties everything, and the index is reusable. */
    size_t m0, m1, n;
    CHECK_OK(simlsh_index_memory(&m0, NULL, ix));
    CHECK_OK(simlsh_index_clear(ix));
    CHECK_RC(simlsh_index_clear(NULL), SIMLSH_EINVAL);
    CHECK_OK(simlsh_index_memory(&m1, NULL, ix));
    CHECK(big ? m1 < m0 : m1 == m0);
    CHECK_OK(simlsh_index_count(&n, ix));
    CHECK(n == 0);
    CHECK(simlsh_index_contains(ix, c.id[1]) == 0);
    for (size_t i = 0; i < c.n; i++)
        c.live[i] = false;
    check(&c, ix, store);
    for (size_t i = 0; i < c.n; i += 2) {
        CHECK_OK(simlsh_index_insert(ix, c.id[i], c.sig[i]));
        c.live[i] = true;
    }
    check(&c, ix, store);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
}

#endif
