/*
 * The C side of the bindings' benchmark (bindings/run-bench.py): sign
 * 100,000 documents of 45 bytes with the "dedup" preset and copy out each
 * signature's values, as a binding does per document (clear, add_text,
 * values). Prints one JSON object. Document i is "%05d " followed by the
 * first 39 bytes of BASE, in every binding.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "simlsh.h"

#define DOCS 100000
#define BASE "lorem ipsum dolor sit amet, consectetur adipiscing elit"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    simlsh_params *p;
    simlsh_signature *sig;
    if (simlsh_params_new(&p, NULL) || simlsh_params_preset(p, "dedup") ||
        simlsh_signature_new(&sig, p))
        return 1;
    static char docs[DOCS][46];
    for (int i = 0; i < DOCS; i++)
        snprintf(docs[i], sizeof docs[i], "%05d %.39s", i, BASE);
    static uint32_t values[128];
    uint64_t check = 0;
    double t0 = now();
    for (int i = 0; i < DOCS; i++) {
        size_t n;
        simlsh_signature_clear(sig);
        if (simlsh_signature_add_text(sig, docs[i], 45) ||
            simlsh_signature_values(values, 128, &n, sig))
            return 1;
        check += values[i % 128];
    }
    double dt = now() - t0;
    printf("{\"binding\": \"c\", \"docs\": %d, \"doc_bytes\": 45, \"seconds\": %.4f, "
           "\"docs_per_s\": %.0f, \"check\": %llu}\n",
           DOCS, dt, DOCS / dt, (unsigned long long)check);
    simlsh_signature_free(sig);
    simlsh_params_free(p);
    return 0;
}
