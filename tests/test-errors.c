/*
 * Error codes: the header's X-macro list, simlsh_strerror() and
 * simlsh_error_name() agree; every code is distinct and negative; released
 * values are frozen (the literal numbers below are the ABI, so renumbering
 * the list fails this test even though the library would still compile).
 */
#include <limits.h>

#include "testutil.h"

struct code {
    const char *name;
    int value;
    const char *msg;
};

/* Generated from the same list as the library, so every code is covered. */
static const struct code codes[] = {
#define X(name, value, msg) {#name, value, msg},
    SIMLSH_ERRNO_MAP(X)
#undef X
};
#define NCODES (sizeof codes / sizeof codes[0])

/* Released in 0.1.0. Never change a line here; only append new releases. */
static const struct code frozen[] = {
    {"EINVAL", -1, NULL},    {"ENOMEM", -2, NULL},       {"EMISMATCH", -3, NULL},
    {"ECORRUPT", -4, NULL},  {"EUNSUPPORTED", -5, NULL}, {"ENOTFOUND", -6, NULL},
    {"EEXIST", -7, NULL},    {"EEMPTY", -8, NULL},       {"EUTF8", -9, NULL},
    {"EBUFSIZE", -10, NULL}, {"ESTATE", -11, NULL},      {"EIO", -12, NULL},
};

static int is_code(int v)
{
    for (size_t i = 0; i < NCODES; i++)
        if (codes[i].value == v)
            return 1;
    return v == SIMLSH_OK;
}

/* The released codes keep their numbers and names. */
static void test_frozen_codes(void)
{
    /* The enum constants themselves carry the frozen numbers. */
    CHECK(SIMLSH_OK == 0);
    CHECK(SIMLSH_EINVAL == -1);
    CHECK(SIMLSH_ENOMEM == -2);
    CHECK(SIMLSH_EMISMATCH == -3);
    CHECK(SIMLSH_ECORRUPT == -4);
    CHECK(SIMLSH_EUNSUPPORTED == -5);
    CHECK(SIMLSH_ENOTFOUND == -6);
    CHECK(SIMLSH_EEXIST == -7);
    CHECK(SIMLSH_EEMPTY == -8);
    CHECK(SIMLSH_EUTF8 == -9);
    CHECK(SIMLSH_EBUFSIZE == -10);
    CHECK(SIMLSH_ESTATE == -11);
    CHECK(SIMLSH_EIO == -12);

    /* Every released code is still in the list with its name and value. */
    CHECK(NCODES >= sizeof frozen / sizeof frozen[0]);
    for (size_t f = 0; f < sizeof frozen / sizeof frozen[0]; f++) {
        int found = 0;
        for (size_t i = 0; i < NCODES; i++) {
            if (strcmp(codes[i].name, frozen[f].name) == 0) {
                found++;
                if (codes[i].value != frozen[f].value)
                    fprintf(stderr, "%s renumbered: %d, released as %d\n", codes[i].name,
                            codes[i].value, frozen[f].value);
                CHECK(codes[i].value == frozen[f].value);
            }
        }
        if (found != 1)
            fprintf(stderr, "released code %s appears %d times\n", frozen[f].name, found);
        CHECK(found == 1);
    }
}

/* Every code has its own static name and message. */
static void test_names_and_messages(void)
{
    for (size_t i = 0; i < NCODES; i++) {
        const struct code *c = &codes[i];
        CHECK(c->value < 0);
        CHECK(c->value > SIMLSH__ERRNO_DUMMY);
        for (size_t j = i + 1; j < NCODES; j++) {
            CHECK(codes[j].value != c->value);
            CHECK(strcmp(codes[j].name, c->name) != 0);
            CHECK(strcmp(codes[j].msg, c->msg) != 0);
        }
        const char *msg = simlsh_strerror(c->value);
        const char *name = simlsh_error_name(c->value);
        CHECK(msg != NULL);
        CHECK(name != NULL);
        if (msg == NULL || name == NULL)
            continue;
        if (strcmp(msg, c->msg) != 0 || strcmp(name, c->name) != 0)
            fprintf(stderr, "code %d: got %s \"%s\", want %s \"%s\"\n", c->value, name, msg,
                    c->name, c->msg);
        CHECK(strcmp(msg, c->msg) == 0);
        CHECK(strcmp(name, c->name) == 0);
        CHECK(msg[0] != '\0');
        CHECK(strncmp(name, "SIMLSH_", 7) != 0);
        /* static text: the same storage every time */
        CHECK(simlsh_strerror(c->value) == msg);
        CHECK(simlsh_error_name(c->value) == name);
        CHECK(strcmp(msg, "unknown error") != 0);
        CHECK(strcmp(name, "UNKNOWN") != 0);
    }
}

/* Success and values that are not codes. */
static void test_success_and_unknown(void)
{
    /* Success. */
    CHECK(simlsh_strerror(SIMLSH_OK) != NULL && strcmp(simlsh_strerror(SIMLSH_OK), "success") == 0);
    CHECK(simlsh_error_name(SIMLSH_OK) != NULL && strcmp(simlsh_error_name(SIMLSH_OK), "OK") == 0);

    /* Anything that is not a code, including the enum's sentinel. */
    const int unknown[] = {1,      2,       12,      100,
                           -13,    -100,    -9999,   SIMLSH__ERRNO_DUMMY,
                           -10001, INT_MAX, INT_MIN, INT_MIN + 1};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        int v = unknown[i];
        if (is_code(v))
            continue; /* a later release may assign it */
        const char *msg = simlsh_strerror(v), *name = simlsh_error_name(v);
        CHECK(msg != NULL && strcmp(msg, "unknown error") == 0);
        CHECK(name != NULL && strcmp(name, "UNKNOWN") == 0);
    }
    /* Sentinel and positive values can never become codes. */
    CHECK(strcmp(simlsh_error_name(SIMLSH__ERRNO_DUMMY), "UNKNOWN") == 0);
    CHECK(strcmp(simlsh_error_name(1), "UNKNOWN") == 0);
    CHECK(strcmp(simlsh_strerror(INT_MIN), "unknown error") == 0);
}

int main(void)
{
    test_frozen_codes();
    test_names_and_messages();
    test_success_and_unknown();
    return tu_finish("errors");
}
