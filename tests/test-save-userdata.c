/* Caller bytes saved inside the index file (docs/format-index.md, section
 * 3): the accessors, the exact bytes, round trips, files of 0.1 that still
 * load, hostile sections, and every allocation failure. */
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

/* An index of n documents (P 32, 8 bands of 4), stored or not. */
static simlsh_index *mk_index(const simlsh_allocator *al, int store, size_t n)
{
    simlsh_params *p = mk_params(al, 32, 8, 4, store);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < n; i++) {
        simlsh_signature *s = mk_sig(p, 7 + i / 3, i % 3, 40 + i % 3);
        CHECK_OK(simlsh_index_insert(ix, 100 + 7 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    simlsh_params_free(p);
    return ix;
}

static void test_accessors(void)
{
    simlsh_index *ix = mk_index(NULL, 1, 5);
    const void *d = (const void *)1;
    size_t len = 99;
    CHECK_OK(simlsh_index_userdata(&d, &len, ix));
    CHECK(d == NULL && len == 0);
    CHECK_RC(simlsh_index_userdata(NULL, &len, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_userdata(&d, NULL, ix), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_userdata(&d, &len, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_set_userdata(NULL, "x", 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_set_userdata(ix, NULL, 1), SIMLSH_EINVAL);

    size_t m0, m1;
    CHECK_OK(simlsh_index_memory(&m0, NULL, ix));
    char names[] = "a.txt\0b.txt\0\xff\x00\x01";
    CHECK_OK(simlsh_index_set_userdata(ix, names, sizeof names));
    names[0] = 'Z'; /* copied: the caller's buffer is its own */
    CHECK_OK(simlsh_index_userdata(&d, &len, ix));
    CHECK(len == sizeof names && d != NULL && d != (const void *)names);
    CHECK(memcmp(d, "a.txt\0b.txt\0\xff\x00\x01", sizeof names) == 0);
    CHECK_OK(simlsh_index_memory(&m1, NULL, ix));
    CHECK(m1 == m0 + sizeof names);

    /* Setting from the index's own bytes (a prefix of them) works. */
    CHECK_OK(simlsh_index_set_userdata(ix, d, 5));
    CHECK_OK(simlsh_index_userdata(&d, &len, ix));
    CHECK(len == 5 && memcmp(d, "a.txt", 5) == 0);

    /* clear() removes ids, not the caller's bytes. */
    CHECK_OK(simlsh_index_clear(ix));
    CHECK_OK(simlsh_index_userdata(&d, &len, ix));
    CHECK(len == 5);

    /* len 0 removes them, data may then be NULL or anything. */
    CHECK_OK(simlsh_index_set_userdata(ix, "ignored", 0));
    CHECK_OK(simlsh_index_userdata(&d, &len, ix));
    CHECK(d == NULL && len == 0);
    CHECK_OK(simlsh_index_set_userdata(ix, NULL, 0));
    CHECK_OK(simlsh_index_memory(&m1, NULL, ix));
    simlsh_index_free(ix);
}

/* The documented bytes: flags bit 1, then after the records u64 U and the
 * U bytes; without user data the file is exactly as before. */
static void test_format(int store)
{
    simlsh_index *ix = mk_index(NULL, store, 9);
    size_t n0, n1, n2;
    uint8_t *plain = save_bytes(ix, &n0);
    const char ud[] = "names and a contract";
    size_t ul = sizeof ud - 1;
    CHECK_OK(simlsh_index_set_userdata(ix, ud, ul));
    uint8_t *with = save_bytes(ix, &n1);
    CHECK(n1 == n0 + 8 + ul);
    /* Same header, contract and records; the payload length and flags
     * differ, and the section sits where the records end. */
    size_t pl = SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    CHECK(memcmp(plain, with, 8) == 0);
    CHECK(simlsh__rd64(with + 8) == n1 - SIMLSH__FRAME_OVERHEAD);
    CHECK(memcmp(plain + 16, with + 16, SIMLSH__CONTRACT_SIZE) == 0);
    CHECK(simlsh__rd32(plain + pl + 8) == (store ? 1u : 0u));
    CHECK(simlsh__rd32(with + pl + 8) == (store ? 3u : 2u));
    uint32_t rec = simlsh__rd32(with + pl + 12);
    uint64_t count = simlsh__rd64(with + pl + 16);
    CHECK(count == 9);
    size_t end = pl + 24 + (size_t)count * rec;
    CHECK(end == n0 - SIMLSH__TRAILER_SIZE);
    CHECK(memcmp(plain + pl + 12, with + pl + 12, end - pl - 12) == 0);
    CHECK(simlsh__rd64(with + end) == ul);
    CHECK(memcmp(with + end + 8, ud, ul) == 0);
    CHECK(end + 8 + ul + SIMLSH__TRAILER_SIZE == n1);

    /* Loads with the bytes, saves back to the same file. */
    simlsh_index *ld = NULL;
    CHECK_OK(simlsh_index_load(&ld, with, n1, NULL));
    const void *d;
    size_t len;
    CHECK_OK(simlsh_index_userdata(&d, &len, ld));
    CHECK(len == ul && memcmp(d, ud, ul) == 0);
    uint8_t *again = save_bytes(ld, &n2);
    CHECK(n2 == n1 && memcmp(again, with, n1) == 0);
    free(again);
    /* Removing them gives the plain bytes again. */
    CHECK_OK(simlsh_index_set_userdata(ld, NULL, 0));
    again = save_bytes(ld, &n2);
    CHECK(n2 == n0 && memcmp(again, plain, n0) == 0);
    free(again);
    simlsh_index_free(ld);
    ld = NULL;

    /* Hostile sections, each resealed so only the section is wrong. */
    uint8_t *bad = malloc(n1 + 8);
    for (int c = 0; c < 5; c++) {
        size_t len2 = n1;
        memcpy(bad, with, n1);
        switch (c) {
        case 0: /* U = 0 */
            memmove(bad + end + 8, bad + end + 8 + ul, SIMLSH__TRAILER_SIZE);
            simlsh__wr64(bad + end, 0);
            len2 = end + 8 + SIMLSH__TRAILER_SIZE;
            break;
        case 1: /* U one more than the bytes */
            simlsh__wr64(bad + end, ul + 1);
            break;
        case 2: /* U huge: never allocated */
            simlsh__wr64(bad + end, UINT64_MAX - 3);
            break;
        case 3: /* the flag without the section */
            memcpy(bad + end, with + n1 - SIMLSH__TRAILER_SIZE, SIMLSH__TRAILER_SIZE);
            len2 = end + SIMLSH__TRAILER_SIZE;
            break;
        case 4: /* the section without the flag */
            simlsh__wr32(bad + pl + 8, store ? 1u : 0u);
            break;
        }
        simlsh__wr64(bad + 8, len2 - SIMLSH__FRAME_OVERHEAD);
        simlsh__frame_write_tail(bad, len2);
        CHECK_RC(simlsh_index_load(&ld, bad, len2, NULL), SIMLSH_ECORRUPT);
        CHECK(ld == NULL);
    }
    /* Every truncation and every bit flip without resealing. */
    int accepted = 0;
    for (size_t len2 = 0; len2 < n1; len2++)
        accepted += simlsh_index_load(&ld, with, len2, NULL) != SIMLSH_ECORRUPT || ld != NULL;
    for (size_t i = 0; i < n1; i++)
        for (int b = 0; b < 8; b += 3) {
            memcpy(bad, with, n1);
            bad[i] ^= (uint8_t)(1u << b);
            int rc = simlsh_index_load(&ld, bad, n1, NULL);
            accepted += rc == 0;
            if (rc == 0) {
                simlsh_index_free(ld);
                ld = NULL;
            }
        }
    CHECK(accepted == 0);
    free(bad);
    free(plain);
    free(with);
    simlsh_index_free(ix);
}

/* The example of docs/format-index.md, byte for byte. */
static void test_doc_example(void)
{
    static const uint8_t payload[47] = {
        0x01, 0, 0, 0, 0x01, 0, 0, 0, 0x02, 0,    0,    0,    0x0c, 0, 0, 0, /* b, r, flags, R */
        0x01, 0, 0, 0, 0,    0, 0, 0,                                        /* n */
        0x07, 0, 0, 0, 0,    0, 0, 0, 0xdd, 0xcc, 0xbb, 0xaa,                /* record */
        0x03, 0, 0, 0, 0,    0, 0, 0, 'a',  'b',  'c',                       /* U, data */
    };
    simlsh_params *p = mk_params(NULL, 4, 1, 1, 0);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    size_t n0;
    uint8_t *empty = save_bytes(ix, &n0);
    size_t pl = SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE, n = n0 - 24 + sizeof payload;
    CHECK(n0 == pl + 24 + SIMLSH__TRAILER_SIZE);
    uint8_t *buf = malloc(n);
    memcpy(buf, empty, pl);
    memcpy(buf + pl, payload, sizeof payload);
    simlsh__wr64(buf + 8, sizeof payload);
    simlsh__frame_write_tail(buf, n);
    simlsh_index *ld = NULL;
    CHECK_OK(simlsh_index_load(&ld, buf, n, NULL));
    size_t count = 0, m = 0;
    const void *d = NULL;
    CHECK_OK(simlsh_index_count(&count, ld));
    CHECK(count == 1 && simlsh_index_contains(ld, 7) == 1);
    CHECK_OK(simlsh_index_userdata(&d, &m, ld));
    CHECK(m == 3 && memcmp(d, "abc", 3) == 0);
    uint8_t *again = save_bytes(ld, &m);
    CHECK(m == n && memcmp(again, buf, n) == 0);
    free(again);
    free(buf);
    free(empty);
    simlsh_index_free(ld);
    simlsh_index_free(ix);
    simlsh_params_free(p);
}

/* The seed corpus's index files were written by 0.1 (fuzz/corpus/index):
 * they load, have no user data, and save back to the same bytes. */
static void test_old_files(void)
{
    const char *root = getenv("SIMLSH_SOURCE_ROOT");
    if (root == NULL)
        return;
    static const char *const names[] = {"oph-p32-b8r4-stored", "oph-p32-b8r4-bare",
                                        "oph-p16-b8r2-bigbucket", "oph-p8-b1r7-empty"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/fuzz/corpus/index/%s", root, names[i]);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (f == NULL)
            continue;
        uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        simlsh_index *ld = NULL;
        CHECK_OK(simlsh_index_load_file(&ld, path, NULL));
        const void *d;
        size_t len = 1;
        CHECK_OK(simlsh_index_userdata(&d, &len, ld));
        CHECK(len == 0 && d == NULL);
        size_t m;
        uint8_t *again = save_bytes(ld, &m);
        CHECK(m == n && memcmp(again, buf, n) == 0);
        free(again);
        simlsh_index_free(ld);
    }
}

/* A file round trip through save_file/load_file keeps the bytes. */
static void test_file_roundtrip(void)
{
    char dir[] = "/tmp/simlsh-test-ud-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/x.idx", dir);
    simlsh_index *ix = mk_index(NULL, 0, 30);
    uint8_t big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 131 + (i >> 8));
    CHECK_OK(simlsh_index_set_userdata(ix, big, sizeof big));
    CHECK_OK(simlsh_index_save_file(ix, path));
    simlsh_index *ld = NULL;
    CHECK_OK(simlsh_index_load_file(&ld, path, NULL));
    const void *d;
    size_t len;
    CHECK_OK(simlsh_index_userdata(&d, &len, ld));
    CHECK(len == sizeof big && memcmp(d, big, len) == 0);
    simlsh_index_free(ld);
    simlsh_index_free(ix);
    unlink(path);
    rmdir(dir);
}

/* Every allocation of set, save and load with user data fails in turn:
 * ENOMEM, nothing leaked, and the previous bytes stay. */
static void test_oom(void)
{
    const char ud1[] = "first", ud2[] = "the second, longer";
    long points = 0;
    int bad = 0, leaks = 0;
    for (long fail_at = 1; fail_at < 10000; fail_at++) {
        tu_alloc_state st = {0};
        simlsh_allocator al = tu_allocator(&st);
        simlsh_index *ix = mk_index(&al, 1, 12), *ld = NULL;
        long base = st.count;
        st.fail_at = base + fail_at;
        int rc = simlsh_index_set_userdata(ix, ud1, sizeof ud1);
        const void *d;
        size_t len;
        if (rc == 0) {
            rc = simlsh_index_set_userdata(ix, ud2, sizeof ud2);
            simlsh_index_userdata(&d, &len, ix);
            if (rc != 0 && (len != sizeof ud1 || memcmp(d, ud1, len) != 0))
                bad++;
        }
        size_t n = 0;
        uint8_t *buf = NULL;
        if (rc == 0) {
            simlsh_index_save(NULL, 0, &n, ix);
            buf = malloc(n);
            rc = simlsh_index_save(buf, n, &n, ix);
        }
        if (rc == 0) {
            rc = simlsh_index_load(&ld, buf, n, &al);
            if (rc != 0 && ld != NULL)
                bad++;
        }
        if (rc == 0) {
            simlsh_index_userdata(&d, &len, ld);
            if (len != sizeof ud2 || memcmp(d, ud2, len) != 0)
                bad++;
        }
        if (rc != 0 && rc != SIMLSH_ENOMEM)
            bad++;
        free(buf);
        simlsh_index_free(ld);
        simlsh_index_free(ix);
        if (st.live != 0)
            leaks++;
        if (rc == 0 && st.count < st.fail_at)
            break;
        points++;
    }
    printf("userdata oom: %ld failure points, %d wrong, %d leaking\n", points, bad, leaks);
    CHECK(points > 3);
    CHECK(bad == 0);
    CHECK(leaks == 0);
}

int main(void)
{
    test_accessors();
    test_format(1);
    test_format(0);
    test_doc_example();
    test_old_files();
    test_file_roundtrip();
    test_oom();
    return tu_finish("test-save-userdata");
}
