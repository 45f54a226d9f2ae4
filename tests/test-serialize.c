/*
 * docs/format.md is the contract: this test re-implements it independently
 * (byte layout, checksum, OPH and classic definitions, densification) and
 * checks the library produces exactly those bytes and values. It also checks
 * that loaders refuse objects of another type.
 */
#include "testutil.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}
static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* Header + contract per docs/format.md section 3. */
static size_t frame(uint8_t *b, const char magic[4], uint64_t L, int unit, int k, int norm,
                    uint32_t seed, int bits, int scheme, int np)
{
    memset(b, 0, 48);
    memcpy(b, magic, 4);
    b[4] = 1;
    put64(b + 8, L);
    b[16] = (uint8_t)unit;
    b[17] = (uint8_t)k;
    b[18] = (uint8_t)norm;
    b[19] = 0;
    put32(b + 20, seed);
    b[24] = (uint8_t)bits;
    b[25] = (uint8_t)scheme;
    b[26] = (uint8_t)np;
    b[27] = (uint8_t)(np >> 8);
    b[32] = 1; /* store signatures (default) */
    double t = 0.8;
    uint64_t tb;
    memcpy(&tb, &t, 8);
    put64(b + 40, tb);
    return 48;
}

static void seal(uint8_t *b, size_t total)
{
    tu_reseal(b, total);
}

static const int all_isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
#define NISAS 3

static simlsh_params *mk(int scheme, int np, uint32_t seed, int bits, int isa)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, bits));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, seed));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, 3));
    return p;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Signature values per docs/format.md section 2, from the element list. */
static void expected_values(uint32_t *out, uint32_t *raw, const uint64_t *x, size_t n, int scheme,
                            uint32_t P, uint32_t seed)
{
    for (uint32_t i = 0; i < P; i++)
        raw[i] = 0xFFFFFFFFu;
    if (scheme == SIMLSH_SCHEME_OPH) {
        uint32_t s = (uint32_t)fmix64(((uint64_t)seed << 32) | 0x4f5048u);
        for (size_t e = 0; e < n; e++) {
            uint32_t x32 = (uint32_t)x[e] ^ (uint32_t)fmix64(x[e] >> 32);
            uint32_t v = fmix32(x32 ^ s);
            if (v == 0xFFFFFFFFu)
                v = 0xFFFFFFFEu;
            uint32_t b = (uint32_t)(((uint64_t)v * P) >> 32);
            if (v < raw[b])
                raw[b] = v;
        }
        uint64_t q = fmix64(((uint64_t)seed << 32) ^ 0x50524f42ULL);
        for (uint32_t i = 0; i < P; i++) {
            out[i] = raw[i];
            if (raw[i] != 0xFFFFFFFFu || n == 0)
                continue;
            uint32_t j = i;
            for (uint32_t t = 1;; t++) {
                j = (uint32_t)(((fmix64(q ^ (((uint64_t)i << 32) | t)) >> 32) * P) >> 32);
                if (raw[j] != 0xFFFFFFFFu)
                    break;
                if (t >= 32 * P) {
                    while (raw[j] == 0xFFFFFFFFu)
                        j = (j + 1) % P;
                    break;
                }
            }
            out[i] = raw[j];
        }
        return;
    }
    uint64_t st = ((uint64_t)seed << 32) ^ 0x434c4153ULL;
    for (uint32_t i = 0; i < P; i++) {
        uint64_t a = splitmix(&st) | 1, b = splitmix(&st);
        for (size_t e = 0; e < n; e++) {
            uint32_t v = (uint32_t)((a * x[e] + b) >> 32);
            if (v == 0xFFFFFFFFu)
                v = 0xFFFFFFFEu;
            if (v < raw[i])
                raw[i] = v;
        }
        out[i] = raw[i];
    }
}

/* Text documents: shingle-set bytes, signature values and bytes, for both
 * hash widths and every instruction set the host has. */
static void test_documents(int bits, int isa)
{
    const char *docs[] = {
        "", "tiny", "The quick brown fox jumps over the lazy dog.",
        "Near-duplicate detection finds documents that say almost the same thing; MinHash estimates their Jaccard similarity."};
    const uint32_t nps[] = {1, 16, 128, 200};
    for (int scheme = 0; scheme <= 1; scheme++)
        for (int pi = 0; pi < 4; pi++)
            for (int d = 0; d < 4; d++) {
                uint32_t P = nps[pi], seed = 0xC0FFEE + (uint32_t)d;
                simlsh_params *p = mk(scheme, (int)P, seed, bits, isa);
                simlsh_shingleset *set;
                simlsh_signature *sig;
                CHECK_OK(simlsh_shingleset_new(&set, p));
                CHECK_OK(simlsh_signature_new(&sig, p));
                CHECK_OK(simlsh_shingleset_add_text(set, docs[d], strlen(docs[d])));
                CHECK_OK(simlsh_signature_add_text(sig, docs[d], strlen(docs[d])));

                /* shingle set bytes */
                size_t n, sz;
                CHECK_OK(simlsh_shingleset_hashes(NULL, 0, &n, set));
                uint64_t *h = malloc((n + 1) * 8);
                CHECK_OK(simlsh_shingleset_hashes(h, n, &n, set));
                size_t total = 56 + 8 + 8 * n;
                uint8_t *want = calloc(1, total), *got = malloc(total);
                frame(want, "SLSS", 8 + 8 * n, SIMLSH_UNIT_CHAR, 5, 3, seed, bits, scheme, (int)P);
                put64(want + 48, n);
                for (size_t i = 0; i < n; i++)
                    put64(want + 56 + 8 * i, h[i]);
                seal(want, total);
                CHECK_OK(simlsh_shingleset_save(got, total, &sz, set));
                CHECK(sz == total && memcmp(want, got, total) == 0);

                /* signature values and bytes */
                uint32_t ev[256], raw[256], gv[256];
                expected_values(ev, raw, h, n, scheme, P, seed);
                size_t m;
                CHECK_OK(simlsh_signature_values(gv, 256, &m, sig));
                CHECK(m == P && memcmp(ev, gv, P * 4) == 0);
                size_t stotal = 56 + 8 + 4 * P;
                uint8_t *swant = calloc(1, stotal), *sgot = malloc(stotal);
                frame(swant, "SLSG", 8 + 4 * P, SIMLSH_UNIT_CHAR, 5, 3, seed, bits, scheme, (int)P);
                put32(swant + 48, P);
                put32(swant + 52, n == 0 ? 1 : 0);
                for (uint32_t i = 0; i < P; i++)
                    put32(swant + 56 + 4 * i, raw[i]);
                seal(swant, stotal);
                CHECK_OK(simlsh_signature_save(sgot, stotal, &sz, sig));
                CHECK(sz == stotal && memcmp(swant, sgot, stotal) == 0);

                /* loaders refuse the other type */
                simlsh_shingleset *ls;
                simlsh_signature *lg;
                CHECK_RC(simlsh_shingleset_load(&ls, sgot, stotal, NULL), SIMLSH_ECORRUPT);
                CHECK_RC(simlsh_signature_load(&lg, got, total, NULL), SIMLSH_ECORRUPT);
                /* reserved contract bytes must be zero, even with a valid checksum */
                swant[16 + 20] = 1;
                seal(swant, stotal);
                CHECK_RC(simlsh_signature_load(&lg, swant, stotal, NULL), SIMLSH_ECORRUPT);
                /* a contract field out of range is corrupt too */
                swant[16 + 20] = 0;
                swant[17] = 0; /* k = 0 */
                seal(swant, stotal);
                CHECK_RC(simlsh_signature_load(&lg, swant, stotal, NULL), SIMLSH_ECORRUPT);

                free(h);
                free(want);
                free(got);
                free(swant);
                free(sgot);
                simlsh_shingleset_free(set);
                simlsh_signature_free(sig);
                simlsh_params_free(p);
            }
}

/* Values and raw rows of sig against expected_values() for the features x. */
static int matches_spec(const simlsh_signature *sig, const uint64_t *x, size_t n, int scheme,
                        uint32_t P, uint32_t seed)
{
    uint32_t ev[256], raw[256], gv[256];
    size_t m, sz;
    uint8_t bytes[56 + 8 + 4 * 256];
    expected_values(ev, raw, x, n, scheme, P, seed);
    CHECK_OK(simlsh_signature_values(gv, 256, &m, sig));
    CHECK_OK(simlsh_signature_save(bytes, sizeof bytes, &sz, sig));
    int ok = m == P && memcmp(ev, gv, P * 4) == 0 && sz == 56 + 8 + 4 * P;
    for (uint32_t i = 0; ok && i < P; i++)
        ok = tu_get32(bytes + 56 + 4 * i) == raw[i];
    return ok;
}

/* Raw 64-bit features, with HASH_BITS 64 in the contract: the OPH fold of
 * docs/format.md section 2 must use the high half (x and x + 2^32 are
 * different elements), and classic must multiply all 64 bits. */
static void test_features_64(int isa)
{
    tu_rng r = {640};
    const uint32_t nps[] = {1, 16, 64, 200};
    uint64_t x[300];
    for (int scheme = 0; scheme <= 1; scheme++)
        for (int pi = 0; pi < 4; pi++)
            for (int rep = 0; rep < 8; rep++) {
                uint32_t P = nps[pi], seed = (uint32_t)tu_next(&r);
                size_t n = rep == 0 ? 1 : 1 + tu_below(&r, 300);
                for (size_t i = 0; i < n; i++) {
                    x[i] = tu_next(&r) >> tu_below(&r, 40); /* both sides of 2^32 */
                    if (i % 3 == 1)
                        x[i] = x[i - 1] + (1ULL << 32); /* same low half */
                }
                simlsh_params *p = mk(scheme, (int)P, seed, 64, isa);
                simlsh_signature *sig;
                CHECK_OK(simlsh_signature_new(&sig, p));
                CHECK_OK(simlsh_signature_add_features(sig, x, n));
                int ok = matches_spec(sig, x, n, scheme, P, seed);
                if (!ok)
                    fprintf(stderr, "64-bit features: scheme %d isa %d P %u n %zu differ\n", scheme,
                            isa, P, n);
                CHECK(ok);
                simlsh_signature_free(sig);
                simlsh_params_free(p);
            }
    /* x and x + 2^32 alone: different elements, so different signatures */
    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(scheme, 128, 7, 64, isa);
        simlsh_signature *a, *b;
        double j;
        uint64_t lo = 0x12345678, hi = lo + (1ULL << 32);
        CHECK_OK(simlsh_signature_new(&a, p));
        CHECK_OK(simlsh_signature_new(&b, p));
        CHECK_OK(simlsh_signature_add_features(a, &lo, 1));
        CHECK_OK(simlsh_signature_add_features(b, &hi, 1));
        CHECK_OK(simlsh_signature_jaccard(&j, a, b));
        CHECK(j < 0.5);
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_params_free(p);
    }
}

static uint32_t inv32(uint32_t a) /* a odd: Newton's iteration doubles the bits */
{
    uint32_t x = a;
    for (int i = 0; i < 5; i++)
        x *= 2 - a * x;
    return x;
}
static uint64_t inv64(uint64_t a)
{
    uint64_t x = a;
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}
static uint32_t unxorshift32(uint32_t h, int s)
{
    uint32_t x = h;
    for (int i = 0; i < 32 / s + 1; i++)
        x = h ^ (x >> s);
    return x;
}
static uint32_t fmix32_inverse(uint32_t h)
{
    h = unxorshift32(h, 16);
    h *= inv32(0xc2b2ae35u);
    h = unxorshift32(h, 13);
    h *= inv32(0x85ebca6bu);
    return unxorshift32(h, 16);
}

/* Features whose hash is exactly 0xFFFFFFFF, the empty mark, which the spec
 * clamps to 0xFFFFFFFE. Random data hits this with probability 2^-32, so the
 * inputs are constructed. Without the clamp a real row looks empty; with OPH
 * a signature whose only row is "empty" while it is not empty makes the
 * densification scan loop forever (meson's timeout turns that into a
 * failure). */
static void test_clamp(int isa)
{
    const uint32_t seed = 0;
    /* OPH: v = fmix32(x32 ^ s), so x32 = fmix32^-1(0xFFFFFFFF) ^ s (seed 0:
     * 0x997621af); the same x32 reached through the fold from a 64-bit x. */
    uint32_t s = (uint32_t)fmix64(((uint64_t)seed << 32) | 0x4f5048u);
    uint32_t x32 = fmix32_inverse(0xFFFFFFFFu) ^ s;
    CHECK(fmix32(x32 ^ s) == 0xFFFFFFFFu);
    CHECK(seed != 0 || x32 == 0x997621afu);
    uint64_t hi = 0xabcdef01ULL;
    uint64_t oph[] = {x32, (hi << 32) | (x32 ^ (uint32_t)fmix64(hi))};

    /* Classic, 64-bit inputs: row 0 gives high32(a_0 * x + b_0) ==
     * 0xFFFFFFFF for x = (0xFFFFFFFF << 32 - b_0) * a_0^-1 mod 2^64. */
    uint64_t st = ((uint64_t)seed << 32) ^ 0x434c4153ULL;
    uint64_t a0 = splitmix(&st) | 1, b0 = splitmix(&st);
    uint64_t c64 = ((0xFFFFFFFFULL << 32) - b0) * inv64(a0);
    CHECK((uint32_t)((a0 * c64 + b0) >> 32) == 0xFFFFFFFFu);
    /* Classic, 32-bit inputs (the SIMD kernels have a separate path for
     * them): x < 2^32 with high32(a_i * x + b_i) == 0xFFFFFFFF has no closed
     * form; tests/clamp-inputs.py finds them with a Euclid-like search for
     * the smallest x with a*x mod 2^64 in a window. Seed 0, num_perm 64:
     * row 1 x = 0xb2fa5f25, row 15 x = 0x07f32ec0, row 28 x = 0x005def6c,
     * row 60 x = 0x2f88272c (rows in each SIMD block and in the tail). */
    uint64_t classic[] = {c64, 0xb2fa5f25u, 0x07f32ec0u, 0x005def6cu, 0x2f88272cu};

    for (int scheme = 0; scheme <= 1; scheme++) {
        const uint64_t *xs = scheme == SIMLSH_SCHEME_OPH ? oph : classic;
        size_t nx = scheme == SIMLSH_SCHEME_OPH ? 2 : 5;
        const uint32_t nps[] = {1, 7, 64, 200};
        for (int pi = 0; pi < 4; pi++) {
            uint32_t P = nps[pi];
            simlsh_params *p = mk(scheme, (int)P, seed, 64, isa);
            simlsh_signature *sig;
            CHECK_OK(simlsh_signature_new(&sig, p));
            for (size_t k = 0; k < nx; k++) {
                /* alone, and among ordinary 32-bit features */
                uint64_t f[9] = {xs[k], 3, 1000, 77777, 0xdeadbeef, 12, 99, 5, 0x10000};
                for (size_t n = 1; n <= 9; n += 8) {
                    CHECK_OK(simlsh_signature_clear(sig));
                    CHECK_OK(simlsh_signature_add_features(sig, f, n));
                    int ok = matches_spec(sig, f, n, scheme, P, seed);
                    if (!ok)
                        fprintf(stderr, "clamp: scheme %d isa %d P %u feature %#llx n %zu\n",
                                scheme, isa, P, (unsigned long long)xs[k], n);
                    CHECK(ok);
                    CHECK(simlsh_signature_is_empty(sig) == 0);
                }
            }
            simlsh_signature_free(sig);
            simlsh_params_free(p);
        }
    }
    /* the 32-bit classic inputs really hit their rows (checks the constants) */
    uint64_t cst = ((uint64_t)seed << 32) ^ 0x434c4153ULL;
    int hits = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t a = splitmix(&cst) | 1, b = splitmix(&cst);
        for (size_t k = 1; k < 5; k++)
            hits += (uint32_t)((a * classic[k] + b) >> 32) == 0xFFFFFFFFu;
    }
    CHECK(hits == 4);
}

int main(void)
{
    for (int ii = 0; ii < NISAS; ii++) {
        if (!simlsh_isa_supported(all_isas[ii])) {
            printf("isa %d not supported by this host\n", all_isas[ii]);
            continue;
        }
        test_documents(32, all_isas[ii]);
        test_documents(64, all_isas[ii]);
        test_features_64(all_isas[ii]);
        test_clamp(all_isas[ii]);
    }
    return tu_finish("serialize");
}
