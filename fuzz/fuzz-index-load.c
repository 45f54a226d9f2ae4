/* Fuzz the index loader: any bytes give an index or an error, never a crash
 * or a hang; a loaded index answers queries, pairs and clusters, saves back
 * to exactly the bytes it came from, and survives a removal.
 *
 * The first input byte picks a mode. Mode 1 fixes the frame's payload length
 * and checksum before loading, so mutations reach the payload checks
 * instead of dying at the checksum almost every time. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "le.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static void exercise(simlsh_index *ix, const uint8_t *bytes, size_t n)
{
    simlsh_results *res = NULL;
    if (simlsh_results_new(&res, NULL) != 0)
        abort();
    size_t count;
    if (simlsh_index_count(&count, ix) != 0)
        abort();
    for (int flags = 0; flags <= SIMLSH_QUERY_VERIFY; flags++) {
        int rc = simlsh_index_pairs(res, ix, flags, 1000);
        if (rc != 0 && rc != SIMLSH_EUNSUPPORTED)
            abort();
        rc = simlsh_index_cluster(res, ix, flags);
        if (rc != 0 && rc != SIMLSH_EUNSUPPORTED)
            abort();
        if (rc == 0 && simlsh_results_count(res) != count)
            abort();
    }

    /* A query with a signature made from the index's own contract. */
    simlsh_params *p = NULL;
    if (simlsh_index_params(&p, ix) != 0)
        abort();
    simlsh_signature *sig = NULL;
    if (simlsh_signature_new(&sig, p) == 0) {
        uint64_t f[8] = {0};
        memcpy(f, bytes, n < sizeof f ? n : sizeof f);
        simlsh_signature_add_features(sig, f, 8);
        int rc = simlsh_index_query(res, ix, sig, 0);
        if (rc != 0)
            abort();
        const simlsh_signature *batch[2] = {sig, sig};
        if (simlsh_index_query_batch(res, ix, batch, 2, 0) != 0)
            abort();
        simlsh_signature_free(sig);
    }
    simlsh_params_free(p);

    /* Save gives back the very bytes that were loaded. */
    size_t sz;
    if (simlsh_index_save(NULL, 0, &sz, ix) != 0 || sz != n)
        abort();
    uint8_t *buf = malloc(sz);
    if (buf == NULL || simlsh_index_save(buf, sz, &sz, ix) != 0 || memcmp(buf, bytes, n) != 0)
        abort();
    free(buf);

    /* Remove the smallest id (when signatures are stored), then query. */
    if (simlsh_index_cluster(res, ix, 0) == 0 && simlsh_results_count(res) > 0) {
        uint64_t id = simlsh_results_a(res)[0];
        int rc = simlsh_index_remove(ix, id);
        if (rc != 0 && rc != SIMLSH_EUNSUPPORTED)
            abort();
        if (rc == 0 && simlsh_index_contains(ix, id) != 0)
            abort();
        if (simlsh_index_pairs(res, ix, 0, 100) != 0)
            abort();
    }
    simlsh_results_free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 1)
        return 0;
    int mode = d[0] & 1;
    d++;
    n--;
    uint8_t *copy = NULL;
    if (mode == 1 && n >= SIMLSH__FRAME_OVERHEAD) {
        copy = malloc(n);
        if (copy == NULL)
            return 0;
        memcpy(copy, d, n);
        simlsh__wr64(copy + 8, (uint64_t)(n - SIMLSH__FRAME_OVERHEAD));
        simlsh__frame_write_tail(copy, n);
        d = copy;
    }
    simlsh_index *ix = NULL;
    int rc = simlsh_index_load(&ix, d, n, NULL);
    if (rc == 0) {
        exercise(ix, d, n);
        simlsh_index_free(ix);
    } else if (ix != NULL || (rc != SIMLSH_ECORRUPT && rc != SIMLSH_EUNSUPPORTED &&
                              rc != SIMLSH_EINVAL)) {
        abort();
    }
    free(copy);
    return 0;
}
