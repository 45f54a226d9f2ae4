/*
 * The public header as a strict C99 consumer sees it (tests/meson.build
 * builds this file with c_std=c99 and the project's warnings): it compiles
 * on its own, twice in a row (include guard), and its declarations link
 * against the shared library.
 */
#include <simlsh.h>
#include <simlsh.h> /* a second time: the guard must make this a no-op */

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* The X-macro list is usable from C99 code too. */
#define COUNT_CODE(name, value, msg) +1
static const int ncodes = 0 SIMLSH_ERRNO_MAP(COUNT_CODE);
#undef COUNT_CODE

int main(void)
{
    simlsh_params *p = NULL;
    simlsh_shingleset *s = NULL;
    int64_t k = 0;
    size_t n = 0;
    simlsh_errno e = SIMLSH_EINVAL;

    EXPECT(ncodes >= 12);
    EXPECT((int)e == -1);
    EXPECT(simlsh_version_number() == SIMLSH_VERSION_NUMBER);
    EXPECT(strcmp(simlsh_error_name(SIMLSH_ENOMEM), "ENOMEM") == 0);
    EXPECT(strcmp(simlsh_strerror(SIMLSH_OK), "success") == 0);

    EXPECT(simlsh_params_new(&p, NULL) == SIMLSH_OK);
    EXPECT(p != NULL);
    EXPECT(simlsh_params_get_int(p, SIMLSH_PARAM_K, &k) == 0 && k == 5);
    EXPECT(simlsh_params_set_int(p, SIMLSH_PARAM_K, 3) == 0);
    EXPECT(simlsh_shingleset_new(&s, p) == 0);
    EXPECT(simlsh_shingleset_add_text(s, "abcde", 5) == 0);
    EXPECT(simlsh_shingleset_count(&n, s) == 0 && n == 3);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);

    printf("header-c99: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
