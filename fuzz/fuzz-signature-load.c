/* Fuzz the signature loader: any bytes give a signature or an error, never a
 * crash; a loaded signature saves back to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    simlsh_signature *s;
    if (simlsh_signature_load(&s, d, n, NULL) != 0)
        return 0;
    size_t sz;
    if (simlsh_signature_save(NULL, 0, &sz, s) || sz != n)
        abort();
    uint8_t *buf = malloc(sz);
    if (simlsh_signature_save(buf, sz, &sz, s) || memcmp(buf, d, n) != 0)
        abort();
    double j;
    if (simlsh_signature_jaccard(&j, s, s) || j != 1.0)
        abort();
    uint64_t keys[64];
    simlsh_signature_band_keys(keys, 64, s, 4, 1);
    free(buf);
    simlsh_signature_free(s);
    return 0;
}
