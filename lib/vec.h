/* One growable array for every list that grows: a pointer v to n used
 * elements of cap, declared with SIMLSH__VEC(type) or as any struct with
 * those three members (so that a vector can carry extra fields). Storage
 * may start in a fixed array of the caller, e.g. on the stack so that
 * small uses never allocate; that array is never freed. Growth at least
 * doubles the capacity, so n pushes cost O(n) copies, and takes exactly
 * the size asked for when that is more (reading a file of known size). */
#ifndef SIMLSH_VEC_H
#define SIMLSH_VEC_H

#include "checked.h"
#include <string.h>

#include "alloc.h"

#define SIMLSH__VEC(type) \
    struct {              \
        type *v;          \
        size_t n, cap;    \
    }

#define SIMLSH__VEC_MIN_CAP 16

/* Grow (*vp, *cap) to max(need, 2 * *cap, SIMLSH__VEC_MIN_CAP) elements of
 * elem bytes, keeping the first n. vp is the address of the vector's
 * element pointer; local is the caller's fixed array, or NULL. 0 or
 * SIMLSH_ENOMEM (then nothing changed). */
static inline int simlsh__vec_grow(const simlsh_allocator *al, void *vp, size_t n, size_t *cap,
                                   size_t need, size_t elem, const void *local)
{
    size_t ncap = *cap <= SIZE_MAX / 2 ? *cap * 2 : SIZE_MAX, bytes;
    if (ncap < SIMLSH__VEC_MIN_CAP)
        ncap = SIMLSH__VEC_MIN_CAP;
    if (ncap < need)
        ncap = need;
    if (!simlsh__mul_ok(ncap, elem, &bytes))
        return SIMLSH_ENOMEM;
    void *nv = simlsh__malloc(al, bytes), *old;
    if (nv == NULL)
        return SIMLSH_ENOMEM;
    /* Through memcpy: vp is the address of a typed pointer (T **), which
     * must not be written through a void ** lvalue. */
    memcpy(&old, vp, sizeof old);
    if (n > 0)
        memcpy(nv, old, n * elem);
    if (old != local)
        simlsh__free_sized(al, old, *cap * elem);
    memcpy(vp, &nv, sizeof nv);
    *cap = ncap;
    return 0;
}

/* Make room for need elements of vector vec (a pointer). 0 or SIMLSH_ENOMEM
 * (vector unchanged). */
#define simlsh__vec_reserve(al, vec, need, local)                                            \
    ((need) <= (vec)->cap ? 0                                                                \
                          : simlsh__vec_grow((al), &(vec)->v, (vec)->n, &(vec)->cap, (need), \
                                             sizeof *(vec)->v, (local)))

/* A vector that starts in an array of its own of len elements (so on the
 * stack when the vector is) and knows its allocator. */
#define SIMLSH__VEC_LOCAL(type, len)   \
    struct {                           \
        type *v;                       \
        size_t n, cap;                 \
        const simlsh_allocator *alloc; \
        type local[len];               \
    }

#define simlsh__lvec_init(vec, al)          \
    ((vec)->v = (vec)->local, (vec)->n = 0, \
     (vec)->cap = sizeof(vec)->local / sizeof(vec)->local[0], (vec)->alloc = (al))
#define simlsh__lvec_reserve(vec, need) \
    simlsh__vec_reserve((vec)->alloc, (vec), (need), (vec)->local)
#define simlsh__lvec_free(vec) simlsh__vec_free((vec)->alloc, (vec), (vec)->local)

/* Free vector vec's storage unless it is the fixed array local. */
#define simlsh__vec_free(al, vec, local)                                       \
    do {                                                                       \
        if ((vec)->v != (local))                                               \
            simlsh__free_sized((al), (vec)->v, (vec)->cap * sizeof *(vec)->v); \
    } while (0)

#endif
