/*
 * simlsh-dedup: the second pass's exact Jaccard (dedup-verify.c drives
 * it). A batch's documents are read again (dedup-reread.c) and shingled
 * into sets (32-bit hashes: distinct values in text order, 4 bytes a
 * shingle; 64-bit: sorted); each candidate row is decided by its exact
 * Jaccard (32-bit: aligned first, dedup-jaccard.c). A lone pair, whose two
 * documents are in no other pair, is hashed and counted by one worker
 * without keeping either set (lone_row(), jc_count_seq()).
 */
#include "dedup-pass2.h"
#include "min-inter.h"

#include <errno.h>
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void shingle_slot(struct vworker *w, struct slot *sl, const char *text, size_t len);

/* Worker item k: load the shingle set of slot items[k]. */
void load_slot(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    struct slot *sl = &v->slots[v->items[k]];
    const char *text = NULL;
    size_t len = 0;
    int big = v->r->store.id_bytes[sl->id] > BIG_DOC;
    int release = v->r->store.id_bytes[sl->id] > KEEP_DOC;
    sl->loaded = -1;
    w->msg[0] = 0;
    if (big)
        pthread_mutex_lock(&v->big);
    if (doc_text(w, sl->id, &text, &len, w->msg, sizeof w->msg) == 0)
        shingle_slot(w, sl, text, len);
    if (sl->loaded != 1)
        sl->msg = xstrdup(w->msg);
    if (release) {
        simlsh_shingleset_free(w->set);
        w->set = NULL;
        free(w->buf);
        w->buf = NULL;
        w->cap = 0;
        free(w->hashes);
        w->hashes = NULL;
        w->hcap = 0;
        jc_free(&w->jc);
        jc_table_free(&w->held);
        w->held_valid = 0;
    }
    if (big)
        pthread_mutex_unlock(&v->big);
}

/* The text's shingle set through the library's set object (sorted, its
 * repeats folded while the text streams in): a malloc'ed array and its
 * count, or NULL (w->msg says why). */
static uint64_t *set_hashes(struct vworker *w, const char *text, size_t len, size_t *count)
{
    struct vctx *v = w->v;
    size_t n = 0;
    int rc = w->set ? simlsh_shingleset_clear(w->set)
                    : simlsh_shingleset_new(&w->set, v->r->store.params);
    if (rc == 0)
        rc = simlsh_shingleset_add_text(w->set, text, len);
    if (rc == 0)
        rc = simlsh_shingleset_count(&n, w->set);
    uint64_t *h = rc == 0 ? xmalloc((n ? n : 1) * sizeof *h) : NULL;
    if (rc == 0)
        rc = simlsh_shingleset_hashes(h, n, &n, w->set);
    if (rc != 0) {
        free(h);
        snprintf(w->msg, sizeof w->msg, "cannot shingle it again: %s", simlsh_strerror(rc));
        return NULL;
    }
    *count = n;
    return h;
}

/* A long text (more than KEEP_DOC bytes) goes through a shingle set
 * instead, which folds its repeats while they stream in: the text's hashes
 * with repeats would take 8 bytes a byte, and the table to drop them 8 to
 * 16 more (a 2 MB copyright file that quotes one licence a hundred times
 * made 40 MB of them, for 20,000 distinct values). Sorted, not in text
 * order: the Jaccard below needs only membership. */
static void shingle_long32(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    size_t n = 0;
    uint64_t *h = set_hashes(w, text, len, &n);
    if (h == NULL)
        return;
    uint32_t *o = xmalloc((n ? n : 1) * sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = (uint32_t)h[i];
    free(h);
    sl->vals = o;
    sl->n = n;
    sl->loaded = 1;
}

/* The text's shingle hashes in text order, repeats and all, into *buf
 * (grown as needed): 0 and their count, or the library's error code. */
static int text_hashes(struct vworker *w, uint64_t **buf, size_t *cap, const char *text, size_t len,
                       size_t *n)
{
    struct vctx *v = w->v;
    *n = 0;
    int rc = w->set ? 0 : simlsh_shingleset_new(&w->set, v->r->store.params);
    /* room for the usual len + 1 hashes up front, so that a text is hashed
     * twice only when normalisation made more units than bytes */
    if (rc == 0 && *cap < len + 1) {
        free(*buf);
        *cap = len + 1;
        *buf = xmalloc(*cap * sizeof **buf);
    }
    if (rc == 0)
        rc = simlsh_shingleset_text_hashes(*buf, *cap, n, w->set, text, len);
    if (rc == SIMLSH_EBUFSIZE) {
        free(*buf);
        *cap = *n;
        *buf = xmalloc(*cap * sizeof **buf);
        rc = simlsh_shingleset_text_hashes(*buf, *cap, n, w->set, text, len);
    }
    if (rc != 0)
        snprintf(w->msg, sizeof w->msg, "cannot shingle it again: %s", simlsh_strerror(rc));
    return rc;
}

/* 32-bit hashes (HASH_BITS 32): the text's shingle hashes in text order,
 * their repeats dropped (jc_distinct()), kept in that order at
 * 4 bytes a shingle. No sort: sorting a set costs several times hashing it,
 * and the Jaccard below needs only membership. */
static void shingle_slot32(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    size_t n = 0;
    if (len > KEEP_DOC) {
        shingle_long32(w, sl, text, len);
        return;
    }
    if (text_hashes(w, &w->hashes, &w->hcap, text, len, &n) != 0)
        return;
    uint32_t *o = xmalloc((n ? n : 1) * sizeof *o);
    size_t m = jc_distinct(&w->jc, w->hashes, n, o);
    void *shrunk = m < n ? realloc(o, (m ? m : 1) * sizeof *o) : o;
    sl->vals = shrunk ? shrunk : o;
    sl->n = m;
    sl->loaded = 1;
}

static void shingle_slot(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    struct vctx *v = w->v;
    if (v->bits32) {
        shingle_slot32(w, sl, text, len);
        return;
    }
    size_t n = 0;
    uint64_t *h = set_hashes(w, text, len, &n);
    if (h == NULL)
        return;
    sl->vals = h;
    sl->n = n;
    sl->loaded = 1;
}

/* |A and B| / |A or B| of two sorted arrays, as simlsh_shingleset_jaccard()
 * computes it; a pair that cannot reach t (too different in size, or too
 * few shared shingles left to find) stops early and gives 0. */
#define JACCARD_BODY(T, FAST)                                          \
    const T *x = xa, *y = ya;                                          \
    if (na == nb && memcmp(x, y, na * sizeof(T)) == 0)                 \
        return 1.0;                                                    \
    size_t need = simlsh__min_inter(na + nb, t);                       \
    if ((na < nb ? na : nb) < need)                                    \
        return 0.0;                                                    \
    size_t i = 0, j = 0, inter = 0;                                    \
    if (FAST)                                                          \
        return 0.0;                                                    \
    for (;;) {                                                         \
        size_t left = na - i < nb - j ? na - i : nb - j;               \
        if (left == 0)                                                 \
            break;                                                     \
        if (inter + left < need)                                       \
            return 0.0;                                                \
        /* each step moves i or j or both: `left` steps stay inside */ \
        for (size_t s = left < 512 ? left : 512; s > 0; s--) {         \
            T p = x[i], q = y[j];                                      \
            inter += p == q;                                           \
            i += p <= q;                                               \
            j += q <= p;                                               \
        }                                                              \
    }                                                                  \
    size_t uni = na + nb - inter;                                      \
    return uni == 0 ? 1.0 : (double)inter / (double)uni;

/* |A and B| / |A or B| of two 32-bit sets of distinct values (in text
 * order), as simlsh_shingleset_jaccard() computes it. Near-duplicates
 * line up: the walk of dedup-jaccard.c pairs most values and only what is
 * left over goes to a table. Sets that do not line up (candidates of
 * a large component, most of them below the threshold) are counted
 * through a table of x kept while the next rows share x, as rows in batch
 * order mostly do, stopping once too few values are left to reach t; once
 * a walk with x has failed, its next rows go to the table directly. A
 * pair that cannot reach t (too different in size) gives 0 at once. */
static double jaccard32(struct vworker *w, const struct slot *x, const struct slot *y, double t)
{
    const uint32_t *xa = x->vals, *ya = y->vals;
    size_t na = x->n, nb = y->n;
    if (na == nb && memcmp(xa, ya, na * sizeof *xa) == 0)
        return 1.0;
    size_t need = simlsh__min_inter(na + nb, t);
    if ((na < nb ? na : nb) < need)
        return 0.0;
    /* x's table is made only after a walk with x failed: the next rows
     * with x skip the walk (in a large component of unlike documents most
     * would fail too) */
    int held = w->held_valid && w->held_id == x->id;
    size_t inter;
    size_t paired = held ? 0 : jc_walk(&w->jc, xa, na, ya, nb);
    if (paired > 0 && na + nb - 2 * paired <= (na + nb) / 4) {
        inter = jc_inter_left(&w->jc, xa, na, ya, nb, paired);
    } else {
        if (!held) {
            jc_fill(&w->held, xa, na);
            w->held_id = x->id;
            w->held_valid = 1;
        }
        inter = jc_probe(&w->held, ya, nb, need);
    }
    if (inter < need)
        return 0.0;
    size_t uni = na + nb - inter;
    return uni == 0 ? 1.0 : (double)inter / (double)uni;
}

static double jaccard64(const void *xa, size_t na, const void *ya, size_t nb,
                        double t){JACCARD_BODY(uint64_t, 0)}

size_t slot_of(const struct vctx *v, uint64_t id)
{
    const uint64_t *p = bsearch(&id, v->ids, v->nslots, sizeof id, cmp_u64);
    return (size_t)(p - v->ids);
}

/* Worker item k: the exact Jaccard of row items[k], when both sets are
 * loaded (-1 otherwise). */
void jaccard_row(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    size_t row = v->items[k];
    const struct slot *x = &v->slots[slot_of(v, v->ra[row])];
    const struct slot *y = &v->slots[slot_of(v, v->rb[row])];
    if (x->loaded != 1 || y->loaded != 1) {
        v->exact[k] = -1;
        return;
    }
    double t = v->r->threshold;
    v->exact[k] = v->bits32 ? jaccard32(w, x, y, t) : jaccard64(x->vals, x->n, y->vals, y->n, t);
}

/* The low 32 bits of n hashes into w->v32[side] (grown as needed). */
static const uint32_t *narrow(struct vworker *w, int side, const uint64_t *h, size_t n)
{
    if (w->v32cap[side] < n) {
        free(w->v32[side]);
        w->v32cap[side] = n;
        w->v32[side] = xmalloc(n * sizeof *w->v32[side]);
    }
    uint32_t *o = w->v32[side];
    for (size_t i = 0; i < n; i++)
        o[i] = (uint32_t)h[i];
    return o;
}

/* |A and B| / |A or B| of two texts' 32-bit hashes (in text order, with
 * repeats), as jaccard32() decides it, counted without building either
 * set (jc_count_seq()). */
static double fused32(struct vworker *w, const uint64_t *ha, size_t na, const uint64_t *hb,
                      size_t nb, double t)
{
    struct jc_counts c;
    jc_count_seq(&w->jc, narrow(w, 0, ha, na), na, narrow(w, 1, hb, nb), nb, &c);
    size_t uni = c.a + c.b - c.both;
    if (uni == 0)
        return 1.0;
    if (c.both < simlsh__min_inter(c.a + c.b, t))
        return 0.0;
    return (double)c.both / (double)uni;
}

/* Worker item k: the fused pair lone[items[k]]. */
void lone_row(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    struct lone *p = &v->lone[v->items[k]];
    const char *text = NULL;
    size_t len = 0, na = 0, nb = 0;
    p->j = -1;
    w->msg[0] = 0;
    p->bad = p->a;
    if (doc_text(w, p->a, &text, &len, w->msg, sizeof w->msg) != 0 ||
        text_hashes(w, &w->hashes, &w->hcap, text, len, &na) != 0)
        goto fail;
    p->bad = p->b;
    if (doc_text(w, p->b, &text, &len, w->msg, sizeof w->msg) != 0 ||
        text_hashes(w, &w->hashes2, &w->hcap2, text, len, &nb) != 0)
        goto fail;
    p->j = fused32(w, w->hashes, na, w->hashes2, nb, v->r->threshold);
    return;
fail:
    p->msg = xstrdup(w->msg);
}
