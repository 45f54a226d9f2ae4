/* Fuzz the shingler: the first bytes choose unit, k, flags, width, policy and
 * a chunk size; the rest is the document. Streaming in chunks must equal the
 * one-call set, and a signature streamed from text must equal the signature
 * of the set. */
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 4)
        return 0;
    simlsh_params *p;
    if (simlsh_params_new(&p, NULL))
        return 0;
    simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, d[0] % 3);
    simlsh_params_set_int(p, SIMLSH_PARAM_K, 1 + d[1] % 12);
    int norm = d[2] & 7;
    if (simlsh_has_unicode() && d[0] % 3 != 0)
        norm = d[2] & 31;
    simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norm);
    simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, d[3] & 1 ? 64 : 32);
    simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, (d[3] >> 1) & 1);
    simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, (d[3] >> 2) & 1);
    simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 1 + ((d[3] >> 3) & 31) * 3);
    size_t chunk = 1 + (d[1] >> 4);
    d += 4;
    n -= 4;

    simlsh_shingleset *a = NULL, *b = NULL;
    simlsh_signature *s1 = NULL, *s2 = NULL;
    if (simlsh_shingleset_new(&a, p) || simlsh_shingleset_new(&b, p) ||
        simlsh_signature_new(&s1, p) || simlsh_signature_new(&s2, p))
        goto out;
    int rc1 = simlsh_shingleset_add_text(a, d, n);
    int rc2 = simlsh_shingleset_begin(b);
    for (size_t off = 0; rc2 == 0 && off < n; off += chunk)
        rc2 = simlsh_shingleset_feed(b, d + off, n - off < chunk ? n - off : chunk);
    if (rc2 == 0)
        rc2 = simlsh_shingleset_end(b);
    if ((rc1 == 0) != (rc2 == 0))
        abort();
    if (rc1 == 0) {
        double j;
        size_t ca, cb;
        if (simlsh_shingleset_jaccard(&j, a, b) || j != 1.0)
            abort();
        simlsh_shingleset_count(&ca, a);
        simlsh_shingleset_count(&cb, b);
        if (ca != cb)
            abort();
        if (simlsh_signature_add_text(s1, d, n) || simlsh_signature_add_shingleset(s2, a))
            abort();
        uint32_t v1[128], v2[128];
        size_t m1, m2;
        simlsh_signature_values(v1, 128, &m1, s1);
        simlsh_signature_values(v2, 128, &m2, s2);
        if (m1 != m2 || memcmp(v1, v2, m1 * 4) != 0)
            abort();
    }
out:
    simlsh_shingleset_free(a);
    simlsh_shingleset_free(b);
    simlsh_signature_free(s1);
    simlsh_signature_free(s2);
    simlsh_params_free(p);
    return 0;
}
