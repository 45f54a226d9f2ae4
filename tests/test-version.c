/*
 * The three sources of the version agree: the header macros (compile time),
 * simlsh_version_number() / simlsh_version_string() (run time) and
 * meson.project_version(), which tests/meson.build passes in as
 * SIMLSH_EXPECTED_VERSION. Bumping one and forgetting another fails here.
 */
#include <ctype.h>

#include "testutil.h"

#ifndef SIMLSH_EXPECTED_VERSION
#error "tests/meson.build must define SIMLSH_EXPECTED_VERSION"
#endif

/* Parse "x.y.z" strictly: three decimal fields, nothing else. */
static int parse_version(const char *s, long v[3])
{
    for (int i = 0; i < 3; i++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        char *end;
        v[i] = strtol(s, &end, 10);
        s = end;
        if (i < 2) {
            if (*s != '.')
                return -1;
            s++;
        }
    }
    return *s == '\0' ? 0 : -1;
}

/* Header macros, run-time library and meson agree on the version. */
static void test_version_sources(void)
{
    long want[3] = {-1, -1, -1};
    int parsed = parse_version(SIMLSH_EXPECTED_VERSION, want);
    CHECK(parsed == 0);
    if (parsed != 0) {
        fprintf(stderr, "meson.project_version() '%s' is not MAJOR.MINOR.PATCH\n",
                SIMLSH_EXPECTED_VERSION);
        return;
    }

    /* Header macros == meson.project_version(). */
    CHECK(SIMLSH_VERSION_MAJOR == want[0]);
    CHECK(SIMLSH_VERSION_MINOR == want[1]);
    CHECK(SIMLSH_VERSION_PATCH == want[2]);
    /* The packed number only round-trips with minor and patch below 100. */
    CHECK(SIMLSH_VERSION_MINOR >= 0 && SIMLSH_VERSION_MINOR < 100);
    CHECK(SIMLSH_VERSION_PATCH >= 0 && SIMLSH_VERSION_PATCH < 100);
    CHECK(SIMLSH_VERSION_NUMBER == want[0] * 10000 + want[1] * 100 + want[2]);

    /* The run-time library == the header this test was compiled against. */
    unsigned num = simlsh_version_number();
    CHECK(num == (unsigned)SIMLSH_VERSION_NUMBER);
    CHECK(num / 10000 == (unsigned)want[0]);
    CHECK(num / 100 % 100 == (unsigned)want[1]);
    CHECK(num % 100 == (unsigned)want[2]);

    const char *str = simlsh_version_string();
    CHECK(str != NULL);
    if (str != NULL) {
        CHECK(strcmp(str, SIMLSH_EXPECTED_VERSION) == 0);
        long got[3] = {-1, -1, -1};
        CHECK(parse_version(str, got) == 0);
        CHECK(got[0] == SIMLSH_VERSION_MAJOR);
        CHECK(got[1] == SIMLSH_VERSION_MINOR);
        CHECK(got[2] == SIMLSH_VERSION_PATCH);
        /* static text: the same storage on every call */
        CHECK(simlsh_version_string() == str);
        char buf[64];
        snprintf(buf, sizeof buf, "%d.%d.%d", SIMLSH_VERSION_MAJOR, SIMLSH_VERSION_MINOR,
                 SIMLSH_VERSION_PATCH);
        CHECK(strcmp(str, buf) == 0);
    }
    printf("header %d.%d.%d (%d), library %s (%u), meson %s\n", SIMLSH_VERSION_MAJOR,
           SIMLSH_VERSION_MINOR, SIMLSH_VERSION_PATCH, SIMLSH_VERSION_NUMBER, str ? str : "(null)",
           num, SIMLSH_EXPECTED_VERSION);
}

int main(void)
{
    test_version_sources();
    return tu_finish("version");
}
