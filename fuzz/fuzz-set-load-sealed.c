/* Fuzz the shingle-set loader past the checksum: the input is a whole SLSS
 * frame whose magic, payload length and checksum the harness rewrites
 * (reseal.h), so every mutation reaches the contract and payload checks.
 *
 * On success the set must behave: it saves back to exactly the loaded
 * bytes, its hashes are strictly increasing, copies and reloads compare
 * equal, and a changed set (more features, a document) still saves to bytes
 * that load and save again to the same bytes. */
#include "reseal.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* save(s) loads again, and saving that gives the same bytes. */
static void roundtrip(const simlsh_shingleset *s)
{
    uint8_t *a, *b;
    size_t na, nb;
    FZ_SAVE(simlsh_shingleset_save, s, a, na);
    simlsh_shingleset *t;
    FZ_CHECK(simlsh_shingleset_load(&t, a, na, NULL) == 0);
    FZ_SAVE(simlsh_shingleset_save, t, b, nb);
    FZ_CHECK(na == nb && memcmp(a, b, na) == 0);
    double j;
    FZ_CHECK(simlsh_shingleset_jaccard(&j, s, t) == 0 && j == 1.0);
    uint64_t f1, f2;
    FZ_CHECK(simlsh_shingleset_fingerprint(&f1, s) == 0);
    FZ_CHECK(simlsh_shingleset_fingerprint(&f2, t) == 0 && f1 == f2);
    simlsh_shingleset_free(t);
    free(a);
    free(b);
}

static void exercise(simlsh_shingleset *s, const uint8_t *bytes, size_t n)
{
    /* Exactly the loaded bytes come back. */
    uint8_t *saved;
    size_t ns;
    FZ_SAVE(simlsh_shingleset_save, s, saved, ns);
    FZ_CHECK(ns == n && memcmp(saved, bytes, n) == 0);
    free(saved);

    size_t count, got;
    FZ_CHECK(simlsh_shingleset_count(&count, s) == 0);
    FZ_CHECK(count == (n - FZ_OVERHEAD - 8) / 8 && count == fz_rd64(bytes + FZ_PAYLOAD));
    uint64_t *h = malloc((count > 0 ? count : 1) * sizeof *h);
    FZ_CHECK(h != NULL);
    FZ_CHECK(simlsh_shingleset_hashes(h, count, &got, s) == 0 && got == count);
    for (size_t i = 0; i < count; i++) {
        FZ_CHECK(h[i] == fz_rd64(bytes + FZ_PAYLOAD + 8 + 8 * i));
        FZ_CHECK(i == 0 || h[i - 1] < h[i]);
    }
    if (count > 0)
        FZ_CHECK(simlsh_shingleset_hashes(h, count - 1, &got, s) == SIMLSH_EBUFSIZE);

    /* The contract read from the bytes makes objects that match the set. */
    simlsh_params *p;
    FZ_CHECK(simlsh_shingleset_params(&p, s) == 0);
    uint64_t fp_p, fp_s;
    FZ_CHECK(simlsh_params_fingerprint(&fp_p, p, SIMLSH_SCOPE_SHINGLES) == 0);
    FZ_CHECK(simlsh_shingleset_fingerprint(&fp_s, s) == 0 && fp_p == fp_s);

    simlsh_shingleset *c;
    FZ_CHECK(simlsh_shingleset_copy(&c, s) == 0);
    double j, k;
    FZ_CHECK(simlsh_shingleset_jaccard(&j, s, c) == 0 && j == 1.0);
    FZ_CHECK(simlsh_shingleset_containment(&k, s, c) == 0 && k == 1.0);

    /* A document shingled under the loaded contract (the payload's own bytes
     * as text): the union contains the loaded set. */
    size_t tlen = n - FZ_OVERHEAD < 64 ? n - FZ_OVERHEAD : 64;
    int rc = simlsh_shingleset_add_text(c, bytes + FZ_PAYLOAD, tlen);
    FZ_CHECK(rc == 0 || rc == SIMLSH_EUTF8);
    FZ_CHECK(simlsh_shingleset_containment(&k, s, c) == 0 && k == 1.0);
    FZ_CHECK(simlsh_shingleset_jaccard(&j, s, c) == 0 && j >= 0.0 && j <= 1.0);
    FZ_CHECK(simlsh_shingleset_add_features(c, h, count < 4 ? count : 4) == 0);
    uint64_t extra[2] = {fz_rd64(bytes + 16), fz_rd64(bytes + 24)};
    FZ_CHECK(simlsh_shingleset_add_features(c, extra, 2) == 0);
    FZ_CHECK(simlsh_shingleset_containment(&k, s, c) == 0 && k == 1.0);
    roundtrip(c);

    /* A signature of the loaded set equals one of its hashes as features. */
    simlsh_signature *g1, *g2;
    FZ_CHECK(simlsh_signature_new(&g1, p) == 0 && simlsh_signature_new(&g2, p) == 0);
    FZ_CHECK(simlsh_signature_add_shingleset(g1, s) == 0);
    FZ_CHECK(simlsh_signature_add_features(g2, h, count) == 0);
    FZ_CHECK(simlsh_signature_jaccard(&j, g1, g2) == 0 && j == 1.0);
    FZ_CHECK(simlsh_signature_is_empty(g1) == (count == 0));
    simlsh_signature_free(g1);
    simlsh_signature_free(g2);

    FZ_CHECK(simlsh_shingleset_clear(c) == 0);
    FZ_CHECK(simlsh_shingleset_count(&got, c) == 0 && got == 0);
    roundtrip(c);
    roundtrip(s);

    simlsh_shingleset_free(c);
    simlsh_params_free(p);
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    uint8_t *c = fz_reseal(d, n, "SLSS");
    if (c == NULL)
        return 0;
    simlsh_shingleset *s = NULL;
    int rc = simlsh_shingleset_load(&s, c, n, NULL);
    if (rc == 0)
        exercise(s, c, n);
    else
        FZ_CHECK(s == NULL && (rc == SIMLSH_ECORRUPT || rc == SIMLSH_EUNSUPPORTED));
    simlsh_shingleset_free(s);
    free(c);
    return 0;
}
