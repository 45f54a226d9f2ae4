/* Shingle sets: API behaviour, edge rules, exact Jaccard/containment,
 * persistence and its validation, Unicode normalisation. */
#include "testutil.h"

static simlsh_params *mk(int unit, int k)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, k));
    return p;
}

static size_t count(const simlsh_shingleset *s)
{
    size_t n = (size_t)-1;
    CHECK_OK(simlsh_shingleset_count(&n, s));
    return n;
}

/* Sets with known overlap: A = [0, a), B = [a - c, a - c + b). */
static void test_jaccard_exact(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 5);
    tu_rng r = {5};
    for (int t = 0; t < 200; t++) {
        size_t a = 1 + tu_below(&r, 500), b = 1 + tu_below(&r, 500);
        size_t c = tu_below(&r, (a < b ? a : b) + 1);
        uint64_t *fa = malloc(a * 8), *fb = malloc(b * 8);
        for (size_t i = 0; i < a; i++)
            fa[i] = 0x9e3779b97f4a7c15ULL * (i + 1); /* distinct, unsorted */
        for (size_t i = 0; i < b; i++)
            fb[i] = 0x9e3779b97f4a7c15ULL * (a - c + i + 1);
        simlsh_shingleset *A, *B;
        CHECK_OK(simlsh_shingleset_new(&A, p));
        CHECK_OK(simlsh_shingleset_new(&B, p));
        /* add in two halves with a duplicate to exercise merge + unique */
        CHECK_OK(simlsh_shingleset_add_features(A, fa, a / 2 + 1));
        CHECK_OK(simlsh_shingleset_add_features(A, fa + a / 2, a - a / 2));
        CHECK_OK(simlsh_shingleset_add_features(B, fb, b));
        CHECK(count(A) == a && count(B) == b);
        double j, ca, cb;
        CHECK_OK(simlsh_shingleset_jaccard(&j, A, B));
        CHECK(j == (double)c / (double)(a + b - c));
        CHECK_OK(simlsh_shingleset_containment(&ca, A, B));
        CHECK_OK(simlsh_shingleset_containment(&cb, B, A));
        CHECK(ca == (double)c / (double)a && cb == (double)c / (double)b);
        simlsh_shingleset_free(A);
        simlsh_shingleset_free(B);
        free(fa);
        free(fb);
    }
    simlsh_params_free(p);
}

/* A set of "abcabc" and "xyz" with char 3-shingles: abc, bca, cab, xyz. */
static simlsh_shingleset *four_shingles(const simlsh_params *p)
{
    simlsh_shingleset *s;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_add_text(s, "abcabc", 6));
    CHECK_OK(simlsh_shingleset_add_text(s, "xyz", 3));
    return s;
}

static void test_new(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s;
    CHECK_RC(simlsh_shingleset_new(NULL, p), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_new(&s, NULL), SIMLSH_EINVAL);
    CHECK(s == NULL);
    simlsh_shingleset_free(NULL);
    simlsh_params_free(p);
}

/* Empty document -> empty set; shorter than k -> one shingle. */
static void test_edge_rules(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_add_text(s, "", 0));
    CHECK(count(s) == 0);
    CHECK_OK(simlsh_shingleset_add_text(s, NULL, 0));
    CHECK(count(s) == 0);
    CHECK_OK(simlsh_shingleset_add_text(s, "ab", 2));
    CHECK(count(s) == 1);
    uint64_t h[8], want;
    size_t n;
    CHECK_OK(simlsh_shingleset_hashes(h, 8, &n, s));
    CHECK_OK(simlsh_hash_bytes(&want, p, "ab", 2));
    CHECK(n == 1 && h[0] == want);
    /* exactly k units: one shingle, the same as the short-document rule */
    CHECK_OK(simlsh_shingleset_clear(s));
    CHECK_OK(simlsh_shingleset_add_text(s, "abc", 3));
    CHECK_OK(simlsh_shingleset_hashes(h, 8, &n, s));
    CHECK_OK(simlsh_hash_bytes(&want, p, "abc", 3));
    CHECK(n == 1 && h[0] == want);
    /* "abcabc": abc, bca, cab */
    CHECK_OK(simlsh_shingleset_clear(s));
    CHECK_OK(simlsh_shingleset_add_text(s, "abcabc", 6));
    CHECK(count(s) == 3);
    /* several documents: union; shingles never span documents */
    CHECK_OK(simlsh_shingleset_add_text(s, "xyz", 3));
    CHECK(count(s) == 4);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
}

static void test_hashes_buffer(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s = four_shingles(p);
    uint64_t h[8];
    size_t n;
    CHECK_OK(simlsh_shingleset_hashes(NULL, 0, &n, s));
    CHECK(n == 4);
    CHECK_RC(simlsh_shingleset_hashes(h, 3, &n, s), SIMLSH_EBUFSIZE);
    CHECK(n == 4);
    CHECK_OK(simlsh_shingleset_hashes(h, 8, &n, s));
    CHECK(h[0] < h[1] && h[1] < h[2] && h[2] < h[3]);
    CHECK_RC(simlsh_shingleset_hashes(h, 8, NULL, s), SIMLSH_EINVAL);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
}

/* Mid-document, results are an error; abort restores the set. */
static void test_streaming_state(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s = four_shingles(p), *t, *c;
    CHECK_OK(simlsh_shingleset_new(&t, p));
    uint64_t h[8];
    size_t n;
    double j;
    CHECK_OK(simlsh_shingleset_begin(s));
    CHECK_RC(simlsh_shingleset_begin(s), SIMLSH_ESTATE);
    CHECK_OK(simlsh_shingleset_feed(s, "hello world", 11));
    CHECK_RC(simlsh_shingleset_count(&n, s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_hashes(h, 8, &n, s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_jaccard(&j, s, t), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_containment(&j, t, s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_copy(&c, s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_save(NULL, 0, &n, s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_add_features(s, h, 1), SIMLSH_ESTATE);
    CHECK_OK(simlsh_shingleset_abort(s));
    CHECK(count(s) == 4);
    CHECK_RC(simlsh_shingleset_abort(s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_feed(s, "x", 1), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_end(s), SIMLSH_ESTATE);
    CHECK_RC(simlsh_shingleset_feed(NULL, "x", 1), SIMLSH_EINVAL);
    /* clear keeps memory and empties; the set is reusable */
    CHECK_OK(simlsh_shingleset_clear(s));
    CHECK(count(s) == 0);
    CHECK_RC(simlsh_shingleset_clear(NULL), SIMLSH_EINVAL);
    CHECK_OK(simlsh_shingleset_add_text(s, "abc", 3));
    CHECK(count(s) == 1);
    simlsh_shingleset_free(s);
    simlsh_shingleset_free(t);
    simlsh_params_free(p);
}

static void test_empty_rules(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s, *t;
    double j;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_new(&t, p));
    CHECK_OK(simlsh_shingleset_jaccard(&j, s, t));
    CHECK(j == 1.0);
    CHECK_OK(simlsh_shingleset_add_text(t, "hello", 5));
    CHECK_OK(simlsh_shingleset_jaccard(&j, s, t));
    CHECK(j == 0.0);
    CHECK_OK(simlsh_shingleset_containment(&j, s, t));
    CHECK(j == 1.0);
    CHECK_OK(simlsh_shingleset_containment(&j, t, s));
    CHECK(j == 0.0);
    simlsh_shingleset_free(s);
    simlsh_shingleset_free(t);
    simlsh_params_free(p);
}

static void test_copy(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *t, *c;
    CHECK_OK(simlsh_shingleset_new(&t, p));
    CHECK_OK(simlsh_shingleset_add_text(t, "hello", 5));
    CHECK_OK(simlsh_shingleset_copy(&c, t));
    CHECK_OK(simlsh_shingleset_add_text(t, "more text", 9));
    CHECK(count(c) == 3 && count(t) > 3);
    CHECK_RC(simlsh_shingleset_copy(NULL, t), SIMLSH_EINVAL);
    simlsh_shingleset_free(c);
    simlsh_shingleset_free(t);
    simlsh_params_free(p);
}

static void test_contract_mismatch(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3), *q = mk(SIMLSH_UNIT_CHAR, 4);
    simlsh_shingleset *t, *o;
    double j;
    CHECK_OK(simlsh_shingleset_new(&t, p));
    CHECK_OK(simlsh_shingleset_add_text(t, "hello", 5));
    CHECK_OK(simlsh_shingleset_new(&o, q));
    CHECK_RC(simlsh_shingleset_jaccard(&j, t, o), SIMLSH_EMISMATCH);
    CHECK_RC(simlsh_shingleset_containment(&j, t, o), SIMLSH_EMISMATCH);
    uint64_t f1, f2, f3;
    CHECK_OK(simlsh_shingleset_fingerprint(&f1, t));
    CHECK_OK(simlsh_shingleset_fingerprint(&f2, o));
    CHECK_OK(simlsh_params_fingerprint(&f3, p, SIMLSH_SCOPE_SHINGLES));
    CHECK(f1 != f2 && f1 == f3);
    CHECK_RC(simlsh_shingleset_fingerprint(NULL, t), SIMLSH_EINVAL);
    simlsh_shingleset_free(o);
    simlsh_shingleset_free(t);
    simlsh_params_free(q);
    simlsh_params_free(p);
}

/* Round trip, truncations, bit flips (caught by the checksum). */
static void test_persistence(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *t, *l;
    double j;
    CHECK_OK(simlsh_shingleset_new(&t, p));
    CHECK_OK(simlsh_shingleset_add_text(t, "hello more text", 15));
    size_t sz;
    CHECK_OK(simlsh_shingleset_save(NULL, 0, &sz, t));
    uint8_t *buf = malloc(sz);
    CHECK_RC(simlsh_shingleset_save(buf, sz - 1, &sz, t), SIMLSH_EBUFSIZE);
    CHECK_OK(simlsh_shingleset_save(buf, sz, &sz, t));
    CHECK_OK(simlsh_shingleset_load(&l, buf, sz, NULL));
    CHECK_OK(simlsh_shingleset_jaccard(&j, t, l));
    CHECK(j == 1.0 && count(l) == count(t));
    {
        /* the loaded set's contract builds matching objects */
        simlsh_params *lp = (simlsh_params *)(uintptr_t)1;
        CHECK_RC(simlsh_shingleset_params(&lp, NULL), SIMLSH_EINVAL);
        CHECK(lp == NULL);
        CHECK_RC(simlsh_shingleset_params(NULL, l), SIMLSH_EINVAL);
        CHECK_OK(simlsh_shingleset_params(&lp, l));
        int64_t kk;
        CHECK_OK(simlsh_params_get_int(lp, SIMLSH_PARAM_K, &kk));
        CHECK(kk == 3);
        simlsh_shingleset *m2;
        CHECK_OK(simlsh_shingleset_new(&m2, lp));
        CHECK_OK(simlsh_shingleset_add_text(m2, "hello", 5));
        CHECK_OK(simlsh_shingleset_jaccard(&j, l, m2));
        CHECK(j == 3.0 / (double)count(t)); /* "hello" is inside the saved text */
        simlsh_shingleset_free(m2);
        simlsh_params_free(lp);
    }
    simlsh_shingleset_free(l);
    for (size_t cut = 0; cut < sz; cut++) {
        l = (simlsh_shingleset *)(uintptr_t)1;
        CHECK_RC(simlsh_shingleset_load(&l, buf, cut, NULL), SIMLSH_ECORRUPT);
        CHECK(l == NULL);
    }
    for (size_t i = 0; i < sz; i++) {
        buf[i] ^= 0x10;
        int rc = simlsh_shingleset_load(&l, buf, sz, NULL);
        CHECK(rc == SIMLSH_ECORRUPT || rc == SIMLSH_EUNSUPPORTED);
        buf[i] ^= 0x10;
    }
    CHECK_RC(simlsh_shingleset_load(NULL, buf, sz, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_shingleset_load(&l, NULL, sz, NULL), SIMLSH_EINVAL);
    free(buf);
    simlsh_shingleset_free(t);
    simlsh_params_free(p);
}

/* Hostile payloads with a valid checksum: each edit is resealed, so only the
 * loader's semantic validation (docs/format.md section 4) can refuse it. */
static void test_hostile_payloads(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *t, *l;
    CHECK_OK(simlsh_shingleset_new(&t, p));
    CHECK_OK(simlsh_shingleset_add_text(t, "hostile payloads", 16));
    size_t sz, n = count(t);
    CHECK_OK(simlsh_shingleset_save(NULL, 0, &sz, t));
    uint8_t *good = malloc(sz), *bad = malloc(sz);
    CHECK_OK(simlsh_shingleset_save(good, sz, &sz, t));
    CHECK(n >= 3 && sz == 56 + 8 + 8 * n);

    /* the control: resealing an untouched copy keeps it loadable */
    memcpy(bad, good, sz);
    tu_reseal(bad, sz);
    CHECK(memcmp(bad, good, sz) == 0);

    enum {
        SWAP_FIRST,
        SWAP_LAST,
        DUPLICATE,
        COUNT_SMALL,
        COUNT_HUGE,
        NCASES
    };
    for (int c = 0; c < NCASES; c++) {
        memcpy(bad, good, sz);
        uint8_t *h = bad + 56, tmp[8];
        switch (c) {
        case SWAP_FIRST: /* not increasing at the start */
            memcpy(tmp, h, 8);
            memcpy(h, h + 8, 8);
            memcpy(h + 8, tmp, 8);
            break;
        case SWAP_LAST: /* not increasing at the end */
            memcpy(tmp, h + 8 * (n - 2), 8);
            memcpy(h + 8 * (n - 2), h + 8 * (n - 1), 8);
            memcpy(h + 8 * (n - 1), tmp, 8);
            break;
        case DUPLICATE: /* sorted but not unique */
            memcpy(h + 8 * (n / 2), h + 8 * (n / 2 - 1), 8);
            break;
        case COUNT_SMALL: /* count disagrees with L */
            tu_put64(bad + 48, n - 1);
            break;
        case COUNT_HUGE: /* ~2^62 hashes: refused before allocating */
            bad[48 + 7] = 0x7f;
            break;
        }
        tu_reseal(bad, sz);
        l = (simlsh_shingleset *)(uintptr_t)1;
        int rc = simlsh_shingleset_load(&l, bad, sz, NULL);
        if (rc != SIMLSH_ECORRUPT)
            fprintf(stderr, "hostile shingle set case %d: load returned %d\n", c, rc);
        CHECK(rc == SIMLSH_ECORRUPT);
        CHECK(l == NULL);
    }
    free(good);
    free(bad);
    simlsh_shingleset_free(t);
    simlsh_params_free(p);
}

/* Invalid UTF-8: replaced by default, rejected on request. */
static void test_utf8_policy(void)
{
    simlsh_params *p = mk(SIMLSH_UNIT_CHAR, 3);
    simlsh_shingleset *s, *rj;
    uint64_t h[8], want;
    size_t n;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_add_text(s, "a\xff", 2));
    CHECK_OK(simlsh_shingleset_hashes(h, 8, &n, s));
    CHECK_OK(simlsh_hash_bytes(&want, p, "a\xef\xbf\xbd", 4));
    CHECK(n == 1 && h[0] == want);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT));
    CHECK_OK(simlsh_shingleset_new(&rj, p));
    CHECK_RC(simlsh_shingleset_add_text(rj, "a\xff", 2), SIMLSH_EUTF8);
    CHECK(count(rj) == 0);
    CHECK_OK(simlsh_shingleset_add_text(rj, "caf\xc3\xa9", 5));
    CHECK(count(rj) == 2);
    simlsh_shingleset_free(rj);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
}

/* Unicode normalisation: supported with utf8proc, refused without. */
static void test_unicode_normalisation(void)
{
    simlsh_params *u = mk(SIMLSH_UNIT_WORD, 1);
    double j;
    int rc =
        simlsh_params_set_int(u, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD);
    if (!simlsh_has_unicode()) {
        CHECK_RC(rc, SIMLSH_EUNSUPPORTED);
        simlsh_params_free(u);
        return;
    }
    CHECK_OK(rc);
    simlsh_shingleset *x, *y;
    CHECK_OK(simlsh_shingleset_new(&x, u));
    CHECK_OK(simlsh_shingleset_new(&y, u));
    /* U+FB01 LATIN SMALL LIGATURE FI -> "fi"; STRASSE with sharp s; e + combining acute */
    const char *a = "\xef\xac\x81le STRA\xc3\x9f"
                    "E cafe\xcc\x81";
    const char *b = "file strasse caf\xc3\xa9";
    CHECK_OK(simlsh_shingleset_begin(x));
    for (const char *q = a; *q; q++)
        CHECK_OK(simlsh_shingleset_feed(x, q, 1)); /* byte by byte */
    CHECK_OK(simlsh_shingleset_end(x));
    CHECK_OK(simlsh_shingleset_add_text(y, b, strlen(b)));
    CHECK_OK(simlsh_shingleset_jaccard(&j, x, y));
    CHECK(j == 1.0 && count(x) == 3);
    simlsh_shingleset_free(x);
    simlsh_shingleset_free(y);
    /* the byte unit cannot take Unicode normalisation: the params refuse it */
    CHECK_RC(simlsh_params_set_int(u, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE), SIMLSH_EINVAL);
    simlsh_params_free(u);
}

/* Words: separators are whitespace and punctuation. */
static void test_words(void)
{
    simlsh_params *w = mk(SIMLSH_UNIT_WORD, 2);
    simlsh_shingleset *w1, *w2;
    uint64_t h[8], e1, e2;
    size_t n;
    double j;
    CHECK_OK(simlsh_shingleset_new(&w1, w));
    CHECK_OK(simlsh_shingleset_new(&w2, w));
    CHECK_OK(simlsh_shingleset_add_text(w1, "  one, two...three\n", 19));
    CHECK_OK(simlsh_shingleset_add_text(w2, "one two three", 13));
    CHECK_OK(simlsh_shingleset_jaccard(&j, w1, w2));
    CHECK(j == 1.0 && count(w1) == 2);
    CHECK_OK(simlsh_shingleset_hashes(h, 8, &n, w1));
    CHECK_OK(simlsh_hash_bytes(&e1, w, "one two", 7));
    CHECK_OK(simlsh_hash_bytes(&e2, w, "two three", 9));
    CHECK((h[0] == e1 && h[1] == e2) || (h[0] == e2 && h[1] == e1));
    simlsh_shingleset_free(w1);
    simlsh_shingleset_free(w2);
    simlsh_params_free(w);
}

int main(void)
{
    test_jaccard_exact();
    test_new();
    test_edge_rules();
    test_hashes_buffer();
    test_streaming_state();
    test_empty_rules();
    test_copy();
    test_contract_mismatch();
    test_persistence();
    test_hostile_payloads();
    test_utf8_policy();
    test_unicode_normalisation();
    test_words();
    return tu_finish("shingleset");
}
