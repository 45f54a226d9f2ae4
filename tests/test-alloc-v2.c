/*
 * simlsh_allocator_v2 (issue 16, item 6): the free hook gets exactly the
 * size its alloc hook was asked for, for every block of every object built
 * from params with v2 hooks (shingle sets, signatures of both schemes, an
 * index with its queries, pairs and clusters), nothing leaks, a failing
 * alloc hook gives SIMLSH_ENOMEM, and bad structs are refused.
 *
 * The hooks keep a table of live blocks with their sizes and count every
 * free whose size differs from the one recorded, or whose block is unknown.
 */
#include "testutil.h"

#define MAX_LIVE 65536

typedef struct {
    void *p[MAX_LIVE];
    size_t n[MAX_LIVE];
    size_t live;
    long allocs, frees, bad_size, unknown, fail_at, count;
} book;

static void *v2_alloc(void *user, size_t size)
{
    book *b = user;
    b->count++;
    if ((b->fail_at && b->count == b->fail_at) || b->live == MAX_LIVE)
        return NULL;
    void *p = malloc(size);
    if (p != NULL) {
        b->p[b->live] = p;
        b->n[b->live] = size;
        b->live++;
        b->allocs++;
    }
    return p;
}

static void v2_free(void *user, void *p, size_t size)
{
    book *b = user;
    b->frees++;
    for (size_t i = b->live; i-- > 0;) {
        if (b->p[i] == p) {
            b->bad_size += b->n[i] != size;
            b->live--;
            b->p[i] = b->p[b->live];
            b->n[i] = b->n[b->live];
            free(p);
            return;
        }
    }
    b->unknown++;
}

static book B;
static simlsh_allocator_v2 HOOKS = SIMLSH_ALLOCATOR_V2_INIT;

static const char *const docs[] = {
    "the cat sat on the mat and looked at the dog",
    "the cat sat on the mat and looked at the dog!",
    "a completely different sentence about harbour logs",
    "the cat sat on a mat and looked at the dog",
};

/* The whole pipeline through the hooks; returns the number of pairs. */
static size_t pipeline(int scheme, int unit)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_preset(p, "dedup"));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit));
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    long before = B.allocs;
    CHECK_OK(simlsh_params_set_allocator(p, &HOOKS));
    CHECK(B.allocs == before); /* the params object keeps its own hooks */

    simlsh_index *ix;
    simlsh_results *res;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_results_new(&res, NULL));
    simlsh_shingleset *set[4];
    for (size_t i = 0; i < 4; i++) {
        simlsh_signature *g;
        CHECK_OK(simlsh_shingleset_new(&set[i], p));
        CHECK_OK(simlsh_signature_new(&g, p));
        /* in chunks, so the shingler's buffers grow */
        CHECK_OK(simlsh_signature_begin(g));
        CHECK_OK(simlsh_shingleset_begin(set[i]));
        for (size_t at = 0, n = strlen(docs[i]); at < n; at += 3) {
            size_t len = n - at < 3 ? n - at : 3;
            CHECK_OK(simlsh_signature_feed(g, docs[i] + at, len));
            CHECK_OK(simlsh_shingleset_feed(set[i], docs[i] + at, len));
        }
        CHECK_OK(simlsh_signature_end(g));
        CHECK_OK(simlsh_shingleset_end(set[i]));
        uint64_t feats[300];
        for (size_t k = 0; k < 300; k++)
            feats[k] = k * 7919 + i;
        CHECK_OK(simlsh_shingleset_add_features(set[i], feats, 300));
        simlsh_signature *c;
        CHECK_OK(simlsh_signature_copy(&c, g));
        CHECK_OK(simlsh_index_insert(ix, i, c));
        simlsh_signature_free(c);
        simlsh_signature_free(g);
    }
    simlsh_shingleset *cp;
    CHECK_OK(simlsh_shingleset_copy(&cp, set[0]));
    simlsh_shingleset_free(cp);
    CHECK_OK(simlsh_index_pairs(res, ix, SIMLSH_QUERY_VERIFY, 0));
    size_t pairs = simlsh_results_count(res);
    CHECK_OK(simlsh_index_cluster(res, ix, 0));
    CHECK_OK(simlsh_index_remove(ix, 2));
    for (size_t i = 0; i < 4; i++)
        simlsh_shingleset_free(set[i]);
    simlsh_results_free(res);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    return pairs;
}

int main(void)
{
    HOOKS.alloc = v2_alloc;
    HOOKS.free = v2_free;
    HOOKS.user = &B;

    for (int scheme = 0; scheme < 2; scheme++)
        for (int unit = 0; unit < 3; unit++)
            CHECK(pipeline(scheme, unit) >= 1);
    printf("v2 hooks: %ld allocs, %ld frees\n", B.allocs, B.frees);
    CHECK(B.allocs > 50);
    CHECK(B.live == 0 && B.allocs == B.frees);
    CHECK(B.bad_size == 0);
    CHECK(B.unknown == 0);

    /* A failing hook is SIMLSH_ENOMEM, with *out NULL and nothing leaked. */
    simlsh_params *p;
    simlsh_signature *g = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_allocator(p, &HOOKS));
    B.count = 0;
    B.fail_at = 1;
    CHECK_RC(simlsh_signature_new(&g, p), SIMLSH_ENOMEM);
    CHECK(g == NULL && B.live == 0);
    B.fail_at = 0;

    /* Bad structs are refused and the params keep their hooks. */
    simlsh_allocator_v2 bad = HOOKS;
    bad.size = sizeof bad - 1;
    CHECK_RC(simlsh_params_set_allocator(p, &bad), SIMLSH_EINVAL);
    bad = HOOKS;
    bad.free = NULL;
    CHECK_RC(simlsh_params_set_allocator(p, &bad), SIMLSH_EINVAL);
    bad = HOOKS;
    bad.alloc = NULL;
    CHECK_RC(simlsh_params_set_allocator(p, &bad), SIMLSH_EINVAL);
    bad = HOOKS;
    bad.reserved[3] = &bad;
    CHECK_RC(simlsh_params_set_allocator(p, &bad), SIMLSH_EINVAL);
    long before = B.allocs;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK(B.allocs > before); /* still HOOKS */
    simlsh_signature_free(g);
    /* NULL goes back to malloc/free. */
    CHECK_OK(simlsh_params_set_allocator(p, NULL));
    before = B.allocs;
    CHECK_OK(simlsh_signature_new(&g, p));
    CHECK(B.allocs == before);
    simlsh_signature_free(g);
    /* A copy of params with v2 hooks is itself allocated through them. */
    simlsh_params *q;
    CHECK_OK(simlsh_params_set_allocator(p, &HOOKS));
    CHECK_OK(simlsh_params_copy(&q, p));
    CHECK(B.live == 1);
    simlsh_params_free(q);
    simlsh_params_free(p);
    CHECK(B.live == 0 && B.bad_size == 0 && B.unknown == 0);
    return tu_finish("alloc-v2");
}
