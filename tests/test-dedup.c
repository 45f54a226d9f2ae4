/* The dedup engine (simlsh_dedup_*): its groups are the star of
 * simlsh_group_star() over the candidate pairs of simlsh_index_pairs_v2(),
 * verified (by estimate, or exactly with shingle sets), in every mode, with
 * any priority, kept ids, batch size, thread count and order of handing
 * texts over; and every bad call is refused without changing anything. */
#include "testutil.h"

#define NDOCS 700
#define WORDS 60

static char *texts[NDOCS];
static size_t lens[NDOCS];

static const char *vocab(tu_rng *r)
{
    static const char *w[] = {"alpha",  "bravo", "charlie", "delta",  "echo",   "foxtrot",
                              "golf",   "hotel", "india",   "juliet", "kilo",   "lima",
                              "mike",   "nov",   "oscar",   "papa",   "quebec", "romeo",
                              "sierra", "tango", "uniform", "victor", "whisky", "xray",
                              "yankee", "zulu",  "one",     "two",    "three",  "four"};
    return w[tu_below(r, sizeof w / sizeof *w)];
}

/* A text of random words with a number mixed in, so texts differ a lot. */
static void random_text(tu_rng *r, char *buf, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < WORDS; i++) {
        /* in this order (as GCC evaluates the arguments): the same
         * corpus from every compiler */
        unsigned long long k = tu_below(r, 1000);
        n += (size_t)snprintf(buf + n, cap - n, "%s%llu ", vocab(r), k);
    }
}

/* Groups of near-duplicates of several sizes (a few words changed), some
 * exact copies, a template shared by a block of documents, and unrelated
 * texts; ids 0 .. NDOCS-1 in a shuffled order. */
static void make_corpus(void)
{
    tu_rng r = {42};
    char base[4096];
    size_t id = 0;
    static const int sizes[] = {120, 40, 40, 10, 10, 10, 5, 5, 3, 3, 2, 2, 2};
    size_t order[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        order[i] = i;
    for (size_t i = NDOCS - 1; i > 0; i--) {
        size_t j = tu_below(&r, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t g = 0; g < sizeof sizes / sizeof *sizes; g++) {
        random_text(&r, base, sizeof base);
        for (int k = 0; k < sizes[g]; k++) {
            char *t = malloc(4096);
            strcpy(t, base);
            /* copies for the first members of even groups; edits otherwise */
            if (!(g % 2 == 0 && k < 3)) {
                int edits = 1 + (int)tu_below(&r, 6);
                for (int e = 0; e < edits; e++)
                    t[tu_below(&r, strlen(t))] = (char)('a' + tu_below(&r, 26));
            }
            size_t d = order[id++];
            texts[d] = t;
        }
    }
    /* a template: 70 % of the words shared by a block of documents */
    char tmpl[4096];
    random_text(&r, tmpl, sizeof tmpl);
    for (int k = 0; k < 150; k++) {
        char *t = malloc(4096);
        size_t n = 0;
        const char *p = tmpl;
        for (int w = 0; w < WORDS; w++) {
            const char *e = strchr(p, ' ');
            if (tu_below(&r, 10) < 7)
                n += (size_t)snprintf(t + n, 4096 - n, "%.*s ", (int)(e - p), p);
            else {
                unsigned long long num = tu_below(&r, 1000); /* (see random_text) */
                n += (size_t)snprintf(t + n, 4096 - n, "%s%llu ", vocab(&r), num);
            }
            p = e + 1;
        }
        texts[order[id++]] = t;
    }
    while (id < NDOCS) {
        char *t = malloc(4096);
        random_text(&r, t, 4096);
        texts[order[id++]] = t;
    }
    for (size_t i = 0; i < NDOCS; i++)
        lens[i] = strlen(texts[i]);
}

static simlsh_params *params;
static simlsh_index *idx;
static double g_t = 0.8;                  /* the threshold of check_mode() */
static double g_prefilter = -1;           /* exact mode's prefilter; < 0: the default */
static int g_cluster = SIMLSH_DEDUP_STAR; /* the grouping of check_mode() */
static int g_link_kept = 1;               /* components: kept pairs link */

/* The expected rows of the components (simlsh_dedup_groups()'s layout),
 * filled by reference() when g_cluster is SIMLSH_DEDUP_COMPONENTS. */
static uint64_t comp_a[NDOCS], comp_b[NDOCS];
static double comp_s[NDOCS];
static size_t comp_rows;

static size_t uf(size_t *p, size_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* Components of the edges a-b, each led by its first id in the priority
 * order (order, then ascending ids), into comp_*. */
static void components_of(const uint64_t *a, const uint64_t *b, size_t m, const uint64_t *order,
                          size_t norder)
{
    size_t parent[NDOCS], rank[NDOCS], by_rank[NDOCS], r = 0;
    for (size_t i = 0; i < NDOCS; i++) {
        parent[i] = i;
        rank[i] = SIZE_MAX;
    }
    for (size_t i = 0; i < m; i++) {
        size_t x = uf(parent, a[i]), y = uf(parent, b[i]);
        if (x != y)
            parent[x < y ? y : x] = x < y ? x : y;
    }
    for (size_t i = 0; i < norder; i++)
        if (order[i] < NDOCS && rank[order[i]] == SIZE_MAX)
            rank[order[i]] = r++;
    for (size_t i = 0; i < NDOCS; i++)
        if (rank[i] == SIZE_MAX)
            rank[i] = r++;
    for (size_t i = 0; i < NDOCS; i++)
        by_rank[rank[i]] = i;
    size_t size[NDOCS] = {0}, lead[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        size[uf(parent, i)]++;
    for (size_t i = 0; i < NDOCS; i++)
        lead[i] = SIZE_MAX;
    for (size_t k = 0; k < NDOCS; k++) {
        size_t s = by_rank[k], root = uf(parent, s);
        if (lead[root] == SIZE_MAX)
            lead[root] = s;
    }
    comp_rows = 0;
    for (size_t k = 0; k < NDOCS; k++) { /* groups in their leaders' order */
        size_t s = by_rank[k], root = uf(parent, s);
        if (lead[root] != s || size[root] < 2)
            continue;
        comp_a[comp_rows] = comp_b[comp_rows] = s;
        comp_s[comp_rows++] = 1.0;
        for (size_t q = 0; q < NDOCS; q++) {
            size_t t = by_rank[q];
            if (t != s && uf(parent, t) == root) {
                comp_a[comp_rows] = t;
                comp_b[comp_rows] = s;
                comp_s[comp_rows++] = -1.0;
            }
        }
    }
}

static simlsh_params *make_params(const simlsh_allocator *al)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, al));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.8));
    /* banding for recall, so that many candidates fall below the threshold */
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 16));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 6));
    return p;
}

static void build_index(void)
{
    params = make_params(NULL);
    CHECK_OK(simlsh_index_new(&idx, params));
    simlsh_signature *sig = NULL;
    CHECK_OK(simlsh_signature_new(&sig, params));
    for (size_t i = 0; i < NDOCS; i++) {
        simlsh_signature_clear(sig);
        CHECK_OK(simlsh_signature_add_text(sig, texts[i], lens[i]));
        CHECK_OK(simlsh_index_insert(idx, i, sig));
    }
    simlsh_signature_free(sig);
}

static double exact_jaccard(uint64_t a, uint64_t b)
{
    simlsh_shingleset *x = NULL, *y = NULL;
    double j = -1;
    CHECK_OK(simlsh_shingleset_new(&x, params));
    CHECK_OK(simlsh_shingleset_new(&y, params));
    CHECK_OK(simlsh_shingleset_add_text(x, texts[a], lens[a]));
    CHECK_OK(simlsh_shingleset_add_text(y, texts[b], lens[b]));
    CHECK_OK(simlsh_shingleset_jaccard(&j, x, y));
    simlsh_shingleset_free(x);
    simlsh_shingleset_free(y);
    return j;
}

/* What the engine must give: the pairs of simlsh_index_pairs_v2(),
 * verified, then simlsh_group_star(). missing[id]: the text cannot be had,
 * so its pairs are decided by estimate. */
static void reference(simlsh_results *out, int mode, double t, const uint64_t *order, size_t norder,
                      uint64_t keep_below, const uint8_t *missing)
{
    simlsh_results *pairs = NULL;
    CHECK_OK(simlsh_results_new(&pairs, NULL));
    double thr = mode == SIMLSH_DEDUP_EXACT
                     ? (g_prefilter >= 0 ? g_prefilter : simlsh_dedup_prefilter(t, 128))
                     : t;
    int flags = mode == SIMLSH_DEDUP_NONE ? 0 : SIMLSH_QUERY_VERIFY;
    if (thr == 0)
        flags = 0; /* no prefilter: every candidate */
    CHECK_OK(simlsh_index_pairs_v2(pairs, idx, flags, 0, thr, 1));
    size_t n = simlsh_results_count(pairs), m = 0;
    uint64_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
    double *s = malloc((n + 1) * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = simlsh_results_a(pairs)[i], y = simlsh_results_b(pairs)[i];
        double e = simlsh_results_scores(pairs)[i];
        if (flags == 0) {
            simlsh_signature *sx = NULL, *sy = NULL;
            CHECK_OK(simlsh_index_signature(&sx, idx, x));
            CHECK_OK(simlsh_index_signature(&sy, idx, y));
            CHECK_OK(simlsh_signature_jaccard(&e, sx, sy));
            simlsh_signature_free(sx);
            simlsh_signature_free(sy);
        }
        if (x < keep_below && y < keep_below && (g_cluster == SIMLSH_DEDUP_STAR || !g_link_kept))
            continue; /* kept ids never claim each other */
        double v = e;
        if (mode == SIMLSH_DEDUP_NONE)
            v = -1;
        else if (mode == SIMLSH_DEDUP_EXACT) {
            if (missing && (missing[x] || missing[y])) {
                if (e < t)
                    continue;
            } else {
                v = exact_jaccard(x, y);
                if (v < t)
                    continue;
            }
        }
        a[m] = x;
        b[m] = y;
        s[m++] = v;
    }
    if (g_cluster == SIMLSH_DEDUP_COMPONENTS)
        components_of(a, b, m, order, norder);
    else
        CHECK_OK(simlsh_group_star(out, NULL, a, b, mode == SIMLSH_DEDUP_NONE ? NULL : s, m, order,
                                   norder));
    free(a);
    free(b);
    free(s);
    simlsh_results_free(pairs);
}

/* Keep only groups of two or more (the engine lists no lone centres). */
static size_t real_rows(const simlsh_results *res, size_t *rows_out)
{
    size_t q = 0, rows = 0;
    size_t nq = 0;
    while (simlsh_results_offset(&rows, res, nq + 1) == 0)
        nq++;
    for (size_t g = 0; g < nq; g++) {
        size_t lo, hi;
        simlsh_results_offset(&lo, res, g);
        simlsh_results_offset(&hi, res, g + 1);
        if (hi - lo >= 2)
            for (size_t k = lo; k < hi; k++)
                rows_out[q++] = k;
    }
    return q;
}

static int same_groups(const simlsh_results *got, const simlsh_results *want)
{
    size_t *g = malloc((simlsh_results_count(got) + 1) * sizeof *g);
    size_t *w = malloc((simlsh_results_count(want) + 1) * sizeof *w);
    size_t ng = real_rows(got, g), nw = real_rows(want, w);
    int same = ng == nw;
    for (size_t i = 0; same && i < ng; i++) {
        same = simlsh_results_a(got)[g[i]] == simlsh_results_a(want)[w[i]] &&
               simlsh_results_b(got)[g[i]] == simlsh_results_b(want)[w[i]] &&
               simlsh_results_scores(got)[g[i]] == simlsh_results_scores(want)[w[i]];
        if (!same)
            fprintf(stderr, "row %zu: (%llu, %llu, %.6f) against (%llu, %llu, %.6f)\n", i,
                    (unsigned long long)simlsh_results_a(got)[g[i]],
                    (unsigned long long)simlsh_results_b(got)[g[i]],
                    simlsh_results_scores(got)[g[i]],
                    (unsigned long long)simlsh_results_a(want)[w[i]],
                    (unsigned long long)simlsh_results_b(want)[w[i]],
                    simlsh_results_scores(want)[w[i]]);
    }
    if (ng != nw)
        fprintf(stderr, "%zu rows against %zu\n", ng, nw);
    free(g);
    free(w);
    return same;
}

/* How a run hands texts over. */
enum feed {
    FEED_ALL,     /* every asked text in one call */
    FEED_REVERSE, /* one at a time, last first (candidates before centres) */
    FEED_HALVES   /* two calls */
};

/* Run the engine to the end; missing[id] texts are reported missing. */
static int run_engine(simlsh_dedup *d, simlsh_results *groups, enum feed feed,
                      const uint8_t *missing)
{
    simlsh_results *need = NULL;
    CHECK_OK(simlsh_results_new(&need, NULL));
    int rounds = 0, rc = 0;
    for (;;) {
        rc = simlsh_dedup_next(need, d, idx);
        if (rc != 0)
            break;
        size_t n = simlsh_results_count(need);
        if (n == 0)
            break;
        rounds++;
        uint64_t *ids = malloc(n * sizeof *ids), *gone = malloc(n * sizeof *gone);
        const void **tx = malloc(n * sizeof *tx);
        size_t *tl = malloc(n * sizeof *tl), k = 0, ng = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t id = simlsh_results_a(need)[i];
            if (missing && missing[id]) {
                gone[ng++] = id;
                continue;
            }
            ids[k] = id;
            tx[k] = texts[id];
            tl[k++] = lens[id];
        }
        /* missing texts before the others, or (two calls) after them */
        if (ng && feed != FEED_HALVES)
            CHECK_OK(simlsh_dedup_missing(d, gone, ng));
        if (feed == FEED_ALL) {
            CHECK_OK(simlsh_dedup_texts(d, ids, tx, tl, k));
        } else if (feed == FEED_HALVES) {
            CHECK_OK(simlsh_dedup_texts(d, ids, tx, tl, k / 2));
            CHECK_OK(simlsh_dedup_texts(d, ids + k / 2, tx + k / 2, tl + k / 2, k - k / 2));
            if (ng)
                CHECK_OK(simlsh_dedup_missing(d, gone, ng));
        } else {
            for (size_t i = k; i > 0; i--)
                CHECK_OK(simlsh_dedup_texts(d, &ids[i - 1], &tx[i - 1], &tl[i - 1], 1));
        }
        free(ids);
        free(gone);
        free(tx);
        free(tl);
    }
    if (rc == 0)
        rc = simlsh_dedup_groups(groups, NULL, d);
    simlsh_results_free(need);
    return rc;
}

static void check_mode(int mode, const uint64_t *order, size_t norder, uint64_t keep_below,
                       double memory, uint32_t threads, enum feed feed, const uint8_t *missing,
                       const char *what)
{
    simlsh_results *want = NULL, *got = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    reference(want, mode, g_t, order, norder, keep_below, missing);
    simlsh_dedup *d = NULL;
    CHECK_OK(simlsh_dedup_new(&d, idx, mode, g_t));
    if (g_prefilter >= 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_PREFILTER, g_prefilter));
    if (order)
        CHECK_OK(simlsh_dedup_order(d, order, norder));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_KEEP_BELOW, (double)keep_below));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_CLUSTER, g_cluster));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_LINK_KEPT, g_link_kept));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, threads));
    if (memory > 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, memory));
    CHECK_OK(run_engine(d, got, feed, missing));
    int same;
    if (g_cluster == SIMLSH_DEDUP_COMPONENTS) {
        size_t *g = malloc((simlsh_results_count(got) + 1) * sizeof *g);
        size_t ng = real_rows(got, g);
        same = ng == comp_rows;
        for (size_t i = 0; same && i < ng; i++)
            same = simlsh_results_a(got)[g[i]] == comp_a[i] &&
                   simlsh_results_b(got)[g[i]] == comp_b[i] &&
                   simlsh_results_scores(got)[g[i]] == comp_s[i];
        if (!same)
            fprintf(stderr, "%zu rows against %zu\n", ng, comp_rows);
        free(g);
    } else {
        same = same_groups(got, want);
    }
    if (!same)
        fprintf(stderr, "different groups: %s\n", what);
    CHECK(same);
    /* the counters agree with the groups */
    uint64_t groups = 0, members = 0, exact = 0, cands = 0, visits = 0;
    CHECK_OK(simlsh_dedup_stat(&groups, d, SIMLSH_DEDUP_STAT_GROUPS));
    CHECK_OK(simlsh_dedup_stat(&members, d, SIMLSH_DEDUP_STAT_MEMBERS));
    CHECK_OK(simlsh_dedup_stat(&exact, d, SIMLSH_DEDUP_STAT_EXACT));
    CHECK_OK(simlsh_dedup_stat(&cands, d, SIMLSH_DEDUP_STAT_CANDIDATES));
    CHECK_OK(simlsh_dedup_stat(&visits, d, SIMLSH_DEDUP_STAT_VISITS));
    size_t ng = 0;
    CHECK_OK(simlsh_dedup_groups(got, &ng, d));
    CHECK(groups == ng);
    CHECK(members == simlsh_results_count(got) - ng);
    CHECK(visits >= cands);
    CHECK(g_cluster == SIMLSH_DEDUP_COMPONENTS || cands >= members);
    CHECK(mode == SIMLSH_DEDUP_EXACT ? exact > 0 : exact == 0);
    simlsh_dedup_free(d);
    simlsh_results_free(want);
    simlsh_results_free(got);
}

static void equivalence(void)
{
    uint64_t rev[NDOCS], some[NDOCS / 3], kept_first[30 + NDOCS / 3];
    for (size_t i = 0; i < NDOCS; i++)
        rev[i] = NDOCS - 1 - i;
    for (size_t i = 0; i < NDOCS / 3; i++)
        some[i] = (i * 7919) % NDOCS; /* a partial order, repeats allowed */
    /* kept ids first, as a tool orders them (they are never claimed) */
    for (size_t i = 0; i < 30; i++)
        kept_first[i] = i;
    memcpy(kept_first + 30, some, sizeof some);
    uint8_t missing[NDOCS];
    tu_rng r = {7};
    for (size_t i = 0; i < NDOCS; i++)
        missing[i] = tu_below(&r, 20) == 0;

    for (int mode = 0; mode <= 2; mode++) {
        check_mode(mode, NULL, 0, 0, 0, 1, FEED_ALL, NULL, "ascending ids");
        check_mode(mode, rev, NDOCS, 0, 0, 1, FEED_ALL, NULL, "descending ids");
        check_mode(mode, some, NDOCS / 3, 0, 0, 1, FEED_ALL, NULL, "partial order");
        check_mode(mode, NULL, 0, 50, 0, 1, FEED_ALL, NULL, "ids below 50 kept");
    }
    /* exact mode: batches of every size, texts in any order and calls */
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 1, 1, FEED_ALL, NULL, "one text a batch");
    check_mode(SIMLSH_DEDUP_EXACT, rev, NDOCS, 0, 20000, 1, FEED_REVERSE, NULL,
               "small batches, candidates first");
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 50000, 4, FEED_HALVES, NULL,
               "two calls a batch, 4 threads");
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 0, 3, FEED_ALL, missing, "missing texts");
    check_mode(SIMLSH_DEDUP_EXACT, rev, NDOCS, 0, 0, 1, FEED_HALVES, missing,
               "missing texts after the others");
    check_mode(SIMLSH_DEDUP_EXACT, kept_first, 30 + NDOCS / 3, 30, 9000, 2, FEED_REVERSE, missing,
               "everything at once");

    /* components: the same pairs, joined; kept pairs linking or not */
    g_cluster = SIMLSH_DEDUP_COMPONENTS;
    for (int mode = 0; mode <= 2; mode++) {
        check_mode(mode, NULL, 0, 0, 0, 1, FEED_ALL, NULL, "components, ascending ids");
        check_mode(mode, rev, NDOCS, 0, 0, 1, FEED_ALL, NULL, "components, descending ids");
        check_mode(mode, some, NDOCS / 3, 50, 0, 1, FEED_ALL, NULL, "components, kept link");
        g_link_kept = 0;
        check_mode(mode, some, NDOCS / 3, 50, 0, 1, FEED_ALL, NULL, "components, kept apart");
        g_link_kept = 1;
    }
    check_mode(SIMLSH_DEDUP_EXACT, rev, NDOCS, 0, 20000, 3, FEED_REVERSE, missing,
               "components, small batches, missing texts");
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 1, 1, FEED_HALVES, NULL,
               "components, one text a batch");
    g_link_kept = 0;
    check_mode(SIMLSH_DEDUP_EXACT, kept_first, 30 + NDOCS / 3, 30, 9000, 2, FEED_ALL, missing,
               "components, kept apart, everything");
    g_link_kept = 1;
    g_cluster = SIMLSH_DEDUP_STAR;
}

/* The corpus of check_mode() (texts, lens, idx, params), kept while a test
 * puts its own in their place. */
typedef struct {
    char *t[NDOCS];
    size_t l[NDOCS];
    simlsh_index *idx;
    simlsh_params *params;
} corpus_saved;

static void corpus_save(corpus_saved *c)
{
    memcpy(c->t, texts, sizeof texts);
    memcpy(c->l, lens, sizeof lens);
    c->idx = idx;
    c->params = params;
}

static void corpus_restore(const corpus_saved *c)
{
    memcpy(texts, c->t, sizeof texts);
    memcpy(lens, c->l, sizeof lens);
    idx = c->idx;
    params = c->params;
}

/* Runs of documents near the threshold, each a candidate of centres whose
 * estimates are below it, so that the engine takes it as a centre ahead of
 * its turn, and some of them then claimed after all (the exact Jaccard at
 * or above the threshold): the groups are still the star's, in every
 * batch size, thread count, feed and priority, with missing texts. Each
 * cluster's members keep each word of its text with a probability around
 * 0.95 and replace it otherwise, which puts their pairs around J 0.8. */
static void ahead_of_turn(void)
{
    static corpus_saved saved;
    corpus_save(&saved);
    tu_rng r = {2024};
    char base[4096];
    size_t id = 0;
    while (id < NDOCS) {
        random_text(&r, base, sizeof base);
        /* keep rates of 0.93 to 0.97: some clusters above, some below */
        unsigned keep = 930 + (unsigned)tu_below(&r, 41);
        for (int k = 0; k < 25 && id < NDOCS; k++) {
            char *t = malloc(4096);
            size_t n = 0;
            const char *p = base;
            for (int w = 0; w < WORDS; w++) {
                const char *e = strchr(p, ' ');
                if (tu_below(&r, 1000) < keep)
                    n += (size_t)snprintf(t + n, 4096 - n, "%.*s ", (int)(e - p), p);
                else {
                    unsigned long long num = tu_below(&r, 100000);
                    n += (size_t)snprintf(t + n, 4096 - n, "%s%llu ", vocab(&r), num);
                }
                p = e + 1;
            }
            texts[id] = t;
            lens[id++] = n;
        }
    }
    build_index();
    uint64_t rev[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        rev[i] = NDOCS - 1 - i;
    uint8_t missing[NDOCS];
    for (size_t i = 0; i < NDOCS; i++)
        missing[i] = tu_below(&r, 25) == 0;
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 0, 1, FEED_ALL, NULL, "ahead: ascending ids");
    check_mode(SIMLSH_DEDUP_EXACT, rev, NDOCS, 0, 0, 2, FEED_REVERSE, NULL,
               "ahead: descending ids, texts one at a time");
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 30000, 3, FEED_HALVES, NULL,
               "ahead: small batches, two calls");
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 40, 0, 2, FEED_ALL, missing,
               "ahead: kept ids, missing texts");
    check_mode(SIMLSH_DEDUP_EXACT, rev, NDOCS, 0, 1, 1, FEED_HALVES, missing,
               "ahead: one text a batch, missing texts after");
    g_prefilter = 0; /* every bucket-mate compared: no pair is doubtful */
    check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 0, 2, FEED_ALL, NULL, "ahead: no prefilter");
    g_prefilter = -1;
    check_mode(SIMLSH_DEDUP_ESTIMATE, NULL, 0, 0, 0, 1, FEED_ALL, NULL, "ahead: estimate");
    simlsh_index_free(idx);
    simlsh_params_free(params);
    for (size_t i = 0; i < NDOCS; i++)
        free(texts[i]);
    corpus_restore(&saved);
}

/* Near-copies decided from their edits: texts with UTF-8 of every length,
 * invalid bytes, whitespace runs of every kind and capitals, and copies
 * with edits anywhere (the first and last bytes too), inserted, deleted,
 * replaced and repeated spans: every pair compared (no prefilter), and the
 * groups and scores equal to those of the full shingle sets, for each
 * unit and k that allow the shortcut. */
static void random_piece(tu_rng *r, char *out, size_t *n, size_t cap)
{
    static const char *bits[] = {"word",
                                 "Word",
                                 "caf\xc3\xa9",
                                 "\xe4\xb8\xad\xe6\x96\x87",
                                 "\xf0\x9f\x98\x80",
                                 " ",
                                 "  ",
                                 "\t\n ",
                                 "\xc2\xa0",
                                 "\xe3\x80\x80",
                                 "\xe2\x80\x83",
                                 "\xff",
                                 "\xc3",
                                 "ABC",
                                 "x",
                                 ".,;"};
    const char *b = bits[tu_below(r, sizeof bits / sizeof *bits)];
    size_t l = strlen(b);
    if (*n + l + 8 < cap) {
        memcpy(out + *n, b, l);
        *n += l;
        *n += (size_t)snprintf(out + *n, cap - *n, "%u", (unsigned)tu_below(r, 50));
    }
}

static void near_copies(void)
{
    enum {
        N = 320,
        CAP = 3000
    };
    static corpus_saved saved;
    corpus_save(&saved);
    tu_rng r = {99};
    char *mine[N];
    for (size_t i = 0; i < N; i++) {
        mine[i] = malloc(CAP);
        size_t n = 0;
        if (i % 8 == 0 || tu_below(&r, 3) == 0) {
            size_t target = 80 + tu_below(&r, 1500);
            while (n < target)
                random_piece(&r, mine[i], &n, CAP - 200);
        } else {
            /* a copy of an earlier text with edits */
            size_t from = i - 1 - tu_below(&r, i < 8 ? i : 8);
            n = lens[from] < CAP - 400 ? lens[from] : CAP - 400;
            memcpy(mine[i], mine[from], n);
            int edits = (int)tu_below(&r, 7);
            for (int e = 0; e < edits && n > 10; e++) {
                size_t at = tu_below(&r, 4) == 0 ? (tu_below(&r, 2) ? 0 : n - 1) : tu_below(&r, n);
                size_t span = 1 + tu_below(&r, 12);
                if (at + span > n)
                    span = n - at;
                char piece[64];
                size_t pl = 0;
                random_piece(&r, piece, &pl, sizeof piece);
                switch (tu_below(&r, 4)) {
                case 0: /* replace */
                    memmove(mine[i] + at + pl, mine[i] + at + span, n - at - span);
                    memcpy(mine[i] + at, piece, pl);
                    n = n - span + pl;
                    break;
                case 1: /* delete */
                    memmove(mine[i] + at, mine[i] + at + span, n - at - span);
                    n -= span;
                    break;
                case 2: /* insert */
                    memmove(mine[i] + at + pl, mine[i] + at, n - at);
                    memcpy(mine[i] + at, piece, pl);
                    n += pl;
                    break;
                default: /* repeat a span */
                    if (n + span < CAP - 200) {
                        memmove(mine[i] + at + span, mine[i] + at, n - at);
                        n += span;
                    }
                }
            }
        }
        texts[i] = mine[i];
        lens[i] = n;
    }
    static const int32_t units[] = {SIMLSH_UNIT_CHAR, SIMLSH_UNIT_BYTE, SIMLSH_UNIT_CHAR};
    static const int64_t ks[] = {5, 4, 1};
    static const int32_t norms[] = {SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE,
                                    SIMLSH_NORM_COLLAPSE_SPACE, 0};
    for (int c = 0; c < 3; c++) {
        simlsh_params *p = NULL;
        CHECK_OK(simlsh_params_new(&p, NULL));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, units[c]));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, ks[c]));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norms[c]));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 32));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 2));
        simlsh_index *ix = NULL;
        CHECK_OK(simlsh_index_new(&ix, p));
        simlsh_signature *sig = NULL;
        CHECK_OK(simlsh_signature_new(&sig, p));
        for (uint64_t i = 0; i < N; i++) {
            simlsh_signature_clear(sig);
            CHECK_OK(simlsh_signature_add_text(sig, texts[i], lens[i]));
            CHECK_OK(simlsh_index_insert(ix, i, sig));
        }
        simlsh_signature_free(sig);
        idx = ix;
        params = p;
        g_t = 0.5;
        g_prefilter = 0;
        check_mode(SIMLSH_DEDUP_EXACT, NULL, 0, 0, 0, 2, FEED_ALL, NULL, "near-copies");
        /* the shortcut was taken, and its answers are those of full sets */
        simlsh_dedup *d = NULL;
        simlsh_results *g = NULL;
        CHECK_OK(simlsh_results_new(&g, NULL));
        CHECK_OK(simlsh_dedup_new(&d, ix, SIMLSH_DEDUP_EXACT, 0.5));
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_PREFILTER, 0));
        CHECK_OK(run_engine(d, g, FEED_ALL, NULL));
        uint64_t edits = 0, exact = 0;
        CHECK_OK(simlsh_dedup_stat(&edits, d, SIMLSH_DEDUP_STAT_EDITS));
        CHECK_OK(simlsh_dedup_stat(&exact, d, SIMLSH_DEDUP_STAT_EXACT));
        printf("near-copies %d: %llu of %llu pairs from their edits\n", c,
               (unsigned long long)edits, (unsigned long long)exact);
        CHECK(edits > 0 && edits < exact);
        CHECK(c == 2 || edits > 100);
        for (size_t i = 0; i < simlsh_results_count(g); i++) {
            uint64_t a = simlsh_results_a(g)[i], b = simlsh_results_b(g)[i];
            if (a != b)
                CHECK(simlsh_results_scores(g)[i] == exact_jaccard(a, b));
        }
        simlsh_dedup_free(d);
        simlsh_results_free(g);
        simlsh_index_free(ix);
        simlsh_params_free(p);
    }
    g_t = 0.8;
    g_prefilter = -1;
    corpus_restore(&saved);
    for (size_t i = 0; i < N; i++)
        free(mine[i]);
}

/* Pairs exactly at the threshold are claimed, and just below it not, on
 * the path that shingles whole texts (word units) and on the one that
 * works from the edits: the early stops never cut a pair at t. */
static void at_threshold(void)
{
    for (int unit = 0; unit < 2; unit++) {
        simlsh_params *p = NULL;
        CHECK_OK(simlsh_params_new(&p, NULL));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT,
                                       unit ? SIMLSH_UNIT_WORD : SIMLSH_UNIT_CHAR));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, 1));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, 0));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, 128));
        CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, 1));
        for (int m = 1; m <= 40; m++) {
            /* |A and B| = 8m, |A or B| = 10m: J = 0.8; one more unique
             * unit in B: J = 8m / (10m + 1) < 0.8 */
            for (int below = 0; below < 2; below++) {
                char a[8192], b[8192];
                size_t na = 0, nb = 0;
                for (int i = 0; i < 8 * m; i++) {
                    na += (size_t)snprintf(a + na, sizeof a - na, unit ? "s%d " : "%c",
                                           unit ? i : 0x21 + i % 90);
                }
                if (!unit) { /* char units: 90 distinct characters at most */
                    if (8 * m + 2 * m + 1 > 90)
                        break;
                    na = 0;
                    for (int i = 0; i < 8 * m; i++)
                        a[na++] = (char)(0x21 + i);
                }
                memcpy(b, a, na);
                nb = na;
                for (int i = 0; i < m; i++) {
                    na += (size_t)snprintf(a + na, sizeof a - na, unit ? "a%d " : "%c",
                                           unit ? i : 0x21 + 8 * m + i);
                    nb += (size_t)snprintf(b + nb, sizeof b - nb, unit ? "b%d " : "%c",
                                           unit ? i : 0x21 + 9 * m + i);
                }
                if (below)
                    nb += (size_t)snprintf(b + nb, sizeof b - nb, unit ? "extra " : "%c",
                                           unit ? 0 : 0x21 + 10 * m);
                simlsh_index *ix = NULL;
                simlsh_signature *sig = NULL;
                CHECK_OK(simlsh_index_new(&ix, p));
                CHECK_OK(simlsh_signature_new(&sig, p));
                CHECK_OK(simlsh_signature_add_text(sig, a, na));
                CHECK_OK(simlsh_index_insert(ix, 0, sig));
                simlsh_signature_clear(sig);
                CHECK_OK(simlsh_signature_add_text(sig, b, nb));
                CHECK_OK(simlsh_index_insert(ix, 1, sig));
                simlsh_signature_free(sig);
                simlsh_dedup *d = NULL;
                simlsh_results *need = NULL, *g = NULL;
                CHECK_OK(simlsh_results_new(&need, NULL));
                CHECK_OK(simlsh_results_new(&g, NULL));
                CHECK_OK(simlsh_dedup_new(&d, ix, SIMLSH_DEDUP_EXACT, 0.8));
                CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_PREFILTER, 0));
                for (;;) {
                    CHECK_OK(simlsh_dedup_next(need, d, ix));
                    size_t n = simlsh_results_count(need);
                    if (n == 0)
                        break;
                    for (size_t i = 0; i < n; i++) {
                        uint64_t id = simlsh_results_a(need)[i];
                        const void *t = id ? (const void *)b : (const void *)a;
                        size_t l = id ? nb : na;
                        CHECK_OK(simlsh_dedup_texts(d, &id, &t, &l, 1));
                    }
                }
                size_t ng = 0;
                CHECK_OK(simlsh_dedup_groups(g, &ng, d));
                CHECK(ng == (below ? 0u : 1u));
                if (ng == 1)
                    CHECK(simlsh_results_scores(g)[1] == 0.8);
                simlsh_dedup_free(d);
                simlsh_results_free(need);
                simlsh_results_free(g);
                simlsh_index_free(ix);
            }
        }
        simlsh_params_free(p);
    }
}

/* One text in many copies: one group, the copies decided without shingling. */
/* The pull loop, one text a call: document id's text is tx[id] (tx[0]
 * for every id when same); the number of batches. */
static int drain(simlsh_dedup *d, const simlsh_index *ix, char *const *tx, const size_t *tl,
                 int same)
{
    simlsh_results *need = NULL;
    CHECK_OK(simlsh_results_new(&need, NULL));
    int batches = 0;
    for (;;) {
        CHECK_OK(simlsh_dedup_next(need, d, ix));
        size_t n = simlsh_results_count(need);
        if (n == 0)
            break;
        batches++;
        for (size_t i = 0; i < n; i++) {
            uint64_t id = simlsh_results_a(need)[i];
            const void *t = tx[same ? 0 : id];
            CHECK_OK(simlsh_dedup_texts(d, &id, &t, &tl[same ? 0 : id], 1));
        }
    }
    simlsh_results_free(need);
    return batches;
}

static void copies(void)
{
    simlsh_index *ix = NULL;
    simlsh_signature *sig = NULL;
    CHECK_OK(simlsh_index_new(&ix, params));
    CHECK_OK(simlsh_signature_new(&sig, params));
    CHECK_OK(simlsh_signature_add_text(sig, texts[0], lens[0]));
    for (uint64_t i = 0; i < 300; i++)
        CHECK_OK(simlsh_index_insert(ix, i, sig));
    simlsh_signature_free(sig);
    simlsh_dedup *d = NULL;
    simlsh_results *g = NULL;
    CHECK_OK(simlsh_results_new(&g, NULL));
    CHECK_OK(simlsh_dedup_new(&d, ix, SIMLSH_DEDUP_EXACT, 0.9));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, 100 * 4096)); /* parts of 100 */
    int batches = drain(d, ix, texts, lens, 1);
    size_t ng = 0;
    CHECK_OK(simlsh_dedup_groups(g, &ng, d));
    CHECK(ng == 1 && simlsh_results_count(g) == 300);
    CHECK(batches >= 3);
    for (size_t i = 0; i < simlsh_results_count(g); i++)
        CHECK(simlsh_results_b(g)[i] == 0 && simlsh_results_scores(g)[i] == 1.0);
    uint64_t same = 0, texts_in = 0;
    CHECK_OK(simlsh_dedup_stat(&same, d, SIMLSH_DEDUP_STAT_IDENTICAL));
    CHECK_OK(simlsh_dedup_stat(&texts_in, d, SIMLSH_DEDUP_STAT_TEXTS));
    CHECK(same == 299);
    CHECK(texts_in == 300); /* the centre once, though its candidates span batches */

    /* components: one component, each copy verified once, and the buckets
     * (one of 300 in each band) settled after two looks: no m^2 */
    simlsh_dedup *dc = NULL;
    CHECK_OK(simlsh_dedup_new(&dc, ix, SIMLSH_DEDUP_EXACT, 0.9));
    CHECK_OK(simlsh_dedup_set(dc, SIMLSH_DEDUP_CLUSTER, SIMLSH_DEDUP_COMPONENTS));
    drain(dc, ix, texts, lens, 1);
    CHECK_OK(simlsh_dedup_groups(g, &ng, dc));
    CHECK(ng == 1 && simlsh_results_count(g) == 300);
    uint64_t verified = 0, looked = 0;
    CHECK_OK(simlsh_dedup_stat(&verified, dc, SIMLSH_DEDUP_STAT_EXACT));
    CHECK_OK(simlsh_dedup_stat(&looked, dc, SIMLSH_DEDUP_STAT_VISITS));
    CHECK(verified == 299);
    CHECK(looked <= 2 * 300 * 16);
    simlsh_dedup_free(dc);

    /* the census: one bucket of 300 in every band */
    uint64_t above = 0;
    CHECK_OK(simlsh_index_largest_buckets(g, &above, ix, 3, 100));
    CHECK(simlsh_results_count(g) == 3 && above == 300);
    for (size_t i = 0; i < simlsh_results_count(g); i++)
        CHECK(simlsh_results_scores(g)[i] == 300 && simlsh_results_a(g)[i] == 0 &&
              simlsh_results_b(g)[i] == i);
    CHECK_OK(simlsh_index_largest_buckets(g, &above, ix, 5, 301));
    CHECK(simlsh_results_count(g) == 0 && above == 0);
    simlsh_dedup_free(d);
    simlsh_results_free(g);
    simlsh_index_free(ix);
}

/* The census of the mixed corpus against the buckets counted from the
 * band keys of every document. */
static void census(void)
{
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    uint64_t above = 0;
    CHECK_OK(simlsh_index_largest_buckets(res, &above, idx, 4, 2));
    size_t n = simlsh_results_count(res);
    CHECK(n == 4);
    /* the group of 120 near-copies makes the largest buckets */
    CHECK(n > 0 && simlsh_results_scores(res)[0] >= 100);
    for (size_t i = 1; i < n; i++)
        CHECK(simlsh_results_scores(res)[i] <= simlsh_results_scores(res)[i - 1]);
    /* every document in a bucket of two or more has a bucket-mate */
    simlsh_results *q = NULL;
    CHECK_OK(simlsh_results_new(&q, NULL));
    uint64_t mates = 0;
    for (uint64_t id = 0; id < NDOCS; id++) {
        simlsh_signature *s = NULL;
        CHECK_OK(simlsh_index_signature(&s, idx, id));
        CHECK_OK(simlsh_index_query(q, idx, s, 0));
        mates += simlsh_results_count(q) > 1;
        simlsh_signature_free(s);
    }
    CHECK(above == mates);
    CHECK_RC(simlsh_index_largest_buckets(NULL, &above, idx, 4, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_largest_buckets(res, &above, NULL, 4, 2), SIMLSH_EINVAL);
    simlsh_results_free(q);
    simlsh_results_free(res);
}

static void bad_calls(void)
{
    simlsh_dedup *d = NULL;
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_RC(simlsh_dedup_new(NULL, idx, SIMLSH_DEDUP_EXACT, 0.8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, NULL, SIMLSH_DEDUP_EXACT, 0.8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, (simlsh_index *)params, SIMLSH_DEDUP_EXACT, 0.8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, idx, 3, 0.8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, idx, -1, 0.8), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, idx, SIMLSH_DEDUP_EXACT, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, idx, SIMLSH_DEDUP_ESTIMATE, 1.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_new(&d, idx, SIMLSH_DEDUP_ESTIMATE, NAN), SIMLSH_EINVAL);
    CHECK(d == NULL);
    CHECK(simlsh_dedup_prefilter(0, 128) == -1 && simlsh_dedup_prefilter(0.8, 0) == -1);
    CHECK_NEAR(simlsh_dedup_prefilter(0.8, 128), 0.8 - 3.5 * sqrt(0.16 / 128), 1e-12);
    CHECK(simlsh_dedup_prefilter(0.05, 16) == 0);

    /* an index without stored signatures has no estimates */
    simlsh_params *p = NULL;
    simlsh_index *bare = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, 0));
    CHECK_OK(simlsh_index_new(&bare, p));
    CHECK_RC(simlsh_dedup_new(&d, bare, SIMLSH_DEDUP_NONE, 0.8), SIMLSH_EUNSUPPORTED);
    simlsh_index_free(bare);
    simlsh_params_free(p);

    CHECK_OK(simlsh_dedup_new(&d, idx, SIMLSH_DEDUP_EXACT, 0.8));
    CHECK_RC(simlsh_dedup_set(d, 99, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, 257), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, 1.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_PREFILTER, 1.01), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_KEEP_BELOW, -1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(NULL, SIMLSH_DEDUP_MEMORY, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_order(d, NULL, 3), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_sizes(d, NULL, NULL, 3), SIMLSH_EINVAL);
    uint64_t v;
    CHECK_RC(simlsh_dedup_stat(&v, d, SIMLSH_DEDUP_STAT_SAMPLED + 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_stat(NULL, d, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_stat(&v, NULL, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_groups(res, NULL, d), SIMLSH_ESTATE); /* not finished */
    CHECK_RC(simlsh_dedup_next(NULL, d, idx), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_next(res, NULL, idx), SIMLSH_EINVAL);

    /* another index, or the same after a change */
    simlsh_index *other = NULL;
    CHECK_OK(simlsh_index_copy(&other, idx));
    CHECK_RC(simlsh_dedup_next(res, d, other), SIMLSH_EINVAL);
    simlsh_dedup *d2 = NULL;
    CHECK_OK(simlsh_dedup_new(&d2, other, SIMLSH_DEDUP_EXACT, 0.8));
    CHECK_OK(simlsh_index_remove(other, 5));
    CHECK_RC(simlsh_dedup_next(res, d2, other), SIMLSH_ESTATE);
    simlsh_dedup_free(d2);
    simlsh_index_free(other);

    /* a batch: texts refused whole for an id not asked for, twice, or a
     * NULL text with a length; nothing taken */
    CHECK_OK(simlsh_dedup_next(res, d, idx));
    size_t n = simlsh_results_count(res);
    CHECK(n >= 2);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, 2), SIMLSH_ESTATE);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, 0), SIMLSH_ESTATE);
    CHECK_RC(simlsh_dedup_order(d, NULL, 0), SIMLSH_ESTATE);
    uint64_t ids[3] = {simlsh_results_a(res)[0], simlsh_results_a(res)[1], NDOCS + 5};
    const void *tx[3] = {texts[ids[0]], texts[ids[1]], "x"};
    size_t tl[3] = {lens[ids[0]], lens[ids[1]], 1};
    CHECK_RC(simlsh_dedup_texts(d, ids, tx, tl, 3), SIMLSH_EINVAL);
    ids[2] = ids[0];
    CHECK_RC(simlsh_dedup_texts(d, ids, tx, tl, 3), SIMLSH_EINVAL);
    tx[1] = NULL;
    CHECK_RC(simlsh_dedup_texts(d, ids, tx, tl, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_texts(d, ids, NULL, tl, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_missing(d, NULL, 2), SIMLSH_EINVAL);
    uint64_t texts_in = 1;
    CHECK_OK(simlsh_dedup_stat(&texts_in, d, SIMLSH_DEDUP_STAT_TEXTS));
    CHECK(texts_in == 0);
    /* the same batch is still asked for */
    simlsh_results *again = NULL;
    CHECK_OK(simlsh_results_new(&again, NULL));
    CHECK_OK(simlsh_dedup_next(again, d, idx));
    CHECK(simlsh_results_count(again) == n);
    /* and a text given is not asked for again */
    tx[0] = texts[ids[0]];
    CHECK_OK(simlsh_dedup_texts(d, ids, tx, tl, 1));
    CHECK_RC(simlsh_dedup_texts(d, ids, tx, tl, 1), SIMLSH_EINVAL);
    CHECK_OK(simlsh_dedup_next(again, d, idx));
    CHECK(simlsh_results_count(again) == n - 1);
    simlsh_results_free(again);
    simlsh_dedup_free(d);
    simlsh_dedup_free(NULL);
    simlsh_dedup_free((simlsh_dedup *)params); /* a wrong handle: ignored */
    simlsh_results_free(res);
}

/* Allocation failures anywhere leave an engine that can go on: the same
 * groups once allocations work again. */
static void oom(void)
{
    simlsh_results *want = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    reference(want, SIMLSH_DEDUP_EXACT, 0.8, NULL, 0, 0, NULL);
    int failures = 0;
    for (long fail_at = 1; fail_at < 300; fail_at += 5) {
        tu_alloc_state st = {0};
        simlsh_allocator al = tu_allocator(&st);
        simlsh_params *p = make_params(&al);
        simlsh_index *ix = NULL;
        CHECK_OK(simlsh_index_new(&ix, p));
        for (uint64_t id = 0; id < NDOCS; id++) {
            simlsh_signature *s = NULL;
            CHECK_OK(simlsh_index_signature(&s, idx, id));
            CHECK_OK(simlsh_index_insert(ix, id, s));
            simlsh_signature_free(s);
        }
        st.count = 0;
        st.fail_at = fail_at;
        simlsh_dedup *d = NULL;
        int rc = simlsh_dedup_new(&d, ix, SIMLSH_DEDUP_EXACT, 0.8);
        if (rc == SIMLSH_ENOMEM) {
            failures++;
            st.fail_at = 0;
            CHECK_OK(simlsh_dedup_new(&d, ix, SIMLSH_DEDUP_EXACT, 0.8));
        }
        simlsh_results *need = NULL, *got = NULL;
        CHECK_OK(simlsh_results_new(&need, NULL));
        CHECK_OK(simlsh_results_new(&got, NULL));
        for (int guard = 0; guard < 100000; guard++) {
            rc = simlsh_dedup_next(need, d, ix);
            if (rc == SIMLSH_ENOMEM) {
                failures++;
                st.fail_at = 0;
                continue;
            }
            CHECK_OK(rc);
            size_t n = simlsh_results_count(need);
            if (n == 0)
                break;
            uint64_t *ids = malloc(n * sizeof *ids);
            const void **tx = malloc(n * sizeof *tx);
            size_t *tl = malloc(n * sizeof *tl);
            for (size_t i = 0; i < n; i++) {
                ids[i] = simlsh_results_a(need)[i];
                tx[i] = texts[ids[i]];
                tl[i] = lens[ids[i]];
            }
            rc = simlsh_dedup_texts(d, ids, tx, tl, n);
            if (rc == SIMLSH_ENOMEM) {
                failures++;
                st.fail_at = 0; /* nothing was taken: the next round asks again */
            } else {
                CHECK_OK(rc);
            }
            free(ids);
            free(tx);
            free(tl);
        }
        st.fail_at = 0;
        CHECK_OK(simlsh_dedup_groups(got, NULL, d));
        CHECK(same_groups(got, want));
        simlsh_dedup_free(d);
        simlsh_results_free(need);
        simlsh_results_free(got);
        simlsh_index_free(ix);
        simlsh_params_free(p);
        CHECK(st.live == 0);
        if (fail_at == 1)
            printf("oom: %ld allocations in a run\n", st.count);
    }
    printf("oom: %d failures\n", failures);
    CHECK(failures > 30);
    simlsh_results_free(want);
}

/* ---- giant buckets of unlike documents (SIMLSH_DEDUP_GIANT) ---------------------- */

#define TPL_DOCS 600
#define TPL_WORDS 200
#define TPL_PAIRS 20

static double g_tpl_threads = 1; /* run_tpl()'s SIMLSH_DEDUP_THREADS */

/* Run an engine over ix to its groups, texts from tx/tl by id; *visits and
 * *aside (buckets set aside) from its counters. */
static void run_tpl(simlsh_results *g, const simlsh_index *ix, int mode, double giant, double cost,
                    char **tx, const size_t *tl, uint64_t *visits, uint64_t *aside,
                    uint64_t *aside_members)
{
    simlsh_dedup *d = NULL;
    CHECK_OK(simlsh_dedup_new(&d, ix, mode, 0.8));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, giant));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, g_tpl_threads));
    if (cost >= 0)
        CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT_COST, cost));
    drain(d, ix, tx, tl, 0);
    CHECK_OK(simlsh_dedup_groups(g, NULL, d));
    CHECK_OK(simlsh_dedup_stat(visits, d, SIMLSH_DEDUP_STAT_VISITS));
    CHECK_OK(simlsh_dedup_stat(aside, d, SIMLSH_DEDUP_STAT_SET_ASIDE));
    CHECK_OK(simlsh_dedup_stat(aside_members, d, SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS));
    if (mode == SIMLSH_DEDUP_ESTIMATE) {
        /* a candidate reaches the threshold, so it is claimed: each mate
         * once, though it shares several of the centre's buckets */
        uint64_t cands = 0, members = 0;
        CHECK_OK(simlsh_dedup_stat(&cands, d, SIMLSH_DEDUP_STAT_CANDIDATES));
        CHECK_OK(simlsh_dedup_stat(&members, d, SIMLSH_DEDUP_STAT_MEMBERS));
        CHECK(cands == members);
    }
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, 10), SIMLSH_ESTATE);
    simlsh_dedup_free(d);
}

/* Are the groups of g exactly the planted pairs (2i, 2i + 1), i < TPL_PAIRS? */
static int planted_pairs(const simlsh_results *g)
{
    size_t nq = 0, rows = 0;
    while (simlsh_results_offset(&rows, g, nq + 1) == 0)
        nq++;
    size_t found = 0;
    for (size_t q = 0; q < nq; q++) {
        size_t lo, hi;
        simlsh_results_offset(&lo, g, q);
        simlsh_results_offset(&hi, g, q + 1);
        if (hi - lo < 2)
            continue;
        if (hi - lo != 2)
            return 0;
        uint64_t a = simlsh_results_a(g)[lo], b = simlsh_results_a(g)[lo + 1];
        uint64_t lo_id = a < b ? a : b, hi_id = a < b ? b : a;
        if (lo_id % 2 != 0 || hi_id != lo_id + 1 || lo_id >= 2 * TPL_PAIRS)
            return 0;
        found++;
    }
    return found == TPL_PAIRS;
}

/* A template most documents share (each replaces 12 % of its words, so
 * pairwise Jaccard is about 0.6), with TPL_PAIRS planted near-copies
 * (one word changed). Its largest buckets are set aside when above
 * SIMLSH_DEDUP_GIANT, at a fraction of the visits, and the planted pairs
 * are found all the same; buckets of copies are never set aside; the
 * judgement does not depend on the order of insertion or on the mode. */
static void set_aside(void)
{
    tu_rng r = {7};
    static char *tx[TPL_DOCS];
    static size_t tl[TPL_DOCS];
    const char *base[TPL_WORDS];
    for (int w = 0; w < TPL_WORDS; w++)
        base[w] = vocab(&r);
    unsigned num[TPL_WORDS];
    for (int w = 0; w < TPL_WORDS; w++)
        num[w] = (unsigned)tu_below(&r, 1000);
    for (size_t i = 0; i < TPL_DOCS; i++) {
        tx[i] = malloc(16 * TPL_WORDS + 16);
        size_t n = 0;
        int copy_of_prev = i % 2 == 1 && i < 2 * TPL_PAIRS;
        for (int w = 0; w < TPL_WORDS; w++) {
            if (copy_of_prev) /* the planted near-copy: one word changed */
                break;
            if (tu_below(&r, 100) < 12) {
                unsigned long long k = tu_below(&r, 1000) + 1000; /* (see random_text) */
                n += (size_t)sprintf(tx[i] + n, "%s%llu ", vocab(&r), k);
            } else
                n += (size_t)sprintf(tx[i] + n, "%s%u ", base[w], num[w]);
        }
        if (copy_of_prev) {
            strcpy(tx[i], tx[i - 1]);
            n = strlen(tx[i]);
            memcpy(tx[i] + n / 2, "QQQQQ", 5);
        }
        tl[i] = n;
    }
    simlsh_index *fw = NULL, *bw = NULL;
    simlsh_signature *sig = NULL;
    CHECK_OK(simlsh_index_new(&fw, params));
    CHECK_OK(simlsh_index_new(&bw, params));
    CHECK_OK(simlsh_signature_new(&sig, params));
    for (size_t k = 0; k < TPL_DOCS; k++) {
        size_t j = TPL_DOCS - 1 - k;
        simlsh_signature_clear(sig);
        CHECK_OK(simlsh_signature_add_text(sig, tx[k], tl[k]));
        CHECK_OK(simlsh_index_insert(fw, k, sig));
        simlsh_signature_clear(sig);
        CHECK_OK(simlsh_signature_add_text(sig, tx[j], tl[j]));
        CHECK_OK(simlsh_index_insert(bw, j, sig));
    }
    simlsh_results *g = NULL, *g2 = NULL;
    CHECK_OK(simlsh_results_new(&g, NULL));
    CHECK_OK(simlsh_results_new(&g2, NULL));
    uint64_t v_all, v_aside, a_all, a_aside, m_all, m_aside, v2, a2, m2;
    /* the old rule: every bucket is a bucket */
    run_tpl(g, fw, SIMLSH_DEDUP_EXACT, 0, 0, tx, tl, &v_all, &a_all, &m_all);
    CHECK(planted_pairs(g));
    CHECK(a_all == 0 && m_all == 0);
    /* the template's buckets (about a quarter of the corpus each) set aside */
    run_tpl(g, fw, SIMLSH_DEDUP_EXACT, 50, 0, tx, tl, &v_aside, &a_aside, &m_aside);
    CHECK(planted_pairs(g));
    CHECK(a_aside >= 4 && m_aside > 50 * a_aside);
    fprintf(stderr, "set aside: %llu buckets of %llu members; visits %llu against %llu\n",
            (unsigned long long)a_aside, (unsigned long long)m_aside, (unsigned long long)v_aside,
            (unsigned long long)v_all);
    CHECK(3 * v_aside < v_all);
    /* a cost allowed: fewer set aside, the largest first; the default
     * allows this small corpus all its buckets */
    uint64_t a_some, m_some;
    run_tpl(g2, fw, SIMLSH_DEDUP_EXACT, 50, 4, tx, tl, &v2, &a_some, &m_some);
    CHECK(planted_pairs(g2));
    CHECK(a_some > 0 && a_some < a_aside && m_some < m_aside);
    CHECK(m_some > a_some * (m_aside / a_aside)); /* the largest went first */
    CHECK(v2 > v_aside && v2 < v_all);
    run_tpl(g2, fw, SIMLSH_DEDUP_EXACT, 50, -1, tx, tl, &v2, &a2, &m2);
    CHECK(a2 == 0 && v2 == v_all && same_groups(g2, g));
    /* with every bucket kept, the walk looks at many members a document
     * and band, so the engine rules mates out by their values' low bytes
     * first: the groups are still those of all verified pairs */
    uint32_t tb = 0, tr = 0;
    simlsh_index_bands(&tb, &tr, fw);
    CHECK(v_all > 4 * (uint64_t)TPL_DOCS * tb);
    simlsh_index *saved = idx;
    simlsh_results *want = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    idx = fw; /* (estimates: reference() reads no text) */
    reference(want, SIMLSH_DEDUP_ESTIMATE, 0.8, NULL, 0, 0, NULL);
    idx = saved;
    run_tpl(g2, fw, SIMLSH_DEDUP_ESTIMATE, 0, 0, tx, tl, &v2, &a2, &m2);
    CHECK(v2 > 4 * (uint64_t)TPL_DOCS * tb && same_groups(g2, want));
    /* on threads the walk's next lists are made ahead (ahead.c), threads
     * starting past 256 looks a document: the same groups, the same looks */
    CHECK(v_all > 256 * (uint64_t)TPL_DOCS && v2 > 256 * (uint64_t)TPL_DOCS);
    for (g_tpl_threads = 2; g_tpl_threads <= 4; g_tpl_threads *= 2) {
        uint64_t v3;
        run_tpl(g2, fw, SIMLSH_DEDUP_ESTIMATE, 0, 0, tx, tl, &v3, &a2, &m2);
        CHECK(v3 == v2 && same_groups(g2, want));
        run_tpl(g2, fw, SIMLSH_DEDUP_EXACT, 0, 0, tx, tl, &v3, &a2, &m2);
        CHECK(v3 == v_all && same_groups(g2, g));
    }
    g_tpl_threads = 1;
    simlsh_results_free(want);
    /* the same judgement for the other order of insertion, and estimates */
    run_tpl(g2, bw, SIMLSH_DEDUP_EXACT, 50, 0, tx, tl, &v2, &a2, &m2);
    CHECK(a2 == a_aside && m2 == m_aside && same_groups(g2, g));
    run_tpl(g2, fw, SIMLSH_DEDUP_ESTIMATE, 50, 0, tx, tl, &v2, &a2, &m2);
    CHECK(a2 == a_aside && m2 == m_aside);
    /* no verification claims bucket-mates at once: nothing to set aside */
    run_tpl(g2, fw, SIMLSH_DEDUP_NONE, 50, 0, tx, tl, &v2, &a2, &m2);
    CHECK(a2 == 0 && m2 == 0);
    /* a bucket of copies above the size is kept, and claimed whole */
    simlsh_index *cp = NULL;
    CHECK_OK(simlsh_index_new(&cp, params));
    for (uint64_t i = 0; i < 200; i++) {
        simlsh_signature_clear(sig);
        CHECK_OK(simlsh_signature_add_text(sig, tx[2 * TPL_PAIRS], tl[2 * TPL_PAIRS]));
        CHECK_OK(simlsh_index_insert(cp, i, sig));
    }
    size_t ng = 0;
    char *same[200];
    size_t same_len[200];
    for (int i = 0; i < 200; i++) {
        same[i] = tx[2 * TPL_PAIRS];
        same_len[i] = tl[2 * TPL_PAIRS];
    }
    run_tpl(g2, cp, SIMLSH_DEDUP_EXACT, 50, 0, same, same_len, &v2, &a2, &m2);
    CHECK(a2 == 0 && m2 == 0);
    CHECK(simlsh_results_count(g2) == 200);
    CHECK_OK(simlsh_results_offset(&ng, g2, 1));
    CHECK(ng == 200);
    /* the setting's range */
    simlsh_dedup *d = NULL;
    CHECK_OK(simlsh_dedup_new(&d, fw, SIMLSH_DEDUP_EXACT, 0.8));
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, -1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, 2.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT_COST, -0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT_COST, 2e15), SIMLSH_EINVAL);
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT_COST, 0.5));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, 0));
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, -1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, 2e19), SIMLSH_EINVAL);
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, 0));
    CHECK_OK(simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, 1 << 20));
    simlsh_dedup_free(d);
    simlsh_signature_free(sig);
    simlsh_results_free(g);
    simlsh_results_free(g2);
    simlsh_index_free(fw);
    simlsh_index_free(bw);
    simlsh_index_free(cp);
    for (size_t i = 0; i < TPL_DOCS; i++)
        free(tx[i]);
}

/* The policy's banding (simlsh_dedup_banding): recall banding for exact
 * verification, automatic otherwise, one side derived from the other, and
 * a banding that does not fit refused with the params unchanged. */
static void policy(void)
{
    simlsh_params *p = NULL;
    uint32_t b = 99, r = 99, rb = 0, rr = 0;
    int64_t v = -1, w = -1;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    CHECK_OK(simlsh_lsh_optimal_params_recall(&rb, &rr, NULL, 128, 0.8, 0.99, 0.0));
    CHECK_OK(simlsh_dedup_banding(p, SIMLSH_DEDUP_EXACT, 0.99, 0, 0, &b, &r));
    CHECK(b == rb && r == rr && b == 16 && r == 6);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_BANDS, &v));
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_ROWS, &w));
    CHECK(v == 16 && w == 6);
    /* a higher recall, more bands of fewer rows */
    CHECK_OK(simlsh_dedup_banding(p, SIMLSH_DEDUP_EXACT, 0.999, 0, 0, &b, &r));
    CHECK(r <= 6 && b * r <= 128 && (b != 16 || r != 6));
    /* estimates keep the automatic banding */
    CHECK_OK(simlsh_dedup_banding(p, SIMLSH_DEDUP_ESTIMATE, 0.99, 0, 0, &b, &r));
    CHECK(b == 0 && r == 0);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_BANDS, &v));
    CHECK(v == 0);
    CHECK_OK(simlsh_dedup_banding(p, SIMLSH_DEDUP_EXACT, 0.99, 20, 0, &b, &r));
    CHECK(b == 20 && r == 6);
    CHECK_OK(simlsh_dedup_banding(p, SIMLSH_DEDUP_NONE, 0.99, 0, 5, NULL, NULL));
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_BANDS, &v));
    CHECK(v == 25);
    /* too many, or a bad call: refused, the params as they were */
    CHECK_RC(simlsh_dedup_banding(p, SIMLSH_DEDUP_EXACT, 0.99, 20, 7, &b, &r), SIMLSH_EINVAL);
    CHECK(b == 20 && r == 7);
    CHECK_RC(simlsh_dedup_banding(p, SIMLSH_DEDUP_EXACT, 1.0, 0, 0, NULL, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_banding(p, 7, 0.99, 0, 0, NULL, NULL), SIMLSH_EINVAL);
    CHECK_RC(simlsh_dedup_banding(NULL, SIMLSH_DEDUP_EXACT, 0.99, 0, 0, NULL, NULL), SIMLSH_EINVAL);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_BANDS, &v));
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_ROWS, &w));
    CHECK(v == 25 && w == 5);
    simlsh_params_free(p);
}

int main(void)
{
    make_corpus();
    build_index();
    equivalence();
    ahead_of_turn();
    near_copies();
    at_threshold();
    copies();
    census();
    set_aside();
    policy();
    bad_calls();
    oom();
    for (size_t i = 0; i < NDOCS; i++)
        free(texts[i]);
    simlsh_index_free(idx);
    simlsh_params_free(params);
    return tu_finish("test-dedup");
}
