/* Fuzz the shingle-set loader: any bytes give a set or an error, never a
 * crash; a loaded set saves back to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    simlsh_shingleset *s;
    if (simlsh_shingleset_load(&s, d, n, NULL) != 0)
        return 0;
    size_t sz;
    if (simlsh_shingleset_save(NULL, 0, &sz, s) || sz != n)
        abort();
    uint8_t *buf = malloc(sz);
    if (simlsh_shingleset_save(buf, sz, &sz, s) || memcmp(buf, d, n) != 0)
        abort();
    double j;
    if (simlsh_shingleset_jaccard(&j, s, s) || j != 1.0)
        abort();
    free(buf);
    simlsh_shingleset_free(s);
    return 0;
}
