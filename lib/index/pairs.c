/* All pairs of an index: the bucket sweep, its sketch filter and the rows
 * sorted in id order (simlsh_index_pairs, _v2). */
#include "internal.h"
#include "pool.h"
#include "radix.h"
#include "sketch.h"

/* Every document's band fingerprints, read off the tables (the only place
 * they live when signatures are not stored). */
static void gather_fps(const struct simlsh_index *ix, uint32_t *fps)
{
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            if (!is_ref(t[p].slot)) {
                fps[(size_t)t[p].slot * ix->bands + b] = t[p].fp;
                continue;
            }
            const ovf_list *l = list_of(ix, t[p].slot);
            for (uint32_t i = 0; i < l->n; i++)
                fps[(size_t)l->slots[i] * ix->bands + b] = t[p].fp;
        }
    }
}

/* Pairs are enumerated bucket by bucket: each unit sweeps a range of one
 * band's table and pairs every entry with the later members of its bucket
 * (inline entries of its run, or the rest of its overflow list), so each
 * pair of one bucket is met exactly once, with no query per document. A
 * pair is kept only in the first band where it shares a bucket (earlier
 * bands are checked on its rows, or its fingerprints without stored
 * signatures), so no pair is kept twice and no global de-duplication is
 * needed. Kept rows are keyed by the two documents' ranks in id order, and
 * one sort of the keys (parallel, by ranges of the first rank) gives the
 * rows in (a, b) order whatever thread found which pair. */
#define PAIRS_TAB_CHUNK ((size_t)1 << 16)
#define PAIRS_SORT_SHIFT_MIN 8

/* A kept pair: rank of a << 32 | rank of b, a before b in id order (the
 * score is counted again when the rows are written, so a row is 8 bytes). */
typedef uint64_t pair_row;

typedef SIMLSH__VEC(pair_row) pairvec;

typedef struct {
    const struct simlsh_index *ix;
    const uint32_t *rank; /* slot -> rank in id order */
    const uint32_t *fps;  /* gathered, without stored signatures; else NULL */
    uint32_t need;        /* equal values a kept pair needs (0: keep all) */
    uint64_t *sketch;     /* with need and stored signatures: sketch_words a slot */
    uint32_t sketch_words;
    simlsh__sketch_pass_fn sketch_pass; /* list_meets()' comparison */
    size_t chunks;                      /* table chunks per band */
    size_t limit;                       /* rows a worker keeps before trimming (0: all) */
    size_t max_pairs;
    const simlsh_allocator *al; /* the workers' (locked) allocator */
    pairvec *rows;              /* one per worker */
    /* the sort and the rows */
    const cand *docs; /* rank -> (id, slot) */
    pair_row *all;
    pair_row **tmp; /* one per worker, of the largest part */
    size_t *starts; /* nparts + 1 */
    size_t keep;
    simlsh__builder *bd;
} pairs_job;

static int row_cmp(const void *x, const void *y)
{
    const pair_row *a = x, *b = y;
    return *a < *b ? -1 : *a > *b;
}

/* Rows by key (../radix.h; a small part by qsort). */
static void sort_rows(pair_row *v, pair_row *tmp, size_t n)
{
    if (n <= 64) {
        if (n > 1)
            qsort(v, n, sizeof *v, row_cmp);
        return;
    }
    simlsh__radix_sort64(v, NULL, tmp, NULL, n);
}

/* Keep a worker's max_pairs + 1 smallest keys: the answer's first
 * max_pairs + 1 rows are among them, since every pair is met once. */
static int trim_rows(const pairs_job *j, pairvec *pv)
{
    size_t n = pv->n, bytes;
    if (!simlsh__mul_ok(n, sizeof(pair_row), &bytes))
        return SIMLSH_ENOMEM;
    pair_row *tmp = simlsh__malloc(j->al, bytes);
    if (tmp == NULL)
        return SIMLSH_ENOMEM;
    sort_rows(pv->v, tmp, n);
    simlsh__free_sized(j->al, tmp, bytes);
    pv->n = j->max_pairs + 1;
    return 0;
}

/* The sketch of a slot: the lowest 2 bits of each value, 32 values a
 * word (sketch.h). Two documents agree on at most as many values as on
 * these fields, so a pair whose fields agree fewer than need times cannot
 * reach the threshold: decided from 2 x 32 bytes instead of the two
 * signatures (the background collisions of a banding for recall are
 * mostly such: at J = 0.2 about 26 of 128 values agree, and about 51
 * fields). */
static inline uint32_t sketch_agree(const pairs_job *j, uint32_t x, uint32_t y)
{
    const uint64_t *a = j->sketch + (size_t)x * j->sketch_words;
    const uint64_t *b = j->sketch + (size_t)y * j->sketch_words;
    uint64_t n = 0;
    for (uint32_t w = 0; w < j->sketch_words; w++)
        n += simlsh__popcount64(simlsh__fields_agree(a[w], b[w]));
    return (uint32_t)n;
}

static int sketch_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    (void)worker;
    pairs_job *j = ctx;
    const struct simlsh_index *ix = j->ix;
    size_t lo = unit * PAIRS_TAB_CHUNK, hi = lo + PAIRS_TAB_CHUNK;
    if (hi > ix->nslots)
        hi = ix->nslots;
    for (size_t slot = lo; slot < hi; slot++) {
        const uint32_t *v = sig_of(ix, (uint32_t)slot);
        uint64_t *o = j->sketch + slot * j->sketch_words;
        memset(o, 0, j->sketch_words * sizeof *o);
        for (uint32_t i = 0; i < ix->num_perm; i++)
            o[i / 32] |= (uint64_t)(v[i] & 3) << (2 * (i % 32));
    }
    return 0;
}

/* Pair the documents in slots x and y, met in a bucket of band b: kept
 * unless they share a bucket of an earlier band or fall below need.
 * sketched: the caller has checked the sketches already. */
static inline int pair_meet(const pairs_job *j, pairvec *pv, uint32_t x, uint32_t y, uint32_t b,
                            int sketched)
{
    const struct simlsh_index *ix = j->ix;
    uint32_t eq = 0;
    if (j->fps == NULL) {
        if (!sketched && j->sketch != NULL && sketch_agree(j, x, y) < j->need)
            return 0;
        const uint32_t *sx = sig_of(ix, x), *sy = sig_of(ix, y);
        for (uint32_t e = 0; e < b; e++)
            if (rows_equal(ix, x, e, sy + (size_t)e * ix->rows))
                return 0;
        uint32_t np = ix->num_perm, need = j->need;
        for (uint32_t i = 0; i < np;) {
            uint32_t m = np - i < 32 ? np - i : 32;
            eq += count_equal(sx + i, sy + i, m);
            i += m;
            if (eq + (np - i) < need)
                return 0;
        }
    } else {
        const uint32_t *fx = j->fps + (size_t)x * ix->bands, *fy = j->fps + (size_t)y * ix->bands;
        for (uint32_t e = 0; e < b; e++)
            if (fx[e] == fy[e])
                return 0;
    }
    uint64_t ra = j->rank[x], rb = j->rank[y];
    if (pv->n == pv->cap) {
        if (j->limit != 0 && pv->n >= j->limit) {
            int rc = trim_rows(j, pv);
            if (rc < 0)
                return rc;
        }
        int rc = simlsh__vec_reserve(j->al, pv, pv->n + 1, NULL);
        if (rc < 0)
            return rc;
    }
    pv->v[pv->n++] = ra < rb ? ra << 32 | rb : rb << 32 | ra;
    return 0;
}

/* Equal fingerprints met by the sweep wait in a small ring while their
 * signatures' first lines are fetched: the sweep reads the table in order,
 * but each pair's rows are two random places in memory. */
#define PAIRS_AHEAD 8
#define PAIRS_PREFETCH_BYTES 256

typedef struct {
    uint32_t x, y;
} meet;

static inline void prefetch_sig(const pairs_job *j, uint32_t slot)
{
    const struct simlsh_index *ix = j->ix;
    if (j->sketch != NULL) {
        PREFETCH(j->sketch + (size_t)slot * j->sketch_words);
        return;
    }
    const char *p = (const char *)sig_of(ix, slot);
    size_t bytes = (size_t)ix->num_perm * sizeof(uint32_t);
    if (bytes > PAIRS_PREFETCH_BYTES)
        bytes = PAIRS_PREFETCH_BYTES;
    for (size_t off = 0; off < bytes; off += 64)
        PREFETCH(p + off);
}

/* A meeting of inline entries x (earlier in the run) and y of band b: the
 * same bucket when their rows are equal too, with stored signatures. The
 * sketches (fetched ahead) are checked before the rows (two random reads
 * of the signatures): most meetings of a banding for recall fail them,
 * and a pair that fails either is not kept, whichever is checked first.
 * A meeting that passes the sketches waits in a second ring while the
 * lines of both signatures it reads next are fetched: band b's rows and
 * the first line (the earlier bands' rows, the count's start). */
static inline void prefetch_rows(const pairs_job *j, uint32_t slot, uint32_t b)
{
    const struct simlsh_index *ix = j->ix;
    const uint32_t *v = sig_of(ix, slot);
    PREFETCH(v);
    PREFETCH(v + (size_t)b * ix->rows);
}

static inline int meet_rows(const pairs_job *j, pairvec *pv, meet m, uint32_t b)
{
    const struct simlsh_index *ix = j->ix;
    if (!rows_equal(ix, m.y, b, sig_of(ix, m.x) + (size_t)b * ix->rows))
        return 0;
    return pair_meet(j, pv, m.x, m.y, b, 1);
}

typedef struct {
    meet v[PAIRS_AHEAD];
    size_t head, count;
} meet_ring;

static inline meet ring_pop(meet_ring *r)
{
    meet m = r->v[r->head];
    r->head = (r->head + 1) % PAIRS_AHEAD;
    r->count--;
    return m;
}

static inline void ring_push(meet_ring *r, meet m)
{
    r->v[(r->head + r->count) % PAIRS_AHEAD] = m;
    r->count++;
}

/* m passed the sketches: into the second ring (its oldest decided first
 * when full). */
static inline int ring2_push(const pairs_job *j, pairvec *pv, meet_ring *r2, meet m, uint32_t b)
{
    int rc = 0;
    prefetch_rows(j, m.x, b);
    prefetch_rows(j, m.y, b);
    if (r2->count == PAIRS_AHEAD)
        rc = meet_rows(j, pv, ring_pop(r2), b);
    ring_push(r2, m);
    return rc;
}

/* The first ring's oldest meeting m: decided now, or (with sketches and
 * stored rows) after its signatures' lines are fetched. */
static inline int meet_first(const pairs_job *j, pairvec *pv, meet_ring *r2, meet m, uint32_t b)
{
    if (j->fps != NULL)
        return pair_meet(j, pv, m.x, m.y, b, 0);
    if (j->sketch == NULL)
        return meet_rows(j, pv, m, b);
    if (sketch_agree(j, m.x, m.y) < j->need)
        return 0;
    return ring2_push(j, pv, r2, m, b);
}

/* Every pair of a list is a meeting. A banding for recall (16 x 6 at 0.8)
 * puts hundreds of unrelated documents in one bucket, whose band values
 * are shingles found in most texts: on the 1 GiB benchmark 16 million
 * meetings came from lists, against 2 million from inline entries. The
 * members' sketches are gathered a block at a time and each member's
 * sketch is compared with a block's in one tight loop (the index's row of
 * cpu.h's table: with the POPCNT instruction, or portable; the same
 * counts either way); pairs that pass go to the second ring as inline
 * meetings do. */
#define LIST_BLOCK_BYTES 4096

static void gather_sketches(const pairs_job *j, uint64_t *dst, const uint32_t *slots, uint32_t n)
{
    size_t w = j->sketch_words;
    for (uint32_t i = 0; i < n; i++)
        memcpy(dst + i * w, j->sketch + (size_t)slots[i] * w, w * sizeof *dst);
}

static int list_meets(const pairs_job *j, pairvec *pv, meet_ring *r2, const ovf_list *l, uint32_t b)
{
    uint64_t bu[LIST_BLOCK_BYTES / sizeof(uint64_t)], bv[LIST_BLOCK_BYTES / sizeof(uint64_t)];
    uint32_t pass[LIST_BLOCK_BYTES / sizeof(uint64_t)];
    uint32_t words = j->sketch_words, per = (uint32_t)(LIST_BLOCK_BYTES / (words * 8));
    int rc = 0;
    for (uint32_t u0 = 0; u0 + 1 < l->n && rc == 0; u0 += per) {
        uint32_t nu = l->n - u0 < per ? l->n - u0 : per;
        gather_sketches(j, bu, l->slots + u0, nu);
        for (uint32_t v0 = u0; v0 < l->n && rc == 0; v0 += per) {
            uint32_t nv = l->n - v0 < per ? l->n - v0 : per;
            const uint64_t *sv = bu;
            if (v0 != u0) {
                gather_sketches(j, bv, l->slots + v0, nv);
                sv = bv;
            }
            for (uint32_t u = 0; u < nu && rc == 0; u++) {
                /* within one block, the members after u */
                uint32_t from = v0 == u0 ? u + 1 : 0;
                if (from >= nv)
                    continue;
                uint32_t np = j->sketch_pass(bu + (size_t)u * words, sv + (size_t)from * words,
                                             nv - from, words, j->need, pass);
                for (uint32_t k = 0; k < np && rc == 0; k++)
                    rc = ring2_push(j, pv, r2,
                                    (meet){l->slots[u0 + u], l->slots[v0 + from + pass[k]]}, b);
            }
        }
    }
    return rc;
}

static int pairs_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    pairs_job *j = ctx;
    const struct simlsh_index *ix = j->ix;
    pairvec *pv = &j->rows[worker];
    uint32_t b = (uint32_t)(unit / j->chunks);
    size_t lo = (unit % j->chunks) * PAIRS_TAB_CHUNK;
    size_t hi = lo + PAIRS_TAB_CHUNK < ix->tcap ? lo + PAIRS_TAB_CHUNK : ix->tcap;
    const band_entry *t = band_tab(ix, b);
    meet_ring r1 = {.head = 0, .count = 0}, r2 = {.head = 0, .count = 0};
    int rc = 0;
    for (size_t p = lo; p < hi && rc == 0; p++) {
        band_entry e = t[p];
        if (e.slot == NO_SLOT)
            continue;
        if (is_ref(e.slot)) {
            const ovf_list *l = list_of(ix, e.slot);
            if (j->sketch != NULL && j->fps == NULL) {
                rc = list_meets(j, pv, &r2, l, b);
                continue;
            }
            for (uint32_t u = 0; u + 1 < l->n && rc == 0; u++)
                for (uint32_t v = u + 1; v < l->n && rc == 0; v++)
                    rc = pair_meet(j, pv, l->slots[u], l->slots[v], b, 0);
            continue;
        }
        /* The later inline members of e's bucket are in the rest of its run. */
        for (size_t q = next_pos(p, ix->tcap); t[q].slot != NO_SLOT && rc == 0;
             q = next_pos(q, ix->tcap)) {
            band_entry f = t[q];
            if (f.fp != e.fp || is_ref(f.slot))
                continue;
            if (j->fps == NULL) {
                prefetch_sig(j, e.slot);
                prefetch_sig(j, f.slot);
            }
            if (r1.count == PAIRS_AHEAD) /* full: the oldest goes first */
                rc = meet_first(j, pv, &r2, ring_pop(&r1), b);
            ring_push(&r1, (meet){e.slot, f.slot});
        }
    }
    while (r1.count > 0 && rc == 0)
        rc = meet_first(j, pv, &r2, ring_pop(&r1), b);
    while (r2.count > 0 && rc == 0)
        rc = meet_rows(j, pv, ring_pop(&r2), b);
    return rc;
}

/* Sort unit: the rows of one range of first ranks, then those of them
 * that are kept written to the builder, scored again. */
static int pairs_sort_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    (void)par;
    pairs_job *j = ctx;
    const struct simlsh_index *ix = j->ix;
    size_t lo = j->starts[unit], hi = j->starts[unit + 1];
    sort_rows(j->all + lo, j->tmp[worker], hi - lo);
    if (hi > j->keep)
        hi = j->keep;
    simlsh__builder *bd = j->bd;
    for (size_t i = lo; i < hi; i++) {
        const cand *x = &j->docs[j->all[i] >> 32], *y = &j->docs[j->all[i] & 0xFFFFFFFFu];
        bd->a[i] = x->id;
        bd->b[i] = y->id;
        bd->score[i] = ix->store ? (double)count_equal(sig_of(ix, x->slot), sig_of(ix, y->slot),
                                                       ix->num_perm) /
                                       (double)ix->num_perm
                                 : -1.0;
    }
    return 0;
}

int simlsh_index_pairs_v2(simlsh_results *res, const simlsh_index *index, int flags,
                          size_t max_pairs, double threshold, uint32_t nthreads)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_INDEX(index);
    if (res == NULL || index == NULL)
        return SIMLSH_EINVAL;
    double thr;
    int rc = whole_index_args(index, flags, threshold, &thr);
    if (rc < 0)
        return rc;
    const simlsh_allocator *al = &index->params.alloc;
    size_t n = index->count;
    size_t chunks = (index->tcap + PAIRS_TAB_CHUNK - 1) / PAIRS_TAB_CHUNK;
    size_t units = n < 2 ? 0 : chunks * index->bands;
    uint32_t workers = simlsh__par_workers(nthreads, units > 0 ? units : 1);
    if (n < 256) /* a thread costs more than such a pass */
        workers = 1;
    simlsh__lockal la;
    simlsh__lockal_init(&la, al);
    pairs_job j;
    memset(&j, 0, sizeof j);
    j.ix = index;
    j.chunks = chunks;
    j.max_pairs = max_pairs;
    j.al = &la.al;
    /* A worker trims its rows when they pass twice what can be kept. */
    if (max_pairs != 0 && max_pairs < SIZE_MAX / 4)
        j.limit = 2 * (max_pairs + 1);
    if (thr > 0) {
        /* the least count of equal values whose estimate is >= thr */
        uint32_t np = index->num_perm, need = (uint32_t)(thr * np);
        while (need > 0 && (double)(need - 1) / (double)np >= thr)
            need--;
        while (need <= np && (double)need / (double)np < thr)
            need++;
        j.need = need;
    }
    cand *docs = NULL, *tmp = NULL;
    uint32_t *rank = NULL, *fps = NULL;
    size_t fbytes = 0, total = 0, abytes = 0, nparts = 0, tmpn = 0, sbytes = 0;
    simlsh__builder bd;
    simlsh__builder_init(&bd, res);
    if ((docs = simlsh__calloc(al, n, sizeof *docs)) == NULL ||
        (tmp = simlsh__calloc(al, n, sizeof *tmp)) == NULL ||
        (rank = simlsh__calloc(al, index->nslots, sizeof *rank)) == NULL ||
        (j.rows = simlsh__calloc(al, workers, sizeof *j.rows)) == NULL ||
        (!index->store &&
         (!simlsh__mul_ok(index->nslots, (size_t)index->bands * sizeof *fps, &fbytes) ||
          (fps = simlsh__malloc(al, fbytes)) == NULL))) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    simlsh__ix_live_sorted(index, docs, tmp);
    simlsh__free_sized(al, tmp, n * sizeof *tmp);
    tmp = NULL;
    for (size_t i = 0; i < n; i++)
        rank[docs[i].slot] = (uint32_t)i;
    if (fps != NULL)
        gather_fps(index, fps);
    j.rank = rank;
    j.fps = fps;
    if (index->store && j.need > 0 && index->nslots > 0) {
        j.sketch_words = (index->num_perm + 31) / 32;
        j.sketch_pass = index->kern->sketch_pass;
        if (!simlsh__mul_ok(index->nslots, (size_t)j.sketch_words * sizeof *j.sketch, &sbytes) ||
            (j.sketch = simlsh__malloc(al, sbytes)) == NULL) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        size_t su = (index->nslots + PAIRS_TAB_CHUNK - 1) / PAIRS_TAB_CHUNK;
        simlsh__par_run(simlsh__par_workers(workers, su), su, sketch_unit, &j, NULL);
    }
    rc = simlsh__par_run(workers, units, pairs_unit, &j, NULL);
    if (rc < 0)
        goto out;

    /* Gather the rows by ranges of the first rank, then sort each range
     * and write its kept rows, a range per unit. */
    for (uint32_t w = 0; w < workers; w++)
        total += j.rows[w].n;
    int truncated = max_pairs != 0 && total > max_pairs;
    j.keep = truncated ? max_pairs : total;
    if ((rc = simlsh__builder_grow(&bd, j.keep > 0 ? j.keep : 1)) < 0)
        goto out;
    j.bd = &bd;
    j.docs = docs;
    if (total > 0) {
        uint32_t shift = PAIRS_SORT_SHIFT_MIN;
        while (shift < 32 && ((uint64_t)n >> shift) > 16 * (uint64_t)workers)
            shift++;
        nparts = (size_t)((n - 1) >> shift) + 1;
        if (!simlsh__mul_ok(total, sizeof(pair_row), &abytes) ||
            (j.all = simlsh__malloc(al, abytes)) == NULL ||
            (j.starts = simlsh__calloc(al, nparts + 1, sizeof *j.starts)) == NULL ||
            (j.tmp = simlsh__calloc(al, workers, sizeof *j.tmp)) == NULL) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        for (uint32_t w = 0; w < workers; w++)
            for (size_t i = 0; i < j.rows[w].n; i++)
                j.starts[(j.rows[w].v[i] >> 32 >> shift) + 1]++;
        for (size_t q = 0; q < nparts; q++) {
            if (j.starts[q + 1] > tmpn)
                tmpn = j.starts[q + 1];
            j.starts[q + 1] += j.starts[q];
        }
        for (uint32_t w = 0; w < workers; w++) {
            if ((j.tmp[w] = simlsh__malloc(al, tmpn * sizeof(pair_row))) == NULL) {
                rc = SIMLSH_ENOMEM;
                goto out;
            }
        }
        size_t *fill = simlsh__malloc(al, nparts * sizeof *fill);
        if (fill == NULL) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        memcpy(fill, j.starts, nparts * sizeof *fill);
        for (uint32_t w = 0; w < workers; w++) {
            for (size_t i = 0; i < j.rows[w].n; i++) {
                pair_row r = j.rows[w].v[i];
                j.all[fill[r >> 32 >> shift]++] = r;
            }
            simlsh__free_sized(&la.al, j.rows[w].v, j.rows[w].cap * sizeof *j.rows[w].v);
            memset(&j.rows[w], 0, sizeof j.rows[w]);
        }
        simlsh__free_sized(al, fill, nparts * sizeof *fill);
        rc = simlsh__par_run(simlsh__par_workers(workers, nparts), nparts, pairs_sort_unit, &j,
                             NULL);
        if (rc < 0)
            goto out;
    }
    bd.n = j.keep;
    simlsh__builder_commit(&bd, res, truncated);
out:
    simlsh__builder_free(&bd);
    for (uint32_t w = 0; j.rows != NULL && w < workers; w++)
        simlsh__free_sized(&la.al, j.rows[w].v, j.rows[w].cap * sizeof *j.rows[w].v);
    simlsh__free_sized(al, j.rows, workers * sizeof *j.rows);
    simlsh__free_sized(al, j.all, abytes);
    for (uint32_t w = 0; j.tmp != NULL && w < workers; w++)
        simlsh__free_sized(al, j.tmp[w], tmpn * sizeof(pair_row));
    simlsh__free_sized(al, j.tmp, workers * sizeof *j.tmp);
    simlsh__free_sized(al, j.starts, (nparts + 1) * sizeof *j.starts);
    simlsh__free_sized(al, docs, n * sizeof *docs);
    simlsh__free_sized(al, tmp, n * sizeof *tmp);
    simlsh__free_sized(al, rank, index->nslots * sizeof *rank);
    simlsh__free_sized(al, j.sketch, sbytes);
    simlsh__free_sized(al, fps, fbytes);
    simlsh__lockal_done(&la);
    return rc;
}

int simlsh_index_pairs(simlsh_results *res, const simlsh_index *index, int flags, size_t max_pairs)
{
    return simlsh_index_pairs_v2(res, index, flags, max_pairs, 0.0, 1);
}
