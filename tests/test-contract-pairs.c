/* Fields valid one at a time but not together: the byte unit with a
 * Unicode normalisation flag (fuzz/crashers/README.md). The params refuse
 * the pair in either order (SIMLSH_EINVAL), so no object can be made with
 * it, and every loader refuses a saved contract holding it as corrupt
 * (SIMLSH_ECORRUPT): no library save can have written it. Before the fix,
 * the set loader said SIMLSH_EINVAL while the signature and index loaders
 * accepted the bytes and gave objects whose params made no new signature. */
#include "testutil.h"

static uint8_t *read_crasher(const char *name, size_t *len)
{
    const char *root = getenv("SIMLSH_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/crashers/%s", root ? root : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        exit(1);
    }
    static uint8_t buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(*len > 48 && *len < sizeof buf);
    return buf;
}

static void test_loaders(void)
{
    size_t n;
    uint8_t *b = read_crasher("set-byte-nfkc-einval", &n);
    CHECK(b[16] == SIMLSH_UNIT_BYTE && (b[18] & (SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD)));
    simlsh_shingleset *s = NULL;
    CHECK_RC(simlsh_shingleset_load(&s, b, n, NULL), SIMLSH_ECORRUPT);
    CHECK(s == NULL);

    b = read_crasher("signature-byte-nfkc-loads", &n);
    CHECK(b[16] == SIMLSH_UNIT_BYTE && (b[18] & (SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD)));
    simlsh_signature *g = NULL;
    CHECK_RC(simlsh_signature_load(&g, b, n, NULL), SIMLSH_ECORRUPT);
    CHECK(g == NULL);

    b = read_crasher("index-byte-nfkc-loads", &n);
    CHECK(b[16] == SIMLSH_UNIT_BYTE && (b[18] & (SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD)));
    simlsh_index *ix = NULL;
    CHECK_RC(simlsh_index_load(&ix, b, n, NULL), SIMLSH_ECORRUPT);
    CHECK(ix == NULL);
}

static void test_setters(void)
{
    for (int order = 0; order < 2; order++) {
        for (int64_t flag = SIMLSH_NORM_CASEFOLD; flag <= SIMLSH_NORM_NFKC; flag <<= 1) {
            simlsh_params *p = NULL;
            CHECK_OK(simlsh_params_new(&p, NULL));
            int64_t unit = -1, norm = -1;
            if (order == 0) {
                CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE));
                CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, flag), SIMLSH_EINVAL);
            } else {
                int rc = simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, flag);
                if (rc == SIMLSH_EUNSUPPORTED) { /* no utf8proc: never set at all */
                    CHECK(!simlsh_has_unicode());
                    simlsh_params_free(p);
                    continue;
                }
                CHECK_OK(rc);
                CHECK_RC(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, SIMLSH_UNIT_BYTE),
                         SIMLSH_EINVAL);
            }
            CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_UNIT, &unit));
            CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_NORMALIZE, &norm));
            CHECK(!(unit == SIMLSH_UNIT_BYTE && (norm & flag)));
            /* so every constructor gets a usable contract */
            simlsh_index *ix = NULL;
            simlsh_signature *g = NULL;
            CHECK_OK(simlsh_index_new(&ix, p));
            CHECK_OK(simlsh_signature_new(&g, p));
            simlsh_signature_free(g);
            simlsh_index_free(ix);
            simlsh_params_free(p);
        }
    }
}

int main(void)
{
    test_loaders();
    test_setters();
    return tu_finish("contract-pairs");
}
