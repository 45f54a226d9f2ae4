/* Allocation through the caller's hooks; the default is malloc/free. */
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

void *simlsh__realloc(const simlsh_allocator *a, void *p, size_t old_size, size_t new_size)
{
    void *q = simlsh__malloc(a, new_size);
    if (q == NULL)
        return NULL;
    if (p != NULL) {
        memcpy(q, p, old_size < new_size ? old_size : new_size);
        simlsh__free(a, p);
    }
    return q;
}

int simlsh__grow(const simlsh_allocator *a, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return SIMLSH_ENOMEM;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return SIMLSH_ENOMEM;
    void *q = simlsh__realloc(a, *arr, *cap * elem, ncap * elem);
    if (q == NULL)
        return SIMLSH_ENOMEM;
    *arr = q;
    *cap = ncap;
    return 0;
}
