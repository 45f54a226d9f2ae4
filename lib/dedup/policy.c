/* The deduplication policy in one place (include/simlsh.h, "Deduplication
 * engine"): the exact mode's prefilter and the banding that simlsh-dedup,
 * simlsh-dedup-mpi, simlsh.dedup() and the bindings' examples choose. The
 * shingling part of the policy is the "dedup" preset (params.c). */
#include <math.h>

#include "simlsh.h"

#define PREFILTER_SD 3.5

double simlsh_dedup_prefilter(double t, uint32_t num_perm)
{
    if (!(t > 0 && t <= 1) || num_perm == 0)
        return -1;
    double low = t - PREFILTER_SD * sqrt(t * (1 - t) / (double)num_perm);
    return low > 0 ? low : 0;
}

int simlsh_dedup_banding(simlsh_params *params, int mode, double recall, uint32_t bands,
                         uint32_t rows, uint32_t *bands_out, uint32_t *rows_out)
{
    int64_t np = 0;
    double t = 0;
    if (mode < SIMLSH_DEDUP_NONE || mode > SIMLSH_DEDUP_EXACT || !(recall > 0 && recall < 1))
        return SIMLSH_EINVAL;
    int rc = simlsh_params_get_int(params, SIMLSH_PARAM_NUM_PERM, &np);
    if (rc == 0)
        rc = simlsh_params_get_double(params, SIMLSH_PARAM_THRESHOLD, &t);
    if (rc != 0)
        return rc;
    uint32_t b = bands, r = rows;
    if (b == 0 && r == 0) {
        if (mode == SIMLSH_DEDUP_EXACT && (rc = simlsh_lsh_optimal_params_recall(
                                               &b, &r, NULL, (uint32_t)np, t, recall, 0.0)) != 0)
            return rc;
    } else if (r == 0) {
        r = (uint32_t)((uint64_t)np / b);
    } else if (b == 0) {
        b = (uint32_t)((uint64_t)np / r);
    }
    if (bands_out != NULL)
        *bands_out = b;
    if (rows_out != NULL)
        *rows_out = r;
    if ((b == 0) != (r == 0) || (uint64_t)b * r > (uint64_t)np)
        return SIMLSH_EINVAL;
    /* both within 0 .. num_perm, which set_int() takes */
    if ((rc = simlsh_params_set_int(params, SIMLSH_PARAM_BANDS, b)) == 0)
        rc = simlsh_params_set_int(params, SIMLSH_PARAM_ROWS, r);
    return rc;
}
