/* Saving and loading an index (docs/format-index.md), in memory and to
 * files. */
#include "file.h"
#include "internal.h"

/* ---- persistence ------------------------------------------------------------------ */

/* Payload (docs/format-index.md): header, then one record per document:
 * u64 id, u32 fingerprint per band, u32 value per row of num_perm if stored;
 * then, with FLAG_USERDATA, u64 U and the U > 0 bytes of user data. */
#define PAYLOAD_HEAD 24
#define FLAG_STORED 1u
#define FLAG_USERDATA 2u
#define USERDATA_HEAD 8

static size_t record_size(const struct simlsh_index *ix)
{
    return 8 + 4 * (size_t)ix->bands + (ix->store ? 4 * (size_t)ix->num_perm : 0);
}

/* Bytes of the user data section: none without user data, so an index
 * without any saves exactly as in 0.1 and loads there too. */
static size_t userdata_size(const struct simlsh_index *ix)
{
    return ix->udata_len > 0 ? USERDATA_HEAD + ix->udata_len : 0;
}

/* Payload bytes: header, records, user data. */
static int payload_size(const struct simlsh_index *ix, size_t *out)
{
    size_t recs;
    if (!simlsh__mul_ok(ix->count, record_size(ix), &recs) || recs > SIZE_MAX - PAYLOAD_HEAD ||
        ix->udata_len > SIZE_MAX - USERDATA_HEAD ||
        userdata_size(ix) > SIZE_MAX - PAYLOAD_HEAD - recs)
        return SIMLSH_EINVAL;
    *out = PAYLOAD_HEAD + recs + userdata_size(ix);
    return 0;
}

/* Live slot? Free slots hold a link, which may equal a live id: the map
 * decides. Without stored signatures nothing is removed: all slots live. */
static int slot_live(const struct simlsh_index *ix, uint32_t slot)
{
    if (!ix->store)
        return 1;
    size_t pos = idmap_find(ix, ix->ids[slot]);
    return pos != SIZE_MAX && ix->idmap[pos].slot == slot;
}

int simlsh_index_save(void *buf, size_t cap, size_t *size, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (size == NULL || index == NULL)
        return SIMLSH_EINVAL;
    size_t plen, rec = record_size(index);
    int rc = payload_size(index, &plen);
    if (rc < 0)
        return rc;
    uint8_t *pl;
    rc = simlsh__frame_begin(buf, cap, size, plen, SIMLSH__MAGIC_INDEX, &index->params, &pl);
    if (rc <= 0)
        return rc;
    simlsh__wr32(pl, index->bands);
    simlsh__wr32(pl + 4, index->rows);
    simlsh__wr32(pl + 8,
                 (index->store ? FLAG_STORED : 0) | (index->udata_len > 0 ? FLAG_USERDATA : 0));
    simlsh__wr32(pl + 12, (uint32_t)rec);
    simlsh__wr64(pl + 16, index->count);
    uint8_t *r = pl + PAYLOAD_HEAD;
    uint32_t fps[SIMLSH__MAX_PERM];
    for (size_t s = 0; s < index->nslots; s++) {
        if (!slot_live(index, (uint32_t)s))
            continue;
        simlsh__wr64(r, index->ids[s]);
        if (index->store) {
            const uint32_t *v = sig_of(index, (uint32_t)s);
            simlsh__ix_compute_fps(index, v, fps);
            for (uint32_t b = 0; b < index->bands; b++)
                simlsh__wr32(r + 8 + 4 * (size_t)b, fps[b]);
            uint8_t *vp = r + 8 + 4 * (size_t)index->bands;
            for (uint32_t i = 0; i < index->num_perm; i++)
                simlsh__wr32(vp + 4 * (size_t)i, v[i]);
        }
        r += rec;
    }
    if (!index->store) {
        /* Slots are dense (no removal without signatures): record = slot. */
        uint8_t *base = pl + PAYLOAD_HEAD + 8;
        for (uint32_t b = 0; b < index->bands; b++) {
            const band_entry *t = band_tab(index, b);
            for (size_t p = 0; p < index->tcap; p++) {
                if (t[p].slot == NO_SLOT)
                    continue;
                const uint32_t *m = &t[p].slot;
                uint32_t nm = 1;
                if (is_ref(t[p].slot)) {
                    m = list_of(index, t[p].slot)->slots;
                    nm = list_of(index, t[p].slot)->n;
                }
                for (uint32_t i = 0; i < nm; i++)
                    simlsh__wr32(base + (size_t)m[i] * rec + 4 * (size_t)b, t[p].fp);
            }
        }
    }
    if (index->udata_len > 0) {
        uint8_t *u = pl + PAYLOAD_HEAD + index->count * rec;
        simlsh__wr64(u, index->udata_len);
        memcpy(u + USERDATA_HEAD, index->udata, index->udata_len);
    }
    simlsh__frame_write_tail(buf, *size);
    return 0;
}

int simlsh_index_load(simlsh_index **out, const void *buf, size_t len,
                      const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    struct simlsh_params p;
    const uint8_t *pl;
    uint64_t plen;
    int rc = simlsh__frame_open(buf, len, alloc, SIMLSH__MAGIC_INDEX, &p, &pl, &plen);
    if (rc < 0)
        return rc;
    if (plen < PAYLOAD_HEAD)
        return SIMLSH_ECORRUPT;
    uint32_t bands = simlsh__rd32(pl), rows = simlsh__rd32(pl + 4);
    uint32_t flags = simlsh__rd32(pl + 8), rec = simlsh__rd32(pl + 12);
    uint64_t count = simlsh__rd64(pl + 16);
    /* Everything checked against the contract and the real length before
     * anything sized by the input is allocated. */
    if (bands == 0 || rows == 0 || (uint64_t)bands * rows > (uint64_t)p.num_perm ||
        bands != (uint32_t)p.bands || rows != (uint32_t)p.rows ||
        (flags & ~(FLAG_STORED | FLAG_USERDATA)) != 0 ||
        (flags & FLAG_STORED) != (uint32_t)(p.store_signatures != 0))
        return SIMLSH_ECORRUPT;
    int store = (flags & FLAG_STORED) != 0;
    uint64_t want_rec = 8 + 4 * (uint64_t)bands + (store ? 4 * (uint64_t)p.num_perm : 0);
    uint64_t body = plen - PAYLOAD_HEAD;
    if (rec != want_rec || count > MAX_DOCS || count > body / rec)
        return SIMLSH_ECORRUPT;
    /* The user data's length must account for every byte after the
     * records, so it is never larger than the input itself; and it is
     * never 0, so a file has one spelling and saves back to itself. */
    uint64_t ulen = 0, rest = body - count * rec;
    if (flags & FLAG_USERDATA) {
        if (rest < USERDATA_HEAD)
            return SIMLSH_ECORRUPT;
        ulen = simlsh__rd64(pl + PAYLOAD_HEAD + count * rec);
        if (ulen == 0 || ulen != rest - USERDATA_HEAD)
            return SIMLSH_ECORRUPT;
    } else if (rest != 0) {
        return SIMLSH_ECORRUPT;
    }

    struct simlsh_index *ix;
    rc = simlsh__ix_create(&ix, &p, bands, rows);
    if (rc < 0)
        return rc;
    rc = simlsh__ix_ensure(ix, (size_t)count, (size_t)count, 1, 1);
    uint32_t *vals = NULL;
    if (rc == 0 && store) {
        vals = simlsh__malloc(&ix->params.alloc, ix->num_perm * sizeof *vals);
        if (vals == NULL)
            rc = SIMLSH_ENOMEM;
    }
    uint32_t fps[SIMLSH__MAX_PERM], check[SIMLSH__MAX_PERM];
    const uint8_t *r = pl + PAYLOAD_HEAD;
    /* Rebuilt by inserting: the tables' layout is never read from the
     * input, so no hostile layout can make a probe loop forever. */
    for (uint64_t d = 0; rc == 0 && d < count; d++, r += rec) {
        uint64_t id = simlsh__rd64(r);
        for (uint32_t b = 0; b < bands; b++)
            fps[b] = simlsh__rd32(r + 8 + 4 * (size_t)b);
        if (store) {
            const uint8_t *vp = r + 8 + 4 * (size_t)bands;
            for (uint32_t i = 0; i < ix->num_perm; i++)
                vals[i] = simlsh__rd32(vp + 4 * (size_t)i);
            simlsh__ix_compute_fps(ix, vals, check);
            if (memcmp(check, fps, bands * sizeof *fps) != 0) {
                rc = SIMLSH_ECORRUPT;
                break;
            }
        }
        if (idmap_find(ix, id) != SIZE_MAX) {
            rc = SIMLSH_ECORRUPT;
            break;
        }
        rc = simlsh__ix_add(ix, id, fps, vals, check); /* check: done, its room reused */
    }
    simlsh__free_sized(&ix->params.alloc, vals, ix->num_perm * sizeof *vals);
    if (rc == 0 && ulen > 0)
        rc = simlsh_index_set_userdata(ix, pl + PAYLOAD_HEAD + count * rec + USERDATA_HEAD,
                                       (size_t)ulen);
    if (rc < 0) {
        simlsh_index_free(ix);
        return rc;
    }
    *out = ix;
    return 0;
}

/* ---- user data ------------------------------------------------------------------- */

int simlsh_index_set_userdata(simlsh_index *index, const void *data, size_t len)
{
    SIMLSH__CHECK_INDEX(index);
    if (index == NULL || (data == NULL && len > 0))
        return SIMLSH_EINVAL;
    uint8_t *copy = NULL;
    if (len > 0) {
        copy = simlsh__malloc(&index->params.alloc, len);
        if (copy == NULL)
            return SIMLSH_ENOMEM;
        memcpy(copy, data, len); /* before the free: data may be the old bytes */
    }
    simlsh__free_sized(&index->params.alloc, index->udata, index->udata_len);
    index->udata = copy;
    index->udata_len = len;
    return 0;
}

int simlsh_index_userdata(const void **data, size_t *len, const simlsh_index *index)
{
    SIMLSH__CHECK_INDEX(index);
    if (data == NULL || len == NULL || index == NULL)
        return SIMLSH_EINVAL;
    *data = index->udata;
    *len = index->udata_len;
    return 0;
}

/* ---- files ------------------------------------------------------------------------- */

int simlsh_index_save_file_v2(int *sys_errno, const simlsh_index *index, const char *path,
                              int flags)
{
    if (sys_errno != NULL)
        *sys_errno = 0;
    SIMLSH__CHECK_INDEX(index);
    if (index == NULL || path == NULL || path[0] == '\0' || (flags & ~SIMLSH_FILE_NOFOLLOW) != 0)
        return SIMLSH_EINVAL;
    const simlsh_allocator *al = &index->params.alloc;
    size_t size;
    int rc = simlsh_index_save(NULL, 0, &size, index);
    if (rc < 0)
        return rc;
    uint8_t *buf = simlsh__malloc(al, size);
    size_t block = size;
    if (buf == NULL)
        return SIMLSH_ENOMEM;
    rc = simlsh_index_save(buf, size, &size, index);
    if (rc == 0)
        rc = simlsh__file_write_atomic(path, buf, size, flags, sys_errno, al);
    simlsh__free_sized(al, buf, block);
    return rc;
}

int simlsh_index_save_file(const simlsh_index *index, const char *path)
{
    return simlsh_index_save_file_v2(NULL, index, path, 0);
}

int simlsh_index_load_file_v2(simlsh_index **out, int *sys_errno, const char *path, int flags,
                              const simlsh_allocator *alloc)
{
    if (sys_errno != NULL)
        *sys_errno = 0;
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (path == NULL || !simlsh__alloc_valid(alloc) || (flags & ~SIMLSH_FILE_NOFOLLOW) != 0)
        return SIMLSH_EINVAL;
    simlsh_allocator al;
    simlsh__alloc_fill(&al, alloc);
    uint8_t *buf;
    size_t n;
    int rc = simlsh__file_read_all(path, flags, sys_errno, &al, &buf, &n);
    if (rc < 0)
        return rc;
    rc = n > 0 ? simlsh_index_load(out, buf, n, alloc) : SIMLSH_ECORRUPT;
    simlsh__free_sized(&al, buf, n); /* read_all's block is n bytes */
    return rc;
}

int simlsh_index_load_file(simlsh_index **out, const char *path, const simlsh_allocator *alloc)
{
    return simlsh_index_load_file_v2(out, NULL, path, 0, alloc);
}
