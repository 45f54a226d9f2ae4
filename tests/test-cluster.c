/*
 * Clustering of long chains against a reference union-find.
 *
 * 40 chains of 50 documents: each document is a window of 72 features that
 * slides by 24 along its chain's stream, so a document is similar to its
 * neighbours (Jaccard 0.5) and hardly to anything else. Clusters are then
 * long paths, and union-find trees grow deep, which groups of a few
 * near-copies never make happen. Ids are shuffled and inserted in shuffled
 * order. The reference below recomputes the buckets from the public
 * signature values and joins them with its own union-find, with and without
 * SIMLSH_QUERY_VERIFY (the greedy leader split documented in simlsh.h).
 */
#include "testutil.h"

enum {
    CHAINS = 40,
    PER_CHAIN = 50,
    NDOCS = CHAINS * PER_CHAIN
};
enum {
    P = 128,
    BANDS = 32,
    ROWS = 4,
    WIDTH = 72,
    STEP = 24
};
/* 0.4 * P = 51.2: no estimate k / P equals the threshold, so ">=" cannot
 * depend on rounding. */
#define THRESHOLD 0.4

static uint32_t values[NDOCS][P];
static uint64_t ids[NDOCS];
static size_t par[NDOCS];

static size_t uf_find(size_t i)
{
    while (par[i] != i)
        i = par[i] = par[par[i]];
    return i;
}
static void uf_union(size_t a, size_t b)
{
    a = uf_find(a);
    b = uf_find(b);
    if (a != b)
        par[a < b ? b : a] = a < b ? a : b;
}

static int band_cmp_band;
static int cmp_band_then_id(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int c = memcmp(values[a] + band_cmp_band * ROWS, values[b] + band_cmp_band * ROWS,
                   ROWS * sizeof(uint32_t));
    if (c != 0)
        return c;
    return ids[a] < ids[b] ? -1 : ids[a] > ids[b];
}

/* ids[i] = 1000 + 7 * perm[i]: back from an id to its document. */
static size_t id_to_doc[NDOCS];
static size_t doc_of(uint64_t id)
{
    if (id < 1000 || (id - 1000) % 7 != 0 || (id - 1000) / 7 >= NDOCS)
        return NDOCS;
    return id_to_doc[(id - 1000) / 7];
}

static double estimate(size_t a, size_t b)
{
    int eq = 0;
    for (int i = 0; i < P; i++)
        eq += values[a][i] == values[b][i];
    return (double)eq / P;
}

/* label[i] = smallest id in doc i's cluster, per the header's definition. */
static void ref_cluster(int verify, uint64_t *label)
{
    static size_t order[NDOCS], leaders[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        par[i] = i;
    for (int band = 0; band < BANDS; band++) {
        for (size_t i = 0; i < NDOCS; i++)
            order[i] = i;
        band_cmp_band = band;
        qsort(order, NDOCS, sizeof *order, cmp_band_then_id);
        for (size_t s = 0, e; s < NDOCS; s = e) {
            for (e = s + 1; e < NDOCS; e++)
                if (memcmp(values[order[s]] + band * ROWS, values[order[e]] + band * ROWS,
                           ROWS * sizeof(uint32_t)) != 0)
                    break;
            if (!verify) {
                for (size_t k = s + 1; k < e; k++)
                    uf_union(order[s], order[k]);
                continue;
            }
            size_t nl = 0;
            for (size_t k = s; k < e; k++) {
                size_t l = 0;
                while (l < nl && estimate(order[k], leaders[l]) < THRESHOLD)
                    l++;
                if (l < nl)
                    uf_union(order[k], leaders[l]);
                else
                    leaders[nl++] = order[k];
            }
        }
    }
    for (size_t i = 0; i < NDOCS; i++)
        label[i] = UINT64_MAX;
    for (size_t i = 0; i < NDOCS; i++) {
        size_t r = uf_find(i);
        label[r] = ids[i] < label[r] ? ids[i] : label[r];
    }
    for (size_t i = 0; i < NDOCS; i++)
        label[i] = label[uf_find(i)];
}

static void test_chains(uint64_t seed)
{
    simlsh_params *p;
    simlsh_index *ix;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, P));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, BANDS));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, ROWS));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, (int64_t)(seed & 0xffff)));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, THRESHOLD));
    CHECK_OK(simlsh_index_new(&ix, p));

    /* shuffled, sparse ids; doc i is chain i / PER_CHAIN, position i % PER_CHAIN */
    tu_rng r = {seed};
    static size_t perm[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        perm[i] = i;
    for (size_t i = NDOCS - 1; i > 0; i--) {
        size_t j = tu_below(&r, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < NDOCS; i++) {
        ids[i] = 1000 + 7 * (uint64_t)perm[i];
        id_to_doc[perm[i]] = i;
    }

    simlsh_signature *sig;
    CHECK_OK(simlsh_signature_new(&sig, p));
    for (size_t k = 0; k < NDOCS; k++) {
        size_t i = perm[k]; /* insertion order is shuffled too */
        uint64_t f[WIDTH], chain = i / PER_CHAIN, pos = i % PER_CHAIN;
        for (size_t w = 0; w < WIDTH; w++)
            f[w] = (chain << 40) | (pos * STEP + w);
        size_t n;
        CHECK_OK(simlsh_signature_clear(sig));
        CHECK_OK(simlsh_signature_add_features(sig, f, WIDTH));
        CHECK_OK(simlsh_signature_values(values[i], P, &n, sig));
        CHECK_OK(simlsh_index_insert(ix, ids[i], sig));
    }
    simlsh_signature_free(sig);

    static uint64_t want[NDOCS];
    simlsh_results *res;
    CHECK_OK(simlsh_results_new(&res, NULL));
    for (int verify = 0; verify <= 1; verify++) {
        ref_cluster(verify, want);
        CHECK_OK(simlsh_index_cluster(res, ix, verify ? SIMLSH_QUERY_VERIFY : 0));
        CHECK(simlsh_results_count(res) == NDOCS);
        size_t wrong = 0, clusters = 0, mixed = 0;
        for (size_t k = 0; k < simlsh_results_count(res); k++) {
            uint64_t id, label;
            CHECK_OK(simlsh_results_row(res, k, &id, &label, NULL));
            size_t i = doc_of(id), l = doc_of(label);
            if (i == NDOCS || l == NDOCS || want[i] != label)
                wrong++;
            else if (i / PER_CHAIN != l / PER_CHAIN)
                mixed++; /* different chains share no feature */
            clusters += id == label;
        }
        printf("seed %llu verify %d: %zu clusters of %d documents, %zu mislabelled\n",
               (unsigned long long)seed, verify, clusters, NDOCS, wrong);
        CHECK(wrong == 0);
        CHECK(mixed == 0);
        /* chains are found: far fewer clusters than documents */
        CHECK(clusters < NDOCS / 4);
    }
    simlsh_results_free(res);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

int main(void)
{
    test_chains(1);
    test_chains(2);
    return tu_finish("cluster");
}
