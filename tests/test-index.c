/* The LSH index and results objects: every public call and its errors,
 * checked against brute-force references computed here from the
 * signatures' values (a bucket = equal values in one band). */
#include <stdbool.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

/* ---- documents and signatures ---------------------------------------------- */

static uint64_t feat(uint64_t stream, uint64_t i)
{
    tu_rng r = {stream * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + 1};
    return tu_next(&r);
}

static simlsh_params *mk_params(const simlsh_allocator *al, int num_perm, int bands, int rows,
                                int store)
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
static simlsh_signature *mk_sig(const simlsh_params *p, uint64_t s, uint64_t lo, uint64_t hi)
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
static void corpus_make(corpus *c, const simlsh_params *p, size_t n, uint64_t seed, int big)
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
            stream = 100000 + i; /* unrelated */
        c->id[i] = (tu_next(&rng) & 0xFFFFFFFFFULL) * MAXDOCS + i; /* unique */
        c->sig[i] = mk_sig(p, stream, shift, shift + len);
        size_t cnt;
        simlsh_signature_values(c->val[i], 128, &cnt, c->sig[i]);
        c->live[i] = true;
    }
}

static void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        simlsh_signature_free(c->sig[i]);
}

static bool share_bucket(const corpus *c, size_t i, const uint32_t *q)
{
    for (int b = 0; b < c->bands; b++)
        if (memcmp(c->val[i] + b * c->rows, q + b * c->rows, (size_t)c->rows * 4) == 0)
            return true;
    return false;
}

static bool same_band(const corpus *c, size_t i, size_t j, int b)
{
    return memcmp(c->val[i] + b * c->rows, c->val[j] + b * c->rows, (size_t)c->rows * 4) == 0;
}

static double est(const corpus *c, const uint32_t *a, const uint32_t *b)
{
    int eq = 0;
    for (int k = 0; k < c->num_perm; k++)
        eq += a[k] == b[k];
    return (double)eq / c->num_perm;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Expected ids (sorted) and scores of a query with values q. */
static size_t ref_query(const corpus *c, const uint32_t *q, bool verify, uint64_t *ids,
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

static size_t find_doc(const corpus *c, uint64_t id)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->id[i] == id)
            return i;
    return SIZE_MAX;
}

/* Union-find for the reference clustering. */
static size_t rf_find(size_t *par, size_t x)
{
    while (par[x] != x)
        x = par[x] = par[par[x]];
    return x;
}

static void rf_union(size_t *par, size_t a, size_t b)
{
    a = rf_find(par, a);
    b = rf_find(par, b);
    if (a != b)
        par[a > b ? a : b] = a < b ? a : b;
}

static const corpus *sort_ctx;
static int cmp_idx_by_id(const void *x, const void *y)
{
    uint64_t a = sort_ctx->id[*(const size_t *)x], b = sort_ctx->id[*(const size_t *)y];
    return a < b ? -1 : a > b;
}

/* Reference clustering: labels[i] = smallest id of doc i's cluster. With
 * verify, the greedy leader split of the header, buckets in id order. */
static void ref_cluster(const corpus *c, bool verify, uint64_t *label)
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

static simlsh_index *corpus_index(const corpus *c, const simlsh_params *p)
{
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < c->n; i++)
        if (c->live[i])
            CHECK_OK(simlsh_index_insert(ix, c->id[i], c->sig[i]));
    return ix;
}

/* Every query (single, ids, batch), pairs and cluster against the reference. */
static void check_against_ref(const corpus *c, const simlsh_index *ix, bool store)
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

/* ---- tests ----------------------------------------------------------------------- */

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
    CHECK(simlsh_results_a(res) == NULL);
    CHECK(simlsh_results_b(res) == NULL);
    CHECK(simlsh_results_scores(res) == NULL);
    CHECK(simlsh_results_a(NULL) == NULL);
    CHECK(simlsh_results_truncated(res) == 0);
    CHECK(simlsh_results_truncated(NULL) == 0);
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

static void test_reference(int store, int big)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 400, 7 + (uint64_t)store, big);
    simlsh_index *ix = corpus_index(&c, p);
    check_against_ref(&c, ix, store);

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
        check_against_ref(&c, ix, store);
        CHECK_OK(simlsh_index_memory(&mem0, NULL, ix));
        for (size_t i = 0; i < c.n; i += 6) {
            CHECK_OK(simlsh_index_insert(ix, c.id[i], c.sig[i]));
            c.live[i] = true;
        }
        CHECK_OK(simlsh_index_memory(&mem1, NULL, ix));
        CHECK(mem1 == mem0); /* freed slots and table room reused */
        check_against_ref(&c, ix, store);
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
    check_against_ref(&c, ix, store);
    for (size_t i = 0; i < c.n; i += 2) {
        CHECK_OK(simlsh_index_insert(ix, c.id[i], c.sig[i]));
        c.live[i] = true;
    }
    check_against_ref(&c, ix, store);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
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
    CHECK(m1 == m0 && t1 == t0); /* reserved: no growth */
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

/* ---- persistence ------------------------------------------------------------------- */

static uint8_t *save_bytes(const simlsh_index *ix, size_t *n)
{
    CHECK_OK(simlsh_index_save(NULL, 0, n, ix));
    uint8_t *buf = malloc(*n);
    size_t n2 = 0;
    CHECK_OK(simlsh_index_save(buf, *n, &n2, ix));
    CHECK(n2 == *n);
    return buf;
}

/* Rewrite the checksum after an edit: hostile but well-formed input. */
static void reseal(uint8_t *buf, size_t n) { simlsh__frame_write_tail(buf, n); }

static void test_persistence(int store, int big)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.55));
    corpus_make(&c, p, 200, 31 + (uint64_t)store, big);
    simlsh_index *ix = corpus_index(&c, p);
    if (store)
        for (size_t i = 0; i < c.n; i += 5) {
            CHECK_OK(simlsh_index_remove(ix, c.id[i]));
            c.live[i] = false;
        }

    size_t n;
    uint8_t *buf = save_bytes(ix, &n);
    size_t cnt;
    CHECK_RC(simlsh_index_save(buf, n - 1, &cnt, ix), SIMLSH_EBUFSIZE);
    CHECK_RC(simlsh_index_save(buf, n, NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save(buf, n, &cnt, NULL), SIMLSH_EINVAL);

    simlsh_index *ld = NULL;
    CHECK_OK(simlsh_index_load(&ld, buf, n, NULL));
    check_against_ref(&c, ld, store);
    /* A loaded index tells how to sign queries for it. */
    {
        simlsh_params *lp = NULL;
        CHECK_OK(simlsh_index_params(&lp, ld));
        simlsh_signature *q = mk_sig(lp, 1000, 0, 80);
        CHECK(q != NULL);
        simlsh_results *qr = NULL;
        CHECK_OK(simlsh_results_new(&qr, NULL));
        CHECK_OK(simlsh_index_query(qr, ld, q, 0));
        double thr;
        CHECK_OK(simlsh_params_get_double(lp, SIMLSH_PARAM_THRESHOLD, &thr));
        CHECK(thr == 0.55);
        simlsh_results_free(qr);
        simlsh_signature_free(q);
        simlsh_params_free(lp);
    }
    uint64_t f1, f2;
    CHECK_OK(simlsh_index_fingerprint(&f1, ix));
    CHECK_OK(simlsh_index_fingerprint(&f2, ld));
    CHECK(f1 == f2);
    uint32_t b1, r1, b2, r2;
    simlsh_index_bands(&b1, &r1, ix);
    simlsh_index_bands(&b2, &r2, ld);
    CHECK(b1 == b2 && r1 == r2);
    /* The loaded index saves to the same size; and a second load-save
     * cycle is byte-identical (slots are then dense). */
    size_t n2, n3;
    uint8_t *buf2 = save_bytes(ld, &n2);
    CHECK(n2 == n);
    simlsh_index *ld2 = NULL;
    CHECK_OK(simlsh_index_load(&ld2, buf2, n2, NULL));
    uint8_t *buf3 = save_bytes(ld2, &n3);
    CHECK(n3 == n2 && memcmp(buf2, buf3, n2) == 0);
    free(buf2);
    free(buf3);
    simlsh_index_free(ld2);
    /* A loaded index takes inserts and removals like any other. */
    if (store) {
        CHECK_OK(simlsh_index_insert(ld, c.id[0], c.sig[0]));
        c.live[0] = true;
        CHECK_OK(simlsh_index_remove(ld, c.id[1]));
        c.live[1] = false;
        check_against_ref(&c, ld, store);
        CHECK_OK(simlsh_index_remove(ld, c.id[0]));
        CHECK_OK(simlsh_index_insert(ld, c.id[1], c.sig[1]));
        c.live[0] = false;
        c.live[1] = true;
    }
    simlsh_index_free(ld);

    /* Files. */
    char path[] = "/tmp/simlsh-test-index-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(simlsh_index_save_file(ix, path));
    CHECK_OK(simlsh_index_load_file(&ld, path, NULL));
    check_against_ref(&c, ld, store);
    simlsh_index_free(ld);
    ld = NULL;
    CHECK_RC(simlsh_index_save_file(NULL, path), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file(ix, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file(ix, "/nonexistent-dir-simlsh/x.idx"), SIMLSH_EIO);
    CHECK_RC(simlsh_index_load_file(&ld, "/nonexistent-dir-simlsh/x.idx", NULL), SIMLSH_EIO);
    CHECK(ld == NULL);
    CHECK_RC(simlsh_index_load_file(NULL, path, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file(&ld, NULL, NULL), SIMLSH_EINVAL);
    /* A truncated file. */
    FILE *fp = fopen(path, "wb");
    fwrite(buf, 1, n / 2, fp);
    fclose(fp);
    CHECK_RC(simlsh_index_load_file(&ld, path, NULL), SIMLSH_ECORRUPT);
    fp = fopen(path, "wb");
    fclose(fp);
    CHECK_RC(simlsh_index_load_file(&ld, path, NULL), SIMLSH_ECORRUPT);
    unlink(path);

    /* Bad arguments. */
    CHECK_RC(simlsh_index_load(NULL, buf, n, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load(&ld, NULL, n, NULL), SIMLSH_EINVAL);
    simlsh_allocator half = {tu_alloc_fn, NULL, NULL};
    CHECK_RC(simlsh_index_load(&ld, buf, n, &half), SIMLSH_EINVAL);

    /* Every truncation, and every single-byte corruption (the checksum or
     * the header catches each), fail cleanly. */
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        int rc = simlsh_index_load(&ld, buf, len, NULL);
        if (rc != SIMLSH_ECORRUPT || ld != NULL)
            bad++;
    }
    CHECK(bad == 0);
    bad = 0;
    for (size_t i = 0; i < n; i += (i < 256 ? 1 : 7)) {
        buf[i] ^= 0x5a;
        int rc = simlsh_index_load(&ld, buf, n, NULL);
        if ((rc != SIMLSH_ECORRUPT && rc != SIMLSH_EUNSUPPORTED) || ld != NULL)
            bad++;
        simlsh_index_free(ld);
        ld = NULL;
        buf[i] ^= 0x5a;
    }
    CHECK(bad == 0);

    /* Well-formed frames with hostile payloads. */
    uint8_t *h = malloc(n);
    const size_t P = SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    size_t rec = 8 + 4 * 16 + (store ? 4 * 64 : 0);
    struct {
        size_t off;
        int width;
        uint64_t value;
    } edits[] = {
        {P + 0, 4, 15},           /* bands disagree with the contract */
        {P + 4, 4, 3},            /* rows */
        {P + 8, 4, 2},            /* unknown flag */
        {P + 8, 4, store ? 0 : 1}, /* flag disagrees with the contract */
        {P + 12, 4, rec + 4},     /* record size */
        {P + 16, 8, 0xFFFFFFFFFFFFFFULL}, /* count far beyond the length */
        {P + 16, 8, 1},           /* count below the length */
        {P + 24 + rec + 8, 4, 0x12345678}, /* a band fingerprint */
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        if (!store && e == 7)
            continue; /* without signatures fingerprints are the data */
        memcpy(h, buf, n);
        if (edits[e].width == 4)
            simlsh__wr32(h + edits[e].off, (uint32_t)edits[e].value);
        else
            simlsh__wr64(h + edits[e].off, edits[e].value);
        reseal(h, n);
        CHECK_RC(simlsh_index_load(&ld, h, n, NULL), SIMLSH_ECORRUPT);
        CHECK(ld == NULL);
    }
    /* A duplicate id. */
    memcpy(h, buf, n);
    memcpy(h + P + 24 + rec, h + P + 24, rec);
    reseal(h, n);
    CHECK_RC(simlsh_index_load(&ld, h, n, NULL), SIMLSH_ECORRUPT);
    /* Payload shorter than its header. */
    {
        uint8_t small[SIMLSH__FRAME_OVERHEAD + 8];
        memcpy(small, buf, P);
        simlsh__wr64(small + 8, 8);
        memset(small + P, 0, 8);
        reseal(small, sizeof small);
        CHECK_RC(simlsh_index_load(&ld, small, sizeof small, NULL), SIMLSH_ECORRUPT);
    }
    /* Another object's bytes. */
    size_t sn;
    CHECK_OK(simlsh_signature_save(NULL, 0, &sn, c.sig[1]));
    uint8_t *sb = malloc(sn);
    CHECK_OK(simlsh_signature_save(sb, sn, &sn, c.sig[1]));
    CHECK_RC(simlsh_index_load(&ld, sb, sn, NULL), SIMLSH_ECORRUPT);
    free(sb);
    free(h);

    /* An empty index round-trips. */
    simlsh_index *e0 = NULL;
    CHECK_OK(simlsh_index_new(&e0, p));
    size_t en;
    uint8_t *eb = save_bytes(e0, &en);
    CHECK(en == SIMLSH__FRAME_OVERHEAD + 24);
    CHECK_OK(simlsh_index_load(&ld, eb, en, NULL));
    CHECK_OK(simlsh_index_count(&cnt, ld));
    CHECK(cnt == 0);
    simlsh_index_free(ld);
    free(eb);
    simlsh_index_free(e0);

    free(buf);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
}

/* ---- out of memory ------------------------------------------------------------------ */

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
#define STEP(expr)                                                                  \
    do {                                                                            \
        rc = (expr);                                                                \
        if (rc != 0) {                                                              \
            if (rc != SIMLSH_ENOMEM) {                                              \
                (*bad)++;                                                           \
                fprintf(stderr, "oom fail_at=%ld: %s -> %s\n", st->fail_at, #expr,  \
                        simlsh_error_name(rc));                                     \
            }                                                                       \
            goto out;                                                               \
        }                                                                           \
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
    test_results_api();
    test_new_and_params();
    test_insert_errors();
    test_reference(1, 0);
    test_reference(0, 0);
    test_reference(1, 1);
    test_reference(0, 1);
    test_planted();
    test_memory_reserve();
    test_persistence(1, 0);
    test_persistence(0, 0);
    test_persistence(1, 1);
    test_persistence(0, 1);
    test_oom();
    return tu_finish("index");
}
