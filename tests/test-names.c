/*
 * Run-time names of constants, the presets and the contract description
 * (issue 16, items 1 and 6).
 */
#include "testutil.h"

static const int kinds[] = {
    SIMLSH_KIND_ERROR,      SIMLSH_KIND_PARAM,         SIMLSH_KIND_UNIT,
    SIMLSH_KIND_NORMALIZE,  SIMLSH_KIND_UTF8_POLICY,   SIMLSH_KIND_SCHEME,
    SIMLSH_KIND_ISA,        SIMLSH_KIND_SCOPE,         SIMLSH_KIND_QUERY_FLAG,
    SIMLSH_KIND_PRESET,     SIMLSH_KIND_DEDUP_MODE,    SIMLSH_KIND_DEDUP_KEY,
    SIMLSH_KIND_DEDUP_STAT, SIMLSH_KIND_DEDUP_CLUSTER,
};

static void check_value(int kind, const char *name, int64_t want)
{
    int64_t v = -99;
    CHECK_OK(simlsh_constant_value(&v, kind, name));
    CHECK(v == want);
    const char *n = simlsh_constant_name(kind, want);
    CHECK(n != NULL && strcmp(n, name) == 0);
}

static void names(void)
{
    /* Every kind enumerates, and name <-> value round-trips both ways. */
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        size_t i = 0;
        int64_t v, prev = 0;
        const char *n;
        while (simlsh_constant_at(&v, &n, kinds[k], i) == 0) {
            int64_t back = -99;
            CHECK(n != NULL && *n != '\0');
            CHECK_OK(simlsh_constant_value(&back, kinds[k], n));
            CHECK(back == v);
            CHECK(simlsh_constant_name(kinds[k], v) == n);
            if (i > 0)
                CHECK(kinds[k] == SIMLSH_KIND_ERROR ? v < prev : v > prev);
            prev = v;
            i++;
        }
        CHECK(i > 0);
        CHECK_RC(simlsh_constant_at(&v, &n, kinds[k], i), SIMLSH_ENOTFOUND);
        CHECK_RC(simlsh_constant_value(&v, kinds[k], "no such name"), SIMLSH_ENOTFOUND);
        CHECK(simlsh_constant_name(kinds[k], 1000000) == NULL);
    }
    /* The values the header gives, by name. */
    check_value(SIMLSH_KIND_ERROR, "OK", SIMLSH_OK);
    check_value(SIMLSH_KIND_ERROR, "EINVAL", SIMLSH_EINVAL);
    check_value(SIMLSH_KIND_ERROR, "EIO", SIMLSH_EIO);
    check_value(SIMLSH_KIND_UNIT, "byte", SIMLSH_UNIT_BYTE);
    check_value(SIMLSH_KIND_UNIT, "char", SIMLSH_UNIT_CHAR);
    check_value(SIMLSH_KIND_UNIT, "word", SIMLSH_UNIT_WORD);
    check_value(SIMLSH_KIND_NORMALIZE, "lower", SIMLSH_NORM_LOWER_ASCII);
    check_value(SIMLSH_KIND_NORMALIZE, "space", SIMLSH_NORM_COLLAPSE_SPACE);
    check_value(SIMLSH_KIND_NORMALIZE, "punct", SIMLSH_NORM_STRIP_PUNCT);
    check_value(SIMLSH_KIND_NORMALIZE, "casefold", SIMLSH_NORM_CASEFOLD);
    check_value(SIMLSH_KIND_NORMALIZE, "nfkc", SIMLSH_NORM_NFKC);
    check_value(SIMLSH_KIND_UTF8_POLICY, "replace", SIMLSH_UTF8_REPLACE);
    check_value(SIMLSH_KIND_UTF8_POLICY, "reject", SIMLSH_UTF8_REJECT);
    check_value(SIMLSH_KIND_SCHEME, "oph", SIMLSH_SCHEME_OPH);
    check_value(SIMLSH_KIND_SCHEME, "classic", SIMLSH_SCHEME_CLASSIC);
    check_value(SIMLSH_KIND_ISA, "auto", SIMLSH_ISA_AUTO);
    check_value(SIMLSH_KIND_ISA, "scalar", SIMLSH_ISA_SCALAR);
    check_value(SIMLSH_KIND_ISA, "avx2", SIMLSH_ISA_AVX2);
    check_value(SIMLSH_KIND_ISA, "avx512", SIMLSH_ISA_AVX512);
    check_value(SIMLSH_KIND_SCOPE, "shingles", SIMLSH_SCOPE_SHINGLES);
    check_value(SIMLSH_KIND_SCOPE, "signature", SIMLSH_SCOPE_SIGNATURE);
    check_value(SIMLSH_KIND_SCOPE, "index", SIMLSH_SCOPE_INDEX);
    check_value(SIMLSH_KIND_QUERY_FLAG, "verify", SIMLSH_QUERY_VERIFY);
    check_value(SIMLSH_KIND_PRESET, "default", 0);
    check_value(SIMLSH_KIND_PRESET, "dedup", 1);
    check_value(SIMLSH_KIND_DEDUP_MODE, "none", SIMLSH_DEDUP_NONE);
    check_value(SIMLSH_KIND_DEDUP_MODE, "estimate", SIMLSH_DEDUP_ESTIMATE);
    check_value(SIMLSH_KIND_DEDUP_MODE, "exact", SIMLSH_DEDUP_EXACT);
    check_value(SIMLSH_KIND_DEDUP_KEY, "threads", SIMLSH_DEDUP_THREADS);
    check_value(SIMLSH_KIND_DEDUP_KEY, "memory", SIMLSH_DEDUP_MEMORY);
    check_value(SIMLSH_KIND_DEDUP_KEY, "prefilter", SIMLSH_DEDUP_PREFILTER);
    check_value(SIMLSH_KIND_DEDUP_KEY, "keep_below", SIMLSH_DEDUP_KEEP_BELOW);
    check_value(SIMLSH_KIND_DEDUP_KEY, "giant", SIMLSH_DEDUP_GIANT);
    check_value(SIMLSH_KIND_DEDUP_KEY, "giant_cost", SIMLSH_DEDUP_GIANT_COST);
    check_value(SIMLSH_KIND_DEDUP_KEY, "cluster", SIMLSH_DEDUP_CLUSTER);
    check_value(SIMLSH_KIND_DEDUP_KEY, "link_kept", SIMLSH_DEDUP_LINK_KEPT);
    check_value(SIMLSH_KIND_DEDUP_KEY, "sample_memory", SIMLSH_DEDUP_SAMPLE_MEMORY);
    check_value(SIMLSH_KIND_DEDUP_CLUSTER, "star", SIMLSH_DEDUP_STAR);
    check_value(SIMLSH_KIND_DEDUP_CLUSTER, "components", SIMLSH_DEDUP_COMPONENTS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "visits", SIMLSH_DEDUP_STAT_VISITS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "candidates", SIMLSH_DEDUP_STAT_CANDIDATES);
    check_value(SIMLSH_KIND_DEDUP_STAT, "exact", SIMLSH_DEDUP_STAT_EXACT);
    check_value(SIMLSH_KIND_DEDUP_STAT, "identical", SIMLSH_DEDUP_STAT_IDENTICAL);
    check_value(SIMLSH_KIND_DEDUP_STAT, "estimated", SIMLSH_DEDUP_STAT_ESTIMATED);
    check_value(SIMLSH_KIND_DEDUP_STAT, "texts", SIMLSH_DEDUP_STAT_TEXTS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "batches", SIMLSH_DEDUP_STAT_BATCHES);
    check_value(SIMLSH_KIND_DEDUP_STAT, "set_bytes", SIMLSH_DEDUP_STAT_SET_BYTES);
    check_value(SIMLSH_KIND_DEDUP_STAT, "groups", SIMLSH_DEDUP_STAT_GROUPS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "members", SIMLSH_DEDUP_STAT_MEMBERS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "edits", SIMLSH_DEDUP_STAT_EDITS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "set_aside", SIMLSH_DEDUP_STAT_SET_ASIDE);
    check_value(SIMLSH_KIND_DEDUP_STAT, "set_aside_members", SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS);
    check_value(SIMLSH_KIND_DEDUP_STAT, "sampled", SIMLSH_DEDUP_STAT_SAMPLED);
    /* The same name in two kinds: each kind answers for its own. */
    CHECK_RC(simlsh_constant_value(&(int64_t){0}, SIMLSH_KIND_DEDUP_KEY, "exact"),
             SIMLSH_ENOTFOUND);
    CHECK_RC(simlsh_constant_value(&(int64_t){0}, SIMLSH_KIND_DEDUP_MODE, "visits"),
             SIMLSH_ENOTFOUND);
    CHECK(simlsh_constant_name(SIMLSH_KIND_DEDUP_MODE, -1) == NULL);
    CHECK(simlsh_constant_name(SIMLSH_KIND_DEDUP_MODE, SIMLSH_DEDUP_EXACT + 1) == NULL);
    /* The engine takes the settings by these values. */
    {
        simlsh_params *p;
        simlsh_index *ix;
        simlsh_dedup *d;
        int64_t key = -1, mode = -1;
        CHECK_OK(simlsh_params_new(&p, NULL));
        CHECK_OK(simlsh_index_new(&ix, p));
        CHECK_OK(simlsh_constant_value(&mode, SIMLSH_KIND_DEDUP_MODE, "exact"));
        CHECK_OK(simlsh_dedup_new(&d, ix, (int)mode, 0.8));
        CHECK_OK(simlsh_constant_value(&key, SIMLSH_KIND_DEDUP_KEY, "giant_cost"));
        CHECK_OK(simlsh_dedup_set(d, (int)key, 3));
        CHECK_RC(simlsh_dedup_set(d, (int)key, -1), SIMLSH_EINVAL);
        simlsh_dedup_free(d);
        simlsh_index_free(ix);
        simlsh_params_free(p);
    }
    /* Errors and keys agree with the older name functions. */
    for (int e = 0; e >= -12; e--)
        CHECK(strcmp(simlsh_constant_name(SIMLSH_KIND_ERROR, e), simlsh_error_name(e)) == 0);
    for (int key = 0; key < 64; key++) {
        const char *a = simlsh_constant_name(SIMLSH_KIND_PARAM, key);
        const char *b = simlsh_params_key_name(key);
        CHECK((a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0));
    }
    int64_t v;
    CHECK_RC(simlsh_constant_value(&v, 0, "char"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_constant_value(&v, 99, "char"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_constant_value(&v, SIMLSH_KIND_DEDUP_CLUSTER + 1, "none"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_constant_at(&v, NULL, SIMLSH_KIND_DEDUP_CLUSTER + 1, 0), SIMLSH_EINVAL);
    CHECK(simlsh_constant_name(SIMLSH_KIND_DEDUP_CLUSTER + 1, 0) == NULL);
    CHECK_RC(simlsh_constant_value(NULL, SIMLSH_KIND_UNIT, "char"), SIMLSH_EINVAL);
    CHECK_RC(simlsh_constant_value(&v, SIMLSH_KIND_UNIT, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_constant_value(&v, SIMLSH_KIND_UNIT, "Char"), SIMLSH_ENOTFOUND);
    CHECK_RC(simlsh_constant_at(&v, NULL, -1, 0), SIMLSH_EINVAL);
    CHECK(simlsh_constant_name(0, 0) == NULL);
}

static const char default_desc[] =
    "unit=char k=5 normalize=none utf8_policy=replace seed=0 hash_bits=32 num_perm=128 "
    "scheme=oph bands=0 rows=0 store_signatures=1 isa=auto threshold=0.8 fp_weight=0.5 "
    "fn_weight=0.5";
static const char dedup_desc[] =
    "unit=char k=5 normalize=lower,space utf8_policy=replace seed=0 hash_bits=32 num_perm=128 "
    "scheme=oph bands=0 rows=0 store_signatures=1 isa=auto threshold=0.8 fp_weight=0.1 "
    "fn_weight=0.9";

static void describe(void)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    char buf[512];
    size_t n = 0;
    CHECK_OK(simlsh_params_describe(NULL, 0, &n, p));
    CHECK(n == strlen(default_desc));
    CHECK_OK(simlsh_params_describe(buf, sizeof buf, &n, p));
    CHECK(strcmp(buf, default_desc) == 0);
    /* Too small by the NUL: refused, the buffer untouched. */
    memset(buf, 'x', sizeof buf);
    CHECK_RC(simlsh_params_describe(buf, strlen(default_desc), &n, p), SIMLSH_EBUFSIZE);
    CHECK(n == strlen(default_desc) && buf[0] == 'x' && buf[n - 1] == 'x');
    CHECK_RC(simlsh_params_describe(buf, sizeof buf, NULL, p), SIMLSH_EINVAL);

    /* Every enumerated value by name, several flags, a double that needs 16
     * digits, a large seed. */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE,
                                   SIMLSH_NORM_STRIP_PUNCT | SIMLSH_NORM_LOWER_ASCII));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, SIMLSH_SCHEME_CLASSIC));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, SIMLSH_ISA_SCALAR));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 4294967295));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 16));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 8));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 1.0 / 3.0));
    CHECK_OK(simlsh_params_describe(buf, sizeof buf, &n, p));
    CHECK(strcmp(buf, "unit=word k=5 normalize=lower,punct utf8_policy=reject seed=4294967295 "
                      "hash_bits=32 num_perm=128 scheme=classic bands=16 rows=8 "
                      "store_signatures=1 isa=scalar threshold=0.3333333333333333 "
                      "fp_weight=0.5 fn_weight=0.5") == 0);
    double t = strtod(strstr(buf, "threshold=") + 10, NULL);
    CHECK(t == 1.0 / 3.0);
    simlsh_params_free(p);
}

static void presets(void)
{
    simlsh_params *p, *fresh;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_new(&fresh, NULL));
    char buf[512];
    size_t n;

    CHECK_OK(simlsh_params_preset(p, "dedup"));
    CHECK_OK(simlsh_params_describe(buf, sizeof buf, &n, p));
    CHECK(strcmp(buf, dedup_desc) == 0);
    /* The tool's banding at its defaults (docs/cli.md): 14 x 9. */
    simlsh_index *ix;
    uint32_t b = 0, r = 0;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_index_bands(&b, &r, ix));
    CHECK(b == 14 && r == 9);
    simlsh_index_free(ix);

    /* Unknown and NULL names change nothing. */
    CHECK_RC(simlsh_params_preset(p, "Dedup"), SIMLSH_ENOTFOUND);
    CHECK_RC(simlsh_params_preset(p, NULL), SIMLSH_EINVAL);
    CHECK_OK(simlsh_params_describe(buf, sizeof buf, &n, p));
    CHECK(strcmp(buf, dedup_desc) == 0);

    /* "default" resets every key, so fingerprints equal fresh params'. */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, 9));
    CHECK_OK(simlsh_params_preset(p, "default"));
    for (int scope = SIMLSH_SCOPE_SHINGLES; scope <= SIMLSH_SCOPE_INDEX; scope++) {
        uint64_t a = 0, c = 1;
        CHECK_OK(simlsh_params_fingerprint(&a, p, scope));
        CHECK_OK(simlsh_params_fingerprint(&c, fresh, scope));
        CHECK(a == c);
    }
    CHECK_OK(simlsh_params_describe(buf, sizeof buf, &n, p));
    CHECK(strcmp(buf, default_desc) == 0);
    simlsh_params_free(fresh);
    simlsh_params_free(p);

    /* The preset keeps the allocator: objects made after it use the hooks. */
    tu_alloc_state st = {0};
    simlsh_allocator a = {tu_alloc_fn, tu_free_fn, &st};
    CHECK_OK(simlsh_params_new(&p, &a));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    long before = st.allocs;
    simlsh_signature *g;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK(st.allocs > before);
    simlsh_signature_free(g);
    simlsh_params_free(p);
    CHECK(st.live == 0);
}

int main(void)
{
    names();
    describe();
    presets();
    return tu_finish("names");
}
