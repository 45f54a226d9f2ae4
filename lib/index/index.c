/* The index's lifetime, insert/remove and the small accessors. */
#include "internal.h"
#include "radix.h"

/* ---- lifetime ------------------------------------------------------------------ */

int simlsh__ix_create(struct simlsh_index **out, const struct simlsh_params *p, uint32_t b,
                      uint32_t r)
{
    struct simlsh_index *ix = simlsh__calloc(&p->alloc, 1, sizeof *ix);
    if (ix == NULL)
        return SIMLSH_ENOMEM;
    ix->tag = SIMLSH__TAG_INDEX;
    ix->params = *p;
    ix->params.bands = (int32_t)b;
    ix->params.rows = (int32_t)r;
    ix->bands = b;
    ix->rows = r;
    ix->num_perm = (uint32_t)p->num_perm;
    ix->store = p->store_signatures != 0;
    ix->kern = simlsh__kernels_for(p->isa);
    ix->sig_fp = simlsh__fingerprint(&ix->params, SIMLSH_SCOPE_SIGNATURE);
    ix->index_fp = simlsh__fingerprint(&ix->params, SIMLSH_SCOPE_INDEX);
    ix->free_head = NO_SLOT;
    ix->ovf_free = NO_SLOT;
    *out = ix;
    return 0;
}

int simlsh_index_new(simlsh_index **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    uint32_t b, r;
    int rc = simlsh__params_resolve_bands(params, &b, &r);
    if (rc < 0)
        return rc;
    return simlsh__ix_create(out, params, b, r);
}

void simlsh_index_free(simlsh_index *index)
{
    if (!simlsh__handle_is(index, SIMLSH__TAG_INDEX))
        return;
    index->tag = SIMLSH__TAG_DEAD;
    simlsh_allocator a = index->params.alloc;
    for (size_t i = 0; i < index->novf; i++)
        simlsh__free_sized(&a, index->ovf[i].slots,
                           (size_t)index->ovf[i].cap * sizeof *index->ovf[i].slots);
    simlsh__free_sized(&a, index->ovf, index->ovf_cap * sizeof *index->ovf);
    simlsh__free_sized(&a, index->tab, index->tcap * index->bands * sizeof *index->tab);
    simlsh__free_sized(&a, index->idmap, index->idcap * sizeof *index->idmap);
    simlsh__free_sized(&a, index->ids, index->slot_cap * sizeof *index->ids);
    simlsh__free_sized(&a, index->sigs, index->slot_cap * index->num_perm * sizeof *index->sigs);
    simlsh__free_sized(&a, index->udata, index->udata_len);
    simlsh__free_sized(&a, index, sizeof *index);
}

int simlsh_index_bands(uint32_t *bands, uint32_t *rows, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (bands == NULL || rows == NULL)
        return SIMLSH_EINVAL;
    *bands = index->bands;
    *rows = index->rows;
    return 0;
}

int simlsh_index_params(simlsh_params **out, const simlsh_index *index)
{
    /* The copy has bands and rows resolved: params built from it make the
     * same index, whatever the optimiser's weights were. */
    return simlsh__params_export(out, simlsh__handle_is(index, SIMLSH__TAG_INDEX) ? &index->params
                                                                                  : NULL);
}

int simlsh_index_fingerprint(uint64_t *out, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = index->index_fp;
    return 0;
}

/* ---- insert, remove ------------------------------------------------------------ */

int simlsh_index_insert(simlsh_index *index, uint64_t id, const simlsh_signature *sig)
{
    SIMLSH__CHECK_INDEX(index);
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->fingerprint != index->sig_fp)
        return SIMLSH_EMISMATCH;
    if (sig->empty)
        return SIMLSH_EEMPTY;
    if (index->idcap > 0)
        PREFETCH(index->idmap + fastrange(simlsh__id_hash(id), index->idcap));
    uint32_t fps[SIMLSH__MAX_PERM], plan[SIMLSH__MAX_PERM];
    simlsh__ix_compute_fps(index, sig->values, fps);
    if (idmap_find(index, id) != SIZE_MAX)
        return SIMLSH_EEXIST;
    /* All b probes' lines requested at once: the misses overlap. */
    for (uint32_t b = 0; index->tab != NULL && b < index->bands; b++)
        PREFETCH(index->tab + (size_t)b * index->tcap + fastrange(fps[b], index->tcap));
    return simlsh__ix_add(index, id, fps, sig->values, plan);
}

int simlsh_index_remove(simlsh_index *index, uint64_t id)
{
    SIMLSH__CHECK_INDEX(index);
    if (!index->store)
        return SIMLSH_EUNSUPPORTED;
    size_t pos = idmap_find(index, id);
    if (pos == SIZE_MAX)
        return SIMLSH_ENOTFOUND;
    simlsh__ix_del(index, pos);
    return 0;
}

int simlsh_index_contains(const simlsh_index *index, uint64_t id)
{
    SIMLSH__CHECK_INDEX(index);
    return idmap_find(index, id) != SIZE_MAX ? 1 : 0;
}

int simlsh_index_count(size_t *out, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = index->count;
    return 0;
}

int simlsh_index_reserve_v2(simlsh_index *index, size_t n, uint32_t nthreads)
{
    SIMLSH__CHECK_INDEX(index);
    if (n <= index->count)
        return 0;
    /* n ids need at most max(nslots, n) slots: free slots are reused first. */
    size_t slots = n > index->nslots ? n : index->nslots;
    return simlsh__ix_ensure(index, n, slots, 1, nthreads);
}

int simlsh_index_reserve(simlsh_index *index, size_t n)
{
    return simlsh_index_reserve_v2(index, n, 1);
}

int simlsh_index_clear(simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (index->tab != NULL)
        memset(index->tab, 0xff, index->tcap * index->bands * sizeof *index->tab);
    if (index->idmap != NULL)
        memset(index->idmap, 0xff, index->idcap * sizeof *index->idmap);
    for (size_t i = 0; i < index->novf; i++)
        simlsh__free_sized(&index->params.alloc, index->ovf[i].slots,
                           (size_t)index->ovf[i].cap * sizeof *index->ovf[i].slots);
    index->novf = 0;
    index->ovf_nfree = 0;
    index->ovf_bytes = 0;
    index->ovf_free = NO_SLOT;
    index->count = 0;
    index->gen++;
    index->nslots = 0;
    index->free_head = NO_SLOT;
    return 0;
}

int simlsh_index_memory(size_t *total, size_t *band_tables, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (total == NULL)
        return SIMLSH_EINVAL;
    size_t tabs = index->tcap * index->bands * sizeof(band_entry) + index->ovf_bytes +
                  index->ovf_cap * sizeof(ovf_list);
    size_t t = sizeof *index + tabs + index->idcap * sizeof(id_entry) +
               index->slot_cap * sizeof(uint64_t) + index->udata_len;
    if (index->store)
        t += index->slot_cap * index->num_perm * sizeof(uint32_t);
    *total = t;
    if (band_tables != NULL)
        *band_tables = tabs;
    return 0;
}

/* ---- live documents in id order ----------------------------------------------- */

/* The ids and slots sorted as two columns of v's memory (../radix.h, tmp
 * the scratch), then written out as cands: 2 x 8 bytes a document either
 * way, so v and tmp suffice. */
void simlsh__ix_live_sorted(const struct simlsh_index *ix, cand *v, cand *tmp)
{
    size_t n = ix->count, m = 0;
    uint64_t *id = (uint64_t *)(void *)v, *slot = id + n;
    uint64_t *tid = (uint64_t *)(void *)tmp, *tslot = tid + n;
    for (size_t p = 0; p < ix->idcap; p++) {
        if (ix->idmap[p].slot != NO_SLOT) {
            id[m] = ix->idmap[p].id;
            slot[m] = ix->idmap[p].slot;
            m++;
        }
    }
    simlsh__radix_sort64(id, slot, tid, tslot, m);
    for (size_t i = 0; i < m; i++) {
        tmp[i].id = id[i];
        tmp[i].slot = (uint32_t)slot[i];
        tmp[i].eq = 0;
    }
    memcpy(v, tmp, m * sizeof *v);
}

/* ---- signatures by id ------------------------------------------------------------ */

int simlsh_index_signature(simlsh_signature **out, const simlsh_index *index, uint64_t id)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_INDEX(index);
    if (!index->store)
        return SIMLSH_EUNSUPPORTED;
    size_t pos = idmap_find(index, id);
    if (pos == SIZE_MAX)
        return SIMLSH_ENOTFOUND;
    /* The index keeps values, not raw rows: the copy is a by-value one. */
    return simlsh_signature_from_values(out, &index->params, sig_of(index, index->idmap[pos].slot),
                                        index->num_perm);
}
