/* The index's tables: band keys of a document, and growth of all tables
 * together (index.h describes the layout). */
#include "index.h"
#include "os.h"

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
        fps[i] = band_fp(simlsh__band_key_inline(values + (size_t)i * ix->rows, ix->rows, i,
                                                 ix->params.seed));
}

/* Band tables and the id map are probed at random, b + 1 times per insert
 * or query: with 4 KiB pages nearly every probe also misses the TLB, and
 * under virtualisation a page walk costs as much as the miss. */
static void advise_huge(void *p, size_t bytes) { simlsh__os_advise_huge(p, bytes); }

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

/* Make room for `docs` documents in `slots` slots. Every new block is
 * allocated before any is used, so on ENOMEM the index is exactly as it
 * was (same memory included). `exact` (reserve) sizes to the request;
 * otherwise capacities grow by 1.5x for amortised O(1) inserts. */
int simlsh__ix_ensure(struct simlsh_index *ix, size_t docs, size_t slots, int exact)
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

    if (nt != NULL) {
        advise_huge(nt, ntcap * ix->bands * sizeof *nt);
        memset(nt, 0xff, ntcap * ix->bands * sizeof *nt);
        for (uint32_t b = 0; b < ix->bands; b++) {
            const band_entry *old = band_tab(ix, b);
            band_entry *t = nt + (size_t)b * ntcap;
            for (size_t p = 0; p < ix->tcap; p++)
                if (old[p].slot != NO_SLOT)
                    tab_put(t, ntcap, old[p].fp, old[p].slot);
        }
        simlsh__free(al, ix->tab);
        ix->tab = nt;
        ix->tcap = ntcap;
    }
    if (nid != NULL) {
        advise_huge(nid, nidcap * sizeof *nid);
        memset(nid, 0xff, nidcap * sizeof *nid);
        for (size_t p = 0; p < ix->idcap; p++)
            if (ix->idmap[p].slot != NO_SLOT)
                idmap_put(nid, nidcap, ix->idmap[p].id, ix->idmap[p].slot);
        simlsh__free(al, ix->idmap);
        ix->idmap = nid;
        ix->idcap = nidcap;
    }
    if (nids != NULL) {
        if (ix->nslots > 0)
            memcpy(nids, ix->ids, ix->nslots * sizeof *nids);
        simlsh__free(al, ix->ids);
        ix->ids = nids;
        if (ix->store) {
            /* No huge-page hint here: signatures are read once per
             * candidate, not once per band, and zeroing fresh huge pages
             * made first inserts up to twice as slow on a virtual machine. */
            if (ix->nslots > 0)
                memcpy(nsigs, ix->sigs, ix->nslots * ix->num_perm * sizeof *nsigs);
            simlsh__free(al, ix->sigs);
            ix->sigs = nsigs;
        }
        ix->slot_cap = nscap;
    }
    return 0;
fail:
    simlsh__free(al, nt);
    simlsh__free(al, nid);
    simlsh__free(al, nids);
    simlsh__free(al, nsigs);
    return SIMLSH_ENOMEM;
}
