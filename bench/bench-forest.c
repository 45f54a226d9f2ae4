/*
 * simlsh-bench forest: insert and top-k query speed of the LSH Forest on
 * the same synthetic corpus as `simlsh-bench index` (200-feature documents,
 * near copies sharing 190 features, Jaccard 0.905), and recall@k against
 * brute force over the stored signatures for a sample of the queries.
 *
 * simlsh-bench ensemble: insert and containment query speed of the LSH
 * Ensemble on sets of log-uniform sizes, queried with subsets of indexed
 * sets (so each query's source set contains it fully), with and without
 * verification, and how often the source set is found.
 *
 * Only the library calls are timed; building signatures is not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "simlsh.h"

#define NFEAT 200
#define NCHANGED 10
#define CHUNK 4096
#define MAX_QUERIES 20000
#define RECALL_QUERIES 50
#define MIN_SIM 0.2

/* Peak resident memory of the process, MB (ru_maxrss is in KiB on Linux). */
static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* As bench-index.c: document i copies src[i] when src[i] != i. */
static int fill_sig(simlsh_signature *sig, uint64_t seed, const uint32_t *src, size_t i)
{
    uint64_t f[NFEAT];
    uint64_t base = src[i];
    for (size_t k = 0; k < NFEAT; k++)
        f[k] = mix(seed ^ mix(base * NFEAT + k));
    if (base != i)
        for (size_t k = 0; k < NCHANGED; k++)
            f[k] = mix(~seed ^ mix((uint64_t)i * NFEAT + k));
    if (simlsh_signature_clear(sig) != 0)
        return -1;
    return simlsh_signature_add_features(sig, f, NFEAT);
}

typedef struct {
    uint64_t id;
    uint32_t eq;
} ranked;

static int ranked_cmp(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    if (a->eq != b->eq)
        return a->eq > b->eq ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int parse(int argc, char **argv, size_t *docs, long *bands, long *rows, long *num_perm,
                 double *rate, uint64_t *seed, long *k)
{
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || v == NULL)
            return -1;
        if (strcmp(a, "--docs") == 0)
            *docs = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(a, "--trees") == 0)
            *bands = strtol(v, NULL, 10);
        else if (strcmp(a, "--depth") == 0)
            *rows = strtol(v, NULL, 10);
        else if (strcmp(a, "--num-perm") == 0)
            *num_perm = strtol(v, NULL, 10);
        else if (strcmp(a, "--dup-rate") == 0 || strcmp(a, "--threshold") == 0)
            *rate = strtod(v, NULL);
        else if (strcmp(a, "--seed") == 0)
            *seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--k") == 0)
            *k = strtol(v, NULL, 10);
        else
            return -1;
    }
    return 0;
}

int bench_forest(int argc, char **argv)
{
    size_t docs = 200000;
    long trees = 0, depth = 0, num_perm = 128, k = 10;
    double dup_rate = 0.1;
    uint64_t seed = 1;
    if (parse(argc, argv, &docs, &trees, &depth, &num_perm, &dup_rate, &seed, &k) < 0 || docs < 2 ||
        docs > 100000000 || !(dup_rate >= 0 && dup_rate < 1) || k < 1) {
        fprintf(stderr, "usage: simlsh-bench forest [--docs N] [--trees L] [--depth D] "
                        "[--num-perm P] [--dup-rate F] [--k K] [--seed N]\n");
        return 2;
    }
    simlsh_params *p = NULL;
    simlsh_forest *f = NULL;
    simlsh_results *res = NULL;
    if (simlsh_params_new(&p, NULL) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, trees) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, depth) != 0 || simlsh_forest_new(&f, p) != 0 ||
        simlsh_results_new(&res, NULL) != 0) {
        fprintf(stderr, "simlsh-bench forest: bad parameters (trees * depth <= num_perm?)\n");
        return 1;
    }
    simlsh_params *fp = NULL;
    int64_t got_l = 0, got_d = 0;
    simlsh_forest_params(&fp, f);
    simlsh_params_get_int(fp, SIMLSH_PARAM_BANDS, &got_l);
    simlsh_params_get_int(fp, SIMLSH_PARAM_ROWS, &got_d);
    simlsh_params_free(fp);

    uint32_t *src = malloc(docs * sizeof *src), *bases = malloc(docs * sizeof *bases);
    uint32_t *vals = malloc(docs * (size_t)num_perm * sizeof *vals);
    if (src == NULL || bases == NULL || vals == NULL) {
        fprintf(stderr, "simlsh-bench forest: out of memory\n");
        return 1;
    }
    size_t nbases = 0;
    uint64_t r = seed;
    for (size_t i = 0; i < docs; i++) {
        r = mix(r);
        if (nbases > 0 && (double)(r >> 11) * 0x1.0p-53 < dup_rate) {
            src[i] = bases[mix(r ^ 0xabc) % nbases];
        } else {
            src[i] = (uint32_t)i;
            bases[nbases++] = (uint32_t)i;
        }
    }
    free(bases);

    simlsh_signature *chunk[CHUNK];
    for (size_t c = 0; c < CHUNK; c++)
        if (simlsh_signature_new(&chunk[c], p) != 0)
            return 1;
    double insert_s = 0, insert_cpu_s = 0;
    for (size_t first = 0; first < docs; first += CHUNK) {
        size_t n = docs - first < CHUNK ? docs - first : CHUNK;
        for (size_t c = 0; c < n; c++) {
            size_t cnt;
            fill_sig(chunk[c], seed, src, first + c);
            simlsh_signature_values(vals + (first + c) * (size_t)num_perm, (size_t)num_perm, &cnt,
                                    chunk[c]);
        }
        double t0 = bench_now(), c0 = cpu_now();
        for (size_t c = 0; c < n; c++)
            if (simlsh_forest_insert(f, first + c, chunk[c]) != 0)
                return 1;
        insert_s += bench_now() - t0;
        insert_cpu_s += cpu_now() - c0;
    }

    size_t nq = docs < MAX_QUERIES ? docs : MAX_QUERIES;
    simlsh_signature **qs = malloc(nq * sizeof *qs);
    size_t *qdoc = malloc(nq * sizeof *qdoc);
    for (size_t q = 0; q < nq; q++) {
        if (simlsh_signature_new(&qs[q], p) != 0)
            return 1;
        qdoc[q] = mix(seed + q) % docs;
        fill_sig(qs[q], seed, src, qdoc[q]);
    }
    size_t done = 0, rows_seen = 0;
    double t0 = bench_now(), c0 = cpu_now(), query_s;
    do {
        for (size_t q = 0; q < nq; q++) {
            if (simlsh_forest_query_topk(res, f, qs[q], (size_t)k) != 0)
                return 1;
            rows_seen += simlsh_results_count(res);
        }
        done += nq;
        query_s = bench_now() - t0;
    } while (query_s < 0.5);
    double qps = (double)done / query_s, qps_cpu = (double)done / (cpu_now() - c0);

    /* recall@k against brute force over the signatures (same ranking:
     * estimate, then id) on the first queries; ties at the k-th estimate
     * count as found. "all" counts every one of the brute-force top k,
     * which for a document with few neighbours means documents at noise
     * level (1 or 2 equal values by chance) that share no tree prefix and
     * that no LSH scheme finds; the headline figure counts the top-k
     * documents with an estimate of at least MIN_SIM. */
    ranked *all = malloc(docs * sizeof *all);
    size_t hits = 0, wanted = 0, hits_all = 0, wanted_all = 0;
    for (size_t q = 0; q < nq && q < RECALL_QUERIES; q++) {
        uint32_t qv[1024];
        size_t cnt;
        simlsh_signature_values(qv, 1024, &cnt, qs[q]);
        for (size_t d = 0; d < docs; d++) {
            const uint32_t *v = vals + d * (size_t)num_perm;
            uint32_t eq = 0;
            for (long i = 0; i < num_perm; i++)
                eq += v[i] == qv[i];
            all[d].id = d;
            all[d].eq = eq;
        }
        qsort(all, docs, sizeof *all, ranked_cmp);
        if (simlsh_forest_query_topk(res, f, qs[q], (size_t)k) != 0)
            return 1;
        size_t want = docs < (size_t)k ? docs : (size_t)k;
        uint32_t kth = all[want - 1].eq, min_eq = (uint32_t)ceil(MIN_SIM * (double)num_perm);
        const double *sc = simlsh_results_scores(res);
        for (size_t i = 0; i < simlsh_results_count(res); i++) {
            uint32_t eq = (uint32_t)(sc[i] * (double)num_perm + 0.5);
            hits_all += eq >= kth;
            hits += eq >= kth && eq >= min_eq;
        }
        wanted_all += want;
        for (size_t i = 0; i < want; i++)
            wanted += all[i].eq >= min_eq;
    }

    printf("{\"bench\": \"forest\", \"docs\": %zu, \"trees\": %lld, \"depth\": %lld, "
           "\"num_perm\": %ld, \"k\": %ld, \"dup_rate\": %g, \"seed\": %llu, "
           "\"insert_s\": %.4f, \"inserts_per_s\": %.0f, \"queries_per_s\": %.0f, "
           "\"mean_rows_per_query\": %.3f, \"recall_at_k\": %.4f, \"recall_min_sim\": %g, "
           "\"recall_at_k_all\": %.4f, \"recall_queries\": %d, "
           "\"insert_cpu_s\": %.4f, \"queries_per_cpu_s\": %.0f}\n",
           docs, (long long)got_l, (long long)got_d, num_perm, k, dup_rate,
           (unsigned long long)seed, insert_s, (double)docs / insert_s, qps,
           (double)rows_seen / (double)done, wanted ? (double)hits / (double)wanted : 1.0, MIN_SIM,
           wanted_all ? (double)hits_all / (double)wanted_all : 1.0, RECALL_QUERIES, insert_cpu_s,
           qps_cpu);

    free(all);
    for (size_t q = 0; q < nq; q++)
        simlsh_signature_free(qs[q]);
    free(qs);
    free(qdoc);
    for (size_t c = 0; c < CHUNK; c++)
        simlsh_signature_free(chunk[c]);
    free(src);
    free(vals);
    simlsh_results_free(res);
    simlsh_forest_free(f);
    simlsh_params_free(p);
    return 0;
}

/* ---- ensemble ------------------------------------------------------------------------ */

#define MIN_SIZE 10
#define MAX_SIZE 5000

static uint64_t set_size(uint64_t seed, size_t i)
{
    double u = (double)(mix(seed ^ mix(i)) >> 11) * 0x1.0p-53;
    return (uint64_t)(exp(log(MIN_SIZE) + (log(MAX_SIZE) - log(MIN_SIZE)) * u) + 0.5);
}

static int fill_set(simlsh_signature *sig, uint64_t seed, size_t i, uint64_t n, uint64_t *buf)
{
    for (uint64_t e = 0; e < n; e++)
        buf[e] = mix(seed ^ mix((uint64_t)i * 1000003 + e));
    if (simlsh_signature_clear(sig) != 0)
        return -1;
    return simlsh_signature_add_features(sig, buf, n);
}

int bench_ensemble(int argc, char **argv)
{
    size_t docs = 100000;
    long trees = 0, depth = 0, num_perm = 128, unused = 0;
    double t = 0.5;
    uint64_t seed = 1;
    if (parse(argc, argv, &docs, &trees, &depth, &num_perm, &t, &seed, &unused) < 0 || docs < 2 ||
        docs > 100000000 || !(t > 0 && t <= 1)) {
        fprintf(stderr, "usage: simlsh-bench ensemble [--docs N] [--trees L] [--depth D] "
                        "[--num-perm P] [--threshold T] [--seed N]\n");
        return 2;
    }
    simlsh_params *p = NULL;
    simlsh_ensemble *e = NULL;
    simlsh_results *res = NULL;
    if (simlsh_params_new(&p, NULL) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, trees) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, depth) != 0 ||
        simlsh_ensemble_new(&e, p) != 0 || simlsh_results_new(&res, NULL) != 0) {
        fprintf(stderr, "simlsh-bench ensemble: bad parameters (trees * depth <= num_perm?)\n");
        return 1;
    }
    simlsh_params *ep = NULL;
    int64_t got_l = 0, got_d = 0;
    simlsh_ensemble_params(&ep, e);
    simlsh_params_get_int(ep, SIMLSH_PARAM_BANDS, &got_l);
    simlsh_params_get_int(ep, SIMLSH_PARAM_ROWS, &got_d);
    simlsh_params_free(ep);

    uint64_t *buf = malloc(MAX_SIZE * sizeof *buf);
    simlsh_signature *sig = NULL;
    if (buf == NULL || simlsh_signature_new(&sig, p) != 0)
        return 1;
    double insert_s = 0;
    for (size_t i = 0; i < docs; i++) {
        uint64_t n = set_size(seed, i);
        fill_set(sig, seed, i, n, buf);
        double t0 = bench_now();
        if (simlsh_ensemble_insert(e, i, sig, n) != 0)
            return 1;
        insert_s += bench_now() - t0;
    }
    /* Queries: the first q elements of a random indexed set, q in [10, 300]
     * and at most the set's size. */
    size_t nq = docs < 2000 ? docs : 2000;
    simlsh_signature **qs = malloc(nq * sizeof *qs);
    uint64_t *qsize = malloc(nq * sizeof *qsize), *qsrc = malloc(nq * sizeof *qsrc);
    for (size_t q = 0; q < nq; q++) {
        qsrc[q] = mix(seed + 77 * q) % docs;
        uint64_t x = set_size(seed, qsrc[q]);
        uint64_t want = 10 + mix(seed ^ q) % 291;
        qsize[q] = want < x ? want : x;
        if (simlsh_signature_new(&qs[q], p) != 0)
            return 1;
        fill_set(qs[q], seed, qsrc[q], x, buf); /* the elements, then keep q */
        fill_set(qs[q], seed, qsrc[q], qsize[q], buf);
    }
    double qps[2], qps_cpu[2], mean_rows[2], found[2];
    for (int v = 0; v < 2; v++) {
        int flags = v ? SIMLSH_QUERY_VERIFY : 0;
        size_t done = 0, rows = 0, hit = 0;
        double t0 = bench_now(), c0 = cpu_now(), el;
        do {
            for (size_t q = 0; q < nq; q++) {
                if (simlsh_ensemble_query(res, e, qs[q], qsize[q], t, flags) != 0)
                    return 1;
                size_t n = simlsh_results_count(res);
                rows += n;
                const uint64_t *ids = simlsh_results_a(res);
                for (size_t i = 0; i < n && done < nq; i++)
                    hit += ids[i] == qsrc[q];
            }
            done += nq;
            el = bench_now() - t0;
        } while (el < 0.5);
        qps[v] = (double)done / el;
        qps_cpu[v] = (double)done / (cpu_now() - c0);
        mean_rows[v] = (double)rows / (double)done;
        found[v] = (double)hit / (double)nq;
    }
    printf("{\"bench\": \"ensemble\", \"docs\": %zu, \"trees\": %lld, \"depth\": %lld, "
           "\"num_perm\": %ld, \"threshold\": %g, \"seed\": %llu, \"set_sizes\": [%d, %d], "
           "\"insert_s\": %.4f, \"inserts_per_s\": %.0f, "
           "\"queries_per_s\": %.0f, \"mean_rows_per_query\": %.2f, \"source_found\": %.4f, "
           "\"queries_per_s_verified\": %.0f, \"mean_rows_per_query_verified\": %.2f, "
           "\"source_found_verified\": %.4f, \"queries_per_cpu_s\": %.0f, "
           "\"queries_per_cpu_s_verified\": %.0f, \"peak_rss_mb\": %.1f}\n",
           docs, (long long)got_l, (long long)got_d, num_perm, t, (unsigned long long)seed,
           MIN_SIZE, MAX_SIZE, insert_s, (double)docs / insert_s, qps[0], mean_rows[0], found[0],
           qps[1], mean_rows[1], found[1], qps_cpu[0], qps_cpu[1], peak_rss_mb());
    for (size_t q = 0; q < nq; q++)
        simlsh_signature_free(qs[q]);
    free(qs);
    free(qsize);
    free(qsrc);
    free(buf);
    simlsh_signature_free(sig);
    simlsh_results_free(res);
    simlsh_ensemble_free(e);
    simlsh_params_free(p);
    return 0;
}
