/* The row updates and densification of a signature (minhash.c), called by
 * signature.c. Object layer; the per-element kernels they call through
 * cpu.h's table are minhash_simd.h's. */
#ifndef SIMLSH_MINHASH_H
#define SIMLSH_MINHASH_H

#include <stddef.h>
#include <stdint.h>

#include "signature.h"

/* Classic scheme: the coefficients, once per signature (0 or ENOMEM). */
int simlsh__minhash_init(struct simlsh_signature *sig);
/* Update the raw rows with n hashes (64-bit, or 32-bit shingle hashes). */
void simlsh__minhash_add(struct simlsh_signature *sig, const uint64_t *h, size_t n);
void simlsh__minhash_add32(struct simlsh_signature *sig, const uint32_t *h, size_t n);
/* The values from the raw rows (OPH: densified). */
void simlsh__minhash_finish(struct simlsh_signature *sig);

#endif
