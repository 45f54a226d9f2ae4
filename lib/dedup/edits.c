/* Near-copies of a centre decided from their edits (worker.h): where the
 * texts differ, only those windows are shingled, and the centre's counts
 * say which of its shingles they remove and which they add. */
#include <stddef.h>
#include <string.h>

#include "checked.h"
#include "util/min-inter.h"
#include "worker.h"

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
    int rc = simlsh__dx_shingle(w, j->params, text, len);
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
int simlsh__dx_decide_diff(dx_worker *w, const dx_job *j, dx_pair *p, const dx_set *c,
                           const char *mt, size_t ml)
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
    int rc = simlsh__dx_key_room(w, cap);
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
