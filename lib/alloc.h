/* Allocation through the caller's simlsh_allocator (alloc.c). Util layer. */
#ifndef SIMLSH_ALLOC_H
#define SIMLSH_ALLOC_H

#include <stddef.h>

#include "simlsh.h"

void simlsh__alloc_fill(simlsh_allocator *dst, const simlsh_allocator *src); /* NULL -> default */
int simlsh__alloc_valid(const simlsh_allocator *a);
void *simlsh__malloc(const simlsh_allocator *a, size_t size);
void *simlsh__calloc(const simlsh_allocator *a, size_t n, size_t size);
void simlsh__free(const simlsh_allocator *a, void *p);
/* Grow a block from old_size to new_size bytes (copy + free). NULL on failure,
 * leaving the old block alone. */
void *simlsh__realloc(const simlsh_allocator *a, void *p, size_t old_size, size_t new_size);
/* Grow (*arr, *cap) of elements of size elem to hold at least need elements.
 * 0 or SIMLSH_ENOMEM (array unchanged). */
int simlsh__grow(const simlsh_allocator *a, void **arr, size_t *cap, size_t need, size_t elem);

#endif
