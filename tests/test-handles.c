/*
 * Handles that know their type (issue 16): every public function that takes
 * a handle (params, shingle set, signature, results, index, forest,
 * ensemble) refuses a handle of another type with SIMLSH_EINVAL (the void
 * _free functions do nothing; results_count reads 0 and the columns an
 * empty array), and the object that was passed in is unchanged: FFIs pass
 * handles untyped, and before the tags simlsh_params_set_double(signature,
 * ...) wrote into the signature. Every handle type is tried in every
 * position of every other type, e.g. results as index and index as results.
 *
 * "Unchanged" is checked on the serialised bytes of the set, signature,
 * index, forest and ensemble, the params' description and the results'
 * rows, before and after all the wrong calls. Memory with the dead tag that
 * _free leaves, or with no tag at all, is refused too.
 */
#include "handle.h"
#include "testutil.h"

static simlsh_params *P;
static simlsh_shingleset *S;
static simlsh_signature *G;
static simlsh_results *R;
static simlsh_index *I;
static simlsh_forest *F;
static simlsh_ensemble *E;

typedef struct {
    uint8_t *set, *sig, *ix, *fo, *en;
    size_t set_n, sig_n, ix_n, fo_n, en_n;
    char desc[512];
    size_t rows, nq, off[2];
    uint64_t a[4], b[4];
    double score[4];
    int truncated;
} snapshot;

#define SAVED(fn, obj, buf, n)               \
    do {                                     \
        CHECK_OK(fn(NULL, 0, &(n), obj));    \
        (buf) = malloc(n);                   \
        CHECK_OK(fn((buf), (n), &(n), obj)); \
    } while (0)

static void snap(snapshot *s)
{
    memset(s, 0, sizeof *s);
    SAVED(simlsh_shingleset_save, S, s->set, s->set_n);
    SAVED(simlsh_signature_save, G, s->sig, s->sig_n);
    SAVED(simlsh_index_save, I, s->ix, s->ix_n);
    SAVED(simlsh_forest_save, F, s->fo, s->fo_n);
    SAVED(simlsh_ensemble_save, E, s->en, s->en_n);
    size_t n;
    CHECK_OK(simlsh_params_describe(s->desc, sizeof s->desc, &n, P));
    s->rows = simlsh_results_count(R);
    CHECK(s->rows >= 1 && s->rows <= 4);
    for (size_t i = 0; i < s->rows && i < 4; i++)
        CHECK_OK(simlsh_results_row(R, i, &s->a[i], &s->b[i], &s->score[i]));
    CHECK_OK(simlsh_results_offset(&s->off[0], R, 0));
    CHECK_OK(simlsh_results_offset(&s->off[1], R, 1));
    s->truncated = simlsh_results_truncated(R);
}

static void same(const snapshot *a, const snapshot *b)
{
    CHECK(a->set_n == b->set_n && memcmp(a->set, b->set, a->set_n) == 0);
    CHECK(a->sig_n == b->sig_n && memcmp(a->sig, b->sig, a->sig_n) == 0);
    CHECK(a->ix_n == b->ix_n && memcmp(a->ix, b->ix, a->ix_n) == 0);
    CHECK(a->fo_n == b->fo_n && memcmp(a->fo, b->fo, a->fo_n) == 0);
    CHECK(a->en_n == b->en_n && memcmp(a->en, b->en, a->en_n) == 0);
    CHECK(strcmp(a->desc, b->desc) == 0);
    CHECK(a->rows == b->rows && a->off[0] == b->off[0] && a->off[1] == b->off[1]);
    CHECK(memcmp(a->a, b->a, sizeof a->a) == 0 && memcmp(a->b, b->b, sizeof a->b) == 0);
    CHECK(memcmp(a->score, b->score, sizeof a->score) == 0 && a->truncated == b->truncated);
    const snapshot *both[] = {a, b};
    for (int i = 0; i < 2; i++) {
        free(both[i]->set);
        free(both[i]->sig);
        free(both[i]->ix);
        free(both[i]->fo);
        free(both[i]->en);
    }
}

/* Every function that takes params, called with h (not params). */
static void params_calls(void *h)
{
    simlsh_params *p = h;
    int64_t i64;
    double d;
    uint64_t u64;
    size_t n;
    char buf[64];
    simlsh_params *pout = (simlsh_params *)(void *)&n;
    simlsh_shingleset *sout = (simlsh_shingleset *)(void *)&n;
    simlsh_signature *gout = (simlsh_signature *)(void *)&n;
    simlsh_index *iout = (simlsh_index *)(void *)&n;
    simlsh_forest *fout = (simlsh_forest *)(void *)&n;
    simlsh_ensemble *eout = (simlsh_ensemble *)(void *)&n;
    static const simlsh_allocator_v2 v2 = SIMLSH_ALLOCATOR_V2_INIT;
    uint32_t vals[128] = {0};
    uint64_t keys[64];
    uint8_t empty[1];
    const void *texts[1] = {"abcdefgh"};
    size_t lens[1] = {8};

    simlsh_params_free(p);
    CHECK_RC(simlsh_params_copy(&pout, p), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_K, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_get_int(p, SIMLSH_PARAM_K, &i64), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_get_double(p, SIMLSH_PARAM_THRESHOLD, &d), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_fingerprint(&u64, p, SIMLSH_SCOPE_INDEX), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&u64, p, "ab", 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_allocator(p, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_allocator(p, &v2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_preset(p, "dedup"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_describe(buf, sizeof buf, &n, p), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_new(&sout, p), SIMLSH_EINVAL);
    CHECK(sout == NULL);
    CHECK_RC(simlsh_signature_new(&gout, p), SIMLSH_EINVAL);
    CHECK(gout == NULL);
    gout = (simlsh_signature *)(void *)&n;
    CHECK_RC(simlsh_signature_from_values(&gout, p, vals, 128), SIMLSH_EINVAL);
    CHECK(gout == NULL);
    CHECK_RC(simlsh_index_new(&iout, p), SIMLSH_EINVAL);
    CHECK(iout == NULL);
    CHECK_RC(simlsh_forest_new(&fout, p), SIMLSH_EINVAL);
    CHECK(fout == NULL);
    CHECK_RC(simlsh_ensemble_new(&eout, p), SIMLSH_EINVAL);
    CHECK(eout == NULL);
    CHECK_RC(simlsh_sign_batch(vals, empty, p, texts, lens, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_band_keys_batch(keys, p, vals, 1), SIMLSH_EINVAL);
}

/* Every function that takes a shingle set, called with h (not a set). */
static void set_calls(void *h)
{
    simlsh_shingleset *s = h;
    size_t n;
    uint64_t u64, feats[2] = {1, 2};
    double d;
    simlsh_shingleset *sout = (simlsh_shingleset *)(void *)&n;
    simlsh_params *pout = (simlsh_params *)(void *)&n;

    simlsh_shingleset_free(s);
    CHECK_RC(simlsh_shingleset_copy(&sout, s), SIMLSH_EINVAL);
    CHECK(sout == NULL);
    CHECK_RC(simlsh_shingleset_begin(s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_feed(s, "abcdef", 6), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_end(s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_abort(s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_add_text(s, "abcdefgh", 8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_add_features(s, feats, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_clear(s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_count(&n, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_hashes(&u64, 1, &n, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_jaccard(&d, s, S), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_jaccard(&d, S, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_containment(&d, s, S), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_containment(&d, S, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_params(&pout, s), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_shingleset_fingerprint(&u64, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_save(NULL, 0, &n, s), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_add_shingleset(G, s), SIMLSH_EINVAL);
}

/* Every function that takes a signature, called with h (not a signature). */
static void sig_calls(void *h)
{
    simlsh_signature *g = h;
    size_t n;
    uint32_t vals[128];
    uint64_t u64, keys[4], feats[2] = {1, 2};
    double d;
    simlsh_signature *gout = (simlsh_signature *)(void *)&n;
    simlsh_params *pout = (simlsh_params *)(void *)&n;

    simlsh_signature_free(g);
    CHECK_RC(simlsh_signature_copy(&gout, g), SIMLSH_EINVAL);
    CHECK(gout == NULL);
    CHECK_RC(simlsh_signature_begin(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_feed(g, "abcdef", 6), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_end(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_abort(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_add_text(g, "abcdefgh", 8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_add_features(g, feats, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_add_shingleset(g, S), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_merge(g, G), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_merge(G, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_clear(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_jaccard(&d, g, G), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_jaccard(&d, G, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_is_empty(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_num_perm(g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_values(vals, 128, &n, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(keys, 4, g, 4, 8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_params(&pout, g), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_signature_fingerprint(&u64, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_save(NULL, 0, &n, g), SIMLSH_EINVAL);
    /* Where other objects take a signature. */
    uint64_t ids[1] = {9};
    const simlsh_signature *gs[1] = {g};
    CHECK_RC(simlsh_index_insert(I, 9, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_batch(I, ids, gs, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(R, I, g, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_ids(&u64, 1, &n, I, g, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(R, I, gs, 1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(R, I, g, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch_v2(R, I, gs, 1, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_insert(F, 9, g), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_query_topk(R, F, g, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_insert(E, 9, g, 10), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_query(R, E, g, 10, 0.5, 0), SIMLSH_EINVAL);
}

/* Every function that takes results, called with h (not results). */
static void results_calls(void *h)
{
    simlsh_results *r = h;
    size_t n = 0, off;
    uint64_t a[2] = {1, 2}, b[2] = {2, 3}, u64, order[1] = {1};
    double d, sc[2] = {0.9, 0.8};
    const simlsh_signature *gs[1] = {G};

    simlsh_results_free(r);
    CHECK(simlsh_results_count(r) == 0);
    CHECK_RC(simlsh_results_row(r, 0, &u64, &u64, &d), SIMLSH_EINVAL);
    /* Never NULL, and never the other object's memory. */
    CHECK(simlsh_results_a(r) != NULL && (const void *)simlsh_results_a(r) != h);
    CHECK(simlsh_results_b(r) != NULL && (const void *)simlsh_results_b(r) != h);
    CHECK(simlsh_results_scores(r) != NULL && (const void *)simlsh_results_scores(r) != h);
    CHECK_RC(simlsh_results_offset(&off, r, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_results_truncated(r), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(r, I, G, SIMLSH_QUERY_VERIFY), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(r, I, gs, 1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(r, I, G, SIMLSH_QUERY_VERIFY, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch_v2(r, I, gs, 1, SIMLSH_QUERY_VERIFY, 0.5), SIMLSH_EINVAL);
    uint32_t vals[128] = {1};
    CHECK_RC(simlsh_index_query_values(r, I, vals, 1, 128, 128, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs(r, I, 0, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs_v2(r, I, 0, 0, 0.0, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster(r, I, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster_v2(r, I, 0, 0.0, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_query_topk(r, F, G, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_query(r, E, G, 10, 0.5, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_components(r, &n, a, b, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_star(r, &n, a, b, sc, 2, order, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batches(r, &n, a, b, sc, 2, 8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_group_batch_ids(&u64, 1, &n, r, 0), SIMLSH_EINVAL);
}

/* Every function that takes an index, called with h (not an index). */
static void index_calls(void *h)
{
    simlsh_index *x = h;
    size_t n, m;
    uint32_t b32, r32, vals[128] = {1};
    uint64_t u64, ids[1] = {9};
    const void *ud;
    int err;
    const simlsh_signature *gs[1] = {G};
    simlsh_params *pout = (simlsh_params *)(void *)&n;
    simlsh_signature *gout = (simlsh_signature *)(void *)&n;

    simlsh_index_free(x);
    CHECK_RC(simlsh_index_bands(&b32, &r32, x), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_params(&pout, x), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_index_fingerprint(&u64, x), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert(x, 9, G), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_values(x, ids, vals, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_batch(x, ids, gs, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_remove(x, 7), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_contains(x, 7), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_signature(&gout, x, 7), SIMLSH_EINVAL);
    CHECK(gout == NULL);
    CHECK_RC(simlsh_index_count(&n, x), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_reserve(x, 100), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_clear(x), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_memory(&n, &m, x), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query(R, x, G, SIMLSH_QUERY_VERIFY), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_ids(&u64, 1, &n, x, G, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch(R, x, gs, 1, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(R, x, G, SIMLSH_QUERY_VERIFY, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch_v2(R, x, gs, 1, SIMLSH_QUERY_VERIFY, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_values(R, x, vals, 1, 128, 128, 0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs(R, x, 0, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_pairs_v2(R, x, 0, 0, 0.0, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster(R, x, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_cluster_v2(R, x, 0, 0.0, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save(NULL, 0, &n, x), SIMLSH_EINVAL);
    /* A directory that does not exist: a wrong handle must fail first. */
    CHECK_RC(simlsh_index_save_file(x, "/nonexistent-simlsh/ix"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file_v2(&err, x, "/nonexistent-simlsh/ix", 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_set_userdata(x, "abc", 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_userdata(&ud, &n, x), SIMLSH_EINVAL);
    simlsh_index *iout = (simlsh_index *)(void *)&n;
    CHECK_RC(simlsh_index_copy(&iout, x), SIMLSH_EINVAL);
    CHECK(iout == NULL);
    CHECK_RC(simlsh_index_merge(x, I), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_merge(I, x), SIMLSH_EINVAL);
}

/* Every function that takes a forest, called with h (not a forest). */
static void forest_calls(void *h)
{
    simlsh_forest *f = h;
    size_t n;
    simlsh_params *pout = (simlsh_params *)(void *)&n;

    simlsh_forest_free(f);
    CHECK_RC(simlsh_forest_params(&pout, f), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_forest_insert(f, 9, G), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_remove(f, 7), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_count(&n, f), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_query_topk(R, f, G, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_forest_save(NULL, 0, &n, f), SIMLSH_EINVAL);
}

/* Every function that takes an ensemble, called with h (not an ensemble). */
static void ensemble_calls(void *h)
{
    simlsh_ensemble *e = h;
    size_t n;
    simlsh_params *pout = (simlsh_params *)(void *)&n;

    simlsh_ensemble_free(e);
    CHECK_RC(simlsh_ensemble_params(&pout, e), SIMLSH_EINVAL);
    CHECK(pout == NULL);
    CHECK_RC(simlsh_ensemble_insert(e, 9, G, 10), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_remove(e, 7), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_count(&n, e), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_query(R, e, G, 10, 0.5, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_ensemble_save(NULL, 0, &n, e), SIMLSH_EINVAL);
}

typedef void (*family_fn)(void *h);

int main(void)
{
    CHECK_OK(simlsh_params_new(&P, NULL));
    CHECK_OK(simlsh_params_preset(P, "dedup"));
    CHECK_OK(simlsh_shingleset_new(&S, P));
    CHECK_OK(simlsh_signature_new(&G, P));
    CHECK_OK(simlsh_results_new(&R, NULL));
    CHECK_OK(simlsh_index_new(&I, P));
    CHECK_OK(simlsh_forest_new(&F, P));
    CHECK_OK(simlsh_ensemble_new(&E, P));
    static const char text[] = "The quick brown fox jumps over the lazy dog.";
    CHECK_OK(simlsh_shingleset_add_text(S, text, sizeof text - 1));
    CHECK_OK(simlsh_signature_add_text(G, text, sizeof text - 1));
    CHECK_OK(simlsh_index_insert(I, 7, G));
    CHECK_OK(simlsh_forest_insert(F, 7, G));
    CHECK_OK(simlsh_ensemble_insert(E, 7, G, 10));
    CHECK_OK(simlsh_index_query(R, I, G, SIMLSH_QUERY_VERIFY));

    snapshot before, after;
    snap(&before);
    /* Every handle in every family's position but its own: the index,
     * forest and ensemble keep a params copy (with its tag) inside, and
     * must not pass for params. */
    void *all[] = {P, S, G, R, I, F, E};
    const struct {
        family_fn fn;
        void *own;
    } families[] = {{params_calls, P}, {set_calls, S},    {sig_calls, G},     {results_calls, R},
                    {index_calls, I},  {forest_calls, F}, {ensemble_calls, E}};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (all[i] != families[f].own)
                families[f].fn(all[i]);
    snap(&after);
    same(&before, &after);

    /* The objects still work after all that (nothing was freed). */
    double d = 0;
    CHECK_OK(simlsh_signature_jaccard(&d, G, G));
    CHECK(d == 1.0);
    size_t n = 0;
    CHECK_OK(simlsh_index_count(&n, I));
    CHECK(n == 1);
    CHECK_OK(simlsh_index_query(R, I, G, SIMLSH_QUERY_VERIFY));
    CHECK(simlsh_results_count(R) == 1);
    CHECK_OK(simlsh_forest_count(&n, F));
    CHECK(n == 1);
    CHECK_OK(simlsh_ensemble_count(&n, E));
    CHECK(n == 1);

    /* A freed object carries the dead tag (handle.h), which every check
     * refuses, as it refuses memory that never held an object. */
    uint32_t fake[64];
    int64_t v = 0;
    for (int round = 0; round < 2; round++) {
        memset(fake, 0, sizeof fake);
        fake[0] = round ? SIMLSH__TAG_DEAD : 0;
        CHECK_RC(simlsh_params_get_int((simlsh_params *)(void *)fake, SIMLSH_PARAM_K, &v),
                 SIMLSH_EINVAL);
        CHECK_RC(simlsh_signature_num_perm((simlsh_signature *)(void *)fake), SIMLSH_EINVAL);
        CHECK_RC(simlsh_shingleset_clear((simlsh_shingleset *)(void *)fake), SIMLSH_EINVAL);
        CHECK_RC(simlsh_index_clear((simlsh_index *)(void *)fake), SIMLSH_EINVAL);
        CHECK_RC(simlsh_forest_count(&n, (simlsh_forest *)(void *)fake), SIMLSH_EINVAL);
        CHECK_RC(simlsh_ensemble_count(&n, (simlsh_ensemble *)(void *)fake), SIMLSH_EINVAL);
        CHECK_RC(simlsh_results_truncated((simlsh_results *)(void *)fake), SIMLSH_EINVAL);
        simlsh_params_free((simlsh_params *)(void *)fake); /* a no-op, not a free() */
        simlsh_results_free((simlsh_results *)(void *)fake);
        simlsh_index_free((simlsh_index *)(void *)fake);
        simlsh_forest_free((simlsh_forest *)(void *)fake);
        simlsh_ensemble_free((simlsh_ensemble *)(void *)fake);
    }

    /* NULL is still EINVAL (or a no-op for free). */
    CHECK_RC(simlsh_params_set_int(NULL, SIMLSH_PARAM_K, 3), SIMLSH_EINVAL);
    simlsh_params_free(NULL);

    simlsh_ensemble_free(E);
    simlsh_forest_free(F);
    simlsh_index_free(I);
    simlsh_results_free(R);
    simlsh_signature_free(G);
    simlsh_shingleset_free(S);
    simlsh_params_free(P);
    return tu_finish("handles");
}
