/* Saving and loading an index, in memory and to files: round trips
 * checked against the reference, and hostile input. */
#include "index-common.h"
#include "testutil.h"

static uint8_t *save_bytes(const simlsh_index *ix, size_t *n)
{
    CHECK_OK(simlsh_index_save(NULL, 0, n, ix));
    uint8_t *buf = malloc(*n);
    size_t n2 = 0;
    CHECK_OK(simlsh_index_save(buf, *n, &n2, ix));
    CHECK(n2 == *n);
    return buf;
}

/* Rewrite the checksum after an edit: hostile but well-formed input. */
static void reseal(uint8_t *buf, size_t n)
{
    simlsh__frame_write_tail(buf, n);
}

static void test_persistence(int store, int big)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.55));
    corpus_make(&c, p, 200, 31 + (uint64_t)store, big);
    simlsh_index *ix = corpus_index(&c, p);
    if (store)
        for (size_t i = 0; i < c.n; i += 5) {
            CHECK_OK(simlsh_index_remove(ix, c.id[i]));
            c.live[i] = false;
        }

    size_t n;
    uint8_t *buf = save_bytes(ix, &n);
    size_t cnt;
    CHECK_RC(simlsh_index_save(buf, n - 1, &cnt, ix), SIMLSH_EBUFSIZE);
    CHECK_RC(simlsh_index_save(buf, n, NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save(buf, n, &cnt, NULL), SIMLSH_EINVAL);

    simlsh_index *ld = NULL;
    CHECK_OK(simlsh_index_load(&ld, buf, n, NULL));
    check_against_ref(&c, ld, store);
    /* A loaded index tells how to sign queries for it. */
    {
        simlsh_params *lp = NULL;
        CHECK_OK(simlsh_index_params(&lp, ld));
        simlsh_signature *q = mk_sig(lp, 1000, 0, 80);
        CHECK(q != NULL);
        simlsh_results *qr = NULL;
        CHECK_OK(simlsh_results_new(&qr, NULL));
        CHECK_OK(simlsh_index_query(qr, ld, q, 0));
        double thr;
        CHECK_OK(simlsh_params_get_double(lp, SIMLSH_PARAM_THRESHOLD, &thr));
        CHECK(thr == 0.55);
        simlsh_results_free(qr);
        simlsh_signature_free(q);
        simlsh_params_free(lp);
    }
    uint64_t f1, f2;
    CHECK_OK(simlsh_index_fingerprint(&f1, ix));
    CHECK_OK(simlsh_index_fingerprint(&f2, ld));
    CHECK(f1 == f2);
    uint32_t b1, r1, b2, r2;
    simlsh_index_bands(&b1, &r1, ix);
    simlsh_index_bands(&b2, &r2, ld);
    CHECK(b1 == b2 && r1 == r2);
    /* The loaded index saves to the same size; and a second load-save
     * cycle is byte-identical (slots are then dense). */
    size_t n2, n3;
    uint8_t *buf2 = save_bytes(ld, &n2);
    CHECK(n2 == n);
    simlsh_index *ld2 = NULL;
    CHECK_OK(simlsh_index_load(&ld2, buf2, n2, NULL));
    uint8_t *buf3 = save_bytes(ld2, &n3);
    CHECK(n3 == n2 && memcmp(buf2, buf3, n2) == 0);
    free(buf2);
    free(buf3);
    simlsh_index_free(ld2);
    /* A loaded index takes inserts and removals like any other. */
    if (store) {
        CHECK_OK(simlsh_index_insert(ld, c.id[0], c.sig[0]));
        c.live[0] = true;
        CHECK_OK(simlsh_index_remove(ld, c.id[1]));
        c.live[1] = false;
        check_against_ref(&c, ld, store);
        CHECK_OK(simlsh_index_remove(ld, c.id[0]));
        CHECK_OK(simlsh_index_insert(ld, c.id[1], c.sig[1]));
        c.live[0] = false;
        c.live[1] = true;
    }
    simlsh_index_free(ld);

    /* Files. */
    char path[] = "/tmp/simlsh-test-index-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(simlsh_index_save_file(ix, path));
    CHECK_OK(simlsh_index_load_file(&ld, path, NULL));
    check_against_ref(&c, ld, store);
    simlsh_index_free(ld);
    ld = NULL;
    CHECK_RC(simlsh_index_save_file(NULL, path), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file(ix, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_save_file(ix, "/nonexistent-dir-simlsh/x.idx"), SIMLSH_EIO);
    CHECK_RC(simlsh_index_load_file(&ld, "/nonexistent-dir-simlsh/x.idx", NULL), SIMLSH_EIO);
    CHECK(ld == NULL);
    CHECK_RC(simlsh_index_load_file(NULL, path, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load_file(&ld, NULL, NULL), SIMLSH_EINVAL);
    /* A truncated file. */
    FILE *fp = fopen(path, "wb");
    fwrite(buf, 1, n / 2, fp);
    fclose(fp);
    CHECK_RC(simlsh_index_load_file(&ld, path, NULL), SIMLSH_ECORRUPT);
    fp = fopen(path, "wb");
    fclose(fp);
    CHECK_RC(simlsh_index_load_file(&ld, path, NULL), SIMLSH_ECORRUPT);
    unlink(path);

    /* Bad arguments. */
    CHECK_RC(simlsh_index_load(NULL, buf, n, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_load(&ld, NULL, n, NULL), SIMLSH_EINVAL);
    simlsh_allocator half = {tu_alloc_fn, NULL, NULL};
    CHECK_RC(simlsh_index_load(&ld, buf, n, &half), SIMLSH_EINVAL);

    /* Every truncation, and every single-byte corruption (the checksum or
     * the header catches each), fail cleanly. */
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        int rc = simlsh_index_load(&ld, buf, len, NULL);
        if (rc != SIMLSH_ECORRUPT || ld != NULL)
            bad++;
    }
    CHECK(bad == 0);
    bad = 0;
    for (size_t i = 0; i < n; i += (i < 256 ? 1 : 7)) {
        buf[i] ^= 0x5a;
        int rc = simlsh_index_load(&ld, buf, n, NULL);
        if ((rc != SIMLSH_ECORRUPT && rc != SIMLSH_EUNSUPPORTED) || ld != NULL)
            bad++;
        simlsh_index_free(ld);
        ld = NULL;
        buf[i] ^= 0x5a;
    }
    CHECK(bad == 0);

    /* Well-formed frames with hostile payloads. */
    uint8_t *h = malloc(n);
    const size_t P = SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    size_t rec = 8 + 4 * 16 + (store ? 4 * 64 : 0);
    struct {
        size_t off;
        int width;
        uint64_t value;
    } edits[] = {
        {P + 0, 4, 15},                    /* bands disagree with the contract */
        {P + 4, 4, 3},                     /* rows */
        {P + 8, 4, 2},                     /* unknown flag */
        {P + 8, 4, store ? 0 : 1},         /* flag disagrees with the contract */
        {P + 12, 4, rec + 4},              /* record size */
        {P + 16, 8, 0xFFFFFFFFFFFFFFULL},  /* count far beyond the length */
        {P + 16, 8, 1},                    /* count below the length */
        {P + 24 + rec + 8, 4, 0x12345678}, /* a band fingerprint */
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        if (!store && e == 7)
            continue; /* without signatures fingerprints are the data */
        memcpy(h, buf, n);
        if (edits[e].width == 4)
            simlsh__wr32(h + edits[e].off, (uint32_t)edits[e].value);
        else
            simlsh__wr64(h + edits[e].off, edits[e].value);
        reseal(h, n);
        CHECK_RC(simlsh_index_load(&ld, h, n, NULL), SIMLSH_ECORRUPT);
        CHECK(ld == NULL);
    }
    /* A duplicate id. */
    memcpy(h, buf, n);
    memcpy(h + P + 24 + rec, h + P + 24, rec);
    reseal(h, n);
    CHECK_RC(simlsh_index_load(&ld, h, n, NULL), SIMLSH_ECORRUPT);
    /* Payload shorter than its header. */
    {
        uint8_t small[SIMLSH__FRAME_OVERHEAD + 8];
        memcpy(small, buf, P);
        simlsh__wr64(small + 8, 8);
        memset(small + P, 0, 8);
        reseal(small, sizeof small);
        CHECK_RC(simlsh_index_load(&ld, small, sizeof small, NULL), SIMLSH_ECORRUPT);
    }
    /* Another object's bytes. */
    size_t sn;
    CHECK_OK(simlsh_signature_save(NULL, 0, &sn, c.sig[1]));
    uint8_t *sb = malloc(sn);
    CHECK_OK(simlsh_signature_save(sb, sn, &sn, c.sig[1]));
    CHECK_RC(simlsh_index_load(&ld, sb, sn, NULL), SIMLSH_ECORRUPT);
    free(sb);
    free(h);

    /* An empty index round-trips. */
    simlsh_index *e0 = NULL;
    CHECK_OK(simlsh_index_new(&e0, p));
    size_t en;
    uint8_t *eb = save_bytes(e0, &en);
    CHECK(en == SIMLSH__FRAME_OVERHEAD + 24);
    CHECK_OK(simlsh_index_load(&ld, eb, en, NULL));
    CHECK_OK(simlsh_index_count(&cnt, ld));
    CHECK(cnt == 0);
    simlsh_index_free(ld);
    free(eb);
    simlsh_index_free(e0);

    free(buf);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
}

int main(void)
{
    test_persistence(1, 0);
    test_persistence(0, 0);
    test_persistence(1, 1);
    test_persistence(0, 1);
    return tu_finish("index-persist");
}
