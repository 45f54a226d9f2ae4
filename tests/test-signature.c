/* Signatures: API behaviour, merge == union, empty rules, mismatches,
 * persistence and its validation. */
#include "testutil.h"

static simlsh_params *mk(int scheme, int np, int seed)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, seed));
    return p;
}

static int equal_values(const simlsh_signature *a, const simlsh_signature *b)
{
    uint32_t va[1024], vb[1024];
    size_t na = 0, nb = 0;
    CHECK_OK(simlsh_signature_values(va, 1024, &na, a));
    CHECK_OK(simlsh_signature_values(vb, 1024, &nb, b));
    return na == nb && memcmp(va, vb, na * 4) == 0;
}

static void test_merge(int scheme)
{
    tu_rng r = {99 + (uint64_t)scheme};
    simlsh_params *p = mk(scheme, 128, 3);
    int bad = 0;
    for (int t = 0; t < 200; t++) {
        size_t na = tu_below(&r, 300), nb = tu_below(&r, 300);
        if (t % 10 == 0)
            na = tu_below(&r, 3); /* tiny sets: densification matters */
        uint64_t fa[300], fb[300], fu[600];
        for (size_t i = 0; i < na; i++)
            fa[i] = fu[i] = tu_next(&r) % 1000; /* overlap on purpose */
        for (size_t i = 0; i < nb; i++)
            fb[i] = fu[na + i] = tu_next(&r) % 1000;
        simlsh_signature *a, *b, *u;
        CHECK_OK(simlsh_signature_new(&a, p));
        CHECK_OK(simlsh_signature_new(&b, p));
        CHECK_OK(simlsh_signature_new(&u, p));
        CHECK_OK(simlsh_signature_add_features(a, fa, na));
        CHECK_OK(simlsh_signature_add_features(b, fb, nb));
        CHECK_OK(simlsh_signature_add_features(u, fu, na + nb));
        CHECK_OK(simlsh_signature_merge(a, b));
        bad += !equal_values(a, u);
        CHECK(simlsh_signature_is_empty(a) == simlsh_signature_is_empty(u));
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_signature_free(u);
    }
    CHECK(bad == 0);
    simlsh_params_free(p);
}

#define HELLO "hello world, hello simlsh"

static simlsh_signature *hello(const simlsh_params *p)
{
    simlsh_signature *s;
    CHECK_OK(simlsh_signature_new(&s, p));
    CHECK_OK(simlsh_signature_add_text(s, HELLO, strlen(HELLO)));
    return s;
}

static void test_new(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a;
    CHECK_RC(simlsh_signature_new(NULL, p), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_new(&a, NULL), SIMLSH_EINVAL);
    CHECK(a == NULL);
    CHECK_OK(simlsh_signature_new(&a, p));
    CHECK(simlsh_signature_num_perm(a) == 64);
    CHECK(simlsh_signature_num_perm(NULL) == SIMLSH_EINVAL);
    simlsh_signature_free(a);
    simlsh_signature_free(NULL);
    simlsh_params_free(p);
}

static void test_empty_rules(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a, *b;
    CHECK_OK(simlsh_signature_new(&a, p));
    CHECK_OK(simlsh_signature_new(&b, p));
    double j = -1;
    CHECK(simlsh_signature_is_empty(a) == 1);
    CHECK(simlsh_signature_is_empty(NULL) == SIMLSH_EINVAL);
    CHECK_OK(simlsh_signature_jaccard(&j, a, b));
    CHECK(j == 1.0); /* both empty: equal empty sets */
    uint32_t v[64];
    size_t n = 0;
    CHECK_OK(simlsh_signature_values(v, 64, &n, a));
    CHECK(n == 64 && v[0] == 0xFFFFFFFFu && v[63] == 0xFFFFFFFFu);
    CHECK_OK(simlsh_signature_add_text(a, "", 0)); /* empty document: still empty */
    CHECK(simlsh_signature_is_empty(a) == 1);
    CHECK_OK(simlsh_signature_add_text(a, HELLO, strlen(HELLO)));
    CHECK(simlsh_signature_is_empty(a) == 0);
    CHECK_OK(simlsh_signature_jaccard(&j, a, b));
    CHECK(j == 0.0); /* one empty */
    CHECK_OK(simlsh_signature_jaccard(&j, a, a));
    CHECK(j == 1.0);
    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_params_free(p);
}

static void test_values(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a = hello(p), *c;
    uint32_t v[64];
    size_t n = 0;
    CHECK_OK(simlsh_signature_values(NULL, 0, &n, a));
    CHECK(n == 64);
    CHECK_RC(simlsh_signature_values(v, 10, &n, a), SIMLSH_EBUFSIZE);
    CHECK_RC(simlsh_signature_values(v, 64, NULL, a), SIMLSH_EINVAL);
    CHECK_OK(simlsh_signature_values(v, 64, &n, a));
    for (size_t i = 0; i < 64; i++)
        CHECK(v[i] != 0xFFFFFFFFu); /* densified: no empty rows left */
    /* copy */
    CHECK_OK(simlsh_signature_copy(&c, a));
    CHECK(equal_values(a, c));
    CHECK_RC(simlsh_signature_copy(NULL, a), SIMLSH_EINVAL);
    /* clear */
    CHECK_OK(simlsh_signature_clear(c));
    CHECK(simlsh_signature_is_empty(c) == 1);
    CHECK_RC(simlsh_signature_clear(NULL), SIMLSH_EINVAL);
    simlsh_signature_free(a);
    simlsh_signature_free(c);
    simlsh_params_free(p);
}

static void test_streaming_state(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a = hello(p), *b;
    CHECK_OK(simlsh_signature_new(&b, p));
    uint32_t v[64];
    size_t n, sz;
    double j;
    CHECK_RC(simlsh_signature_feed(b, "x", 1), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_end(b), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_abort(b), SIMLSH_ESTATE);
    CHECK_OK(simlsh_signature_begin(b));
    CHECK_RC(simlsh_signature_begin(b), SIMLSH_ESTATE);
    CHECK_OK(simlsh_signature_feed(b, "hello world, ", 13));
    CHECK_RC(simlsh_signature_values(v, 64, &n, b), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_jaccard(&j, a, b), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_add_features(b, (const uint64_t[]){1}, 1), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_merge(b, a), SIMLSH_ESTATE);
    CHECK_RC(simlsh_signature_save(NULL, 0, &sz, b), SIMLSH_ESTATE);
    CHECK_OK(simlsh_signature_abort(b)); /* back to empty */
    CHECK(simlsh_signature_is_empty(b) == 1);
    CHECK_OK(simlsh_signature_begin(b));
    CHECK_OK(simlsh_signature_feed(b, "hello world, ", 13));
    CHECK_OK(simlsh_signature_feed(b, "hello simlsh", 12));
    CHECK_OK(simlsh_signature_end(b));
    CHECK(equal_values(a, b));
    CHECK_RC(simlsh_signature_feed(b, NULL, 3), SIMLSH_EINVAL);
    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_params_free(p);
}

/* Features and shingle sets give what text gives. */
static void test_shingleset_route(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a = hello(p), *c;
    simlsh_shingleset *set;
    CHECK_OK(simlsh_signature_new(&c, p));
    CHECK_OK(simlsh_shingleset_new(&set, p));
    CHECK_OK(simlsh_shingleset_add_text(set, HELLO, strlen(HELLO)));
    CHECK_OK(simlsh_signature_add_shingleset(c, set));
    CHECK(equal_values(a, c));
    CHECK_OK(simlsh_shingleset_begin(set));
    CHECK_RC(simlsh_signature_add_shingleset(c, set), SIMLSH_ESTATE);
    CHECK_OK(simlsh_shingleset_abort(set));
    CHECK_RC(simlsh_signature_add_shingleset(c, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_add_features(c, NULL, 2), SIMLSH_EINVAL);
    CHECK_OK(simlsh_signature_add_features(c, NULL, 0));
    CHECK(equal_values(a, c));
    simlsh_shingleset_free(set);
    simlsh_signature_free(a);
    simlsh_signature_free(c);
    simlsh_params_free(p);
}

/* Contract mismatch: seed, scheme, num_perm, shingling. */
static void test_contract_mismatch(int scheme)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *a = hello(p), *b = hello(p);
    double j;
    simlsh_params *q[4];
    q[0] = mk(scheme, 64, 2);
    q[1] = mk(!scheme, 64, 1);
    q[2] = mk(scheme, 65, 1);
    q[3] = mk(scheme, 64, 1);
    CHECK_OK(simlsh_params_set_int(q[3], SIMLSH_PARAM_K, 4));
    for (int i = 0; i < 4; i++) {
        simlsh_signature *o;
        CHECK_OK(simlsh_signature_new(&o, q[i]));
        CHECK_OK(simlsh_signature_add_text(o, "hello world", 11));
        uint64_t f1, f2;
        CHECK_OK(simlsh_signature_fingerprint(&f1, o));
        CHECK_OK(simlsh_signature_fingerprint(&f2, a));
        CHECK(f1 != f2);
        CHECK_RC(simlsh_signature_jaccard(&j, a, o), SIMLSH_EMISMATCH);
        CHECK_RC(simlsh_signature_merge(a, o), SIMLSH_EMISMATCH);
        if (i == 3) {
            simlsh_shingleset *s4;
            CHECK_OK(simlsh_shingleset_new(&s4, q[3]));
            CHECK_RC(simlsh_signature_add_shingleset(a, s4), SIMLSH_EMISMATCH);
            simlsh_shingleset_free(s4);
        }
        simlsh_signature_free(o);
        simlsh_params_free(q[i]);
    }
    CHECK(equal_values(a, b)); /* failed merges changed nothing */
    uint64_t fp, pf;
    CHECK_RC(simlsh_signature_fingerprint(NULL, a), SIMLSH_EINVAL);
    CHECK_OK(simlsh_signature_fingerprint(&fp, a));
    CHECK_OK(simlsh_params_fingerprint(&pf, p, SIMLSH_SCOPE_SIGNATURE));
    CHECK(fp == pf);
    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_params_free(p);
}

/* Save / load round trip, truncations and bit flips (caught by the
 * checksum), for a non-empty and an empty signature. */
static void test_persistence(int scheme, int empty)
{
    simlsh_params *p = mk(scheme, 64, 1);
    simlsh_signature *src, *l;
    double j;
    size_t sz;
    if (empty)
        CHECK_OK(simlsh_signature_new(&src, p));
    else
        src = hello(p);
    CHECK_OK(simlsh_signature_save(NULL, 0, &sz, src));
    uint8_t *buf = malloc(sz);
    CHECK_RC(simlsh_signature_save(buf, sz - 1, &sz, src), SIMLSH_EBUFSIZE);
    CHECK_OK(simlsh_signature_save(buf, sz, &sz, src));
    CHECK_OK(simlsh_signature_load(&l, buf, sz, NULL));
    CHECK(equal_values(src, l));
    CHECK(simlsh_signature_is_empty(l) == empty);
    CHECK_OK(simlsh_signature_jaccard(&j, src, l));
    CHECK(j == 1.0);
    {
        /* the loaded signature's contract builds matching objects */
        simlsh_params *lp = (simlsh_params *)(uintptr_t)1;
        CHECK_RC(simlsh_signature_params(&lp, NULL), SIMLSH_EINVAL);
        CHECK(lp == NULL);
        CHECK_RC(simlsh_signature_params(NULL, l), SIMLSH_EINVAL);
        CHECK_OK(simlsh_signature_params(&lp, l));
        simlsh_signature *m2;
        CHECK_OK(simlsh_signature_new(&m2, lp));
        uint64_t f1, f2;
        CHECK_OK(simlsh_signature_fingerprint(&f1, m2));
        CHECK_OK(simlsh_signature_fingerprint(&f2, l));
        CHECK(f1 == f2);
        /* merging after a load still gives the union (raw rows travel) */
        CHECK_OK(simlsh_signature_merge(m2, l));
        CHECK(equal_values(m2, l));
        simlsh_signature_free(m2);
        simlsh_params_free(lp);
    }
    simlsh_signature_free(l);
    /* every truncation and every single-bit flip is rejected */
    for (size_t cut = 0; cut < sz; cut++) {
        simlsh_signature *x = (simlsh_signature *)(uintptr_t)1;
        CHECK_RC(simlsh_signature_load(&x, buf, cut, NULL), SIMLSH_ECORRUPT);
        CHECK(x == NULL);
    }
    for (size_t i = 0; i < sz; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (uint8_t)(1u << bit);
            simlsh_signature *x;
            int rc = simlsh_signature_load(&x, buf, sz, NULL);
            CHECK(rc == SIMLSH_ECORRUPT || rc == SIMLSH_EUNSUPPORTED);
            if (rc == 0)
                simlsh_signature_free(x);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    CHECK_RC(simlsh_signature_load(NULL, buf, sz, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_load(&l, NULL, sz, NULL), SIMLSH_EINVAL);
    /* a newer format version is "unsupported", not "corrupt" */
    buf[4] = 2;
    CHECK_RC(simlsh_signature_load(&l, buf, sz, NULL), SIMLSH_EUNSUPPORTED);
    free(buf);
    simlsh_signature_free(src);
    simlsh_params_free(p);
}

/* Hostile payloads with a valid checksum: each edit is resealed, so only the
 * loader's semantic validation (docs/format.md section 5) can refuse it. */
static void test_hostile_payloads(int scheme)
{
    enum {
        P = 64,
        ROWS = 56
    }; /* payload: P, flags, then P raw rows */
    simlsh_params *p = mk(scheme, P, 1);
    simlsh_signature *full = hello(p), *few, *empty, *l;
    CHECK_OK(simlsh_signature_new(&few, p));
    CHECK_OK(simlsh_signature_add_features(few, (const uint64_t[]){42}, 1));
    CHECK_OK(simlsh_signature_new(&empty, p));
    simlsh_signature *srcs[3] = {full, few, empty};
    size_t sz = 56 + 8 + 4 * P;
    uint8_t *good = malloc(sz), *bad = malloc(sz);
    for (int si = 0; si < 3; si++) {
        size_t got;
        CHECK_OK(simlsh_signature_save(good, sz, &got, srcs[si]));
        CHECK(got == sz);
        CHECK(tu_get32(good + 48) == P && tu_get32(good + 52) == (si == 2));
        /* the control: a resealed untouched copy loads */
        memcpy(bad, good, sz);
        tu_reseal(bad, sz);
        CHECK(memcmp(bad, good, sz) == 0);

        enum {
            FLIP_EMPTY,
            ALL_EMPTY_ROWS,
            ONE_VALUE,
            FLAG_BITS,
            P_SMALL,
            P_LARGE,
            NCASES
        };
        for (int c = 0; c < NCASES; c++) {
            memcpy(bad, good, sz);
            switch (c) {
            case FLIP_EMPTY: /* the empty flag disagrees with the rows */
                tu_put32(bad + 52, si == 2 ? 0 : 1);
                break;
            case ALL_EMPTY_ROWS: /* non-empty flag, only empty rows */
                if (si == 2)
                    continue; /* that is the valid empty signature */
                memset(bad + ROWS, 0xff, 4 * P);
                break;
            case ONE_VALUE: /* empty flag, one real row */
                if (si != 2)
                    continue;
                tu_put32(bad + ROWS + 4 * 7, 12345);
                break;
            case FLAG_BITS: /* undefined flag bits */
                tu_put32(bad + 52, tu_get32(bad + 52) | 2);
                break;
            case P_SMALL: /* P disagrees with the contract and with L */
                tu_put32(bad + 48, P - 1);
                break;
            case P_LARGE:
                tu_put32(bad + 48, 0x40000000u);
                break;
            }
            tu_reseal(bad, sz);
            l = (simlsh_signature *)(uintptr_t)1;
            int rc = simlsh_signature_load(&l, bad, sz, NULL);
            if (rc != SIMLSH_ECORRUPT)
                fprintf(stderr, "hostile signature source %d case %d: load returned %d\n", si, c,
                        rc);
            CHECK(rc == SIMLSH_ECORRUPT);
            CHECK(l == NULL);
        }
    }
    free(good);
    free(bad);
    simlsh_signature_free(full);
    simlsh_signature_free(few);
    simlsh_signature_free(empty);
    simlsh_params_free(p);
}

/* UTF-8 reject policy: the bad chunk is not consumed, the doc goes on. */
static void test_utf8_reject(void)
{
    simlsh_params *p = mk(0, 32, 0);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT));
    simlsh_signature *s, *t;
    CHECK_OK(simlsh_signature_new(&s, p));
    CHECK_OK(simlsh_signature_new(&t, p));
    CHECK_RC(simlsh_signature_add_text(s, "ab\377cd", 5), SIMLSH_EUTF8);
    CHECK(simlsh_signature_is_empty(s) == 1);
    CHECK_OK(simlsh_signature_begin(s));
    CHECK_OK(simlsh_signature_feed(s, "caf\xc3", 4)); /* split sequence: fine */
    CHECK_RC(simlsh_signature_feed(s, "x", 1), SIMLSH_EUTF8);
    CHECK_OK(simlsh_signature_feed(s, "\xa9 ok", 4));
    CHECK_OK(simlsh_signature_end(s));
    CHECK_OK(simlsh_signature_add_text(t, "caf\xc3\xa9 ok", 8));
    CHECK(equal_values(s, t));
    CHECK_OK(simlsh_signature_begin(s));
    CHECK_OK(simlsh_signature_feed(s, "x\xe6\x97", 3));
    CHECK_RC(simlsh_signature_end(s), SIMLSH_EUTF8); /* truncated at the end */
    CHECK_OK(simlsh_signature_abort(s));
    CHECK(equal_values(s, t));
    simlsh_signature_free(s);
    simlsh_signature_free(t);
    simlsh_params_free(p);
}

int main(void)
{
    for (int scheme = 0; scheme <= 1; scheme++) {
        test_merge(scheme);
        test_new(scheme);
        test_empty_rules(scheme);
        test_values(scheme);
        test_streaming_state(scheme);
        test_shingleset_route(scheme);
        test_contract_mismatch(scheme);
        test_persistence(scheme, 0);
        test_persistence(scheme, 1);
        test_hostile_payloads(scheme);
    }
    test_utf8_reject();
    return tu_finish("signature");
}
