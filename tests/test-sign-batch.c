/* simlsh_sign_batch and simlsh_band_keys_batch: every row has the bits of
 * one simlsh_signature_add_text() (and simlsh_signature_band_keys()), for
 * 1, 2, 3 and 8 threads and several contracts; empty documents are
 * flagged; the first failing document decides the error whatever the
 * thread count; failed allocations fail cleanly (an OOM loop). */
#include "testutil.h"

#define NDOCS 5000
#define MAXLEN 1000

static const uint32_t thread_counts[] = {1, 2, 3, 8};
#define NTC (sizeof thread_counts / sizeof thread_counts[0])

static char *texts[NDOCS];
static size_t lens[NDOCS];

/* Words (some with UTF-8 letters), whitespace-only and empty documents,
 * documents shorter than k, and near copies. */
static void make_texts(void)
{
    static const char *words[] = {"alpha",
                                  "beta",
                                  "gamma",
                                  "delta",
                                  "caf\xc3\xa9",
                                  "na\xc3\xafve",
                                  "\xe6\x97\xa5\xe6\x9c\xac",
                                  "x",
                                  "THE",
                                  "of",
                                  "Stra\xc3\x9f\x65"};
    tu_rng r = {42};
    for (size_t i = 0; i < NDOCS; i++) {
        texts[i] = malloc(MAXLEN + 16);
        size_t n = 0, want = (size_t)tu_below(&r, MAXLEN);
        if (i % 50 == 0)
            want = 0;
        if (i % 50 == 1)
            want = 3;
        if (i % 50 == 2) {
            memcpy(texts[i], "   \t  ", 6);
            n = 6;
            want = 0;
        }
        while (n < want) {
            const char *w = words[tu_below(&r, sizeof words / sizeof *words)];
            size_t wl = strlen(w);
            if (n + wl + 1 > MAXLEN)
                break;
            memcpy(texts[i] + n, w, wl);
            n += wl;
            texts[i][n++] = " \n,"[tu_below(&r, 3)];
        }
        if (i % 50 == 1) /* shorter than k (cut at ASCII, so valid UTF-8) */
            memcpy(texts[i], "a\xc3\xa9", n = 3);
        lens[i] = n;
    }
}

static simlsh_params *mk(const simlsh_allocator *al, int set)
{
    simlsh_params *p = NULL;
    if (simlsh_params_new(&p, al) != 0)
        return NULL;
    int ok = 1;
    if (set == 1) {
        ok = simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_WORD) == 0 &&
             simlsh_params_set_int(p, SIMLSH_PARAM_K, 3) == 0 &&
             simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE,
                                   SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE) == 0;
    } else if (set == 2) {
        ok = simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE) == 0 &&
             simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, SIMLSH_SCHEME_CLASSIC) == 0 &&
             simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 64) == 0 &&
             simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, 64) == 0;
    }
    if (!ok) {
        simlsh_params_free(p);
        return NULL;
    }
    return p;
}

/* The reference: one signature per document. */
static int reference(const simlsh_params *p, uint32_t *vals, uint8_t *empty, size_t np)
{
    for (size_t i = 0; i < NDOCS; i++) {
        simlsh_signature *s = NULL;
        size_t cnt;
        if (simlsh_signature_new(&s, p) != 0 ||
            simlsh_signature_add_text(s, texts[i], lens[i]) != 0 ||
            simlsh_signature_values(vals + i * np, np, &cnt, s) != 0) {
            simlsh_signature_free(s);
            return -1;
        }
        empty[i] = (uint8_t)simlsh_signature_is_empty(s);
        simlsh_signature_free(s);
    }
    return 0;
}

static void test_identical(int set)
{
    simlsh_params *p = mk(NULL, set);
    CHECK(p != NULL);
    int64_t np;
    simlsh_params_get_int(p, SIMLSH_PARAM_NUM_PERM, &np);
    uint32_t *want = malloc(NDOCS * (size_t)np * 4), *got = malloc(NDOCS * (size_t)np * 4);
    uint8_t want_e[NDOCS], got_e[NDOCS];
    CHECK(reference(p, want, want_e, (size_t)np) == 0);
    size_t nempty = 0;
    for (size_t i = 0; i < NDOCS; i++)
        nempty += want_e[i];
    CHECK(nempty >= NDOCS / 50 && nempty < NDOCS / 2);
    for (size_t t = 0; t < NTC; t++) {
        memset(got, 0x5a, NDOCS * (size_t)np * 4);
        memset(got_e, 7, sizeof got_e);
        CHECK_OK(simlsh_sign_batch(got, got_e, p, (const void *const *)texts, lens, NDOCS,
                                   thread_counts[t]));
        CHECK(memcmp(want, got, NDOCS * (size_t)np * 4) == 0);
        CHECK(memcmp(want_e, got_e, sizeof got_e) == 0);
    }
    /* empty may be NULL; a sub-range signs the same rows. */
    CHECK_OK(simlsh_sign_batch(got, NULL, p, (const void *const *)texts + 100, lens + 100, 7, 2));
    CHECK(memcmp(want + 100 * np, got, 7 * (size_t)np * 4) == 0);

    /* Band keys: those of simlsh_signature_band_keys with the index's
     * (b, r), row by row. */
    simlsh_index *ix = NULL;
    uint32_t b = 0, r = 0;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_index_bands(&b, &r, ix));
    uint64_t *keys = malloc(NDOCS * (size_t)b * 8), one[1024];
    CHECK_OK(simlsh_band_keys_batch(keys, p, want, NDOCS));
    size_t checked = 0;
    for (size_t i = 0; i < NDOCS; i += 3) {
        if (want_e[i])
            continue;
        simlsh_signature *s = NULL;
        CHECK_OK(simlsh_signature_new(&s, p));
        CHECK_OK(simlsh_signature_add_text(s, texts[i], lens[i]));
        CHECK_OK(simlsh_signature_band_keys(one, 1024, s, b, r));
        CHECK(memcmp(one, keys + i * b, b * 8) == 0);
        simlsh_signature_free(s);
        checked++;
    }
    CHECK(checked > NDOCS / 6);
    /* ... and what an index buckets on: a document found by a query is
     * found with the same keys. */
    simlsh_index_free(ix);
    free(keys);
    free(want);
    free(got);
    simlsh_params_free(p);
}

static void test_errors(void)
{
    simlsh_params *p = mk(NULL, 0);
    CHECK(p != NULL);
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT));
    uint32_t *vals = malloc(NDOCS * 128 * 4);
    char *saved1 = texts[1234], *saved2 = texts[3000];
    size_t l1 = lens[1234], l2 = lens[3000];
    char bad[] = "abc\xff"
                 "def ghi";
    texts[1234] = bad;
    lens[1234] = sizeof bad - 1;
    texts[3000] = NULL;
    lens[3000] = 5;
    for (size_t t = 0; t < NTC; t++)
        CHECK_RC(simlsh_sign_batch(vals, NULL, p, (const void *const *)texts, lens, NDOCS,
                                   thread_counts[t]),
                 SIMLSH_EUTF8);
    texts[1234] = saved1;
    lens[1234] = l1;
    for (size_t t = 0; t < NTC; t++)
        CHECK_RC(simlsh_sign_batch(vals, NULL, p, (const void *const *)texts, lens, NDOCS,
                                   thread_counts[t]),
                 SIMLSH_EINVAL);
    texts[3000] = saved2;
    lens[3000] = l2;
    CHECK_OK(simlsh_sign_batch(vals, NULL, p, (const void *const *)texts, lens, NDOCS, 2));
    CHECK_RC(simlsh_sign_batch(NULL, NULL, p, (const void *const *)texts, lens, 1, 1),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh_sign_batch(vals, NULL, NULL, (const void *const *)texts, lens, 1, 1),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh_sign_batch(vals, NULL, p, NULL, lens, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_sign_batch(vals, NULL, p, (const void *const *)texts, NULL, 1, 1),
             SIMLSH_EINVAL);
    CHECK_OK(simlsh_sign_batch(NULL, NULL, p, NULL, NULL, 0, 4));
    uint64_t k[64];
    CHECK_RC(simlsh_band_keys_batch(NULL, p, vals, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_band_keys_batch(k, NULL, vals, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_band_keys_batch(k, p, NULL, 1), SIMLSH_EINVAL);
    CHECK_OK(simlsh_band_keys_batch(NULL, p, NULL, 0));
    /* bands x rows beyond num_perm do not resolve */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 100));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 100));
    CHECK_RC(simlsh_band_keys_batch(k, p, vals, 1), SIMLSH_EINVAL);
    free(vals);
    simlsh_params_free(p);
}

/* Fail allocation k = 1, 2, ... until the call succeeds: SIMLSH_ENOMEM
 * each time, nothing leaked, then the reference bits. */
static void test_oom(uint32_t nthreads)
{
    static tu_alloc_state st;
    memset(&st, 0, sizeof st);
    simlsh_allocator al = tu_allocator(&st);
    simlsh_params *p = mk(&al, 1);
    CHECK(p != NULL);
    uint32_t *want = malloc(NDOCS * 128 * 4), *got = malloc(NDOCS * 128 * 4);
    uint8_t e[NDOCS];
    CHECK(reference(p, want, e, 128) == 0);
    long fails = 0, live = st.live;
    for (long k = 1; k < 1000; k++) {
        st.count = 0;
        st.fail_at = k;
        int rc = simlsh_sign_batch(got, NULL, p, (const void *const *)texts, lens, NDOCS, nthreads);
        st.fail_at = 0;
        CHECK(st.live == live);
        if (rc == 0) {
            CHECK(memcmp(want, got, NDOCS * 128 * 4) == 0);
            break;
        }
        CHECK_RC(rc, SIMLSH_ENOMEM);
        fails++;
    }
    CHECK(fails >= 2);
    free(want);
    free(got);
    simlsh_params_free(p);
    CHECK(st.live == 0);
}

/* The build's thread switch is what the library reports. */
static void test_has_threads(void)
{
    CHECK(simlsh_has_threads() == SIMLSH_EXPECT_THREADS);
}

int main(void)
{
    test_has_threads();
    make_texts();
    for (int set = 0; set < 3; set++)
        test_identical(set);
    test_errors();
    test_oom(1);
    test_oom(2);
    for (size_t i = 0; i < NDOCS; i++)
        free(texts[i]);
    return tu_finish("sign-batch");
}
