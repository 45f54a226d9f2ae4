/*
 * Params, the hash contract: defaults, keyed setters and getters against the
 * bounds the library reports, rejection without side effects, Unicode and ISA
 * availability, key names, copies, allocator checks, and fingerprints (which
 * fields each scope covers, and that objects record them at creation).
 */
#include <ctype.h>
#include <float.h>
#include <limits.h>

#include "testutil.h"

/* ---- the documented key table (header comment of the params keys) -------- */

struct keydef {
    int key;
    const char *macro; /* enum suffix; the key name is its lower-case form */
    int is_double;
    double def, min, max;
};

#define KEY(name, dbl, def, min, max)                  \
    {                                                  \
        SIMLSH_PARAM_##name, #name, dbl, def, min, max \
    }
static const struct keydef keydefs[] = {
    KEY(UNIT, 0, SIMLSH_UNIT_CHAR, 0, 2),
    KEY(K, 0, 5, 1, 64),
    KEY(NORMALIZE, 0, 0, 0, 31),
    KEY(UTF8_POLICY, 0, SIMLSH_UTF8_REPLACE, 0, 1),
    KEY(SEED, 0, 0, 0, 4294967295.0),
    KEY(HASH_BITS, 0, 32, 32, 64),
    KEY(NUM_PERM, 0, 128, 1, 1024),
    KEY(SCHEME, 0, SIMLSH_SCHEME_OPH, 0, 1),
    KEY(BANDS, 0, 0, 0, 1024),
    KEY(ROWS, 0, 0, 0, 1024),
    KEY(STORE_SIGNATURES, 0, 1, 0, 1),
    KEY(ISA, 0, SIMLSH_ISA_AUTO, 0, 3),
    KEY(THRESHOLD, 1, 0.8, 0, 1),
    KEY(FP_WEIGHT, 1, 0.5, 0, 1e6),
    KEY(FN_WEIGHT, 1, 0.5, 0, 1e6),
};
#undef KEY
#define NKEYS (sizeof keydefs / sizeof keydefs[0])

static const int unknown_keys[] = {0, 16, 17, -1, 100, INT_MAX, INT_MIN};
#define NUNKNOWN (sizeof unknown_keys / sizeof unknown_keys[0])

/* ---- snapshots: every key's value ---------------------------------------- */

typedef struct {
    int64_t i[NKEYS];
    double d[NKEYS];
} snap;

static snap take(const simlsh_params *p)
{
    snap s;
    memset(&s, 0, sizeof s);
    for (size_t k = 0; k < NKEYS; k++) {
        if (keydefs[k].is_double)
            CHECK_OK(simlsh_params_get_double(p, keydefs[k].key, &s.d[k]));
        else
            CHECK_OK(simlsh_params_get_int(p, keydefs[k].key, &s.i[k]));
    }
    return s;
}

static int snap_equal(const snap *a, const snap *b)
{
    for (size_t k = 0; k < NKEYS; k++) {
        if (a->i[k] != b->i[k])
            return 0;
        /* bit equality: -0.0 and 0.0 differ, and nothing stored is NaN */
        if (memcmp(&a->d[k], &b->d[k], sizeof(double)) != 0)
            return 0;
    }
    return 1;
}

static simlsh_params *new_params(void)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    if (p == NULL) {
        fprintf(stderr, "simlsh_params_new failed; cannot continue\n");
        exit(1);
    }
    return p;
}

static void set_i(simlsh_params *p, int key, int64_t v)
{
    CHECK_OK(simlsh_params_set_int(p, key, v));
}
static void set_d(simlsh_params *p, int key, double v)
{
    CHECK_OK(simlsh_params_set_double(p, key, v));
}

static uint64_t fp_of(const simlsh_params *p, int scope)
{
    uint64_t f = 0;
    CHECK_OK(simlsh_params_fingerprint(&f, p, scope));
    return f;
}

/* ---- expected setter results --------------------------------------------- */

static int expect_int(const struct keydef *kd, int64_t v)
{
    if ((double)v < kd->min || (double)v > kd->max)
        return SIMLSH_EINVAL;
    if (kd->key == SIMLSH_PARAM_HASH_BITS && v != 32 && v != 64)
        return SIMLSH_EINVAL;
    if (kd->key == SIMLSH_PARAM_NORMALIZE && (v & (SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_NFKC)) &&
        !simlsh_has_unicode())
        return SIMLSH_EUNSUPPORTED;
    if (kd->key == SIMLSH_PARAM_ISA && !simlsh_isa_supported((int)v))
        return SIMLSH_EUNSUPPORTED;
    return 0;
}

static int expect_double(const struct keydef *kd, double v)
{
    if (isnan(v) || v < kd->min || v > kd->max)
        return SIMLSH_EINVAL;
    if (kd->key == SIMLSH_PARAM_THRESHOLD && !(v > 0.0))
        return SIMLSH_EINVAL; /* (0, 1]: the lower bound is exclusive */
    return 0;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_defaults_and_names(void)
{
    simlsh_params *p = new_params();
    for (size_t k = 0; k < NKEYS; k++) {
        const struct keydef *kd = &keydefs[k];
        if (kd->is_double) {
            double v = -1;
            CHECK_OK(simlsh_params_get_double(p, kd->key, &v));
            if (v != kd->def)
                fprintf(stderr, "default of %s: %g, documented %g\n", kd->macro, v, kd->def);
            CHECK(v == kd->def);
        } else {
            int64_t v = -1;
            CHECK_OK(simlsh_params_get_int(p, kd->key, &v));
            if ((double)v != kd->def)
                fprintf(stderr, "default of %s: %" PRId64 ", documented %g\n", kd->macro, v,
                        kd->def);
            CHECK((double)v == kd->def);
        }

        /* names: the lower-case enum suffix, static, distinct */
        char want[64];
        size_t n = strlen(kd->macro);
        for (size_t i = 0; i <= n; i++)
            want[i] = (char)tolower((unsigned char)kd->macro[i]);
        const char *name = simlsh_params_key_name(kd->key);
        CHECK(name != NULL && strcmp(name, want) == 0);
        CHECK(simlsh_params_key_name(kd->key) == name);
        for (size_t j = 0; j < k; j++)
            CHECK(name == NULL || strcmp(name, simlsh_params_key_name(keydefs[j].key)) != 0);
    }
    for (size_t u = 0; u < NUNKNOWN; u++)
        CHECK(simlsh_params_key_name(unknown_keys[u]) == NULL);

    /* two fresh objects hold the same defaults */
    simlsh_params *q = new_params();
    snap a = take(p), b = take(q);
    CHECK(snap_equal(&a, &b));
    simlsh_params_free(q);
    simlsh_params_free(p);
}

static void test_bounds(void)
{
    for (size_t k = 0; k < NKEYS; k++) {
        const struct keydef *kd = &keydefs[k];
        int64_t imin = -7, imax = -7;
        double dmin = -7, dmax = -7;
        if (kd->is_double) {
            CHECK_OK(simlsh_params_double_bounds(kd->key, &dmin, &dmax));
            CHECK(dmin == kd->min);
            CHECK(dmax == kd->max);
            CHECK_RC(simlsh_params_int_bounds(kd->key, &imin, &imax), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_double_bounds(kd->key, NULL, &dmax), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_double_bounds(kd->key, &dmin, NULL), SIMLSH_EINVAL);
        } else {
            CHECK_OK(simlsh_params_int_bounds(kd->key, &imin, &imax));
            if ((double)imin != kd->min || (double)imax != kd->max)
                fprintf(stderr, "bounds of %s: [%" PRId64 ", %" PRId64 "], documented [%g, %g]\n",
                        kd->macro, imin, imax, kd->min, kd->max);
            CHECK((double)imin == kd->min);
            CHECK((double)imax == kd->max);
            CHECK_RC(simlsh_params_double_bounds(kd->key, &dmin, &dmax), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_int_bounds(kd->key, NULL, &imax), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_int_bounds(kd->key, &imin, NULL), SIMLSH_EINVAL);
        }
    }
    for (size_t u = 0; u < NUNKNOWN; u++) {
        int64_t a, b;
        double c, d;
        CHECK_RC(simlsh_params_int_bounds(unknown_keys[u], &a, &b), SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_double_bounds(unknown_keys[u], &c, &d), SIMLSH_EINVAL);
    }
}

/* A valid non-default value for every key, so a setter that resets other
 * fields, or writes the wrong one, shows up in the snapshot comparison. */
static void set_nondefault(simlsh_params *p)
{
    set_i(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD);
    set_i(p, SIMLSH_PARAM_K, 7);
    set_i(p, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE);
    set_i(p, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT);
    set_i(p, SIMLSH_PARAM_SEED, 0xdeadbeefu);
    set_i(p, SIMLSH_PARAM_HASH_BITS, 64);
    set_i(p, SIMLSH_PARAM_NUM_PERM, 200);
    set_i(p, SIMLSH_PARAM_SCHEME, SIMLSH_SCHEME_CLASSIC);
    set_i(p, SIMLSH_PARAM_BANDS, 20);
    set_i(p, SIMLSH_PARAM_ROWS, 10);
    set_i(p, SIMLSH_PARAM_STORE_SIGNATURES, 0);
    set_i(p, SIMLSH_PARAM_ISA, SIMLSH_ISA_SCALAR);
    set_d(p, SIMLSH_PARAM_THRESHOLD, 0.5);
    set_d(p, SIMLSH_PARAM_FP_WEIGHT, 2.0);
    set_d(p, SIMLSH_PARAM_FN_WEIGHT, 3.0);
}

/* Every key, values around both bounds and beyond: accepted values read back,
 * rejected ones give the documented code and change nothing. */
static void test_set_get(int nondefault)
{
    simlsh_params *p = new_params();
    if (nondefault)
        set_nondefault(p);
    for (size_t k = 0; k < NKEYS; k++) {
        const struct keydef *kd = &keydefs[k];
        if (kd->is_double) {
            const double cand[] = {kd->min,
                                   kd->max,
                                   nextafter(kd->min, -INFINITY),
                                   nextafter(kd->max, INFINITY),
                                   nextafter(kd->min, INFINITY),
                                   nextafter(kd->max, -INFINITY),
                                   (kd->min + kd->max) / 2,
                                   0.0,
                                   -0.0,
                                   DBL_TRUE_MIN,
                                   -DBL_TRUE_MIN,
                                   1.0,
                                   -1.0,
                                   1e300,
                                   NAN,
                                   -NAN,
                                   INFINITY,
                                   -INFINITY};
            for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
                double v = cand[c];
                snap before = take(p);
                uint64_t f0 = fp_of(p, SIMLSH_SCOPE_SIGNATURE);
                int want = expect_double(kd, v);
                int rc = simlsh_params_set_double(p, kd->key, v);
                if (rc != want)
                    fprintf(stderr, "set_double(%s, %a) = %s, want %s\n", kd->macro, v,
                            simlsh_error_name(rc), simlsh_error_name(want));
                CHECK(rc == want);
                snap after = take(p);
                if (want == 0) {
                    double got = NAN;
                    CHECK_OK(simlsh_params_get_double(p, kd->key, &got));
                    CHECK(memcmp(&got, &v, sizeof v) == 0);
                    before.d[k] = v;
                } else {
                    CHECK(fp_of(p, SIMLSH_SCOPE_SIGNATURE) == f0);
                }
                CHECK(snap_equal(&before, &after));
                /* the other setter and getter refuse the key */
                int64_t iv = 0;
                CHECK_RC(simlsh_params_set_int(p, kd->key, 0), SIMLSH_EINVAL);
                CHECK_RC(simlsh_params_set_int(p, kd->key, 1), SIMLSH_EINVAL);
                CHECK_RC(simlsh_params_get_int(p, kd->key, &iv), SIMLSH_EINVAL);
                after = take(p);
                CHECK(snap_equal(&before, &after));
            }
            CHECK_RC(simlsh_params_get_double(p, kd->key, NULL), SIMLSH_EINVAL);
            double d;
            CHECK_RC(simlsh_params_get_double(NULL, kd->key, &d), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_set_double(NULL, kd->key, kd->max), SIMLSH_EINVAL);
        } else {
            int64_t lo = (int64_t)kd->min, hi = (int64_t)kd->max;
            const int64_t cand[] = {lo,
                                    lo + 1,
                                    lo + 2,
                                    lo - 1,
                                    lo - 2,
                                    hi,
                                    hi - 1,
                                    hi - 2,
                                    hi + 1,
                                    hi + 2,
                                    (lo + hi) / 2,
                                    0,
                                    1,
                                    -1,
                                    33,
                                    63,
                                    65,
                                    (int64_t)1 << 32,
                                    ((int64_t)1 << 32) + 5,
                                    -((int64_t)1 << 32),
                                    INT32_MAX,
                                    INT32_MIN,
                                    (int64_t)INT32_MAX + 1,
                                    (int64_t)UINT32_MAX,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MIN + 1};
            for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
                int64_t v = cand[c];
                snap before = take(p);
                uint64_t f0 = fp_of(p, SIMLSH_SCOPE_SIGNATURE);
                int want = expect_int(kd, v);
                int rc = simlsh_params_set_int(p, kd->key, v);
                if (rc != want)
                    fprintf(stderr, "set_int(%s, %" PRId64 ") = %s, want %s\n", kd->macro, v,
                            simlsh_error_name(rc), simlsh_error_name(want));
                CHECK(rc == want);
                snap after = take(p);
                if (want == 0) {
                    int64_t got = -12345;
                    CHECK_OK(simlsh_params_get_int(p, kd->key, &got));
                    if (got != v)
                        fprintf(stderr, "get_int(%s) = %" PRId64 " after setting %" PRId64 "\n",
                                kd->macro, got, v);
                    CHECK(got == v);
                    before.i[k] = v;
                } else {
                    CHECK(fp_of(p, SIMLSH_SCOPE_SIGNATURE) == f0);
                }
                CHECK(snap_equal(&before, &after));
                double dv = 0;
                CHECK_RC(simlsh_params_set_double(p, kd->key, 0.5), SIMLSH_EINVAL);
                CHECK_RC(simlsh_params_set_double(p, kd->key, (double)lo), SIMLSH_EINVAL);
                CHECK_RC(simlsh_params_get_double(p, kd->key, &dv), SIMLSH_EINVAL);
                after = take(p);
                CHECK(snap_equal(&before, &after));
            }
            CHECK_RC(simlsh_params_get_int(p, kd->key, NULL), SIMLSH_EINVAL);
            int64_t i;
            CHECK_RC(simlsh_params_get_int(NULL, kd->key, &i), SIMLSH_EINVAL);
            CHECK_RC(simlsh_params_set_int(NULL, kd->key, lo), SIMLSH_EINVAL);
        }
    }

    /* unknown keys, with either setter or getter */
    snap before = take(p);
    for (size_t u = 0; u < NUNKNOWN; u++) {
        int64_t i = 0;
        double d = 0;
        CHECK_RC(simlsh_params_set_int(p, unknown_keys[u], 0), SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_set_int(p, unknown_keys[u], 1), SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_set_double(p, unknown_keys[u], 0.5), SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_get_int(p, unknown_keys[u], &i), SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_get_double(p, unknown_keys[u], &d), SIMLSH_EINVAL);
    }
    snap after = take(p);
    CHECK(snap_equal(&before, &after));
    simlsh_params_free(p);
}

static void test_specific_rules(void)
{
    simlsh_params *p = new_params();
    int64_t v;

    /* HASH_BITS: only 32 and 64, nothing in between */
    int64_t cur = 32;
    for (int64_t b = 0; b <= 130; b++) {
        int ok = b == 32 || b == 64;
        CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, b), ok ? 0 : SIMLSH_EINVAL);
        if (ok)
            cur = b;
        CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_HASH_BITS, &v));
        CHECK(v == cur);
    }

    /* SEED is unsigned 32-bit: the top value reads back positive */
    set_i(p, SIMLSH_PARAM_SEED, 0xffffffffu);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_SEED, &v));
    CHECK(v == 4294967295);
    set_i(p, SIMLSH_PARAM_SEED, 0x80000000u);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_SEED, &v));
    CHECK(v == 2147483648);

    /* THRESHOLD: (0, 1] */
    double d;
    CHECK_RC(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, -0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 1.0000001), SIMLSH_EINVAL);
    CHECK_OK(simlsh_params_get_double(p, SIMLSH_PARAM_THRESHOLD, &d));
    CHECK(d == 0.8);
    set_d(p, SIMLSH_PARAM_THRESHOLD, 1.0);
    set_d(p, SIMLSH_PARAM_THRESHOLD, DBL_TRUE_MIN);
    CHECK_OK(simlsh_params_get_double(p, SIMLSH_PARAM_THRESHOLD, &d));
    CHECK(d == DBL_TRUE_MIN);

    /* Unicode normalisation flags need utf8proc */
    int uni = simlsh_has_unicode();
    CHECK(uni == 0 || uni == 1);
    const int64_t uflags[] = {SIMLSH_NORM_CASEFOLD, SIMLSH_NORM_NFKC,
                              SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_NFKC,
                              SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_LOWER_ASCII, 31};
    for (size_t i = 0; i < sizeof uflags / sizeof uflags[0]; i++) {
        set_i(p, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_STRIP_PUNCT);
        CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, uflags[i]),
                 uni ? 0 : SIMLSH_EUNSUPPORTED);
        CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_NORMALIZE, &v));
        CHECK(v == (uni ? uflags[i] : SIMLSH_NORM_STRIP_PUNCT));
    }
    /* ASCII-only flags never need it */
    for (int64_t f = 0; f < 8; f++) {
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, f));
        CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_NORMALIZE, &v));
        CHECK(v == f);
    }
    if (uni) {
        /* Unicode normalisation works on code points, not with the byte unit */
        simlsh_params *q = new_params();
        set_i(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE);
        /* refused by the setter that would complete the pair, in either
         * order, and the params stay as they were */
        CHECK_RC(simlsh_params_set_int(q, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_CASEFOLD),
                 SIMLSH_EINVAL);
        CHECK_RC(simlsh_params_set_int(q, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_NFKC | 1),
                 SIMLSH_EINVAL);
        CHECK_OK(simlsh_params_get_int(q, SIMLSH_PARAM_NORMALIZE, &v));
        CHECK(v == 0);
        set_i(q, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_LOWER_ASCII); /* ASCII flags are fine */
        set_i(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_CHAR);
        set_i(q, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_CASEFOLD);
        CHECK_RC(simlsh_params_set_int(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE), SIMLSH_EINVAL);
        CHECK_OK(simlsh_params_get_int(q, SIMLSH_PARAM_UNIT, &v));
        CHECK(v == SIMLSH_UNIT_CHAR);
        set_i(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD); /* words decode code points too */
        set_i(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_CHAR);
        simlsh_shingleset *s = NULL;
        simlsh_signature *g = NULL;
        CHECK_OK(simlsh_shingleset_new(&s, q));
        CHECK_OK(simlsh_signature_new(&g, q));
        simlsh_shingleset_free(s);
        simlsh_signature_free(g);
        simlsh_params_free(q);
    }

    /* ISA */
    CHECK(simlsh_isa_supported(SIMLSH_ISA_AUTO) == 1);
    CHECK(simlsh_isa_supported(SIMLSH_ISA_SCALAR) == 1);
    CHECK(simlsh_isa_supported(-1) == 0);
    CHECK(simlsh_isa_supported(4) == 0);
    CHECK(simlsh_isa_supported(INT_MAX) == 0);
    CHECK(simlsh_isa_supported(INT_MIN) == 0);
    const int isas[] = {SIMLSH_ISA_AUTO, SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    for (size_t i = 0; i < 4; i++) {
        int sup = simlsh_isa_supported(isas[i]);
        CHECK(sup == 0 || sup == 1);
        CHECK(simlsh_isa_supported(isas[i]) == sup); /* stable */
        set_i(p, SIMLSH_PARAM_ISA, SIMLSH_ISA_SCALAR);
        CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isas[i]),
                 sup ? 0 : SIMLSH_EUNSUPPORTED);
        CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_ISA, &v));
        CHECK(v == (sup ? isas[i] : SIMLSH_ISA_SCALAR));
        printf("isa %d supported: %d\n", isas[i], sup);
    }
    printf("unicode: %d\n", uni);
    simlsh_params_free(p);
}

static void test_lifecycle(void)
{
    /* free(NULL) is a no-op for every object */
    simlsh_params_free(NULL);
    simlsh_shingleset_free(NULL);
    simlsh_signature_free(NULL);

    CHECK_RC(simlsh_params_new(NULL, NULL), SIMLSH_EINVAL);

    /* incomplete hooks are refused, and *out is cleared */
    tu_alloc_state st = {0, 0, 0, 0, 0};
    simlsh_allocator half = tu_allocator(&st);
    half.free = NULL;
    simlsh_params *p = (simlsh_params *)&st;
    CHECK_RC(simlsh_params_new(&p, &half), SIMLSH_EINVAL);
    CHECK(p == NULL);
    half = tu_allocator(&st);
    half.alloc = NULL;
    p = (simlsh_params *)&st;
    CHECK_RC(simlsh_params_new(&p, &half), SIMLSH_EINVAL);
    CHECK(p == NULL);
    CHECK(st.count == 0);

    /* the hooks are used for the params, their copies and objects built from them */
    simlsh_allocator a = tu_allocator(&st);
    CHECK_OK(simlsh_params_new(&p, &a));
    CHECK(st.live >= 1);
    long live1 = st.live;
    simlsh_params *c = NULL;
    CHECK_OK(simlsh_params_copy(&c, p));
    CHECK(st.live > live1);
    simlsh_shingleset *s = NULL;
    long live2 = st.live;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK(st.live > live2);
    simlsh_params_free(c);
    simlsh_params_free(p);
    /* no object keeps a pointer into the params: the set still works */
    CHECK_OK(simlsh_shingleset_add_text(s, "hello world", 11));
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_count(&n, s));
    CHECK(n == 7);
    simlsh_shingleset_free(s);
    CHECK(st.live == 0);
    CHECK(st.allocs == st.frees);

    /* an allocation failure is ENOMEM with nothing leaked */
    tu_alloc_state fst = {0, 0, 0, 1, 0};
    a = tu_allocator(&fst);
    p = (simlsh_params *)&fst;
    CHECK_RC(simlsh_params_new(&p, &a), SIMLSH_ENOMEM);
    CHECK(p == NULL);
    CHECK(fst.live == 0);

    /* copy */
    p = new_params();
    set_nondefault(p);
    CHECK_RC(simlsh_params_copy(NULL, p), SIMLSH_EINVAL);
    c = (simlsh_params *)&st;
    CHECK_RC(simlsh_params_copy(&c, NULL), SIMLSH_EINVAL);
    CHECK(c == NULL);
    CHECK_OK(simlsh_params_copy(&c, p));
    CHECK(c != NULL && c != p);
    snap sp = take(p), sc = take(c);
    CHECK(snap_equal(&sp, &sc));
    for (int scope = SIMLSH_SCOPE_SHINGLES; scope <= SIMLSH_SCOPE_INDEX; scope++)
        CHECK(fp_of(p, scope) == fp_of(c, scope));
    /* independent after the copy, in both directions */
    set_i(c, SIMLSH_PARAM_K, 9);
    set_d(c, SIMLSH_PARAM_THRESHOLD, 0.25);
    snap sp2 = take(p);
    CHECK(snap_equal(&sp, &sp2));
    set_i(p, SIMLSH_PARAM_SEED, 42);
    int64_t v;
    CHECK_OK(simlsh_params_get_int(c, SIMLSH_PARAM_SEED, &v));
    CHECK(v == 0xdeadbeefu);
    CHECK_OK(simlsh_params_get_int(c, SIMLSH_PARAM_K, &v));
    CHECK(v == 9);
    simlsh_params_free(p);
    /* the copy outlives its source */
    CHECK_OK(simlsh_params_get_int(c, SIMLSH_PARAM_NUM_PERM, &v));
    CHECK(v == 200);
    simlsh_params_free(c);
}

/* ---- fingerprints ---------------------------------------------------------- */

struct change {
    const char *what;
    int key;
    int is_double;
    double value;
    int scope; /* the narrowest scope that covers the field; 99 = none */
};

static const struct change changes[] = {
    {"unit char->word", SIMLSH_PARAM_UNIT, 0, SIMLSH_UNIT_WORD, SIMLSH_SCOPE_SHINGLES},
    {"unit char->byte", SIMLSH_PARAM_UNIT, 0, SIMLSH_UNIT_BYTE, SIMLSH_SCOPE_SHINGLES},
    {"k 5->6", SIMLSH_PARAM_K, 0, 6, SIMLSH_SCOPE_SHINGLES},
    {"k 5->64", SIMLSH_PARAM_K, 0, 64, SIMLSH_SCOPE_SHINGLES},
    {"normalize lower", SIMLSH_PARAM_NORMALIZE, 0, SIMLSH_NORM_LOWER_ASCII, SIMLSH_SCOPE_SHINGLES},
    {"normalize space", SIMLSH_PARAM_NORMALIZE, 0, SIMLSH_NORM_COLLAPSE_SPACE,
     SIMLSH_SCOPE_SHINGLES},
    {"normalize punct", SIMLSH_PARAM_NORMALIZE, 0, SIMLSH_NORM_STRIP_PUNCT, SIMLSH_SCOPE_SHINGLES},
    {"utf8 reject", SIMLSH_PARAM_UTF8_POLICY, 0, SIMLSH_UTF8_REJECT, SIMLSH_SCOPE_SHINGLES},
    {"seed 1", SIMLSH_PARAM_SEED, 0, 1, SIMLSH_SCOPE_SHINGLES},
    {"seed 2^31", SIMLSH_PARAM_SEED, 0, 2147483648.0, SIMLSH_SCOPE_SHINGLES},
    {"seed 2^32-1", SIMLSH_PARAM_SEED, 0, 4294967295.0, SIMLSH_SCOPE_SHINGLES},
    {"seed 2^16", SIMLSH_PARAM_SEED, 0, 65536, SIMLSH_SCOPE_SHINGLES},
    {"hash bits 64", SIMLSH_PARAM_HASH_BITS, 0, 64, SIMLSH_SCOPE_SHINGLES},
    {"num_perm 256", SIMLSH_PARAM_NUM_PERM, 0, 256, SIMLSH_SCOPE_SIGNATURE},
    {"num_perm 100", SIMLSH_PARAM_NUM_PERM, 0, 100, SIMLSH_SCOPE_SIGNATURE},
    {"scheme classic", SIMLSH_PARAM_SCHEME, 0, SIMLSH_SCHEME_CLASSIC, SIMLSH_SCOPE_SIGNATURE},
    {"bands 8->9", SIMLSH_PARAM_BANDS, 0, 9, SIMLSH_SCOPE_INDEX},
    {"bands 8->16", SIMLSH_PARAM_BANDS, 0, 16, SIMLSH_SCOPE_INDEX},
    {"rows 8->7", SIMLSH_PARAM_ROWS, 0, 7, SIMLSH_SCOPE_INDEX},
    {"rows 8->1", SIMLSH_PARAM_ROWS, 0, 1, SIMLSH_SCOPE_INDEX},
    {"threshold", SIMLSH_PARAM_THRESHOLD, 1, 0.3, 99},
    {"fp weight", SIMLSH_PARAM_FP_WEIGHT, 1, 7.0, 99},
    {"fn weight", SIMLSH_PARAM_FN_WEIGHT, 1, 0.0, 99},
    {"store signatures", SIMLSH_PARAM_STORE_SIGNATURES, 0, 0, 99},
    {"isa scalar", SIMLSH_PARAM_ISA, 0, SIMLSH_ISA_SCALAR, 99},
};
#define NCHANGES (sizeof changes / sizeof changes[0])

/* Base for the scope tests: explicit bands and rows (8 x 8 of 128), so the
 * INDEX fingerprint does not move with the optimiser's inputs. */
static simlsh_params *fp_base(void)
{
    simlsh_params *p = new_params();
    set_i(p, SIMLSH_PARAM_BANDS, 8);
    set_i(p, SIMLSH_PARAM_ROWS, 8);
    return p;
}

static void test_fingerprint_scopes(void)
{
    simlsh_params *base = fp_base();
    uint64_t f0[3];
    for (int s = 0; s < 3; s++) {
        f0[s] = fp_of(base, s);
        /* deterministic, and the same for an equal object made separately */
        CHECK(fp_of(base, s) == f0[s]);
        simlsh_params *again = fp_base();
        CHECK(fp_of(again, s) == f0[s]);
        simlsh_params_free(again);
    }
    CHECK(f0[0] != f0[1] && f0[1] != f0[2] && f0[0] != f0[2]);

    uint64_t seen[3][NCHANGES];
    for (size_t c = 0; c < NCHANGES; c++) {
        const struct change *ch = &changes[c];
        simlsh_params *p = fp_base();
        if (ch->is_double)
            set_d(p, ch->key, ch->value);
        else
            set_i(p, ch->key, (int64_t)ch->value);
        for (int s = 0; s < 3; s++) {
            uint64_t f = fp_of(p, s);
            seen[s][c] = f;
            int covered = ch->scope <= s;
            if ((f != f0[s]) != covered)
                fprintf(stderr, "fingerprint scope %d, change '%s': %s\n", s, ch->what,
                        covered ? "did not change" : "changed but is outside the scope");
            CHECK((f != f0[s]) == covered);
            /* a change inside the scope never collides with another one */
            for (size_t d = 0; covered && d < c; d++)
                if (changes[d].scope <= s)
                    CHECK(seen[s][d] != f);
        }
        simlsh_params_free(p);
    }

    /* every value of the narrow fields gives its own fingerprint, so no field
     * is truncated on its way into the hash */
    struct {
        int key, scope;
        int64_t lo, hi;
    } sweeps[] = {
        {SIMLSH_PARAM_K, SIMLSH_SCOPE_SHINGLES, 1, 64},
        {SIMLSH_PARAM_NORMALIZE, SIMLSH_SCOPE_SHINGLES, 0, 7},
        {SIMLSH_PARAM_NUM_PERM, SIMLSH_SCOPE_SIGNATURE, 1, 1024},
        {SIMLSH_PARAM_BANDS, SIMLSH_SCOPE_INDEX, 1, 1024},
        {SIMLSH_PARAM_ROWS, SIMLSH_SCOPE_INDEX, 1, 1024},
    };
    for (size_t w = 0; w < sizeof sweeps / sizeof sweeps[0]; w++) {
        size_t n = (size_t)(sweeps[w].hi - sweeps[w].lo + 1);
        uint64_t *fs = calloc(n, sizeof *fs);
        CHECK(fs != NULL);
        if (fs == NULL)
            continue;
        simlsh_params *p = new_params();
        set_i(p, SIMLSH_PARAM_NUM_PERM, 1024);
        set_i(p, SIMLSH_PARAM_BANDS, 1);
        set_i(p, SIMLSH_PARAM_ROWS, 1);
        for (int64_t v = sweeps[w].lo; v <= sweeps[w].hi; v++) {
            set_i(p, sweeps[w].key, v);
            fs[v - sweeps[w].lo] = fp_of(p, sweeps[w].scope);
        }
        /* sort and look for neighbours that are equal */
        for (size_t i = 1; i < n; i++) {
            uint64_t x = fs[i];
            size_t j = i;
            while (j > 0 && fs[j - 1] > x) {
                fs[j] = fs[j - 1];
                j--;
            }
            fs[j] = x;
        }
        size_t dups = 0;
        for (size_t i = 1; i < n; i++)
            dups += fs[i] == fs[i - 1];
        if (dups)
            fprintf(stderr, "key %s: %zu equal fingerprints over [%" PRId64 ", %" PRId64 "]\n",
                    simlsh_params_key_name(sweeps[w].key), dups, sweeps[w].lo, sweeps[w].hi);
        CHECK(dups == 0);
        free(fs);
        simlsh_params_free(p);
    }

    /* invalid scopes and arguments */
    uint64_t f = 0x1234;
    const int bad_scopes[] = {-1, 3, 4, 100, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad_scopes / sizeof bad_scopes[0]; i++)
        CHECK_RC(simlsh_params_fingerprint(&f, base, bad_scopes[i]), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_fingerprint(NULL, base, SIMLSH_SCOPE_SHINGLES), SIMLSH_EINVAL);
    CHECK_RC(simlsh_params_fingerprint(&f, NULL, SIMLSH_SCOPE_SHINGLES), SIMLSH_EINVAL);
    simlsh_params_free(base);
}

static void test_fingerprint_index(void)
{
    simlsh_params *p = new_params();
    uint64_t f;
    /* b * r must fit in num_perm, and b and r are both set or both automatic */
    struct {
        int64_t b, r;
        int ok;
    } br[] = {
        {16, 8, 1},  {128, 1, 1}, {1, 128, 1}, {16, 9, 0},      {1, 129, 0},
        {129, 1, 0}, {8, 0, 0},   {0, 8, 0},   {1024, 1024, 0}, {1, 1, 1},
    };
    for (size_t i = 0; i < sizeof br / sizeof br[0]; i++) {
        set_i(p, SIMLSH_PARAM_BANDS, br[i].b);
        set_i(p, SIMLSH_PARAM_ROWS, br[i].r);
        f = 0x77;
        int rc = simlsh_params_fingerprint(&f, p, SIMLSH_SCOPE_INDEX);
        if (rc != (br[i].ok ? 0 : SIMLSH_EINVAL))
            fprintf(stderr, "INDEX fingerprint with b=%" PRId64 " r=%" PRId64 ": %s\n", br[i].b,
                    br[i].r, simlsh_error_name(rc));
        CHECK_RC(rc, br[i].ok ? 0 : SIMLSH_EINVAL);
        /* the narrower scopes do not look at bands and rows */
        CHECK_OK(simlsh_params_fingerprint(&f, p, SIMLSH_SCOPE_SHINGLES));
        CHECK_OK(simlsh_params_fingerprint(&f, p, SIMLSH_SCOPE_SIGNATURE));
    }
    /* lowering num_perm below b * r makes the same b, r invalid */
    set_i(p, SIMLSH_PARAM_BANDS, 16);
    set_i(p, SIMLSH_PARAM_ROWS, 8);
    CHECK_OK(simlsh_params_fingerprint(&f, p, SIMLSH_SCOPE_INDEX));
    set_i(p, SIMLSH_PARAM_NUM_PERM, 127);
    CHECK_RC(simlsh_params_fingerprint(&f, p, SIMLSH_SCOPE_INDEX), SIMLSH_EINVAL);
    simlsh_params_free(p);

    /* automatic (b, r) are resolved first: the fingerprint equals that of the
     * explicit pair the optimiser picks */
    const double ts[] = {0.5, 0.8, 0.9};
    for (size_t i = 0; i < 3; i++) {
        simlsh_params *a = new_params();
        set_d(a, SIMLSH_PARAM_THRESHOLD, ts[i]);
        uint32_t b = 0, r = 0;
        CHECK_OK(simlsh_lsh_optimal_params(&b, &r, NULL, 128, ts[i], 0.5, 0.5));
        uint64_t fa = 0, fe = 1;
        CHECK_OK(simlsh_params_fingerprint(&fa, a, SIMLSH_SCOPE_INDEX));
        set_i(a, SIMLSH_PARAM_BANDS, b);
        set_i(a, SIMLSH_PARAM_ROWS, r);
        CHECK_OK(simlsh_params_fingerprint(&fe, a, SIMLSH_SCOPE_INDEX));
        CHECK(fa == fe);
        simlsh_params_free(a);
    }

    /* automatic with both weights zero cannot be resolved */
    simlsh_params *z = new_params();
    set_d(z, SIMLSH_PARAM_FP_WEIGHT, 0.0);
    set_d(z, SIMLSH_PARAM_FN_WEIGHT, 0.0);
    CHECK_RC(simlsh_params_fingerprint(&f, z, SIMLSH_SCOPE_INDEX), SIMLSH_EINVAL);
    CHECK_OK(simlsh_params_fingerprint(&f, z, SIMLSH_SCOPE_SIGNATURE));
    simlsh_params_free(z);
}

/* Objects record the fingerprint of their scope when they are made; later
 * changes to the params do not reach them. */
static void test_object_fingerprints(void)
{
    simlsh_params *p = new_params();
    set_i(p, SIMLSH_PARAM_SEED, 99);
    uint64_t fs = fp_of(p, SIMLSH_SCOPE_SHINGLES), fg = fp_of(p, SIMLSH_SCOPE_SIGNATURE);

    simlsh_shingleset *set = NULL;
    simlsh_signature *sig = NULL;
    CHECK_OK(simlsh_shingleset_new(&set, p));
    CHECK_OK(simlsh_signature_new(&sig, p));
    uint64_t f = 0;
    CHECK_OK(simlsh_shingleset_fingerprint(&f, set));
    CHECK(f == fs);
    CHECK_OK(simlsh_signature_fingerprint(&f, sig));
    CHECK(f == fg);
    CHECK_RC(simlsh_shingleset_fingerprint(NULL, set), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_fingerprint(&f, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_fingerprint(NULL, sig), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_fingerprint(&f, NULL), SIMLSH_EINVAL);

    /* change every contract field of the params afterwards */
    set_i(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD);
    set_i(p, SIMLSH_PARAM_K, 3);
    set_i(p, SIMLSH_PARAM_SEED, 100);
    set_i(p, SIMLSH_PARAM_HASH_BITS, 64);
    set_i(p, SIMLSH_PARAM_NUM_PERM, 64);
    set_i(p, SIMLSH_PARAM_SCHEME, SIMLSH_SCHEME_CLASSIC);
    CHECK(fp_of(p, SIMLSH_SCOPE_SHINGLES) != fs);
    CHECK(fp_of(p, SIMLSH_SCOPE_SIGNATURE) != fg);
    CHECK_OK(simlsh_shingleset_fingerprint(&f, set));
    CHECK(f == fs);
    CHECK_OK(simlsh_signature_fingerprint(&f, sig));
    CHECK(f == fg);
    CHECK(simlsh_signature_num_perm(sig) == 128);

    /* the objects keep the contract they were made with, not just its hash */
    CHECK_OK(simlsh_shingleset_add_text(set, "abcdefg", 7));
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_count(&n, set));
    CHECK(n == 3); /* 5-char shingles, not 3-word ones */
    simlsh_params_free(p);
    CHECK_OK(simlsh_signature_add_shingleset(sig, set));
    CHECK(simlsh_signature_is_empty(sig) == 0);

    /* copies carry the fingerprint */
    simlsh_shingleset *set2 = NULL;
    simlsh_signature *sig2 = NULL;
    CHECK_OK(simlsh_shingleset_copy(&set2, set));
    CHECK_OK(simlsh_signature_copy(&sig2, sig));
    CHECK_OK(simlsh_shingleset_fingerprint(&f, set2));
    CHECK(f == fs);
    CHECK_OK(simlsh_signature_fingerprint(&f, sig2));
    CHECK(f == fg);
    simlsh_shingleset_free(set2);
    simlsh_signature_free(sig2);

    /* a set and a signature match when their SHINGLES scopes match, even if
     * the params differ outside it (num_perm); a seed change is a mismatch */
    simlsh_params *q = new_params();
    set_i(q, SIMLSH_PARAM_SEED, 99);
    set_i(q, SIMLSH_PARAM_NUM_PERM, 32);
    set_d(q, SIMLSH_PARAM_THRESHOLD, 0.3);
    simlsh_signature *sig3 = NULL;
    CHECK_OK(simlsh_signature_new(&sig3, q));
    CHECK_OK(simlsh_signature_add_shingleset(sig3, set));
    set_i(q, SIMLSH_PARAM_SEED, 98);
    simlsh_signature *sig4 = NULL;
    CHECK_OK(simlsh_signature_new(&sig4, q));
    CHECK_RC(simlsh_signature_add_shingleset(sig4, set), SIMLSH_EMISMATCH);
    CHECK(simlsh_signature_is_empty(sig4) == 1);
    /* different SIGNATURE scopes do not merge */
    CHECK_RC(simlsh_signature_merge(sig, sig3), SIMLSH_EMISMATCH);
    simlsh_signature_free(sig3);
    simlsh_signature_free(sig4);
    simlsh_params_free(q);

    simlsh_shingleset_free(set);
    simlsh_signature_free(sig);
}

static void test_hash_bytes(void)
{
    simlsh_params *p = new_params();
    uint64_t h = 0x5555, h2 = 0;
    CHECK_RC(simlsh_hash_bytes(NULL, p, "abc", 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&h, NULL, "abc", 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&h, p, NULL, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_hash_bytes(&h, p, NULL, SIZE_MAX), SIMLSH_EINVAL);
    CHECK(h == 0x5555); /* untouched on error */
    /* NULL with length 0 is the empty input */
    CHECK_OK(simlsh_hash_bytes(&h, p, NULL, 0));
    CHECK_OK(simlsh_hash_bytes(&h2, p, "", 0));
    CHECK(h == h2);
    CHECK(h == 0); /* MurmurHash3 x86_32 of nothing with seed 0 */

    /* 32-bit hashes are zero-extended; MurmurHash3_x86_32("abc", 0) */
    CHECK_OK(simlsh_hash_bytes(&h, p, "abc", 3));
    CHECK(h == 0xB3DD93FAu);

    /* and they are exactly the shingler's hashes: a document shorter than k
     * is one shingle of all its units */
    for (int bits = 32; bits <= 64; bits += 32) {
        for (uint32_t seed = 0; seed < 3; seed++) {
            simlsh_params *q = new_params();
            set_i(q, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE);
            set_i(q, SIMLSH_PARAM_K, 3);
            set_i(q, SIMLSH_PARAM_HASH_BITS, bits);
            set_i(q, SIMLSH_PARAM_SEED, seed * 0x9e3779b9u);
            simlsh_shingleset *s = NULL;
            CHECK_OK(simlsh_shingleset_new(&s, q));
            CHECK_OK(simlsh_shingleset_add_text(s, "xyz", 3));
            uint64_t got[2] = {0, 0};
            size_t n = 0;
            CHECK_OK(simlsh_shingleset_hashes(got, 2, &n, s));
            CHECK(n == 1);
            CHECK_OK(simlsh_hash_bytes(&h, q, "xyz", 3));
            CHECK(got[0] == h);
            if (bits == 32)
                CHECK(h >> 32 == 0);
            simlsh_shingleset_free(s);
            simlsh_params_free(q);
        }
    }
    simlsh_params_free(p);
}

int main(void)
{
    test_defaults_and_names();
    test_bounds();
    test_set_get(0);
    test_set_get(1);
    test_specific_rules();
    test_lifecycle();
    test_fingerprint_scopes();
    test_fingerprint_index();
    test_object_fingerprints();
    test_hash_bytes();
    return tu_finish("params");
}
