/* Allocation through the caller's simlsh_allocator (alloc.c). Util layer.
 *
 * Every object stores a three-word simlsh_allocator. A simlsh_allocator_v2
 * set on params is reached through it: alloc and free are the v2 thunks of
 * alloc.c and user points to the caller's v2 struct (which is why that
 * struct must outlive the objects, see simlsh_params_set_allocator()).
 *
 * Free with simlsh__free_sized() wherever the size is known: the v2 free
 * hook gets the size, and a v2 path without a size header needs every call
 * site to pass it. While some call sites still use simlsh__free(), v2
 * blocks carry a small size header (SIMLSH__ALLOC_V2_HEADER); with it, in
 * builds without NDEBUG, simlsh__free_sized() checks the size it is given
 * against the header, so a wrong size fails the test suite. */
#ifndef SIMLSH_ALLOC_H
#define SIMLSH_ALLOC_H

#include <stddef.h>

#include "simlsh.h"

#ifndef SIMLSH__ALLOC_V2_HEADER
#define SIMLSH__ALLOC_V2_HEADER 1
#endif

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
/* Free a block whose size the caller does not know. Works for v1 hooks, and
 * for v2 hooks only while SIMLSH__ALLOC_V2_HEADER is 1. */
void simlsh__free(const simlsh_allocator *a, void *p);
/* How many v2 blocks simlsh__free() has freed in this process: what stands
 * between the v2 path and SIMLSH__ALLOC_V2_HEADER 0 (tests only). */
unsigned long simlsh__alloc_unsized_v2_frees(void);
/* Grow a block from old_size to new_size bytes (copy + free). NULL on failure,
 * leaving the old block alone. */
void *simlsh__realloc(const simlsh_allocator *a, void *p, size_t old_size, size_t new_size);
/* The same for a block p of block bytes (as allocated), of which the first
 * copy are kept: the old block is freed with its size. */
void *simlsh__realloc_sized(const simlsh_allocator *a, void *p, size_t copy, size_t block,
                            size_t new_size);

#endif
