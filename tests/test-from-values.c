/* Signatures by value (simlsh_signature_from_values) and by id
 * (simlsh_index_signature): round trips, the empty signature, what merge
 * does with by-value signatures, errors, and out-of-memory injection. */
#include "testutil.h"

#define MAXP 1024

static simlsh_params *mk(const simlsh_allocator *a, int scheme, int np, int store)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, a));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 7));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    return p;
}

static size_t values_of(uint32_t *v, const simlsh_signature *s)
{
    size_t n = 0;
    CHECK_OK(simlsh_signature_values(v, MAXP, &n, s));
    return n;
}

static int same_values(const simlsh_signature *a, const simlsh_signature *b)
{
    uint32_t va[MAXP], vb[MAXP];
    size_t na = values_of(va, a), nb = values_of(vb, b);
    return na == nb && memcmp(va, vb, na * sizeof *va) == 0;
}

/* A document of n random words from a vocabulary of 50, so that documents
 * of one rng share many shingles. */
static size_t make_doc(char *buf, size_t cap, tu_rng *r, size_t words)
{
    static const char *const syl[] = {"ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "gu"};
    size_t len = 0;
    for (size_t w = 0; w < words && len + 16 < cap; w++) {
        uint64_t x = tu_below(r, 50);
        len += (size_t)snprintf(buf + len, cap - len, "%s%s ", syl[x % 10], syl[x / 10]);
    }
    return len;
}

static simlsh_signature *sign(const simlsh_params *p, const char *text, size_t len)
{
    simlsh_signature *s;
    CHECK_OK(simlsh_signature_new(&s, p));
    CHECK_OK(simlsh_signature_add_text(s, text, len));
    return s;
}

static void test_round_trip(int scheme, int np)
{
    tu_rng r = {11 + (uint64_t)scheme * 100 + (uint64_t)np};
    simlsh_params *p = mk(NULL, scheme, np, 1);
    char doc[4096], other[4096];
    int bad = 0;
    for (int t = 0; t < 50; t++) {
        /* short documents leave OPH bins empty: densified rows matter */
        size_t len = make_doc(doc, sizeof doc, &r, t % 5 == 0 ? 2 : 20 + tu_below(&r, 200));
        size_t olen = make_doc(other, sizeof other, &r, 100);
        simlsh_signature *s = sign(p, doc, len), *o = sign(p, other, olen), *v, *w;
        uint32_t vals[MAXP];
        size_t n = values_of(vals, s);
        CHECK(n == (size_t)np);
        CHECK_OK(simlsh_signature_from_values(&v, p, vals, n));
        bad += !same_values(s, v);
        CHECK(simlsh_signature_is_empty(v) == 0);
        CHECK(simlsh_signature_num_perm(v) == np);
        uint64_t f1, f2;
        CHECK_OK(simlsh_signature_fingerprint(&f1, s));
        CHECK_OK(simlsh_signature_fingerprint(&f2, v));
        CHECK(f1 == f2);
        double j1, j2, j3;
        CHECK_OK(simlsh_signature_jaccard(&j1, s, o));
        CHECK_OK(simlsh_signature_jaccard(&j2, v, o));
        CHECK_OK(simlsh_signature_jaccard(&j3, s, v));
        CHECK(j1 == j2);
        CHECK(j3 == 1.0);
        uint64_t k1[64], k2[64];
        uint32_t bands = (uint32_t)(np >= 16 ? 8 : np), rows = (uint32_t)np / bands;
        CHECK_OK(simlsh_signature_band_keys(k1, 64, s, bands, rows));
        CHECK_OK(simlsh_signature_band_keys(k2, 64, v, bands, rows));
        CHECK(memcmp(k1, k2, bands * sizeof *k1) == 0);
        /* through the stable format and back */
        uint8_t buf[8192];
        size_t size = 0;
        CHECK_OK(simlsh_signature_save(buf, sizeof buf, &size, v));
        CHECK_OK(simlsh_signature_load(&w, buf, size, NULL));
        bad += !same_values(w, s);
        simlsh_signature_free(w);
        simlsh_signature_free(v);
        simlsh_signature_free(s);
        simlsh_signature_free(o);
    }
    CHECK(bad == 0);
    simlsh_params_free(p);
}

static void test_empty(void)
{
    simlsh_params *p = mk(NULL, SIMLSH_SCHEME_OPH, 64, 1);
    uint32_t vals[64];
    memset(vals, 0xff, sizeof vals);
    simlsh_signature *e, *fresh, *t;
    CHECK_OK(simlsh_signature_from_values(&e, p, vals, 64));
    CHECK_OK(simlsh_signature_new(&fresh, p));
    CHECK(simlsh_signature_is_empty(e) == 1);
    CHECK(same_values(e, fresh));
    double j = 0;
    CHECK_OK(simlsh_signature_jaccard(&j, e, fresh));
    CHECK(j == 1.0);
    uint64_t keys[8];
    CHECK_RC(simlsh_signature_band_keys(keys, 8, e, 8, 8), SIMLSH_EEMPTY);
    /* an empty by-value signature saves and loads like a fresh one */
    uint8_t b1[1024], b2[1024];
    size_t s1 = 0, s2 = 0;
    CHECK_OK(simlsh_signature_save(b1, sizeof b1, &s1, e));
    CHECK_OK(simlsh_signature_save(b2, sizeof b2, &s2, fresh));
    CHECK(s1 == s2 && memcmp(b1, b2, s1) == 0);
    /* and it takes text like a fresh one */
    t = sign(p, "hello there, world", 18);
    CHECK_OK(simlsh_signature_add_text(e, "hello there, world", 18));
    CHECK(same_values(e, t));
    CHECK(simlsh_signature_is_empty(e) == 0);
    simlsh_signature_free(t);
    simlsh_signature_free(e);
    simlsh_signature_free(fresh);
    simlsh_params_free(p);
}

static void test_errors(void)
{
    simlsh_params *p = mk(NULL, SIMLSH_SCHEME_OPH, 32, 1);
    uint32_t vals[33];
    for (int i = 0; i < 33; i++)
        vals[i] = (uint32_t)i * 2654435761u;
    simlsh_signature *s = (simlsh_signature *)&s;
    CHECK_RC(simlsh_signature_from_values(NULL, p, vals, 32), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_from_values(&s, NULL, vals, 32), SIMLSH_EINVAL);
    CHECK(s == NULL);
    s = (simlsh_signature *)&s;
    CHECK_RC(simlsh_signature_from_values(&s, p, NULL, 32), SIMLSH_EINVAL);
    CHECK(s == NULL);
    CHECK_RC(simlsh_signature_from_values(&s, p, vals, 31), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_from_values(&s, p, vals, 33), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_from_values(&s, p, vals, 0), SIMLSH_EINVAL);
    CHECK(s == NULL);
    /* one empty mark among real values: not something values() gives */
    vals[5] = 0xFFFFFFFFu;
    CHECK_RC(simlsh_signature_from_values(&s, p, vals, 32), SIMLSH_EINVAL);
    CHECK(s == NULL);
    vals[5] = 0xFFFFFFFEu; /* the largest real value is fine */
    CHECK_OK(simlsh_signature_from_values(&s, p, vals, 32));
    uint32_t back[MAXP];
    CHECK(values_of(back, s) == 32 && memcmp(back, vals, 32 * sizeof *vals) == 0);
    simlsh_signature_free(s);
    /* the contract is copied: later changes to the params do not matter */
    CHECK_OK(simlsh_signature_from_values(&s, p, vals, 32));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 64));
    CHECK(simlsh_signature_num_perm(s) == 32);
    simlsh_signature_free(s);
    simlsh_params_free(p);
}

/* merge takes the element-wise minimum of raw rows, which for a by-value
 * signature are its values. */
static void test_merge(void)
{
    tu_rng r = {5};
    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(NULL, scheme, 128, 1);
        char a[4096], b[4096];
        size_t la = make_doc(a, sizeof a, &r, 150), lb = make_doc(b, sizeof b, &r, 150);
        uint32_t va[MAXP], vb[MAXP], vm[MAXP], want[MAXP];
        simlsh_signature *sa = sign(p, a, la), *sb = sign(p, b, lb), *fa, *fb;
        values_of(va, sa);
        values_of(vb, sb);
        CHECK_OK(simlsh_signature_from_values(&fa, p, va, 128));
        CHECK_OK(simlsh_signature_from_values(&fb, p, vb, 128));
        CHECK_OK(simlsh_signature_merge(fa, fb));
        values_of(vm, fa);
        for (int i = 0; i < 128; i++)
            want[i] = va[i] < vb[i] ? va[i] : vb[i];
        CHECK(memcmp(vm, want, sizeof *vm * 128) == 0);
        if (scheme == SIMLSH_SCHEME_CLASSIC) {
            /* classic rows are values: the merge is the union's signature */
            simlsh_signature *u;
            CHECK_OK(simlsh_signature_new(&u, p));
            CHECK_OK(simlsh_signature_merge(u, sa));
            CHECK_OK(simlsh_signature_merge(u, sb));
            CHECK(same_values(u, fa));
            simlsh_signature_free(u);
        }
        simlsh_signature_free(sa);
        simlsh_signature_free(sb);
        simlsh_signature_free(fa);
        simlsh_signature_free(fb);
        simlsh_params_free(p);
    }
}

static void test_index_signature(void)
{
    tu_rng r = {77};
    simlsh_params *p = mk(NULL, SIMLSH_SCHEME_OPH, 128, 1);
    simlsh_index *ix;
    CHECK_OK(simlsh_index_new(&ix, p));
    enum {
        N = 40
    };
    simlsh_signature *sigs[N];
    char doc[4096];
    for (int i = 0; i < N; i++) {
        size_t len = make_doc(doc, sizeof doc, &r, i % 7 == 0 ? 3 : 60);
        sigs[i] = sign(p, doc, len);
        CHECK_OK(simlsh_index_insert(ix, 1000 + (uint64_t)i * 3, sigs[i]));
    }
    simlsh_results *r1, *r2;
    CHECK_OK(simlsh_results_new(&r1, NULL));
    CHECK_OK(simlsh_results_new(&r2, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        simlsh_signature *g = NULL;
        CHECK_OK(simlsh_index_signature(&g, ix, 1000 + (uint64_t)i * 3));
        if (g == NULL)
            continue;
        bad += !same_values(g, sigs[i]);
        CHECK_OK(simlsh_index_query(r1, ix, sigs[i], SIMLSH_QUERY_VERIFY));
        CHECK_OK(simlsh_index_query(r2, ix, g, SIMLSH_QUERY_VERIFY));
        size_t n = simlsh_results_count(r1);
        CHECK(n >= 1 && n == simlsh_results_count(r2));
        if (n >= 1 && n == simlsh_results_count(r2)) {
            CHECK(memcmp(simlsh_results_a(r1), simlsh_results_a(r2), n * 8) == 0);
            CHECK(memcmp(simlsh_results_scores(r1), simlsh_results_scores(r2), n * 8) == 0);
        }
        /* the index's contract: inserting it elsewhere works */
        simlsh_index *ix2;
        CHECK_OK(simlsh_index_new(&ix2, p));
        CHECK_OK(simlsh_index_insert(ix2, 1, g));
        simlsh_index_free(ix2);
        simlsh_signature_free(g);
    }
    CHECK(bad == 0);

    simlsh_signature *g = (simlsh_signature *)&g;
    CHECK_RC(simlsh_index_signature(&g, ix, 1001), SIMLSH_ENOTFOUND);
    CHECK(g == NULL);
    CHECK_RC(simlsh_index_signature(NULL, ix, 1000), SIMLSH_EINVAL);
    g = (simlsh_signature *)&g;
    CHECK_RC(simlsh_index_signature(&g, NULL, 1000), SIMLSH_EINVAL);
    CHECK(g == NULL);
    CHECK_OK(simlsh_index_remove(ix, 1000));
    CHECK_RC(simlsh_index_signature(&g, ix, 1000), SIMLSH_ENOTFOUND);
    /* a loaded index gives the same signatures back */
    size_t size = 0;
    CHECK_OK(simlsh_index_save(NULL, 0, &size, ix));
    void *buf = malloc(size);
    CHECK_OK(simlsh_index_save(buf, size, &size, ix));
    simlsh_index *ld;
    CHECK_OK(simlsh_index_load(&ld, buf, size, NULL));
    free(buf);
    CHECK_OK(simlsh_index_signature(&g, ld, 1003));
    CHECK(g != NULL && same_values(g, sigs[1]));
    simlsh_signature_free(g);
    simlsh_index_free(ld);

    /* without stored signatures there is nothing to give back */
    simlsh_params *q = mk(NULL, SIMLSH_SCHEME_OPH, 128, 0);
    simlsh_index *bare;
    CHECK_OK(simlsh_index_new(&bare, q));
    CHECK_OK(simlsh_index_insert(bare, 5, sigs[0]));
    g = (simlsh_signature *)&g;
    CHECK_RC(simlsh_index_signature(&g, bare, 5), SIMLSH_EUNSUPPORTED);
    CHECK(g == NULL);
    CHECK_RC(simlsh_index_signature(&g, bare, 6), SIMLSH_EUNSUPPORTED);
    simlsh_index_free(bare);
    simlsh_params_free(q);

    for (int i = 0; i < N; i++)
        simlsh_signature_free(sigs[i]);
    simlsh_results_free(r1);
    simlsh_results_free(r2);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

/* Fail allocation 1, 2, ... of each call until it succeeds: every failure
 * is SIMLSH_ENOMEM with *out NULL, nothing leaks, and the eventual result
 * equals the one without failures. */
static void test_oom(void)
{
    tu_alloc_state st = {0};
    simlsh_allocator a = tu_allocator(&st);
    simlsh_params *p = mk(&a, SIMLSH_SCHEME_OPH, 64, 1);
    simlsh_signature *s = sign(p, "the quick brown fox jumps over the dog", 38);
    simlsh_index *ix;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_index_insert(ix, 9, s));
    uint32_t vals[64];
    values_of(vals, s);
    long live = st.live;
    int fails = 0, ok = 0;
    for (long k = 1; k < 100 && !ok; k++) {
        simlsh_signature *v = (simlsh_signature *)&v;
        st.count = 0;
        st.fail_at = k;
        int rc = simlsh_signature_from_values(&v, p, vals, 64);
        st.fail_at = 0;
        if (rc == SIMLSH_ENOMEM) {
            fails++;
            CHECK(v == NULL);
            CHECK(st.live == live);
            continue;
        }
        CHECK_OK(rc);
        ok = 1;
        CHECK(same_values(v, s));
        simlsh_signature_free(v);
    }
    CHECK(ok && fails > 0);
    fails = ok = 0;
    for (long k = 1; k < 100 && !ok; k++) {
        simlsh_signature *v = (simlsh_signature *)&v;
        st.count = 0;
        st.fail_at = k;
        int rc = simlsh_index_signature(&v, ix, 9);
        st.fail_at = 0;
        if (rc == SIMLSH_ENOMEM) {
            fails++;
            CHECK(v == NULL);
            CHECK(st.live == live);
            continue;
        }
        CHECK_OK(rc);
        ok = 1;
        CHECK(same_values(v, s));
        simlsh_signature_free(v);
    }
    CHECK(ok && fails > 0);
    CHECK(st.live == live);
    simlsh_index_free(ix);
    simlsh_signature_free(s);
    simlsh_params_free(p);
    CHECK(st.live == 0);
}

int main(void)
{
    for (int scheme = 0; scheme <= 1; scheme++) {
        test_round_trip(scheme, 128);
        test_round_trip(scheme, 16);
        test_round_trip(scheme, 1);
    }
    test_empty();
    test_errors();
    test_merge();
    test_index_signature();
    test_oom();
    return tu_finish("test-from-values");
}
