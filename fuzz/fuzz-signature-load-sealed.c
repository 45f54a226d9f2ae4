/* Fuzz the signature loader past the checksum: the input is a whole SLSG
 * frame whose magic, payload length and checksum the harness rewrites
 * (reseal.h), so every mutation reaches the contract and payload checks.
 *
 * On success the signature must behave: it saves back to exactly the loaded
 * bytes; its values are the stored rows densified (docs/format.md, section
 * 2); its band keys are the documented function of the values; merging with
 * itself or into an empty signature changes nothing; and a changed
 * signature saves to bytes that load and save again to the same bytes. */
#include "reseal.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

#define EMPTY 0xFFFFFFFFu

static void save_equal(const simlsh_signature *a, const simlsh_signature *b)
{
    uint8_t *x, *y;
    size_t nx, ny;
    FZ_SAVE(simlsh_signature_save, a, x, nx);
    FZ_SAVE(simlsh_signature_save, b, y, ny);
    FZ_CHECK(nx == ny && memcmp(x, y, nx) == 0);
    free(x);
    free(y);
}

/* save(s) loads again, and saving that gives the same bytes. */
static void roundtrip(const simlsh_signature *s)
{
    uint8_t *a;
    size_t na;
    FZ_SAVE(simlsh_signature_save, s, a, na);
    simlsh_signature *t;
    FZ_CHECK(simlsh_signature_load(&t, a, na, NULL) == 0);
    save_equal(s, t);
    double j;
    FZ_CHECK(simlsh_signature_jaccard(&j, s, t) == 0 && j == 1.0);
    uint64_t f1, f2;
    FZ_CHECK(simlsh_signature_fingerprint(&f1, s) == 0);
    FZ_CHECK(simlsh_signature_fingerprint(&f2, t) == 0 && f1 == f2);
    simlsh_signature_free(t);
    free(a);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void check_values(const simlsh_signature *s, const uint8_t *bytes, uint32_t P, int empty,
                         int scheme, uint32_t seed)
{
    uint32_t *v = malloc(P * sizeof *v), *raw = malloc(P * sizeof *raw);
    FZ_CHECK(v != NULL && raw != NULL);
    size_t got;
    FZ_CHECK(simlsh_signature_values(v, P, &got, s) == 0 && got == P);
    FZ_CHECK(simlsh_signature_values(v, P - 1, &got, s) == SIMLSH_EBUFSIZE && got == P);
    size_t nraw = 0;
    for (uint32_t i = 0; i < P; i++) {
        uint32_t r = fz_rd32(bytes + FZ_PAYLOAD + 8 + 4 * i);
        if (r != EMPTY)
            raw[nraw++] = r;
        if (empty || scheme == SIMLSH_SCHEME_CLASSIC || r != EMPTY)
            FZ_CHECK(v[i] == r);
    }
    if (!empty && scheme == SIMLSH_SCHEME_OPH) {
        /* densification fills every empty row from a non-empty one */
        qsort(raw, nraw, sizeof *raw, cmp_u32);
        for (uint32_t i = 0; i < P; i++)
            FZ_CHECK(bsearch(&v[i], raw, nraw, sizeof *raw, cmp_u32) != NULL);
    }

    /* Band keys for a few shapes, against docs/format-index.md. */
    uint64_t *keys = malloc(P * sizeof *keys);
    FZ_CHECK(keys != NULL);
    const uint32_t rows_list[] = {1, 2, 3, 5, P};
    for (size_t t = 0; t < sizeof rows_list / sizeof rows_list[0]; t++) {
        uint32_t r = rows_list[t], b = P / r;
        if (b == 0)
            continue;
        int rc = simlsh_signature_band_keys(keys, b, s, b, r);
        if (empty) {
            FZ_CHECK(rc == SIMLSH_EEMPTY);
            continue;
        }
        FZ_CHECK(rc == 0);
        for (uint32_t i = 0; i < b; i++)
            FZ_CHECK(keys[i] == fz_band_key(v + (size_t)i * r, r, i, seed));
        if (b > 1)
            FZ_CHECK(simlsh_signature_band_keys(keys, b - 1, s, b, r) == SIMLSH_EBUFSIZE);
    }
    if (P >= 2) {
        int rc = simlsh_signature_band_keys(keys, P, s, P, 2); /* 2P rows > P */
        FZ_CHECK(rc == SIMLSH_EINVAL || (empty && rc == SIMLSH_EEMPTY));
    }
    free(keys);
    free(v);
    free(raw);
}

static void exercise(simlsh_signature *s, const uint8_t *bytes, size_t n)
{
    uint8_t *saved;
    size_t ns;
    FZ_SAVE(simlsh_signature_save, s, saved, ns);
    FZ_CHECK(ns == n && memcmp(saved, bytes, n) == 0);
    free(saved);

    const uint8_t *c = bytes + FZ_HEAD;
    uint32_t P = fz_rd32(bytes + FZ_PAYLOAD);
    int empty = fz_rd32(bytes + FZ_PAYLOAD + 4) & 1;
    FZ_CHECK(simlsh_signature_num_perm(s) == (int)P && P > 0);
    FZ_CHECK(P == (uint32_t)(c[10] | (c[11] << 8)));
    FZ_CHECK(simlsh_signature_is_empty(s) == empty);
    check_values(s, bytes, P, empty, c[9], fz_rd32(c + 4));

    simlsh_params *p;
    FZ_CHECK(simlsh_signature_params(&p, s) == 0);
    uint64_t fp_p, fp_s;
    FZ_CHECK(simlsh_params_fingerprint(&fp_p, p, SIMLSH_SCOPE_SIGNATURE) == 0);
    FZ_CHECK(simlsh_signature_fingerprint(&fp_s, s) == 0 && fp_p == fp_s);

    double j;
    FZ_CHECK(simlsh_signature_jaccard(&j, s, s) == 0 && j == 1.0);

    /* Merging with itself changes nothing; adding features makes a changed
     * signature that still round-trips. */
    simlsh_signature *e = NULL, *cp;
    FZ_CHECK(simlsh_signature_copy(&cp, s) == 0);
    FZ_CHECK(simlsh_signature_merge(cp, s) == 0);
    save_equal(cp, s);
    roundtrip(s);
    uint64_t f[3] = {fz_rd64(c), fz_rd64(c + 8), fz_rd64(c + 16)};
    FZ_CHECK(simlsh_signature_add_features(cp, f, 3) == 0);
    FZ_CHECK(simlsh_signature_is_empty(cp) == 0);
    roundtrip(cp);

    /* Merging into a new empty signature of the loaded contract gives the
     * loaded one; a document of the payload's bytes shingled under that
     * contract round-trips too. */
    int rc = simlsh_signature_new(&e, p);
    FZ_CHECK(rc == 0);
    FZ_CHECK(simlsh_signature_jaccard(&j, s, e) == 0 && j == (empty ? 1.0 : 0.0));
    FZ_CHECK(simlsh_signature_merge(e, s) == 0);
    save_equal(e, s);
    FZ_CHECK(simlsh_signature_clear(e) == 0);
    size_t tlen = n - FZ_PAYLOAD - FZ_TRAILER;
    rc = simlsh_signature_add_text(e, bytes + FZ_PAYLOAD, tlen < 48 ? tlen : 48);
    FZ_CHECK(rc == 0 || rc == SIMLSH_EUTF8);
    roundtrip(e);
    FZ_CHECK(simlsh_signature_clear(e) == 0 && simlsh_signature_is_empty(e) == 1);
    roundtrip(e);
    simlsh_signature_free(e);
    simlsh_signature_free(cp);
    simlsh_params_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    uint8_t *c = fz_reseal(d, n, "SLSG");
    if (c == NULL)
        return 0;
    simlsh_signature *s = NULL;
    int rc = simlsh_signature_load(&s, c, n, NULL);
    if (rc == 0)
        exercise(s, c, n);
    else
        FZ_CHECK(s == NULL && (rc == SIMLSH_ECORRUPT || rc == SIMLSH_EUNSUPPORTED));
    simlsh_signature_free(s);
    free(c);
    return 0;
}
