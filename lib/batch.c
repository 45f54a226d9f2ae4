/* Signing and band keys of many documents in one call, into flat
 * matrices: what numpy, Go and Node batches use instead of three calls per
 * document. Each worker signs through one public signature object of its
 * own, so every row has exactly the bits of simlsh_signature_add_text(). */
#include <string.h>

#include "alloc.h"
#include "bandkey.h"
#include "params.h"
#include "pool.h"
#include "signature.h"

/* Documents per unit: enough to make claiming a unit cheap, few enough
 * that uneven document sizes still spread over the threads. */
#define SIGN_CHUNK 32
/* Bytes of text below which another thread costs more than it saves. */
#define BYTES_PER_THREAD ((size_t)1 << 20)

typedef struct {
    uint32_t *values;
    uint8_t *empty;
    const void *const *texts;
    const size_t *lens;
    size_t n;
    uint32_t num_perm;
    simlsh_signature **sig; /* one per worker */
} sign_job;

static int sign_unit(void *ctx, simlsh__par *par, uint32_t worker, size_t unit)
{
    sign_job *j = ctx;
    simlsh_signature *sig = j->sig[worker];
    size_t lo = unit * SIGN_CHUNK, hi = lo + SIGN_CHUNK < j->n ? lo + SIGN_CHUNK : j->n;
    for (size_t i = lo; i < hi; i++) {
        if (j->texts[i] == NULL && j->lens[i] > 0)
            return SIMLSH_EINVAL;
        simlsh_signature_clear(sig);
        int rc = simlsh_signature_add_text(sig, j->texts[i], j->lens[i]);
        if (rc < 0)
            return rc;
        memcpy(j->values + i * j->num_perm, sig->values, j->num_perm * sizeof *j->values);
        if (j->empty != NULL)
            j->empty[i] = (uint8_t)sig->empty;
    }
    return 0;
}

int simlsh_sign_batch(uint32_t *values, uint8_t *empty, const simlsh_params *params,
                      const void *const *texts, const size_t *lens, size_t n, uint32_t nthreads)
{
    SIMLSH__CHECK_PARAMS(params);
    if (n > 0 && (values == NULL || texts == NULL || lens == NULL))
        return SIMLSH_EINVAL;
    int rc = simlsh__params_check_shingling(params);
    if (rc < 0 || n == 0)
        return rc;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += lens[i] < SIZE_MAX - bytes ? lens[i] : 0;
    size_t units = (n + SIGN_CHUNK - 1) / SIGN_CHUNK;
    uint32_t want = nthreads == 0 ? simlsh__par_workers(0, SIZE_MAX) : nthreads;
    if (bytes / BYTES_PER_THREAD < want)
        want = bytes / BYTES_PER_THREAD > 0 ? (uint32_t)(bytes / BYTES_PER_THREAD) : 1;
    uint32_t workers = simlsh__par_workers(want, units);

    /* The workers' signatures allocate (lazily, in add_text) through the
     * serialising allocator, so the caller's hooks never run concurrently. */
    simlsh__lockal la;
    simlsh__lockal_init(&la, &params->alloc);
    struct simlsh_params p = *params;
    p.alloc = la.al;
    sign_job job = {values, empty, texts, lens, n, (uint32_t)params->num_perm, NULL};
    job.sig = simlsh__calloc(&params->alloc, workers, sizeof *job.sig);
    if (job.sig == NULL)
        rc = SIMLSH_ENOMEM;
    for (uint32_t w = 0; rc == 0 && w < workers; w++)
        rc = simlsh_signature_new(&job.sig[w], &p);
    if (rc == 0)
        rc = simlsh__par_run(workers, units, sign_unit, &job, NULL);
    for (uint32_t w = 0; job.sig != NULL && w < workers; w++)
        simlsh_signature_free(job.sig[w]);
    simlsh__free_sized(&params->alloc, job.sig, workers * sizeof *job.sig);
    simlsh__lockal_done(&la);
    return rc;
}

int simlsh_band_keys_batch(uint64_t *keys, const simlsh_params *params, const uint32_t *values,
                           size_t n)
{
    SIMLSH__CHECK_PARAMS(params);
    if (n > 0 && (keys == NULL || values == NULL))
        return SIMLSH_EINVAL;
    uint32_t b, r;
    int rc = simlsh__params_resolve_bands(params, &b, &r);
    if (rc < 0)
        return rc;
    size_t np = (size_t)params->num_perm;
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < b; k++)
            keys[i * b + k] =
                simlsh__band_key_inline(values + i * np + (size_t)k * r, r, k, params->seed);
    return 0;
}
