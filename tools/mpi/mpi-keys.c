/*
 * simlsh-dedup-mpi: band keys to their owners (mpi-keys.h). Each rank
 * computes the band keys of its documents and sends (key, band, global
 * id) to the key's owner, hash(band, key) mod N, in rounds of at most
 * ROUND_BYTES per rank; with --index, rank k also sends the keys of the
 * k-th of N slices of the loaded ids (those not removed or replaced). An
 * owner sorts what it received: runs of one (band, key) are the index's
 * buckets, which mpi-match.c turns into candidate pairs.
 */
#include "mpi-keys.h"

#include <stdlib.h>
#include <string.h>

uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int key_owner(uint64_t key, uint32_t band, int n)
{
    return (int)(mix64(key + UINT64_C(0x9E3779B97F4A7C15) * (band + 1)) % (uint64_t)n);
}

static int cmp_kent(const void *x, const void *y)
{
    const struct kent *p = x, *q = y;
    uint64_t bp = p->gb >> GID_BITS, bq = q->gb >> GID_BITS;
    if (bp != bq)
        return bp < bq ? -1 : 1;
    if (p->key != q->key)
        return p->key < q->key ? -1 : 1;
    if (p->gb != q->gb)
        return p->gb < q->gb ? -1 : 1;
    return 0;
}

/* Sorts v by cmp_kent: one scatter by (band, top KDIGIT bits of the key),
 * an order cmp_kent agrees with, then each (small) range by qsort. The
 * keys are hashes, so the ranges are about n / (bands << KDIGIT) long. */
#define KDIGIT 14
static void sort_kents(struct kent *v, size_t n, uint32_t bands)
{
    size_t nd = (size_t)bands << KDIGIT;
    size_t *at = xmalloc((nd + 1) * sizeof *at);
    memset(at, 0, (nd + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++) {
        size_t d = (size_t)(v[i].gb >> GID_BITS) << KDIGIT | (size_t)(v[i].key >> (64 - KDIGIT));
        if (d >= nd)
            d = nd - 1; /* a band beyond bands: never, but stays in bounds */
        at[d + 1]++;
    }
    for (size_t d = 0; d < nd; d++)
        at[d + 1] += at[d];
    struct kent *tmp = xmalloc(n * sizeof *tmp);
    size_t *fill = xmalloc(nd * sizeof *fill);
    memcpy(fill, at, nd * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        size_t d = (size_t)(v[i].gb >> GID_BITS) << KDIGIT | (size_t)(v[i].key >> (64 - KDIGIT));
        if (d >= nd)
            d = nd - 1;
        tmp[fill[d]++] = v[i];
    }
    for (size_t d = 0; d < nd; d++) {
        size_t len = at[d + 1] - at[d];
        struct kent *w = tmp + at[d];
        if (len > 32) {
            qsort(w, len, sizeof *w, cmp_kent);
            continue;
        }
        for (size_t i = 1; i < len; i++) { /* the usual range: a few */
            struct kent x = w[i];
            size_t j = i;
            while (j > 0 && cmp_kent(&w[j - 1], &x) > 0) {
                w[j] = w[j - 1];
                j--;
            }
            w[j] = x;
        }
    }
    memcpy(v, tmp, n * sizeof *v);
    free(fill);
    free(tmp);
    free(at);
}

/* The end of the bucket (run of one band and key) that starts at i. */
size_t bucket_end(const struct kent *v, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && v[j].key == v[i].key && v[j].gb >> GID_BITS == v[i].gb >> GID_BITS)
        j++;
    return j;
}

/* The id under which this rank's index stores global id g: a document of
 * --index keeps its id (every rank loaded the index), a new one is the
 * base (first[0], the loaded ids) plus its place in this rank's share. */
uint64_t local_id(const struct mpi_ctx *c, const uint64_t *first, uint64_t g)
{
    return g < first[0] ? g : g - first[c->rank] + first[0];
}

int all_rounds(struct mpi_ctx *c, size_t n, size_t per)
{
    int mine = (int)((n + per - 1) / per), most = mine;
    if (MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot agree on the rounds");
    return most;
}

/* Band keys of the local documents, and of this rank's slice of the
 * documents loaded with --index (those still indexed), to their owners;
 * the owner's entries, sorted by (band, key, id). */
struct kent *send_keys(struct mpi_ctx *c, const struct run *r, size_t nlocal, uint32_t np,
                       uint32_t bands, uint32_t rows, const uint64_t *first, size_t *nout)
{
    /* the global ids whose keys this rank sends, in increasing order */
    uint64_t nold = first[0];
    uint64_t olo = nold * (uint64_t)c->rank / (uint64_t)c->size;
    uint64_t ohi = nold * (uint64_t)(c->rank + 1) / (uint64_t)c->size;
    size_t nmine = 0;
    uint64_t *gids = xmalloc((size_t)(ohi - olo + nlocal + 1) * sizeof *gids);
    for (uint64_t g = olo; g < ohi; g++)
        if (simlsh_index_contains(r->store.index, g) == 1) /* not removed or replaced */
            gids[nmine++] = g;
    for (size_t i = 0; i < nlocal; i++)
        gids[nmine++] = first[c->rank] + i;
    nlocal = nmine;
    size_t per = ROUND_BYTES / ((size_t)bands * sizeof(struct kent));
    per = per ? per : 1;
    int rounds = all_rounds(c, nlocal, per);
    uint64_t *keys = xmalloc(per * bands * sizeof *keys);
    /* values are read a block at a time: a round's worth would be as
     * large as the round itself, times num_perm / bands */
    size_t blk = per < 1024 ? per : 1024;
    uint32_t *vals = xmalloc(blk * np * sizeof *vals);
    uint32_t *scratch = xmalloc(np * sizeof *scratch);
    /* bands and rows given, not left to the optimiser: the same keys,
     * without solving for them again at every block */
    simlsh_params *kp = NULL;
    int rc = simlsh_params_copy(&kp, r->store.params);
    if (rc == 0)
        rc = simlsh_params_set_int(kp, SIMLSH_PARAM_BANDS, bands);
    if (rc == 0)
        rc = simlsh_params_set_int(kp, SIMLSH_PARAM_ROWS, rows);
    if (rc != 0)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "band key params: %s", simlsh_strerror(rc));
    size_t *count = xmalloc((size_t)c->size * 2 * sizeof *count), *at = count + c->size;
    struct kent *send = xmalloc(per * bands * sizeof *send);
    int *owner = xmalloc(per * bands * sizeof *owner);
    struct kent *got = NULL;
    size_t ngot = 0;
    for (int round = 0; round < rounds; round++) {
        size_t lo = (size_t)round * per, hi = lo + per < nlocal ? lo + per : nlocal;
        size_t m = hi > lo ? hi - lo : 0;
        for (size_t b0 = 0; b0 < m; b0 += blk) {
            size_t bn = m - b0 < blk ? m - b0 : blk;
            const uint32_t *in = vals;
            uint64_t l0 = local_id(c, first, gids[lo + b0]);
            if (r->store.sigs && l0 / SIGSTORE_BLOCK == (l0 + bn - 1) / SIGSTORE_BLOCK &&
                gids[lo + b0 + bn - 1] - gids[lo + b0] == bn - 1) {
                in = sigstore_at(r->store.sigs, (size_t)l0); /* consecutive: read in place */
            } else {
                for (size_t i = 0; i < bn; i++) {
                    const uint32_t *v = mpi_values(
                        c, &r->store, local_id(c, first, gids[lo + b0 + i]), np, scratch);
                    memcpy(vals + i * np, v, np * sizeof *vals);
                }
            }
            rc = simlsh_band_keys_batch(keys + b0 * bands, kp, in, bn);
            if (rc != 0)
                mpi_die(c, EXIT_DEDUP_INTERNAL, "band keys: %s", simlsh_strerror(rc));
        }
        memset(count, 0, (size_t)c->size * sizeof *count);
        for (size_t i = 0, band = 0; i < m * bands; i++) {
            owner[i] = key_owner(keys[i], (uint32_t)band, c->size);
            count[owner[i]]++;
            band = band + 1 == bands ? 0 : band + 1;
        }
        size_t o = 0;
        for (int d = 0; d < c->size; d++) {
            at[d] = o;
            o += count[d];
        }
        for (size_t i = 0, band = 0, doc = lo; i < m * bands; i++) {
            struct kent *e = &send[at[owner[i]]++];
            e->key = keys[i];
            e->gb = (uint64_t)band << GID_BITS | gids[doc];
            if (++band == bands) {
                band = 0;
                doc++;
            }
        }
        for (int d = 0; d < c->size; d++)
            count[d] *= sizeof(struct kent);
        char *recv;
        size_t rlen;
        mpi_exchange(c, (const char *)send, count, &recv, &rlen);
        size_t k = rlen / sizeof(struct kent);
        got = xrealloc(got, (ngot + k ? ngot + k : 1) * sizeof *got);
        memcpy(got + ngot, recv, k * sizeof *got);
        ngot += k;
        free(recv);
    }
    free(send);
    free(owner);
    free(count);
    free(gids);
    free(keys);
    free(vals);
    free(scratch);
    simlsh_params_free(kp);
    if (ngot > 1) /* got may be NULL when nothing arrived */
        sort_kents(got, ngot, bands);
    *nout = ngot;
    return got;
}
