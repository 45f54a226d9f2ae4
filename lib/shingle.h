/* The shingler: text -> shingle hashes (shingle.c). Object layer; the
 * shingle set and the signature each own one. */
#ifndef SIMLSH_SHINGLE_H
#define SIMLSH_SHINGLE_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

/* A sink consumes hashes in batches. Returns 0 or a negative code. */
typedef int (*simlsh__sink_fn)(void *ctx, const uint64_t *hashes, size_t n);
/* Sink for 32-bit shingle hashes (may be NULL): with HASH_BITS 32 the
 * shingler hands over the murmur3_32 values without widening them. */
typedef int (*simlsh__sink32_fn)(void *ctx, const uint32_t *hashes, size_t n);

typedef struct simlsh__shingler simlsh__shingler;
int simlsh__shingler_new(simlsh__shingler **out, const struct simlsh_params *p);
void simlsh__shingler_free(simlsh__shingler *s);
void simlsh__shingler_begin(simlsh__shingler *s);
/* Validate and process a chunk; with REJECT policy invalid input returns
 * SIMLSH_EUTF8 before any hash is emitted for that chunk. */
int simlsh__shingler_feed(simlsh__shingler *s, const uint8_t *data, size_t len,
                          simlsh__sink_fn sink, simlsh__sink32_fn sink32, void *ctx);
int simlsh__shingler_end(simlsh__shingler *s, simlsh__sink_fn sink, simlsh__sink32_fn sink32,
                         void *ctx);
/* Reject-policy pre-check for end(): would end() fail with EUTF8? */
int simlsh__shingler_end_check(const simlsh__shingler *s);

#endif
