/*
 * docs/format.md is the contract: this test re-implements it independently
 * (byte layout, checksum, OPH and classic definitions, densification) and
 * checks the library produces exactly those bytes and values. It also checks
 * that loaders refuse objects of another type.
 */
#include "murmur3.h"
#include "testutil.h"

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
    return k;
}
static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
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
    b[16] = (uint8_t)unit; b[17] = (uint8_t)k; b[18] = (uint8_t)norm; b[19] = 0;
    put32(b + 20, seed);
    b[24] = (uint8_t)bits; b[25] = (uint8_t)scheme;
    b[26] = (uint8_t)np; b[27] = (uint8_t)(np >> 8);
    b[32] = 1; /* store signatures (default) */
    double t = 0.8;
    uint64_t tb;
    memcpy(&tb, &t, 8);
    put64(b + 40, tb);
    return 48;
}

static void seal(uint8_t *b, size_t total)
{
    uint64_t h[2];
    simlsh__murmur3_128(b, total - 8, 0x5eedc0deu, h);
    put64(b + total - 8, h[0]);
}

static simlsh_params *mk(int scheme, int np, uint32_t seed)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
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
            if (v == 0xFFFFFFFFu) v = 0xFFFFFFFEu;
            uint32_t b = (uint32_t)(((uint64_t)v * P) >> 32);
            if (v < raw[b]) raw[b] = v;
        }
        uint64_t q = fmix64(((uint64_t)seed << 32) ^ 0x50524f42ULL);
        for (uint32_t i = 0; i < P; i++) {
            out[i] = raw[i];
            if (raw[i] != 0xFFFFFFFFu || n == 0)
                continue;
            uint32_t j = i;
            for (uint32_t t = 1;; t++) {
                j = (uint32_t)(((fmix64(q ^ (((uint64_t)i << 32) | t)) >> 32) * P) >> 32);
                if (raw[j] != 0xFFFFFFFFu) break;
                if (t >= 32 * P) {
                    while (raw[j] == 0xFFFFFFFFu) j = (j + 1) % P;
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
            if (v == 0xFFFFFFFFu) v = 0xFFFFFFFEu;
            if (v < raw[i]) raw[i] = v;
        }
        out[i] = raw[i];
    }
}

int main(void)
{
    const char *docs[] = {"", "tiny", "The quick brown fox jumps over the lazy dog.",
                          "Near-duplicate detection finds documents that say almost the same thing; MinHash estimates their Jaccard similarity."};
    const uint32_t nps[] = {1, 16, 128, 200};
    for (int scheme = 0; scheme <= 1; scheme++)
        for (int pi = 0; pi < 4; pi++)
            for (int d = 0; d < 4; d++) {
                uint32_t P = nps[pi], seed = 0xC0FFEE + (uint32_t)d;
                simlsh_params *p = mk(scheme, (int)P, seed);
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
                frame(want, "SLSS", 8 + 8 * n, SIMLSH_UNIT_CHAR, 5, 3, seed, 32, scheme, (int)P);
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
                frame(swant, "SLSG", 8 + 4 * P, SIMLSH_UNIT_CHAR, 5, 3, seed, 32, scheme, (int)P);
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

                free(h); free(want); free(got); free(swant); free(sgot);
                simlsh_shingleset_free(set);
                simlsh_signature_free(sig);
                simlsh_params_free(p);
            }
    return tu_finish("serialize");
}
