/*
 * UTF-8 decoding per Unicode 15, section 3.9 (table 3-7 for the well-formed
 * sequences, table 3-8 and "U+FFFD substitution of maximal subparts"), as
 * docs/format.md requires: every case below lists its bytes and, written by
 * hand from the standard, the code points a decoder must produce. The
 * library's decoding is observed through the public shingling API: with the
 * char unit and k larger than the document, a document is one shingle made
 * of all its code points, re-encoded, so its hash pins the exact sequence.
 * The hand-written answers are also checked against refshingle.h's decoder.
 */
#include "refshingle.h"
#include "testutil.h"

#define FFFD 0xfffdu

typedef struct {
    const char *name;
    const char *bytes;
    size_t n;
    uint32_t cps[16];
    size_t ncp;
} u8case;

#define B(s) s, sizeof s - 1
static const u8case cases[] = {
    /* well-formed boundaries of table 3-7 */
    {"ascii", B("a\x7f"), {'a', 0x7f}, 2},
    {"2-byte min", B("\xc2\x80"), {0x80}, 1},
    {"2-byte max", B("\xdf\xbf"), {0x7ff}, 1},
    {"E0 A0 80", B("\xe0\xa0\x80"), {0x800}, 1},
    {"ED 9F BF", B("\xed\x9f\xbf"), {0xd7ff}, 1},
    {"EE 80 80", B("\xee\x80\x80"), {0xe000}, 1},
    {"F0 90 80 80", B("\xf0\x90\x80\x80"), {0x10000}, 1},
    {"F4 8F BF BF", B("\xf4\x8f\xbf\xbf"), {0x10ffff}, 1},
    /* overlong 2-byte: C0 and C1 never start a sequence */
    {"C0 80", B("\xc0\x80"), {FFFD, FFFD}, 2},
    {"C0 AF", B("\xc0\xaf"), {FFFD, FFFD}, 2},
    {"C1 BF", B("\xc1\xbf"), {FFFD, FFFD}, 2},
    {"x C1 81 y", B("x\xc1\x81y"), {'x', FFFD, FFFD, 'y'}, 4},
    /* overlong 3-byte: E0 needs A0..BF next */
    {"E0 80 80", B("\xe0\x80\x80"), {FFFD, FFFD, FFFD}, 3},
    {"E0 9F BF", B("\xe0\x9f\xbf"), {FFFD, FFFD, FFFD}, 3},
    {"E0 80 41", B("\xe0\x80\x41"), {FFFD, FFFD, 'A'}, 3},
    /* surrogates: ED needs 80..9F next */
    {"ED A0 80", B("\xed\xa0\x80"), {FFFD, FFFD, FFFD}, 3},
    {"ED BF BF", B("\xed\xbf\xbf"), {FFFD, FFFD, FFFD}, 3},
    {"ED A0 80 ED B0 80", B("\xed\xa0\x80\xed\xb0\x80"), {FFFD, FFFD, FFFD, FFFD, FFFD, FFFD}, 6},
    /* overlong 4-byte: F0 needs 90..BF next */
    {"F0 80 80 80", B("\xf0\x80\x80\x80"), {FFFD, FFFD, FFFD, FFFD}, 4},
    {"F0 8F BF BF", B("\xf0\x8f\xbf\xbf"), {FFFD, FFFD, FFFD, FFFD}, 4},
    /* beyond U+10FFFF: F4 needs 80..8F next; F5..FF never start one */
    {"F4 90 80 80", B("\xf4\x90\x80\x80"), {FFFD, FFFD, FFFD, FFFD}, 4},
    {"F5 80 80 80", B("\xf5\x80\x80\x80"), {FFFD, FFFD, FFFD, FFFD}, 4},
    {"F7 BF BF BF", B("\xf7\xbf\xbf\xbf"), {FFFD, FFFD, FFFD, FFFD}, 4},
    {"F8 88 80 80 80", B("\xf8\x88\x80\x80\x80"), {FFFD, FFFD, FFFD, FFFD, FFFD}, 5},
    {"FC..FF", B("\xfc\xfd\xfe\xff"), {FFFD, FFFD, FFFD, FFFD}, 4},
    /* lone continuation bytes */
    {"80", B("\x80"), {FFFD}, 1},
    {"BF 80", B("a\xbf\x80"), {'a', FFFD, FFFD}, 3},
    /* truncated: one U+FFFD per maximal subpart, also at the end */
    {"C2 end", B("a\xc2"), {'a', FFFD}, 2},
    {"C2 41", B("\xc2\x41"), {FFFD, 'A'}, 2},
    {"E1 80 end", B("\xe1\x80"), {FFFD}, 1},
    {"E1 80 41", B("\xe1\x80\x41"), {FFFD, 'A'}, 2},
    {"E0 A0 end", B("\xe0\xa0"), {FFFD}, 1},
    {"F1 80 80 end", B("\xf1\x80\x80"), {FFFD}, 1},
    {"F1 80 80 41", B("\xf1\x80\x80\x41"), {FFFD, 'A'}, 2},
    {"F0 90 end", B("\xf0\x90"), {FFFD}, 1},
    {"F4 8F BF end", B("\xf4\x8f\xbf"), {FFFD}, 1},
    {"E1 80 E1 80", B("\xe1\x80\xe1\x80"), {FFFD, FFFD}, 2},
    /* the example of table 3-8 (Unicode 15, section 3.9) */
    {"table 3-8",
     B("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
     {'a', FFFD, FFFD, FFFD, 'b', FFFD, 'c', FFFD, FFFD, 'd'},
     10},
};
#define NCASES (sizeof cases / sizeof cases[0])

static simlsh_params *mk(int policy)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_CHAR));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, 64)); /* > any case: one shingle */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, policy));
    return p;
}

static int valid(const u8case *c)
{
    for (size_t i = 0; i < c->ncp; i++)
        if (c->cps[i] == FFFD)
            return 0;
    return 1;
}

/* The one hash a document of these code points must give. */
static uint64_t want_hash(const simlsh_params *p, const uint32_t *cps, size_t n)
{
    uint8_t enc[64];
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += ref_utf8(cps[i], enc + len);
    uint64_t h;
    CHECK_OK(simlsh_hash_bytes(&h, p, enc, len));
    return h;
}

static uint64_t one_hash(const simlsh_shingleset *s)
{
    uint64_t h[2] = {0, 0};
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_hashes(h, 2, &n, s));
    CHECK(n == 1);
    return h[0];
}

/* The hand-written answers agree with the reference decoder. */
static void test_reference_decoder(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        uint32_t out[32];
        size_t m = ref_decode((const uint8_t *)cases[i].bytes, cases[i].n, out);
        int ok = m == cases[i].ncp && memcmp(out, cases[i].cps, m * sizeof *out) == 0;
        if (!ok)
            fprintf(stderr, "reference decoder disagrees on %s\n", cases[i].name);
        CHECK(ok);
    }
}

/* REPLACE: each maximal invalid subpart is one U+FFFD, whole or byte by byte. */
static void test_replace(void)
{
    simlsh_params *p = mk(SIMLSH_UTF8_REPLACE);
    simlsh_shingleset *s;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    for (size_t i = 0; i < NCASES; i++) {
        const u8case *c = &cases[i];
        uint64_t want = want_hash(p, c->cps, c->ncp);
        CHECK_OK(simlsh_shingleset_clear(s));
        CHECK_OK(simlsh_shingleset_add_text(s, c->bytes, c->n));
        uint64_t whole = one_hash(s);
        CHECK_OK(simlsh_shingleset_clear(s));
        CHECK_OK(simlsh_shingleset_begin(s));
        for (size_t b = 0; b < c->n; b++)
            CHECK_OK(simlsh_shingleset_feed(s, c->bytes + b, 1));
        CHECK_OK(simlsh_shingleset_end(s));
        uint64_t bytewise = one_hash(s);
        if (whole != want || bytewise != want)
            fprintf(stderr, "REPLACE %s: whole %s, byte by byte %s\n", c->name,
                    whole == want ? "ok" : "wrong", bytewise == want ? "ok" : "wrong");
        CHECK(whole == want && bytewise == want);
    }
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
}

/* REJECT: any invalid subpart fails the call with EUTF8 and adds nothing. */
static void test_reject(void)
{
    simlsh_params *p = mk(SIMLSH_UTF8_REJECT);
    simlsh_shingleset *s;
    simlsh_signature *g;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_signature_new(&g, p));
    for (size_t i = 0; i < NCASES; i++) {
        const u8case *c = &cases[i];
        size_t n = 99;
        CHECK_OK(simlsh_shingleset_clear(s));
        CHECK_OK(simlsh_signature_clear(g));
        int rc = simlsh_shingleset_add_text(s, c->bytes, c->n);
        int rg = simlsh_signature_add_text(g, c->bytes, c->n);
        int want = valid(c) ? SIMLSH_OK : SIMLSH_EUTF8;
        if (rc != want || rg != want)
            fprintf(stderr, "REJECT %s: set %d, signature %d, want %d\n", c->name, rc, rg, want);
        CHECK(rc == want && rg == want);
        CHECK_OK(simlsh_shingleset_count(&n, s));
        CHECK(n == (valid(c) ? 1u : 0u));
        CHECK(simlsh_signature_is_empty(g) == !valid(c));
        if (valid(c))
            CHECK(one_hash(s) == want_hash(p, c->cps, c->ncp));
    }
    simlsh_signature_free(g);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
}

int main(void)
{
    test_reference_decoder();
    test_replace();
    test_reject();
    return tu_finish("utf8");
}
