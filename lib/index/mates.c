/* The index as the dedup engine sees it: slots, bucket-mates, and the
 * census of large buckets (mates.h). */
#include "internal.h"
#include "lowbytes.h"
#include "mates.h"
#include "vec.h"

const struct simlsh_params *simlsh__ix_params(const struct simlsh_index *ix)
{
    return &ix->params;
}

size_t simlsh__ix_nslots(const struct simlsh_index *ix)
{
    return ix->nslots;
}

uint64_t simlsh__ix_gen(const struct simlsh_index *ix)
{
    return ix->gen;
}

uint32_t simlsh__ix_num_perm(const struct simlsh_index *ix)
{
    return ix->num_perm;
}

int simlsh__ix_has_sigs(const struct simlsh_index *ix)
{
    return ix->store;
}

int simlsh__ix_slot_id(const struct simlsh_index *ix, uint32_t slot, uint64_t *id)
{
    if (slot >= ix->nslots)
        return 0;
    /* a free slot holds the next free one, so ask the id map */
    size_t p = idmap_find(ix, ix->ids[slot]);
    if (p == SIZE_MAX || ix->idmap[p].slot != slot)
        return 0;
    *id = ix->ids[slot];
    return 1;
}

uint32_t simlsh__ix_slot_of(const struct simlsh_index *ix, uint64_t id)
{
    size_t p = idmap_find(ix, id);
    return p == SIZE_MAX ? NO_SLOT : ix->idmap[p].slot;
}

uint32_t simlsh__ix_need(uint32_t np, double thr)
{
    if (!(thr > 0))
        return 0;
    uint32_t need = (uint32_t)(thr * np);
    while (need > 0 && (double)(need - 1) / (double)np >= thr)
        need--;
    while (need <= np && (double)need / (double)np < thr)
        need++;
    return need;
}

/* Member v of x's bucket, with equal rows and still open, past the low
 * bytes' test: scored on the whole signatures, kept if it reaches need. */
static inline int mate_score(const struct simlsh_index *ix, const uint32_t *xv, uint32_t v,
                             uint32_t need, const simlsh_allocator *al, simlsh__matevec *out)
{
    uint32_t eq = count_equal(sig_of(ix, v), xv, ix->num_perm);
    if (eq < need)
        return 0;
    if (out->n == out->cap) {
        int rc = simlsh__vec_reserve(al, out, out->n + 1, NULL);
        if (rc < 0)
            return rc;
    }
    out->v[out->n].slot = v;
    out->v[out->n].eq = eq;
    out->n++;
    return 0;
}

/* Member v of x's bucket, met for the first time with equal rows and
 * still open: scored, kept if it reaches need. */
static inline int mate_meet(const struct simlsh_index *ix, const uint32_t *xv, uint32_t v,
                            uint32_t need, uint32_t *seen, uint32_t stamp, const uint8_t *low,
                            const uint8_t *xlow, const simlsh_allocator *al, simlsh__matevec *out)
{
    seen[v] = stamp;
    if (low != NULL &&
        simlsh__count_equal8(low + (size_t)v * ix->num_perm, xlow, ix->num_perm) < need)
        return 0;
    return mate_score(ix, xv, v, need, al, out);
}

#define MATES_AHEAD 8

/* The first two lines of a row (all of it at up to 128 values). */
static inline void prefetch_low(const uint8_t *row, uint32_t n)
{
    PREFETCH(row);
    if (n > 64)
        PREFETCH(row + 64);
}

void simlsh__ix_low_bytes(const struct simlsh_index *ix, uint8_t *low)
{
    size_t all = ix->nslots * (size_t)ix->num_perm;
    for (size_t i = 0; i < all; i++)
        low[i] = (uint8_t)ix->sigs[i];
}

size_t simlsh__ix_nlists(const struct simlsh_index *ix)
{
    return ix->novf;
}

/* A list judged unlike: its size, number and sample key (for the order). */
typedef struct {
    uint64_t size, key;
    size_t li;
} unlike_row;

static int unlike_cmp(const void *x, const void *y)
{
    const unlike_row *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* Is list l unlike (see mates.h)? *key: its sample's smallest key. */
static int list_unlike(const struct simlsh_index *ix, const ovf_list *l, uint32_t need,
                       uint64_t *key0)
{
    uint64_t key[SIMLSH__IX_SAMPLE];
    uint32_t pick[SIMLSH__IX_SAMPLE];
    /* the members with the smallest keys, by insertion into a sorted array */
    size_t k = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        uint64_t h = simlsh__fmix64(ix->ids[l->slots[i]]);
        if (k == SIMLSH__IX_SAMPLE && h >= key[k - 1])
            continue;
        size_t j = k < SIMLSH__IX_SAMPLE ? k++ : k - 1;
        while (j > 0 && key[j - 1] > h) {
            key[j] = key[j - 1];
            pick[j] = pick[j - 1];
            j--;
        }
        key[j] = h;
        pick[j] = l->slots[i];
    }
    unsigned like = 0, pairs = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++, pairs++)
            like += count_equal(sig_of(ix, pick[i]), sig_of(ix, pick[j]), ix->num_perm) >= need;
    *key0 = key[0];
    return 4 * like < pairs;
}

int simlsh__ix_unlike_lists(const struct simlsh_index *ix, size_t min_size, uint32_t need,
                            double budget, uint8_t *skip, uint64_t *nskip, uint64_t *members,
                            const simlsh_allocator *al)
{
    SIMLSH__VEC(unlike_row) rows = {NULL, 0, 0};
    double cost = 0;
    if (!ix->store)
        return 0;
    for (size_t li = 0; li < ix->novf; li++) {
        const ovf_list *l = &ix->ovf[li];
        uint64_t key;
        if (l->slots == NULL || l->n <= min_size || l->n < SIMLSH__IX_SAMPLE ||
            !list_unlike(ix, l, need, &key))
            continue;
        if (rows.n == rows.cap && simlsh__vec_reserve(al, &rows, rows.n + 1, NULL) < 0) {
            simlsh__free_sized(al, rows.v, rows.cap * sizeof *rows.v);
            return SIMLSH_ENOMEM;
        }
        rows.v[rows.n++] = (unlike_row){l->n, key, li};
        cost += (double)l->n * (double)l->n;
    }
    if (rows.n > 0)
        qsort(rows.v, rows.n, sizeof *rows.v, unlike_cmp);
    for (size_t i = 0; i < rows.n && cost > budget; i++) {
        skip[rows.v[i].li] = 1;
        (*nskip)++;
        *members += rows.v[i].size;
        cost -= (double)rows.v[i].size * (double)rows.v[i].size;
    }
    simlsh__free_sized(al, rows.v, rows.cap * sizeof *rows.v);
    return 0;
}

int simlsh__ix_mates(const struct simlsh_index *ix, uint32_t x, uint32_t need, uint8_t *lists,
                     const uint8_t *closed, simlsh__uf_node *parent, uint32_t *seen, uint32_t stamp,
                     const uint8_t *low, const simlsh_allocator *al, simlsh__matevec *out,
                     uint64_t *visits)
{
    uint32_t fps[SIMLSH__MAX_PERM];
    const uint32_t *xv = sig_of(ix, x);
    const uint8_t *xlow = low != NULL ? low + (size_t)x * ix->num_perm : NULL;
    compute_fps_prefetch(ix, xv, fps, 0);
    uint32_t rx = parent != NULL ? simlsh__uf_find(parent, x) : 0;
    uint64_t looked = 0;
    int rc = 0;
    seen[x] = stamp;
    for (uint32_t b = 0; b < ix->bands && rc == 0; b++) {
        const band_entry *t = band_tab(ix, b);
        const uint32_t *bv = xv + (size_t)b * ix->rows;
        for (size_t p = fastrange(fps[b], ix->tcap); t[p].slot != NO_SLOT && rc == 0;
             p = next_pos(p, ix->tcap)) {
            band_entry e = t[p];
            if (e.fp != fps[b])
                continue;
            if (!is_ref(e.slot)) {
                looked++;
                uint32_t v = e.slot;
                if (closed[v] || seen[v] == stamp || !rows_equal(ix, v, b, bv) ||
                    (parent != NULL && simlsh__uf_find(parent, v) == rx))
                    continue;
                rc = mate_meet(ix, xv, v, need, seen, stamp, low, xlow, al, out);
                continue;
            }
            /* a list is one bucket: its first member's rows stand for all */
            uint32_t li = e.slot & ~REF_BIT;
            if (lists != NULL && lists[li] != 0) /* set aside, or settled */
                continue;
            const ovf_list *l = list_of(ix, e.slot);
            if (!rows_equal(ix, l->slots[0], b, bv))
                continue;
            looked += l->n;
            int one = parent != NULL; /* every member in x's component so far */
            for (uint32_t i = 0; i < l->n && rc == 0; i++) {
                uint32_t v = l->slots[i];
                /* a large bucket's members are a stream of low bytes'
                 * rows, one miss each unless fetched ahead */
                if (low != NULL && i + MATES_AHEAD < l->n)
                    prefetch_low(low + (size_t)l->slots[i + MATES_AHEAD] * ix->num_perm,
                                 ix->num_perm);
                if (parent != NULL && simlsh__uf_find(parent, v) == rx)
                    continue; /* (also when closed or seen) */
                one = 0;
                if (closed[v] || seen[v] == stamp)
                    continue;
                rc = mate_meet(ix, xv, v, need, seen, stamp, low, xlow, al, out);
            }
            if (one && rc == 0)
                lists[li] = 2;
        }
    }
    *visits += looked;
    return rc;
}

/* ---- a block of centres, one band at a time ---------------------------------- */

uint32_t simlsh__ix_bands(const struct simlsh_index *ix)
{
    return ix->bands;
}

void simlsh__ix_slot_fps(const struct simlsh_index *ix, uint32_t slot, uint32_t *fps)
{
    simlsh__ix_compute_fps(ix, sig_of(ix, slot), fps);
}

typedef struct {
    uint32_t li, i;
} list_hit;

int simlsh__ix_mates_band(const struct simlsh_index *ix, const uint32_t *xs, size_t n, uint32_t b,
                          const uint32_t *fps, uint32_t need, const uint8_t *lists,
                          const uint8_t *closed, const uint8_t *low, const simlsh_allocator *al,
                          simlsh__matevec *outs, uint64_t *visits)
{
    list_hit lh[SIMLSH__IX_BLOCK];
    size_t nhit = 0;
    const uint32_t np = ix->num_perm;
    const band_entry *t = band_tab(ix, b);
    int rc = 0;
    if (n > SIMLSH__IX_BLOCK || low == NULL || !ix->store || b >= ix->bands)
        return SIMLSH_EINVAL;
    if (t == NULL)
        return 0;
    /* Each centre's bucket: inline entries are scored now, a list is put
     * off, to be read once for every centre whose bucket it is. (A centre
     * is in its own bucket, which is the one whose rows it has, so it meets
     * at most one list.) */
    for (size_t i = 0; i < n && rc == 0; i++) {
        const uint32_t x = xs[i];
        const uint32_t *xv = sig_of(ix, x);
        const uint32_t *bv = xv + (size_t)b * ix->rows;
        const uint8_t *xlow = low + (size_t)x * np;
        uint64_t looked = 0;
        for (size_t p = fastrange(fps[i], ix->tcap); t[p].slot != NO_SLOT && rc == 0;
             p = next_pos(p, ix->tcap)) {
            band_entry e = t[p];
            if (e.fp != fps[i])
                continue;
            if (!is_ref(e.slot)) {
                looked++;
                uint32_t v = e.slot;
                if (v == x || closed[v] || !rows_equal(ix, v, b, bv) ||
                    simlsh__count_equal8(low + (size_t)v * np, xlow, np) < need)
                    continue;
                rc = mate_score(ix, xv, v, need, al, &outs[i]);
                continue;
            }
            uint32_t li = e.slot & ~REF_BIT;
            if ((lists != NULL && lists[li] != 0) ||
                !rows_equal(ix, list_of(ix, e.slot)->slots[0], b, bv))
                continue;
            if (nhit == SIMLSH__IX_BLOCK)
                return SIMLSH_EINVAL; /* (cannot happen: one list a centre) */
            looked += list_of(ix, e.slot)->n;
            /* by list, then centre: insertion keeps it sorted */
            size_t j = nhit++;
            while (j > 0 && lh[j - 1].li > li) {
                lh[j] = lh[j - 1];
                j--;
            }
            lh[j] = (list_hit){li, (uint32_t)i};
        }
        visits[i] += looked;
    }
    /* Each list once, its members' low bytes against every centre in it
     * (those stay in the first-level cache): a member costs one fetch for
     * the block instead of one for each centre, and the kernel compares
     * it with all of them in one loop. */
    const simlsh__low_pass_fn pass = ix->kern->low_pass;
    const uint8_t *rows[SIMLSH__IX_BLOCK];
    uint32_t ok[SIMLSH__IX_BLOCK];
    for (size_t s = 0, e; s < nhit && rc == 0; s = e) {
        for (e = s + 1; e < nhit && lh[e].li == lh[s].li; e++)
            rows[e - s] = low + (size_t)xs[lh[e].i] * np;
        rows[0] = low + (size_t)xs[lh[s].i] * np;
        const ovf_list *l = &ix->ovf[lh[s].li];
        for (uint32_t k = 0; k < l->n && rc == 0; k++) {
            uint32_t v = l->slots[k];
            if (k + MATES_AHEAD < l->n)
                prefetch_low(low + (size_t)l->slots[k + MATES_AHEAD] * np, np);
            if (closed[v])
                continue;
            uint32_t nok = pass(low + (size_t)v * np, rows, (uint32_t)(e - s), np, need, ok);
            for (uint32_t j = 0; j < nok && rc == 0; j++) {
                size_t h = s + ok[j];
                if (v != xs[lh[h].i])
                    rc = mate_score(ix, sig_of(ix, xs[lh[h].i]), v, need, al, &outs[lh[h].i]);
            }
        }
    }
    return rc;
}

/* ---- census ------------------------------------------------------------------------ */

typedef struct {
    uint64_t size, sample;
    uint32_t band;
} bucket_row;

/* Is a before b in the census order: larger first, then band, then sample. */
static int row_before(const bucket_row *a, const bucket_row *b)
{
    if (a->size != b->size)
        return a->size > b->size;
    if (a->band != b->band)
        return a->band < b->band;
    return a->sample < b->sample;
}

/* Keep the k best rows seen (insertion into a sorted array: k is small). */
static void top_put(bucket_row *top, size_t k, size_t *n, bucket_row r)
{
    if (k == 0)
        return;
    if (*n == k && !row_before(&r, &top[k - 1]))
        return;
    size_t i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && row_before(&r, &top[i - 1])) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = r;
}

int simlsh__ix_census(const struct simlsh_index *ix, size_t k, size_t min_size, uint64_t *sizes,
                      uint32_t *bands, uint64_t *sample, size_t *nfound, uint64_t *docs_above,
                      const simlsh_allocator *al)
{
    size_t bytes;
    bucket_row *top = NULL;
    uint8_t *mark = NULL;
    size_t n = 0;
    uint64_t above = 0;
    if (!simlsh__mul_ok(k, sizeof *top, &bytes))
        return SIMLSH_ENOMEM;
    if (k > 0 && (top = simlsh__malloc(al, bytes)) == NULL)
        return SIMLSH_ENOMEM;
    if (ix->nslots > 0 && (mark = simlsh__calloc(al, ix->nslots, 1)) == NULL) {
        simlsh__free_sized(al, top, bytes);
        return SIMLSH_ENOMEM;
    }
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            band_entry e = t[p];
            if (e.slot == NO_SLOT)
                continue;
            bucket_row r = {0, UINT64_MAX, b};
            if (is_ref(e.slot)) {
                const ovf_list *l = list_of(ix, e.slot);
                r.size = l->n;
                for (uint32_t i = 0; i < l->n; i++)
                    if (ix->ids[l->slots[i]] < r.sample)
                        r.sample = ix->ids[l->slots[i]];
                if (r.size >= min_size)
                    for (uint32_t i = 0; i < l->n; i++)
                        mark[l->slots[i]] = 1;
            } else {
                /* An inline bucket is counted at its first entry of the
                 * run (entries of one bucket share a run); runs are short. */
                size_t s = p;
                int first = 1;
                while (first) {
                    s = s == 0 ? ix->tcap - 1 : s - 1;
                    if (t[s].slot == NO_SLOT || s == p)
                        break;
                    first = !(!is_ref(t[s].slot) &&
                              entry_matches(ix, b, t[s], e.fp,
                                            ix->store ? sig_of(ix, e.slot) + (size_t)b * ix->rows
                                                      : NULL));
                }
                if (!first)
                    continue;
                const uint32_t *bv = ix->store ? sig_of(ix, e.slot) + (size_t)b * ix->rows : NULL;
                for (size_t q = p; t[q].slot != NO_SLOT; q = next_pos(q, ix->tcap)) {
                    if (is_ref(t[q].slot) || !entry_matches(ix, b, t[q], e.fp, bv))
                        continue;
                    r.size++;
                    if (ix->ids[t[q].slot] < r.sample)
                        r.sample = ix->ids[t[q].slot];
                }
                if (r.size >= min_size)
                    for (size_t q = p; t[q].slot != NO_SLOT; q = next_pos(q, ix->tcap))
                        if (!is_ref(t[q].slot) && entry_matches(ix, b, t[q], e.fp, bv))
                            mark[t[q].slot] = 1;
            }
            if (r.size >= min_size)
                top_put(top, k, &n, r);
        }
    }
    for (size_t s = 0; s < ix->nslots; s++)
        above += mark[s];
    for (size_t i = 0; i < n; i++) {
        sizes[i] = top[i].size;
        bands[i] = top[i].band;
        sample[i] = top[i].sample;
    }
    *nfound = n;
    *docs_above = above;
    simlsh__free_sized(al, top, bytes);
    simlsh__free_sized(al, mark, ix->nslots);
    return 0;
}
