/* Shared by the loaders' fuzz targets. The *-sealed ones turn a mutated
 * frame back into one whose framing is valid (docs/format.md, section 3),
 * so that the fuzzer's mutations reach the contract and payload validators
 * instead of dying at the checksum; the raw ones (fuzz-index-load,
 * fuzz-forest-load, fuzz-ensemble-load) share their whole entry point,
 * FZ_LOADER_TARGET. Only the public API is used (the checksum is
 * simlsh_hash_bytes() with HASH_BITS 64 and the frame seed), so the targets
 * also check that the format document and the library agree. */
#ifndef SIMLSH_FUZZ_RESEAL_H
#define SIMLSH_FUZZ_RESEAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

#define FZ_HEAD 16
#define FZ_CONTRACT 32
#define FZ_TRAILER 8
#define FZ_OVERHEAD (FZ_HEAD + FZ_CONTRACT + FZ_TRAILER)
#define FZ_PAYLOAD (FZ_HEAD + FZ_CONTRACT)
#define FZ_CHECKSUM_SEED 0x5eedc0deu

/* Abort with a line number, so a crash report says which invariant broke. */
#define FZ_CHECK(cond) \
    do {               \
        if (!(cond))   \
            abort();   \
    } while (0)

static inline uint32_t fz_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t fz_rd64(const uint8_t *p)
{
    return (uint64_t)fz_rd32(p) | ((uint64_t)fz_rd32(p + 4) << 32);
}

static inline void fz_wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void fz_wr64(uint8_t *p, uint64_t v)
{
    fz_wr32(p, (uint32_t)v);
    fz_wr32(p + 4, (uint32_t)(v >> 32));
}

/* The frame checksum: the first 64-bit word of MurmurHash3 x64_128, seed
 * 0x5eedc0de, which is what simlsh_hash_bytes() gives with HASH_BITS 64.
 * The params live for the whole process: making them per input would cost
 * more than the load under test. */
static inline uint64_t fz_checksum(const uint8_t *buf, size_t len)
{
    static simlsh_params *p;
    if (p == NULL) {
        if (simlsh_params_new(&p, NULL) != 0 ||
            simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, 64) != 0 ||
            simlsh_params_set_int(p, SIMLSH_PARAM_SEED, FZ_CHECKSUM_SEED) != 0)
            abort();
    }
    uint64_t h;
    FZ_CHECK(simlsh_hash_bytes(&h, p, buf, len) == 0);
    return h;
}

/* Copy the input and make its framing valid: the given magic, the payload
 * length implied by the input's size and a correct checksum. Version, flags
 * and contract stay as the fuzzer made them, so their checks keep being
 * exercised. An input too short for a frame is copied unchanged. Returns a
 * malloc'ed copy (NULL when out of memory). */
static inline uint8_t *fz_reseal(const uint8_t *d, size_t n, const char magic[4])
{
    uint8_t *c = malloc(n > 0 ? n : 1);
    if (c == NULL)
        return NULL;
    if (n > 0)
        memcpy(c, d, n);
    if (n >= FZ_OVERHEAD) {
        memcpy(c, magic, 4);
        fz_wr64(c + 8, (uint64_t)(n - FZ_OVERHEAD));
        fz_wr64(c + n - FZ_TRAILER, fz_checksum(c, n - FZ_TRAILER));
    }
    return c;
}

/* Save through a save function of the form f(buf, cap, &size, obj) into a
 * malloc'ed buffer; abort when saving a valid object fails. */
#define FZ_SAVE(fn, obj, out_buf, out_len)                                           \
    do {                                                                             \
        size_t fz_sz_;                                                               \
        FZ_CHECK(fn(NULL, 0, &fz_sz_, (obj)) == 0 && fz_sz_ >= FZ_OVERHEAD);         \
        (out_buf) = malloc(fz_sz_);                                                  \
        FZ_CHECK((out_buf) != NULL);                                                 \
        size_t fz_sz2_;                                                              \
        if (fz_sz_ > 1)                                                              \
            FZ_CHECK(fn((out_buf), fz_sz_ - 1, &fz_sz2_, (obj)) == SIMLSH_EBUFSIZE); \
        FZ_CHECK(fn((out_buf), fz_sz_, &fz_sz2_, (obj)) == 0 && fz_sz2_ == fz_sz_);  \
        (out_len) = fz_sz_;                                                          \
    } while (0)

/* ---- the raw loader targets (fuzz-index-load, -forest-load, -ensemble-load) ---- */

/* Take the mode byte off the input: with bit 0 set, a copy whose payload
 * length and checksum are made valid (magic, version, flags and contract
 * stay as they are) is loaded instead, so mutations reach the payload
 * checks instead of dying at the checksum almost every time. Returns 0 when
 * there is nothing to load (no input, or no memory for the copy); *copy is
 * the caller's to free. */
static inline int fz_mode_input(const uint8_t **d, size_t *n, uint8_t **copy)
{
    *copy = NULL;
    if (*n < 1)
        return 0;
    int mode = (*d)[0] & 1;
    (*d)++;
    (*n)--;
    if (mode == 1 && *n >= FZ_OVERHEAD) {
        *copy = malloc(*n);
        if (*copy == NULL)
            return 0;
        memcpy(*copy, *d, *n);
        fz_wr64(*copy + 8, (uint64_t)(*n - FZ_OVERHEAD));
        fz_wr64(*copy + *n - FZ_TRAILER, fz_checksum(*copy, *n - FZ_TRAILER));
        *d = *copy;
    }
    return 1;
}

/* The whole LLVMFuzzerTestOneInput of a raw loader target: any bytes give
 * an object or an error (SIMLSH_ECORRUPT, SIMLSH_EUNSUPPORTED, SIMLSH_EINVAL,
 * with no object), never a crash or a hang; a loaded object goes to
 * exercise(obj, bytes, n) and is freed. */
#define FZ_LOADER_TARGET(type, load, exercise, release)                                       \
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);                                   \
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)                                    \
    {                                                                                         \
        uint8_t *copy_;                                                                       \
        if (!fz_mode_input(&d, &n, &copy_))                                                   \
            return 0;                                                                         \
        type *obj_ = NULL;                                                                    \
        int rc_ = load(&obj_, d, n, NULL);                                                    \
        if (rc_ == 0) {                                                                       \
            exercise(obj_, d, n);                                                             \
            release(obj_);                                                                    \
        } else {                                                                              \
            FZ_CHECK(obj_ == NULL && (rc_ == SIMLSH_ECORRUPT || rc_ == SIMLSH_EUNSUPPORTED || \
                                      rc_ == SIMLSH_EINVAL));                                 \
        }                                                                                     \
        free(copy_);                                                                          \
        return 0;                                                                             \
    }

/* A loaded object saves back to exactly the bytes it came from. */
#define FZ_SAVES_BACK(save, obj, bytes, n)                              \
    do {                                                                \
        uint8_t *fz_buf_;                                               \
        size_t fz_len_;                                                 \
        FZ_SAVE(save, obj, fz_buf_, fz_len_);                           \
        FZ_CHECK(fz_len_ == (n) && memcmp(fz_buf_, (bytes), (n)) == 0); \
        free(fz_buf_);                                                  \
    } while (0)

/* The band key of docs/format-index.md, section 1, written from the
 * document rather than shared with lib/, so a disagreement shows. */
static inline uint64_t fz_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

static inline uint64_t fz_band_key(const uint32_t *v, uint32_t r, uint32_t band, uint32_t seed)
{
    const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full,
                   k3 = 0x165667B19E3779F9ull;
    uint64_t h = ((((uint64_t)seed << 32) | band) * k1) ^ r;
    for (uint32_t j = 0; j < (r + 1) / 2; j++) {
        uint64_t w = v[2 * j];
        if (2 * j + 1 < r)
            w |= (uint64_t)v[2 * j + 1] << 32;
        h ^= w * k2;
        h = ((h << 31) | (h >> 33)) * k3;
    }
    return fz_fmix64(h);
}

#endif
