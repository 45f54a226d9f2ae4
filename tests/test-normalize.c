/*
 * Normalisation against a reference written from docs/format.md, on random
 * and adversarial text: CRLF, runs of mixed whitespace placed at every
 * offset of the ASCII kernels' blocks, invalid UTF-8, all byte values,
 * non-ASCII letters, spaces and punctuation (and, with utf8proc, the
 * Unicode flags). For every unit, every flag set, every ISA this machine
 * runs and chunkings that cross the shingler's 8 KiB slices, the shingle
 * set equals the reference's and the signature equals the one of that set.
 *
 * The ASCII kernels (lib/shingle-norm.c) are also held to their contract
 * directly: what they consume is normalised exactly as byte by byte, and
 * ASCII is consumed but for less than a block, whatever its whitespace.
 */
#include "refshingle.h"
#include "simlsh_config.h"
#include "testutil.h"

#include "shingle-norm.h"

#if SIMLSH_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

/* ---- the reference ---------------------------------------------------------- */

static int space_cp(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0d);
#if SIMLSH_HAVE_UTF8PROC
    utf8proc_category_t g = utf8proc_category((utf8proc_int32_t)c);
    return c == 0x85 || g == UTF8PROC_CATEGORY_ZS || g == UTF8PROC_CATEGORY_ZL ||
           g == UTF8PROC_CATEGORY_ZP;
#else
    return 0;
#endif
}

static int punct_cp(uint32_t c)
{
    if (c < 0x80)
        return ref_punct(c);
#if SIMLSH_HAVE_UTF8PROC
    utf8proc_category_t g = utf8proc_category((utf8proc_int32_t)c);
    return g == UTF8PROC_CATEGORY_PC || g == UTF8PROC_CATEGORY_PD || g == UTF8PROC_CATEGORY_PS ||
           g == UTF8PROC_CATEGORY_PE || g == UTF8PROC_CATEGORY_PI || g == UTF8PROC_CATEGORY_PF ||
           g == UTF8PROC_CATEGORY_PO;
#else
    return 0;
#endif
}

enum {
    UNICODE_FLAGS = SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_NFKC
};

/* The code points (or bytes) of text after step 1 of the normalisation:
 * decoding, and the whole document through utf8proc_map. *m gets their
 * number; the caller frees the result. */
static uint32_t *ref_points(int unit, int norm, const uint8_t *text, size_t n, size_t *m)
{
    uint32_t *cps = malloc((n + 1) * sizeof *cps);
    if (unit == SIMLSH_UNIT_BYTE) {
        for (size_t i = 0; i < n; i++)
            cps[i] = text[i];
        *m = n;
        return cps;
    }
    *m = ref_decode(text, n, cps);
#if SIMLSH_HAVE_UTF8PROC
    if (norm & UNICODE_FLAGS) {
        uint8_t *u = malloc(4 * *m + 1), *dst = NULL;
        size_t ul = 0;
        for (size_t i = 0; i < *m; i++)
            ul += ref_utf8(cps[i], u + ul);
        int opt = UTF8PROC_STABLE;
        if (norm & SIMLSH_NORM_NFKC)
            opt |= UTF8PROC_COMPAT | UTF8PROC_COMPOSE;
        if (norm & SIMLSH_NORM_CASEFOLD)
            opt |= UTF8PROC_CASEFOLD | UTF8PROC_COMPOSE;
        utf8proc_ssize_t r = utf8proc_map(u, (utf8proc_ssize_t)ul, &dst, (utf8proc_option_t)opt);
        CHECK(r >= 0);
        free(cps);
        cps = malloc(((size_t)(r > 0 ? r : 0) + 1) * sizeof *cps);
        *m = r > 0 ? ref_decode(dst, (size_t)r, cps) : 0;
        free(u);
        free(dst);
    }
#else
    (void)norm;
#endif
    return cps;
}

/* Steps 2-4 and the shingles, hashed with simlsh_hash_bytes; sorted and
 * unique. Returns their number. */
static size_t ref_set(const simlsh_params *p, int unit, int k, int norm, const uint8_t *text,
                      size_t n, uint64_t **out)
{
    size_t m;
    uint32_t *cps = ref_points(unit, norm, text, n, &m);
    uint8_t *buf = malloc(4 * m + 8);
    size_t *us = malloc((m + 1) * sizeof *us), *ul = malloc((m + 1) * sizeof *ul);
    size_t blen = 0, nu = 0;
    int emitted = 0, owed = 0, inword = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t c = cps[i];
        if ((norm & SIMLSH_NORM_LOWER_ASCII) && c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        if (unit == SIMLSH_UNIT_WORD) {
            if (c < 0x20 || c == 0x7f || space_cp(c) || punct_cp(c)) {
                inword = 0;
                continue;
            }
            if (!inword) {
                us[nu] = blen;
                ul[nu++] = 0;
                inword = 1;
            }
            size_t l = ref_utf8(c, buf + blen);
            blen += l;
            ul[nu - 1] += l;
            continue;
        }
        /* In the byte unit only ASCII bytes have classes. */
        int ascii = unit == SIMLSH_UNIT_BYTE;
        if ((norm & SIMLSH_NORM_STRIP_PUNCT) && (ascii ? ref_punct(c) : punct_cp(c)))
            continue;
        if ((norm & SIMLSH_NORM_COLLAPSE_SPACE) && (ascii ? ref_space(c) : space_cp(c))) {
            owed = emitted;
            continue;
        }
        if (owed) {
            us[nu] = blen;
            ul[nu++] = 1;
            buf[blen++] = ' ';
            owed = 0;
        }
        emitted = 1;
        us[nu] = blen;
        if (unit == SIMLSH_UNIT_BYTE) {
            buf[blen] = (uint8_t)c;
            ul[nu] = 1;
        } else {
            ul[nu] = ref_utf8(c, buf + blen);
        }
        blen += ul[nu++];
    }
    size_t uk = (size_t)k, width = nu >= uk ? uk : nu;
    size_t windows = nu >= uk ? nu - uk + 1 : (nu > 0 ? 1 : 0);
    uint8_t *sh = malloc(blen + uk + 1);
    *out = malloc((windows + 1) * sizeof **out);
    for (size_t w = 0; w < windows; w++) {
        size_t len = 0;
        for (size_t u = w; u < w + width; u++) {
            if (unit == SIMLSH_UNIT_WORD && u > w)
                sh[len++] = ' ';
            memcpy(sh + len, buf + us[u], ul[u]);
            len += ul[u];
        }
        CHECK_OK(simlsh_hash_bytes(&(*out)[w], p, sh, len));
    }
    free(sh);
    free(cps);
    free(buf);
    free(us);
    free(ul);
    return ref_sort_unique(*out, windows);
}

/* ---- inputs ----------------------------------------------------------------- */

static const char *pieces[] = {
    "The", "QUICK", "brown", "Fox", "jumps", "oVeR", "lazy", "dog", "AZaz@[`{", "x", "\r\n",
    "\r\n\r\n", " \t", "\t \v\f\r\n ", "\f", "\v", "  ", " ", " ", " ", ", ", ". ", "caf\xc3\xa9",
    "\xc3\x89T\xc3\x89", "\xce\xa3\xce\xb1",
    ("stra\xc3\x9f"
     "e"), /* split: \x9fe would be one escape */
    "\xef\xac\x81", "\xef\xbc\xa1\xef\xbd\x82", "\xc4\xb0", "\xc7\x85", "e\xcc\x81", "\xc2\xa0",
    "\xe2\x80\x83", "\xc2\x85", "\xe3\x80\x80", "\xe2\x80\x94", "\xc2\xab", "\xe2\x80\xa6",
    "\xe2\x80\xa8", "\xef\xbc\x8c", "\xf0\x9f\x98\x80",
    /* combining marks out of canonical order, and in it */
    "a\xcc\x81\xcc\xa3", "a\xcc\xa3\xcc\x81", "\xe1\xba\xa1\xcc\x81",
    /* invalid: lone lead, truncated, surrogate, beyond U+10FFFF, overlong,
     * stray continuation, never-valid bytes */
    "\xff", "\xc3", "\xe6\x97", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\x80", "\xf5",
    "\xfe\xfe"};

/* Text of about n bytes: pieces, plain runs (that the kernels take fast),
 * whitespace runs, and now and then arbitrary bytes. */
static size_t gen(tu_rng *r, uint8_t *t, size_t n)
{
    static const char ws[] = " \t\n\v\f\r";
    size_t len = 0;
    while (len + 64 < n) {
        switch (tu_below(r, 8)) {
        case 0: { /* a whitespace run at any offset */
            size_t l = 1 + tu_below(r, tu_below(r, 2) ? 2 : 20);
            for (size_t i = 0; i < l; i++)
                t[len++] = (uint8_t)ws[tu_below(r, 6)];
            break;
        }
        case 1: /* arbitrary bytes */
            for (size_t i = 0, l = 1 + tu_below(r, 6); i < l; i++)
                t[len++] = (uint8_t)tu_next(r);
            break;
        case 2:
        case 3: /* plain mixed-case words, single spaces */
            for (size_t i = 0, l = tu_below(r, 48); i < l; i++)
                t[len++] = tu_below(r, 6) == 0   ? ' '
                           : tu_below(r, 3) == 0 ? (uint8_t)('A' + tu_below(r, 26))
                                                 : (uint8_t)('a' + tu_below(r, 26));
            break;
        default: {
            const char *p = pieces[tu_below(r, sizeof pieces / sizeof *pieces)];
            memcpy(t + len, p, strlen(p));
            len += strlen(p);
        }
        }
    }
    return len;
}

/* ---- the library ------------------------------------------------------------ */

static simlsh_params *mkparams(int unit, int k, int norm, int bits, int isa)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, k));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norm));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, bits));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 64));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 77));
    return p;
}

/* Cut points for feeding: one call, or random chunks up to max bytes. */
static void feed(tu_rng *r, simlsh_shingleset *set, simlsh_signature *sig, const uint8_t *t,
                 size_t n, size_t max)
{
    CHECK_OK(simlsh_shingleset_begin(set));
    CHECK_OK(simlsh_signature_begin(sig));
    for (size_t off = 0; off < n;) {
        size_t c = max ? tu_below(r, max + 1) : n;
        if (c > n - off)
            c = n - off;
        CHECK_OK(simlsh_shingleset_feed(set, t + off, c));
        CHECK_OK(simlsh_signature_feed(sig, t + off, c));
        off += c;
    }
    CHECK_OK(simlsh_shingleset_end(set));
    CHECK_OK(simlsh_signature_end(sig));
}

enum {
    MAXT = 20000
};

static void test_against_reference(void)
{
    tu_rng r = {20261123};
    uint8_t *text = malloc(MAXT + 64);
    const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    const size_t sizes[] = {40, 300, 2500, MAXT};
    const size_t chunks[] = {0, 1, 23, 9000};
    int cases = 0, set_bad = 0, sig_bad = 0;
    for (int unit = 0; unit <= 2; unit++)
        for (int norm = 0; norm < 32; norm++) {
            if ((norm & UNICODE_FLAGS) && (unit == SIMLSH_UNIT_BYTE || !SIMLSH_HAVE_UTF8PROC))
                continue;
            for (int rep = 0; rep < 4; rep++) {
                int k = rep == 0 ? 1 : unit == SIMLSH_UNIT_WORD ? 3 : 5, bits = rep % 2 ? 64 : 32;
                size_t n = gen(&r, text, sizes[rep]);
                simlsh_params *p0 = mkparams(unit, k, norm, bits, SIMLSH_ISA_SCALAR);
                uint64_t *ref;
                size_t nr = ref_set(p0, unit, k, norm, text, n, &ref);
                simlsh_params_free(p0);
                for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
                    if (!simlsh_isa_supported(isas[i]))
                        continue;
                    simlsh_params *p = mkparams(unit, k, norm, bits, isas[i]);
                    simlsh_shingleset *set;
                    simlsh_signature *sig, *want;
                    CHECK_OK(simlsh_shingleset_new(&set, p));
                    CHECK_OK(simlsh_signature_new(&sig, p));
                    CHECK_OK(simlsh_signature_new(&want, p));
                    feed(&r, set, sig, text, n, chunks[(rep + i) % 4]);
                    size_t ng = 0;
                    CHECK_OK(simlsh_shingleset_hashes(NULL, 0, &ng, set));
                    uint64_t *got = malloc((ng + 1) * sizeof *got);
                    CHECK_OK(simlsh_shingleset_hashes(got, ng, &ng, set));
                    if (ng != nr || memcmp(got, ref, ng * sizeof *got) != 0) {
                        if (set_bad++ < 5)
                            fprintf(stderr,
                                    "set: unit %d norm %d k %d bits %d isa %d n %zu: "
                                    "%zu hashes, reference %zu\n",
                                    unit, norm, k, bits, isas[i], n, ng, nr);
                    }
                    CHECK_OK(simlsh_signature_add_shingleset(want, set));
                    uint32_t a[64], b[64];
                    size_t na, nb;
                    CHECK_OK(simlsh_signature_values(a, 64, &na, sig));
                    CHECK_OK(simlsh_signature_values(b, 64, &nb, want));
                    if (na != nb || memcmp(a, b, na * sizeof *a) != 0)
                        sig_bad++;
                    free(got);
                    simlsh_shingleset_free(set);
                    simlsh_signature_free(sig);
                    simlsh_signature_free(want);
                    simlsh_params_free(p);
                    cases++;
                }
                free(ref);
            }
        }
    printf("reference: %d cases, %d set mismatches, %d signature mismatches\n", cases, set_bad,
           sig_bad);
    CHECK(set_bad == 0);
    CHECK(sig_bad == 0);
    free(text);
}

/* ---- the kernels ------------------------------------------------------------ */

/* Byte by byte, after something was emitted: the kernels' contract. */
static size_t model(uint8_t *out, const uint8_t *in, size_t len, unsigned f, unsigned *prev)
{
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = in[i];
        if ((f & SIMLSH__AN_LOWER) && b >= 'A' && b <= 'Z')
            b += 'a' - 'A';
        if ((f & SIMLSH__AN_COLLAPSE) && ref_space(b)) {
            *prev = 1;
            continue;
        }
        if (*prev)
            out[m++] = ' ';
        *prev = 0;
        out[m++] = b;
    }
    return m;
}

static void check_kernel(const char *name, simlsh__ascii_norm_fn fn)
{
    tu_rng r = {4242};
    enum {
        N = 256
    };
    uint8_t in[N], out[N + 2], want[N + 2];
    int bad = 0, stalls = 0;
    for (int rep = 0; rep < 20000; rep++) {
        unsigned f = 1 + (unsigned)tu_below(&r, 7), prev = (unsigned)tu_below(&r, 2);
        if (!(f & (SIMLSH__AN_LOWER | SIMLSH__AN_COLLAPSE)))
            f |= SIMLSH__AN_LOWER; /* the shingler never calls without either */
        if (!(f & SIMLSH__AN_COLLAPSE))
            prev = 0; /* owed spaces exist only when collapsing */
        size_t len = tu_below(&r, N + 1);
        int plain = tu_below(&r, 2); /* ASCII only, whitespace runs of any length */
        /* the edges of the classes, and bytes the ASCII flag stops at */
        static const uint8_t edges[] = {' ', '\t', '\r', '\n', 0x08, 0x0e, '\x1f', '!',  'A',  'Z',
                                        '@', '[',  'a',  'z',  '`',  '{',  0x7f,   0x80, 0xff, 0};
        for (size_t i = 0; i < len; i++) {
            if (plain)
                in[i] = tu_below(&r, 3) ? (uint8_t)(0x21 + tu_below(&r, 0x5e))
                                        : (uint8_t) " \t\n\v\f\r"[tu_below(&r, 6)];
            else
                in[i] = tu_below(&r, 3) ? edges[tu_below(&r, sizeof edges)] : (uint8_t)tu_next(&r);
        }
        size_t m = 1, mw = 1;
        out[0] = want[0] = 'x';
        unsigned p = prev, pw = prev;
        size_t used = fn(out, &m, in, len, f, &p);
        mw += model(want + 1, in, used, f, &pw);
        if (used > len || m != mw || memcmp(out, want, m) != 0 || p != pw)
            bad++;
        for (size_t i = 0; i < used && (f & SIMLSH__AN_ASCII); i++)
            bad += in[i] >= 0x80; /* those are the decoder's */
        if (plain && len - used >= SIMLSH__AN_BLOCK)
            stalls++;
    }
    printf("%s: %d wrong, %d stalls on ASCII\n", name, bad, stalls);
    CHECK(bad == 0);
    CHECK(stalls == 0);
}

static void test_kernels(void)
{
    check_kernel("swar", simlsh__ascii_norm_swar);
    if (simlsh_isa_supported(SIMLSH_ISA_AVX2))
        check_kernel("avx2", simlsh__ascii_norm_for(SIMLSH_ISA_AVX2));
}

/* Canonical ordering: combining marks written in any order normalise alike
 * (a U+0301 U+0323 == a U+0323 U+0301 == U+1EA1 U+0301), and a long run of
 * marks in scrambled order matches utf8proc_map (the sort is by class and
 * stable, and costs O(run), so a hostile run of a million marks is cheap). */
static void test_canonical_order(void)
{
#if SIMLSH_HAVE_UTF8PROC
    static const char *same[] = {"xa\xcc\x81\xcc\xa3y", "xa\xcc\xa3\xcc\x81y",
                                 "x\xe1\xba\xa1\xcc\x81y"};
    for (int norm = SIMLSH_NORM_NFKC; norm <= (SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD);
         norm += SIMLSH_NORM_CASEFOLD) {
        simlsh_params *p = mkparams(SIMLSH_UNIT_CHAR, 2, norm, 64, SIMLSH_ISA_AUTO);
        uint64_t first[16];
        size_t n0 = 0;
        for (size_t i = 0; i < 3; i++) {
            simlsh_shingleset *set;
            CHECK_OK(simlsh_shingleset_new(&set, p));
            CHECK_OK(simlsh_shingleset_add_text(set, same[i], strlen(same[i])));
            uint64_t h[16];
            size_t n = 0;
            CHECK_OK(simlsh_shingleset_hashes(h, 16, &n, set));
            if (i == 0) {
                memcpy(first, h, sizeof h);
                n0 = n;
            }
            /* form i of a + acute + dot below, under NFKC (and casefold) */
            CHECK(n == n0 && memcmp(h, first, n * sizeof *h) == 0);
            simlsh_shingleset_free(set);
        }
        simlsh_params_free(p);
    }
    /* 3000 marks of four classes (230, 220, 202, 230) in scrambled order */
    static const char *marks[] = {"\xcc\x81", "\xcc\xa3", "\xcc\xa7", "\xcc\x80"};
    tu_rng r = {3011};
    size_t n = 0;
    uint8_t *t = malloc(3 + 3000 * 2 + 1);
    t[n++] = 'o';
    for (int i = 0; i < 3000; i++) {
        memcpy(t + n, marks[tu_below(&r, 4)], 2);
        n += 2;
    }
    t[n++] = 'z';
    simlsh_params *p = mkparams(SIMLSH_UNIT_CHAR, 3, SIMLSH_NORM_NFKC, 64, SIMLSH_ISA_AUTO);
    uint64_t *ref;
    size_t nr = ref_set(p, SIMLSH_UNIT_CHAR, 3, SIMLSH_NORM_NFKC, t, n, &ref);
    simlsh_shingleset *set;
    CHECK_OK(simlsh_shingleset_new(&set, p));
    CHECK_OK(simlsh_shingleset_add_text(set, t, n));
    size_t ng = 0;
    CHECK_OK(simlsh_shingleset_hashes(NULL, 0, &ng, set));
    uint64_t *got = malloc((ng + 1) * sizeof *got);
    CHECK_OK(simlsh_shingleset_hashes(got, ng, &ng, set));
    CHECK(ng == nr && memcmp(got, ref, ng * sizeof *got) == 0);
    free(got);
    free(ref);
    free(t);
    simlsh_shingleset_free(set);
    simlsh_params_free(p);
#endif
}

int main(void)
{
    test_canonical_order();
    test_kernels();
    test_against_reference();
    return tu_finish("normalize");
}
