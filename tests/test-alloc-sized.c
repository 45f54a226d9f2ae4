/*
 * The v2 allocator's free gets exactly the size that was allocated, from
 * every call site (issue 16, item 6), and v2 blocks carry no header. A
 * table of live blocks checks every free's size and pointer; a v2 block
 * that reached the three-word free hook, which has no size, would be
 * leaked and counted by simlsh__alloc_unsized_v2_frees().
 *
 * Every family runs through the checked hooks and must end with all its
 * blocks freed, each with its size, none without: params, signatures
 * (features, values, text, saves and loads), shingle sets, the shingler
 * (its Unicode path with utf8proc), batch signing and batch inserts on two
 * threads (lib/pool.c's locking allocator), index tables, lists, queries,
 * pairs and clusters on two threads, copies, merges, user data, saves to
 * memory and files and loads, groups, forests and ensembles.
 */
#include <unistd.h>

#include "alloc.h"
#include "testutil.h"

/* Live blocks in an open-addressing table keyed by address (linear
 * probing, backward-shift deletion): the index families hold thousands. */
#define SLOTS ((size_t)1 << 17)
#define MAX_LIVE (SLOTS / 2)

typedef struct {
    void *p[SLOTS];
    size_t n[SLOTS];
    size_t live;
    long allocs, frees, bad_size, unknown;
    size_t bytes; /* asked of the hooks, in all */
} table;

static table T;

static size_t home(const void *p)
{
    return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 47) & (SLOTS - 1);
}

static void *t_alloc(void *user, size_t size)
{
    table *t = user;
    if (t->live == MAX_LIVE)
        return NULL;
    void *p = malloc(size);
    if (p != NULL) {
        size_t i = home(p);
        while (t->p[i] != NULL)
            i = (i + 1) & (SLOTS - 1);
        t->p[i] = p;
        t->n[i] = size;
        t->live++;
        t->allocs++;
        t->bytes += size;
    }
    return p;
}

static void t_free(void *user, void *p, size_t size)
{
    table *t = user;
    t->frees++;
    size_t i = home(p);
    while (t->p[i] != NULL && t->p[i] != p)
        i = (i + 1) & (SLOTS - 1);
    if (t->p[i] == NULL) {
        t->unknown++;
        return;
    }
    t->bad_size += t->n[i] != size;
    t->live--;
    free(p);
    /* Backward shift: later entries of the run move into the hole when
     * their home is not between the hole and themselves. */
    for (size_t j = (i + 1) & (SLOTS - 1); t->p[j] != NULL; j = (j + 1) & (SLOTS - 1)) {
        size_t h = home(t->p[j]);
        if (((j - h) & (SLOTS - 1)) >= ((j - i) & (SLOTS - 1))) {
            t->p[i] = t->p[j];
            t->n[i] = t->n[j];
            i = j;
        }
    }
    t->p[i] = NULL;
}

static simlsh_allocator_v2 HOOKS = SIMLSH_ALLOCATOR_V2_INIT;

static simlsh_params *v2_params(int store)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store));
    CHECK_OK(simlsh_params_set_allocator(p, &HOOKS));
    return p;
}

/* Every block of the family freed, each with its size; returns how many
 * v2 blocks went to the unsized hook. */
static unsigned long family_end(const char *name, unsigned long unsized0, long allocs0)
{
    unsigned long unsized = simlsh__alloc_unsized_v2_frees() - unsized0;
    CHECK(T.allocs > allocs0);
    CHECK(T.live == 0 && T.bad_size == 0 && T.unknown == 0);
    printf("%-28s %6ld blocks, %5lu freed without their size\n", name, T.allocs - allocs0, unsized);
    return unsized;
}

static unsigned long fam_params(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(0), *q = NULL, *r = NULL;
    CHECK_OK(simlsh_params_copy(&q, p));
    CHECK_OK(simlsh_params_copy(&r, q));
    simlsh_params_free(r);
    simlsh_params_free(q);
    simlsh_params_free(p);
    return family_end("params", u0, a0);
}

static void features(uint64_t *f, size_t n, uint64_t salt)
{
    for (size_t i = 0; i < n; i++)
        f[i] = (i * 0x9E3779B97F4A7C15ull) ^ salt;
}

static unsigned long fam_signatures(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(0);
    static uint64_t f[4000];
    features(f, 4000, 1);
    simlsh_signature *g = NULL, *c = NULL, *v = NULL;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK_OK(simlsh_signature_add_features(g, f, 4000));
    CHECK_OK(simlsh_signature_copy(&c, g));
    CHECK_OK(simlsh_signature_merge(c, g));
    uint32_t vals[256];
    size_t n = 0;
    CHECK_OK(simlsh_signature_values(vals, 256, &n, g));
    CHECK_OK(simlsh_signature_from_values(&v, p, vals, n));
    simlsh_params *gp = NULL;
    CHECK_OK(simlsh_signature_params(&gp, v));
    simlsh_params_free(gp);
    CHECK_OK(simlsh_signature_clear(c));
    simlsh_signature_free(v);
    simlsh_signature_free(c);
    simlsh_signature_free(g);
    simlsh_params_free(p);
    return family_end("signatures (features)", u0, a0);
}

static unsigned long fam_sets(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(0);
    static uint64_t f[100];
    simlsh_shingleset *s = NULL, *c = NULL;
    CHECK_OK(simlsh_shingleset_new(&s, p));
    /* Many small adds: the hash vector grows several times, and sorted
     * runs merge into new blocks. */
    for (uint64_t k = 0; k < 60; k++) {
        features(f, 100, k);
        CHECK_OK(simlsh_shingleset_add_features(s, f, 100));
    }
    size_t n = 0;
    CHECK_OK(simlsh_shingleset_count(&n, s));
    CHECK(n == 6000);
    CHECK_OK(simlsh_shingleset_copy(&c, s));
    double j = 0;
    CHECK_OK(simlsh_shingleset_jaccard(&j, s, c));
    CHECK(j == 1.0);
    CHECK_OK(simlsh_shingleset_clear(c));
    simlsh_shingleset_free(c);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
    return family_end("shingle sets (features)", u0, a0);
}

/* Queries, counted on their own: the scratch vectors grow past their
 * local arrays. */
static unsigned long fam_query(void)
{
    simlsh_params *p = v2_params(1);
    long a0 = T.allocs;
    simlsh_index *ix = NULL;
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_results_new(&res, NULL));
    static uint64_t f[200];
    simlsh_signature *g[64];
    for (int i = 0; i < 64; i++) {
        CHECK_OK(simlsh_signature_new(&g[i], p));
        /* Eight groups of eight near copies: buckets with many members, so
         * the candidate vectors outgrow their local arrays. */
        features(f, 200, (uint64_t)(i / 8));
        f[i % 200] ^= 1;
        CHECK_OK(simlsh_signature_add_features(g[i], f, 200));
        CHECK_OK(simlsh_index_insert(ix, (uint64_t)i, g[i]));
    }
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    size_t hits = 0;
    for (int i = 0; i < 64; i++) {
        CHECK_OK(simlsh_index_query(res, ix, g[i], SIMLSH_QUERY_VERIFY));
        hits += simlsh_results_count(res);
    }
    CHECK(hits >= 64);
    unsigned long unsized = simlsh__alloc_unsized_v2_frees() - u0;
    for (int i = 0; i < 64; i++)
        simlsh_signature_free(g[i]);
    simlsh_results_free(res);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    family_end("index queries", simlsh__alloc_unsized_v2_frees() - unsized, a0);
    return unsized;
}

/* The internal helpers themselves: a sized move keeps the bytes asked for
 * and frees the old block with its size; a 0-byte block is a 1-byte one. */
static unsigned long fam_helpers(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_allocator al;
    CHECK_OK(simlsh__alloc_fill_v2(&al, &HOOKS));
    unsigned char *p = simlsh__malloc(&al, 100);
    CHECK(p != NULL);
    for (int i = 0; i < 100; i++)
        p[i] = (unsigned char)i;
    unsigned char *q = simlsh__realloc_sized(&al, p, 50, 100, 300);
    CHECK(q != NULL);
    int same = 1;
    for (int i = 0; i < 50; i++)
        same &= q[i] == i;
    CHECK(same);
    simlsh__free_sized(&al, q, 300);
    void *z = simlsh__malloc(&al, 0);
    simlsh__free_sized(&al, simlsh__realloc_sized(&al, z, 0, 0, 16), 16);
    simlsh__free_sized(&al, simlsh__realloc_sized(&al, NULL, 0, 0, 8), 8);
    return family_end("alloc.c helpers", u0, a0);
}

/* A three-word allocator that is the v2 thunk over HOOKS: what objects
 * whose constructors take a simlsh_allocator (results, loads) are given
 * here so that their blocks go through the checked table too. */
static simlsh_allocator AL2;

static simlsh_results *v2_results(void)
{
    simlsh_results *r = NULL;
    CHECK_OK(simlsh_results_new(&r, &AL2));
    return r;
}

/* Texts with many exact copies (groups of 20): identical signatures fill
 * every band's bucket past its inline entries, so lists are made, grown
 * and freed; the tail word makes distinct groups. */
#define NDOCS 6000
static char text_buf[NDOCS][64];
static const void *texts[NDOCS];
static size_t lens[NDOCS];

static void make_texts(void)
{
    for (size_t i = 0; i < NDOCS; i++) {
        uint64_t h = (i / 20 + 1) * 0x9E3779B97F4A7C15ull;
        int n = snprintf(text_buf[i], sizeof text_buf[i], "group %016llx %016llx",
                         (unsigned long long)h, (unsigned long long)(h * h));
        texts[i] = text_buf[i];
        lens[i] = (size_t)n;
    }
}

static unsigned long fam_text(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(0);
    static const char text[] = "The Cat sat on the mat, and looked at the dog. \xc3\x89t\xc3\xa9!";
    simlsh_signature *g = NULL;
    simlsh_shingleset *s = NULL;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK_OK(simlsh_signature_add_text(g, text, sizeof text - 1));
    CHECK_OK(simlsh_signature_begin(g));
    /* A long streamed text: the shingler's byte buffer and scratch grow. */
    for (int i = 0; i < 400; i++)
        CHECK_OK(simlsh_signature_feed(g, text, sizeof text - 1));
    CHECK_OK(simlsh_signature_end(g));
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_add_text(s, text, sizeof text - 1));
    size_t need = 0;
    CHECK_RC(simlsh_signature_save(NULL, 0, &need, g), 0);
    unsigned char *buf = malloc(need);
    CHECK_OK(simlsh_signature_save(buf, need, &need, g));
    simlsh_signature *l = NULL;
    CHECK_OK(simlsh_signature_load(&l, buf, need, &AL2));
    free(buf);
    simlsh_signature_free(l);
#if SIMLSH_HAVE_UTF8PROC
    /* utf8proc's path: decomposition grows its code point buffer. */
    simlsh_params *u = v2_params(0);
    CHECK_OK(
        simlsh_params_set_int(u, SIMLSH_PARAM_NORMALIZE, SIMLSH_NORM_NFKC | SIMLSH_NORM_CASEFOLD));
    simlsh_signature *ug = NULL;
    CHECK_OK(simlsh_signature_new(&ug, u));
    static const char lig[] = "\xef\xac\x81\xef\xac\x81\xef\xac\x83 \xef\xb7\xba x";
    CHECK_OK(simlsh_signature_add_text(ug, lig, sizeof lig - 1));
    simlsh_signature_free(ug);
    simlsh_params_free(u);
#endif
    simlsh_shingleset_free(s);
    simlsh_signature_free(g);
    simlsh_params_free(p);
    return family_end("text (shingler)", u0, a0);
}

/* Batch signing on two threads: workers allocate through the locking
 * allocator (lib/pool.c). */
static unsigned long fam_sign_batch(uint32_t *vals, uint32_t np)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(1);
    CHECK_OK(simlsh_sign_batch(vals, NULL, p, texts, lens, NDOCS, 2));
    CHECK_OK(simlsh_sign_batch(vals, NULL, p, texts, lens, 100, 1));
    size_t row = np * sizeof *vals;
    CHECK(memcmp(vals, vals + 19 * (size_t)np, row) == 0);
    CHECK(memcmp(vals, vals + 20 * (size_t)np, row) != 0);
    simlsh_params_free(p);
    return family_end("sign batch (2 threads)", u0, a0);
}

static simlsh_index *v2_index(simlsh_params *p, const uint32_t *vals, size_t lo, size_t hi,
                              uint32_t nthreads)
{
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    static uint64_t ids[NDOCS];
    for (size_t i = lo; i < hi; i++)
        ids[i] = i;
    int64_t np = 0;
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_NUM_PERM, &np));
    CHECK_OK(simlsh_index_insert_values(ix, ids + lo, vals + lo * (size_t)np, hi - lo, nthreads));
    return ix;
}

/* The index beyond queries: batch inserts on two threads (list conversion
 * and growth included), single inserts and removals, pairs and clusters on
 * two threads, copies, merges, user data, saves to memory and to a file,
 * loads, reserve and clear; loads through the thunk allocator. */
static unsigned long fam_index(const uint32_t *vals, uint32_t np, int store)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(store);
    simlsh_index *ix = v2_index(p, vals, 0, NDOCS / 2, 2);
    simlsh_index *iy = v2_index(p, vals, NDOCS / 2, NDOCS, 1);
    simlsh_signature *g[40];
    for (int i = 0; i < 40; i++) {
        CHECK_OK(simlsh_signature_from_values(&g[i], p, vals + (size_t)(i * 7) * np, np));
        CHECK_OK(simlsh_index_insert(iy, 100000 + (uint64_t)i, g[i]));
    }
    size_t removed = 0;
    for (uint64_t id = NDOCS / 2; store && id < NDOCS / 2 + 300; id++)
        removed += simlsh_index_remove(iy, id) == 0; /* needs stored signatures */
    CHECK(removed == (store ? 300u : 0u));
    CHECK_OK(simlsh_index_set_userdata(iy, "user bytes", 10));
    CHECK_OK(simlsh_index_set_userdata(iy, "other", 5));
    simlsh_index *c = NULL;
    CHECK_OK(simlsh_index_copy(&c, iy));
    CHECK_OK(simlsh_index_merge(ix, c));
    simlsh_index_free(c);
    simlsh_results *res = v2_results();
    CHECK_OK(simlsh_index_query_batch(res, ix, (const simlsh_signature *const *)g, 40, 0));
    CHECK(simlsh_results_count(res) >= 40);
    CHECK_OK(simlsh_index_pairs_v2(res, ix, SIMLSH_QUERY_VERIFY * store, 0, 0.0, 2));
    size_t npairs = simlsh_results_count(res);
    CHECK(npairs > 1000);
    CHECK_OK(simlsh_index_cluster_v2(res, ix, 0, 0.0, 2));
    CHECK(simlsh_results_count(res) == NDOCS - removed + 40);
    size_t need = 0;
    CHECK_OK(simlsh_index_save(NULL, 0, &need, ix));
    unsigned char *buf = malloc(need);
    CHECK_OK(simlsh_index_save(buf, need, &need, ix));
    simlsh_index *l = NULL;
    CHECK_OK(simlsh_index_load(&l, buf, need, &AL2));
    free(buf);
    char path[] = "/tmp/simlsh-alloc-sized-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(simlsh_index_save_file_v2(NULL, l, path, 0));
    simlsh_index *lf = NULL;
    CHECK_OK(simlsh_index_load_file_v2(&lf, NULL, path, 0, &AL2));
    unlink(path);
    size_t n1 = 0, n2 = 0;
    CHECK_OK(simlsh_index_count(&n1, ix));
    CHECK_OK(simlsh_index_count(&n2, lf));
    CHECK(n1 == n2);
    CHECK_OK(simlsh_index_reserve(lf, 2 * NDOCS));
    CHECK_OK(simlsh_index_clear(lf));
    CHECK_OK(simlsh_index_insert(lf, 1, g[0]));
    simlsh_index_free(lf);
    simlsh_index_free(l);
    for (int i = 0; i < 40; i++)
        simlsh_signature_free(g[i]);
    simlsh_results_free(res);
    simlsh_index_free(iy);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    return family_end(store ? "index (signatures stored)" : "index (fingerprints only)", u0, a0);
}

static unsigned long fam_groups(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    enum {
        NP = 3000
    };
    static uint64_t a[NP], b[NP];
    static double sc[NP];
    /* Chains and stars over spread ids, one large component (cut by the
     * batches' max_docs) and repeated pairs (the id array shrinks). */
    for (size_t i = 0; i < NP; i++) {
        a[i] = (i % 700) * 1000003u;
        b[i] = i < 1500 ? a[i] + 1000003u : (i % 50) * 7919u + 5;
        sc[i] = (double)(i % 97) / 97.0;
    }
    simlsh_results *res = v2_results();
    size_t ng = 0;
    CHECK_OK(simlsh_group_components(res, &ng, a, b, NP));
    CHECK(ng > 0);
    CHECK_OK(simlsh_group_star(res, &ng, a, b, sc, NP, b, 10));
    CHECK(ng > 0);
    CHECK_OK(simlsh_group_batches(res, &ng, a, b, sc, NP, 64));
    CHECK(ng > 1);
    size_t cnt = 0;
    CHECK_OK(simlsh_group_batch_ids(NULL, 0, &cnt, res, 0));
    CHECK(cnt > 0 && cnt <= 64);
    CHECK_OK(simlsh_group_batches(res, &ng, a, b, NULL, NP, 0));
    simlsh_results_free(res);
    return family_end("groups", u0, a0);
}

static unsigned long fam_forest(const uint32_t *vals, uint32_t np)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(0);
    simlsh_forest *fo = NULL;
    CHECK_OK(simlsh_forest_new(&fo, p));
    simlsh_signature *g = NULL;
    for (size_t i = 0; i < 1500; i++) {
        CHECK_OK(simlsh_signature_from_values(&g, p, vals + i * np, np));
        CHECK_OK(simlsh_forest_insert(fo, i, g));
        simlsh_signature_free(g);
    }
    for (uint64_t id = 0; id < 100; id++)
        CHECK_OK(simlsh_forest_remove(fo, id));
    CHECK_OK(simlsh_signature_from_values(&g, p, vals + 500 * (size_t)np, np));
    simlsh_results *res = v2_results();
    CHECK_OK(simlsh_forest_query_topk(res, fo, g, 30));
    CHECK(simlsh_results_count(res) >= 20);
    size_t need = 0;
    CHECK_OK(simlsh_forest_save(NULL, 0, &need, fo));
    unsigned char *buf = malloc(need);
    CHECK_OK(simlsh_forest_save(buf, need, &need, fo));
    simlsh_forest *l = NULL;
    CHECK_OK(simlsh_forest_load(&l, buf, need, &AL2));
    free(buf);
    CHECK_OK(simlsh_forest_query_topk(res, l, g, 5));
    CHECK_OK(simlsh_forest_insert(l, 99999, g));
    simlsh_forest_free(l);
    simlsh_results_free(res);
    simlsh_signature_free(g);
    simlsh_forest_free(fo);
    simlsh_params_free(p);
    return family_end("forest", u0, a0);
}

static unsigned long fam_ensemble(const uint32_t *vals, uint32_t np)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(1);
    simlsh_ensemble *en = NULL;
    CHECK_OK(simlsh_ensemble_new(&en, p));
    simlsh_signature *g = NULL;
    for (size_t i = 0; i < 600; i++) {
        CHECK_OK(simlsh_signature_from_values(&g, p, vals + i * np, np));
        CHECK_OK(simlsh_ensemble_insert(en, i, g, 10 + i % 300));
        simlsh_signature_free(g);
    }
    CHECK_OK(simlsh_ensemble_remove(en, 3));
    CHECK_OK(simlsh_signature_from_values(&g, p, vals + 40 * (size_t)np, np));
    simlsh_results *res = v2_results();
    CHECK_OK(simlsh_ensemble_query(res, en, g, 50, 0.5, 0));
    CHECK(simlsh_results_count(res) >= 1);
    size_t need = 0;
    CHECK_OK(simlsh_ensemble_save(NULL, 0, &need, en));
    unsigned char *buf = malloc(need);
    CHECK_OK(simlsh_ensemble_save(buf, need, &need, en));
    simlsh_ensemble *l = NULL;
    CHECK_OK(simlsh_ensemble_load(&l, buf, need, &AL2));
    free(buf);
    CHECK_OK(simlsh_ensemble_query(res, l, g, 50, 0.5, 0));
    simlsh_ensemble_free(l);
    simlsh_results_free(res);
    simlsh_signature_free(g);
    simlsh_ensemble_free(en);
    simlsh_params_free(p);
    return family_end("ensemble", u0, a0);
}

int main(void)
{
    HOOKS.alloc = t_alloc;
    HOOKS.free = t_free;
    HOOKS.user = &T;
    CHECK(fam_helpers() == 0);
    CHECK(fam_params() == 0);
    CHECK(fam_signatures() == 0);
    CHECK(fam_sets() == 0);
    CHECK(fam_query() == 0);
    CHECK_OK(simlsh__alloc_fill_v2(&AL2, &HOOKS));
    make_texts();
    int64_t np64 = 0;
    simlsh_params *p = v2_params(0);
    CHECK_OK(simlsh_params_get_int(p, SIMLSH_PARAM_NUM_PERM, &np64));
    simlsh_params_free(p);
    uint32_t np = (uint32_t)np64;
    uint32_t *vals = malloc((size_t)NDOCS * np * sizeof *vals);
    CHECK(vals != NULL);
    CHECK(fam_text() == 0);
    CHECK(fam_groups() == 0);
    CHECK(fam_sign_batch(vals, np) == 0);
    CHECK(fam_index(vals, np, 1) == 0);
    CHECK(fam_index(vals, np, 0) == 0);
    CHECK(fam_forest(vals, np) == 0);
    CHECK(fam_ensemble(vals, np) == 0);
    free(vals);
    CHECK(simlsh__alloc_unsized_v2_frees() == 0);
    /* What the hooks were asked for: the blocks' own sizes, no header. */
    printf("all families: %ld blocks, %zu bytes asked of the hooks\n", T.allocs, T.bytes);
    return tu_finish("alloc-sized");
}
