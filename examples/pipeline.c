/*
 * The three-object pipeline in the fewest lines: params (the hash contract)
 * -> one MinHash signature per document -> an LSH index to query.
 *
 * Build out of tree: cc pipeline.c $(pkg-config --cflags --libs simlsh)
 * examples/pipeline.py does the same through ctypes and prints the same text.
 */
#include <simlsh.h>

#include <stdio.h>
#include <string.h>

/* Stop at the first failing call, naming it; an example has nothing to
 * clean up that the process exit would not. */
#define CHECK(call)                                                   \
    do {                                                              \
        int rc_ = (call);                                             \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_)); \
            return 1;                                                 \
        }                                                             \
    } while (0)

static const char *const docs[] = {
    "The quick brown fox jumps over the lazy dog by the river bank.",
    "The quick brown fox jumped over the lazy dog by the river bank.",
    "MinHash estimates the Jaccard similarity of two sets of shingles.",
};
#define NDOCS (sizeof docs / sizeof docs[0])

int main(void)
{
    simlsh_params *params;
    simlsh_signature *sig[NDOCS];
    simlsh_index *index;
    simlsh_results *res;
    uint32_t bands, rows;
    double j;

    CHECK(simlsh_params_new(&params, NULL)); /* defaults: char 5-shingles, 128 values */
    CHECK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.5));
    CHECK(simlsh_index_new(&index, params)); /* (bands, rows) chosen for 0.5 */
    for (size_t i = 0; i < NDOCS; i++) {
        CHECK(simlsh_signature_new(&sig[i], params));
        CHECK(simlsh_signature_add_text(sig[i], docs[i], strlen(docs[i])));
        CHECK(simlsh_index_insert(index, i, sig[i]));
    }

    CHECK(simlsh_index_bands(&bands, &rows, index));
    printf("simlsh %s: %u bands x %u rows\n", simlsh_version_string(), bands, rows);
    for (size_t i = 1; i < NDOCS; i++) {
        CHECK(simlsh_signature_jaccard(&j, sig[0], sig[i]));
        printf("estimated jaccard(0, %zu) = %.4f\n", i, j);
    }

    CHECK(simlsh_results_new(&res, NULL));
    CHECK(simlsh_index_query(res, index, sig[0], SIMLSH_QUERY_VERIFY));
    printf("near-duplicates of 0:");
    for (size_t i = 0; i < simlsh_results_count(res); i++) {
        uint64_t id;
        double score;
        CHECK(simlsh_results_row(res, i, &id, NULL, &score));
        printf(" %llu (%.4f)", (unsigned long long)id, score);
    }
    printf("\n");

    simlsh_results_free(res);
    for (size_t i = 0; i < NDOCS; i++)
        simlsh_signature_free(sig[i]);
    simlsh_index_free(index);
    simlsh_params_free(params);
    return 0;
}
