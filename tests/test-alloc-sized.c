/*
 * The v2 allocator's free gets exactly the size that was allocated, from
 * call sites that know it (issue 16, item 6): the header that v2 blocks
 * carry today (SIMLSH__ALLOC_V2_HEADER) can go only when no call site frees
 * a v2 block without its size. A table of live blocks checks every free's
 * size and pointer, and simlsh__alloc_unsized_v2_frees() counts the frees
 * that still go through the header.
 *
 * The families below are converted and must stay at zero unsized frees:
 * params, signatures built from features and values, shingle sets built
 * from features (their vector growth included), the index's query scratch
 * (vec.h). The paths through lib/shingle.c (text), lib/pool.c's locking
 * allocator (batch calls), the index tables, forest, ensemble, group and
 * file code still free unsized; their counts are printed, and once they
 * reach zero the header can be switched off (alloc.h).
 */
#include "alloc.h"
#include "testutil.h"

#define MAX_LIVE 65536

typedef struct {
    void *p[MAX_LIVE];
    size_t n[MAX_LIVE];
    size_t live;
    long allocs, frees, bad_size, unknown;
} table;

static table T;

static void *t_alloc(void *user, size_t size)
{
    table *t = user;
    if (t->live == MAX_LIVE)
        return NULL;
    void *p = malloc(size);
    if (p != NULL) {
        t->p[t->live] = p;
        t->n[t->live] = size;
        t->live++;
        t->allocs++;
    }
    return p;
}

static void t_free(void *user, void *p, size_t size)
{
    table *t = user;
    t->frees++;
    for (size_t i = t->live; i-- > 0;) {
        if (t->p[i] == p) {
            t->bad_size += t->n[i] != size;
            t->live--;
            t->p[i] = t->p[t->live];
            t->n[i] = t->n[t->live];
            free(p);
            return;
        }
    }
    t->unknown++;
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
 * frees went through the header. */
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

/* Queries only: the index is built before the count starts (its tables
 * are not converted yet), the queries' scratch vectors are. */
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

/* Not converted yet: counted, not asserted (see the top comment). */
static void fam_pending(void)
{
    unsigned long u0 = simlsh__alloc_unsized_v2_frees();
    long a0 = T.allocs;
    simlsh_params *p = v2_params(1);
    static const char text[] = "the cat sat on the mat and looked at the dog";
    simlsh_signature *g = NULL;
    simlsh_shingleset *s = NULL;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK_OK(simlsh_signature_add_text(g, text, sizeof text - 1));
    CHECK_OK(simlsh_shingleset_new(&s, p));
    CHECK_OK(simlsh_shingleset_add_text(s, text, sizeof text - 1));
    uint32_t vals[2 * 256];
    const void *texts[2] = {text, text};
    size_t lens[2] = {sizeof text - 1, 10};
    CHECK_OK(simlsh_sign_batch(vals, NULL, p, texts, lens, 2, 1));
    simlsh_index *ix = NULL;
    simlsh_results *res = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_index_insert(ix, 1, g));
    CHECK_OK(simlsh_index_pairs_v2(res, ix, SIMLSH_QUERY_VERIFY, 0, 0.0, 2));
    CHECK_OK(simlsh_index_cluster(res, ix, 0));
    simlsh_forest *fo = NULL;
    CHECK_OK(simlsh_forest_new(&fo, p));
    CHECK_OK(simlsh_forest_insert(fo, 1, g));
    simlsh_forest_free(fo);
    simlsh_results_free(res);
    simlsh_index_free(ix);
    simlsh_shingleset_free(s);
    simlsh_signature_free(g);
    simlsh_params_free(p);
    family_end("pending: text, batch, tables", u0, a0);
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
    fam_pending();
    return tu_finish("alloc-sized");
}
