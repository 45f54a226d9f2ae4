/* The dedup engine's sample test (SIMLSH_DEDUP_STAT_SAMPLED): in exact
 * mode, a pair whose estimate is 2 standard deviations below the threshold
 * or more is first compared on a hash-chosen sample of both sets; pairs
 * far below the threshold (a shared template, Jaccard about 0.6) are
 * rejected there, and a centre whose pairs all are gets no whole set.
 * Pairs at or just above the threshold are never lost: the groups are
 * those of whole comparisons (SIMLSH_DEDUP_PREFILTER 0), in batches and on threads. */
#include "testutil.h"

#define NPAIRS 48 /* planted pairs at Jaccard 0.80 .. 0.84 */
#define NDOUBT 12 /* ... the first ones with estimates far below 0.8 */
#define NTPL 160  /* documents sharing a template */
#define WORDS 420 /* words of a planted pair's text */
#define TPL_WORDS 300
#define NDOCS (2 * NPAIRS + NTPL)

static char *tx[NDOCS];
static size_t tl[NDOCS];
static simlsh_params *params;

static double jaccard_of(const char *a, size_t na, const char *b, size_t nb)
{
    simlsh_shingleset *x = NULL, *y = NULL;
    double j = -1;
    CHECK_OK(simlsh_shingleset_new(&x, params));
    CHECK_OK(simlsh_shingleset_new(&y, params));
    CHECK_OK(simlsh_shingleset_add_text(x, a, na));
    CHECK_OK(simlsh_shingleset_add_text(y, b, nb));
    CHECK_OK(simlsh_shingleset_jaccard(&j, x, y));
    simlsh_shingleset_free(x);
    simlsh_shingleset_free(y);
    return j;
}

/* A word of 4 to 9 random letters. */
static size_t put_word(tu_rng *r, char *out)
{
    size_t n = 4 + (size_t)tu_below(r, 6);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('a' + tu_below(r, 26));
    out[n] = ' ';
    return n + 1;
}

/* Text 2i + 1: text 2i with the words at the first m positions of a
 * random order replaced, m the most that keeps Jaccard >= 0.80 (found by
 * bisection); 0 when no m gives 0.80 .. 0.84. */
static int plant_pair(tu_rng *r, size_t i)
{
    char *a = tx[2 * i], *b = tx[2 * i + 1];
    size_t start[WORDS + 1], pos[WORDS];
    size_t n = 0;
    for (size_t w = 0; w < WORDS; w++) {
        start[w] = n;
        n += put_word(r, a + n);
    }
    start[WORDS] = n;
    tl[2 * i] = n;
    for (size_t w = 0; w < WORDS; w++)
        pos[w] = w;
    for (size_t w = WORDS - 1; w > 0; w--) {
        size_t k = (size_t)tu_below(r, w + 1), t = pos[w];
        pos[w] = pos[k];
        pos[k] = t;
    }
    char repl[WORDS][12];
    for (size_t w = 0; w < WORDS; w++)
        repl[w][put_word(r, repl[w]) - 1] = 0;
    size_t lo = 0, hi = WORDS / 2;
    double j = 0;
    while (lo < hi) { /* the largest m with J >= 0.80 */
        size_t m = (lo + hi + 1) / 2;
        uint8_t *out = calloc(WORDS, 1);
        for (size_t k = 0; k < m; k++)
            out[pos[k]] = 1;
        size_t nb = 0;
        for (size_t w = 0; w < WORDS; w++) {
            if (out[w]) {
                nb += (size_t)sprintf(b + nb, "%s ", repl[w]);
            } else {
                memcpy(b + nb, a + start[w], start[w + 1] - start[w]);
                nb += start[w + 1] - start[w];
            }
        }
        free(out);
        tl[2 * i + 1] = nb;
        j = jaccard_of(a, tl[2 * i], b, nb);
        if (j >= 0.80)
            lo = m;
        else
            hi = m - 1;
    }
    /* rebuild at lo (the last text made may be lo + 1's) */
    size_t nb = 0;
    for (size_t w = 0; w < WORDS; w++) {
        int gone = 0;
        for (size_t k = 0; k < lo; k++)
            gone |= pos[k] == w;
        if (gone) {
            nb += (size_t)sprintf(b + nb, "%s ", repl[w]);
        } else {
            memcpy(b + nb, a + start[w], start[w + 1] - start[w]);
            nb += start[w + 1] - start[w];
        }
    }
    tl[2 * i + 1] = nb;
    j = jaccard_of(a, tl[2 * i], b, nb);
    return j >= 0.80 && j <= 0.84;
}

/* The estimate of texts a and b. */
static double estimate_of(size_t a, size_t b)
{
    simlsh_signature *x = NULL, *y = NULL;
    double e = -1;
    CHECK_OK(simlsh_signature_new(&x, params));
    CHECK_OK(simlsh_signature_new(&y, params));
    CHECK_OK(simlsh_signature_add_text(x, tx[a], tl[a]));
    CHECK_OK(simlsh_signature_add_text(y, tx[b], tl[b]));
    CHECK_OK(simlsh_signature_jaccard(&e, x, y));
    simlsh_signature_free(x);
    simlsh_signature_free(y);
    return e;
}

/* The estimate under which the engine samples a pair: 2 standard
 * deviations below the threshold (dedup/internal.h). */
static double doubt_below(void)
{
    return 0.8 - 2 * sqrt(0.8 * 0.2 / 128);
}

/* An index of texts t[0 .. n) (ids 0 .. n) under p. */
static simlsh_index *index_of(const simlsh_params *p, char *const *t, const size_t *len, size_t n)
{
    simlsh_index *ix = NULL;
    simlsh_signature *sig = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_signature_new(&sig, p));
    for (size_t i = 0; i < n; i++) {
        simlsh_signature_clear(sig);
        CHECK_OK(simlsh_signature_add_text(sig, t[i], len[i]));
        CHECK_OK(simlsh_index_insert(ix, i, sig));
    }
    simlsh_signature_free(sig);
    return ix;
}

static void make_corpus(void)
{
    tu_rng r = {2027};
    for (size_t i = 0; i < NDOCS; i++)
        tx[i] = malloc(16 * (WORDS > TPL_WORDS ? WORDS : TPL_WORDS) + 64);
    int planted = 0;
    for (size_t i = 0; i < NPAIRS; i++)
        for (int tries = 0; tries < 2000; tries++) {
            /* the first NDOUBT: pairs the sample test sees (one in 60) */
            int ok = plant_pair(&r, i);
            if (ok && (i >= NDOUBT || estimate_of(2 * i, 2 * i + 1) < doubt_below())) {
                planted++;
                break;
            }
        }
    CHECK(planted == NPAIRS);
    /* the template: each document replaces 12 % of its words */
    char tpl[TPL_WORDS][12];
    for (size_t w = 0; w < TPL_WORDS; w++)
        tpl[w][put_word(&r, tpl[w]) - 1] = 0;
    for (size_t d = 0; d < NTPL; d++) {
        char *t = tx[2 * NPAIRS + d];
        size_t n = 0;
        for (size_t w = 0; w < TPL_WORDS; w++) {
            if (tu_below(&r, 100) < 12)
                n += put_word(&r, t + n);
            else
                n += (size_t)sprintf(t + n, "%s ", tpl[w]);
        }
        tl[2 * NPAIRS + d] = n;
    }
    double j = jaccard_of(tx[2 * NPAIRS], tl[2 * NPAIRS], tx[2 * NPAIRS + 1], tl[2 * NPAIRS + 1]);
    CHECK(j > 0.45 && j < 0.7);
}

/* The engine's groups as (member, centre) over all ids; centre of a lone
 * document: itself. */
static void groups_of(const simlsh_results *g, uint64_t *centre)
{
    for (size_t i = 0; i < NDOCS; i++)
        centre[i] = i;
    size_t nq = 0, rows = 0;
    while (simlsh_results_offset(&rows, g, nq + 1) == 0)
        nq++;
    for (size_t q = 0; q < nq; q++) {
        size_t lo, hi;
        simlsh_results_offset(&lo, g, q);
        simlsh_results_offset(&hi, g, q + 1);
        for (size_t k = lo; k < hi; k++)
            centre[simlsh_results_a(g)[k]] = simlsh_results_b(g)[k];
    }
}

static int g_mode = SIMLSH_DEDUP_EXACT; /* run()'s */
static double g_sample_memory = -1;     /* run()'s SIMLSH_DEDUP_SAMPLE_MEMORY; < 0: the default */
static uint64_t g_texts;                /* run()'s SIMLSH_DEDUP_STAT_TEXTS */

/* Run the engine (texts handed over one at a time, in the asked order);
 * prefilter < 0: the default. */
static void run(const simlsh_index *ix, double t, double prefilter, double memory, int threads,
                uint64_t *centre, uint64_t *sampled, uint64_t *exact)
{
    simlsh_dedup *d = NULL;
    simlsh_results *need = NULL, *g = NULL;
    CHECK_OK(simlsh_results_new(&need, NULL));
    CHECK_OK(simlsh_results_new(&g, NULL));
    CHECK_OK(simlsh_dedup_new(&d, ix, g_mode, t));
    if (prefilter >= 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_PREFILTER, prefilter));
    if (memory > 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, memory));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, threads));
    if (g_sample_memory >= 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, g_sample_memory));
    for (;;) {
        CHECK_OK(simlsh_dedup_next(need, d, ix));
        size_t n = simlsh_results_count(need);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            uint64_t id = simlsh_results_a(need)[i];
            const void *p = tx[id];
            CHECK_OK(simlsh_dedup_texts(d, &id, &p, &tl[id], 1));
        }
    }
    CHECK_OK(simlsh_dedup_groups(g, NULL, d));
    groups_of(g, centre);
    CHECK_OK(simlsh_dedup_stat(sampled, d, SIMLSH_DEDUP_STAT_SAMPLED));
    CHECK_OK(simlsh_dedup_stat(exact, d, SIMLSH_DEDUP_STAT_EXACT));
    CHECK_OK(simlsh_dedup_stat(&g_texts, d, SIMLSH_DEDUP_STAT_TEXTS));
    simlsh_dedup_free(d);
    simlsh_results_free(need);
    simlsh_results_free(g);
}

/* A chain: each text a near-copy of the one before (12 words of 400
 * changed), so a text is near its neighbours but not those two steps
 * away. The star claims a centre's near-copies, and a later centre must
 * not claim them again: the walk's lists, made ahead of time on threads
 * (ahead.c), drop the documents placed since. Every mode, one thread
 * against two and four. */
static void chain(void)
{
    tu_rng r = {99};
    size_t n = 0;
    char *t = tx[0];
    for (size_t w = 0; w < WORDS; w++)
        n += put_word(&r, t + n);
    tl[0] = n;
    for (size_t i = 1; i < NDOCS; i++) {
        /* the words of text i - 1, 12 of them replaced */
        char words[WORDS][12];
        size_t at = 0;
        for (size_t w = 0; w < WORDS; w++) {
            size_t e = at;
            while (tx[i - 1][e] != ' ')
                e++;
            memcpy(words[w], tx[i - 1] + at, e - at);
            words[w][e - at] = 0;
            at = e + 1;
        }
        for (int k = 0; k < 12; k++) {
            size_t w = (size_t)tu_below(&r, WORDS);
            words[w][put_word(&r, words[w]) - 1] = 0;
        }
        n = 0;
        for (size_t w = 0; w < WORDS; w++)
            n += (size_t)sprintf(tx[i] + n, "%s ", words[w]);
        tl[i] = n;
    }
    simlsh_index *ix = index_of(params, tx, tl, NDOCS);
    static uint64_t one[NDOCS], more[NDOCS];
    const int modes[] = {SIMLSH_DEDUP_ESTIMATE, SIMLSH_DEDUP_EXACT, SIMLSH_DEDUP_NONE};
    for (size_t m = 0; m < 3; m++) {
        uint64_t s, e;
        g_mode = modes[m];
        run(ix, 0.8, -1, 0, 1, one, &s, &e);
        size_t centres = 0;
        for (size_t i = 0; i < NDOCS; i++)
            centres += one[i] == i;
        CHECK(centres > 10 && centres < NDOCS / 2); /* groups of a few links */
        for (int threads = 2; threads <= 4; threads *= 2) {
            run(ix, 0.8, -1, 0, threads, more, &s, &e);
            CHECK(memcmp(one, more, sizeof one) == 0);
        }
    }
    g_mode = SIMLSH_DEDUP_EXACT;
    simlsh_index_free(ix);
}

/* Samples kept between batches (SIMLSH_DEDUP_SAMPLE_MEMORY): in small
 * batches, and with a prefilter of 0.5 that lets most of the template's
 * pairs through, its documents come back as candidates of centre after
 * centre; with their samples kept, those pairs are rejected before
 * their texts are asked for again. The groups are those of whole
 * comparisons (want) with samples kept or not, on one thread or two, with
 * 32- and 64-bit hashes; fewer texts are asked for; a budget too small
 * for one chunk of samples keeps none. */
static void kept(const simlsh_index *ix, const uint64_t *want)
{
    static uint64_t got[NDOCS];
    uint64_t s0 = 0, s1 = 0, e = 0, texts_none = 0, texts_kept = 0;
    for (int threads = 1; threads <= 2; threads++) {
        g_sample_memory = 0;
        run(ix, 0.8, 0.5, 8 * 1024, threads, got, &s0, &e);
        CHECK(memcmp(got, want, sizeof got) == 0);
        texts_none = g_texts;
        g_sample_memory = -1;
        run(ix, 0.8, 0.5, 8 * 1024, threads, got, &s1, &e);
        CHECK(memcmp(got, want, sizeof got) == 0);
        texts_kept = g_texts;
        /* the template's pairs, read again and again without samples */
        CHECK(s0 > 0 && s1 >= s0);
        CHECK(texts_kept * 3 < texts_none * 2);
        g_sample_memory = 1024; /* less than a chunk */
        run(ix, 0.8, 0.5, 8 * 1024, threads, got, &s1, &e);
        CHECK(memcmp(got, want, sizeof got) == 0);
        CHECK(g_texts == texts_none);
    }
    fprintf(stderr, "texts asked for: %llu without kept samples, %llu with\n",
            (unsigned long long)texts_none, (unsigned long long)texts_kept);
    g_sample_memory = -1;

    /* 64-bit hashes: samples of two words a value */
    simlsh_params *p64 = NULL;
    CHECK_OK(simlsh_params_copy(&p64, params));
    CHECK_OK(simlsh_params_set_int(p64, SIMLSH_PARAM_HASH_BITS, 64));
    simlsh_index *ix64 = index_of(p64, tx, tl, NDOCS);
    static uint64_t whole64[NDOCS];
    run(ix64, 0.8, 0, 8 * 1024, 1, whole64, &s0, &e);
    g_sample_memory = 0;
    run(ix64, 0.8, 0.5, 8 * 1024, 2, got, &s0, &e);
    CHECK(memcmp(got, whole64, sizeof got) == 0);
    texts_none = g_texts;
    g_sample_memory = -1;
    run(ix64, 0.8, 0.5, 8 * 1024, 2, got, &s1, &e);
    CHECK(memcmp(got, whole64, sizeof got) == 0);
    CHECK(g_texts * 3 < texts_none * 2);
    simlsh_index_free(ix64);
    simlsh_params_free(p64);
}

/* Kept samples must not reject a pair at the threshold: each planted pair
 * whose estimate the sample test sees (Jaccard 0.80 .. 0.84) follows a
 * decoy, its first text with 15 % of the words replaced (Jaccard about
 * 0.65 with both). The decoy is the first centre: both texts are put to
 * the sample test against it, rejected, and leave their samples; then the
 * pair itself is put to the test on those samples, which must leave it to
 * the texts. The groups are those of whole comparisons. */
static void kept_decoys(void)
{
    enum {
        N = 3 * NDOUBT
    };
    static char *t[N];
    static size_t n[N];
    tu_rng r = {77};
    for (size_t i = 0; i < NDOUBT; i++) {
        t[3 * i] = malloc(16 * WORDS + 64);
        t[3 * i + 1] = tx[2 * i];
        t[3 * i + 2] = tx[2 * i + 1];
        n[3 * i + 1] = tl[2 * i];
        n[3 * i + 2] = tl[2 * i + 1];
        size_t k = 0;
        for (size_t at = 0; at < tl[2 * i];) {
            size_t e = at;
            while (tx[2 * i][e] != ' ')
                e++;
            if (tu_below(&r, 100) < 15) {
                k += put_word(&r, t[3 * i] + k);
            } else {
                memcpy(t[3 * i] + k, tx[2 * i] + at, e - at + 1);
                k += e - at + 1;
            }
            at = e + 1;
        }
        n[3 * i] = k;
    }
    simlsh_index *ix = index_of(params, t, n, N);
    /* run() hands over tx[id]: the decoys' corpus in its place for now */
    static char *keep_tx[N];
    static size_t keep_tl[N];
    memcpy(keep_tx, tx, sizeof keep_tx);
    memcpy(keep_tl, tl, sizeof keep_tl);
    memcpy(tx, t, sizeof t);
    memcpy(tl, n, sizeof n);
    static uint64_t whole[NDOCS], got[NDOCS];
    uint64_t s = 0, e = 0;
    run(ix, 0.8, 0, 0, 1, whole, &s, &e);
    int pairs = 0;
    for (size_t i = 0; i < NDOUBT; i++)
        pairs += whole[3 * i + 2] == 3 * i + 1;
    CHECK(pairs >= NDOUBT - 2);
    for (int threads = 1; threads <= 2; threads++) {
        run(ix, 0.8, 0.5, 8 * 1024, threads, got, &s, &e);
        CHECK(memcmp(got, whole, sizeof got) == 0);
        CHECK(s >= NDOUBT / 2); /* decoys' pairs rejected from samples */
    }
    memcpy(tx, keep_tx, sizeof keep_tx);
    memcpy(tl, keep_tl, sizeof keep_tl);
    for (size_t i = 0; i < NDOUBT; i++)
        free(t[3 * i]);
    simlsh_index_free(ix);
}

/* Kept samples in a crowd near the threshold: documents that each replace
 * about 5 % of a template's words, so that pairs fall on both sides of
 * 0.8, and a prefilter of 0.5 that puts many of them to the sample test.
 * In small batches a document meets centre after centre with its sample
 * kept, so samples that are not the document's, or not whole at a level,
 * would reject pairs its text keeps. The groups are those of whole
 * comparisons, with samples kept or not. */
static void kept_near(void)
{
    tu_rng r = {4242};
    char tpl[TPL_WORDS][12];
    for (size_t w = 0; w < TPL_WORDS; w++)
        tpl[w][put_word(&r, tpl[w]) - 1] = 0;
    for (size_t d = 0; d < NDOCS; d++) {
        size_t n = 0;
        for (size_t w = 0; w < TPL_WORDS; w++) {
            if (tu_below(&r, 1000) < 55)
                n += put_word(&r, tx[d] + n);
            else
                n += (size_t)sprintf(tx[d] + n, "%s ", tpl[w]);
        }
        tl[d] = n;
    }
    simlsh_index *ix = index_of(params, tx, tl, NDOCS);
    static uint64_t whole[NDOCS], got[NDOCS];
    uint64_t s = 0, e = 0;
    run(ix, 0.8, 0, 0, 1, whole, &s, &e);
    size_t centres = 0;
    for (size_t i = 0; i < NDOCS; i++)
        centres += whole[i] == i;
    CHECK(centres > 16 && centres < NDOCS - 16); /* pairs on both sides */
    for (int threads = 1; threads <= 2; threads++) {
        run(ix, 0.8, 0.5, 8 * 1024, threads, got, &s, &e);
        CHECK(memcmp(got, whole, sizeof got) == 0);
    }
    simlsh_index_free(ix);
}

int main(void)
{
    CHECK_OK(simlsh_params_new(&params, NULL));
    CHECK_OK(simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.8));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_BANDS, 16));
    CHECK_OK(simlsh_params_set_int(params, SIMLSH_PARAM_ROWS, 6));
    make_corpus();
    simlsh_index *ix = index_of(params, tx, tl, NDOCS);
    simlsh_signature *sig = NULL, *other = NULL;
    CHECK_OK(simlsh_signature_new(&sig, params));
    CHECK_OK(simlsh_signature_new(&other, params));
    /* planted pairs whose estimate is below the threshold go through the
     * sample; the test means something only if there are such pairs */
    int doubtful = 0;
    for (size_t i = 0; i < NPAIRS; i++) {
        double e = 0;
        simlsh_signature_clear(sig);
        simlsh_signature_clear(other);
        CHECK_OK(simlsh_signature_add_text(sig, tx[2 * i], tl[2 * i]));
        CHECK_OK(simlsh_signature_add_text(other, tx[2 * i + 1], tl[2 * i + 1]));
        CHECK_OK(simlsh_signature_jaccard(&e, sig, other));
        doubtful += e < doubt_below();
    }
    CHECK(doubtful >= NDOUBT);

    static uint64_t whole[NDOCS], got[NDOCS];
    uint64_t s_whole = 0, s_got = 0, e_whole = 0, e_got = 0;
    run(ix, 0.8, 0, 0, 1, whole, &s_whole, &e_whole);
    CHECK(s_whole == 0); /* prefilter 0: every pair compared whole */
    /* the corpus is what it says: LSH misses a pair at 0.80 with p 0.008 */
    int found = 0;
    for (size_t i = 0; i < NPAIRS; i++)
        found += whole[2 * i + 1] == 2 * i && whole[2 * i] == 2 * i;
    CHECK(found >= NPAIRS - 3);
    for (size_t d = 2 * NPAIRS; d < NDOCS; d++)
        CHECK(whole[d] == d);

    /* the default: template pairs rejected from their samples, the same
     * groups; in one batch or many, on one thread or two */
    const double memory[] = {0, 64 * 1024, 8 * 1024};
    for (size_t m = 0; m < sizeof memory / sizeof *memory; m++) {
        for (int threads = 1; threads <= 2; threads++) {
            run(ix, 0.8, -1, memory[m], threads, got, &s_got, &e_got);
            CHECK(memcmp(got, whole, sizeof got) == 0);
            CHECK(s_got > 0 && s_got <= e_got);
            if (memory[m] == 0 && threads == 1)
                fprintf(stderr, "sampled %llu of %llu exact decisions\n", (unsigned long long)s_got,
                        (unsigned long long)e_got);
        }
    }

    kept(ix, whole);

    /* threshold 1: any sampled shingle not shared rejects, and copies
     * still group */
    memcpy(tx[2 * NPAIRS + 1], tx[2 * NPAIRS], tl[2 * NPAIRS]);
    tl[2 * NPAIRS + 1] = tl[2 * NPAIRS];
    simlsh_index *ix1 = index_of(params, tx, tl, NDOCS);
    run(ix1, 1.0, 0, 0, 1, whole, &s_whole, &e_whole);
    run(ix1, 1.0, -1, 0, 2, got, &s_got, &e_got);
    CHECK(memcmp(got, whole, sizeof got) == 0);
    CHECK(got[2 * NPAIRS + 1] == 2 * NPAIRS);
    for (size_t i = 0; i < NPAIRS; i++)
        CHECK(got[2 * i + 1] == 2 * i + 1);

    simlsh_index_free(ix1);
    kept_decoys();
    chain();
    kept_near();
    simlsh_signature_free(sig);
    simlsh_signature_free(other);
    simlsh_index_free(ix);
    simlsh_params_free(params);
    for (size_t i = 0; i < NDOCS; i++)
        free(tx[i]);
    return tu_finish("test-dedup-sample");
}
