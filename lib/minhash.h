/* The row updates and densification of a signature (minhash.c), called by
 * signature.c with a view of its rows, so minhash.c knows no signature
 * object. Object layer; the per-element kernels they call through cpu.h's
 * table are minhash_simd.h's. */
#ifndef SIMLSH_MINHASH_H
#define SIMLSH_MINHASH_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

struct simlsh__kernels;

/* The rows of one signature as minhash.c reads and updates them; coef and
 * empty point at the owner's fields. */
typedef struct {
    const struct simlsh__kernels *kern;
    const simlsh_allocator *alloc;
    int scheme;
    uint32_t seed, num_perm;
    uint32_t *raw;    /* per-row minima; 0xFFFFFFFF = empty bin */
    uint32_t *values; /* densified, what estimates and bands use */
    uint64_t **coef;  /* classic: a[i], b[i] interleaved, made by init() */
    int *empty;       /* nothing added */
} simlsh__rows;

/* Classic scheme: the coefficients, once per signature (0 or ENOMEM). */
int simlsh__minhash_init(const simlsh__rows *r);
/* Update the raw rows with n hashes (64-bit, or 32-bit shingle hashes). */
void simlsh__minhash_add(const simlsh__rows *r, const uint64_t *h, size_t n);
void simlsh__minhash_add32(const simlsh__rows *r, const uint32_t *h, size_t n);
/* The values from the raw rows (OPH: densified). */
void simlsh__minhash_finish(const simlsh__rows *r);

#endif
