/* The dedup walk's block of centres (simlsh__ix_mates_band, index/mates.h)
 * against one simlsh__ix_mates() call a centre: on an index whose buckets
 * are large lists of unlike documents (a template: each value the
 * template's with probability 0.85, so a band is shared by about 38 % of
 * the documents and a pair agrees on about 72 % of its values, on both
 * sides of need), with closed documents, lists set aside, inline buckets
 * and blocks of 1 to 64 centres, the merged lists (each document's bands in
 * order, each mate once) are the same mates, in the same order, with the
 * same scores and the same looks; and every ISA's kernel gives the same.
 * Also for num_perm values that are not a multiple of 64. */
#include "index/internal.h"
#include "index/mates.h"
#include "testutil.h"

static simlsh_allocator al;

#define NDOCS 900

static simlsh_index *mk_index(uint32_t np, uint32_t bands, uint32_t rows, int isa, uint64_t seed)
{
    simlsh_params *p = NULL;
    simlsh_index *ix = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, np));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, bands));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, rows));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa));
    CHECK_OK(simlsh_index_new(&ix, p));
    simlsh_params_free(p);
    tu_rng r = {seed};
    uint32_t *tmpl = malloc(np * sizeof *tmpl), *vals = malloc((size_t)NDOCS * np * sizeof *vals);
    uint64_t *ids = malloc(NDOCS * sizeof *ids);
    CHECK(tmpl != NULL && vals != NULL && ids != NULL);
    for (uint32_t i = 0; i < np; i++)
        tmpl[i] = (uint32_t)tu_next(&r) & 0x7FFFFFFF;
    for (size_t d = 0; d < NDOCS; d++) {
        ids[d] = tu_next(&r) >> 1;
        /* a fifth are near copies of an earlier document (they pass need) */
        size_t src = d > 10 && tu_below(&r, 5) == 0 ? (size_t)tu_below(&r, d) : SIZE_MAX;
        for (uint32_t i = 0; i < np; i++) {
            uint32_t *v = &vals[d * np + i];
            if (src != SIZE_MAX)
                *v = tu_below(&r, 20) ? vals[src * np + i] : (uint32_t)tu_next(&r) & 0x7FFFFFFF;
            else
                *v = tu_below(&r, 100) < 85 ? tmpl[i] : (uint32_t)tu_next(&r) & 0x7FFFFFFF;
            /* some values differ from the template's in all but the low byte */
            if (tu_below(&r, 50) == 0)
                *v ^= 0x100u << tu_below(&r, 20);
        }
    }
    CHECK_OK(simlsh_index_insert_values(ix, ids, vals, NDOCS, 1));
    free(tmpl);
    free(vals);
    free(ids);
    return ix;
}

/* One block of centres both ways, compared. */
static size_t check_block(const simlsh_index *ix, const uint32_t *xs, size_t n, uint32_t need,
                          const uint8_t *lists, const uint8_t *closed, const uint8_t *low)
{
    uint32_t nb = simlsh__ix_bands(ix), fps[SIMLSH__MAX_PERM];
    size_t ns = simlsh__ix_nslots(ix);
    uint32_t *bfps = calloc((size_t)nb * n, sizeof *bfps), *seen = calloc(ns, sizeof *seen);
    simlsh__matevec *bm = calloc((size_t)nb * n, sizeof *bm);
    uint64_t *bv = calloc((size_t)nb * n, sizeof *bv);
    CHECK(bfps != NULL && seen != NULL && bm != NULL && bv != NULL);
    for (size_t i = 0; i < n; i++) {
        simlsh__ix_slot_fps(ix, xs[i], fps);
        for (uint32_t b = 0; b < nb; b++)
            bfps[(size_t)b * n + i] = fps[b];
    }
    for (uint32_t b = 0; b < nb; b++)
        CHECK_OK(simlsh__ix_mates_band(ix, xs, n, b, bfps + (size_t)b * n, need, lists, closed, low,
                                       &al, bm + (size_t)b * n, bv + (size_t)b * n));
    size_t mates = 0;
    for (size_t i = 0; i < n; i++) {
        simlsh__matevec one = {NULL, 0, 0};
        uint64_t visits = 0, bvisits = 0;
        CHECK_OK(simlsh__ix_mates(ix, xs[i], need, (uint8_t *)lists, closed, NULL, seen,
                                  (uint32_t)(2 * i + 1), low, &al, &one, &visits));
        /* the block's, each document's bands in order, each mate once */
        size_t k = 0;
        for (uint32_t b = 0; b < nb; b++) {
            const simlsh__matevec *m = &bm[(size_t)b * n + i];
            bvisits += bv[(size_t)b * n + i];
            for (size_t j = 0; j < m->n; j++) {
                if (seen[m->v[j].slot] == 2 * i + 2)
                    continue;
                seen[m->v[j].slot] = (uint32_t)(2 * i + 2);
                CHECK(k < one.n);
                CHECK(m->v[j].slot == one.v[k].slot && m->v[j].eq == one.v[k].eq);
                k++;
            }
        }
        CHECK(k == one.n);
        CHECK(bvisits == visits);
        mates += one.n;
        free(one.v);
    }
    for (size_t i = 0; i < (size_t)nb * n; i++)
        free(bm[i].v);
    free(bm);
    free(bv);
    free(bfps);
    free(seen);
    return mates;
}

static void test_blocks(uint32_t np, uint32_t bands, uint32_t rows, int isa, uint64_t seed)
{
    simlsh_index *ix = mk_index(np, bands, rows, isa, seed);
    size_t ns = simlsh__ix_nslots(ix), nl = simlsh__ix_nlists(ix);
    uint8_t *low = malloc(ns * np), *closed = calloc(ns, 1), *lists = calloc(nl + 1, 1);
    CHECK(low != NULL && closed != NULL && lists != NULL);
    simlsh__ix_low_bytes(ix, low);
    CHECK(nl > 0); /* the template's buckets are lists */
    tu_rng r = {seed + 7};
    uint32_t xs[SIMLSH__IX_BLOCK];
    size_t mates = 0, blocks = 0;
    uint32_t need = simlsh__ix_need(np, 0.676);
    for (int rep = 0; rep < 40; rep++) {
        size_t n = rep < 4 ? (size_t)1 << (rep * 2) : 1 + (size_t)tu_below(&r, SIMLSH__IX_BLOCK);
        if (n > SIMLSH__IX_BLOCK)
            n = SIMLSH__IX_BLOCK;
        /* distinct open centres */
        for (size_t i = 0; i < n; i++) {
            uint32_t x;
            int dup;
            do {
                x = (uint32_t)tu_below(&r, ns);
                dup = closed[x];
                for (size_t j = 0; j < i; j++)
                    dup |= xs[j] == x;
            } while (dup);
            xs[i] = x;
        }
        mates += check_block(ix, xs, n, need, NULL, closed, low);
        mates += check_block(ix, xs, n, need, lists, closed, low);
        blocks++;
        /* close some documents, set a list aside, now and then */
        for (int c = 0; c < 15; c++)
            closed[tu_below(&r, ns)] = 1;
        if (rep % 8 == 7)
            lists[tu_below(&r, nl)] = 1;
    }
    /* a block that meets its own members */
    for (size_t i = 0; i < SIMLSH__IX_BLOCK; i++)
        xs[i] = (uint32_t)(i * 7 % ns);
    memset(closed, 0, ns);
    mates += check_block(ix, xs, SIMLSH__IX_BLOCK, need, NULL, closed, low);
    printf("num_perm %u, %u x %u, isa %d: %zu blocks, %zu mates, %zu lists\n", np, bands, rows, isa,
           blocks, mates, nl);
    CHECK(mates > 100); /* mates met, so the scores were compared */
    /* bad calls */
    uint32_t fps0 = 0;
    simlsh__matevec mv = {NULL, 0, 0};
    uint64_t vis = 0;
    CHECK_RC(simlsh__ix_mates_band(ix, xs, SIMLSH__IX_BLOCK + 1, 0, &fps0, need, NULL, closed, low,
                                   &al, &mv, &vis),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh__ix_mates_band(ix, xs, 1, 0, &fps0, need, NULL, closed, NULL, &al, &mv, &vis),
             SIMLSH_EINVAL);
    CHECK_RC(
        simlsh__ix_mates_band(ix, xs, 1, bands, &fps0, need, NULL, closed, low, &al, &mv, &vis),
        SIMLSH_EINVAL);
    free(low);
    free(closed);
    free(lists);
    simlsh_index_free(ix);
}

/* Every ISA's low-bytes pass against a byte-by-byte count: rows of 1 to
 * 300 bytes, blocks of 0 to 64, every kind of need. */
static void test_low_pass(void)
{
    const int isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
    tu_rng r = {2727};
    static uint8_t v[300], rows[64][300];
    const uint8_t *rp[64];
    uint32_t out[64], want[64];
    int checked = 0;
    for (int rep = 0; rep < 400; rep++) {
        uint32_t n = rep % 3 == 0 ? 128 : 1 + (uint32_t)tu_below(&r, 300);
        uint32_t g = (uint32_t)tu_below(&r, 65), need = (uint32_t)tu_below(&r, n + 2);
        for (uint32_t i = 0; i < n; i++)
            v[i] = (uint8_t)tu_next(&r);
        uint32_t nw = 0;
        for (uint32_t j = 0; j < g; j++) {
            uint32_t c = 0, keep = (uint32_t)tu_below(&r, 101);
            for (uint32_t i = 0; i < n; i++) {
                rows[j][i] = tu_below(&r, 100) < keep ? v[i] : (uint8_t)tu_next(&r);
                c += rows[j][i] == v[i];
            }
            rp[j] = rows[j];
            if (c >= need)
                want[nw++] = j;
        }
        for (int i = 0; i < 3; i++) {
            if (!simlsh_isa_supported(isas[i]))
                continue;
            uint32_t k = simlsh__kernels_for(isas[i])->low_pass(v, rp, g, n, need, out);
            CHECK(k == nw && memcmp(out, want, k * sizeof *out) == 0);
            checked++;
        }
    }
    printf("low-bytes pass: %d blocks checked\n", checked);
}

int main(void)
{
    simlsh__alloc_fill(&al, NULL);
    test_low_pass();
    test_blocks(128, 16, 6, SIMLSH_ISA_AUTO, 11);
    test_blocks(100, 10, 5, SIMLSH_ISA_SCALAR, 12);
    test_blocks(200, 20, 6, SIMLSH_ISA_AUTO, 13);
    if (simlsh_isa_supported(SIMLSH_ISA_AVX2))
        test_blocks(128, 16, 6, SIMLSH_ISA_AVX2, 14);
    return tu_finish("index-mates");
}
