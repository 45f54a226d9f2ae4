/*
 * Persistence: build an index, save it to a file, load it back (as a later
 * run would) and query it. Loading checks the magic, version, lengths and
 * checksum, so a truncated or foreign file is an error, not a crash.
 *
 * Usage: persist [INDEX-FILE]   (default: a temporary file, removed after)
 */
#include <simlsh.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                   \
    do {                                                              \
        int rc_ = (call);                                             \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_)); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

static const char *const docs[] = {
    "It was the best of times, it was the worst of times, it was the age of wisdom.",
    "It was the best of times, it was the worst of times, it was the age of foolishness.",
    "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.",
    "All happy families are alike; each unhappy family is unhappy in its own way.",
};
#define NDOCS (sizeof docs / sizeof docs[0])

static simlsh_signature *sign(const simlsh_params *params, const char *text)
{
    simlsh_signature *sig;
    CHECK(simlsh_signature_new(&sig, params));
    CHECK(simlsh_signature_add_text(sig, text, strlen(text)));
    return sig;
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/simlsh-persist-XXXXXX";
    const char *path = argc > 1 ? argv[1] : NULL;
    if (!path) {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            perror("mkstemp");
            return 1;
        }
        close(fd);
        path = tmp;
    }

    simlsh_params *params;
    simlsh_index *index, *loaded;
    CHECK(simlsh_params_new(&params, NULL));
    CHECK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.6));
    CHECK(simlsh_index_new(&index, params));
    for (size_t i = 0; i < NDOCS; i++) {
        simlsh_signature *sig = sign(params, docs[i]);
        CHECK(simlsh_index_insert(index, 100 + i, sig)); /* the index copies it */
        simlsh_signature_free(sig);
    }
    CHECK(simlsh_index_save_file(index, path));

    /* A later run: only the file and the params (to sign queries) remain. */
    CHECK(simlsh_index_load_file(&loaded, path, NULL));
    size_t count;
    uint64_t fp_saved, fp_loaded;
    CHECK(simlsh_index_count(&count, loaded));
    CHECK(simlsh_index_fingerprint(&fp_saved, index));
    CHECK(simlsh_index_fingerprint(&fp_loaded, loaded));
    printf("saved and loaded %zu documents; contract %s\n", count,
           fp_saved == fp_loaded ? "matches" : "DIFFERS");

    simlsh_signature *q = sign(params, "It was the best of times, it was the worst of "
                                       "times, it was the age of wisdom!");
    simlsh_results *a, *b;
    CHECK(simlsh_results_new(&a, NULL));
    CHECK(simlsh_results_new(&b, NULL));
    CHECK(simlsh_index_query(a, index, q, SIMLSH_QUERY_VERIFY));
    CHECK(simlsh_index_query(b, loaded, q, SIMLSH_QUERY_VERIFY));
    int same = simlsh_results_count(a) == simlsh_results_count(b);
    printf("query on the loaded index:");
    for (size_t i = 0; i < simlsh_results_count(b); i++) {
        uint64_t id, id0 = 0;
        double s, s0 = 0;
        CHECK(simlsh_results_row(b, i, &id, NULL, &s));
        if (i < simlsh_results_count(a))
            CHECK(simlsh_results_row(a, i, &id0, NULL, &s0));
        same = same && id == id0 && s == s0;
        printf(" %llu (%.4f)", (unsigned long long)id, s);
    }
    printf("\n%s\n", same ? "same results as before saving" : "RESULTS DIFFER");

    simlsh_results_free(a);
    simlsh_results_free(b);
    simlsh_signature_free(q);
    simlsh_index_free(index);
    simlsh_index_free(loaded);
    simlsh_params_free(params);
    if (path == tmp)
        remove(tmp);
    return same && fp_saved == fp_loaded && count == NDOCS ? 0 : 1;
}
