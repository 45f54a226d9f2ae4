/*
 * Property tests of the shingler with fixed seeds:
 *  - shingle sets equal a naive reference shingler (tests/refshingle.h) for
 *    every unit, ASCII normalisation flag set, several k and both widths;
 *  - any chunking of the text gives the same set as one call;
 *  - signatures streamed from text equal signatures of the shingle set, for
 *    both schemes and any chunking.
 */
#include "refshingle.h"
#include "testutil.h"

static const char *words[] = {"the",
                              "Quick",
                              "brown",
                              "FOX",
                              "jumps",
                              "over",
                              "lazy",
                              "dog",
                              "caf\xc3\xa9",
                              "na\xc3\xafve",
                              "\xe6\x97\xa5\xe6\x9c\xac",
                              "\xf0\x9f\x98\x80",
                              "a",
                              "I",
                              "x1",
                              "tab\tsep"};
static const char *seps[] = {" ", "  ", "\n", ", ", ". ", "!\n\n", "\t", " - ", "(", ") "};

/* Random text with words, separators, and now and then invalid bytes. */
static size_t gen_text(tu_rng *r, uint8_t *buf, size_t max, int allow_invalid)
{
    size_t n = 0;
    size_t target = tu_below(r, max / 2 + 1);
    while (n + 24 < max && n < target) {
        const char *w = words[tu_below(r, sizeof words / sizeof *words)];
        memcpy(buf + n, w, strlen(w));
        n += strlen(w);
        if (allow_invalid && tu_below(r, 10) == 0) {
            static const uint8_t bad[][3] = {{0xff, 0, 0},       {0xc3, 0, 0},    {0xe6, 0x97, 0},
                                             {0xed, 0xa0, 0x80}, {0xf4, 0x90, 0}, {0x80, 0, 0}};
            int which = (int)tu_below(r, 6);
            for (int i = 0; i < 3 && bad[which][i]; i++)
                buf[n++] = bad[which][i];
        }
        const char *s = seps[tu_below(r, sizeof seps / sizeof *seps)];
        memcpy(buf + n, s, strlen(s));
        n += strlen(s);
    }
    return n;
}

static simlsh_params *mkparams(int unit, int k, int norm, int bits, int scheme, int np)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, k));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norm));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, bits));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 12345));
    return p;
}

static size_t set_hashes(simlsh_shingleset *s, uint64_t **out)
{
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_hashes(NULL, 0, &n, s));
    *out = malloc((n + 1) * sizeof **out);
    CHECK_OK(simlsh_shingleset_hashes(*out, n, &n, s));
    return n;
}

/* Feed text in random chunks (sizes 0..max_chunk). */
static void feed_chunks_set(tu_rng *r, simlsh_shingleset *s, const uint8_t *t, size_t n,
                            size_t max_chunk)
{
    CHECK_OK(simlsh_shingleset_begin(s));
    size_t off = 0;
    while (off < n) {
        size_t c = tu_below(r, max_chunk + 1);
        if (c > n - off)
            c = n - off;
        CHECK_OK(simlsh_shingleset_feed(s, t + off, c));
        off += c;
    }
    CHECK_OK(simlsh_shingleset_end(s));
}

static void feed_chunks_sig(tu_rng *r, simlsh_signature *s, const uint8_t *t, size_t n,
                            size_t max_chunk)
{
    CHECK_OK(simlsh_signature_begin(s));
    size_t off = 0;
    while (off < n) {
        size_t c = tu_below(r, max_chunk + 1);
        if (c > n - off)
            c = n - off;
        CHECK_OK(simlsh_signature_feed(s, t + off, c));
        off += c;
    }
    CHECK_OK(simlsh_signature_end(s));
}

static int same_values(const simlsh_signature *a, const simlsh_signature *b)
{
    uint32_t va[1024], vb[1024];
    size_t na, nb;
    CHECK_OK(simlsh_signature_values(va, 1024, &na, a));
    CHECK_OK(simlsh_signature_values(vb, 1024, &nb, b));
    return na == nb && memcmp(va, vb, na * sizeof *va) == 0;
}

enum {
    MAXT = 3000
};

/* Shingle sets equal the reference shingler's, and chunking changes nothing. */
static void test_reference_and_chunking(void)
{
    tu_rng r = {20261122};
    uint8_t *text = malloc(MAXT);
    uint64_t *ref = malloc(4 * MAXT * sizeof *ref);
    const int ks[] = {1, 2, 3, 5, 9};
    int mismatches = 0, chunk_mismatch = 0, cases = 0;

    for (int unit = 0; unit <= 2; unit++)
        for (int norm = 0; norm < 8; norm++)
            for (int ki = 0; ki < 5; ki++)
                for (int bits = 32; bits <= 64; bits += 32) {
                    int k = ks[ki];
                    simlsh_params *p = mkparams(unit, k, norm, bits, 0, 64);
                    simlsh_shingleset *a, *b;
                    CHECK_OK(simlsh_shingleset_new(&a, p));
                    CHECK_OK(simlsh_shingleset_new(&b, p));
                    for (int rep = 0; rep < 6; rep++) {
                        size_t n = gen_text(&r, text, rep == 0 ? 40 : MAXT, unit != 0);
                        CHECK_OK(simlsh_shingleset_clear(a));
                        CHECK_OK(simlsh_shingleset_add_text(a, text, n));
                        ref_cfg cfg = {unit, k, norm};
                        size_t nr = ref_sort_unique(ref, ref_shingles(p, cfg, text, n, ref));
                        uint64_t *got;
                        size_t ng = set_hashes(a, &got);
                        if (ng != nr || memcmp(got, ref, ng * sizeof *got) != 0) {
                            if (mismatches++ < 5)
                                fprintf(
                                    stderr,
                                    "reference mismatch unit=%d norm=%d k=%d bits=%d n=%zu: %zu vs %zu\n",
                                    unit, norm, k, bits, n, ng, nr);
                        }
                        /* chunked, including 1-byte and empty chunks */
                        CHECK_OK(simlsh_shingleset_clear(b));
                        feed_chunks_set(&r, b, text, n, rep % 2 ? 1 : 17);
                        uint64_t *got2;
                        size_t ng2 = set_hashes(b, &got2);
                        if (ng2 != ng || memcmp(got, got2, ng * sizeof *got) != 0)
                            chunk_mismatch++;
                        free(got);
                        free(got2);
                        cases++;
                    }
                    simlsh_shingleset_free(a);
                    simlsh_shingleset_free(b);
                    simlsh_params_free(p);
                }
    CHECK(mismatches == 0);
    CHECK(chunk_mismatch == 0);
    printf("shingle sets: %d cases, %d reference mismatches, %d chunking mismatches\n", cases,
           mismatches, chunk_mismatch);
    free(text);
    free(ref);
}

/* Signatures: streamed text == set route, for both schemes and chunkings. */
static void test_signature_routes(void)
{
    tu_rng r = {20261123};
    uint8_t *text = malloc(MAXT);
    int sig_mismatch = 0;
    for (int scheme = 0; scheme <= 1; scheme++)
        for (int unit = 0; unit <= 2; unit++)
            for (int bits = 32; bits <= 64; bits += 32) {
                simlsh_params *p = mkparams(unit, unit == 2 ? 2 : 5, 3, bits, scheme, 96);
                simlsh_shingleset *set;
                simlsh_signature *s1, *s2, *s3;
                CHECK_OK(simlsh_shingleset_new(&set, p));
                CHECK_OK(simlsh_signature_new(&s1, p));
                CHECK_OK(simlsh_signature_new(&s2, p));
                CHECK_OK(simlsh_signature_new(&s3, p));
                for (int rep = 0; rep < 20; rep++) {
                    size_t n = gen_text(&r, text, rep < 3 ? 30 : MAXT, 1);
                    CHECK_OK(simlsh_shingleset_clear(set));
                    CHECK_OK(simlsh_shingleset_add_text(set, text, n));
                    CHECK_OK(simlsh_signature_clear(s1));
                    CHECK_OK(simlsh_signature_add_shingleset(s1, set));
                    CHECK_OK(simlsh_signature_clear(s2));
                    CHECK_OK(simlsh_signature_add_text(s2, text, n));
                    CHECK_OK(simlsh_signature_clear(s3));
                    feed_chunks_sig(&r, s3, text, n, rep % 2 ? 3 : 50);
                    if (!same_values(s1, s2) || !same_values(s1, s3))
                        sig_mismatch++;
                }
                simlsh_shingleset_free(set);
                simlsh_signature_free(s1);
                simlsh_signature_free(s2);
                simlsh_signature_free(s3);
                simlsh_params_free(p);
            }
    CHECK(sig_mismatch == 0);
    free(text);
}

/*
 * Every ASCII byte, and some others, through the case, space and
 * punctuation classes: each byte sits between letters, doubled and at the
 * end, for every unit, every ASCII normalisation flag set and several k.
 * The random texts above use a few letters and marks only.
 */
static void test_every_byte(void)
{
    static const char *const high[] = {"\x80",     "\xff",         "\xc3\xa9",
                                       "\xc3\x89", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    enum {
        NHIGH = sizeof high / sizeof high[0]
    };
    uint8_t text[64];
    uint64_t want[64], got[64];
    int mismatches = 0, cases = 0;
    for (int unit = 0; unit <= 2; unit++)
        for (int norm = 0; norm < 8; norm++)
            for (int k = 1; k <= 3; k++) {
                simlsh_params *p = mkparams(unit, k, norm, 64, 0, 64);
                simlsh_shingleset *s;
                CHECK_OK(simlsh_shingleset_new(&s, p));
                for (int c = 0; c < 128 + NHIGH; c++) {
                    const char *ch = c < 128 ? (const char[]){(char)c, 0} : high[c - 128];
                    size_t cl = c < 128 ? 1 : strlen(ch), n = 0;
                    /* "Ab<c>cD<c><c>e<c>" */
                    const char *parts[] = {"Ab", ch, "cD", ch, ch, "e", ch};
                    const size_t lens[] = {2, cl, 2, cl, cl, 1, cl};
                    for (int q = 0; q < 7; q++) {
                        memcpy(text + n, parts[q], lens[q]);
                        n += lens[q];
                    }
                    ref_cfg cfg = {unit, k, norm};
                    size_t nw = ref_sort_unique(want, ref_shingles(p, cfg, text, n, want)), ng;
                    CHECK_OK(simlsh_shingleset_clear(s));
                    CHECK_OK(simlsh_shingleset_add_text(s, text, n));
                    CHECK_OK(simlsh_shingleset_hashes(got, 64, &ng, s));
                    if (ng != nw || memcmp(got, want, ng * sizeof *got) != 0) {
                        if (mismatches++ < 10)
                            fprintf(stderr, "byte %#x: unit %d norm %d k %d: %zu vs %zu shingles\n",
                                    (unsigned)(uint8_t)ch[0], unit, norm, k, ng, nw);
                    }
                    cases++;
                }
                simlsh_shingleset_free(s);
                simlsh_params_free(p);
            }
    printf("every byte: %d cases, %d reference mismatches\n", cases, mismatches);
    CHECK(mismatches == 0);
}

/* Long documents (hundreds of thousands of shingles) are folded into a
 * sorted run while they stream in: a passage repeated with small changes
 * (the case folding is for) and text that never repeats, into an empty and
 * a non-empty set, whole and in chunks, against the reference; and an
 * abort after folds leaves the set as it was. */
static void test_long_documents(void)
{
    enum {
        LONG = 400000,
        PASSAGE = 2500
    };
    tu_rng r = {20261126};
    uint8_t *text = malloc(LONG), *passage = malloc(PASSAGE);
    uint64_t *ref = malloc(4 * (size_t)LONG * sizeof *ref);
    uint8_t small[200];
    size_t ns = gen_text(&r, small, sizeof small, 0);
    int bad = 0, cases = 0;
    for (int kind = 0; kind < 2; kind++) {
        size_t n = 0;
        if (kind == 0) {
            size_t np = gen_text(&r, passage, PASSAGE, 0);
            while (n + np <= LONG) {
                memcpy(text + n, passage, np);
                text[n + tu_below(&r, np)] = (uint8_t)('a' + tu_below(&r, 26));
                n += np;
            }
        } else {
            while (n + 3000 <= LONG)
                n += gen_text(&r, text + n, 3000, 0);
        }
        for (int unit = 0; unit <= 2; unit++)
            for (int bits = 32; bits <= 64; bits += 32) {
                simlsh_params *p = mkparams(unit, 5, 3, bits, 0, 64);
                ref_cfg cfg = {unit, 5, 3};
                size_t nr = ref_shingles(p, cfg, small, ns, ref);
                nr = ref_sort_unique(ref, nr + ref_shingles(p, cfg, text, n, ref + nr));
                for (int route = 0; route < 3; route++) {
                    simlsh_shingleset *a;
                    CHECK_OK(simlsh_shingleset_new(&a, p));
                    CHECK_OK(simlsh_shingleset_add_text(a, small, ns));
                    if (route == 0)
                        CHECK_OK(simlsh_shingleset_add_text(a, text, n));
                    else
                        feed_chunks_set(&r, a, text, n, route == 1 ? 97 : 65536);
                    uint64_t *got;
                    size_t ng = set_hashes(a, &got);
                    bad += ng != nr || memcmp(got, ref, ng * sizeof *got) != 0;
                    free(got);
                    /* abort after folds: the set is what it was */
                    uint64_t *before, *after;
                    size_t nb = set_hashes(a, &before);
                    CHECK_OK(simlsh_shingleset_begin(a));
                    CHECK_OK(simlsh_shingleset_feed(a, text, n));
                    CHECK_OK(simlsh_shingleset_abort(a));
                    size_t na = set_hashes(a, &after);
                    bad += na != nb || memcmp(before, after, nb * sizeof *before) != 0;
                    free(before);
                    free(after);
                    simlsh_shingleset_free(a);
                    cases++;
                }
                simlsh_params_free(p);
            }
    }
    CHECK(bad == 0);
    printf("long documents: %d cases, %d mismatches\n", cases, bad);
    free(text);
    free(passage);
    free(ref);
}

/* simlsh_shingleset_text_hashes: the set's hashes in text order with
 * repeats (sorted and made unique, they are the set), the size query, a
 * short buffer, and the set left as it was. */
static void test_text_hashes(void)
{
    tu_rng r = {20261127};
    uint8_t *text = malloc(MAXT);
    uint64_t *h = malloc((4 * MAXT + 8) * sizeof *h);
    int bad = 0, cases = 0;
    for (int unit = 0; unit <= 2; unit++)
        for (int bits = 32; bits <= 64; bits += 32)
            for (int norm = 0; norm < 8; norm += 3) {
                simlsh_params *p = mkparams(unit, 4, norm, bits, 0, 64);
                simlsh_shingleset *a, *b;
                CHECK_OK(simlsh_shingleset_new(&a, p));
                CHECK_OK(simlsh_shingleset_new(&b, p));
                uint8_t seed[64];
                size_t nseed = gen_text(&r, seed, sizeof seed, 0);
                CHECK_OK(simlsh_shingleset_add_text(b, seed, nseed));
                for (int rep = 0; rep < 4; rep++) {
                    size_t n = gen_text(&r, text, rep == 0 ? 3 : MAXT, 0);
                    CHECK_OK(simlsh_shingleset_clear(a));
                    CHECK_OK(simlsh_shingleset_add_text(a, text, n));
                    size_t want = 0, got = 0, all = 0;
                    CHECK_OK(simlsh_shingleset_text_hashes(NULL, 0, &all, b, text, n));
                    CHECK_OK(simlsh_shingleset_text_hashes(h, 4 * MAXT + 8, &got, b, text, n));
                    bad += got != all;
                    if (got > 1) {
                        /* a short buffer gets its first cap hashes, and
                         * nothing is written past it */
                        uint64_t last = h[got - 1], first = h[0];
                        h[got - 1] = UINT64_C(0xC0FFEE);
                        h[0] = ~first;
                        CHECK_RC(simlsh_shingleset_text_hashes(h, got - 1, &all, b, text, n),
                                 SIMLSH_EBUFSIZE);
                        bad += h[got - 1] != UINT64_C(0xC0FFEE) || h[0] != first;
                        h[got - 1] = last;
                    }
                    bad += all != got;
                    for (size_t i = 0; bits == 32 && i < got; i++)
                        bad += h[i] >> 32 != 0;
                    got = ref_sort_unique(h, got);
                    uint64_t *set, *before;
                    want = set_hashes(a, &set);
                    bad += got != want || memcmp(h, set, got * sizeof *h) != 0;
                    /* b still holds only the seed text's set */
                    size_t nb = set_hashes(b, &before);
                    simlsh_shingleset *c;
                    CHECK_OK(simlsh_shingleset_new(&c, p));
                    CHECK_OK(simlsh_shingleset_add_text(c, seed, nseed));
                    uint64_t *seedset;
                    size_t nc = set_hashes(c, &seedset);
                    bad += nb != nc || memcmp(before, seedset, nb * sizeof *before) != 0;
                    free(set);
                    free(before);
                    free(seedset);
                    simlsh_shingleset_free(c);
                    cases++;
                }
                /* errors */
                size_t cnt = 7;
                CHECK_RC(simlsh_shingleset_text_hashes(h, 1, NULL, b, text, 3), SIMLSH_EINVAL);
                CHECK_RC(simlsh_shingleset_text_hashes(h, 1, &cnt, NULL, text, 3), SIMLSH_EINVAL);
                CHECK_RC(simlsh_shingleset_text_hashes(h, 1, &cnt, b, NULL, 3), SIMLSH_EINVAL);
                CHECK_OK(simlsh_shingleset_begin(b));
                CHECK_RC(simlsh_shingleset_text_hashes(h, 1, &cnt, b, text, 3), SIMLSH_ESTATE);
                CHECK_OK(simlsh_shingleset_abort(b));
                CHECK_OK(simlsh_shingleset_text_hashes(h, 1, &cnt, b, NULL, 0));
                simlsh_shingleset_free(a);
                simlsh_shingleset_free(b);
                simlsh_params_free(p);
            }
    CHECK(bad == 0);
    printf("text hashes: %d cases, %d mismatches\n", cases, bad);
    free(text);
    free(h);
}

int main(void)
{
    test_reference_and_chunking();
    test_text_hashes();
    test_long_documents();
    test_signature_routes();
    test_every_byte();
    return tu_finish("shingle-stream");
}
