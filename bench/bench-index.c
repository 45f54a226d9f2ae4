/*
 * simlsh-bench index: insert, query, batch query and clustering speed of
 * the LSH index on synthetic signatures with planted near duplicates, its
 * band-table memory per document per band, and the recall of the planted
 * pairs (the fraction that end up in the same cluster). Signatures are
 * built through the public API from random features: a base document has
 * 200 features; a near copy shares 190 of them (Jaccard 190/210 = 0.905).
 * Only the index calls are timed; building signatures is not.
 *
 * --threads T inserts with simlsh_index_insert_values() in batches of
 * BATCH_DOCS rows on T threads instead of one simlsh_index_insert() per
 * document. The insert figures then also give the calling thread's CPU
 * time (the serial part: with two or more threads it only starts and
 * joins them) and the other threads' total, so that the time on as many
 * idle cores is known even on a loaded machine, taking the threads to share
 * their units evenly (they claim them one at a time). Page faults (minor) of each insert pass and the
 * peak RSS are reported; --build-only 1 stops after inserting (for the
 * 10M-document memory check).
 */
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
#define BATCH 1024
#define BATCH_DOCS 65536

/* CPU time of the process: on a shared machine, wall time also counts
 * other programs' time slices; both are reported. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long minflt_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Document i copies src[i] (its base) when src[i] != i. */
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

static int usage(void)
{
    fprintf(stderr, "usage: simlsh-bench index [--docs N] [--bands B] [--rows R] "
                    "[--dup-rate F] [--seed N] [--num-perm P] [--store 0|1] [--threads T] "
                    "[--build-only 0|1] [--reserve 0|1]\n");
    return 2;
}

int bench_index(int argc, char **argv)
{
    size_t docs = 1000000;
    long bands = 16, rows = 8, num_perm = 128, store = 1, threads = 0, build_only = 0, reserve = 1;
    double dup_rate = 0.1;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || v == NULL)
            return usage();
        if (strcmp(a, "--docs") == 0)
            docs = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(a, "--bands") == 0)
            bands = strtol(v, NULL, 10);
        else if (strcmp(a, "--rows") == 0)
            rows = strtol(v, NULL, 10);
        else if (strcmp(a, "--dup-rate") == 0)
            dup_rate = strtod(v, NULL);
        else if (strcmp(a, "--seed") == 0)
            seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--num-perm") == 0)
            num_perm = strtol(v, NULL, 10);
        else if (strcmp(a, "--store") == 0)
            store = strtol(v, NULL, 10);
        else if (strcmp(a, "--threads") == 0)
            threads = strtol(v, NULL, 10);
        else if (strcmp(a, "--build-only") == 0)
            build_only = strtol(v, NULL, 10);
        else if (strcmp(a, "--reserve") == 0)
            reserve = strtol(v, NULL, 10);
        else
            return usage();
    }
    if (docs < 2 || docs > 100000000 || !(dup_rate >= 0 && dup_rate < 1) || threads < 0 ||
        threads > 256)
        return usage();

    simlsh_params *p = NULL;
    simlsh_index *ix = NULL;
    simlsh_results *res = NULL;
    if (simlsh_params_new(&p, NULL) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, bands) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, rows) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store) != 0 ||
        simlsh_index_new(&ix, p) != 0 || simlsh_results_new(&res, NULL) != 0) {
        fprintf(stderr, "simlsh-bench index: bad parameters (bands * rows <= num_perm?)\n");
        return 1;
    }

    /* Plant the duplicates: each near copy points at an earlier base. */
    uint32_t *src = malloc(docs * sizeof *src);
    uint32_t *bases = malloc(docs * sizeof *bases);
    size_t nbases = 0, planted = 0;
    uint64_t r = seed;
    for (size_t i = 0; i < docs; i++) {
        r = mix(r);
        if (nbases > 0 && (double)(r >> 11) * 0x1.0p-53 < dup_rate) {
            src[i] = bases[mix(r ^ 0xabc) % nbases];
            planted++;
        } else {
            src[i] = (uint32_t)i;
            bases[nbases++] = (uint32_t)i;
        }
    }
    free(bases);

    simlsh_signature *chunk[CHUNK];
    for (size_t k = 0; k < CHUNK; k++)
        if (simlsh_signature_new(&chunk[k], p) != 0)
            return 1;

    double t0 = bench_now();
    /* the tables' room, on the insert's threads (simlsh_index_reserve_v2) */
    if (reserve && simlsh_index_reserve_v2(ix, docs, threads > 0 ? (uint32_t)threads : 1) != 0) {
        fprintf(stderr, "simlsh-bench index: reserve failed\n");
        return 1;
    }
    double reserve_s = bench_now() - t0;
    /* Two passes: the first also pays for the first touch of fresh memory
     * (page faults, which dominate on some virtual machines); the second,
     * after clear() (which keeps the memory), is the steady-state cost. */
    double insert_s = 0, insert_warm_s = 0, insert_cpu_s = 0, insert_warm_cpu_s = 0;
    double main_cpu[2] = {0, 0}, critical[2] = {0, 0};
    long faults[2] = {0, 0};
    uint64_t *bids = NULL;
    uint32_t *bvals = NULL;
    if (threads > 0) {
        bids = malloc(BATCH_DOCS * sizeof *bids);
        bvals = malloc((size_t)BATCH_DOCS * (size_t)num_perm * sizeof *bvals);
        if (bids == NULL || bvals == NULL)
            return 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        double *acc = pass == 0 ? &insert_s : &insert_warm_s;
        double *cacc = pass == 0 ? &insert_cpu_s : &insert_warm_cpu_s;
        if (pass == 1 && simlsh_index_clear(ix) != 0)
            return 1;
        size_t step = threads > 0 ? BATCH_DOCS : CHUNK;
        for (size_t first = 0; first < docs; first += step) {
            size_t n = docs - first < step ? docs - first : step;
            if (threads > 0) {
                for (size_t k = 0; k < n; k++) {
                    size_t cnt;
                    fill_sig(chunk[0], seed, src, first + k);
                    simlsh_signature_values(bvals + k * (size_t)num_perm, (size_t)num_perm, &cnt,
                                            chunk[0]);
                    bids[k] = first + k;
                }
            } else {
                for (size_t k = 0; k < n; k++)
                    fill_sig(chunk[k], seed, src, first + k);
            }
            long fa = minflt_now();
            t0 = bench_now();
            double c0 = cpu_now(), m0 = thread_cpu_now();
            if (threads > 0) {
                if (simlsh_index_insert_values(ix, bids, bvals, n, (uint32_t)threads) != 0)
                    return 1;
            } else {
                for (size_t k = 0; k < n; k++)
                    if (simlsh_index_insert(ix, first + k, chunk[k]) != 0)
                        return 1;
            }
            *acc += bench_now() - t0;
            *cacc += cpu_now() - c0;
            double mc = thread_cpu_now() - m0, pc = cpu_now() - c0;
            main_cpu[pass] += mc;
            /* Per call, the caller's serial part plus the threads' share:
             * what the call would take on as many idle cores, summed over
             * the calls, whatever else runs. */
            critical[pass] += threads > 1 ? mc + (pc - mc) / threads : pc;
            faults[pass] += minflt_now() - fa; /* the insert's own faults */
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
    free(bids);
    free(bvals);
    size_t total = 0, tabs = 0;
    simlsh_index_memory(&total, &tabs, ix);
    /* The busiest thread's share: the caller's, or one worker's share of
     * the rest, whichever is more; it bounds the speed-up on as many real
     * cores. */
    double other[2] = {insert_cpu_s - main_cpu[0], insert_warm_cpu_s - main_cpu[1]};
    double busiest[2];
    for (int k = 0; k < 2; k++) {
        double c = k == 0 ? insert_cpu_s : insert_warm_cpu_s;
        double w = threads > 1 ? other[k] / threads : other[k];
        double m = main_cpu[k] > w ? main_cpu[k] : w;
        busiest[k] = c > 0 ? m / c : 0;
    }
    printf("{\"bench\": \"index-build\", \"docs\": %zu, \"bands\": %ld, \"rows\": %ld, "
           "\"num_perm\": %ld, \"store_signatures\": %ld, \"threads\": %ld, "
           "\"reserve_s\": %.4f, \"build_s\": %.4f, \"insert_s\": %.4f, \"insert_warm_s\": %.4f, "
           "\"insert_cpu_s\": %.4f, "
           "\"insert_warm_cpu_s\": %.4f, \"insert_main_thread_cpu_s\": %.4f, "
           "\"insert_warm_main_thread_cpu_s\": %.4f, \"insert_busiest_share\": %.3f, "
           "\"insert_warm_busiest_share\": %.3f, \"insert_critical_cpu_s\": %.4f, "
           "\"insert_warm_critical_cpu_s\": %.4f, \"reserve\": %ld, \"insert_minflt\": %ld, "
           "\"insert_warm_minflt\": %ld, \"peak_rss_mb\": %.1f, \"memory_total_bytes\": %zu}\n",
           docs, bands, rows, num_perm, store, threads, reserve_s, reserve_s + insert_s, insert_s,
           insert_warm_s, insert_cpu_s, insert_warm_cpu_s, main_cpu[0], main_cpu[1],
           threads > 0 ? busiest[0] : 1.0, threads > 0 ? busiest[1] : 1.0, critical[0], critical[1],
           reserve, faults[0], faults[1], peak_rss_mb, total);
    fflush(stdout);
    if (build_only) {
        for (size_t k = 0; k < CHUNK; k++)
            simlsh_signature_free(chunk[k]);
        free(src);
        simlsh_results_free(res);
        simlsh_index_free(ix);
        simlsh_params_free(p);
        return 0;
    }

    /* Queries: signatures of random indexed documents. */
    size_t nq = docs < MAX_QUERIES ? docs : MAX_QUERIES;
    simlsh_signature **qs = malloc(nq * sizeof *qs);
    for (size_t k = 0; k < nq; k++) {
        if (simlsh_signature_new(&qs[k], p) != 0)
            return 1;
        fill_sig(qs[k], seed, src, mix(seed + k) % docs);
    }
    size_t done = 0, rows_seen = 0;
    t0 = bench_now();
    double c0 = cpu_now();
    double single_s;
    do {
        for (size_t k = 0; k < nq; k++) {
            if (simlsh_index_query(res, ix, qs[k], 0) != 0)
                return 1;
            rows_seen += simlsh_results_count(res);
        }
        done += nq;
        single_s = bench_now() - t0;
    } while (single_s < 0.5);
    double qps_single = (double)done / single_s;
    double qps_single_cpu = (double)done / (cpu_now() - c0);
    done = 0;
    t0 = bench_now();
    c0 = cpu_now();
    double batch_s;
    do {
        for (size_t k = 0; k < nq; k += BATCH) {
            size_t n = nq - k < BATCH ? nq - k : BATCH;
            if (simlsh_index_query_batch(res, ix, (const simlsh_signature *const *)qs + k, n, 0) !=
                0)
                return 1;
        }
        done += nq;
        batch_s = bench_now() - t0;
    } while (batch_s < 0.5);
    double qps_batch = (double)done / batch_s;
    double qps_batch_cpu = (double)done / (cpu_now() - c0);

    t0 = bench_now();
    if (store && simlsh_index_cluster(res, ix, SIMLSH_QUERY_VERIFY) != 0)
        return 1;
    double cluster_verify_s = store ? bench_now() - t0 : -1;
    t0 = bench_now();
    c0 = cpu_now();
    if (simlsh_index_cluster(res, ix, 0) != 0)
        return 1;
    double cluster_s = bench_now() - t0, cluster_cpu_s = cpu_now() - c0;

    /* Ids are 0..docs-1 and rows are sorted by id: row i is document i. */
    const uint64_t *label = simlsh_results_b(res);
    size_t found = 0, clusters = 0;
    for (size_t i = 0; i < docs; i++) {
        if (src[i] != i && label[i] == label[src[i]])
            found++;
        clusters += label[i] == i;
    }
    printf("{\"bench\": \"index\", \"docs\": %zu, \"bands\": %ld, \"rows\": %ld, "
           "\"num_perm\": %ld, \"store_signatures\": %ld, \"dup_rate\": %g, \"seed\": %llu, "
           "\"insert_s\": %.4f, \"insert_warm_s\": %.4f, \"reserve_s\": %.4f, "
           "\"queries_per_s_single\": %.0f, \"queries_per_s_batch\": %.0f, "
           "\"mean_rows_per_query\": %.3f, "
           "\"cluster_s\": %.4f, \"cluster_verify_s\": %.4f, "
           "\"bytes_per_doc_band\": %.3f, \"memory_total_bytes\": %zu, "
           "\"planted_pairs\": %zu, \"recall\": %.6f, \"clusters\": %zu, "
           "\"insert_cpu_s\": %.4f, \"insert_warm_cpu_s\": %.4f, "
           "\"queries_per_cpu_s_single\": %.0f, \"queries_per_cpu_s_batch\": %.0f, "
           "\"cluster_cpu_s\": %.4f}\n",
           docs, bands, rows, num_perm, store, dup_rate, (unsigned long long)seed, insert_s,
           insert_warm_s, reserve_s, qps_single, qps_batch,
           (double)rows_seen / (double)(qps_single * single_s), cluster_s, cluster_verify_s,
           (double)tabs / (double)docs / (double)bands, total, planted,
           planted ? (double)found / (double)planted : 1.0, clusters, insert_cpu_s,
           insert_warm_cpu_s, qps_single_cpu, qps_batch_cpu, cluster_cpu_s);

    for (size_t k = 0; k < nq; k++)
        simlsh_signature_free(qs[k]);
    free(qs);
    for (size_t k = 0; k < CHUNK; k++)
        simlsh_signature_free(chunk[k]);
    free(src);
    simlsh_results_free(res);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    return 0;
}
