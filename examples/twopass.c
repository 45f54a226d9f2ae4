/*
 * Exact near-duplicate groups in bounded memory, in two passes:
 *  1. sign every document and index it; candidate pairs come from the index;
 *  2. in batches of at most MAX_DOCS documents, re-read the documents of
 *     each batch, keep the pairs whose exact Jaccard is >= the threshold,
 *     and free them; finally group the kept pairs into stars, which are
 *     safe to delete from: every member is near its group's first document.
 * Only signatures (in the index) and one batch of shingle sets are ever in
 * memory. The banding targets recall, since the exact check removes every
 * false candidate.
 *
 * The documents are generated, with planted near-duplicates; the program
 * checks that it finds exactly the planted groups.
 * Build out of tree: cc twopass.c $(pkg-config --cflags --libs simlsh)
 */
#include <simlsh.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != 0) {                                                       \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_));         \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#define NDOCS 300
#define WORDS 400
#define MAX_DOCS 4
#define THRESHOLD 0.8

/* Planted documents: a copy of `parent` with `rate` percent of its words
 * replaced. 31 -> 32 -> 33 is a chain whose ends are not near each other. */
static const struct { int id, parent, rate; } planted[] = {
    {50, 5, 2}, {120, 5, 3}, {121, 5, 2}, {122, 50, 1}, {18, 17, 2},
    {32, 31, 5}, {33, 32, 5}, {299, 200, 1},
};
/* The star groups of two or more, centre first. */
static const char expected[] = "5 50 120 121 122\n17 18\n31 32\n200 299\n";

static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Word p of document id: its own random word unless it copies a parent. */
static uint64_t word_seed(int id, int p)
{
    for (size_t i = 0; i < sizeof planted / sizeof planted[0]; i++)
        if (planted[i].id == id) {
            if (mix((uint64_t)id << 32 | (uint64_t)p) % 100 < (uint64_t)planted[i].rate)
                break;
            return word_seed(planted[i].parent, p);
        }
    return mix((uint64_t)id * 1000003 + (uint64_t)p + 1);
}

/* Stands for reading the document from its file. */
static size_t read_doc(char *buf, int id)
{
    size_t n = 0;
    for (int p = 0; p < WORDS; p++) {
        uint64_t s = word_seed(id, p);
        for (int len = 3 + (int)(s % 6); len > 0; len--, s /= 26)
            buf[n++] = (char)('a' + s % 26);
        buf[n++] = ' ';
    }
    return n;
}

static int cmp_id(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

int main(void)
{
    static char text[WORDS * 10];
    static uint64_t ea[NDOCS * 4], eb[NDOCS * 4];
    static double es[NDOCS * 4];
    simlsh_params *params;
    simlsh_signature *sig;
    simlsh_index *index;
    simlsh_results *cand, *batches, *groups;
    simlsh_shingleset *sets[MAX_DOCS];
    uint64_t ids[MAX_DOCS];
    uint32_t bands, rows;
    double p_at_t;
    size_t nbatches, nids, nedges = 0, ngroups;

    CHECK(simlsh_params_new(&params, NULL));
    CHECK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, THRESHOLD));
    CHECK(simlsh_lsh_optimal_params_recall(&bands, &rows, &p_at_t, 128, THRESHOLD, 0.99, 0.0));
    CHECK(simlsh_params_set_int(params, SIMLSH_PARAM_BANDS, bands));
    CHECK(simlsh_params_set_int(params, SIMLSH_PARAM_ROWS, rows));
    printf("%u bands x %u rows: P(candidate | J = %.2f) = %.4f\n", bands, rows, THRESHOLD, p_at_t);

    /* Pass 1: signatures only. */
    CHECK(simlsh_index_new(&index, params));
    CHECK(simlsh_signature_new(&sig, params));
    for (int id = 0; id < NDOCS; id++) {
        CHECK(simlsh_signature_clear(sig));
        CHECK(simlsh_signature_add_text(sig, text, read_doc(text, id)));
        CHECK(simlsh_index_insert(index, (uint64_t)id, sig));
    }
    CHECK(simlsh_results_new(&cand, NULL));
    CHECK(simlsh_index_pairs(cand, index, 0, 0));
    CHECK(simlsh_results_new(&batches, NULL));
    CHECK(simlsh_group_batches(batches, &nbatches, simlsh_results_a(cand),
                               simlsh_results_b(cand), NULL, simlsh_results_count(cand),
                               MAX_DOCS));
    printf("%zu candidate pairs in %zu batches\n", simlsh_results_count(cand), nbatches);

    /* Pass 2: one batch of exact shingle sets at a time. */
    for (size_t q = 0; q < nbatches; q++) {
        size_t lo, hi;
        CHECK(simlsh_group_batch_ids(ids, MAX_DOCS, &nids, batches, q));
        for (size_t i = 0; i < nids; i++) {
            CHECK(simlsh_shingleset_new(&sets[i], params));
            CHECK(simlsh_shingleset_add_text(sets[i], text, read_doc(text, (int)ids[i])));
        }
        CHECK(simlsh_results_offset(&lo, batches, q));
        CHECK(simlsh_results_offset(&hi, batches, q + 1));
        for (size_t row = lo; row < hi; row++) {
            uint64_t a = simlsh_results_a(batches)[row], b = simlsh_results_b(batches)[row];
            const uint64_t *ia = bsearch(&a, ids, nids, sizeof a, cmp_id);
            const uint64_t *ib = bsearch(&b, ids, nids, sizeof b, cmp_id);
            double j;
            CHECK(simlsh_shingleset_jaccard(&j, sets[ia - ids], sets[ib - ids]));
            if (j >= THRESHOLD) {
                if (nedges == NDOCS * 4)
                    return 1;
                ea[nedges] = a;
                eb[nedges] = b;
                es[nedges++] = j;
            }
            printf("  batch %zu: J(%llu, %llu) = %.4f%s\n", q, (unsigned long long)a,
                   (unsigned long long)b, j, j >= THRESHOLD ? "" : " (dropped)");
        }
        for (size_t i = 0; i < nids; i++)
            simlsh_shingleset_free(sets[i]);
    }

    /* Stars, centres by ascending id (input order here). */
    CHECK(simlsh_results_new(&groups, NULL));
    CHECK(simlsh_group_star(groups, &ngroups, ea, eb, es, nedges, NULL, 0));
    static char found[4096];
    size_t len = 0;
    for (size_t g = 0; g < ngroups; g++) {
        size_t lo, hi;
        CHECK(simlsh_results_offset(&lo, groups, g));
        CHECK(simlsh_results_offset(&hi, groups, g + 1));
        for (size_t r = lo; r < hi && hi - lo >= 2 && len < sizeof found - 32; r++)
            len += (size_t)snprintf(found + len, sizeof found - len, "%llu%c",
                                    (unsigned long long)simlsh_results_a(groups)[r],
                                    r + 1 < hi ? ' ' : '\n');
    }
    int ok = strcmp(found, expected) == 0;
    printf("groups:\n%s%s\n", found, ok ? "the planted groups, exactly" : "NOT the planted groups");

    simlsh_results_free(groups);
    simlsh_results_free(batches);
    simlsh_results_free(cand);
    simlsh_signature_free(sig);
    simlsh_index_free(index);
    simlsh_params_free(params);
    return ok ? 0 : 1;
}
