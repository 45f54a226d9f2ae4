/* Allocation through the caller's hooks; the default is malloc/free. */
#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static void *default_alloc(void *user, size_t size)
{
    (void)user;
    return malloc(size ? size : 1);
}

static void default_free(void *user, void *p)
{
    (void)user;
    free(p);
}

int simlsh__alloc_valid(const simlsh_allocator *a)
{
    return a == NULL || (a->alloc != NULL && a->free != NULL);
}

void simlsh__alloc_fill(simlsh_allocator *dst, const simlsh_allocator *src)
{
    if (src != NULL && src->alloc != NULL && src->free != NULL) {
        *dst = *src;
    } else {
        dst->alloc = default_alloc;
        dst->free = default_free;
        dst->user = NULL;
    }
}

/* The v2 thunks. A header keeps blocks aligned as the hooks' blocks are. */
#if SIMLSH__ALLOC_V2_HEADER
#define V2_HEADER (sizeof(max_align_t) > 16 ? sizeof(max_align_t) : 16)
#else
#define V2_HEADER 0
#endif

static void *v2_alloc(void *user, size_t size)
{
    const simlsh_allocator_v2 *v = user;
    if (size > SIZE_MAX - V2_HEADER)
        return NULL;
    unsigned char *b = v->alloc(v->user, size + V2_HEADER);
    if (b == NULL || V2_HEADER == 0)
        return b;
    memcpy(b, &size, sizeof size);
    return b + V2_HEADER;
}

/* v2 blocks freed without their size, since the start: each is a call site
 * that keeps the header in use (tests/test-alloc-sized.c). */
static atomic_ulong unsized_v2_frees;

unsigned long simlsh__alloc_unsized_v2_frees(void)
{
    return atomic_load_explicit(&unsized_v2_frees, memory_order_relaxed);
}

/* Reached only through simlsh__free(): v2 blocks without a header cannot be
 * freed without their size. */
static void v2_free(void *user, void *p)
{
    const simlsh_allocator_v2 *v = user;
    atomic_fetch_add_explicit(&unsized_v2_frees, 1, memory_order_relaxed);
#if SIMLSH__ALLOC_V2_HEADER
    unsigned char *b = (unsigned char *)p - V2_HEADER;
    size_t size;
    memcpy(&size, b, sizeof size);
    v->free(v->user, b, size + V2_HEADER);
#else
    (void)v;
    (void)p;
    abort(); /* a call site that does not pass the size: a bug */
#endif
}

int simlsh__alloc_fill_v2(simlsh_allocator *dst, const simlsh_allocator_v2 *src)
{
    if (src == NULL) {
        simlsh__alloc_fill(dst, NULL);
        return 0;
    }
    if (src->size < sizeof *src || src->alloc == NULL || src->free == NULL)
        return SIMLSH_EINVAL;
    for (size_t i = 0; i < sizeof src->reserved / sizeof src->reserved[0]; i++)
        if (src->reserved[i] != NULL)
            return SIMLSH_EINVAL;
    dst->alloc = v2_alloc;
    dst->free = v2_free;
    dst->user = (void *)(uintptr_t)src; /* never written through */
    return 0;
}

void *simlsh__malloc(const simlsh_allocator *a, size_t size)
{
    return a->alloc(a->user, size ? size : 1);
}

void *simlsh__calloc(const simlsh_allocator *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t total = n * size;
    void *p = simlsh__malloc(a, total);
    if (p != NULL && total > 0)
        memset(p, 0, total);
    return p;
}

void simlsh__free(const simlsh_allocator *a, void *p)
{
    if (p != NULL)
        a->free(a->user, p);
}

void simlsh__free_sized(const simlsh_allocator *a, void *p, size_t size)
{
    if (p == NULL)
        return;
    if (a->free != v2_free) {
        a->free(a->user, p);
        return;
    }
    const simlsh_allocator_v2 *v = a->user;
    size = size ? size : 1; /* as simlsh__malloc asked */
#if SIMLSH__ALLOC_V2_HEADER
    unsigned char *b = (unsigned char *)p - V2_HEADER;
    size_t stored;
    memcpy(&stored, b, sizeof stored);
    assert(stored == size && "simlsh__free_sized: not the size the block was allocated with");
    v->free(v->user, b, stored + V2_HEADER);
#else
    v->free(v->user, p, size);
#endif
}

/* Copy the first copy bytes of p into a new block of new_size bytes, then
 * free p, of block bytes (0: unknown). */
static void *move(const simlsh_allocator *a, void *p, size_t copy, size_t block, size_t new_size)
{
    void *q = simlsh__malloc(a, new_size);
    if (q == NULL)
        return NULL;
    if (p != NULL) {
        memcpy(q, p, copy < new_size ? copy : new_size);
        if (block)
            simlsh__free_sized(a, p, block);
        else
            simlsh__free(a, p);
    }
    return q;
}

/* old_size is what to copy, which some callers keep smaller than the block
 * (shingle.c, the one caller, moves to simlsh__realloc_sized). */
void *simlsh__realloc(const simlsh_allocator *a, void *p, size_t old_size, size_t new_size)
{
    return move(a, p, old_size, 0, new_size);
}

void *simlsh__realloc_sized(const simlsh_allocator *a, void *p, size_t copy, size_t block,
                            size_t new_size)
{
    /* block 0 would mean "unknown" to move(); a NULL p has no block. */
    return move(a, p, copy, p != NULL && block == 0 ? 1 : block, new_size);
}
