/* Private declarations shared by the library's files. Never installed. */
#ifndef SIMLSH_INTERNAL_H
#define SIMLSH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "simlsh.h"
#include "simlsh_config.h"

/* ---- params (the contract), copied by value into every object ---------- */
struct simlsh_params {
    simlsh_allocator alloc; /* always complete: defaults filled in */
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
/* A new heap copy of *src for the caller (the *_params() accessors);
 * src NULL gives SIMLSH_EINVAL with *out = NULL. */
int simlsh__params_export(simlsh_params **out, const struct simlsh_params *src);
/* Resolve bands/rows (0 = auto) into *b, *r; 0 or SIMLSH_EINVAL. */
int simlsh__params_resolve_bands(const struct simlsh_params *p, uint32_t *b, uint32_t *r);

/* ---- allocation ---------------------------------------------------------- */
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

/* ---- MurmurHash3 (our implementation) ----------------------------------- */
uint32_t simlsh__murmur3_32(const void *data, size_t len, uint32_t seed);
void simlsh__murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2]);
static inline uint64_t simlsh__fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}
/* out[i] = murmur3_32(buf + i, k, seed) for i < n. buf must be readable up
 * to buf + n + k + SIMLSH__PAD (the padding bytes' values do not matter).
 * isa is a resolved SIMLSH_ISA_SCALAR / _AVX2 / _AVX512. */
#define SIMLSH__PAD 64
void simlsh__murmur3_32_windows(uint32_t *out, const uint8_t *buf, size_t n, size_t k,
                                uint32_t seed, int isa);

/* ---- CPU ---------------------------------------------------------------- */
/* Best ISA of this CPU (SIMLSH_ISA_SCALAR/AVX2/AVX512). Cached. */
int simlsh__cpu_best_isa(void);
/* Map a params ISA (AUTO allowed) to a runnable one. */
int simlsh__isa_resolve(int isa);

/* ---- little-endian helpers ---------------------------------------------- */
static inline uint16_t simlsh__rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t simlsh__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t simlsh__rd64(const uint8_t *p)
{
    return (uint64_t)simlsh__rd32(p) | ((uint64_t)simlsh__rd32(p + 4) << 32);
}
static inline void simlsh__wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void simlsh__wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void simlsh__wr64(uint8_t *p, uint64_t v)
{
    simlsh__wr32(p, (uint32_t)v);
    simlsh__wr32(p + 4, (uint32_t)(v >> 32));
}

/* ---- serialisation framing (serialize.c, docs/format.md) ----------------- */
#define SIMLSH__HEADER_SIZE 16
#define SIMLSH__CONTRACT_SIZE 32
#define SIMLSH__TRAILER_SIZE 8
#define SIMLSH__FRAME_OVERHEAD (SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE + SIMLSH__TRAILER_SIZE)
#define SIMLSH__MAGIC_SET 0x53534C53u   /* "SLSS" little-endian */
#define SIMLSH__MAGIC_SIG 0x47534C53u   /* "SLSG" */
#define SIMLSH__MAGIC_INDEX 0x58494C53u /* "SLIX" */
#define SIMLSH__FORMAT_VERSION 1

/* Write header + contract at buf (payload_len bytes of payload follow). */
void simlsh__frame_write_head(uint8_t *buf, uint32_t magic, uint64_t payload_len,
                              const struct simlsh_params *p);
/* Append the checksum of buf[0 .. total-8) at buf + total - 8. */
void simlsh__frame_write_tail(uint8_t *buf, size_t total);
/* Validate magic, version, sizes, checksum and contract; on success fill
 * *params (with alloc) and *payload / *payload_len. */
int simlsh__frame_read(const uint8_t *buf, size_t len, uint32_t magic,
                       struct simlsh_params *params, const simlsh_allocator *alloc,
                       const uint8_t **payload, uint64_t *payload_len);

/* ---- shingler: text -> shingle hashes (shingle.c) ------------------------ */
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

/* ---- objects' private views needed across files -------------------------- */
struct simlsh_shingleset {
    struct simlsh_params params;
    uint64_t fingerprint;
    uint64_t *hashes; /* sorted unique in [0, count); pending appended after */
    size_t count;     /* sorted unique prefix */
    size_t len;       /* count + pending (document in progress / features) */
    size_t cap;
    int in_doc;
    simlsh__shingler *shingler; /* lazily created */
};

struct simlsh_signature {
    struct simlsh_params params;
    uint64_t fingerprint;
    uint32_t num_perm;
    int in_doc;
    int isa; /* resolved */
    int empty; /* nothing added (all raw rows 0xFFFFFFFF and no input) */
    uint32_t *raw;       /* per-row minima; 0xFFFFFFFF = empty bin */
    uint32_t *values;    /* densified, what estimates and bands use */
    uint32_t *saved;     /* raw copy at begin(), for abort and errors */
    int saved_empty;
    uint64_t *coef; /* classic: a[i], b[i] interleaved (2*num_perm), owned */
    simlsh__shingler *shingler; /* lazily created */
};

/* minhash.c: update raw rows with hashes, and finalise values. */
void simlsh__minhash_add(struct simlsh_signature *sig, const uint64_t *h, size_t n);
void simlsh__minhash_add32(struct simlsh_signature *sig, const uint32_t *h, size_t n);
void simlsh__minhash_finish(struct simlsh_signature *sig);
int simlsh__minhash_init(struct simlsh_signature *sig);

/* Band key of values[0..rows) for band number band (docs/format.md). */
uint64_t simlsh__band_key(const uint32_t *values, uint32_t rows, uint32_t band, uint32_t seed);

#define SIMLSH__EMPTY_VALUE 0xFFFFFFFFu

#endif
