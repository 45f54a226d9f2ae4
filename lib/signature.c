/* Signatures: raw MinHash rows (mergeable) plus their densified values. */
#include <string.h>

#include "alloc.h"
#include "bandkey.h"
#include "cpu.h"
#include "frame.h"
#include "handle.h"
#include "le.h"
#include "minhash.h"
#include "minhash_simd.h"
#include "shingleset.h"
#include "signature.h"

static int sig_alloc(simlsh_signature **out, const struct simlsh_params *params)
{
    simlsh_signature *s = simlsh__calloc(&params->alloc, 1, sizeof *s);
    if (s == NULL)
        return SIMLSH_ENOMEM;
    s->tag = SIMLSH__TAG_SIGNATURE;
    s->params = *params;
    s->num_perm = (uint32_t)params->num_perm;
    s->fingerprint = simlsh__fingerprint(params, SIMLSH_SCOPE_SIGNATURE);
    s->kern = simlsh__kernels_for(params->isa);
    s->empty = 1;
    size_t bytes = s->num_perm * sizeof(uint32_t);
    s->raw = simlsh__malloc(&params->alloc, bytes);
    s->values =
        params->scheme == SIMLSH_SCHEME_OPH ? simlsh__malloc(&params->alloc, bytes) : s->raw;
    if (s->raw == NULL || s->values == NULL) {
        simlsh_signature_free(s);
        return SIMLSH_ENOMEM;
    }
    memset(s->raw, 0xff, bytes);
    memset(s->values, 0xff, bytes);
    *out = s;
    return 0;
}

int simlsh_signature_new(simlsh_signature **out, const simlsh_params *params)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    if (params == NULL)
        return SIMLSH_EINVAL;
    int rc = simlsh__params_check_shingling(params);
    if (rc < 0)
        return rc;
    return sig_alloc(out, params);
}

void simlsh_signature_free(simlsh_signature *sig)
{
    if (!simlsh__handle_is(sig, SIMLSH__TAG_SIGNATURE))
        return;
    if (sig == NULL)
        return;
    simlsh_allocator a = sig->params.alloc;
    size_t bytes = sig->num_perm * sizeof(uint32_t);
    if (sig->values != sig->raw)
        simlsh__free_sized(&a, sig->values, bytes);
    simlsh__free_sized(&a, sig->raw, bytes);
    simlsh__free_sized(&a, sig->saved, bytes);
    simlsh__free_sized(&a, sig->coef, 2 * (size_t)sig->num_perm * sizeof *sig->coef);
    simlsh__shingler_free(sig->shingler);
    sig->tag = SIMLSH__TAG_DEAD;
    simlsh__free_sized(&a, sig, sizeof *sig);
}

int simlsh_signature_copy(simlsh_signature **out, const simlsh_signature *src)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_SIGNATURE(src);
    if (src == NULL)
        return SIMLSH_EINVAL;
    if (src->in_doc)
        return SIMLSH_ESTATE;
    simlsh_signature *s;
    int rc = sig_alloc(&s, &src->params);
    if (rc < 0)
        return rc;
    memcpy(s->raw, src->raw, s->num_perm * sizeof *s->raw);
    memcpy(s->values, src->values, s->num_perm * sizeof *s->values);
    s->empty = src->empty;
    *out = s;
    return 0;
}

/* The signature's rows as minhash.c sees them. */
static simlsh__rows rows_of(simlsh_signature *sig)
{
    return (simlsh__rows){sig->kern,        &sig->params.alloc, sig->params.scheme,
                          sig->params.seed, sig->num_perm,      sig->raw,
                          sig->values,      &sig->coef,         &sig->empty};
}

static int minhash_init(simlsh_signature *sig)
{
    simlsh__rows r = rows_of(sig);
    return simlsh__minhash_init(&r);
}

static void minhash_finish(simlsh_signature *sig)
{
    simlsh__rows r = rows_of(sig);
    simlsh__minhash_finish(&r);
}

static int sink64(void *ctx, const uint64_t *h, size_t n)
{
    simlsh__rows r = rows_of(ctx);
    simlsh__minhash_add(&r, h, n);
    return 0;
}

static int sink32(void *ctx, const uint32_t *h, size_t n)
{
    simlsh__rows r = rows_of(ctx);
    simlsh__minhash_add32(&r, h, n);
    return 0;
}

int simlsh_signature_begin(simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    int rc = minhash_init(sig);
    if (rc < 0)
        return rc;
    if (sig->shingler == NULL) {
        rc = simlsh__shingler_new(&sig->shingler, &sig->params);
        if (rc < 0)
            return rc;
    }
    if (sig->saved == NULL) {
        sig->saved = simlsh__malloc(&sig->params.alloc, sig->num_perm * sizeof *sig->saved);
        if (sig->saved == NULL)
            return SIMLSH_ENOMEM;
    }
    memcpy(sig->saved, sig->raw, sig->num_perm * sizeof *sig->raw);
    sig->saved_empty = sig->empty;
    simlsh__shingler_begin(sig->shingler);
    sig->in_doc = 1;
    return 0;
}

static void restore(simlsh_signature *sig)
{
    memcpy(sig->raw, sig->saved, sig->num_perm * sizeof *sig->raw);
    sig->empty = sig->saved_empty;
    sig->in_doc = 0;
}

int simlsh_signature_feed(simlsh_signature *sig, const void *data, size_t len)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL || (data == NULL && len > 0))
        return SIMLSH_EINVAL;
    if (!sig->in_doc)
        return SIMLSH_ESTATE;
    int rc = simlsh__shingler_feed(sig->shingler, data, len, sink64,
                                   sig->params.hash_bits == 32 ? sink32 : NULL, sig);
    if (rc < 0 && rc != SIMLSH_EUTF8)
        restore(sig); /* out of memory: the document is abandoned */
    return rc;
}

int simlsh_signature_end(simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    if (!sig->in_doc)
        return SIMLSH_ESTATE;
    int rc = simlsh__shingler_end(sig->shingler, sink64,
                                  sig->params.hash_bits == 32 ? sink32 : NULL, sig);
    if (rc == SIMLSH_EUTF8)
        return rc; /* still open: the caller may abort */
    if (rc < 0) {
        restore(sig);
        return rc;
    }
    sig->in_doc = 0;
    minhash_finish(sig);
    return 0;
}

int simlsh_signature_abort(simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    if (!sig->in_doc)
        return SIMLSH_ESTATE;
    restore(sig);
    return 0;
}

int simlsh_signature_add_text(simlsh_signature *sig, const void *text, size_t len)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL || (text == NULL && len > 0))
        return SIMLSH_EINVAL;
    int rc = simlsh_signature_begin(sig);
    if (rc < 0)
        return rc;
    rc = simlsh_signature_feed(sig, text, len);
    if (rc == 0)
        rc = simlsh_signature_end(sig);
    if (rc < 0 && sig->in_doc)
        restore(sig);
    return rc;
}

int simlsh_signature_add_features(simlsh_signature *sig, const uint64_t *features, size_t n)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL || (features == NULL && n > 0))
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    int rc = minhash_init(sig);
    if (rc < 0)
        return rc;
    simlsh__rows r = rows_of(sig);
    simlsh__minhash_add(&r, features, n);
    minhash_finish(sig);
    return 0;
}

int simlsh_signature_add_shingleset(simlsh_signature *sig, const simlsh_shingleset *set)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    SIMLSH__CHECK_SHINGLESET(set);
    if (sig == NULL || set == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc || set->in_doc)
        return SIMLSH_ESTATE;
    if (simlsh__fingerprint(&sig->params, SIMLSH_SCOPE_SHINGLES) != set->fingerprint)
        return SIMLSH_EMISMATCH;
    return simlsh_signature_add_features(sig, set->hashes, set->count);
}

int simlsh_signature_merge(simlsh_signature *dst, const simlsh_signature *src)
{
    SIMLSH__CHECK_SIGNATURE(dst);
    SIMLSH__CHECK_SIGNATURE(src);
    if (dst == NULL || src == NULL)
        return SIMLSH_EINVAL;
    if (dst->in_doc || src->in_doc)
        return SIMLSH_ESTATE;
    if (dst->fingerprint != src->fingerprint)
        return SIMLSH_EMISMATCH;
    for (uint32_t i = 0; i < dst->num_perm; i++)
        if (src->raw[i] < dst->raw[i])
            dst->raw[i] = src->raw[i];
    dst->empty = dst->empty && src->empty;
    minhash_finish(dst);
    return 0;
}

int simlsh_signature_clear(simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    memset(sig->raw, 0xff, sig->num_perm * sizeof *sig->raw);
    memset(sig->values, 0xff, sig->num_perm * sizeof *sig->values);
    sig->empty = 1;
    sig->in_doc = 0;
    return 0;
}

int simlsh_signature_jaccard(double *out, const simlsh_signature *a, const simlsh_signature *b)
{
    SIMLSH__CHECK_SIGNATURE(a);
    SIMLSH__CHECK_SIGNATURE(b);
    if (out == NULL || a == NULL || b == NULL)
        return SIMLSH_EINVAL;
    if (a->in_doc || b->in_doc)
        return SIMLSH_ESTATE;
    if (a->fingerprint != b->fingerprint)
        return SIMLSH_EMISMATCH;
    if (a->empty || b->empty) {
        *out = a->empty && b->empty ? 1.0 : 0.0;
        return 0;
    }
    uint32_t eq = 0;
    for (uint32_t i = 0; i < a->num_perm; i++)
        eq += a->values[i] == b->values[i];
    *out = (double)eq / (double)a->num_perm;
    return 0;
}

int simlsh_signature_is_empty(const simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    return sig->empty ? 1 : 0;
}

int simlsh_signature_num_perm(const simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (sig == NULL)
        return SIMLSH_EINVAL;
    return (int)sig->num_perm;
}

int simlsh_signature_values(uint32_t *buf, size_t cap, size_t *count, const simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (count == NULL || sig == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    *count = sig->num_perm;
    if (buf == NULL)
        return 0;
    if (cap < sig->num_perm)
        return SIMLSH_EBUFSIZE;
    memcpy(buf, sig->values, sig->num_perm * sizeof *buf);
    return 0;
}

int simlsh_signature_params(simlsh_params **out, const simlsh_signature *sig)
{
    if (out != NULL)
        *out = NULL;
    SIMLSH__CHECK_SIGNATURE(sig);
    return simlsh__params_export(out, &sig->params);
}

int simlsh_signature_fingerprint(uint64_t *out, const simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (out == NULL || sig == NULL)
        return SIMLSH_EINVAL;
    *out = sig->fingerprint;
    return 0;
}

/* Payload: u32 num_perm, u32 flags (bit 0: empty), num_perm u32 raw rows. */
int simlsh_signature_save(void *buf, size_t cap, size_t *size, const simlsh_signature *sig)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (size == NULL || sig == NULL)
        return SIMLSH_EINVAL;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    uint8_t *q;
    int rc = simlsh__frame_begin(buf, cap, size, 8 + 4 * (uint64_t)sig->num_perm, SIMLSH__MAGIC_SIG,
                                 &sig->params, &q);
    if (rc <= 0)
        return rc;
    simlsh__wr32(q, sig->num_perm);
    simlsh__wr32(q + 4, sig->empty ? 1u : 0u);
    for (uint32_t i = 0; i < sig->num_perm; i++)
        simlsh__wr32(q + 8 + 4 * i, sig->raw[i]);
    simlsh__frame_write_tail(buf, *size);
    return 0;
}

int simlsh_signature_load(simlsh_signature **out, const void *buf, size_t len,
                          const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    struct simlsh_params p;
    const uint8_t *pl;
    uint64_t plen;
    int rc = simlsh__frame_open(buf, len, alloc, SIMLSH__MAGIC_SIG, &p, &pl, &plen);
    if (rc < 0)
        return rc;
    if (plen < 8)
        return SIMLSH_ECORRUPT;
    uint32_t P = simlsh__rd32(pl), flags = simlsh__rd32(pl + 4);
    if (P != (uint32_t)p.num_perm || plen != 8 + 4 * (uint64_t)P || flags > 1)
        return SIMLSH_ECORRUPT;
    /* an empty signature has only empty rows; a non-empty one has a value */
    int seen_value = 0;
    for (uint32_t i = 0; i < P; i++)
        seen_value |= simlsh__rd32(pl + 8 + 4 * i) != SIMLSH__EMPTY_VALUE;
    if (seen_value == (flags == 1))
        return SIMLSH_ECORRUPT;
    simlsh_signature *s;
    rc = sig_alloc(&s, &p);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < P; i++)
        s->raw[i] = simlsh__rd32(pl + 8 + 4 * i);
    s->empty = flags == 1;
    minhash_finish(s);
    *out = s;
    return 0;
}

int simlsh_signature_band_keys(uint64_t *keys, size_t cap, const simlsh_signature *sig,
                               uint32_t bands, uint32_t rows)
{
    SIMLSH__CHECK_SIGNATURE(sig);
    if (keys == NULL || sig == NULL || bands == 0 || rows == 0 ||
        (uint64_t)bands * rows > sig->num_perm)
        return SIMLSH_EINVAL;
    if (cap < bands)
        return SIMLSH_EBUFSIZE;
    if (sig->in_doc)
        return SIMLSH_ESTATE;
    if (sig->empty)
        return SIMLSH_EEMPTY;
    for (uint32_t i = 0; i < bands; i++)
        keys[i] = simlsh__band_key(sig->values + (size_t)i * rows, rows, i, sig->params.seed);
    return 0;
}

/* ---- signatures by value ------------------------------------------------------ */

/* The values become the raw rows: densified values have no empty row, so
 * densifying them again changes nothing and values() gives them back. */
int simlsh_signature_from_values(simlsh_signature **out, const simlsh_params *params,
                                 const uint32_t *values, size_t n)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    SIMLSH__CHECK_PARAMS(params);
    if (params == NULL || values == NULL || n != (size_t)params->num_perm)
        return SIMLSH_EINVAL;
    /* values() gives the empty mark in every row or in none: a mix is
     * neither an empty signature nor a densified one. */
    size_t marks = simlsh__empty_marks(values, n);
    if (marks != 0 && marks != n)
        return SIMLSH_EINVAL;
    int rc = simlsh__params_check_shingling(params);
    if (rc < 0)
        return rc;
    simlsh_signature *s;
    rc = sig_alloc(&s, params);
    if (rc < 0)
        return rc;
    memcpy(s->raw, values, n * sizeof *values);
    s->empty = marks == n;
    minhash_finish(s);
    *out = s;
    return 0;
}
