/* A worker of the dedup engine's exact comparison: its scratch and the
 * lookups shared by exact.c (sets, whole comparisons, the run) and
 * edits.c (near-copies decided from their edits). Private to lib/dedup. */
#ifndef SIMLSH_DEDUP_WORKER_H
#define SIMLSH_DEDUP_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "shingle.h"

typedef struct {
    simlsh__shingler *sh;
    uint64_t *h; /* hashes of the text, with repeats */
    size_t hn, hcap;
    uint64_t *key; /* distinct-finding table, valid where stamp == cur */
    uint32_t *stamp;
    int32_t *kval;   /* a value per key (the edits' count changes) */
    size_t kn;       /* keys entered since the last key_room() (when counted) */
    int h_window;    /* w->h holds a window's hashes (window_counts()), not a text's */
    size_t *touched; /* keys entered by the edits' windows */
    size_t tcap;
    size_t kcap;
    unsigned kshift;
    uint32_t cur;
    uint32_t *hit; /* per entry of the centre's table: == hcur once matched */
    size_t hitcap;
    uint32_t hcur;
    int oom;
    const simlsh_allocator *al;
    uint64_t *lvh; /* the text's sampled hashes by level, highest first */
    size_t lvcap;
    size_t lvend[DX_LEVELS + 1]; /* lvh[0 .. lvend[l]): those of level l or more */
    int lv_ok;                   /* lvh is w->h's */
    unsigned top;                /* the hashes are below 2^top (32 or 64) */
    uint64_t exact, identical, estimated, edits, sampled;
} dx_worker;

static inline size_t home_of(uint64_t h, unsigned shift)
{
    return (size_t)((h * UINT64_C(0x9E3779B97F4A7C15)) >> shift);
}

/* The entry of h in the distinct-finding table, entered (value 0) if new. */
static inline size_t key_at(dx_worker *w, uint64_t h, int *fresh)
{
    size_t p = home_of(h, w->kshift), mask = w->kcap - 1;
    while (w->stamp[p] == w->cur && w->key[p] != h)
        p = (p + 1) & mask;
    *fresh = w->stamp[p] != w->cur;
    if (*fresh) {
        w->stamp[p] = w->cur;
        w->key[p] = h;
        w->kval[p] = 0;
    }
    return p;
}

/* Is h new to the distinct-finding table? (It is then entered.) */
static inline int key_new(dx_worker *w, uint64_t h)
{
    size_t p = home_of(h, w->kshift), mask = w->kcap - 1;
    while (w->stamp[p] == w->cur && w->key[p] != h)
        p = (p + 1) & mask;
    if (w->stamp[p] == w->cur)
        return 0;
    w->stamp[p] = w->cur;
    w->key[p] = h;
    return 1;
}

/* The entry of h in s's table, or SIZE_MAX (h != 0). */
static inline size_t set_find(const dx_set *s, uint64_t h)
{
    size_t p = home_of(h, s->shift), mask = s->cap - 1;
    for (;;) {
        uint64_t v = s->tab[p];
        if (v == h)
            return p;
        if (v == 0)
            return SIZE_MAX;
        p = (p + 1) & mask;
    }
}

/* The hashes of a text into w->h[0 .. w->hn) (exact.c). */
int simlsh__dx_shingle(dx_worker *w, const struct simlsh_params *p, const void *text, size_t len);

/* The distinct-finding table made ready for n values: at least 2n
 * entries, every stamp stale (exact.c). */
int simlsh__dx_key_room(dx_worker *w, size_t n);

/* Twice the distinct-finding table, its current keys kept (exact.c). */
int simlsh__dx_key_grow(dx_worker *w);

/* Pair p decided from the bytes where the mate's text mt differs from
 * centre c's (edits.c): 1 if decided, 0 if it must be compared whole, or
 * SIMLSH_ENOMEM. */
int simlsh__dx_decide_diff(dx_worker *w, const dx_job *j, dx_pair *p, const dx_set *c,
                           const char *mt, size_t ml);

#endif
