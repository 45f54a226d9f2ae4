/* Results: rows of (a, b, score) filled by index calls. */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "results.h"

int simlsh_results_new(simlsh_results **out, const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (!simlsh__alloc_valid(alloc))
        return SIMLSH_EINVAL;
    simlsh_allocator a;
    simlsh__alloc_fill(&a, alloc);
    struct simlsh_results *r = simlsh__calloc(&a, 1, sizeof *r);
    if (r == NULL)
        return SIMLSH_ENOMEM;
    r->tag = SIMLSH__TAG_RESULTS;
    r->alloc = a;
    *out = r;
    return 0;
}

/* Free the three columns of cap rows. */
static void free_columns(const simlsh_allocator *al, uint64_t *a, uint64_t *b, double *score,
                         size_t cap)
{
    simlsh__free_sized(al, a, cap * sizeof *a);
    simlsh__free_sized(al, b, cap * sizeof *b);
    simlsh__free_sized(al, score, cap * sizeof *score);
}

void simlsh_results_free(simlsh_results *res)
{
    if (!simlsh__handle_is(res, SIMLSH__TAG_RESULTS))
        return;
    simlsh_allocator a = res->alloc;
    free_columns(&a, res->a, res->b, res->score, res->cap);
    simlsh__free_sized(&a, res->offsets, res->ocap * sizeof *res->offsets);
    res->tag = SIMLSH__TAG_DEAD;
    simlsh__free_sized(&a, res, sizeof *res);
}

int simlsh__results_reserve(struct simlsh_results *res, size_t rows, size_t nq)
{
    const simlsh_allocator *al = &res->alloc;
    uint64_t *na = NULL, *nb = NULL;
    double *ns = NULL;
    size_t *no = NULL;
    size_t ncap = res->cap, nocap = res->ocap;
    if (rows > res->cap) {
        /* Grow geometrically so refilling with slowly growing counts stays
         * linear; the content is replaced, so nothing is copied. */
        ncap = res->cap + res->cap / 2;
        if (ncap < rows)
            ncap = rows;
        na = simlsh__calloc(al, ncap, sizeof *na);
        nb = simlsh__calloc(al, ncap, sizeof *nb);
        ns = simlsh__calloc(al, ncap, sizeof *ns);
        if (na == NULL || nb == NULL || ns == NULL)
            goto fail;
    }
    if (nq > 0 && nq + 1 > res->ocap) {
        if (nq + 1 == 0)
            goto fail;
        nocap = nq + 1;
        no = simlsh__calloc(al, nocap, sizeof *no);
        if (no == NULL)
            goto fail;
    }
    if (na != NULL) {
        free_columns(al, res->a, res->b, res->score, res->cap);
        res->a = na;
        res->b = nb;
        res->score = ns;
        res->cap = ncap;
    }
    if (no != NULL) {
        simlsh__free_sized(al, res->offsets, res->ocap * sizeof *res->offsets);
        res->offsets = no;
        res->ocap = nocap;
    }
    return 0;
fail:
    free_columns(al, na, nb, ns, ncap);
    simlsh__free_sized(al, no, nocap * sizeof *no);
    return SIMLSH_ENOMEM;
}

void simlsh__builder_init(simlsh__builder *bd, const struct simlsh_results *res)
{
    memset(bd, 0, sizeof *bd);
    bd->alloc = &res->alloc;
}

void simlsh__builder_free(simlsh__builder *bd)
{
    free_columns(bd->alloc, bd->a, bd->b, bd->score, bd->cap);
    simlsh__free_sized(bd->alloc, bd->offsets, (bd->nq + 1) * sizeof *bd->offsets);
    bd->a = bd->b = NULL;
    bd->score = NULL;
    bd->offsets = NULL;
    bd->n = bd->cap = bd->nq = 0;
}

int simlsh__builder_grow(simlsh__builder *bd, size_t need)
{
    if (need <= bd->cap)
        return 0;
    size_t ncap = bd->cap ? bd->cap : 64, bytes;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return SIMLSH_ENOMEM;
        ncap *= 2;
    }
    if (!simlsh__mul_ok(ncap, sizeof(uint64_t), &bytes))
        return SIMLSH_ENOMEM;
    /* The three columns grow together or not at all. */
    uint64_t *na = simlsh__malloc(bd->alloc, bytes);
    uint64_t *nb = simlsh__malloc(bd->alloc, bytes);
    double *ns = simlsh__malloc(bd->alloc, ncap * sizeof *ns);
    if (na == NULL || nb == NULL || ns == NULL) {
        free_columns(bd->alloc, na, nb, ns, ncap);
        return SIMLSH_ENOMEM;
    }
    if (bd->n > 0) {
        memcpy(na, bd->a, bd->n * sizeof *na);
        memcpy(nb, bd->b, bd->n * sizeof *nb);
        memcpy(ns, bd->score, bd->n * sizeof *ns);
    }
    free_columns(bd->alloc, bd->a, bd->b, bd->score, bd->cap);
    bd->a = na;
    bd->b = nb;
    bd->score = ns;
    bd->cap = ncap;
    return 0;
}

int simlsh__builder_per_query(simlsh__builder *bd, size_t nq)
{
    if (nq == 0)
        return 0;
    if (nq == SIZE_MAX)
        return SIMLSH_ENOMEM;
    bd->offsets = simlsh__calloc(bd->alloc, nq + 1, sizeof *bd->offsets);
    if (bd->offsets == NULL)
        return SIMLSH_ENOMEM;
    bd->nq = nq;
    return 0;
}

void simlsh__builder_commit(simlsh__builder *bd, struct simlsh_results *res, int truncated)
{
    const simlsh_allocator *al = &res->alloc;
    /* No rows and no columns: keep the results' columns for the next fill. */
    if (bd->cap > 0) {
        free_columns(al, res->a, res->b, res->score, res->cap);
        res->a = bd->a;
        res->b = bd->b;
        res->score = bd->score;
        res->cap = bd->cap;
        bd->a = bd->b = NULL;
        bd->score = NULL;
    }
    if (bd->offsets != NULL) {
        simlsh__free_sized(al, res->offsets, res->ocap * sizeof *res->offsets);
        res->offsets = bd->offsets;
        res->ocap = bd->nq + 1;
        bd->offsets = NULL;
    }
    res->count = bd->n;
    res->nq = bd->nq;
    res->truncated = truncated;
    bd->n = bd->cap = bd->nq = 0;
}

/* Reading calls accept any handle: one that is not a live results object
 * reads as empty (count 0, row and offset SIMLSH_EINVAL). */
static int is_results(const simlsh_results *res)
{
    return simlsh__handle_is(res, SIMLSH__TAG_RESULTS);
}

size_t simlsh_results_count(const simlsh_results *res)
{
    return is_results(res) ? res->count : 0;
}

int simlsh_results_row(const simlsh_results *res, size_t i, uint64_t *a, uint64_t *b, double *score)
{
    if (!is_results(res) || i >= res->count)
        return SIMLSH_EINVAL;
    if (a != NULL)
        *a = res->a[i];
    if (b != NULL)
        *b = res->b[i];
    if (score != NULL)
        *score = res->score[i];
    return 0;
}

/* What an empty column points to: FFIs make slices or typed arrays from the
 * pointer and the count, and several (Rust's slice::from_raw_parts, koffi's
 * decode) refuse NULL even for zero elements. Never written. */
static const uint64_t no_ids[1];
static const double no_scores[1];

const uint64_t *simlsh_results_a(const simlsh_results *res)
{
    return is_results(res) && res->a != NULL ? res->a : no_ids;
}

const uint64_t *simlsh_results_b(const simlsh_results *res)
{
    return is_results(res) && res->b != NULL ? res->b : no_ids;
}

const double *simlsh_results_scores(const simlsh_results *res)
{
    return is_results(res) && res->score != NULL ? res->score : no_scores;
}

int simlsh_results_offset(size_t *out, const simlsh_results *res, size_t q)
{
    if (out == NULL || !is_results(res) || q > res->nq)
        return SIMLSH_EINVAL;
    /* Fills that are not per query (pairs, cluster) have nq = 0: offset 0
     * is then the row count, as for a batch of zero queries. */
    *out = q == res->nq ? res->count : res->offsets[q];
    return 0;
}

int simlsh_results_truncated(const simlsh_results *res)
{
    if (!is_results(res))
        return SIMLSH_EINVAL;
    return res->truncated ? 1 : 0;
}
