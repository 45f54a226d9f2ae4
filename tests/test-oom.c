/*
 * Out-of-memory injection through the allocator hooks (libuv's
 * test-loop-oom.c does the same for its loop).
 *
 * One scenario (params, shingle sets, signatures of both schemes: texts in
 * one call and in chunks, features, copies, save/load, Jaccard) is run with
 * the counting allocator of testutil.h failing allocation number 1, then 2,
 * then 3, ... until a run completes without reaching the failing allocation.
 * In every run:
 *   - the call that meets the failure returns SIMLSH_ENOMEM, nothing else;
 *   - the objects it was given are as before the call (constructors leave
 *     *out NULL), and the call then succeeds when repeated;
 *   - the run's observable results equal those of a run without failures;
 *   - after everything is freed no allocation is live.
 * The index has its own OOM test (test-index.c).
 */
#include "testutil.h"

/* ---- injection bookkeeping ----------------------------------------------- */

static tu_alloc_state g_st;
static simlsh_allocator g_alloc;
static long g_before;
static long g_hits; /* injected failures met in this run */

static int try_check(int rc, long before, const char *what, int line)
{
    int injected = g_st.fail_at > before && g_st.fail_at <= g_st.count;
    if (injected) {
        g_hits++;
        if (rc == SIMLSH_ENOMEM)
            return 1; /* the caller checks the objects and repeats the call */
        tu_checks++;
        if (rc != 0) {
            tu_failures++;
            fprintf(stderr, "fail_at %ld: line %d: %s returned %s, expected ENOMEM\n", g_st.fail_at,
                    line, what, simlsh_error_name(rc));
        } else {
            /* allowed (a fallback path), but the results must still match */
            printf("fail_at %ld: line %d: %s absorbed the failed allocation\n", g_st.fail_at, line,
                   what);
        }
        return 0;
    }
    tu_checks++;
    if (rc != 0) {
        tu_failures++;
        fprintf(stderr, "fail_at %ld: line %d: %s returned %s without an injected failure\n",
                g_st.fail_at, line, what, simlsh_error_name(rc));
    }
    return 0;
}

/* 1 when the call met the injected failure and returned ENOMEM. */
#define TRY(expr) (g_before = g_st.count, try_check((expr), g_before, #expr, __LINE__))

/* A non-NULL value that no constructor may leave behind on failure. */
#define POISON ((void *)&g_st)

/* ---- digests of observable state (computed without the hooks) ----------- */

static uint64_t mix(uint64_t d, uint64_t v)
{
    d ^= v + 0x9e3779b97f4a7c15ULL + (d << 6) + (d >> 2);
    d ^= d >> 31;
    d *= 0xbf58476d1ce4e5b9ULL;
    return d ^ (d >> 29);
}

static uint64_t mix_double(uint64_t d, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return mix(d, bits);
}

/* Count and hashes of a set; also proves it is not inside a document. */
static uint64_t set_digest(const simlsh_shingleset *s)
{
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_count(&n, s));
    uint64_t *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(h != NULL);
    size_t got = 0;
    CHECK_OK(simlsh_shingleset_hashes(h, n, &got, s));
    CHECK(got == n);
    uint64_t d = mix(0x5e7, n);
    for (size_t i = 0; i < got; i++)
        d = mix(d, h[i]);
    free(h);
    return d;
}

static uint64_t sig_digest(const simlsh_signature *g)
{
    uint32_t v[1024];
    size_t n = 0;
    CHECK_OK(simlsh_signature_values(v, 1024, &n, g));
    uint64_t d = mix(0x516, (uint64_t)simlsh_signature_is_empty(g));
    for (size_t i = 0; i < n && i < 1024; i++)
        d = mix(d, v[i]);
    return d;
}

/* After a failed call, also push an empty input through the object: it
 * commits whatever the object still holds from the failed call, so
 * leftovers of an abandoned document would show up in the digest. */
static void settle_set(simlsh_shingleset *s, uint64_t before)
{
    CHECK(set_digest(s) == before);
    CHECK_OK(simlsh_shingleset_add_text(s, "", 0));
    CHECK_OK(simlsh_shingleset_add_features(s, NULL, 0));
    CHECK(set_digest(s) == before);
}

static void settle_sig(simlsh_signature *g, uint64_t before)
{
    CHECK(sig_digest(g) == before);
    CHECK_OK(simlsh_signature_add_text(g, "", 0));
    CHECK_OK(simlsh_signature_add_features(g, NULL, 0));
    CHECK(sig_digest(g) == before);
}

/* ---- inputs ---------------------------------------------------------------- */

#define NDOCS 3
static char *docs[NDOCS];
static size_t doc_len[NDOCS];
static uint64_t feats_big[3000], feats_small[20];

static void make_inputs(void)
{
    /* "\xef\xac\x81ne" starts with U+FB01, a ligature: NFKC makes it "fine". */
    static const char *words[] = {
        "the",  "quick",    "brown",     "fox",       "jumps", "over",           "lazy",
        "dog",  "Near",     "DUPLICATE", "detection", "with",  "shingles,",      "MinHash",
        "and",  "LSH.",     "Straße",    "naïve",     "ÉCOLE", "\xef\xac\x81ne", "日本語",
        "x",    "y",        "z",         "lorem",     "ipsum", "dolor",          "sit",
        "amet", "banding!",
    };
    const size_t nw = sizeof words / sizeof words[0];
    tu_rng r = {0x00c0ffee};
    for (int i = 0; i < NDOCS; i++) {
        size_t cap = 8000, len = 0;
        char *d = malloc(cap);
        if (d == NULL)
            exit(1);
        size_t target = 3000 + 1500 * (size_t)i;
        while (len < target) {
            const char *w = words[tu_below(&r, nw)];
            size_t wl = strlen(w);
            memcpy(d + len, w, wl);
            len += wl;
            uint64_t sep = tu_below(&r, 16);
            d[len++] = sep == 0 ? '\n' : ' ';
            if (sep == 1)
                d[len++] = ' '; /* runs of spaces for COLLAPSE_SPACE */
            if (i == 2 && sep == 2)
                d[len++] = (char)0xff; /* invalid UTF-8, replaced */
        }
        docs[i] = d;
        doc_len[i] = len;
    }
    for (size_t i = 0; i < 3000; i++)
        feats_big[i] = tu_next(&r);
    for (size_t i = 0; i < 20; i++)
        feats_small[i] = tu_next(&r);
}

static const size_t chunk_sizes[] = {1, 3, 17, 250, 4096};

/* ---- scenario steps with their failure checks ----------------------------- */

static simlsh_params *params_new(void)
{
    simlsh_params *p = POISON;
    while (TRY(simlsh_params_new(&p, &g_alloc)))
        CHECK(p == NULL);
    return p;
}

static simlsh_params *params_copy(const simlsh_params *src)
{
    simlsh_params *p = POISON;
    while (TRY(simlsh_params_copy(&p, src)))
        CHECK(p == NULL);
    return p;
}

static simlsh_shingleset *set_new(const simlsh_params *p)
{
    simlsh_shingleset *s = POISON;
    while (TRY(simlsh_shingleset_new(&s, p)))
        CHECK(s == NULL);
    return s;
}

static void set_add_text(simlsh_shingleset *s, const char *t, size_t len)
{
    uint64_t before = set_digest(s);
    while (TRY(simlsh_shingleset_add_text(s, t, len)))
        settle_set(s, before);
}

/* begin / feed* / end in chunks of varying size. A failure abandons the
 * document (the set is as before begin and no document is open); the whole
 * document is then fed again. */
static void set_add_chunked(simlsh_shingleset *s, const char *t, size_t len)
{
    uint64_t before = set_digest(s);
    for (;;) {
        if (TRY(simlsh_shingleset_begin(s))) {
            settle_set(s, before);
            continue;
        }
        int failed = 0;
        for (size_t off = 0, c = 0; off < len && !failed; c++) {
            size_t n = chunk_sizes[c % 5];
            if (n > len - off)
                n = len - off;
            failed = TRY(simlsh_shingleset_feed(s, t + off, n));
            off += n;
        }
        if (!failed)
            failed = TRY(simlsh_shingleset_end(s));
        if (!failed)
            return;
        CHECK_RC(simlsh_shingleset_abort(s), SIMLSH_ESTATE);
        settle_set(s, before);
    }
}

static void set_add_features(simlsh_shingleset *s, const uint64_t *f, size_t n)
{
    uint64_t before = set_digest(s);
    while (TRY(simlsh_shingleset_add_features(s, f, n)))
        settle_set(s, before);
}

static simlsh_shingleset *set_copy(const simlsh_shingleset *src)
{
    uint64_t before = set_digest(src);
    simlsh_shingleset *s = POISON;
    while (TRY(simlsh_shingleset_copy(&s, src))) {
        CHECK(s == NULL);
        CHECK(set_digest(src) == before);
    }
    return s;
}

static simlsh_signature *sig_new(const simlsh_params *p)
{
    simlsh_signature *g = POISON;
    while (TRY(simlsh_signature_new(&g, p)))
        CHECK(g == NULL);
    return g;
}

static void sig_add_text(simlsh_signature *g, const char *t, size_t len)
{
    uint64_t before = sig_digest(g);
    while (TRY(simlsh_signature_add_text(g, t, len)))
        settle_sig(g, before);
}

static void sig_add_chunked(simlsh_signature *g, const char *t, size_t len)
{
    uint64_t before = sig_digest(g);
    for (;;) {
        if (TRY(simlsh_signature_begin(g))) {
            settle_sig(g, before);
            continue;
        }
        int failed = 0;
        for (size_t off = 0, c = 0; off < len && !failed; c++) {
            size_t n = chunk_sizes[(c + 2) % 5];
            if (n > len - off)
                n = len - off;
            failed = TRY(simlsh_signature_feed(g, t + off, n));
            off += n;
        }
        if (!failed)
            failed = TRY(simlsh_signature_end(g));
        if (!failed)
            return;
        CHECK_RC(simlsh_signature_abort(g), SIMLSH_ESTATE);
        settle_sig(g, before);
    }
}

static void sig_add_set(simlsh_signature *g, const simlsh_shingleset *s)
{
    uint64_t before = sig_digest(g);
    while (TRY(simlsh_signature_add_shingleset(g, s)))
        settle_sig(g, before);
}

static void sig_add_features(simlsh_signature *g, const uint64_t *f, size_t n)
{
    uint64_t before = sig_digest(g);
    while (TRY(simlsh_signature_add_features(g, f, n)))
        settle_sig(g, before);
}

static simlsh_signature *sig_copy(const simlsh_signature *src)
{
    uint64_t before = sig_digest(src);
    simlsh_signature *g = POISON;
    while (TRY(simlsh_signature_copy(&g, src))) {
        CHECK(g == NULL);
        CHECK(sig_digest(src) == before);
    }
    return g;
}

/* Serialised bytes live in plain malloc memory: they belong to the caller. */
static uint8_t *set_save(const simlsh_shingleset *s, size_t *len)
{
    *len = 0;
    while (TRY(simlsh_shingleset_save(NULL, 0, len, s)))
        ;
    uint8_t *buf = malloc(*len ? *len : 1);
    CHECK(buf != NULL);
    size_t n = 0;
    while (TRY(simlsh_shingleset_save(buf, *len, &n, s)))
        ;
    CHECK(n == *len);
    return buf;
}

static uint8_t *sig_save(const simlsh_signature *g, size_t *len)
{
    *len = 0;
    while (TRY(simlsh_signature_save(NULL, 0, len, g)))
        ;
    uint8_t *buf = malloc(*len ? *len : 1);
    CHECK(buf != NULL);
    size_t n = 0;
    while (TRY(simlsh_signature_save(buf, *len, &n, g)))
        ;
    CHECK(n == *len);
    return buf;
}

static simlsh_shingleset *set_load(const uint8_t *buf, size_t len)
{
    simlsh_shingleset *s = POISON;
    while (TRY(simlsh_shingleset_load(&s, buf, len, &g_alloc)))
        CHECK(s == NULL);
    return s;
}

static simlsh_signature *sig_load(const uint8_t *buf, size_t len)
{
    simlsh_signature *g = POISON;
    while (TRY(simlsh_signature_load(&g, buf, len, &g_alloc)))
        CHECK(g == NULL);
    return g;
}

/* ---- the scenario ------------------------------------------------------------ */

/* Sets and signatures (both schemes) under one contract; returns a digest of
 * everything observable. */
static uint64_t sub_scenario(const simlsh_params *p, uint64_t d)
{
    simlsh_shingleset *a = set_new(p), *b = set_new(p);
    set_add_text(a, docs[0], doc_len[0]);
    set_add_text(a, docs[1], doc_len[1]);
    set_add_text(a, "", 0);
    set_add_text(a, "tiny", 4);
    set_add_chunked(b, docs[1], doc_len[1]);
    set_add_chunked(b, docs[2], doc_len[2]);
    set_add_features(a, feats_big, 3000); /* sorted with a scratch buffer */
    set_add_features(a, feats_small, 20); /* small: sorted in place */
    d = mix(d, set_digest(a));
    d = mix(d, set_digest(b));

    simlsh_shingleset *c = set_copy(a);
    size_t len;
    uint8_t *buf = set_save(a, &len);
    simlsh_shingleset *l = set_load(buf, len);
    free(buf);
    double j = -1;
    while (TRY(simlsh_shingleset_jaccard(&j, a, b)))
        ;
    d = mix_double(d, j);
    CHECK(j > 0.0 && j < 1.0);
    while (TRY(simlsh_shingleset_jaccard(&j, a, l)))
        ;
    CHECK(j == 1.0);
    while (TRY(simlsh_shingleset_containment(&j, c, l)))
        ;
    CHECK(j == 1.0);
    CHECK(set_digest(c) == set_digest(a));
    CHECK(set_digest(l) == set_digest(a));

    for (int scheme = SIMLSH_SCHEME_OPH; scheme <= SIMLSH_SCHEME_CLASSIC; scheme++) {
        simlsh_params *ps = params_copy(p);
        CHECK_OK(simlsh_params_set_int(ps, SIMLSH_PARAM_SCHEME, scheme));
        CHECK_OK(simlsh_params_set_int(ps, SIMLSH_PARAM_NUM_PERM, 64));

        simlsh_signature *g1 = sig_new(ps), *g2 = sig_new(ps);
        simlsh_params_free(ps); /* the signatures keep their own copy */
        sig_add_text(g1, docs[0], doc_len[0]);
        sig_add_chunked(g1, docs[2], doc_len[2]);
        sig_add_set(g1, b);
        sig_add_set(g2, a);
        sig_add_features(g2, feats_small, 20);
        d = mix(d, sig_digest(g1));
        d = mix(d, sig_digest(g2));

        simlsh_signature *g3 = sig_copy(g1);
        uint64_t before = sig_digest(g3);
        while (TRY(simlsh_signature_merge(g3, g2)))
            CHECK(sig_digest(g3) == before);
        d = mix(d, sig_digest(g3));

        buf = sig_save(g3, &len);
        simlsh_signature *g4 = sig_load(buf, len);
        free(buf);
        while (TRY(simlsh_signature_jaccard(&j, g3, g4)))
            ;
        CHECK(j == 1.0);
        CHECK(sig_digest(g4) == sig_digest(g3));
        while (TRY(simlsh_signature_jaccard(&j, g1, g2)))
            ;
        d = mix_double(d, j);

        /* a loaded classic signature creates its coefficients on first use */
        sig_add_text(g4, docs[1], doc_len[1]);
        d = mix(d, sig_digest(g4));

        simlsh_signature_free(g1);
        simlsh_signature_free(g2);
        simlsh_signature_free(g3);
        simlsh_signature_free(g4);
    }

    simlsh_shingleset_free(a);
    simlsh_shingleset_free(b);
    simlsh_shingleset_free(c);
    simlsh_shingleset_free(l);
    return d;
}

static uint64_t scenario(void)
{
    uint64_t d = 0;
    /* char 5-shingles of ASCII-normalised text, 32-bit hashes */
    simlsh_params *p0 = params_new();
    CHECK_OK(simlsh_params_set_int(p0, SIMLSH_PARAM_NORMALIZE,
                                   SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE));
    /* word 3-shingles with 64-bit hashes, Unicode-normalised when available */
    simlsh_params *p1 = params_copy(p0);
    CHECK_OK(simlsh_params_set_int(p1, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD));
    CHECK_OK(simlsh_params_set_int(p1, SIMLSH_PARAM_K, 3));
    CHECK_OK(simlsh_params_set_int(p1, SIMLSH_PARAM_HASH_BITS, 64));
    CHECK_OK(simlsh_params_set_int(p1, SIMLSH_PARAM_SEED, 7));
    if (simlsh_has_unicode())
        CHECK_OK(simlsh_params_set_int(p1, SIMLSH_PARAM_NORMALIZE,
                                       SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_NFKC |
                                           SIMLSH_NORM_STRIP_PUNCT));
    /* byte 8-shingles, the default seed */
    simlsh_params *p2 = params_copy(p0);
    CHECK_OK(simlsh_params_set_int(p2, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE));
    CHECK_OK(simlsh_params_set_int(p2, SIMLSH_PARAM_K, 8));

    d = sub_scenario(p0, d);
    d = sub_scenario(p1, d);
    d = sub_scenario(p2, d);
    simlsh_params_free(p0);
    simlsh_params_free(p1);
    simlsh_params_free(p2);
    return d;
}

/* Fail every allocation of the scenario once, in turn. */
static void test_every_allocation_failure(void)
{
    make_inputs();
    g_alloc = tu_allocator(&g_st);

    /* reference run: no failures */
    memset(&g_st, 0, sizeof g_st);
    uint64_t ref = scenario();
    long total = g_st.count;
    CHECK(g_st.live == 0);
    printf("reference run: %ld allocations\n", total);
    if (tu_failures)
        return;

    long runs = 0, points = 0;
    for (long fail_at = 1;; fail_at++) {
        memset(&g_st, 0, sizeof g_st);
        g_st.fail_at = fail_at;
        g_hits = 0;
        int before = tu_failures;
        uint64_t d = scenario();
        runs++;
        if (g_st.count < fail_at)
            break; /* the whole scenario ran without reaching the failure */
        points++;
        if (g_hits != 1)
            fprintf(stderr, "fail_at %ld: the failed allocation was met by %ld calls\n", fail_at,
                    g_hits);
        CHECK(g_hits == 1);
        if (d != ref)
            fprintf(stderr, "fail_at %ld: results differ from the reference run\n", fail_at);
        CHECK(d == ref);
        if (g_st.live != 0)
            fprintf(stderr, "fail_at %ld: %ld allocations leaked\n", fail_at, g_st.live);
        CHECK(g_st.live == 0);
        CHECK(g_st.allocs == g_st.frees);
        if (tu_failures - before > 20 || fail_at > 100000) {
            fprintf(stderr, "giving up at fail_at %ld\n", fail_at);
            CHECK(0);
            break;
        }
    }
    printf("%ld runs, %ld failure points (reference: %ld allocations)\n", runs, points, total);
    /* every allocation of the reference run was made to fail once */
    CHECK(points >= total);
    for (int i = 0; i < NDOCS; i++)
        free(docs[i]);
}

int main(void)
{
    test_every_allocation_failure();
    return tu_finish("oom");
}
