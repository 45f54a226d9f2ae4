/* Fuzz the LSH Forest loader: any bytes give a forest or an error, never a
 * crash or a hang; a loaded forest answers top-k queries (rows ranked,
 * at most k), saves back to exactly the bytes it came from, and survives
 * removals (with compaction) and a re-insert.
 *
 * The first input byte picks a mode (reseal.h, fz_mode_input): bit 0 fixes
 * the frame's payload length and checksum before loading. */
#include <stdlib.h>
#include <string.h>

#include "reseal.h"

static void exercise(simlsh_forest *f, const uint8_t *bytes, size_t n)
{
    simlsh_results *res = NULL;
    if (simlsh_results_new(&res, NULL) != 0)
        abort();
    size_t count;
    if (simlsh_forest_count(&count, f) != 0)
        abort();

    /* Save gives back the very bytes that were loaded. */
    FZ_SAVES_BACK(simlsh_forest_save, f, bytes, n);

    simlsh_params *p = NULL;
    if (simlsh_forest_params(&p, f) != 0)
        abort();
    simlsh_signature *sig = NULL;
    if (simlsh_signature_new(&sig, p) == 0) {
        uint64_t feat[8] = {0};
        memcpy(feat, bytes, n < sizeof feat ? n : sizeof feat);
        simlsh_signature_add_features(sig, feat, 8);
        for (size_t k = 1; k <= 16; k *= 4) {
            if (simlsh_forest_query_topk(res, f, sig, k) != 0)
                abort();
            size_t rows = simlsh_results_count(res);
            if (rows > k || rows > count)
                abort();
            const double *s = simlsh_results_scores(res);
            for (size_t i = 1; i < rows; i++)
                if (s[i] > s[i - 1])
                    abort();
        }
        /* Remove every other id found by a broad query, then re-insert. */
        if (simlsh_forest_query_topk(res, f, sig, 64) != 0)
            abort();
        size_t rows = simlsh_results_count(res);
        uint64_t ids[64];
        memcpy(ids, simlsh_results_a(res) ? simlsh_results_a(res) : ids, rows * sizeof *ids);
        for (size_t i = 0; i < rows; i += 2)
            if (simlsh_forest_remove(f, ids[i]) != 0)
                abort();
        if (simlsh_forest_query_topk(res, f, sig, 8) != 0)
            abort();
        if (rows > 0 && simlsh_forest_insert(f, ids[0], sig) != 0)
            abort();
        simlsh_signature_free(sig);
    }
    simlsh_params_free(p);
    simlsh_results_free(res);
}

FZ_LOADER_TARGET(simlsh_forest, simlsh_forest_load, exercise, simlsh_forest_free)
