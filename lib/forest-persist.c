/*
 * Saving and loading the prefix-tree engine's store, for the LSH Forest
 * and the LSH Ensemble (docs/format-forest.md). The payload:
 *   head 24 bytes: u32 trees, u32 depth, u32 flags (0), u32 record size,
 *                  u64 record count
 *   records:       u64 id, [u64 set size: ensemble only], num_perm u32
 *                  densified values
 * The framing around it is serialize.c's, as for every saved object.
 */
#include "checked.h"
#include "forest-persist.h"

#define PAYLOAD_HEAD 24

static uint32_t record_size(int has_aux, uint32_t num_perm)
{
    return (has_aux ? 16u : 8u) + 4u * num_perm;
}

int simlsh__pf_save(void *buf, size_t cap, size_t *size, uint32_t magic,
                    const struct simlsh_params *p, const simlsh__pf_store *s)
{
    size_t rec = record_size(s->has_aux, s->num_perm), recs;
    if (!simlsh__mul_ok(s->count, rec, &recs) || recs > SIZE_MAX - PAYLOAD_HEAD)
        return SIMLSH_EINVAL;
    uint8_t *pl;
    int rc = simlsh__frame_begin(buf, cap, size, PAYLOAD_HEAD + (uint64_t)recs, magic, p, &pl);
    if (rc <= 0)
        return rc;
    simlsh__wr32(pl, (uint32_t)p->bands);
    simlsh__wr32(pl + 4, (uint32_t)p->rows);
    simlsh__wr32(pl + 8, 0);
    simlsh__wr32(pl + 12, (uint32_t)rec);
    simlsh__wr64(pl + 16, s->count);
    uint8_t *r = pl + PAYLOAD_HEAD;
    size_t values = rec - 4 * (size_t)s->num_perm;
    for (size_t slot = 0; slot < s->nslots; slot++) {
        if (s->state[slot] != SIMLSH__PF_LIVE)
            continue;
        simlsh__wr64(r, s->ids[slot]);
        if (s->has_aux)
            simlsh__wr64(r + 8, s->aux[slot]);
        const uint32_t *v = simlsh__pf_vals(s, (uint32_t)slot);
        for (uint32_t i = 0; i < s->num_perm; i++)
            simlsh__wr32(r + values + 4 * (size_t)i, v[i]);
        r += rec;
    }
    simlsh__frame_write_tail(buf, *size);
    return 0;
}

int simlsh__pf_load_open(simlsh__pf_reader *rd, struct simlsh_params *p, const void *buf,
                         size_t len, const simlsh_allocator *alloc, uint32_t magic, int has_aux)
{
    const uint8_t *pl;
    uint64_t plen;
    int rc = simlsh__frame_open(buf, len, alloc, magic, p, &pl, &plen);
    if (rc < 0)
        return rc;
    if (plen < PAYLOAD_HEAD)
        return SIMLSH_ECORRUPT;
    uint32_t l = simlsh__rd32(pl), depth = simlsh__rd32(pl + 4);
    uint32_t flags = simlsh__rd32(pl + 8), rec = simlsh__rd32(pl + 12);
    uint64_t n = simlsh__rd64(pl + 16);
    if (l == 0 || depth == 0 || (uint64_t)l * depth > (uint64_t)p->num_perm ||
        l != (uint32_t)p->bands || depth != (uint32_t)p->rows || flags != 0 ||
        p->store_signatures != 1)
        return SIMLSH_ECORRUPT;
    if (rec != record_size(has_aux, (uint32_t)p->num_perm) || n > SIMLSH__PF_MAX_DOCS ||
        n > (plen - PAYLOAD_HEAD) / rec || n * rec != plen - PAYLOAD_HEAD)
        return SIMLSH_ECORRUPT;
    rd->next = pl + PAYLOAD_HEAD;
    rd->count = rd->left = n;
    rd->rec = rec;
    rd->num_perm = (uint32_t)p->num_perm;
    rd->has_aux = has_aux;
    return 0;
}

int simlsh__pf_load_next(simlsh__pf_reader *rd, const simlsh__pf_store *s, uint64_t *id,
                         uint64_t *aux, uint32_t *vals)
{
    if (rd->left == 0)
        return 0;
    const uint8_t *r = rd->next;
    rd->next += rd->rec;
    rd->left--;
    *id = simlsh__rd64(r);
    *aux = rd->has_aux ? simlsh__rd64(r + 8) : 0;
    if ((rd->has_aux && *aux == 0) || simlsh__pf_store_find(s, *id) != SIMLSH__PF_NO_SLOT)
        return SIMLSH_ECORRUPT;
    /* A stored signature is never empty, and densified values never hold
     * the empty marker. */
    const uint8_t *v = r + (rd->has_aux ? 16 : 8);
    for (uint32_t i = 0; i < rd->num_perm; i++) {
        vals[i] = simlsh__rd32(v + 4 * (size_t)i);
        if (vals[i] == SIMLSH__EMPTY_VALUE)
            return SIMLSH_ECORRUPT;
    }
    return 1;
}
