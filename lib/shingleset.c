/* Shingle sets: sorted unique 64-bit hashes of one or more documents. */
#include <string.h>

#include "alloc.h"
#include "frame.h"
#include "handle.h"
#include "le.h"
#include "radix.h"
#include "shingleset.h"
#include "vec.h"

static void insertion_sort(uint64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

static size_t unique(uint64_t *a, size_t n)
{
    if (n == 0)
        return 0;
    size_t m = 1;
    for (size_t i = 1; i < n; i++)
        if (a[i] != a[m - 1])
            a[m++] = a[i];
    return m;
}

static void sort_unique_tail(uint64_t *pend, uint64_t *tmp, size_t *np)
{
    if (*np < 64)
        insertion_sort(pend, *np);
    else
        simlsh__radix_sort64(pend, NULL, tmp, NULL, *np);
    *np = unique(pend, *np);
}

/* Merge the sorted unique runs x (nx) and y (ny) into out; returns its
 * length. */
static size_t merge_runs(uint64_t *out, const uint64_t *x, size_t nx, const uint64_t *y, size_t ny)
{
    size_t i = 0, j = 0, m = 0;
    while (i < nx && j < ny) {
        uint64_t u = x[i], v = y[j];
        if (u < v) {
            out[m++] = u;
            i++;
        } else if (v < u) {
            out[m++] = v;
            j++;
        } else {
            out[m++] = u;
            i++;
            j++;
        }
    }
    while (i < nx)
        out[m++] = x[i++];
    while (j < ny)
        out[m++] = y[j++];
    return m;
}

/* Fold the raw pending [run, len) into the document's sorted unique run
 * [count, run): a long document whose shingles repeat (a licence quoted a
 * hundred times) then holds about its distinct shingles, not all of them. */
static int fold_pending(simlsh_shingleset *s, size_t run)
{
    size_t nr = s->len - run, nd = run - s->count;
    if (nr == 0)
        return 0;
    size_t tbytes = (nr + nd) * sizeof(uint64_t);
    uint64_t *tmp = NULL;
    if (nr >= 64 || nd > 0) {
        tmp = simlsh__malloc(&s->params.alloc, tbytes);
        if (tmp == NULL)
            return SIMLSH_ENOMEM;
    }
    uint64_t *raw = s->hashes + run;
    sort_unique_tail(raw, tmp, &nr);
    size_t m = nr;
    if (nd > 0) {
        m = merge_runs(tmp, s->hashes + s->count, nd, raw, nr);
        memcpy(s->hashes + s->count, tmp, m * sizeof *tmp);
    }
    simlsh__free_sized(&s->params.alloc, tmp, tmp != NULL ? tbytes : 0);
    s->len = s->run = s->count + m;
    return 0;
}

/* Fold the pending tail [count, len) into the sorted unique prefix; run:
 * where the pending's raw part starts ([count, run) is sorted unique). */
static int commit_pending(simlsh_shingleset *s, size_t run)
{
    int rc = fold_pending(s, run);
    if (rc < 0)
        return rc;
    size_t np = s->len - s->count;
    if (np == 0)
        return 0;
    uint64_t *pend = s->hashes + s->count;
    if (s->count == 0) {
        s->count = s->len = s->run = np;
        return 0;
    }
    /* merge two sorted unique runs into a new array of the same capacity */
    uint64_t *out = simlsh__malloc(&s->params.alloc, s->cap * sizeof *out);
    if (out == NULL)
        return SIMLSH_ENOMEM;
    size_t m = merge_runs(out, s->hashes, s->count, pend, np);
    simlsh__free_sized(&s->params.alloc, s->hashes, s->cap * sizeof *s->hashes);
    s->hashes = out;
    s->count = s->len = s->run = m;
    return 0;
}

/* In a document, the raw pending is folded once it is FOLD_MIN long and
 * as long as the folded run: each fold at least doubles what it covers, so
 * folding costs O(n log n) in all, and a document holds about twice its
 * distinct shingles (or FOLD_MIN) instead of all of them. */
#define FOLD_MIN ((size_t)1 << 16)

static int maybe_fold(simlsh_shingleset *s)
{
    size_t raw = s->len - s->run;
    if (!s->in_doc || raw < FOLD_MIN || raw < s->run - s->count)
        return 0;
    return fold_pending(s, s->run);
}

/* Room for more hashes after the len kept ones. */
static int reserve(simlsh_shingleset *s, size_t more)
{
    if (more <= s->cap - s->len)
        return 0;
    if (more > SIZE_MAX - s->len)
        return SIMLSH_ENOMEM;
    return simlsh__vec_grow(&s->params.alloc, &s->hashes, s->len, &s->cap, s->len + more,
                            sizeof *s->hashes, NULL);
}

static int append(void *ctx, const uint64_t *h, size_t n)
{
    simlsh_shingleset *s = ctx;
    if (n == 0)
        return 0;
    int rc = reserve(s, n);
    if (rc < 0)
        return rc;
    memcpy(s->hashes + s->len, h, n * sizeof *h);
    s->len += n;
    return maybe_fold(s);
}

static int append32(void *ctx, const uint32_t *h, size_t n)
{
    simlsh_shingleset *s = ctx;
    int rc = reserve(s, n);
    if (rc < 0)
        return rc;
    uint64_t *o = s->hashes + s->len;
    for (size_t i = 0; i < n; i++)
        o[i] = h[i];
    s->len += n;
    return maybe_fold(s);
}

int simlsh_shingleset_new(simlsh_shingleset **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    if (params == NULL)
        return SIMLSH_EINVAL;
    int rc = simlsh__params_check_shingling(params);
    if (rc < 0)
        return rc;
    simlsh_shingleset *s = simlsh__calloc(&params->alloc, 1, sizeof *s);
    if (s == NULL)
        return SIMLSH_ENOMEM;
    s->tag = SIMLSH__TAG_SHINGLESET;
    s->params = *params;
    s->fingerprint = simlsh__fingerprint(params, SIMLSH_SCOPE_SHINGLES);
    *out = s;
    return 0;
}

void simlsh_shingleset_free(simlsh_shingleset *set)
{
    if (!simlsh__handle_is(set, SIMLSH__TAG_SHINGLESET))
        return;
    if (set == NULL)
        return;
    simlsh_allocator a = set->params.alloc;
    simlsh__shingler_free(set->shingler);
    simlsh__free_sized(&a, set->hashes, set->cap * sizeof *set->hashes);
    set->tag = SIMLSH__TAG_DEAD;
    simlsh__free_sized(&a, set, sizeof *set);
}

int simlsh_shingleset_copy(simlsh_shingleset **out, const simlsh_shingleset *src)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_SHINGLESET(src);
    if (src == NULL)
        return SIMLSH_EINVAL;
    if (src->in_doc || src->len != src->count)
        return SIMLSH_ESTATE;
    simlsh_shingleset *s;
    int rc = simlsh_shingleset_new(&s, &src->params);
    if (rc < 0)
        return rc;
    if (src->count > 0) {
        s->hashes = simlsh__malloc(&s->params.alloc, src->count * sizeof *s->hashes);
        if (s->hashes == NULL) {
            simlsh_shingleset_free(s);
            return SIMLSH_ENOMEM;
        }
        memcpy(s->hashes, src->hashes, src->count * sizeof *s->hashes);
        s->cap = s->count = s->len = src->count;
    }
    *out = s;
    return 0;
}

/* The shingler is made on the first document. */
static int ensure_shingler(simlsh_shingleset *set)
{
    return set->shingler != NULL ? 0 : simlsh__shingler_new(&set->shingler, &set->params);
}

int simlsh_shingleset_begin(simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL)
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    int rc = ensure_shingler(set);
    if (rc < 0)
        return rc;
    simlsh__shingler_begin(set->shingler);
    set->run = set->count;
    set->in_doc = 1;
    return 0;
}

/* A failure other than a rejected chunk abandons the document. */
static int doc_fail(simlsh_shingleset *set, int rc)
{
    if (rc != SIMLSH_EUTF8) {
        set->len = set->count;
        set->in_doc = 0;
    }
    return rc;
}

int simlsh_shingleset_feed(simlsh_shingleset *set, const void *data, size_t len)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL || (data == NULL && len > 0))
        return SIMLSH_EINVAL;
    if (!set->in_doc)
        return SIMLSH_ESTATE;
    int rc = simlsh__shingler_feed(set->shingler, data, len, append,
                                   set->params.hash_bits == 32 ? append32 : NULL, set);
    return rc < 0 ? doc_fail(set, rc) : 0;
}

int simlsh_shingleset_end(simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL)
        return SIMLSH_EINVAL;
    if (!set->in_doc)
        return SIMLSH_ESTATE;
    int rc = simlsh__shingler_end(set->shingler, append,
                                  set->params.hash_bits == 32 ? append32 : NULL, set);
    if (rc == 0)
        rc = commit_pending(set, set->run);
    if (rc < 0) {
        if (rc == SIMLSH_EUTF8)
            return rc; /* the document is still open; the caller may abort */
        return doc_fail(set, rc);
    }
    set->in_doc = 0;
    return 0;
}

int simlsh_shingleset_abort(simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL)
        return SIMLSH_EINVAL;
    if (!set->in_doc)
        return SIMLSH_ESTATE;
    set->len = set->count;
    set->in_doc = 0;
    return 0;
}

int simlsh_shingleset_add_text(simlsh_shingleset *set, const void *text, size_t len)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL || (text == NULL && len > 0))
        return SIMLSH_EINVAL;
    int rc = simlsh_shingleset_begin(set);
    if (rc < 0)
        return rc;
    rc = simlsh_shingleset_feed(set, text, len);
    if (rc == 0)
        rc = simlsh_shingleset_end(set);
    if (rc < 0 && set->in_doc)
        simlsh_shingleset_abort(set);
    return rc;
}

/* simlsh_shingleset_text_hashes(): hashes go to the caller's buffer while
 * it has room, and are counted beyond it. */
typedef struct {
    uint64_t *buf;
    size_t cap, n;
} text_sink;

static int text_sink64(void *ctx, const uint64_t *h, size_t n)
{
    text_sink *t = ctx;
    if (t->n < t->cap) {
        size_t m = t->cap - t->n < n ? t->cap - t->n : n;
        memcpy(t->buf + t->n, h, m * sizeof *h);
    }
    t->n += n;
    return 0;
}

static int text_sink32(void *ctx, const uint32_t *h, size_t n)
{
    text_sink *t = ctx;
    if (t->n < t->cap) {
        /* one bound and no aliasing: a loop the compiler widens in SIMD
         * (the per-value bound took 12 % of the tool's second pass) */
        size_t m = t->cap - t->n < n ? t->cap - t->n : n;
        uint64_t *restrict o = t->buf + t->n;
        for (size_t i = 0; i < m; i++)
            o[i] = h[i];
    }
    t->n += n;
    return 0;
}

int simlsh_shingleset_text_hashes(uint64_t *buf, size_t cap, size_t *count, simlsh_shingleset *set,
                                  const void *text, size_t len)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL || count == NULL || (text == NULL && len > 0))
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    int rc = ensure_shingler(set);
    if (rc < 0)
        return rc;
    text_sink t = {buf, buf != NULL ? cap : 0, 0};
    simlsh__sink32_fn s32 = set->params.hash_bits == 32 ? text_sink32 : NULL;
    simlsh__shingler_begin(set->shingler);
    rc = simlsh__shingler_feed(set->shingler, text, len, text_sink64, s32, &t);
    if (rc == 0)
        rc = simlsh__shingler_end(set->shingler, text_sink64, s32, &t);
    if (rc < 0)
        return rc;
    *count = t.n;
    return buf != NULL && t.n > cap ? SIMLSH_EBUFSIZE : 0;
}

int simlsh_shingleset_add_features(simlsh_shingleset *set, const uint64_t *features, size_t n)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL || (features == NULL && n > 0))
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    int rc = append(set, features, n);
    if (rc == 0)
        rc = commit_pending(set, set->count);
    if (rc < 0)
        set->len = set->count;
    return rc;
}

int simlsh_shingleset_clear(simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (set == NULL)
        return SIMLSH_EINVAL;
    set->count = set->len = 0;
    set->in_doc = 0;
    return 0;
}

int simlsh_shingleset_count(size_t *out, const simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (out == NULL || set == NULL)
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    *out = set->count;
    return 0;
}

int simlsh_shingleset_hashes(uint64_t *buf, size_t cap, size_t *count, const simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (count == NULL || set == NULL)
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    *count = set->count;
    if (buf == NULL)
        return 0;
    if (cap < set->count)
        return SIMLSH_EBUFSIZE;
    if (set->count)
        memcpy(buf, set->hashes, set->count * sizeof *buf);
    return 0;
}

static int intersect(size_t *inter, const simlsh_shingleset *a, const simlsh_shingleset *b)
{
    if (a == NULL || b == NULL)
        return SIMLSH_EINVAL;
    if (a->in_doc || b->in_doc)
        return SIMLSH_ESTATE;
    if (a->fingerprint != b->fingerprint)
        return SIMLSH_EMISMATCH;
    size_t i = 0, j = 0, c = 0;
    const uint64_t *x = a->hashes, *y = b->hashes;
    while (i < a->count && j < b->count) {
        uint64_t u = x[i], v = y[j];
        c += u == v;
        i += u <= v;
        j += v <= u;
    }
    *inter = c;
    return 0;
}

int simlsh_shingleset_jaccard(double *out, const simlsh_shingleset *a, const simlsh_shingleset *b)
{
    SIMLSH__CHECK_SHINGLESET(a);
    SIMLSH__CHECK_SHINGLESET(b);
    size_t inter;
    if (out == NULL)
        return SIMLSH_EINVAL;
    int rc = intersect(&inter, a, b);
    if (rc < 0)
        return rc;
    size_t uni = a->count + b->count - inter;
    *out = uni == 0 ? 1.0 : (double)inter / (double)uni;
    return 0;
}

int simlsh_shingleset_containment(double *out, const simlsh_shingleset *a,
                                  const simlsh_shingleset *b)
{
    SIMLSH__CHECK_SHINGLESET(a);
    SIMLSH__CHECK_SHINGLESET(b);
    size_t inter;
    if (out == NULL)
        return SIMLSH_EINVAL;
    int rc = intersect(&inter, a, b);
    if (rc < 0)
        return rc;
    *out = a->count == 0 ? 1.0 : (double)inter / (double)a->count;
    return 0;
}

int simlsh_shingleset_params(simlsh_params **out, const simlsh_shingleset *set)
{
    if (out != NULL)
        *out = NULL;
    SIMLSH__CHECK_SHINGLESET(set);
    return simlsh__params_export(out, &set->params);
}

int simlsh_shingleset_fingerprint(uint64_t *out, const simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (out == NULL || set == NULL)
        return SIMLSH_EINVAL;
    *out = set->fingerprint;
    return 0;
}

/* Payload: u64 count, then count u64 hashes in increasing order. */
int simlsh_shingleset_save(void *buf, size_t cap, size_t *size, const simlsh_shingleset *set)
{
    SIMLSH__CHECK_SHINGLESET(set);
    if (size == NULL || set == NULL)
        return SIMLSH_EINVAL;
    if (set->in_doc)
        return SIMLSH_ESTATE;
    uint8_t *q;
    int rc = simlsh__frame_begin(buf, cap, size, 8 + 8 * (uint64_t)set->count, SIMLSH__MAGIC_SET,
                                 &set->params, &q);
    if (rc <= 0)
        return rc;
    simlsh__wr64(q, set->count);
    for (size_t i = 0; i < set->count; i++)
        simlsh__wr64(q + 8 + 8 * i, set->hashes[i]);
    simlsh__frame_write_tail(buf, *size);
    return 0;
}

int simlsh_shingleset_load(simlsh_shingleset **out, const void *buf, size_t len,
                           const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    struct simlsh_params p;
    const uint8_t *pl;
    uint64_t plen;
    int rc = simlsh__frame_open(buf, len, alloc, SIMLSH__MAGIC_SET, &p, &pl, &plen);
    if (rc < 0)
        return rc;
    if (plen < 8)
        return SIMLSH_ECORRUPT;
    uint64_t n = simlsh__rd64(pl);
    if (n > (plen - 8) / 8 || plen != 8 + 8 * n)
        return SIMLSH_ECORRUPT;
    for (uint64_t i = 1; i < n; i++)
        if (simlsh__rd64(pl + 8 + 8 * i) <= simlsh__rd64(pl + 8 * i))
            return SIMLSH_ECORRUPT; /* not sorted unique */
    simlsh_shingleset *s;
    rc = simlsh_shingleset_new(&s, &p);
    if (rc < 0)
        return rc;
    if (n > 0) {
        s->hashes = simlsh__malloc(&s->params.alloc, (size_t)n * sizeof *s->hashes);
        if (s->hashes == NULL) {
            simlsh_shingleset_free(s);
            return SIMLSH_ENOMEM;
        }
        for (uint64_t i = 0; i < n; i++)
            s->hashes[i] = simlsh__rd64(pl + 8 + 8 * i);
        s->cap = s->count = s->len = (size_t)n;
    }
    *out = s;
    return 0;
}
