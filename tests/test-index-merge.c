/* simlsh_index_copy, simlsh_index_merge and the per-call threshold of
 * simlsh_index_query_v2 / simlsh_index_query_batch_v2: snapshots that stay
 * independent, merges of shards that save to the bytes of one index built
 * from the union in id order, all or nothing under duplicates, mismatches
 * and every allocation failure, and thresholds against brute force. */
#include <pthread.h>

#include "index-common.h"
#include "testutil.h"

static uint8_t *save_bytes(const simlsh_index *ix, size_t *n)
{
    *n = 0;
    CHECK_OK(simlsh_index_save(NULL, 0, n, ix));
    uint8_t *buf = malloc(*n ? *n : 1);
    size_t n2 = 0;
    CHECK_OK(simlsh_index_save(buf, *n, &n2, ix));
    CHECK(n2 == *n);
    return buf;
}

/* Do a and b save to the same bytes? */
static int same_bytes(const simlsh_index *a, const simlsh_index *b)
{
    size_t na, nb;
    uint8_t *x = save_bytes(a, &na), *y = save_bytes(b, &nb);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* Does ix save to exactly these bytes? */
static int saves_to(const simlsh_index *ix, const uint8_t *want, size_t n)
{
    size_t m;
    uint8_t *got = save_bytes(ix, &m);
    int same = m == n && memcmp(got, want, n) == 0;
    free(got);
    return same;
}

static size_t order_of[MAXDOCS];
static const corpus *order_ctx;
static int cmp_order(const void *x, const void *y)
{
    uint64_t a = order_ctx->id[*(const size_t *)x], b = order_ctx->id[*(const size_t *)y];
    return a < b ? -1 : a > b;
}

/* The live documents of c inserted in increasing id order into a new index. */
static simlsh_index *index_in_id_order(const corpus *c, const simlsh_params *p)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->live[i])
            order_of[n++] = i;
    order_ctx = c;
    qsort(order_of, n, sizeof *order_of, cmp_order);
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_index_new(&ix, p));
    for (size_t k = 0; k < n; k++)
        CHECK_OK(simlsh_index_insert(ix, c->id[order_of[k]], c->sig[order_of[k]]));
    return ix;
}

/* ---- copy ----------------------------------------------------------------------- */

static void test_copy(int store, int big)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 300, 41 + (uint64_t)store, big);
    simlsh_index *ix = corpus_index(&c, p);
    if (store) /* free slots and freed lists, which the copy must keep */
        for (size_t i = 0; i < c.n; i += 4) {
            CHECK_OK(simlsh_index_remove(ix, c.id[i]));
            c.live[i] = false;
        }
    CHECK_OK(simlsh_index_set_userdata(ix, "names", 5));
    simlsh_index *cp = (simlsh_index *)1;
    CHECK_OK(simlsh_index_copy(&cp, ix));
    CHECK(cp != NULL && cp != ix);
    CHECK(same_bytes(cp, ix));
    size_t m0, m1;
    CHECK_OK(simlsh_index_memory(&m0, NULL, ix));
    CHECK_OK(simlsh_index_memory(&m1, NULL, cp));
    CHECK(m0 == m1);
    const void *ud;
    size_t udn;
    CHECK_OK(simlsh_index_userdata(&ud, &udn, cp));
    CHECK(udn == 5 && memcmp(ud, "names", 5) == 0);
    check_against_ref(&c, cp, store);

    /* The same later history gives the same state: free lists were copied. */
    size_t nb;
    uint8_t *snap = save_bytes(cp, &nb);
    for (size_t i = 0; i < c.n; i += 8) {
        if (c.live[i])
            continue;
        CHECK_OK(simlsh_index_insert(ix, c.id[i], c.sig[i]));
        CHECK_OK(simlsh_index_insert(cp, c.id[i], c.sig[i]));
    }
    CHECK(same_bytes(cp, ix));
    CHECK_OK(simlsh_index_memory(&m0, NULL, ix));
    CHECK_OK(simlsh_index_memory(&m1, NULL, cp));
    CHECK(m0 == m1);
    simlsh_index_free(cp);

    /* Independent: writes to the original leave a snapshot as it was. */
    CHECK_OK(simlsh_index_copy(&cp, ix));
    uint8_t *before = save_bytes(cp, &nb);
    for (size_t i = 1; i < c.n; i += 4)
        if (store)
            CHECK_OK(simlsh_index_remove(ix, c.id[i]));
    CHECK_OK(simlsh_index_insert(ix, 7, c.sig[2]));
    CHECK_OK(simlsh_index_set_userdata(ix, "other", 5));
    CHECK(saves_to(cp, before, nb));
    CHECK(simlsh_index_contains(cp, 7) == 0);
    CHECK_OK(simlsh_index_clear(ix));
    CHECK(saves_to(cp, before, nb));
    /* ... and the other way round. */
    CHECK_OK(simlsh_index_insert(cp, 7, c.sig[2]));
    CHECK(simlsh_index_contains(ix, 7) == 0);
    simlsh_index_free(ix);
    CHECK(simlsh_index_contains(cp, 7) == 1);
    simlsh_index_free(cp);
    free(before);
    free(snap);

    /* Empty indexes, fresh and cleared, copy too. */
    CHECK_OK(simlsh_index_new(&ix, p));
    CHECK_OK(simlsh_index_copy(&cp, ix));
    CHECK(same_bytes(cp, ix));
    CHECK_OK(simlsh_index_insert(cp, 1, c.sig[0]));
    simlsh_index_free(cp);
    simlsh_index_free(ix);

    CHECK_RC(simlsh_index_copy(NULL, ix), SIMLSH_EINVAL);
    cp = (simlsh_index *)1;
    CHECK_RC(simlsh_index_copy(&cp, NULL), SIMLSH_EINVAL);
    CHECK(cp == NULL);
    corpus_free(&c);
    simlsh_params_free(p);
}

/* A snapshot in use: one thread writes the original (inserts, removals)
 * while another queries the copy, whose answers must stay those taken
 * before the writer started. */
typedef struct {
    simlsh_index *ix;
    const corpus *c;
} writer_job;

static void *writer(void *arg)
{
    writer_job *w = arg;
    for (size_t i = 0; i < w->c->n; i++) {
        if (simlsh_index_remove(w->ix, w->c->id[i]) != 0 ||
            simlsh_index_insert(w->ix, w->c->id[i] ^ 1, w->c->sig[(i + 1) % w->c->n]) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_snapshot_while_writing(void)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, 1);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 200, 77, 0);
    simlsh_index *ix = corpus_index(&c, p), *snap = NULL;
    CHECK_OK(simlsh_index_copy(&snap, ix));
    simlsh_results *want = NULL, *got = NULL;
    CHECK_OK(simlsh_results_new(&want, NULL));
    CHECK_OK(simlsh_results_new(&got, NULL));
    CHECK_OK(simlsh_index_query_batch(want, snap, (const simlsh_signature *const *)c.sig, c.n,
                                      SIMLSH_QUERY_VERIFY));
    writer_job w = {ix, &c};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, writer, &w) == 0);
    int differ = 0;
    for (int round = 0; round < 20; round++) {
        CHECK_OK(simlsh_index_query_batch(got, snap, (const simlsh_signature *const *)c.sig, c.n,
                                          SIMLSH_QUERY_VERIFY));
        size_t n = simlsh_results_count(want);
        differ += simlsh_results_count(got) != n ||
                  memcmp(simlsh_results_a(got), simlsh_results_a(want), n * 8) != 0 ||
                  memcmp(simlsh_results_b(got), simlsh_results_b(want), n * 8) != 0;
    }
    void *wrc = (void *)1;
    CHECK(pthread_join(th, &wrc) == 0);
    CHECK(wrc == NULL);
    CHECK(differ == 0);
    check_against_ref(&c, snap, true);
    simlsh_results_free(want);
    simlsh_results_free(got);
    simlsh_index_free(snap);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
}

/* ---- merge ---------------------------------------------------------------------- */

/* The corpus split into three shards with different histories (insertion
 * orders, removals); merged in either order, the result saves to the
 * bytes of the union inserted in id order, and answers as the reference. */
static void test_merge_shards(int store, int big)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 64, 16, 4, store);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    corpus_make(&c, p, 360, 53 + (uint64_t)store, big);
    simlsh_index *sh[3];
    for (int s = 0; s < 3; s++)
        CHECK_OK(simlsh_index_new(&sh[s], p));
    for (size_t k = 0; k < c.n; k++) {
        size_t i = k * 7 % c.n; /* not in id order, not in corpus order */
        CHECK_OK(simlsh_index_insert(sh[i % 3], c.id[i], c.sig[i]));
    }
    if (store)
        for (size_t i = 0; i < c.n; i += 5) {
            CHECK_OK(simlsh_index_remove(sh[i % 3], c.id[i]));
            c.live[i] = false;
        }
    simlsh_index *want = index_in_id_order(&c, p);
    size_t nw;
    uint8_t *wb = save_bytes(want, &nw);

    simlsh_index *a = NULL, *b = NULL;
    CHECK_OK(simlsh_index_copy(&a, sh[0]));
    CHECK_OK(simlsh_index_copy(&b, sh[2]));
    CHECK_OK(simlsh_index_merge(a, sh[1]));
    CHECK_OK(simlsh_index_merge(a, sh[2]));
    CHECK(saves_to(a, wb, nw));
    CHECK_OK(simlsh_index_merge(b, sh[0]));
    CHECK_OK(simlsh_index_merge(b, sh[1]));
    CHECK(saves_to(b, wb, nw));
    check_against_ref(&c, a, store);
    size_t n;
    CHECK_OK(simlsh_index_count(&n, a));
    size_t live = 0;
    for (size_t i = 0; i < c.n; i++)
        live += c.live[i];
    CHECK(n == live);
    /* Sources are only read. */
    simlsh_index *again = NULL;
    CHECK_OK(simlsh_index_copy(&again, sh[0]));
    CHECK_OK(simlsh_index_merge(again, sh[1]));
    CHECK_OK(simlsh_index_merge(again, sh[2]));
    CHECK(same_bytes(again, a));
    simlsh_index_free(again);

    /* The merged index goes on like any other. */
    if (store) {
        CHECK_OK(simlsh_index_remove(a, c.id[1]));
        CHECK_OK(simlsh_index_remove(want, c.id[1]));
    }
    CHECK_OK(simlsh_index_insert(a, 3, c.sig[3]));
    CHECK_OK(simlsh_index_insert(want, 3, c.sig[3]));
    CHECK(same_bytes(a, want));

    /* An empty source still lays dst out in id order; an empty dst takes
     * everything. */
    simlsh_index *e = NULL;
    CHECK_OK(simlsh_index_new(&e, p));
    simlsh_index *x = NULL;
    CHECK_OK(simlsh_index_copy(&x, b));
    CHECK_OK(simlsh_index_merge(x, e));
    CHECK(saves_to(x, wb, nw));
    CHECK_OK(simlsh_index_merge(e, b));
    CHECK(saves_to(e, wb, nw));
    simlsh_index_free(x);
    simlsh_index_free(e);

    simlsh_index_free(want);
    simlsh_index_free(a);
    simlsh_index_free(b);
    for (int s = 0; s < 3; s++)
        simlsh_index_free(sh[s]);
    free(wb);
    corpus_free(&c);
    simlsh_params_free(p);
}

/* Duplicates, mismatches, user data, params: what fails changes nothing. */
static void test_merge_contract(void)
{
    simlsh_params *p = mk_params(NULL, 32, 8, 4, 1);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    simlsh_signature *s[20];
    for (int i = 0; i < 20; i++)
        s[i] = mk_sig(p, 70 + (uint64_t)i / 2, (uint64_t)i % 2, 40 + (uint64_t)i % 2);
    simlsh_index *dst = NULL, *src = NULL;
    CHECK_OK(simlsh_index_new(&dst, p));
    CHECK_OK(simlsh_index_new(&src, p));
    for (int i = 0; i < 10; i++)
        CHECK_OK(simlsh_index_insert(dst, 100 + (uint64_t)i, s[i]));
    for (int i = 10; i < 20; i++)
        CHECK_OK(simlsh_index_insert(src, 100 + (uint64_t)i, s[i]));
    /* One id of src, the last in id order, also in dst: nothing merges. */
    CHECK_OK(simlsh_index_insert(dst, 119, s[3]));
    CHECK_OK(simlsh_index_set_userdata(dst, "dst", 3));
    size_t n0, m0, m1, c1;
    uint8_t *b0 = save_bytes(dst, &n0);
    CHECK_OK(simlsh_index_memory(&m0, NULL, dst));
    CHECK_RC(simlsh_index_merge(dst, src), SIMLSH_EEXIST);
    CHECK(saves_to(dst, b0, n0));
    CHECK_OK(simlsh_index_memory(&m1, NULL, dst));
    CHECK_OK(simlsh_index_count(&c1, dst));
    CHECK(m1 == m0 && c1 == 11);
    CHECK(simlsh_index_contains(dst, 110) == 0);
    CHECK_RC(simlsh_index_merge(dst, dst), SIMLSH_EEXIST);
    CHECK(saves_to(dst, b0, n0));
    free(b0);

    /* Without the duplicate it merges; dst keeps its user data and its
     * params, src's are not taken. */
    CHECK_OK(simlsh_index_remove(dst, 119));
    simlsh_params *q = NULL;
    CHECK_OK(simlsh_index_params(&q, src));
    CHECK_OK(simlsh_params_set_double(q, SIMLSH_PARAM_THRESHOLD, 0.8));
    simlsh_index *src2 = NULL;
    CHECK_OK(simlsh_index_new(&src2, q));
    for (int i = 10; i < 20; i++)
        CHECK_OK(simlsh_index_insert(src2, 100 + (uint64_t)i, s[i]));
    CHECK_OK(simlsh_index_set_userdata(src2, "src", 3));
    CHECK_OK(simlsh_index_merge(dst, src2));
    const void *ud;
    size_t udn;
    CHECK_OK(simlsh_index_userdata(&ud, &udn, dst));
    CHECK(udn == 3 && memcmp(ud, "dst", 3) == 0);
    simlsh_params *dp = NULL;
    double thr;
    CHECK_OK(simlsh_index_params(&dp, dst));
    CHECK_OK(simlsh_params_get_double(dp, SIMLSH_PARAM_THRESHOLD, &thr));
    CHECK(thr == 0.5);
    CHECK_OK(simlsh_index_count(&c1, dst));
    CHECK(c1 == 20);
    simlsh_params_free(dp);
    simlsh_params_free(q);
    simlsh_index_free(src2);
    /* An empty index merged into itself is fine. */
    simlsh_index *e = NULL;
    CHECK_OK(simlsh_index_new(&e, p));
    CHECK_OK(simlsh_index_merge(e, e));
    simlsh_index_free(e);

    /* Other bands, seed or storage: EMISMATCH, nothing changed. */
    b0 = save_bytes(dst, &n0);
    struct {
        int key;
        int64_t v;
    } other[] = {{SIMLSH_PARAM_BANDS, 4},
                 {SIMLSH_PARAM_SEED, 99},
                 {SIMLSH_PARAM_STORE_SIGNATURES, 0},
                 {SIMLSH_PARAM_NUM_PERM, 64}};
    for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
        simlsh_params *o = mk_params(NULL, 32, 8, 4, 1);
        CHECK_OK(simlsh_params_set_int(o, other[k].key, other[k].v));
        simlsh_index *oi = NULL;
        CHECK_OK(simlsh_index_new(&oi, o));
        simlsh_signature *os = mk_sig(o, 5, 0, 30);
        CHECK_OK(simlsh_index_insert(oi, 999, os));
        CHECK_RC(simlsh_index_merge(dst, oi), SIMLSH_EMISMATCH);
        CHECK_RC(simlsh_index_merge(oi, dst), SIMLSH_EMISMATCH);
        CHECK(saves_to(dst, b0, n0));
        simlsh_signature_free(os);
        simlsh_index_free(oi);
        simlsh_params_free(o);
    }
    free(b0);
    CHECK_RC(simlsh_index_merge(NULL, src), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_merge(dst, NULL), SIMLSH_EINVAL);
    simlsh_index_free(dst);
    simlsh_index_free(src);
    for (int i = 0; i < 20; i++)
        simlsh_signature_free(s[i]);
    simlsh_params_free(p);
}

/* Copies of ix with each allocation failing in turn (ix's allocator is
 * st's): ENOMEM, *out NULL, nothing leaked; returns the points covered. */
static long oom_copy(tu_alloc_state *st, const simlsh_index *ix)
{
    int bad = 0;
    long k, live0 = st->live;
    for (k = 1; k < 10000; k++) {
        simlsh_index *cp = (simlsh_index *)1;
        st->fail_at = st->count + k;
        int rc = simlsh_index_copy(&cp, ix);
        st->fail_at = 0;
        if (rc == 0) {
            bad += !same_bytes(cp, ix);
            simlsh_index_free(cp);
            break;
        }
        bad += rc != SIMLSH_ENOMEM || cp != NULL || st->live != live0;
    }
    CHECK(bad == 0);
    CHECK(k > 5);
    CHECK(st->live == live0);
    return k - 1;
}

/* Every allocation of copy and merge failing in turn: ENOMEM, dst (and
 * src) byte for byte and in memory as before, nothing leaked; then the
 * call that meets no failure gives the expected bytes. */
static void test_oom(int store)
{
    tu_alloc_state st = {0};
    simlsh_allocator al = tu_allocator(&st);
    simlsh_params *p = mk_params(&al, 32, 8, 4, store);
    simlsh_index *dst = NULL, *src = NULL, *want = NULL;
    CHECK_OK(simlsh_index_new(&dst, p));
    CHECK_OK(simlsh_index_new(&src, p));
    CHECK_OK(simlsh_index_new(&want, p));
    /* 14 identical documents across both, so buckets move to lists. */
    for (int i = 0; i < 60; i++) {
        uint64_t stream = i < 14 ? 777 : 100 + (uint64_t)i / 3;
        simlsh_signature *s = mk_sig(p, stream, 0, 40 + (i < 14 ? 0 : (uint64_t)i % 3));
        CHECK_OK(simlsh_index_insert(i % 2 ? src : dst, 1000 - 3 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    for (int i = 59; i >= 0; i--) {
        uint64_t stream = i < 14 ? 777 : 100 + (uint64_t)i / 3;
        simlsh_signature *s = mk_sig(p, stream, 0, 40 + (i < 14 ? 0 : (uint64_t)i % 3));
        CHECK_OK(simlsh_index_insert(want, 1000 - 3 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    if (store) {
        CHECK_OK(simlsh_index_remove(dst, 1000));
        CHECK_OK(simlsh_index_remove(want, 1000));
    }
    CHECK_OK(simlsh_index_set_userdata(dst, "u", 1));
    CHECK_OK(simlsh_index_set_userdata(want, "u", 1));
    size_t nw, nd, ns, m0, m1;
    uint8_t *wb = save_bytes(want, &nw), *db = save_bytes(dst, &nd), *sb = save_bytes(src, &ns);
    CHECK_OK(simlsh_index_memory(&m0, NULL, dst));

    long live0 = st.live, copy_points = oom_copy(&st, dst), k;
    int bad = 0;
    for (k = 1; k < 10000; k++) {
        st.fail_at = st.count + k;
        int rc = simlsh_index_merge(dst, src);
        st.fail_at = 0;
        if (rc == 0)
            break;
        CHECK_OK(simlsh_index_memory(&m1, NULL, dst));
        bad += rc != SIMLSH_ENOMEM || st.live != live0 || m1 != m0 || !saves_to(dst, db, nd) ||
               !saves_to(src, sb, ns);
    }
    CHECK(bad == 0);
    CHECK(k > 5);
    CHECK(saves_to(dst, wb, nw));
    copy_points += oom_copy(&st, dst); /* now with overflow lists */
    printf("merge: OOM injection covered %ld copy and %ld merge allocation points (store %d)\n",
           copy_points, k - 1, store);
    simlsh_index_free(dst);
    simlsh_index_free(src);
    simlsh_index_free(want);
    simlsh_params_free(p);
    CHECK(st.live == 0);
    free(wb);
    free(db);
    free(sb);
}

/* ---- per-call threshold ----------------------------------------------------------- */

/* Planted pairs of known Jaccard (from 0.1 to 1) among unrelated
 * documents: for each threshold the verified rows are exactly the
 * brute-force ones (sharing a bucket, estimate >= t), single and batch. */
static void test_query_threshold(void)
{
    static corpus c;
    simlsh_params *p = mk_params(NULL, 128, 32, 4, 1);
    CHECK_OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, 0.5));
    c.num_perm = 128;
    c.bands = 32;
    c.rows = 4;
    c.n = 0;
    tu_rng rng = {2024};
    for (size_t g = 0; g < 100; g++) {
        /* Windows of 100 features shifted by s share 100 - s: J = (100-s)/(100+s). */
        uint64_t shift = g % 10 == 9 ? 0 : 5 * (g % 10) + tu_below(&rng, 5);
        for (int m = 0; m < 2; m++) {
            size_t i = c.n++;
            c.id[i] = tu_next(&rng) >> 8;
            c.sig[i] = mk_sig(p, 5000 + g, m ? shift : 0, (m ? shift : 0) + 100);
            size_t cnt;
            CHECK_OK(simlsh_signature_values(c.val[i], 128, &cnt, c.sig[i]));
            c.live[i] = true;
        }
    }
    simlsh_index *ix = corpus_index(&c, p);
    simlsh_results *res = NULL, *ref = NULL, *bres = NULL;
    CHECK_OK(simlsh_results_new(&res, NULL));
    CHECK_OK(simlsh_results_new(&ref, NULL));
    CHECK_OK(simlsh_results_new(&bres, NULL));
    static uint64_t want[MAXDOCS];
    static double wsc[MAXDOCS];
    const double ts[] = {0.05, 0.3, 0.5, 0.62, 0.75, 0.9, 1.0};
    int mism = 0;
    size_t found_some = 0;
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
        c.thr = ts[k];
        CHECK_OK(simlsh_index_query_batch_v2(bres, ix, (const simlsh_signature *const *)c.sig, c.n,
                                             SIMLSH_QUERY_VERIFY, ts[k]));
        for (size_t i = 0; i < c.n; i++) {
            size_t n = ref_query(&c, c.val[i], true, want, wsc);
            CHECK_OK(simlsh_index_query_v2(res, ix, c.sig[i], SIMLSH_QUERY_VERIFY, ts[k]));
            size_t lo, hi;
            CHECK_OK(simlsh_results_offset(&lo, bres, i));
            CHECK_OK(simlsh_results_offset(&hi, bres, i + 1));
            int ok = simlsh_results_count(res) == n && hi - lo == n;
            for (size_t r = 0; ok && r < n; r++) {
                uint64_t a, b, ba, bb;
                double s, bs;
                simlsh_results_row(res, r, &a, &b, &s);
                simlsh_results_row(bres, lo + r, &ba, &bb, &bs);
                ok = a == want[r] && s == wsc[r] && s >= ts[k] && ba == a && bb == i && bs == s;
            }
            mism += !ok;
            found_some += k == 3 ? n : 0;
        }
    }
    CHECK(mism == 0);
    /* Each threshold kept something and dropped something: at 0.62 the
     * planted partners above it remain, those below go. */
    CHECK(found_some > c.n && found_some < 2 * c.n);

    /* At the params' threshold, and without verify, v2 is the first call. */
    for (size_t i = 0; i < c.n; i += 7) {
        CHECK_OK(simlsh_index_query(ref, ix, c.sig[i], SIMLSH_QUERY_VERIFY));
        CHECK_OK(simlsh_index_query_v2(res, ix, c.sig[i], SIMLSH_QUERY_VERIFY, 0.5));
        CHECK(simlsh_results_count(res) == simlsh_results_count(ref));
        CHECK(memcmp(simlsh_results_a(res), simlsh_results_a(ref), 8 * simlsh_results_count(ref)) ==
              0);
        CHECK_OK(simlsh_index_query(ref, ix, c.sig[i], 0));
        CHECK_OK(simlsh_index_query_v2(res, ix, c.sig[i], 0, 0.99));
        CHECK(simlsh_results_count(res) == simlsh_results_count(ref));
    }
    /* The index's params did not change. */
    simlsh_params *q = NULL;
    double thr;
    CHECK_OK(simlsh_index_params(&q, ix));
    CHECK_OK(simlsh_params_get_double(q, SIMLSH_PARAM_THRESHOLD, &thr));
    CHECK(thr == 0.5);
    simlsh_params_free(q);

    /* Thresholds outside (0, 1] fail, with and without verify, and leave
     * the results as they were. */
    CHECK_OK(simlsh_index_query_v2(res, ix, c.sig[0], SIMLSH_QUERY_VERIFY, 0.5));
    size_t before = simlsh_results_count(res);
    CHECK(before > 0);
    const double badt[] = {0.0, -0.0, -0.5, 1.0000001, 2.0, NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof badt / sizeof badt[0]; k++) {
        for (int f = 0; f <= SIMLSH_QUERY_VERIFY; f++) {
            CHECK_RC(simlsh_index_query_v2(res, ix, c.sig[0], f, badt[k]), SIMLSH_EINVAL);
            CHECK_RC(simlsh_index_query_batch_v2(res, ix, (const simlsh_signature *const *)c.sig, 2,
                                                 f, badt[k]),
                     SIMLSH_EINVAL);
        }
    }
    CHECK(simlsh_results_count(res) == before);
    CHECK_RC(simlsh_index_query_v2(NULL, ix, c.sig[0], 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(res, NULL, c.sig[0], 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(res, ix, NULL, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_v2(res, ix, c.sig[0], 2, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_index_query_batch_v2(res, ix, NULL, 1, 0, 0.5), SIMLSH_EINVAL);
    CHECK_OK(simlsh_index_query_batch_v2(res, ix, NULL, 0, 0, 0.5));
    CHECK(simlsh_results_count(res) == 0);
    /* Without stored signatures there is nothing to verify with. */
    simlsh_params *pn = mk_params(NULL, 128, 32, 4, 0);
    simlsh_index *in = NULL;
    CHECK_OK(simlsh_index_new(&in, pn));
    CHECK_OK(simlsh_index_insert(in, 1, c.sig[0]));
    CHECK_RC(simlsh_index_query_v2(res, in, c.sig[0], SIMLSH_QUERY_VERIFY, 0.5),
             SIMLSH_EUNSUPPORTED);
    CHECK_RC(simlsh_index_query_batch_v2(res, in, (const simlsh_signature *const *)c.sig, 1,
                                         SIMLSH_QUERY_VERIFY, 0.5),
             SIMLSH_EUNSUPPORTED);
    CHECK_OK(simlsh_index_query_v2(res, in, c.sig[0], 0, 0.5));
    CHECK(simlsh_results_count(res) == 1);
    simlsh_index_free(in);
    simlsh_params_free(pn);

    simlsh_results_free(res);
    simlsh_results_free(ref);
    simlsh_results_free(bres);
    simlsh_index_free(ix);
    corpus_free(&c);
    simlsh_params_free(p);
}

int main(void)
{
    for (int store = 0; store <= 1; store++) {
        for (int big = 0; big <= 1; big++) {
            test_copy(store, big);
            test_merge_shards(store, big);
        }
        test_oom(store);
    }
    test_snapshot_while_writing();
    test_merge_contract();
    test_query_threshold();
    return tu_finish("index-merge");
}
