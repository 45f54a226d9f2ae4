/* placeholder: being written (banding math). Minimal stand-in so the library links. */
#include "internal.h"
int simlsh_lsh_optimal_params(uint32_t *bands, uint32_t *rows, uint32_t *unused, uint32_t num_perm,
                              double t, double w_fp, double w_fn)
{
    (void)t; (void)w_fp; (void)w_fn;
    *bands = num_perm / 8 ? num_perm / 8 : 1;
    *rows = num_perm / 8 ? 8 : num_perm;
    if (unused) *unused = num_perm - *bands * *rows;
    return 0;
}
