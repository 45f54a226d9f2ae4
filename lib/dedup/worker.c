/* A worker's scratch of the dedup engine's exact comparison (worker.h):
 * a text's hashes and the distinct-finding table. */
#include <stddef.h>
#include <string.h>

#include "checked.h"
#include "worker.h"

/* Room for n more hashes in w->h, keeping those there. */
static int h_room(dx_worker *w, size_t n)
{
    if (w->hn + n <= w->hcap)
        return 0;
    size_t c = w->hcap ? w->hcap : 1024, bytes;
    while (c < w->hn + n)
        c *= 2;
    if (!simlsh__mul_ok(c, sizeof *w->h, &bytes))
        return SIMLSH_ENOMEM;
    uint64_t *nv = simlsh__malloc(w->al, bytes);
    if (nv == NULL)
        return SIMLSH_ENOMEM;
    if (w->hn > 0)
        memcpy(nv, w->h, w->hn * sizeof *nv);
    simlsh__free_sized(w->al, w->h, w->hcap * sizeof *w->h);
    w->h = nv;
    w->hcap = c;
    return 0;
}

static int sink64(void *ctx, const uint64_t *h, size_t n)
{
    dx_worker *w = ctx;
    int rc = h_room(w, n);
    if (rc < 0)
        return rc;
    memcpy(w->h + w->hn, h, n * sizeof *h);
    w->hn += n;
    return 0;
}

/* 32-bit hashes widened straight into place (a loop the compiler widens). */
static int sink32(void *ctx, const uint32_t *h, size_t n)
{
    dx_worker *w = ctx;
    int rc = h_room(w, n);
    if (rc < 0)
        return rc;
    uint64_t *restrict o = w->h + w->hn;
    for (size_t i = 0; i < n; i++)
        o[i] = h[i];
    w->hn += n;
    return 0;
}

/* The hashes of a text into w->h[0 .. w->hn). */
int simlsh__dx_shingle(dx_worker *w, const struct simlsh_params *p, const void *text, size_t len)
{
    w->hn = 0;
    w->lv_ok = 0;
    simlsh__sink32_fn s32 = p->hash_bits == 32 ? sink32 : NULL;
    simlsh__shingler_begin(w->sh);
    int rc = simlsh__shingler_feed(w->sh, text, len, sink64, s32, w);
    if (rc == 0)
        rc = simlsh__shingler_end(w->sh, sink64, s32, w);
    return rc;
}

/* The distinct-finding table made ready for n values: at least 2n
 * entries, every stamp stale. */
int simlsh__dx_key_room(dx_worker *w, size_t n)
{
    size_t want = 16;
    while (want < 2 * n)
        want *= 2;
    if (want > w->kcap) {
        size_t kb, sb;
        if (!simlsh__mul_ok(want, sizeof *w->key, &kb) ||
            !simlsh__mul_ok(want, sizeof *w->stamp, &sb))
            return SIMLSH_ENOMEM;
        uint64_t *k = simlsh__malloc(w->al, kb);
        uint32_t *s = simlsh__calloc(w->al, want, sizeof *s);
        int32_t *v = simlsh__calloc(w->al, want, sizeof *v);
        if (k == NULL || s == NULL || v == NULL) {
            simlsh__free_sized(w->al, k, kb);
            simlsh__free_sized(w->al, s, sb);
            simlsh__free_sized(w->al, v, want * sizeof *v);
            return SIMLSH_ENOMEM;
        }
        simlsh__free_sized(w->al, w->key, w->kcap * sizeof *w->key);
        simlsh__free_sized(w->al, w->stamp, w->kcap * sizeof *w->stamp);
        simlsh__free_sized(w->al, w->kval, w->kcap * sizeof *w->kval);
        w->key = k;
        w->stamp = s;
        w->kval = v;
        w->kcap = want;
        unsigned bits = 0;
        while (((size_t)1 << bits) < want)
            bits++;
        w->kshift = 64 - bits;
        w->cur = 0;
    }
    if (++w->cur == 0) { /* the stamps wrapped: start them afresh */
        memset(w->stamp, 0, w->kcap * sizeof *w->stamp);
        w->cur = 1;
    }
    return 0;
}

/* Twice the distinct-finding table, its current keys kept (values not). */
int simlsh__dx_key_grow(dx_worker *w)
{
    size_t old = w->kcap, n = 0;
    uint64_t *keys = simlsh__malloc(w->al, (w->kn ? w->kn : 1) * sizeof *keys);
    if (keys == NULL)
        return SIMLSH_ENOMEM;
    for (size_t i = 0; i < old; i++)
        if (w->stamp[i] == w->cur)
            keys[n++] = w->key[i];
    int rc = simlsh__dx_key_room(w, 2 * old); /* a new, larger table: every stamp stale */
    for (size_t i = 0; rc == 0 && i < n; i++)
        key_new(w, keys[i]);
    simlsh__free_sized(w->al, keys, (w->kn ? w->kn : 1) * sizeof *keys);
    return rc;
}
