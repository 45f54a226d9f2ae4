/*
 * Handles that know their type (issue 16): every public function that takes
 * a params, shingle set or signature handle refuses a handle of another type
 * with SIMLSH_EINVAL (the void _free functions do nothing), and the object
 * that was passed in is unchanged: FFIs pass handles untyped, and before the
 * tags simlsh_params_set_double(signature, ...) wrote into the signature.
 *
 * "Unchanged" is checked on the serialised bytes of the set and the
 * signature and on the params' description, before and after all the
 * wrong calls. Memory with the dead tag that _free leaves, or with no tag
 * at all, is refused too.
 */
#include "handle.h"
#include "testutil.h"

static simlsh_params *P;
static simlsh_shingleset *S;
static simlsh_signature *G;
static simlsh_results *R;
static simlsh_index *I;

typedef struct {
    uint8_t *set, *sig;
    size_t set_n, sig_n;
    char desc[512];
} snapshot;

static void snap(snapshot *s)
{
    CHECK_OK(simlsh_shingleset_save(NULL, 0, &s->set_n, S));
    CHECK_OK(simlsh_signature_save(NULL, 0, &s->sig_n, G));
    s->set = malloc(s->set_n);
    s->sig = malloc(s->sig_n);
    CHECK_OK(simlsh_shingleset_save(s->set, s->set_n, &s->set_n, S));
    CHECK_OK(simlsh_signature_save(s->sig, s->sig_n, &s->sig_n, G));
    size_t n;
    CHECK_OK(simlsh_params_describe(s->desc, sizeof s->desc, &n, P));
}

static void same(const snapshot *a, const snapshot *b)
{
    CHECK(a->set_n == b->set_n && memcmp(a->set, b->set, a->set_n) == 0);
    CHECK(a->sig_n == b->sig_n && memcmp(a->sig, b->sig, a->sig_n) == 0);
    CHECK(strcmp(a->desc, b->desc) == 0);
    free(a->set);
    free(a->sig);
    free(b->set);
    free(b->sig);
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
    static const simlsh_allocator_v2 v2 = SIMLSH_ALLOCATOR_V2_INIT;

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
}

int main(void)
{
    CHECK_OK(simlsh_params_new(&P, NULL));
    CHECK_OK(simlsh_params_preset(P, "dedup"));
    CHECK_OK(simlsh_shingleset_new(&S, P));
    CHECK_OK(simlsh_signature_new(&G, P));
    CHECK_OK(simlsh_results_new(&R, NULL));
    CHECK_OK(simlsh_index_new(&I, P));
    static const char text[] = "The quick brown fox jumps over the lazy dog.";
    CHECK_OK(simlsh_shingleset_add_text(S, text, sizeof text - 1));
    CHECK_OK(simlsh_signature_add_text(G, text, sizeof text - 1));
    CHECK_OK(simlsh_index_insert(I, 7, G));

    snapshot before, after;
    snap(&before);
    /* TODO(index tags): the index starts with its params today, so an index
     * passes for params; it is left out of params_calls until the index
     * carries its own tag. */
    void *not_params[] = {S, G, R};
    void *not_sets[] = {P, G, R, I};
    void *not_sigs[] = {P, S, R, I};
    for (size_t i = 0; i < sizeof not_params / sizeof not_params[0]; i++)
        params_calls(not_params[i]);
    for (size_t i = 0; i < sizeof not_sets / sizeof not_sets[0]; i++)
        set_calls(not_sets[i]);
    for (size_t i = 0; i < sizeof not_sigs / sizeof not_sigs[0]; i++)
        sig_calls(not_sigs[i]);
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
        simlsh_params_free((simlsh_params *)(void *)fake); /* a no-op, not a free() */
    }

    /* NULL is still EINVAL (or a no-op for free). */
    CHECK_RC(simlsh_params_set_int(NULL, SIMLSH_PARAM_K, 3), SIMLSH_EINVAL);
    simlsh_params_free(NULL);

    simlsh_index_free(I);
    simlsh_results_free(R);
    simlsh_signature_free(G);
    simlsh_shingleset_free(S);
    simlsh_params_free(P);
    return tu_finish("handles");
}
