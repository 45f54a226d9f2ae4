/* The exact comparison of the texts a batch of the dedup engine asked for:
 * each centre's shingle set becomes a hash table, then each other text is
 * shingled once, its distinct hashes found, and each of its pairs decided
 * by probing its centre's table, stopping as soon as the threshold can no
 * longer be reached. A text identical to its centre's is decided without
 * shingling. Sets hold 64-bit values (32-bit hashes widened), so both hash
 * widths give the Jaccard of the same sets the rest of the library
 * compares. */
#include <stddef.h>
#include <string.h>

#include "checked.h"
#include "internal.h"
#include "pool.h"
#include "shingle.h"
#include "util/min-inter.h"

static inline size_t home_of(uint64_t h, unsigned shift)
{
    return (size_t)((h * UINT64_C(0x9E3779B97F4A7C15)) >> shift);
}

size_t simlsh__dx_set_bytes(const dx_set *s)
{
    return s->cap * (sizeof *s->tab + sizeof *s->cnt) + s->len;
}

void simlsh__dx_set_free(const simlsh_allocator *al, dx_set *s)
{
    simlsh__free_sized(al, s->tab, s->cap * sizeof *s->tab);
    simlsh__free_sized(al, s->cnt, s->cap * sizeof *s->cnt);
    simlsh__free_sized(al, s->text, s->len);
    memset(s, 0, sizeof *s);
}

/* ---- a worker's scratch -------------------------------------------------------- */

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
    uint64_t exact, identical, estimated, edits;
} dx_worker;

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
static int shingle(dx_worker *w, const struct simlsh_params *p, const void *text, size_t len)
{
    w->hn = 0;
    simlsh__sink32_fn s32 = p->hash_bits == 32 ? sink32 : NULL;
    simlsh__shingler_begin(w->sh);
    int rc = simlsh__shingler_feed(w->sh, text, len, sink64, s32, w);
    if (rc == 0)
        rc = simlsh__shingler_end(w->sh, sink64, s32, w);
    return rc;
}

/* The distinct-finding table made ready for n values: at least 2n
 * entries, every stamp stale. */
static int key_room(dx_worker *w, size_t n)
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

/* Twice the distinct-finding table, its current keys kept (values not). */
static int key_grow(dx_worker *w)
{
    size_t old = w->kcap, n = 0;
    uint64_t *keys = simlsh__malloc(w->al, (w->kn ? w->kn : 1) * sizeof *keys);
    if (keys == NULL)
        return SIMLSH_ENOMEM;
    for (size_t i = 0; i < old; i++)
        if (w->stamp[i] == w->cur)
            keys[n++] = w->key[i];
    int rc = key_room(w, 2 * old); /* a new, larger table: every stamp stale */
    for (size_t i = 0; rc == 0 && i < n; i++)
        key_new(w, keys[i]);
    simlsh__free_sized(w->al, keys, (w->kn ? w->kn : 1) * sizeof *keys);
    return rc;
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

/* ---- centres -------------------------------------------------------------------- */

/* An empty table of cap entries (a power of 2) for s; 0 or ENOMEM (then
 * s is unchanged). */
static int table_new(const simlsh_allocator *al, dx_set *s, size_t cap)
{
    uint64_t *tab = simlsh__calloc(al, cap, sizeof *tab);
    uint32_t *cnt = simlsh__calloc(al, cap, sizeof *cnt);
    if (tab == NULL || cnt == NULL) {
        simlsh__free_sized(al, tab, cap * sizeof *tab);
        simlsh__free_sized(al, cnt, cap * sizeof *cnt);
        return SIMLSH_ENOMEM;
    }
    s->tab = tab;
    s->cnt = cnt;
    s->cap = cap;
    unsigned bits = 0;
    while (((size_t)1 << bits) < cap)
        bits++;
    s->shift = 64 - bits;
    return 0;
}

/* Add h (not 0) once more to s's table; n counts distinct entries. */
static inline void table_add(dx_set *s, uint64_t h, uint32_t times, size_t *n)
{
    size_t p = home_of(h, s->shift);
    while (s->tab[p] != 0 && s->tab[p] != h)
        p = (p + 1) & (s->cap - 1);
    *n += s->tab[p] == 0;
    s->tab[p] = h;
    s->cnt[p] += times;
}

/* Twice the table, its entries and counts kept. */
static int table_grow(const simlsh_allocator *al, dx_set *s)
{
    dx_set old = *s;
    size_t n = 0;
    if (table_new(al, s, 2 * old.cap) < 0) {
        *s = old;
        return SIMLSH_ENOMEM;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.tab[i] != 0)
            table_add(s, old.tab[i], old.cnt[i], &n);
    simlsh__free_sized(al, old.tab, old.cap * sizeof *old.tab);
    simlsh__free_sized(al, old.cnt, old.cap * sizeof *old.cnt);
    return 0;
}

static int build_centre(dx_worker *w, const dx_job *j, size_t k)
{
    size_t ti = j->centres[k];
    dx_set *s = j->centre_sets[k];
    const void *text = j->texts[ti];
    size_t len = j->lens[ti], n = 0;
    int rc = shingle(w, j->params, text, len);
    if (rc == SIMLSH_EUTF8) {
        s->missing = 1;
        return 0;
    }
    if (rc < 0)
        return rc;
    /* sized for a quarter of the hashes and grown at half full: texts that
     * repeat themselves (licences pasted many times) need far less */
    size_t cap = 16;
    while (cap < w->hn / 2)
        cap *= 2;
    dx_set t = {0};
    if ((rc = table_new(w->al, &t, cap)) < 0)
        return rc;
    t.text = len > 0 ? simlsh__malloc(w->al, len) : NULL;
    if (len > 0 && t.text == NULL) {
        simlsh__dx_set_free(w->al, &t);
        return SIMLSH_ENOMEM;
    }
    t.len = len;
    /* every hash with its multiplicity: a near-copy's set is then this
     * text's, less what its edits remove and plus what they add */
    for (size_t i = 0; i < w->hn; i++) {
        uint64_t h = w->h[i];
        if (h == 0) {
            t.zero = 1;
            t.zcnt++;
            continue;
        }
        if (2 * (n + 1) > t.cap && (rc = table_grow(w->al, &t)) < 0) {
            simlsh__dx_set_free(w->al, &t);
            return rc;
        }
        table_add(&t, h, 1, &n);
    }
    t.n = n + t.zero;
    if (len > 0)
        memcpy(t.text, text, len);
    t.ready = 1;
    *s = t;
    return 0;
}

/* ---- near-copies from their edits ------------------------------------------------- */

int simlsh__dx_diff_ok(const struct simlsh_params *p)
{
    int32_t simple = SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE;
    return (p->unit == SIMLSH_UNIT_BYTE || p->unit == SIMLSH_UNIT_CHAR) &&
           (p->normalize & ~simple) == 0 && p->k >= 1;
}

/* Does byte b start a character that is a unit whatever the normalisation
 * and decoding around it? ASCII graphic characters, and lead bytes of
 * code points that no Unicode whitespace uses (whitespace is U+0085,
 * U+00A0, U+1680, U+2000.., U+3000: leads C2, E1, E2, E3). Counting only
 * these never counts more units than there are. */
static inline int sure_unit(unsigned char b)
{
    return (b > 0x20 && b < 0x7f) || (b >= 0xc3 && b <= 0xdf) || (b >= 0xe4 && b <= 0xef) ||
           (b >= 0xf0 && b <= 0xf4);
}

static inline int cp_start(unsigned char b)
{
    return (b & 0xc0) != 0x80;
}

/* A cut at or before `at` with at least n sure units in [cut, at), at a
 * character start; 0 if the text has fewer. */
static size_t back_margin(const unsigned char *t, size_t at, size_t n)
{
    size_t i = at;
    while (i > 0 && n > 0)
        n -= sure_unit(t[--i]);
    while (i > 0 && !cp_start(t[i]))
        i--;
    return n > 0 ? 0 : i;
}

/* A cut at or after `at` with at least n sure units in [at, cut), at a
 * character start; len if the text has fewer. */
static size_t fwd_margin(const unsigned char *t, size_t len, size_t at, size_t n)
{
    size_t i = at;
    while (i < len && n > 0)
        n -= sure_unit(t[i++]);
    while (i < len && !cp_start(t[i]))
        i++;
    return n > 0 ? len : i;
}

/* Bytes a and b share at their start (at most n), 8 at a time. */
static size_t common_prefix(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Add d to the count change of each hash of a window's text. */
static int window_counts(dx_worker *w, const dx_job *j, const char *text, size_t len, int32_t d,
                         size_t *touched, size_t *nt)
{
    int rc = shingle(w, j->params, text, len);
    w->h_window = 1;
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < w->hn; i++) {
        int fresh;
        size_t e = key_at(w, w->h[i], &fresh);
        if (fresh)
            touched[(*nt)++] = e;
        w->kval[e] += d;
    }
    return 0;
}

/* Edits of a near-copy: where texts a and b differ, as regions a[ai, aj)
 * against b[bi, bj) with identical bytes between them. Found by walking
 * both texts while they agree (8 bytes at a time) and, at a difference,
 * looking for the nearest place within RESYNC bytes of both where 16 bytes
 * agree again. Any such split is exact: the parts between regions are
 * byte for byte the same; a poor split only makes the windows larger. */
#define RESYNC 256
#define ANCHOR 16
#define MAX_EDITS 64

typedef struct {
    size_t ai, aj, bi, bj;
} dx_edit;

static inline uint64_t anchor_key(const unsigned char *p)
{
    uint64_t x, y;
    memcpy(&x, p, 8);
    memcpy(&y, p + 8, 8);
    return (x ^ (y * UINT64_C(0x9E3779B97F4A7C15))) * UINT64_C(0xff51afd7ed558ccd);
}

/* The nearest (x, y), smallest x + y, with a[i + x ..] and b[j + y ..]
 * agreeing for ANCHOR bytes, x and y at most r (tab entries of table
 * space: a power of 2 above 2 r); 0 if there is none. */
static int resync_within(const unsigned char *a, size_t la, const unsigned char *b, size_t lb,
                         size_t i, size_t j, size_t r, uint32_t *pos, uint64_t *key, size_t tab,
                         size_t *xo, size_t *yo)
{
    if (lb - j < ANCHOR || la - i < ANCHOR)
        return 0;
    unsigned shift = 64;
    for (size_t t = tab; t > 1; t >>= 1)
        shift--;
    memset(pos, 0, tab * sizeof *pos);
    size_t ymax = lb - j - ANCHOR, xmax = la - i - ANCHOR, best = SIZE_MAX;
    if (ymax > r)
        ymax = r;
    if (xmax > r)
        xmax = r;
    for (size_t y = 0; y <= ymax; y++) {
        uint64_t k = anchor_key(b + j + y);
        size_t h = (size_t)(k >> shift);
        while (pos[h] != 0 && key[h] != k)
            h = (h + 1) & (tab - 1);
        if (pos[h] == 0) { /* the first (nearest) y of a key is kept */
            pos[h] = (uint32_t)y + 1;
            key[h] = k;
        }
    }
    for (size_t x = 0; x <= xmax && x < best; x++) {
        uint64_t k = anchor_key(a + i + x);
        size_t h = (size_t)(k >> shift);
        while (pos[h] != 0 && key[h] != k)
            h = (h + 1) & (tab - 1);
        if (pos[h] == 0)
            continue;
        size_t y = pos[h] - 1;
        if (x + y < best && memcmp(a + i + x, b + j + y, ANCHOR) == 0) {
            best = x + y;
            *xo = x;
            *yo = y;
        }
    }
    return best != SIZE_MAX;
}

/* Most edits replace a word or two: a near look first, then a far one. */
static int resync(const unsigned char *a, size_t la, const unsigned char *b, size_t lb, size_t i,
                  size_t j, size_t *xo, size_t *yo)
{
    uint32_t pos[1024];
    uint64_t key[1024];
    return resync_within(a, la, b, lb, i, j, 12, pos, key, 32, xo, yo) ||
           resync_within(a, la, b, lb, i, j, 40, pos, key, 128, xo, yo) ||
           resync_within(a, la, b, lb, i, j, RESYNC, pos, key, 1024, xo, yo);
}

/* The edits of b against a, at most MAX_EDITS; 0 when there are more or
 * they cannot be found. */
static int find_edits(const unsigned char *a, size_t la, const unsigned char *b, size_t lb,
                      dx_edit *e, size_t *ne)
{
    size_t i = 0, j = 0, n = 0;
    for (;;) {
        size_t most = la - i < lb - j ? la - i : lb - j, k = common_prefix(a + i, b + j, most);
        i += k;
        j += k;
        if (i == la && j == lb)
            break;
        if (n == MAX_EDITS)
            return 0;
        size_t x, y;
        if (i == la || j == lb || !resync(a, la, b, lb, i, j, &x, &y)) {
            /* the rest differs: one region to the ends */
            e[n++] = (dx_edit){i, la, j, lb};
            break;
        }
        e[n++] = (dx_edit){i, i + x, j, j + y};
        i += x;
        j += y;
    }
    *ne = n;
    return 1;
}

/* Decide pair p of a near-copy from its edits. With the texts cut into
 * parts that are byte for byte the same and the regions between (the
 * edits), the multiset of the copy's hashes is the centre's, less the
 * hashes of a window of the centre around each edit, plus those of the
 * same window of the copy. Each window reaches k + 1 units into the shared
 * text on both sides (windows that would overlap become one), so every
 * shingle that touches an edit lies inside it, and what a window's own
 * edges make (a trimmed space, a cut character) is the same in both texts
 * and cancels. 1: decided; 0: not worth it or not possible here (the
 * caller shingles the whole text); < 0: an error. */
static int decide_diff(dx_worker *w, const dx_job *j, dx_pair *p, const dx_set *c, const char *mt,
                       size_t ml)
{
    const unsigned char *a = (const unsigned char *)c->text, *b = (const unsigned char *)mt;
    size_t la = c->len, most = la < ml ? la : ml, ne = 0;
    dx_edit e[MAX_EDITS];
    /* an estimate nearer the threshold than 1: edits all over (a template),
     * cheaper to decide from the whole text than to search for */
    if (!j->diff_ok || most < 64 || 2 * (double)p->eq < (1 + j->threshold) * j->num_perm ||
        !find_edits(a, la, b, ml, e, &ne) || ne == 0)
        return 0;
    /* windows: [wa, za) of a against [wb, zb) of b */
    size_t margin = (size_t)j->params->k + 1, nw = 0, bytes = 0;
    size_t wa[MAX_EDITS], za[MAX_EDITS], wb[MAX_EDITS], zb[MAX_EDITS];
    for (size_t k = 0; k < ne;) {
        size_t first = k;
        size_t from = back_margin(a, e[k].ai, margin);
        size_t to = fwd_margin(a, la, e[k].aj, margin);
        /* a window that would reach into the next one's takes its edit */
        while (k + 1 < ne && to > back_margin(a, e[k + 1].ai, margin)) {
            k++;
            to = fwd_margin(a, la, e[k].aj, margin);
        }
        /* the shared text before the first edit is where b = a + (bi - ai),
         * and after the last where b = a + (bj - aj) */
        wa[nw] = from;
        za[nw] = to;
        wb[nw] = from + e[first].bi - e[first].ai;
        zb[nw] = to - e[k].aj + e[k].bj;
        bytes += (za[nw] - wa[nw]) + (zb[nw] - wb[nw]);
        nw++;
        k++;
    }
    if (bytes > (la + ml) / 2)
        return 0; /* mostly edits: shingling the whole text costs less */
    size_t cap = bytes + 2 * nw, nt = 0;
    int rc = key_room(w, cap);
    if (rc == 0 && cap > w->tcap) {
        size_t *t = simlsh__malloc(w->al, cap * sizeof *t);
        if (t == NULL) {
            rc = SIMLSH_ENOMEM;
        } else {
            simlsh__free_sized(w->al, w->touched, w->tcap * sizeof *w->touched);
            w->touched = t;
            w->tcap = cap;
        }
    }
    size_t *touched = w->touched;
    for (size_t q = 0; rc == 0 && q < nw; q++) {
        rc = window_counts(w, j, c->text + wa[q], za[q] - wa[q], -1, touched, &nt);
        if (rc == 0)
            rc = window_counts(w, j, mt + wb[q], zb[q] - wb[q], +1, touched, &nt);
    }
    if (rc < 0)
        return rc == SIMLSH_EUTF8 ? 0 : rc;
    size_t removed = 0, added = 0;
    int sound = 1;
    for (size_t i = 0; i < nt && sound; i++) {
        size_t at = touched[i];
        int32_t d = w->kval[at];
        if (d == 0)
            continue;
        uint64_t h = w->key[at];
        int64_t was = 0;
        if (h == 0) {
            was = c->zcnt;
        } else {
            size_t f = set_find(c, h);
            was = f == SIZE_MAX ? 0 : c->cnt[f];
        }
        int64_t now = was + d;
        sound = now >= 0;
        removed += was > 0 && now == 0;
        added += was == 0 && now > 0;
    }
    if (!sound)
        return 0; /* cannot happen when the windows are right; be safe */
    size_t na = c->n, inter = na - removed, nb = inter + added, total = na + nb;
    w->exact++;
    w->edits++;
    p->verdict = 0;
    p->score = 0;
    if (inter >= simlsh__min_inter(total, j->threshold)) {
        size_t uni = total - inter;
        p->verdict = 1;
        p->score = uni == 0 ? 1.0 : (double)inter / (double)uni;
    }
    return 1;
}

/* ---- mates -------------------------------------------------------------------------- */

/* Room for the matched marks of a table of cap entries, all stale. */
static int hit_room(dx_worker *w, size_t cap)
{
    if (cap > w->hitcap) {
        uint32_t *h = simlsh__calloc(w->al, cap, sizeof *h);
        if (h == NULL)
            return SIMLSH_ENOMEM;
        simlsh__free_sized(w->al, w->hit, w->hitcap * sizeof *w->hit);
        w->hit = h;
        w->hitcap = cap;
        w->hcur = 0;
    }
    if (++w->hcur == 0) {
        memset(w->hit, 0, w->hitcap * sizeof *w->hit);
        w->hcur = 1;
    }
    return 0;
}

/* Decide pair p for the mate whose hashes (with repeats, in text order)
 * are w->h[0 .. w->hn). A near-duplicate's hashes are nearly all in the
 * centre's set: each is found there once (its entry marked, so a repeat
 * is not counted twice), and only the others go to the distinct-finding
 * table. Stops once the threshold is out of reach: with i shared and m
 * other distinct values so far and r hashes left, at most i + r are
 * shared and at least i + m distinct in all. */
static int decide_exact(dx_worker *w, const dx_job *j, dx_pair *p, const dx_set *c)
{
    double t = j->threshold;
    size_t na = c->n, n = w->hn, inter = 0, others = 0;
    int zero = 0;
    int rc = hit_room(w, c->cap);
    if (rc < 0)
        return rc;
    w->exact++;
    p->verdict = 0;
    p->score = 0;
    /* the other values' table starts small and grows with them: a
     * near-copy has few, an unlike text stops early */
    if ((rc = key_room(w, n < 512 ? n : 512)) < 0)
        return rc;
    w->kn = 0;
    for (size_t at = 0; at < n;) {
        size_t end = n - at > 256 ? at + 256 : n;
        for (; at < end; at++) {
            uint64_t h = w->h[at];
            if (h == 0) {
                if (!zero) {
                    zero = 1;
                    if (c->zero)
                        inter++;
                    else
                        others++;
                }
                continue;
            }
            size_t e = set_find(c, h);
            if (e != SIZE_MAX) {
                if (w->hit[e] != w->hcur) {
                    w->hit[e] = w->hcur;
                    inter++;
                }
                continue;
            }
            if (2 * (w->kn + 1) > w->kcap && (rc = key_grow(w)) < 0)
                return rc;
            int fresh = key_new(w, h);
            others += fresh;
            w->kn += fresh;
        }
        /* reachable: at most i + r shared, at least na + i + m in all, and
         * the shared count a total needs grows with it; in integers, as
         * the final decision, so a pair exactly at t is never cut */
        if (inter + (n - at) < simlsh__min_inter(na + inter + others, t))
            return 0;
    }
    size_t nb = inter + others, total = na + nb;
    if (inter < simlsh__min_inter(total, t))
        return 0;
    size_t uni = total - inter;
    p->verdict = 1;
    p->score = uni == 0 ? 1.0 : (double)inter / (double)uni;
    return 0;
}

static void decide_estimate(dx_worker *w, const dx_job *j, dx_pair *p)
{
    w->estimated++;
    p->score = (double)p->eq / (double)j->num_perm;
    p->verdict = p->score >= j->threshold;
}

static int decide_mate(dx_worker *w, const dx_job *j, size_t m)
{
    size_t ti = j->mates[m];
    const void *text = j->texts[ti];
    size_t len = j->lens[ti];
    int shingled = 0, missing = 0;
    for (size_t k = j->first[m]; k < j->first[m + 1]; k++) {
        dx_pair *p = &j->pairs[j->pair_of[k]];
        const dx_set *c = j->set_of[j->pair_of[k]];
        if (c->missing || missing) {
            decide_estimate(w, j, p);
            continue;
        }
        if (c->len == len && (len == 0 || memcmp(c->text, text, len) == 0)) {
            w->exact++;
            w->identical++;
            p->verdict = 1;
            p->score = 1.0;
            continue;
        }
        int rd = decide_diff(w, j, p, c, text, len);
        if (rd < 0)
            return rd;
        if (rd == 1)
            continue;
        if (w->h_window)
            shingled = 0; /* the windows' hashes replaced the text's */
        if (!shingled) {
            w->h_window = 0;
            int rc = shingle(w, j->params, text, len);
            if (rc == SIMLSH_EUTF8) {
                missing = 1;
                j->mate_missing[m] = 1;
                decide_estimate(w, j, p);
                continue;
            }
            if (rc < 0)
                return rc;
            shingled = 1;
        }
        int rc = decide_exact(w, j, p, c);
        if (rc < 0)
            return rc;
    }
    j->mate_done[m] = 1;
    return 0;
}

/* ---- the job ---------------------------------------------------------------------- */

typedef struct {
    dx_job *job;
    dx_worker *w;
} dx_run;

#define CENTRE_RUN 4
#define MATE_RUN 16

static int centre_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    size_t lo = unit * CENTRE_RUN, hi = lo + CENTRE_RUN;
    if (hi > r->job->ncentres)
        hi = r->job->ncentres;
    for (size_t k = lo; k < hi; k++) {
        int rc = build_centre(&r->w[worker], r->job, k);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int mate_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    dx_run *r = ctx;
    size_t lo = unit * MATE_RUN, hi = lo + MATE_RUN;
    if (hi > r->job->nmates)
        hi = r->job->nmates;
    for (size_t m = lo; m < hi; m++) {
        int rc = decide_mate(&r->w[worker], r->job, m);
        if (rc < 0)
            return rc;
    }
    return 0;
}

struct dx_scratch {
    dx_worker *w;
    uint32_t n;
};

static void worker_free(const simlsh_allocator *al, dx_worker *w)
{
    simlsh__free_sized(al, w->h, w->hcap * sizeof *w->h);
    simlsh__free_sized(al, w->key, w->kcap * sizeof *w->key);
    simlsh__free_sized(al, w->stamp, w->kcap * sizeof *w->stamp);
    simlsh__free_sized(al, w->kval, w->kcap * sizeof *w->kval);
    simlsh__free_sized(al, w->touched, w->tcap * sizeof *w->touched);
    simlsh__free_sized(al, w->hit, w->hitcap * sizeof *w->hit);
}

void simlsh__dx_scratch_free(const simlsh_allocator *al, dx_scratch *sc)
{
    if (sc == NULL)
        return;
    for (uint32_t i = 0; i < sc->n; i++)
        worker_free(al, &sc->w[i]);
    simlsh__free_sized(al, sc->w, sc->n * sizeof *sc->w);
    simlsh__free_sized(al, sc, sizeof *sc);
}

/* Workers' buffers are kept between calls in *j->scratch: a batch's
 * tables are in the next batch's way already grown and faulted in. */
static dx_worker *workers_for(dx_job *j, uint32_t n)
{
    dx_scratch *sc = *j->scratch;
    if (sc == NULL) {
        if ((sc = simlsh__calloc(j->al, 1, sizeof *sc)) == NULL)
            return NULL;
        *j->scratch = sc;
    }
    if (sc->n < n) {
        dx_worker *w = simlsh__calloc(j->al, n, sizeof *w);
        if (w == NULL)
            return NULL;
        if (sc->n)
            memcpy(w, sc->w, sc->n * sizeof *w);
        simlsh__free_sized(j->al, sc->w, sc->n * sizeof *sc->w);
        sc->w = w;
        sc->n = n;
    }
    return sc->w;
}

int simlsh__dx_run(dx_job *j)
{
    size_t units_c = (j->ncentres + CENTRE_RUN - 1) / CENTRE_RUN;
    size_t units_m = (j->nmates + MATE_RUN - 1) / MATE_RUN;
    size_t most = units_c > units_m ? units_c : units_m;
    if (most == 0)
        return 0;
    uint32_t workers = simlsh__par_workers(j->nthreads, most);
    simlsh__lockal la;
    simlsh__lockal_init(&la, j->al);
    struct simlsh_params p = *j->params;
    p.alloc = la.al;
    int rc = 0;
    dx_worker *w = workers_for(j, workers);
    if (w == NULL)
        rc = SIMLSH_ENOMEM;
    for (uint32_t i = 0; w != NULL && i < workers; i++) {
        w[i].al = &la.al;
        w[i].sh = NULL;
        w[i].exact = w[i].identical = w[i].estimated = w[i].edits = 0;
    }
    for (uint32_t i = 0; rc == 0 && i < workers; i++)
        rc = simlsh__shingler_new(&w[i].sh, &p);
    dx_run r = {j, w};
    if (rc == 0 && units_c > 0)
        rc = simlsh__par_run(simlsh__par_workers(j->nthreads, units_c), units_c, centre_unit, &r,
                             NULL);
    if (rc == 0 && units_m > 0)
        rc = simlsh__par_run(simlsh__par_workers(j->nthreads, units_m), units_m, mate_unit, &r,
                             NULL);
    if (rc < 0) {
        /* nothing taken: the sets built so far go, the verdicts are undone */
        for (size_t k = 0; k < j->ncentres; k++)
            simlsh__dx_set_free(&la.al, j->centre_sets[k]);
        for (size_t m = 0; m < j->nmates; m++) {
            j->mate_done[m] = 0;
            j->mate_missing[m] = 0;
            for (size_t k = j->first[m]; k < j->first[m + 1]; k++)
                j->pairs[j->pair_of[k]].verdict = -1;
        }
    }
    for (uint32_t i = 0; w != NULL && i < workers; i++) {
        j->exact += rc == 0 ? w[i].exact : 0;
        j->identical += rc == 0 ? w[i].identical : 0;
        j->estimated += rc == 0 ? w[i].estimated : 0;
        j->edits += rc == 0 ? w[i].edits : 0;
        simlsh__shingler_free(w[i].sh); /* it holds the call's allocator */
        w[i].sh = NULL;
        w[i].al = NULL;
    }
    simlsh__lockal_done(&la);
    return rc;
}
