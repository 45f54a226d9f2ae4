/* Allocation through the caller's simlsh_allocator (alloc.c). Util layer.
 *
 * Every object stores a three-word simlsh_allocator. A simlsh_allocator_v2
 * set on params is reached through it: alloc and free are the v2 thunks of
 * alloc.c and user points to the caller's v2 struct (which is why that
 * struct must outlive the objects, see simlsh_params_set_allocator()).
 *
 * Every free passes the size the block was allocated with
 * (simlsh__free_sized): the v2 free hook gets it, and v2 blocks carry no
 * header. There is deliberately no unsized free; tests/test-alloc-sized.c
 * checks every size through recording hooks. */
#ifndef SIMLSH_ALLOC_H
#define SIMLSH_ALLOC_H

#include <stddef.h>

#include "simlsh.h"

void simlsh__alloc_fill(simlsh_allocator *dst, const simlsh_allocator *src); /* NULL -> default */
int simlsh__alloc_valid(const simlsh_allocator *a);
/* Check a v2 struct (size, hooks, zero reserved words) and make the
 * three-word form that refers to it; src NULL gives malloc/free.
 * 0 or SIMLSH_EINVAL (dst unchanged). */
int simlsh__alloc_fill_v2(simlsh_allocator *dst, const simlsh_allocator_v2 *src);
void *simlsh__malloc(const simlsh_allocator *a, size_t size);
void *simlsh__calloc(const simlsh_allocator *a, size_t n, size_t size);
/* Free a block of size bytes (as given to simlsh__malloc, or n * size for
 * simlsh__calloc); NULL is a no-op. */
void simlsh__free_sized(const simlsh_allocator *a, void *p, size_t size);
/* v2 blocks that reached the three-word free hook, which has no size, and
 * were therefore leaked: a call of a->free() outside alloc.c (tests only). */
unsigned long simlsh__alloc_unsized_v2_frees(void);
/* Move a block p of block bytes (as allocated) to a new one of new_size
 * bytes, keeping its first copy bytes; the old block is freed with its
 * size. NULL on failure, leaving the old block alone. */
void *simlsh__realloc_sized(const simlsh_allocator *a, void *p, size_t copy, size_t block,
                            size_t new_size);

#endif
