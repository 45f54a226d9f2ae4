/*
 * simlsh-bench sign: throughput of signing generated English-like documents
 * (char 5-shingles by default) on one core, and the ratio to a naive
 * per-permutation loop (num_perm MurmurHash3 passes over every shingle)
 * measured in the same run on a subset of the same documents.
 *
 * --normalize FLAGS (a number, or a list of lower, space, punct, casefold,
 * nfkc, none) signs with those normalisation flags and, when they are not
 * none, also without any in the same run, so that "raw_mb_per_s" and
 * "norm_vs_raw" compare the two on the same corpus and the same machine
 * state. --repeat N keeps the best of N passes of each (interleaved, so
 * that a noisy neighbour slows both alike). The passes are the functions
 * pass_raw and pass_norm, for callgrind's inclusive costs.
 *
 * --threads T also signs the corpus with simlsh_sign_batch() on T threads
 * (one call, one n x num_perm matrix) and reports its speed, its CPU time
 * and the calling thread's, and whether its rows equal the per-document
 * loop's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "simlsh.h"
#include "cpu.h"
#include "murmur3.h"

static const char *vocab[] = {
    "the",      "of",          "and",      "to",          "in",        "a",          "is",
    "that",     "for",         "it",       "as",          "was",       "with",       "be",
    "by",       "on",          "not",      "he",          "this",      "are",        "or",
    "his",      "from",        "at",       "which",       "but",       "have",       "an",
    "had",      "they",        "you",      "were",        "their",     "one",        "all",
    "we",       "can",         "her",      "has",         "there",     "been",       "if",
    "more",     "when",        "will",     "would",       "who",       "so",         "no",
    "library",  "signature",   "document", "similar",     "duplicate", "collection", "hash",
    "function", "permutation", "estimate", "probability", "candidate", "threshold",  "river",
    "mountain", "government",  "history",  "between",     "important", "different",  "following",
    "without",  "something"};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Words with a skewed (roughly Zipf) choice, sentence case and punctuation. */
static void gen_doc(uint64_t *s, char *out, size_t len)
{
    size_t n = 0, nv = sizeof vocab / sizeof *vocab;
    int start = 1;
    while (n < len) {
        uint64_t r = rng_next(s);
        size_t w =
            (size_t)((double)(r % 10000) / 10000.0 * (double)(r % 10000) / 10000.0 * (double)nv);
        const char *word = vocab[w];
        for (size_t i = 0; word[i] && n < len; i++)
            out[n++] = (char)(start && i == 0 ? word[i] - 32 : word[i]);
        start = 0;
        if (n < len) {
            int p = (int)((r >> 20) % 16);
            if (p == 0 && n + 1 < len) {
                out[n++] = '.';
                start = 1;
            } else if (p == 1 && n + 1 < len) {
                out[n++] = ',';
            }
            if (n < len)
                out[n++] = ' ';
        }
    }
}

static int parse_isa(const char *s)
{
    if (strcmp(s, "auto") == 0)
        return SIMLSH_ISA_AUTO;
    if (strcmp(s, "scalar") == 0)
        return SIMLSH_ISA_SCALAR;
    if (strcmp(s, "avx2") == 0)
        return SIMLSH_ISA_AVX2;
    if (strcmp(s, "avx512") == 0)
        return SIMLSH_ISA_AVX512;
    return -1;
}

static int parse_unit(const char *s)
{
    if (strcmp(s, "byte") == 0)
        return SIMLSH_UNIT_BYTE;
    if (strcmp(s, "char") == 0)
        return SIMLSH_UNIT_CHAR;
    if (strcmp(s, "word") == 0)
        return SIMLSH_UNIT_WORD;
    return -1;
}

/* A number, or names joined by ','; -1 if a name is unknown. */
static int parse_norm(const char *s)
{
    static const struct {
        const char *name;
        int flag;
    } names[] = {{"lower", SIMLSH_NORM_LOWER_ASCII}, {"space", SIMLSH_NORM_COLLAPSE_SPACE},
                 {"punct", SIMLSH_NORM_STRIP_PUNCT}, {"casefold", SIMLSH_NORM_CASEFOLD},
                 {"nfkc", SIMLSH_NORM_NFKC},         {"none", 0}};
    if (*s >= '0' && *s <= '9')
        return atoi(s);
    int flags = 0;
    while (*s) {
        size_t len = strcspn(s, ","), i;
        for (i = 0; i < sizeof names / sizeof *names; i++)
            if (strlen(names[i].name) == len && strncmp(s, names[i].name, len) == 0)
                break;
        if (i == sizeof names / sizeof *names)
            return -1;
        flags |= names[i].flag;
        s += len + (s[len] == ',');
    }
    return flags;
}

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* Sign every document with sig; returns the seconds taken and folds one
 * value per document into *checksum. */
static double sign_all(simlsh_signature *sig, const char *corpus, size_t docs, size_t doc_bytes,
                       uint32_t *checksum)
{
    uint32_t v[1024];
    size_t nv;
    double t0 = bench_now();
    for (size_t d = 0; d < docs; d++) {
        simlsh_signature_clear(sig);
        simlsh_signature_add_text(sig, corpus + d * doc_bytes, doc_bytes);
        simlsh_signature_values(v, 1024, &nv, sig);
        *checksum ^= v[d % nv];
    }
    return bench_now() - t0;
}

/* Two names for one loop, so that callgrind reports each pass's cost. The
 * store to `phase` keeps the compiler from folding the two into one. */
static volatile int phase;

static NOINLINE double pass_raw(simlsh_signature *sig, const char *corpus, size_t docs,
                                size_t doc_bytes, uint32_t *checksum)
{
    phase = 1;
    return sign_all(sig, corpus, docs, doc_bytes, checksum);
}

static NOINLINE double pass_norm(simlsh_signature *sig, const char *corpus, size_t docs,
                                 size_t doc_bytes, uint32_t *checksum)
{
    phase = 2;
    return sign_all(sig, corpus, docs, doc_bytes, checksum);
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *isa_name(int isa)
{
    return isa == SIMLSH_ISA_AVX512 ? "avx512" : isa == SIMLSH_ISA_AVX2 ? "avx2" : "scalar";
}

int bench_sign(int argc, char **argv)
{
    int scheme = SIMLSH_SCHEME_OPH, isa = SIMLSH_ISA_AUTO, num_perm = 128, k = 5, norm = 0;
    int unit = SIMLSH_UNIT_CHAR, repeat = 1;
    size_t doc_bytes = 2048, docs = 20000, naive_docs = 0, threads = 0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || v == NULL) {
            fprintf(stderr, "usage: simlsh-bench sign [--scheme oph|classic] [--num-perm N] "
                            "[--isa auto|scalar|avx2|avx512] [--doc-bytes N] [--docs N] "
                            "[--seed N] [-k N] [--unit byte|char|word] "
                            "[--normalize N|lower,space,punct,casefold,nfkc|none] "
                            "[--repeat N] [--naive-docs N] [--threads T]\n");
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
        i++;
        if (strcmp(a, "--scheme") == 0)
            scheme = strcmp(v, "classic") == 0 ? SIMLSH_SCHEME_CLASSIC : SIMLSH_SCHEME_OPH;
        else if (strcmp(a, "--num-perm") == 0)
            num_perm = atoi(v);
        else if (strcmp(a, "--isa") == 0)
            isa = parse_isa(v);
        else if (strcmp(a, "--doc-bytes") == 0)
            doc_bytes = (size_t)atol(v);
        else if (strcmp(a, "--docs") == 0)
            docs = (size_t)atol(v);
        else if (strcmp(a, "--seed") == 0)
            seed = (uint64_t)atoll(v);
        else if (strcmp(a, "-k") == 0)
            k = atoi(v);
        else if (strcmp(a, "--normalize") == 0)
            norm = parse_norm(v);
        else if (strcmp(a, "--unit") == 0)
            unit = parse_unit(v);
        else if (strcmp(a, "--repeat") == 0)
            repeat = atoi(v);
        else if (strcmp(a, "--naive-docs") == 0)
            naive_docs = (size_t)atol(v);
        else if (strcmp(a, "--threads") == 0)
            threads = (size_t)atol(v);
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    if (isa < 0 || unit < 0 || norm < 0 || repeat < 1 || doc_bytes == 0 || docs == 0 ||
        threads > 256) {
        fprintf(stderr, "bad option value\n");
        return 2;
    }
    if (!simlsh_isa_supported(isa)) {
        printf("{\"error\": \"isa %s not supported on this CPU\"}\n", isa_name(isa));
        return 0;
    }
    simlsh_params *p, *p_raw;
    simlsh_signature *sig, *sig_raw;
    if (simlsh_params_new(&p, NULL) || simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme) ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa) ||
        simlsh_params_set_int(p, SIMLSH_PARAM_K, k) ||
        simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit) || simlsh_params_copy(&p_raw, p) ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norm) || simlsh_signature_new(&sig, p) ||
        simlsh_signature_new(&sig_raw, p_raw)) {
        fprintf(stderr, "bad parameters\n");
        return 2;
    }
    /* Generate a corpus that fits in cache-unfriendly memory like real input. */
    char *corpus = malloc(docs * doc_bytes);
    uint64_t s = seed;
    for (size_t d = 0; d < docs; d++)
        gen_doc(&s, corpus + d * doc_bytes, doc_bytes);

    uint32_t checksum = 0, raw_checksum = 0;
    double secs = 0, raw_secs = 0, t0;
    for (int r = 0; r < repeat; r++) {
        uint32_t c = 0;
        if (norm != 0) {
            double t = pass_raw(sig_raw, corpus, docs, doc_bytes, &c);
            raw_secs = r == 0 || t < raw_secs ? t : raw_secs;
            raw_checksum = c;
            c = 0;
        }
        double t = pass_norm(sig, corpus, docs, doc_bytes, &c);
        secs = r == 0 || t < secs ? t : secs;
        checksum = c;
    }
    if (norm == 0) {
        raw_secs = secs;
        raw_checksum = checksum;
    }

    double batch_secs = 0, batch_cpu = 0, batch_main_cpu = 0;
    int batch_same = 1;
    if (threads > 0) {
        const void **texts = malloc(docs * sizeof *texts);
        size_t *lens = malloc(docs * sizeof *lens);
        uint32_t *rows = malloc(docs * (size_t)num_perm * sizeof *rows);
        for (size_t d = 0; d < docs; d++) {
            texts[d] = corpus + d * doc_bytes;
            lens[d] = doc_bytes;
        }
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), m0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        t0 = bench_now();
        if (simlsh_sign_batch(rows, NULL, p, texts, lens, docs, (uint32_t)threads) != 0)
            return 1;
        batch_secs = bench_now() - t0;
        batch_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        batch_main_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - m0;
        uint32_t cs = 0;
        for (size_t d = 0; d < docs; d++)
            cs ^= rows[d * (size_t)num_perm + d % (size_t)num_perm];
        batch_same = cs == checksum;
        free(texts);
        free(lens);
        free(rows);
    }

    /* Naive: num_perm independent MurmurHash3 seeds over every k-byte shingle. */
    if (naive_docs == 0)
        naive_docs = docs < 200 ? docs : 200;
    double t1 = bench_now();
    for (size_t d = 0; d < naive_docs; d++) {
        const uint8_t *doc = (const uint8_t *)corpus + d * doc_bytes;
        for (int i = 0; i < num_perm; i++) {
            uint32_t m = 0xffffffffu;
            for (size_t w = 0; w + (size_t)k <= doc_bytes; w++) {
                uint32_t h = simlsh__murmur3_32(doc + w, (size_t)k, (uint32_t)i);
                m = h < m ? h : m;
            }
            checksum ^= m;
        }
    }
    double naive_secs = bench_now() - t1;
    double bytes = (double)docs * (double)doc_bytes;
    double naive_per_byte = naive_secs / ((double)naive_docs * (double)doc_bytes);
    double ours_per_byte = secs / bytes;
    static const char *unit_names[] = {"byte", "char", "word"};
    printf(
        "{\"bench\": \"sign\", \"scheme\": \"%s\", \"isa\": \"%s\", \"num_perm\": %d, "
        "\"unit\": \"%s\", \"k\": %d, \"normalize\": %d, \"repeat\": %d, "
        "\"raw_seconds\": %.4f, \"raw_mb_per_s\": %.1f, \"norm_vs_raw\": %.3f, "
        "\"raw_checksum\": %u, \"docs\": %zu, \"doc_bytes\": %zu, \"bytes\": %.0f, \"seconds\": %.4f, "
        "\"mb_per_s\": %.1f, \"docs_per_s\": %.0f, \"naive_docs\": %zu, "
        "\"naive_mb_per_s\": %.2f, \"speedup_vs_naive\": %.1f, \"checksum\": %u, "
        "\"threads\": %zu, \"batch_seconds\": %.4f, \"batch_mb_per_s\": %.1f, "
        "\"batch_cpu_s\": %.4f, \"batch_main_thread_cpu_s\": %.4f, \"batch_identical\": %s}\n",
        scheme == SIMLSH_SCHEME_CLASSIC ? "classic" : "oph", isa_name(simlsh__isa_resolve(isa)),
        num_perm, unit_names[unit], k, norm, repeat, raw_secs, bytes / raw_secs / 1e6,
        raw_secs / secs, raw_checksum, docs, doc_bytes, bytes, secs, bytes / secs / 1e6,
        (double)docs / secs, naive_docs, 1e-6 / naive_per_byte, naive_per_byte / ours_per_byte,
        checksum, threads, batch_secs, batch_secs > 0 ? bytes / batch_secs / 1e6 : 0.0, batch_cpu,
        batch_main_cpu, batch_same ? "true" : "false");
    free(corpus);
    simlsh_signature_free(sig);
    simlsh_signature_free(sig_raw);
    simlsh_params_free(p);
    simlsh_params_free(p_raw);
    return 0;
}
