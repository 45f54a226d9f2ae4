/* Batch insertion (simlsh_index_insert_values / _batch): the index it
 * builds saves to the same bytes as one built by simlsh_index_insert() in
 * the same order, for 1, 2, 3 and 8 threads, with and without stored
 * signatures, with buckets big enough for overflow lists, after removes
 * (free slots reused); every error leaves the saved bytes as they were,
 * and so does every failed allocation (an OOM loop). */
#include "index/internal.h"
#include "testutil.h"

#define NUM_PERM 64
#define BANDS 16
#define ROWS 4
#define NDOCS 4000

static const uint32_t thread_counts[] = {1, 2, 3, 8};
#define NTC (sizeof thread_counts / sizeof thread_counts[0])

static uint64_t feat(uint64_t stream, uint64_t i)
{
    tu_rng r = {stream * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + 1};
    return tu_next(&r);
}

static simlsh_params *mk_params(const simlsh_allocator *al, int store)
{
    simlsh_params *p = NULL;
    if (simlsh_params_new(&p, al) != 0)
        return NULL;
    if (simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, NUM_PERM) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, BANDS) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, ROWS) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store) != 0) {
        simlsh_params_free(p);
        return NULL;
    }
    return p;
}

/* The documents: big groups of exact copies (their buckets become lists
 * in every band; the second half of the documents has groups of its own,
 * so a batch of it makes lists while older ones grow), near copies
 * (windows of one stream), and unrelated ones; ids scattered. */
typedef struct {
    size_t n;
    uint64_t id[NDOCS];
    uint32_t val[NDOCS][NUM_PERM];
    simlsh_signature *sig[NDOCS];
} docs;

static int docs_make(docs *d, const simlsh_params *p, size_t n, uint64_t seed)
{
    d->n = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t f[60];
        uint64_t stream, lo;
        if (i % 10 < 4) {
            stream = seed * 1000 + i % 37 % 5 + (i >= n / 2 ? 50 : 0);
            lo = 0;
        } else if (i % 10 < 7) {
            stream = seed * 1000 + 100 + i % 211;
            lo = (i / 211) % 4 * 3; /* windows of one stream: near copies */
        } else {
            stream = seed * 1000 + 1000000 + i;
            lo = 0;
        }
        for (size_t k = 0; k < 60; k++)
            f[k] = feat(stream, lo + k);
        d->sig[i] = NULL;
        if (simlsh_signature_new(&d->sig[i], p) != 0 ||
            simlsh_signature_add_features(d->sig[i], f, 60) != 0)
            return -1;
        size_t cnt;
        if (simlsh_signature_values(d->val[i], NUM_PERM, &cnt, d->sig[i]) != 0)
            return -1;
        d->id[i] = feat(seed ^ 0xabcdef, i) % 1000000007u;
    }
    /* Ids unique (a collision would be a bug of the test, not the index). */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (d->id[i] == d->id[j])
                d->id[i] += 1000000007u;
    return 0;
}

static void docs_free(docs *d)
{
    for (size_t i = 0; i < d->n; i++)
        simlsh_signature_free(d->sig[i]);
}

static int tables_ok(const struct simlsh_index *ix);

static uint8_t *save(const simlsh_index *ix, size_t *size)
{
    if (simlsh_index_save(NULL, 0, size, ix) != 0)
        return NULL;
    uint8_t *b = malloc(*size);
    if (b != NULL && simlsh_index_save(b, *size, size, ix) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

static int same_bytes(const simlsh_index *a, const simlsh_index *b)
{
    if (!tables_ok(a) || !tables_ok(b))
        return 0;
    size_t na, nb;
    uint8_t *x = save(a, &na), *y = save(b, &nb);
    int same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* White box: every live document is in every band exactly once, inline
 * or in one list, in the run of its fingerprint; every referenced list is
 * non-empty and referenced once; lists on the free list are not referenced.
 * Saved bytes alone would miss a band that lost a member, since with
 * stored signatures they are computed from the signatures. */
static int tables_ok(const struct simlsh_index *ix)
{
    size_t *seen = calloc(ix->nslots + 1, sizeof *seen);
    uint8_t *lref = calloc(ix->novf + 1, 1);
    int ok = seen != NULL && lref != NULL;
    for (uint32_t b = 0; ok && b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        size_t members = 0;
        memset(lref, 0, ix->novf + 1);
        for (size_t p = 0; ok && p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            const uint32_t *m = &t[p].slot;
            uint32_t nm = 1;
            if (is_ref(t[p].slot)) {
                size_t li = t[p].slot & ~REF_BIT;
                ok = li < ix->novf && !lref[li] && ix->ovf[li].slots != NULL && ix->ovf[li].n > 0;
                if (!ok)
                    break;
                lref[li] = 1;
                m = ix->ovf[li].slots;
                nm = ix->ovf[li].n;
            }
            for (uint32_t i = 0; ok && i < nm; i++) {
                ok = m[i] < ix->nslots && seen[m[i]] == b;
                seen[m[i]] = b + 1;
                if (ok && ix->store) {
                    uint32_t fps[SIMLSH__MAX_PERM];
                    simlsh__ix_compute_fps(ix, sig_of(ix, m[i]), fps);
                    ok = fps[b] == t[p].fp;
                }
                /* the entry lies in the gap-free run from its home */
                for (size_t q = fastrange(t[p].fp, ix->tcap); ok && q != p;
                     q = next_pos(q, ix->tcap))
                    ok = t[q].slot != NO_SLOT;
            }
            members += nm;
        }
        ok = ok && members == ix->count;
    }
    for (size_t p = 0; ok && p < ix->idcap; p++)
        if (ix->idmap[p].slot != NO_SLOT)
            ok = seen[ix->idmap[p].slot] == ix->bands &&
                 ix->ids[ix->idmap[p].slot] == ix->idmap[p].id;
    free(seen);
    free(lref);
    return ok;
}

/* Pairs and clusters agree too (they follow from the same content, but
 * the tables' layout differs, and these read the tables). */
static void check_same_answers(const simlsh_index *want, const simlsh_index *got, int store)
{
    simlsh_results *a = NULL, *b = NULL;
    CHECK_OK(simlsh_results_new(&a, NULL));
    CHECK_OK(simlsh_results_new(&b, NULL));
    int flags[2] = {0, SIMLSH_QUERY_VERIFY};
    for (int f = 0; f < (store ? 2 : 1); f++) {
        CHECK_OK(simlsh_index_pairs(a, want, flags[f], 0));
        CHECK_OK(simlsh_index_pairs(b, got, flags[f], 0));
        CHECK(tu_same_results(a, b));
        CHECK_OK(simlsh_index_cluster(a, want, flags[f]));
        CHECK_OK(simlsh_index_cluster(b, got, flags[f]));
        CHECK(tu_same_results(a, b));
    }
    simlsh_results_free(a);
    simlsh_results_free(b);
}

/* Three batches with removes between them (stored signatures only):
 * batches of [0, n1), [n1, n2), [n2, n); removes of every 3rd document
 * of the first batch before the second, every 5th of the second before
 * the third. use_sigs: the signature form instead of the matrix. */
static simlsh_index *build(const simlsh_params *p, const docs *d, size_t n1, size_t n2,
                           uint32_t nthreads, int mode /* 0 one at a time, 1 values, 2 sigs */)
{
    simlsh_index *ix = NULL;
    if (simlsh_index_new(&ix, p) != 0)
        return NULL;
    int64_t store;
    simlsh_params_get_int(p, SIMLSH_PARAM_STORE_SIGNATURES, &store);
    size_t cut[4] = {0, n1, n2, d->n};
    for (int s = 0; s < 3; s++) {
        size_t lo = cut[s], hi = cut[s + 1];
        int rc = 0;
        if (mode == 0) {
            for (size_t i = lo; i < hi && rc == 0; i++)
                rc = simlsh_index_insert(ix, d->id[i], d->sig[i]);
        } else if (mode == 1) {
            rc = simlsh_index_insert_values(ix, d->id + lo, &d->val[lo][0], hi - lo, nthreads);
        } else {
            rc = simlsh_index_insert_batch(
                ix, d->id + lo, (const simlsh_signature *const *)d->sig + lo, hi - lo, nthreads);
        }
        CHECK_OK(rc);
        if (store && s < 2)
            for (size_t i = lo; i < hi; i += s == 0 ? 3 : 5)
                CHECK_OK(simlsh_index_remove(ix, d->id[i]));
    }
    return ix;
}

static void test_identical(int store)
{
    simlsh_params *p = mk_params(NULL, store);
    static docs d;
    CHECK(p != NULL && docs_make(&d, p, NDOCS, 7) == 0);
    simlsh_index *want = build(p, &d, 1500, 2600, 1, 0);
    CHECK(want != NULL);
    for (size_t t = 0; t < NTC; t++) {
        for (int mode = 1; mode <= 2; mode++) {
            simlsh_index *got = build(p, &d, 1500, 2600, thread_counts[t], mode);
            CHECK(got != NULL);
            if (got == NULL)
                continue;
            if (!same_bytes(want, got))
                fprintf(stderr, "store %d, %u threads, mode %d: saved bytes differ\n", store,
                        thread_counts[t], mode);
            CHECK(same_bytes(want, got));
            if (t == 1)
                check_same_answers(want, got, store);
            simlsh_index_free(got);
        }
    }
    /* One batch of everything, into an index that already has documents
     * and then reserve()d so that no table grows during the batch. */
    simlsh_index *seq = NULL, *bat = NULL;
    CHECK_OK(simlsh_index_new(&seq, p));
    CHECK_OK(simlsh_index_new(&bat, p));
    CHECK_OK(simlsh_index_reserve(bat, NDOCS));
    for (size_t i = 0; i < NDOCS; i++)
        CHECK_OK(simlsh_index_insert(seq, d.id[i], d.sig[i]));
    CHECK_OK(simlsh_index_insert_values(bat, d.id, &d.val[0][0], 10, 2));
    CHECK_OK(simlsh_index_insert_values(bat, d.id + 10, &d.val[10][0], NDOCS - 10, 8));
    CHECK(same_bytes(seq, bat));
    size_t count;
    CHECK_OK(simlsh_index_count(&count, bat));
    CHECK(count == NDOCS);
    for (size_t i = 0; i < NDOCS; i += 97)
        CHECK(simlsh_index_contains(bat, d.id[i]) == 1);
    simlsh_index_free(seq);
    simlsh_index_free(bat);
    simlsh_index_free(want);
    docs_free(&d);
    simlsh_params_free(p);
}

/* simlsh_index_reserve_v2(): tables grown on several threads, with
 * documents in them (their entries move) and large enough that the call
 * does use its threads, give the index one thread gives, byte for byte,
 * and the same answers. */
static void test_reserve_threads(int store)
{
    simlsh_params *p = mk_params(NULL, store);
    CHECK(p != NULL);
    static docs d;
    CHECK(docs_make(&d, p, NDOCS, 5) == 0);
    simlsh_index *want = NULL;
    CHECK_OK(simlsh_index_new(&want, p));
    for (size_t i = 0; i < NDOCS; i++)
        CHECK_OK(simlsh_index_insert(want, d.id[i], d.sig[i]));
    CHECK_RC(simlsh_index_reserve_v2(NULL, 10, 2), SIMLSH_EINVAL);
    /* enough room that the tables pass the one-thread size (2^20 entries
     * over all bands) */
    size_t big = ((size_t)1 << 21) / BANDS;
    for (size_t t = 0; t < NTC; t++) {
        simlsh_index *got = NULL;
        CHECK_OK(simlsh_index_new(&got, p));
        CHECK_OK(simlsh_index_reserve_v2(got, 100, thread_counts[t]));
        CHECK_OK(simlsh_index_insert_values(got, d.id, &d.val[0][0], NDOCS / 2, 1));
        CHECK_OK(simlsh_index_reserve_v2(got, NDOCS / 4, thread_counts[t])); /* no-op */
        CHECK_OK(simlsh_index_reserve_v2(got, big, thread_counts[t]));
        for (size_t i = NDOCS / 2; i < NDOCS; i++)
            CHECK_OK(simlsh_index_insert(got, d.id[i], d.sig[i]));
        if (!same_bytes(want, got))
            fprintf(stderr, "reserve_v2, store %d, %u threads: saved bytes differ\n", store,
                    thread_counts[t]);
        CHECK(same_bytes(want, got));
        check_same_answers(want, got, store);
        simlsh_index_free(got);
    }
    simlsh_index_free(want);
    docs_free(&d);
    simlsh_params_free(p);
}

/* Every error: the saved bytes do not change, and the index works on as
 * if the failed call never happened. */
static void test_errors(void)
{
    simlsh_params *p = mk_params(NULL, 1), *other = mk_params(NULL, 1);
    CHECK(p != NULL && other != NULL);
    simlsh_params_set_int(other, SIMLSH_PARAM_SEED, 99);
    static docs d;
    CHECK(docs_make(&d, p, 2000, 3) == 0);
    simlsh_index *ix = NULL, *ref = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_index_new(&ref, p));
    for (size_t i = 0; i < 1000; i++)
        CHECK_OK(simlsh_index_insert(ref, d.id[i], d.sig[i]));
    CHECK_OK(simlsh_index_insert_values(ix, d.id, &d.val[0][0], 1000, 2));
    for (size_t i = 0; i < 1000; i += 7) {
        CHECK_OK(simlsh_index_remove(ref, d.id[i]));
        CHECK_OK(simlsh_index_remove(ix, d.id[i]));
    }
    CHECK(same_bytes(ref, ix));

    static uint64_t ids[1000];
    static uint32_t vals[1000][NUM_PERM];
    memcpy(ids, d.id + 1000, sizeof ids);
    memcpy(vals, d.val + 1000, sizeof vals);
    for (uint32_t t = 1; t <= 3; t++) {
        /* A duplicate as the very last id: every band has done all the
         * rest (lists made and grown) when the id map finds it. */
        ids[999] = ids[10];
        CHECK_RC(simlsh_index_insert_values(ix, ids, &vals[0][0], 1000, t), SIMLSH_EEXIST);
        CHECK(same_bytes(ref, ix));
        ids[999] = d.id[1999];
        ids[500] = d.id[3]; /* present (not removed: 3 % 7 != 0) */
        CHECK_RC(simlsh_index_insert_values(ix, ids, &vals[0][0], 1000, t), SIMLSH_EEXIST);
        CHECK(same_bytes(ref, ix));
        ids[500] = d.id[1500];
        memset(vals[700], 0xff, sizeof vals[700]);
        CHECK_RC(simlsh_index_insert_values(ix, ids, &vals[0][0], 1000, t), SIMLSH_EEMPTY);
        CHECK(same_bytes(ref, ix));
        memcpy(vals[700], d.val[1700], sizeof vals[700]);
        /* A removed id may come back. */
        ids[0] = d.id[0];
        CHECK_RC(simlsh_index_insert_values(ix, ids, &vals[0][0], 1, t), 0);
        CHECK_OK(simlsh_index_insert(ref, d.id[0], d.sig[1000]));
        CHECK(same_bytes(ref, ix));
        CHECK_OK(simlsh_index_remove(ref, d.id[0]));
        CHECK_OK(simlsh_index_remove(ix, d.id[0]));
        ids[0] = d.id[1000];
    }
    simlsh_signature *bad = NULL, *open = NULL, *empty = NULL;
    CHECK_OK(simlsh_signature_new(&bad, other));
    uint64_t f = 1;
    CHECK_OK(simlsh_signature_add_features(bad, &f, 1));
    CHECK_OK(simlsh_signature_new(&open, p));
    CHECK_OK(simlsh_signature_begin(open));
    CHECK_OK(simlsh_signature_new(&empty, p));
    const simlsh_signature *sv[1000];
    for (size_t i = 0; i < 1000; i++)
        sv[i] = d.sig[1000 + i];
    struct {
        const simlsh_signature *s;
        int rc;
    } cases[] = {{bad, SIMLSH_EMISMATCH},
                 {open, SIMLSH_ESTATE},
                 {empty, SIMLSH_EEMPTY},
                 {NULL, SIMLSH_EINVAL}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sv[900] = cases[c].s;
        CHECK_RC(simlsh_index_insert_batch(ix, ids, sv, 1000, 2), cases[c].rc);
        CHECK(same_bytes(ref, ix));
    }
    sv[900] = d.sig[1900];
    CHECK_RC(simlsh_index_insert_values(NULL, ids, &vals[0][0], 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_values(ix, NULL, &vals[0][0], 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_values(ix, ids, NULL, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_batch(ix, ids, NULL, 1, 1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_insert_values(ix, NULL, NULL, 0, 1), 0);
    CHECK(same_bytes(ref, ix));

    /* After all that, the rest goes in as it would have. */
    CHECK_OK(simlsh_index_insert_batch(ix, ids, sv, 1000, 3));
    for (size_t i = 1000; i < 2000; i++)
        CHECK_OK(simlsh_index_insert(ref, d.id[i], d.sig[i]));
    CHECK(same_bytes(ref, ix));
    check_same_answers(ref, ix, 1);
    for (size_t i = 0; i < 2000; i += 3) {
        int a = simlsh_index_remove(ref, d.id[i]), b = simlsh_index_remove(ix, d.id[i]);
        CHECK(a == b);
    }
    CHECK(same_bytes(ref, ix));

    simlsh_signature_free(bad);
    simlsh_signature_free(open);
    simlsh_signature_free(empty);
    simlsh_index_free(ix);
    simlsh_index_free(ref);
    docs_free(&d);
    simlsh_params_free(p);
    simlsh_params_free(other);
}

/* A bucket of INLINE_MAX - 3 inline members gets 10 more in a batch (so
 * it becomes a list in every band) that then fails on its last id: the
 * rollback must put the older members back inline. With and without
 * stored signatures. */
static void test_unconvert(int store)
{
    simlsh_params *p = mk_params(NULL, store);
    simlsh_signature *x = NULL;
    CHECK_OK(simlsh_signature_new(&x, p));
    uint64_t f[50];
    for (int k = 0; k < 50; k++)
        f[k] = feat(77, (uint64_t)k);
    CHECK_OK(simlsh_signature_add_features(x, f, 50));
    uint32_t v[12][NUM_PERM];
    uint64_t ids[12];
    size_t cnt;
    for (int i = 0; i < 12; i++) {
        CHECK_OK(simlsh_signature_values(v[i], NUM_PERM, &cnt, x));
        ids[i] = 100 + (uint64_t)i;
    }
    for (uint32_t t = 1; t <= 3; t++) {
        simlsh_index *ix = NULL, *ref = NULL;
        CHECK_OK(simlsh_index_new(&ix, p));
        CHECK_OK(simlsh_index_new(&ref, p));
        for (uint64_t i = 0; i < 5; i++) {
            CHECK_OK(simlsh_index_insert(ix, i, x));
            CHECK_OK(simlsh_index_insert(ref, i, x));
        }
        ids[11] = 3;
        CHECK_RC(simlsh_index_insert_values(ix, ids, &v[0][0], 12, t), SIMLSH_EEXIST);
        CHECK(same_bytes(ref, ix));
        ids[11] = 111;
        CHECK_OK(simlsh_index_insert_values(ix, ids, &v[0][0], 12, t));
        for (int i = 0; i < 12; i++)
            CHECK_OK(simlsh_index_insert(ref, ids[i], x));
        CHECK(same_bytes(ref, ix));
        check_same_answers(ref, ix, store);
        simlsh_index_free(ix);
        simlsh_index_free(ref);
    }
    simlsh_signature_free(x);
    simlsh_params_free(p);
}

/* Fail allocation k for k = 1, 2, ... until the call succeeds: each
 * failure is SIMLSH_ENOMEM with the saved bytes unchanged and no leak. */
static void test_oom(uint32_t nthreads)
{
    static tu_alloc_state st;
    memset(&st, 0, sizeof st);
    simlsh_allocator al = tu_allocator(&st);
    simlsh_params *p = mk_params(&al, 1);
    static docs d;
    CHECK(p != NULL && docs_make(&d, p, 1200, 5) == 0);
    simlsh_index *ref = NULL;
    CHECK_OK(simlsh_index_new(&ref, p));
    for (size_t i = 0; i < 1200; i++)
        CHECK_OK(simlsh_index_insert(ref, d.id[i], d.sig[i]));
    long fails = 0;
    for (long k = 1; k < 100000; k++) {
        simlsh_index *ix = NULL;
        CHECK_OK(simlsh_index_new(&ix, p));
        CHECK_OK(simlsh_index_insert_values(ix, d.id, &d.val[0][0], 600, nthreads));
        size_t n0;
        uint8_t *before = save(ix, &n0);
        long live = st.live;
        st.count = 0;
        st.fail_at = k;
        int rc = simlsh_index_insert_values(ix, d.id + 600, &d.val[600][0], 600, nthreads);
        st.fail_at = 0;
        if (rc == 0) {
            CHECK(same_bytes(ref, ix));
            simlsh_index_free(ix);
            free(before);
            break;
        }
        fails++;
        CHECK_RC(rc, SIMLSH_ENOMEM);
        size_t n1;
        uint8_t *after = save(ix, &n1);
        CHECK(before != NULL && after != NULL && n0 == n1 && memcmp(before, after, n0) == 0);
        free(after);
        free(before);
        /* Memory held may grow (tables), but nothing leaks: it all goes
         * with the index. And the index still takes the batch. */
        (void)live;
        CHECK_OK(simlsh_index_insert_values(ix, d.id + 600, &d.val[600][0], 600, nthreads));
        CHECK(same_bytes(ref, ix));
        simlsh_index_free(ix);
    }
    CHECK(fails > 3);
    simlsh_index_free(ref);
    docs_free(&d);
    simlsh_params_free(p);
    CHECK(st.live == 0);
}

int main(void)
{
    test_identical(1);
    test_identical(0);
    test_errors();
    test_reserve_threads(1);
    test_reserve_threads(0);
    test_unconvert(1);
    test_unconvert(0);
    test_oom(1);
    test_oom(2);
    return tu_finish("index-batch");
}
