/* Copying an index, and merging one into another. */
#include "internal.h"
#include "os.h"

/* ---- copy ----------------------------------------------------------------------- */

/* A copy of the n initialised elements of an array of cap elements of esz
 * bytes (the rest stays unwritten, as in the original). 0 or ENOMEM; cap 0
 * gives NULL. */
static int dup_array(const simlsh_allocator *al, void **out, const void *src, size_t cap, size_t n,
                     size_t esz)
{
    *out = NULL;
    if (cap == 0)
        return 0;
    size_t bytes;
    if (!simlsh__mul_ok(cap, esz, &bytes) || (*out = simlsh__malloc(al, bytes)) == NULL)
        return SIMLSH_ENOMEM;
    if (n > 0)
        memcpy(*out, src, n * esz);
    return 0;
}

int simlsh_index_copy(simlsh_index **out, const simlsh_index *src)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_INDEX(src);
    if (src == NULL)
        return SIMLSH_EINVAL;
    const simlsh_allocator *al = &src->params.alloc;
    struct simlsh_index *ix = simlsh__malloc(al, sizeof *ix);
    if (ix == NULL)
        return SIMLSH_ENOMEM;
    /* The same state, free lists included, so that later inserts and
     * removals go exactly as in the original; pointers are replaced below,
     * and until then are NULL so that a failure can free what exists. */
    *ix = *src;
    ix->tab = NULL;
    ix->idmap = NULL;
    ix->ids = NULL;
    ix->sigs = NULL;
    ix->ovf = NULL;
    ix->novf = 0;
    ix->udata = NULL;
    int rc = dup_array(al, (void **)&ix->tab, src->tab, src->tcap * src->bands,
                       src->tcap * src->bands, sizeof *ix->tab);
    if (rc == 0)
        rc = dup_array(al, (void **)&ix->idmap, src->idmap, src->idcap, src->idcap,
                       sizeof *ix->idmap);
    if (rc == 0)
        rc =
            dup_array(al, (void **)&ix->ids, src->ids, src->slot_cap, src->nslots, sizeof *ix->ids);
    if (rc == 0 && src->store)
        rc = dup_array(al, (void **)&ix->sigs, src->sigs, src->slot_cap * src->num_perm,
                       src->nslots * src->num_perm, sizeof *ix->sigs);
    if (rc == 0 && src->udata_len > 0)
        rc = dup_array(al, (void **)&ix->udata, src->udata, src->udata_len, src->udata_len, 1);
    if (rc == 0 && src->ovf_cap > 0) {
        /* Zeroed beyond novf, as ix_prepare() leaves a grown array. */
        ix->ovf = simlsh__calloc(al, src->ovf_cap, sizeof *ix->ovf);
        if (ix->ovf == NULL)
            rc = SIMLSH_ENOMEM;
    }
    /* Lists one by one; novf counts those done, for simlsh_index_free(). */
    for (size_t i = 0; rc == 0 && i < src->novf; i++) {
        const ovf_list *l = &src->ovf[i];
        ix->ovf[i] = *l;
        ix->ovf[i].slots = NULL;
        ix->novf = i + 1;
        if (l->slots != NULL)
            rc =
                dup_array(al, (void **)&ix->ovf[i].slots, l->slots, l->cap, l->n, sizeof *l->slots);
    }
    if (rc < 0) {
        simlsh_index_free(ix);
        return rc;
    }
    if (ix->tab != NULL)
        simlsh__os_advise_huge(ix->tab, ix->tcap * ix->bands * sizeof *ix->tab);
    if (ix->idmap != NULL)
        simlsh__os_advise_huge(ix->idmap, ix->idcap * sizeof *ix->idmap);
    *out = ix;
    return 0;
}

/* ---- merge ---------------------------------------------------------------------- */

/* The live documents of ix as (id, slot), sorted by id. */
static int live_by_id(const struct simlsh_index *ix, cand **out)
{
    *out = NULL;
    if (ix->count == 0)
        return 0;
    const simlsh_allocator *al = &ix->params.alloc;
    cand *v = simlsh__calloc(al, ix->count, sizeof *v);
    cand *tmp = simlsh__calloc(al, ix->count, sizeof *tmp);
    if (v != NULL && tmp != NULL)
        simlsh__ix_live_sorted(ix, v, tmp);
    simlsh__free_sized(al, tmp, ix->count * sizeof *tmp);
    if (v == NULL || tmp == NULL) {
        simlsh__free_sized(al, v, ix->count * sizeof *v);
        return SIMLSH_ENOMEM;
    }
    *out = v;
    return 0;
}

/* Without stored signatures a document's band fingerprints live only in
 * the tables: read them off into fps[slot * bands + band]. */
static int fps_by_slot(const struct simlsh_index *ix, uint32_t **out)
{
    *out = NULL;
    if (ix->store || ix->count == 0)
        return 0;
    size_t bytes;
    uint32_t *fps;
    if (!simlsh__mul_ok(ix->nslots, (size_t)ix->bands * sizeof *fps, &bytes) ||
        (fps = simlsh__malloc(&ix->params.alloc, bytes)) == NULL)
        return SIMLSH_ENOMEM;
    for (uint32_t b = 0; b < ix->bands; b++) {
        const band_entry *t = band_tab(ix, b);
        for (size_t p = 0; p < ix->tcap; p++) {
            if (t[p].slot == NO_SLOT)
                continue;
            const uint32_t *m = &t[p].slot;
            uint32_t nm = 1;
            if (is_ref(t[p].slot)) {
                m = list_of(ix, t[p].slot)->slots;
                nm = list_of(ix, t[p].slot)->n;
            }
            for (uint32_t i = 0; i < nm; i++)
                fps[(size_t)m[i] * ix->bands + b] = t[p].fp;
        }
    }
    *out = fps;
    return 0;
}

/* One side of a merge: an index, its documents by id, and (without stored
 * signatures) their fingerprints. */
typedef struct {
    const struct simlsh_index *ix;
    cand *docs;
    uint32_t *fps;
    size_t next;
} side;

static void side_free(side *s)
{
    const struct simlsh_index *ix = s->ix;
    simlsh__free_sized(&ix->params.alloc, s->docs, ix->count * sizeof *s->docs);
    simlsh__free_sized(&ix->params.alloc, s->fps, ix->nslots * ix->bands * sizeof *s->fps);
}

/* Insert the next document of s into out. */
static int add_next(struct simlsh_index *out, side *s, uint32_t *fps, uint32_t *plan)
{
    const struct simlsh_index *ix = s->ix;
    const cand *c = &s->docs[s->next++];
    const uint32_t *vals = NULL;
    if (ix->store) {
        vals = sig_of(ix, c->slot);
        simlsh__ix_compute_fps(ix, vals, fps);
    } else {
        memcpy(fps, s->fps + (size_t)c->slot * ix->bands, ix->bands * sizeof *fps);
    }
    return simlsh__ix_add(out, c->id, fps, vals, plan);
}

int simlsh_index_merge(simlsh_index *dst, const simlsh_index *src)
{
    SIMLSH__CHECK_INDEX(dst);
    SIMLSH__CHECK_INDEX(src);
    if (dst == NULL || src == NULL)
        return SIMLSH_EINVAL;
    if (dst->index_fp != src->index_fp || dst->store != src->store)
        return SIMLSH_EMISMATCH;
    size_t total = dst->count + src->count;
    if (total > MAX_DOCS)
        return SIMLSH_ENOMEM;
    side a = {dst, NULL, NULL, 0}, b = {src, NULL, NULL, 0};
    struct simlsh_index *ix = NULL;
    int rc = live_by_id(dst, &a.docs);
    if (rc == 0)
        rc = live_by_id(src, &b.docs);
    /* Every id checked before anything is built: all or nothing. */
    for (size_t i = 0, j = 0; rc == 0 && i < dst->count && j < src->count;) {
        if (a.docs[i].id == b.docs[j].id)
            rc = SIMLSH_EEXIST;
        else if (a.docs[i].id < b.docs[j].id)
            i++;
        else
            j++;
    }
    if (rc == 0)
        rc = fps_by_slot(dst, &a.fps);
    if (rc == 0)
        rc = fps_by_slot(src, &b.fps);
    /* The union is built aside and only then takes dst's place, so a
     * failure anywhere leaves dst as it was, down to its memory. */
    if (rc == 0)
        rc = simlsh__ix_create(&ix, &dst->params, dst->bands, dst->rows);
    if (rc == 0 && total > 0)
        rc = simlsh__ix_ensure(ix, total, total, 1, 1);
    uint32_t fps[SIMLSH__MAX_PERM], plan[SIMLSH__MAX_PERM];
    while (rc == 0 && (a.next < dst->count || b.next < src->count)) {
        int from_a =
            b.next == src->count || (a.next < dst->count && a.docs[a.next].id < b.docs[b.next].id);
        rc = add_next(ix, from_a ? &a : &b, fps, plan);
    }
    side_free(&a);
    side_free(&b);
    if (rc < 0) {
        simlsh_index_free(ix);
        return rc;
    }
    /* dst keeps its user data and params; its old tables go with ix. */
    ix->udata = dst->udata;
    ix->udata_len = dst->udata_len;
    dst->udata = NULL;
    dst->udata_len = 0;
    struct simlsh_index old = *dst;
    *dst = *ix;
    *ix = old;
    simlsh_index_free(ix);
    return 0;
}
