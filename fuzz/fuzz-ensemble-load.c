/* Fuzz the LSH Ensemble loader: any bytes give an ensemble or an error,
 * never a crash or a hang; a loaded ensemble answers containment queries
 * (rows sorted by id, scores in [0, 1], verified rows >= t), saves back to
 * exactly the bytes it came from, and survives removals and a re-insert.
 *
 * The first input byte picks a mode (reseal.h, fz_mode_input): bit 0 fixes
 * the frame's payload length and checksum before loading. */
#include <stdlib.h>
#include <string.h>

#include "reseal.h"

static void check_rows(const simlsh_results *res, double t, int verify)
{
    size_t rows = simlsh_results_count(res);
    const uint64_t *ids = simlsh_results_a(res);
    const double *s = simlsh_results_scores(res);
    for (size_t i = 0; i < rows; i++)
        if ((i > 0 && ids[i] <= ids[i - 1]) || !(s[i] >= 0 && s[i] <= 1) || (verify && s[i] < t))
            abort();
}

static void exercise(simlsh_ensemble *e, const uint8_t *bytes, size_t n)
{
    simlsh_results *res = NULL;
    if (simlsh_results_new(&res, NULL) != 0)
        abort();
    FZ_SAVES_BACK(simlsh_ensemble_save, e, bytes, n);

    simlsh_params *p = NULL;
    if (simlsh_ensemble_params(&p, e) != 0)
        abort();
    simlsh_signature *sig = NULL;
    if (simlsh_signature_new(&sig, p) == 0) {
        uint64_t feat[8] = {0};
        memcpy(feat, bytes, n < sizeof feat ? n : sizeof feat);
        simlsh_signature_add_features(sig, feat, 8);
        uint64_t qsize = 1 + (n > 9 ? bytes[9] : 7);
        static const double ts[] = {0.05, 0.5, 1.0};
        for (int i = 0; i < 3; i++)
            for (int v = 0; v <= SIMLSH_QUERY_VERIFY; v++) {
                if (simlsh_ensemble_query(res, e, sig, qsize, ts[i], v) != 0)
                    abort();
                check_rows(res, ts[i], v);
            }
        /* Remove every other set found by a broad query, then re-insert. */
        if (simlsh_ensemble_query(res, e, sig, 1, 0.01, 0) != 0)
            abort();
        size_t rows = simlsh_results_count(res);
        uint64_t *ids = malloc((rows + 1) * sizeof *ids);
        if (ids == NULL)
            abort();
        if (rows > 0)
            memcpy(ids, simlsh_results_a(res), rows * sizeof *ids);
        for (size_t i = 0; i < rows; i += 2)
            if (simlsh_ensemble_remove(e, ids[i]) != 0)
                abort();
        if (simlsh_ensemble_query(res, e, sig, qsize, 0.5, 0) != 0)
            abort();
        if (rows > 0 && simlsh_ensemble_insert(e, ids[0], sig, qsize) != 0)
            abort();
        free(ids);
        simlsh_signature_free(sig);
    }
    simlsh_params_free(p);
    simlsh_results_free(res);
}

FZ_LOADER_TARGET(simlsh_ensemble, simlsh_ensemble_load, exercise, simlsh_ensemble_free)
