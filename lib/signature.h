/* The signature object's layout: signature.c makes and serialises it,
 * minhash.c (minhash.h) updates its rows, the index and the forest read its
 * values. Object layer. */
#ifndef SIMLSH_SIGNATURE_H
#define SIMLSH_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "params.h"
#include "shingle.h"

struct simlsh_signature {
    uint32_t tag; /* SIMLSH__TAG_SIGNATURE (handle.h) */
    struct simlsh_params params;
    uint64_t fingerprint;
    uint32_t num_perm;
    int in_doc;
    const struct simlsh__kernels *kern; /* resolved at creation */
    int empty;                          /* nothing added (all raw rows 0xFFFFFFFF and no input) */
    uint32_t *raw;                      /* per-row minima; 0xFFFFFFFF = empty bin */
    uint32_t *values;                   /* densified, what estimates and bands use */
    uint32_t *saved;                    /* raw copy at begin(), for abort and errors */
    int saved_empty;
    uint64_t *coef;             /* classic: a[i], b[i] interleaved (2*num_perm), owned */
    simlsh__shingler *shingler; /* lazily created */
};

/* How many of values[0..n) are the empty mark 0xFFFFFFFF. A signature's
 * values hold it in every entry (empty) or in none: any other count is
 * neither (simlsh_signature_from_values(), simlsh_index_query_values()). */
static inline size_t simlsh__empty_marks(const uint32_t *values, size_t n)
{
    size_t marks = 0;
    for (size_t i = 0; i < n; i++)
        marks += values[i] == 0xFFFFFFFFu;
    return marks;
}

#endif
