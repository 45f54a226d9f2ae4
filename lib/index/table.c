/* The index's tables: band keys of a document, and growth of all tables
 * together (internal.h describes the layout). */
#include "internal.h"
#include "os.h"
#include "pool.h"

static size_t cap_for(size_t n)
{
    size_t c = n + n / 4 + 2;
    return c < MIN_CAP ? MIN_CAP : c;
}

/* reserve() sizes for load 2/3 (12 bytes per document per band): a probe
 * scans to the end of its run, about (1 + 1/(1-a)^2)/2 entries at load a,
 * which is 13 at 0.8 but 5 at 2/3, one or two cache lines instead of
 * three. Growth still happens only at 0.8. */
static size_t cap_reserve(size_t n)
{
    size_t c = n + n / 2 + 2;
    return c < MIN_CAP ? MIN_CAP : c;
}

void simlsh__ix_compute_fps(const struct simlsh_index *ix, const uint32_t *values, uint32_t *fps)
{
    for (uint32_t i = 0; i < ix->bands; i++)
        fps[i] = band_fp(
            simlsh__band_key_inline(values + (size_t)i * ix->rows, ix->rows, i, ix->params.seed));
}

/* Band tables and the id map are probed at random, b + 1 times per insert
 * or query: with 4 KiB pages nearly every probe also misses the TLB, and
 * under virtualisation a page walk costs as much as the miss. */
static void advise_huge(void *p, size_t bytes)
{
    simlsh__os_advise_huge(p, bytes);
}

/* ---- growth ------------------------------------------------------------------- */

/* The capacity that replaces cap to hold want entries: want itself when
 * exact (reserve), otherwise at least 1.5x cap for amortised O(1) inserts;
 * never more than max. */
static size_t grow_cap(size_t cap, size_t want, int exact, size_t max)
{
    size_t c = want;
    if (!exact && cap + cap / 2 > c)
        c = cap + cap / 2;
    return c > max ? max : c;
}

/* The filling of grown blocks, in units that touch disjoint memory: one
 * band table each (rehashed into its part of the new block), the id map,
 * and ranges of slots (ids and signatures copied). Fresh memory is first
 * touched here, so with threads its page faults are taken in parallel. */
#define COPY_CHUNK ((size_t)1 << 16)

typedef struct {
    const struct simlsh_index *ix;
    band_entry *nt;
    size_t ntcap;
    id_entry *nid;
    size_t nidcap;
    uint64_t *nids;
    uint32_t *nsigs;
} grow_job;

static int grow_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    const grow_job *j = ctx;
    const struct simlsh_index *ix = j->ix;
    if (unit < ix->bands) {
        if (j->nt == NULL)
            return 0;
        uint32_t b = (uint32_t)unit;
        const band_entry *old = band_tab(ix, b);
        band_entry *t = j->nt + (size_t)b * j->ntcap;
        memset(t, 0xff, j->ntcap * sizeof *t);
        for (size_t p = 0; p < ix->tcap; p++)
            if (old[p].slot != NO_SLOT)
                tab_put(t, j->ntcap, old[p].fp, old[p].slot);
    } else if (unit == ix->bands) {
        if (j->nid == NULL)
            return 0;
        memset(j->nid, 0xff, j->nidcap * sizeof *j->nid);
        for (size_t p = 0; p < ix->idcap; p++)
            if (ix->idmap[p].slot != NO_SLOT)
                simlsh__idmap_put(j->nid, j->nidcap, ix->idmap[p].id, ix->idmap[p].slot);
    } else {
        size_t lo = (unit - ix->bands - 1) * COPY_CHUNK;
        size_t n = ix->nslots - lo < COPY_CHUNK ? ix->nslots - lo : COPY_CHUNK;
        memcpy(j->nids + lo, ix->ids + lo, n * sizeof *j->nids);
        /* No huge-page hint for signatures: they are read once per
         * candidate, not once per band, and zeroing fresh huge pages made
         * first inserts up to twice as slow on a virtual machine. */
        if (ix->store)
            memcpy(j->nsigs + lo * ix->num_perm, ix->sigs + lo * ix->num_perm,
                   n * ix->num_perm * sizeof *j->nsigs);
    }
    return 0;
}

/* Make room for `docs` documents in `slots` slots. Every new block is
 * allocated before any is used, so on ENOMEM the index is exactly as it
 * was (same memory included). `exact` (reserve) sizes to the request;
 * otherwise capacities grow by 1.5x for amortised O(1) inserts. The
 * copying runs on up to nthreads threads. */
int simlsh__ix_ensure(struct simlsh_index *ix, size_t docs, size_t slots, int exact,
                      uint32_t nthreads)
{
    if (docs > MAX_DOCS || slots > MAX_DOCS)
        return SIMLSH_ENOMEM;
    const simlsh_allocator *al = &ix->params.alloc;
    size_t ntcap = ix->tcap, nidcap = ix->idcap, nscap = ix->slot_cap;
    if (!fits(docs, ntcap))
        ntcap = grow_cap(ix->tcap, exact ? cap_reserve(docs) : cap_for(docs), exact, MAX_CAP);
    if (!fits(docs, nidcap))
        nidcap = grow_cap(ix->idcap, cap_for(docs), exact, MAX_CAP);
    if (slots > nscap)
        nscap = grow_cap(ix->slot_cap, slots < MIN_CAP ? MIN_CAP : slots, exact, MAX_DOCS);

    band_entry *nt = NULL;
    id_entry *nid = NULL;
    uint64_t *nids = NULL;
    uint32_t *nsigs = NULL;
    size_t bytes;
    if (ntcap != ix->tcap) {
        if (!simlsh__mul_ok(ntcap, (size_t)ix->bands * sizeof *nt, &bytes) ||
            (nt = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
    }
    if (nidcap != ix->idcap) {
        if (!simlsh__mul_ok(nidcap, sizeof *nid, &bytes) ||
            (nid = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
    }
    if (nscap != ix->slot_cap) {
        if (!simlsh__mul_ok(nscap, sizeof *nids, &bytes) ||
            (nids = simlsh__malloc(al, bytes)) == NULL)
            goto fail;
        if (ix->store && (!simlsh__mul_ok(nscap, (size_t)ix->num_perm * sizeof *nsigs, &bytes) ||
                          (nsigs = simlsh__malloc(al, bytes)) == NULL))
            goto fail;
    }

    if (nt != NULL)
        advise_huge(nt, ntcap * ix->bands * sizeof *nt);
    if (nid != NULL)
        advise_huge(nid, nidcap * sizeof *nid);
    grow_job j = {ix, nt, ntcap, nid, nidcap, nids, nsigs};
    size_t copies = nids != NULL ? (ix->nslots + COPY_CHUNK - 1) / COPY_CHUNK : 0;
    size_t units = (size_t)ix->bands + 1 + copies;
    /* One thread for small tables: starting one costs more than it saves. */
    if (ntcap * ix->bands < ((size_t)1 << 20))
        nthreads = 1;
    simlsh__par_run(simlsh__par_workers(nthreads, units), units, grow_unit, &j, NULL);
    if (nt != NULL) {
        simlsh__free_sized(al, ix->tab, ix->tcap * ix->bands * sizeof *ix->tab);
        ix->tab = nt;
        ix->tcap = ntcap;
    }
    if (nid != NULL) {
        simlsh__free_sized(al, ix->idmap, ix->idcap * sizeof *ix->idmap);
        ix->idmap = nid;
        ix->idcap = nidcap;
    }
    if (nids != NULL) {
        simlsh__free_sized(al, ix->ids, ix->slot_cap * sizeof *ix->ids);
        ix->ids = nids;
        if (ix->store) {
            simlsh__free_sized(al, ix->sigs, ix->slot_cap * ix->num_perm * sizeof *ix->sigs);
            ix->sigs = nsigs;
        }
        ix->slot_cap = nscap;
    }
    return 0;
fail:
    simlsh__free_sized(al, nt, ntcap * ix->bands * sizeof *nt);
    simlsh__free_sized(al, nid, nidcap * sizeof *nid);
    simlsh__free_sized(al, nids, nscap * sizeof *nids);
    simlsh__free_sized(al, nsigs, nscap * ix->num_perm * sizeof *nsigs);
    return SIMLSH_ENOMEM;
}
