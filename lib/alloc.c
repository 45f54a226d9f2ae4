/* Allocation through the caller's hooks; the default is malloc/free. */
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

/* The v2 thunks. Blocks are the hooks' own, with no header: every free
 * passes the size it was allocated with (simlsh__free_sized). */
static void *v2_alloc(void *user, size_t size)
{
    const simlsh_allocator_v2 *v = user;
    return v->alloc(v->user, size);
}

/* v2 blocks handed to the three-word free hook, which has no size: only a
 * call of a->free() that bypasses simlsh__free_sized() gets here. */
static atomic_ulong unsized_v2_frees;

unsigned long simlsh__alloc_unsized_v2_frees(void)
{
    return atomic_load_explicit(&unsized_v2_frees, memory_order_relaxed);
}

/* Without the size the caller's hook cannot be called: the block is kept
 * (a leak, not a crash) and counted, which fails tests/test-alloc-sized.c. */
static void v2_free(void *user, void *p)
{
    (void)user;
    (void)p;
    atomic_fetch_add_explicit(&unsized_v2_frees, 1, memory_order_relaxed);
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

void simlsh__free_sized(const simlsh_allocator *a, void *p, size_t size)
{
    if (p == NULL)
        return;
    if (a->free != v2_free) {
        a->free(a->user, p);
        return;
    }
    const simlsh_allocator_v2 *v = a->user;
    v->free(v->user, p, size ? size : 1); /* as simlsh__malloc asked */
}

void *simlsh__realloc_sized(const simlsh_allocator *a, void *p, size_t copy, size_t block,
                            size_t new_size)
{
    void *q = simlsh__malloc(a, new_size);
    if (q == NULL)
        return NULL;
    if (p != NULL) {
        memcpy(q, p, copy < new_size ? copy : new_size);
        simlsh__free_sized(a, p, block);
    }
    return q;
}
