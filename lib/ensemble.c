/*
 * LSH Ensemble (Zhu, Nargesian, Pu, Miller, VLDB 2016): containment search
 * over sets partitioned by size, on the prefix-tree engine of forest.c.
 *
 * Why prefix trees: the banding that suits a partition depends on the
 * query (its size and threshold), so it is chosen per query. l trees of
 * depth d answer any banding of b <= l bands of r <= d rows: a band is a
 * tree's first r values, and its bucket is the range of the sorted tree
 * sharing the query's r-prefix. One structure per partition serves every
 * (b, r), where the paper's implementation keeps one index per r.
 *
 * Partitions: by the two leading bits of the exact size (a new partition
 * when a size class first appears), so the upper bound of a class is at
 * most 1.5 times its lower bound: the conservative Jaccard threshold,
 * computed at the upper bound, is never far below the one the smallest
 * set of the class would need. Equi-depth partitions (the paper's optimum
 * for power-law sizes) would need a build step and rebuilds as the sizes
 * drift; size classes need neither, and their boundaries are fixed, so
 * answers never depend on the order of inserts.
 */
#include <math.h>
#include <stdlib.h>

#include "forest-persist.h"
#include "forest-engine.h"

/* 64 size exponents, two classes each. */
#define NPART 128
/* Default depth: measured on planted containment (docs/tuning.md), depth 2
 * (64 trees for 128 permutations) finds sets up to 20 times the query's
 * size as well as depth 1 does, while still allowing selective bandings
 * for partitions of sizes close to the query's. */
#define ENSEMBLE_DEPTH 2
/* Integration points per area when choosing (b, r); the midpoint rule's
 * error is far below the differences between neighbouring choices. */
#define NPT 16

struct simlsh_ensemble {
    uint32_t tag;                /* SIMLSH__TAG_ENSEMBLE (handle.h), before the params' own */
    struct simlsh_params params; /* bands = trees, rows = depth, store = 1 */
    uint64_t sig_fp;
    uint32_t l, depth;
    simlsh__pf_store store; /* aux = set size */
    simlsh__pf_trees *part[NPART];
};

static unsigned part_of(uint64_t size)
{
    unsigned e = 63;
    while (!(size >> e))
        e--;
    unsigned h = e > 0 ? (unsigned)((size >> (e - 1)) & 1) : 0;
    return 2 * e + h;
}

/* Largest size of partition p. */
static uint64_t part_upper(unsigned p)
{
    unsigned e = p / 2;
    if (e == 0)
        return 1;
    if (p % 2 == 0)
        return ((uint64_t)1 << e) + ((uint64_t)1 << (e - 1)) - 1;
    return e == 63 ? UINT64_MAX : ((uint64_t)1 << (e + 1)) - 1;
}

static int ens_create(simlsh_ensemble **out, const struct simlsh_params *p, uint32_t l,
                      uint32_t depth)
{
    struct simlsh_ensemble *e = simlsh__calloc(&p->alloc, 1, sizeof *e);
    if (e == NULL)
        return SIMLSH_ENOMEM;
    e->tag = SIMLSH__TAG_ENSEMBLE;
    e->params = *p;
    e->params.bands = (int32_t)l;
    e->params.rows = (int32_t)depth;
    e->params.store_signatures = 1;
    e->l = l;
    e->depth = depth;
    e->sig_fp = simlsh__fingerprint(&e->params, SIMLSH_SCOPE_SIGNATURE);
    simlsh__pf_store_init(&e->store, &e->params.alloc, (uint32_t)p->num_perm, 1);
    *out = e;
    return 0;
}

int simlsh_ensemble_new(simlsh_ensemble **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    if (params == NULL || (params->fp_weight == 0 && params->fn_weight == 0))
        return SIMLSH_EINVAL;
    uint32_t l, depth;
    int rc = simlsh__pf_shape(params, 0, ENSEMBLE_DEPTH, &l, &depth);
    if (rc < 0)
        return rc;
    return ens_create(out, params, l, depth);
}

void simlsh_ensemble_free(simlsh_ensemble *ensemble)
{
    if (!simlsh__handle_is(ensemble, SIMLSH__TAG_ENSEMBLE))
        return;
    ensemble->tag = SIMLSH__TAG_DEAD;
    simlsh_allocator a = ensemble->params.alloc;
    for (unsigned p = 0; p < NPART; p++) {
        if (ensemble->part[p] != NULL) {
            simlsh__pf_trees_free(ensemble->part[p], &a);
            simlsh__free_sized(&a, ensemble->part[p], sizeof *ensemble->part[p]);
        }
    }
    simlsh__pf_store_free(&ensemble->store);
    simlsh__free_sized(&a, ensemble, sizeof *ensemble);
}

int simlsh_ensemble_params(simlsh_params **out, const simlsh_ensemble *ensemble)
{
    return simlsh__params_export(
        out, simlsh__handle_is(ensemble, SIMLSH__TAG_ENSEMBLE) ? &ensemble->params : NULL);
}

/* Room for one more set of partition p (made if missing); on failure
 * everything is as it was, a partition made here included. */
static int ens_reserve(struct simlsh_ensemble *e, unsigned p, size_t docs)
{
    const simlsh_allocator *al = &e->params.alloc;
    int made = 0;
    if (e->part[p] == NULL) {
        e->part[p] = simlsh__malloc(al, sizeof *e->part[p]);
        if (e->part[p] == NULL)
            return SIMLSH_ENOMEM;
        simlsh__pf_trees_init(e->part[p], e->l, e->depth, e->l); /* (extra at depth 2 only) */
        made = 1;
    }
    int rc = simlsh__pf_store_reserve(&e->store, docs);
    if (rc == 0)
        rc = simlsh__pf_trees_reserve(e->part[p], al, e->part[p]->n + 1);
    if (rc < 0 && made) {
        simlsh__pf_trees_free(e->part[p], al);
        simlsh__free_sized(al, e->part[p], sizeof *e->part[p]);
        e->part[p] = NULL;
    }
    return rc;
}

static void ens_put(struct simlsh_ensemble *e, uint64_t id, const uint32_t *vals, uint64_t size)
{
    uint32_t slot = simlsh__pf_store_put(&e->store, id, vals, size);
    simlsh__pf_trees_add(e->part[part_of(size)], &e->store, slot);
}

int simlsh_ensemble_insert(simlsh_ensemble *ensemble, uint64_t id, const simlsh_signature *sig,
                           uint64_t size)
{
    SIMLSH__CHECK_ENSEMBLE(ensemble);
    if (ensemble == NULL || size == 0)
        return SIMLSH_EINVAL;
    int rc = simlsh__pf_check_sig(sig, ensemble->sig_fp);
    if (rc < 0)
        return rc;
    if (sig->empty)
        return SIMLSH_EEMPTY;
    if (simlsh__pf_store_find(&ensemble->store, id) != SIMLSH__PF_NO_SLOT)
        return SIMLSH_EEXIST;
    rc = ens_reserve(ensemble, part_of(size), ensemble->store.count + 1);
    if (rc < 0)
        return rc;
    ens_put(ensemble, id, sig->values, size);
    return 0;
}

int simlsh_ensemble_remove(simlsh_ensemble *ensemble, uint64_t id)
{
    SIMLSH__CHECK_ENSEMBLE(ensemble);
    if (ensemble == NULL)
        return SIMLSH_EINVAL;
    simlsh__pf_store *s = &ensemble->store;
    uint32_t slot = simlsh__pf_store_find(s, id);
    if (slot == SIMLSH__PF_NO_SLOT)
        return SIMLSH_ENOTFOUND;
    unsigned p = part_of(s->aux[slot]);
    simlsh__pf_store_kill(s, slot);
    simlsh__pf_trees_dead(ensemble->part[p], s);
    return 0;
}

int simlsh_ensemble_count(size_t *out, const simlsh_ensemble *ensemble)
{
    SIMLSH__CHECK_ENSEMBLE(ensemble);
    if (out == NULL || ensemble == NULL)
        return SIMLSH_EINVAL;
    *out = ensemble->store.count;
    return 0;
}

/* A banding over trees 0..b-1: the first k of them are bands of r - 1 rows,
 * the others bands of r rows (k = 0: b bands of r rows). One-row bands
 * (r = 1) may go past the l prefix trees into the extra ones: b <= l + extra
 * (forest-engine.h). */
typedef struct {
    uint32_t b, r, k;
} banding;

/*
 * The banding minimising the weighted mean false-positive and
 * false-negative rates over containment, for query size q, the partition's
 * largest size u and threshold t. Containment c maps to Jaccard
 * c q / (q + u - c q); P(J) = 1 - (1 - J^r)^b is accumulated for all (b, r)
 * at once by running products, so no pow() per choice.
 *
 * Besides the plain bandings (b <= l bands of r <= d rows, and one-row
 * bandings of up to l + extra bands on the extra trees), the mixes of
 * all l trees, k of them cut one row shorter: 1 - (1 - J^(r-1))^k
 * (1 - J^r)^(l-k) fills the steps between l bands of r rows and l bands of
 * r - 1 rows. Without them, a small query against much larger sets (query
 * 30 % of a text: J about 0.25 at containment 1) had only l bands of 2 rows,
 * which miss 2 % of such sets, or bands of 1 row, which take many times the
 * candidates; the mixes buy the recall one tree at a time.
 *
 * A false negative counts FN_BIAS times its weight: a false positive costs
 * the caller a look at the estimate it comes with, a false negative is
 * lost. Measured on python/bench/bench_datasketch_recall.py (queries of 30 %
 * of a text): at 1, the mixes change nothing, and recall stays below
 * datasketch's MinHashLSHEnsemble on some seeds; at 2 and 3 a miss or two
 * remain; at 4, none, with 1.7 times datasketch's candidates (docs/tuning.md).
 */
#define FN_BIAS 4.0
static banding choose_banding(uint32_t l, uint32_t depth, uint32_t extra, double q, double u,
                              double t, double wfp, double wfn)
{
    double cost[SIMLSH__MAX_PERM], cost1[SIMLSH__MAX_PERM]; /* cost1: l + 1 .. l + extra bands */
    /* 2 * NPT points: NPT false-positive ones in [0, t), then NPT
     * false-negative ones in [t, cmax]. Mean rates, not the paper's areas:
     * areas weigh a range by its width, and the false-negative range
     * [t, cmax] shrinks to nothing as t nears cmax, which would leave only
     * false positives to minimise, i.e. a banding that finds nothing. */
    double j[2 * NPT], jr[2 * NPT], step[2 * NPT], miss[2 * NPT], term[2 * NPT];
    double cmax = u / q < 1 ? u / q : 1;
    double wp = wfp / NPT, wn = FN_BIAS * wfn / NPT;
    for (int i = 0; i < 2 * NPT; i++) {
        double lo = i < NPT ? 0 : t, hi = i < NPT ? t : cmax;
        double c = lo + (hi - lo) * (i % NPT + 0.5) / NPT;
        j[i] = c * q / (q + u - c * q);
        jr[i] = 1;
    }
    banding mix = {0, 0, 0};
    double mix_cost = 0;
    /* The points are the innermost loop: their running products are
     * independent, so the compiler vectorises them (one point at a time,
     * the product over b was one long dependent chain, and this function
     * was most of a query's instructions). Each cost adds its terms in
     * point order, so the choice is the same, bit for bit, as summing
     * point by point. */
    for (uint32_t r = 0; r < depth; r++) {
        for (int i = 0; i < 2 * NPT; i++) {
            /* (1 - J^r) / (1 - J^(r+1)), in [0, 1]: a tree one row shorter
             * (J = 1 only at t = 1 and u = q, where no row ever misses) */
            double d = 1 - jr[i] * j[i];
            step[i] = d > 0 ? (1 - jr[i]) / d : 1;
            jr[i] *= j[i];
            miss[i] = 1; /* (1 - J^r)^b */
        }
        /* one-row bands go on into the extra trees */
        for (uint32_t b = 0; b < (r == 0 ? l + extra : l); b++) {
#pragma GCC unroll 16
            for (int i = 0; i < NPT; i++) {
                miss[i] *= 1 - jr[i];
                term[i] = wp * (1 - miss[i]);
            }
#pragma GCC unroll 16
            for (int i = NPT; i < 2 * NPT; i++) {
                miss[i] *= 1 - jr[i];
                term[i] = wn * miss[i];
            }
            double sum = 0;
#pragma GCC unroll 32
            for (int i = 0; i < 2 * NPT; i++)
                sum += term[i];
            if (b < l)
                cost[(size_t)b * depth + r] = sum;
            else
                cost1[b - l] = sum;
        }
        /* miss is now (1 - J^(r+1))^l: cut trees to r rows one by one */
        for (uint32_t k = 1; r > 0 && k < l; k++) {
#pragma GCC unroll 16
            for (int i = 0; i < NPT; i++) {
                miss[i] *= step[i];
                term[i] = wp * (1 - miss[i]);
            }
#pragma GCC unroll 16
            for (int i = NPT; i < 2 * NPT; i++) {
                miss[i] *= step[i];
                term[i] = wn * miss[i];
            }
            double sum = 0;
#pragma GCC unroll 32
            for (int i = 0; i < 2 * NPT; i++)
                sum += term[i];
            if (mix.b == 0 || sum < mix_cost) {
                mix = (banding){l, r + 1, k};
                mix_cost = sum;
            }
        }
    }
    /* Ties go to fewer bands, then fewer rows: fewer probes; a mix only
     * when it costs less than every plain banding. */
    size_t best = 0;
    for (size_t i = 1; i < (size_t)l * depth; i++)
        if (cost[i] < cost[best])
            best = i;
    banding plain = {(uint32_t)(best / depth) + 1, (uint32_t)(best % depth) + 1, 0};
    double plain_cost = cost[best];
    for (uint32_t b = 0; b < extra; b++) {
        if (cost1[b] < plain_cost) {
            plain = (banding){l + b + 1, 1, 0};
            plain_cost = cost1[b];
        }
    }
    if (mix.b != 0 && mix_cost < plain_cost)
        return mix;
    return plain;
}

static int row_id_cmp(const void *x, const void *y)
{
    const simlsh__pf_row *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

int simlsh_ensemble_query(simlsh_results *res, const simlsh_ensemble *ensemble,
                          const simlsh_signature *sig, uint64_t query_size, double t, int flags)
{
    SIMLSH__CHECK_RESULTS(res);
    SIMLSH__CHECK_ENSEMBLE(ensemble);
    if (res == NULL || ensemble == NULL || query_size == 0 || !(t > 0 && t <= 1) ||
        (flags & ~SIMLSH_QUERY_VERIFY) != 0)
        return SIMLSH_EINVAL;
    int rc = simlsh__pf_check_sig(sig, ensemble->sig_fp);
    if (rc < 0)
        return rc;
    if (sig->empty)
        return simlsh__pf_fill(res, NULL, 0);
    const simlsh__pf_store *s = &ensemble->store;
    const struct simlsh_params *p = &ensemble->params;
    double q = (double)query_size;
    simlsh__pf_set c;
    simlsh__pf_set_init(&c, &p->alloc);
    for (unsigned k = 0; k < NPART && rc == 0; k++) {
        const simlsh__pf_trees *tr = ensemble->part[k];
        if (tr == NULL || tr->n == tr->ndead)
            continue;
        double u = (double)part_upper(k);
        if (u < t * q)
            continue; /* no set there has t q elements */
        banding bd = choose_banding(ensemble->l, ensemble->depth, tr->extra, q, u, t, p->fp_weight,
                                    p->fn_weight);
        if (bd.k > 0)
            rc = simlsh__pf_band(tr, s, sig->values, 0, bd.k, bd.r - 1, &c);
        if (rc == 0)
            rc = simlsh__pf_band(tr, s, sig->values, bd.k, bd.b, bd.r, &c);
    }
    simlsh__pf_row *rows = NULL;
    if (rc == 0 && c.n > 0) {
        rows = simlsh__malloc(&p->alloc, c.n * sizeof *rows);
        if (rows == NULL)
            rc = SIMLSH_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; rc == 0 && i < c.n; i++) {
        uint32_t slot = c.v[i];
        double j =
            (double)simlsh__pf_count_equal(simlsh__pf_vals(s, slot), sig->values, s->num_perm) /
            (double)s->num_perm;
        /* |Q ∩ X| = J (|Q| + |X|) / (1 + J). */
        double x = (double)s->aux[slot];
        double est = j * (q + x) / (q * (1 + j));
        if (est > 1)
            est = 1;
        if ((flags & SIMLSH_QUERY_VERIFY) && est < t)
            continue;
        rows[n].id = s->ids[slot];
        rows[n].score = est;
        n++;
    }
    if (rc == 0) {
        if (n > 1)
            qsort(rows, n, sizeof *rows, row_id_cmp);
        rc = simlsh__pf_fill(res, rows, n);
    }
    simlsh__free_sized(&p->alloc, rows, c.n * sizeof *rows);
    simlsh__pf_set_free(&c);
    return rc;
}

/* ---- persistence (forest-persist.c, docs/format-forest.md) ------------------------ */

int simlsh_ensemble_save(void *buf, size_t cap, size_t *size, const simlsh_ensemble *ensemble)
{
    SIMLSH__CHECK_ENSEMBLE(ensemble);
    if (size == NULL || ensemble == NULL)
        return SIMLSH_EINVAL;
    return simlsh__pf_save(buf, cap, size, SIMLSH__MAGIC_ENSEMBLE, &ensemble->params,
                           &ensemble->store);
}

int simlsh_ensemble_load(simlsh_ensemble **out, const void *buf, size_t len,
                         const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    struct simlsh_params p;
    simlsh__pf_reader rd;
    int rc = simlsh__pf_load_open(&rd, &p, buf, len, alloc, SIMLSH__MAGIC_ENSEMBLE, 1);
    if (rc < 0)
        return rc;
    if (p.fp_weight == 0 && p.fn_weight == 0)
        return SIMLSH_ECORRUPT;
    struct simlsh_ensemble *e;
    rc = ens_create(&e, &p, (uint32_t)p.bands, (uint32_t)p.rows);
    if (rc < 0)
        return rc;
    uint32_t vals[SIMLSH__MAX_PERM];
    uint64_t id, size;
    rc = simlsh__pf_store_reserve(&e->store, (size_t)rd.count);
    /* Rebuilt by inserting in file order (see simlsh_forest_load()). */
    while (rc == 0 && (rc = simlsh__pf_load_next(&rd, &e->store, &id, &size, vals)) > 0) {
        rc = ens_reserve(e, part_of(size), (size_t)rd.count);
        if (rc == 0)
            ens_put(e, id, vals, size);
    }
    if (rc < 0) {
        simlsh_ensemble_free(e);
        return rc;
    }
    *out = e;
    return 0;
}
