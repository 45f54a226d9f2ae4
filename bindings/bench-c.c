/*
 * The C side of the bindings' benchmark (bindings/run-bench.py): sign
 * 100,000 documents of 45 bytes with the "dedup" preset and copy out each
 * signature's values, as a binding does per document (clear, add_text,
 * values), then the same documents with simlsh_sign_batch() on one thread,
 * in chunks of CHUNK documents into one reused matrix, timing the second of
 * two passes (the first maps the matrix), as a long stream would be signed: timing the first
 * write to each page of a fresh 51 MB matrix measures page faults, not
 * signing. "c-batch-cold" is one call into such a fresh matrix, for
 * comparison. Prints one JSON object for each. Document i is "%05d "
 * followed by the first 39 bytes of BASE, in every binding.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "simlsh.h"

#define DOCS 100000
#define CHUNK 4096
#define BASE "lorem ipsum dolor sit amet, consectetur adipiscing elit"

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wall and process CPU time: on a loaded machine the CPU time is the
 * steadier measure. */
static double t0, c0;

static void start(void)
{
    t0 = clock_s(CLOCK_MONOTONIC);
    c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void report(const char *name, uint64_t check)
{
    double dt = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("{\"binding\": \"%s\", \"docs\": %d, \"doc_bytes\": 45, \"seconds\": %.4f, "
           "\"docs_per_s\": %.0f, \"cpu_seconds\": %.4f, \"cpu_docs_per_s\": %.0f, "
           "\"check\": %llu}\n",
           name, DOCS, dt, DOCS / dt, cpu, DOCS / cpu, (unsigned long long)check);
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
    start();
    for (int i = 0; i < DOCS; i++) {
        size_t n;
        simlsh_signature_clear(sig);
        if (simlsh_signature_add_text(sig, docs[i], 45) ||
            simlsh_signature_values(values, 128, &n, sig))
            return 1;
        check += values[i % 128];
    }
    report("c", check);

    /* The same documents in chunks into a warm matrix, on one thread. */
    static const void *texts[DOCS];
    static size_t lens[DOCS];
    static uint32_t chunk[(size_t)CHUNK * 128];
    for (int i = 0; i < DOCS; i++) {
        texts[i] = docs[i];
        lens[i] = 45;
    }
    /* Two passes, the second timed, as in every binding: the first maps
     * the matrix and warms the code (a JIT's too), as in a long stream. */
    for (int pass = 0; pass < 2; pass++) {
        check = 0;
        start();
        for (int at = 0; at < DOCS; at += CHUNK) {
            int n = DOCS - at < CHUNK ? DOCS - at : CHUNK;
            if (simlsh_sign_batch(chunk, NULL, p, texts + at, lens + at, (size_t)n, 1))
                return 1;
            for (int i = at; i < at + n; i++)
                check += chunk[(size_t)(i - at) * 128 + (size_t)(i % 128)];
        }
    }
    report("c-batch", check);

    /* All in one call into a matrix written for the first time. */
    static uint32_t all[(size_t)DOCS * 128];
    start();
    if (simlsh_sign_batch(all, NULL, p, texts, lens, DOCS, 1))
        return 1;
    check = 0;
    for (int i = 0; i < DOCS; i++)
        check += all[(size_t)i * 128 + (size_t)(i % 128)];
    report("c-batch-cold", check);
    simlsh_signature_free(sig);
    simlsh_params_free(p);
    return 0;
}
