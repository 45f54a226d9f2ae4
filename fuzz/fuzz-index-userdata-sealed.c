/* Fuzz the one-file index: a whole SLIX frame, resealed (reseal.h), whose
 * user data section (docs/format-index.md, section 3, flag bit 1) is what
 * the mutations aim at.
 *
 * The trailer's bytes are overwritten anyway, so its first byte chooses
 * repairs: bit 1 sets flag bit 1 and rewrites U to the bytes left after the
 * records (so mutated sections and records get past the length rule and
 * into the load); bit 2 clears flag bit 1 instead, leaving the bytes as
 * they are.
 *
 * On success the index must behave: it saves back to exactly the loaded
 * bytes; its user data is the section's bytes (none without flag bit 1);
 * without its user data it saves to the same file with the section cut
 * out and flag bit 1 cleared (the 0.1 bytes); with other user data (a
 * slice of the input, then a prefix of its own) it saves and loads back
 * to the same bytes and the same answers. */
#include "reseal.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

#define HEAD 24 /* payload head: b, r, flags, R, n */
#define FLAG_UD 2u

/* Where the records end, when the head is consistent enough to tell. */
static int records_end(const uint8_t *c, size_t n, size_t *end)
{
    if (n < FZ_OVERHEAD + HEAD)
        return 0;
    const uint8_t *pl = c + FZ_PAYLOAD;
    uint64_t rec = fz_rd32(pl + 12), count = fz_rd64(pl + 16), plen = n - FZ_OVERHEAD;
    if (rec == 0 || count > (plen - HEAD) / rec)
        return 0;
    *end = FZ_PAYLOAD + HEAD + (size_t)(count * rec);
    return 1;
}

static void repair(uint8_t *c, size_t n, uint8_t how)
{
    size_t end;
    uint8_t *fl = c + FZ_PAYLOAD + 8;
    if (!records_end(c, n, &end))
        return;
    if (how & 2) {
        fz_wr32(fl, fz_rd32(fl) | FLAG_UD);
        if (n - FZ_TRAILER >= end + 8)
            fz_wr64(c + end, (uint64_t)(n - FZ_TRAILER - end - 8));
    } else if (how & 4) {
        fz_wr32(fl, fz_rd32(fl) & ~FLAG_UD);
    }
}

static void save(const simlsh_index *ix, uint8_t **buf, size_t *len)
{
    FZ_SAVE(simlsh_index_save, ix, *buf, *len);
}

/* Pairs of the two indexes, unverified: the same rows. */
static void same_pairs(const simlsh_index *a, const simlsh_index *b)
{
    simlsh_results *x, *y;
    FZ_CHECK(simlsh_results_new(&x, NULL) == 0 && simlsh_results_new(&y, NULL) == 0);
    FZ_CHECK(simlsh_index_pairs(x, a, 0, 1000) == 0 && simlsh_index_pairs(y, b, 0, 1000) == 0);
    size_t m = simlsh_results_count(x);
    FZ_CHECK(simlsh_results_count(y) == m);
    if (m > 0) {
        FZ_CHECK(memcmp(simlsh_results_a(x), simlsh_results_a(y), m * 8) == 0);
        FZ_CHECK(memcmp(simlsh_results_b(x), simlsh_results_b(y), m * 8) == 0);
    }
    simlsh_results_free(x);
    simlsh_results_free(y);
}

/* With user data ud, ix saves to bytes that load into an index with the
 * same user data, the same answers and the same bytes again. */
static void with_userdata(simlsh_index *ix, const void *ud, size_t len)
{
    /* ud may be the index's own bytes, freed by the set: compare a copy */
    uint8_t *want = malloc(len + 1);
    FZ_CHECK(want != NULL);
    memcpy(want, ud, len);
    FZ_CHECK(simlsh_index_set_userdata(ix, ud, len) == 0);
    ud = want;
    uint8_t *a, *b;
    size_t na, nb;
    save(ix, &a, &na);
    simlsh_index *t;
    FZ_CHECK(simlsh_index_load(&t, a, na, NULL) == 0);
    const void *got;
    size_t gl;
    FZ_CHECK(simlsh_index_userdata(&got, &gl, t) == 0 && gl == len);
    FZ_CHECK(len == 0 ? got == NULL : memcmp(got, ud, len) == 0);
    save(t, &b, &nb);
    FZ_CHECK(na == nb && memcmp(a, b, na) == 0);
    same_pairs(ix, t);
    simlsh_index_free(t);
    free(a);
    free(b);
    free(want);
}

static void exercise(simlsh_index *ix, const uint8_t *c, size_t n)
{
    uint8_t *saved;
    size_t ns;
    save(ix, &saved, &ns);
    FZ_CHECK(ns == n && memcmp(saved, c, n) == 0);
    free(saved);

    /* The user data is the section's bytes, as documented. */
    size_t end;
    FZ_CHECK(records_end(c, n, &end));
    int has = (fz_rd32(c + FZ_PAYLOAD + 8) & FLAG_UD) != 0;
    const void *ud;
    size_t ul;
    FZ_CHECK(simlsh_index_userdata(&ud, &ul, ix) == 0);
    if (has) {
        FZ_CHECK(ul > 0 && ul == fz_rd64(c + end) && end + 8 + ul + FZ_TRAILER == n);
        FZ_CHECK(memcmp(ud, c + end + 8, ul) == 0);
    } else {
        FZ_CHECK(ul == 0 && ud == NULL && end + FZ_TRAILER == n);
    }

    /* Without it: the same file with the section cut out and the flag
     * cleared, i.e. what 0.1 wrote. */
    size_t nw = has ? n - 8 - ul : n;
    uint8_t *want = malloc(nw);
    FZ_CHECK(want != NULL);
    memcpy(want, c, end);
    fz_wr64(want + 8, (uint64_t)(nw - FZ_OVERHEAD));
    fz_wr32(want + FZ_PAYLOAD + 8, fz_rd32(c + FZ_PAYLOAD + 8) & ~FLAG_UD);
    fz_wr64(want + nw - FZ_TRAILER, fz_checksum(want, nw - FZ_TRAILER));
    uint8_t *keep = NULL;
    if (has) {
        keep = malloc(ul);
        FZ_CHECK(keep != NULL);
        memcpy(keep, ud, ul);
    }
    FZ_CHECK(simlsh_index_set_userdata(ix, NULL, 0) == 0);
    save(ix, &saved, &ns);
    FZ_CHECK(ns == nw && memcmp(saved, want, nw) == 0);
    free(saved);
    free(want);

    /* Other user data: the input itself, then a prefix of the index's own
     * bytes (the setter copies before it frees). */
    with_userdata(ix, c, n);
    FZ_CHECK(simlsh_index_userdata(&ud, &ul, ix) == 0 && ul == n);
    with_userdata(ix, ud, ul / 2 + 1);
    /* The original again: the loaded bytes come back. */
    FZ_CHECK(simlsh_index_set_userdata(ix, keep, has ? fz_rd64(c + end) : 0) == 0);
    save(ix, &saved, &ns);
    FZ_CHECK(ns == n && memcmp(saved, c, n) == 0);
    free(saved);
    free(keep);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    uint8_t *c = fz_reseal(d, n, "SLIX");
    if (c == NULL)
        return 0;
    if (n >= FZ_OVERHEAD && (d[n - FZ_TRAILER] & 6) != 0) {
        repair(c, n, d[n - FZ_TRAILER]);
        fz_wr64(c + n - FZ_TRAILER, fz_checksum(c, n - FZ_TRAILER));
    }
    simlsh_index *ix = NULL;
    int rc = simlsh_index_load(&ix, c, n, NULL);
    if (rc == 0)
        exercise(ix, c, n);
    else
        FZ_CHECK(ix == NULL && (rc == SIMLSH_ECORRUPT || rc == SIMLSH_EUNSUPPORTED));
    simlsh_index_free(ix);
    free(c);
    return 0;
}
