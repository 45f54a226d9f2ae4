/* Fuzz the index loader: any bytes give an index or an error, never a crash
 * or a hang; a loaded index answers queries, pairs and clusters, saves back
 * to exactly the bytes it came from, and survives a removal.
 *
 * The first input byte picks a mode (reseal.h, fz_mode_input): bit 0 fixes
 * the frame's payload length and checksum before loading. */
#include <stdlib.h>
#include <string.h>

#include "reseal.h"

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
    FZ_SAVES_BACK(simlsh_index_save, ix, bytes, n);

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

FZ_LOADER_TARGET(simlsh_index, simlsh_index_load, exercise, simlsh_index_free)
