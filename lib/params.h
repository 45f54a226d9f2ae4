/* The hash contract (params.c): copied by value into every object. Contract
 * layer. */
#ifndef SIMLSH_PARAMS_H
#define SIMLSH_PARAMS_H

#include <stdint.h>

#include "handle.h"
#include "simlsh.h"

struct simlsh_params {
    uint32_t tag;           /* SIMLSH__TAG_PARAMS (handle.h), also in copies inside objects */
    simlsh_allocator alloc; /* for objects built from these; always complete */
    simlsh_allocator self;  /* what a heap params object was allocated with */
    int32_t unit;
    int32_t k;
    int32_t normalize;
    int32_t utf8_policy;
    uint32_t seed;
    int32_t hash_bits;
    int32_t num_perm;
    int32_t scheme;
    int32_t bands;
    int32_t rows;
    int32_t store_signatures;
    int32_t isa;
    double threshold;
    double fp_weight;
    double fn_weight;
};

#define SIMLSH__MAX_K 64
#define SIMLSH__MAX_PERM 1024
#define SIMLSH__UNICODE_FLAGS (SIMLSH_NORM_CASEFOLD | SIMLSH_NORM_NFKC)

void simlsh__params_defaults(struct simlsh_params *p, const simlsh_allocator *alloc);
/* Check cross-key rules that single setters cannot (e.g. Unicode flags with
 * the byte unit). Returns 0 or a negative code. */
int simlsh__params_check_shingling(const struct simlsh_params *p);
uint64_t simlsh__fingerprint(const struct simlsh_params *p, int scope);
/* A new heap copy of *src for the caller (simlsh_params_copy and the
 * *_params() accessors); src NULL gives SIMLSH_EINVAL with *out = NULL. */
int simlsh__params_export(simlsh_params **out, const struct simlsh_params *src);
/* Resolve bands/rows (0 = auto) into *b, *r; 0 or SIMLSH_EINVAL. */
int simlsh__params_resolve_bands(const struct simlsh_params *p, uint32_t *b, uint32_t *r);

#endif
