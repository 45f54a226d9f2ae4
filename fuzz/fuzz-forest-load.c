/* Fuzz the LSH Forest loader: any bytes give a forest or an error, never a
 * crash or a hang; a loaded forest answers top-k queries (rows ranked,
 * at most k), saves back to exactly the bytes it came from, and survives
 * removals (with compaction) and a re-insert.
 *
 * The first input byte picks a mode. Mode 1 fixes the frame's payload
 * length and checksum before loading, so mutations reach the payload
 * checks instead of dying at the checksum almost every time. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "le.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static void exercise(simlsh_forest *f, const uint8_t *bytes, size_t n)
{
    simlsh_results *res = NULL;
    if (simlsh_results_new(&res, NULL) != 0)
        abort();
    size_t count;
    if (simlsh_forest_count(&count, f) != 0)
        abort();

    /* Save gives back the very bytes that were loaded. */
    size_t sz;
    if (simlsh_forest_save(NULL, 0, &sz, f) != 0 || sz != n)
        abort();
    uint8_t *buf = malloc(sz);
    if (buf == NULL || simlsh_forest_save(buf, sz, &sz, f) != 0 || memcmp(buf, bytes, n) != 0)
        abort();
    free(buf);

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
    simlsh_forest *f = NULL;
    int rc = simlsh_forest_load(&f, d, n, NULL);
    if (rc == 0) {
        exercise(f, d, n);
        simlsh_forest_free(f);
    } else if (f != NULL || (rc != SIMLSH_ECORRUPT && rc != SIMLSH_EUNSUPPORTED &&
                             rc != SIMLSH_EINVAL)) {
        abort();
    }
    free(copy);
    return 0;
}
