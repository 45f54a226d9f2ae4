/*
 * simlsh-dedup: find near-duplicate documents in files, directories, line
 * files and JSONL files. The manual is docs/cli.md.
 *
 * Built on the public API only: params -> signatures (signed in worker
 * threads) -> index (inserted in input order) -> clusters or pairs.
 */
#include "dedup.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "simlsh-dedup"

static const char *const unit_names[] = {"byte", "char", "word"};
static const char *const verify_names[] = {"none", "estimate", "exact"};

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

static double peak_memory(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        return (double)ru.ru_maxrss * 1024.0; /* KiB on Linux */
    return 0;
}

static const struct {
    int flag;
    const char *name;
} norm_names[] = {{SIMLSH_NORM_LOWER_ASCII, "lower"},
                  {SIMLSH_NORM_COLLAPSE_SPACE, "space"},
                  {SIMLSH_NORM_STRIP_PUNCT, "punct"},
                  {SIMLSH_NORM_CASEFOLD, "casefold"},
                  {SIMLSH_NORM_NFKC, "nfkc"}};

/* "lower,space" for a normalisation bitmask, "none" for 0: the spelling
 * --normalize takes. */
static void normalize_names(char *buf, size_t cap, int64_t norm)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof norm_names / sizeof norm_names[0]; i++)
        if (norm & norm_names[i].flag)
            o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%s", o ? "," : "",
                                  norm_names[i].name);
    if (o == 0)
        snprintf(buf, cap, "none");
}

/* P(candidate | J = threshold) of the index's banding. */
static double p_at_threshold(double threshold, uint32_t b, uint32_t rows)
{
    double p = 0;
    if (b && rows && simlsh_lsh_probability(&p, b, rows, threshold) != 0)
        p = 0;
    return p;
}

static const char *const cluster_names[] = {"star", "components"};

/* The banding's recall at the threshold and what the verification did. */
static void verify_summary(struct run *r, uint32_t b, uint32_t rows)
{
    fprintf(stderr,
            PROG ": banding: P(candidate | J = %.2f) = %.4f%s; %" PRIu64
                 " candidate pair%s, groups: %s\n",
            r->threshold, p_at_threshold(r->threshold, b, rows),
            r->stats.vs.recall_banding ? " (chosen for --recall)" : "", r->stats.vs.candidates,
            plural(r->stats.vs.candidates), cluster_names[r->opt->cluster]);
    if (r->opt->verify != VERIFY_EXACT)
        return;
    char held[32];
    human_bytes(held, sizeof held, (double)r->stats.vs.set_bytes_peak);
    if (r->stats.vs.prefilter > 0)
        fprintf(stderr,
                PROG ": verify exact: candidates with a MinHash estimate below %.3f"
                     " dropped first\n",
                r->stats.vs.prefilter);
    fprintf(stderr,
            PROG ": verify exact: %" PRIu64 " pair%s by exact Jaccard, %" PRIu64
                 " document read%s in %" PRIu64 " batch%s, at most %s of shingle sets (%d"
                 " bytes a shingle)\n",
            r->stats.vs.exact, plural(r->stats.vs.exact), r->stats.vs.reads,
            plural(r->stats.vs.reads), r->stats.vs.batches, r->stats.vs.batches == 1 ? "" : "es",
            held, r->stats.vs.bytes_per_shingle);
    if (r->stats.vs.identical || r->stats.vs.edits)
        fprintf(stderr,
                PROG ": verify exact: of them %" PRIu64 " identical to their group's kept text,"
                     " %" PRIu64 " near-copies decided from their edits\n",
                r->stats.vs.identical, r->stats.vs.edits);
    if (r->stats.vs.sampled)
        fprintf(stderr,
                PROG ": verify exact: of them %" PRIu64 " rejected from a sample of their"
                     " shingles (a pair at the threshold is lost with p < 2e-6)\n",
                r->stats.vs.sampled);
    if (r->stats.vs.estimated)
        fprintf(stderr, PROG ": verify exact: %" PRIu64 " pair%s decided by estimate: %s%s%s\n",
                r->stats.vs.estimated, plural(r->stats.vs.estimated),
                r->store.first_new ? "pairs with a document from --index" : "",
                r->store.first_new && r->stats.vs.docs_unread ? ", and " : "",
                r->stats.vs.docs_unread ? "documents that could not be read again" : "");
}

static void summary(struct run *r, double elapsed, uint64_t clusters, uint64_t dups)
{
    char bytes[32], mem[32];
    human_bytes(bytes, sizeof bytes, (double)r->stats.bytes);
    human_bytes(mem, sizeof mem, peak_memory());
    double rate = elapsed > 0 ? (double)r->stats.bytes / elapsed / 1e6 : 0;
    fprintf(stderr, PROG ": %" PRIu64 " document%s (%s", r->stats.docs, plural(r->stats.docs),
            bytes);
    if (r->store.first_new)
        fprintf(stderr, "; %" PRIu64 " more in %s", store_old_count(&r->store),
                qname(r->opt->load_index));
    fprintf(stderr, "), %" PRIu64 " cluster%s, %" PRIu64 " duplicate%s, %" PRIu64 " skipped",
            clusters, plural(clusters), dups, plural(dups), r->stats.skipped);
    if (r->stats.aliases)
        fprintf(stderr, ", %" PRIu64 " alias%s", r->stats.aliases,
                r->stats.aliases == 1 ? "" : "es");
    if (r->stats.already_indexed)
        fprintf(stderr, ", %" PRIu64 " already indexed", r->stats.already_indexed);
    if (r->stats.replaced)
        fprintf(stderr, ", %" PRIu64 " replaced", r->stats.replaced);
    if (r->stats.removed)
        fprintf(stderr, ", %" PRIu64 " removed", r->stats.removed);
    fprintf(stderr, "; %.2f s, %.1f MB/s, peak memory %s\n", elapsed, rate, mem);
    int64_t unit = 0, k = 0, np = 0;
    uint32_t b = 0, rows = 0;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_UNIT, &unit);
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_K, &k);
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &np);
    simlsh_index_bands(&b, &rows, r->store.index);
    fprintf(stderr,
            PROG ": %s %" PRId64 "-shingles, %" PRId64 " permutations, %u bands x %u"
                 " rows, threshold %.2f, verify %s, %d thread%s\n",
            unit >= 0 && unit <= 2 ? unit_names[unit] : "?", k, np, b, rows, r->threshold,
            verify_names[r->opt->verify], r->nthreads, r->nthreads == 1 ? "" : "s");
    verify_summary(r, b, rows);
    struct census c;
    uint64_t ndocs = r->store.names.count;
    if (bucket_census(&r->store, &c) == 0 && c.n > 0 && c.size[0] >= 100 &&
        c.size[0] * 10 >= ndocs) {
        size_t nl = 0;
        const char *name = c.sample[0] < r->store.names.count
                               ? strlist_get(&r->store.names, c.sample[0], &nl)
                               : "?";
        fprintf(stderr,
                PROG ": note: one bucket (band %" PRIu64 ") holds %" PRIu64
                     " documents, %.0f %% of them (%s is one): a template or boilerplate they"
                     " share; each document of it is compared with the others that pass the"
                     " estimate, which is slow when they are unlike (--stats lists the largest"
                     " buckets; --giant-cost 0 sets such buckets aside)\n",
                c.band[0], c.size[0], 100.0 * (double)c.size[0] / (double)(ndocs ? ndocs : 1),
                qnamen(name, nl));
    }
    if (r->stats.vs.set_aside)
        fprintf(stderr,
                PROG ": note: %" PRIu64 " bucket%s of unlike documents (%" PRIu64
                     " members in all) set aside (--giant-buckets, --giant-cost): their members"
                     " meet only through their other buckets (pairs that share no other bucket"
                     " are not found)\n",
                r->stats.vs.set_aside, plural(r->stats.vs.set_aside), r->stats.vs.set_aside_docs);
    /* The whole contract, so a run can be reproduced with the library
     * alone (whose defaults differ: normalisation and the weights). */
    fputs(PROG ": contract:", stderr);
    for (int key = 1; key < 64; key++) {
        const char *name = simlsh_params_key_name(key);
        int64_t iv;
        double dv;
        if (!name || key == SIMLSH_PARAM_ISA) /* ISA is not part of the contract */
            continue;
        if (simlsh_params_get_int(r->store.params, key, &iv) == 0) {
            if (key == SIMLSH_PARAM_BANDS)
                iv = b;
            else if (key == SIMLSH_PARAM_ROWS)
                iv = rows;
            if (key == SIMLSH_PARAM_NORMALIZE) {
                char norm[64];
                normalize_names(norm, sizeof norm, iv);
                fprintf(stderr, " %s=%s", name, norm);
            } else if (key == SIMLSH_PARAM_UNIT && iv >= 0 && iv <= 2) {
                fprintf(stderr, " %s=%s", name, unit_names[iv]);
            } else if (key == SIMLSH_PARAM_SCHEME) {
                fprintf(stderr, " %s=%s", name, iv == SIMLSH_SCHEME_CLASSIC ? "classic" : "oph");
            } else if (key == SIMLSH_PARAM_UTF8_POLICY) {
                fprintf(stderr, " %s=%s", name, iv == SIMLSH_UTF8_REJECT ? "reject" : "replace");
            } else {
                fprintf(stderr, " %s=%" PRId64, name, iv);
            }
        } else if (simlsh_params_get_double(r->store.params, key, &dv) == 0) {
            fprintf(stderr, " %s=%g", name, dv);
        }
    }
    fputc('\n', stderr);
}

/* --stats: CPU seconds of each thread of the tool (the main thread now,
 * each worker as it ended), what the library's per-call threads used (the
 * process's CPU less those), and where the read phase went: reading and
 * splitting line ranges, parsing and signing (all threads), inserting and
 * waiting for workers (main thread). */
static void write_thread_stats(const struct run_stats *st, FILE *f)
{
    double mine = thread_cpu_seconds(), sum = mine;
    double total = cpu_seconds(); /* after: it includes the main thread's */
    fprintf(f, ",\"thread_cpu_seconds\":{\"main\":%.6f,\"workers\":[", mine);
    for (size_t i = 0; i < st->nworkers_run; i++) {
        fprintf(f, "%s%.6f", i ? "," : "", st->worker_cpu[i]);
        sum += st->worker_cpu[i];
    }
    fprintf(f, "],\"library_threads\":%.6f,\"process\":%.6f}", total > sum ? total - sum : 0,
            total);
    fprintf(f,
            ",\"read_phase\":{\"reading_cpu_seconds\":%.6f,\"signing_cpu_seconds\":%.6f,"
            "\"inserting_wall_seconds\":%.6f,\"inserting_main_cpu_seconds\":%.6f,"
            "\"waiting_wall_seconds\":%.6f,\"main_cpu_seconds_at_end\":%.6f}",
            st->cpu_reading, st->cpu_signing, st->wall_inserting, st->cpu_inserting,
            st->wall_waiting, st->cpu_main_read);
}

static const char *const keep_names[] = {"first", "shortest", "longest", "oldest", "newest"};

/* --stats: the summary as one JSON object, with the whole contract (every
 * key the library names, normalisation spelt out too), so a run can be
 * reproduced and compared from this file alone. */
static void write_stats(struct run *r, FILE *f, double elapsed, uint64_t clusters, uint64_t dups,
                        int status)
{
    fprintf(f, "{\"program\":\"" PROG "\",\"version\":\"%s\"", simlsh_version_string());
    fprintf(f, ",\"exit_status\":%d,\"documents\":%" PRIu64 ",\"bytes\":%" PRIu64, status,
            r->stats.docs, r->stats.bytes);
    fprintf(f,
            ",\"indexed_before\":%" PRIu64 ",\"clusters\":%" PRIu64 ",\"duplicates\":%" PRIu64
            ",\"skipped\":%" PRIu64 ",\"aliases\":%" PRIu64 ",\"duplicate_ids\":%" PRIu64,
            r->store.first_new, clusters, dups, r->stats.skipped, r->stats.aliases,
            r->stats.duplicate_ids);
    fprintf(f, ",\"already_indexed\":%" PRIu64 ",\"replaced\":%" PRIu64 ",\"removed\":%" PRIu64,
            r->stats.already_indexed, r->stats.replaced, r->stats.removed);
    fprintf(f, ",\"changed\":%" PRIu64 ",\"inputs_cut\":%" PRIu64, r->stats.changed, r->inputs_cut);
    fprintf(f, ",\"truncated\":%s,\"seconds\":%.3f,\"peak_memory_bytes\":%.0f,\"threads\":%d",
            r->truncated ? "true" : "false", elapsed, peak_memory(), r->nthreads);
    fprintf(f, ",\"verify\":\"%s\",\"keep\":\"%s\",\"max_pairs\":%zu,\"max_doc_bytes\":%" PRIu64,
            verify_names[r->opt->verify], keep_names[r->opt->keep], r->opt->max_pairs,
            r->opt->max_doc_bytes);
    fputs(",\"params\":{", f);
    int first = 1;
    for (int key = 1; key < 64; key++) {
        const char *name = simlsh_params_key_name(key);
        int64_t iv;
        double dv;
        if (!name)
            continue;
        if (simlsh_params_get_int(r->store.params, key, &iv) == 0)
            fprintf(f, "%s\"%s\":%" PRId64, first ? "" : ",", name, iv);
        else if (simlsh_params_get_double(r->store.params, key, &dv) == 0)
            fprintf(f, "%s\"%s\":%.17g", first ? "" : ",", name, dv);
        else
            continue;
        first = 0;
    }
    int64_t unit = 0, norm = 0, scheme = 0;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_UNIT, &unit);
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NORMALIZE, &norm);
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_SCHEME, &scheme);
    fprintf(f, "},\"unit\":\"%s\",\"scheme\":\"%s\",\"normalize\":[",
            unit >= 0 && unit <= 2 ? unit_names[unit] : "?",
            scheme == SIMLSH_SCHEME_CLASSIC ? "classic" : "oph");
    first = 1;
    for (size_t i = 0; i < sizeof norm_names / sizeof norm_names[0]; i++) {
        if (norm & norm_names[i].flag) {
            fprintf(f, "%s\"%s\"", first ? "" : ",", norm_names[i].name);
            first = 0;
        }
    }
    uint32_t b = 0, rows = 0;
    uint64_t fp = 0;
    simlsh_index_bands(&b, &rows, r->store.index);
    simlsh_index_fingerprint(&fp, r->store.index);
    fprintf(f, "],\"bands\":%u,\"rows\":%u,\"fingerprint\":\"%016" PRIx64 "\"", b, rows, fp);
    fprintf(f, ",\"banding\":{\"p_at_threshold\":%.6f,\"chosen_for_recall\":%s,\"recall\":%g}",
            p_at_threshold(r->threshold, b, rows), r->stats.vs.recall_banding ? "true" : "false",
            r->opt->recall);
    fprintf(f,
            ",\"cluster\":\"%s\",\"verification\":{\"candidates\":%" PRIu64 ",\"exact\":%" PRIu64
            ",\"estimated\":%" PRIu64 ",\"documents_not_reread\":%" PRIu64 ",\"reads\":%" PRIu64
            ",\"batches\":%" PRIu64 ",\"memory_budget\":%" PRIu64 ",\"set_bytes_peak\":%" PRIu64
            ",\"shingles_peak\":%" PRIu64 ",\"bytes_per_shingle\":%d,\"prefilter\":%.6f"
            ",\"reads_from_memory\":%" PRIu64 "}",
            cluster_names[r->opt->cluster], r->stats.vs.candidates, r->stats.vs.exact,
            r->stats.vs.estimated, r->stats.vs.docs_unread, r->stats.vs.reads, r->stats.vs.batches,
            r->stats.vs.budget, r->stats.vs.set_bytes_peak, r->stats.vs.shingles_peak,
            r->stats.vs.bytes_per_shingle, r->stats.vs.prefilter, r->stats.vs.cached);
    fprintf(f,
            ",\"grouping\":{\"bucket_visits\":%" PRIu64 ",\"identical\":%" PRIu64
            ",\"from_edits\":%" PRIu64 ",\"rejected_from_sample\":%" PRIu64
            ",\"buckets_set_aside\":%" PRIu64 ",\"documents_in_set_aside\":%" PRIu64 "}",
            r->stats.vs.visits, r->stats.vs.identical, r->stats.vs.edits, r->stats.vs.sampled,
            r->stats.vs.set_aside, r->stats.vs.set_aside_docs);
    struct census c;
    if (bucket_census(&r->store, &c) == 0) {
        fprintf(f,
                ",\"buckets\":{\"large_size\":%" PRIu64 ",\"documents_in_large\":%" PRIu64
                ",\"largest\":[",
                c.min_size, c.docs_in_large);
        for (size_t i = 0; i < c.n; i++) {
            size_t nl = 0;
            const char *name = c.sample[i] < r->store.names.count
                                   ? strlist_get(&r->store.names, c.sample[i], &nl)
                                   : "";
            fprintf(f, "%s{\"size\":%" PRIu64 ",\"band\":%" PRIu64 ",\"sample\":", i ? "," : "",
                    c.size[i], c.band[i]);
            escape_json(f, name, nl);
            fputc('}', f);
        }
        fputs("]}", f);
    }
    /* the running phase is closed first, so the phases add up to the run */
    phase_switch(&r->stats, r->stats.phase);
    fputs(",\"phases\":{", f);
    for (int ph = 0; ph < PH_COUNT; ph++)
        fprintf(f, "%s\"%s\":{\"wall_seconds\":%.6f,\"cpu_seconds\":%.6f}", ph ? "," : "",
                phase_names[ph], r->stats.phase_wall[ph], r->stats.phase_cpu[ph]);
    fputc('}', f);
    write_thread_stats(&r->stats, f);
    fputs("}\n", f);
}

static void run_free(struct run *r, struct options *opt)
{
    free(r->in.locs);
    store_free(&r->store);
    free(r->stats.worker_cpu);
    simlsh_index_free(r->store.index);
    simlsh_params_free(r->store.params);
    strlist_free(&r->in.paths);
    strlist_free(&r->store.names);
    strlist_free(&r->in.skips);
    strlist_free(&r->in.records);
    free(r->in.idset);
    free(r->in.pmeta);
    free(r->store.id_bytes);
    free(r->store.id_mtime);
    fileids_free(&r->in.input_ids);
    fileids_free(&opt->list_ids);
    for (size_t i = 0; i < opt->nowned; i++)
        free(opt->owned[i]);
    free(opt->owned);
    free(opt->globs_in);
    free(opt->remove_names);
    free(opt->globs_ex);
    free(opt->inputs);
}

/* Everything after setup; returns the exit status. */
static int dedup(struct run *r, const struct options *opt)
{
    setup_run(r, opt);
    int rc = 0;
    size_t lines_inputs = 0;
    for (size_t i = 0; i < opt->ninputs; i++)
        lines_inputs += opt->inputs[i].kind == INPUT_LINES;
    /* simlsh-dedup 0.2 named the lines of a first run's single --lines
     * input "1", "2", ...; they can never match this run's FILE:LINE */
    if (opt->load_index && lines_inputs && store_has(r, "1", 1))
        fprintf(stderr,
                PROG ": warning: %s holds documents named by a line number alone (\"1\"), "
                     "which --lines names FILE:LINE with --index: its lines are not found as "
                     "already indexed; build it again (--save-index without --index)\n",
                qname(opt->load_index));

    /* Every input is known before any output is opened, so no output can
     * replace one; outputs are then created at once (a bad -o fails before
     * the long part of the run) as temporary files renamed at the end. */
    if (inputs_enumerate(r) != 0)
        return r->failed ? r->failed : EXIT_DEDUP_INPUT;
    if (check_outputs(&r->in, opt, PROG) != 0)
        return EXIT_DEDUP_USAGE;
    struct outfile out, stats, skipped;
    memset(&stats, 0, sizeof stats);
    memset(&skipped, 0, sizeof skipped);
    if (outfile_open(&out, opt->output_path) != 0)
        return EXIT_DEDUP_INTERNAL;
    int status = EXIT_DEDUP_OK;
    if ((opt->stats_path && outfile_open(&stats, opt->stats_path) != 0) ||
        (opt->skipped_path && outfile_open(&skipped, opt->skipped_path) != 0)) {
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    static char outbuf[1 << 16];
    setvbuf(out.f, outbuf, _IOFBF, sizeof outbuf);

    uint64_t clusters = 0, dups = 0;
    if (r->in.paths.count && !opt->load_index) {
        rc = simlsh_index_reserve_v2(r->store.index, r->in.paths.count, r->lib_threads);
        if (rc != 0 && rc != SIMLSH_ENOMEM)
            fatal_lib("index reserve", rc, EXIT_DEDUP_INTERNAL);
    }
    phase_switch(&r->stats, PH_READ);
    if (reread_prepare(r) != 0) {
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    rc = run_pipeline_start(r);
    if (rc == 0)
        rc = run_inputs(r);
    run_pipeline_stop(r);
    if (rc != 0) {
        if (!opt->quiet && r->failed == EXIT_DEDUP_INPUT)
            fprintf(stderr, PROG ": stopped at the first bad input (--strict)\n");
        status = r->failed ? r->failed : EXIT_DEDUP_INTERNAL;
        goto fail;
    }

    phase_switch(&r->stats, PH_PAIRS);
    if (write_results(r, out.f, &clusters, &dups) != 0) {
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    phase_switch(&r->stats, PH_SAVE);
    /* One file, replaced by one rename (dedup-store.c): runs saving to one
     * path at once each write a complete file, and the last rename wins. */
    if (opt->save_index && store_save(r, opt->save_index) != 0) {
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    if (skipped.f && write_skipped(&r->in, r->opt, skipped.f) != 0) {
        outfile_write_error(&skipped, errno);
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    status = run_status(r, dups);
    phase_switch(&r->stats, PH_WRITE);
    double elapsed = now_seconds() - r->stats.t_start;
    if (stats.f)
        write_stats(r, stats.f, elapsed, clusters, dups, status);
    /* Every output complete and synced before the first is renamed: a
     * failure leaves all of them as they were. */
    if (outfile_finish(&out) != 0 || outfile_finish(&skipped) != 0 || outfile_finish(&stats) != 0 ||
        outfile_publish(&out) != 0 || outfile_publish(&skipped) != 0 ||
        outfile_publish(&stats) != 0) {
        status = EXIT_DEDUP_INTERNAL;
        goto fail;
    }
    if (!opt->quiet)
        summary(r, elapsed, clusters, dups);
    if (status == EXIT_DEDUP_NOTHING)
        fprintf(stderr, PROG ": nothing could be read: every input was skipped\n");
    else if (r->inputs_cut)
        fprintf(stderr,
                PROG ": the answer is incomplete: %" PRIu64 " input%s not read to the end\n",
                r->inputs_cut, plural(r->inputs_cut));
    return status;
fail:
    outfile_abort(&out);
    outfile_abort(&stats);
    outfile_abort(&skipped);
    return status;
}

int main(int argc, char **argv)
{
    struct options opt;
    memset(&opt, 0, sizeof opt);
    parse_args(&opt, argc, argv);

    struct run run;
    run_init(&run, &opt);
    run.progress = !opt.quiet && isatty(STDERR_FILENO);
    if (opt.load_index) {
        /* --save-index of the same file: no other run may replace it
         * between this load and this run's save */
        if (store_lock_update(&run.store.lock, &opt) != 0)
            exit(EXIT_DEDUP_INTERNAL);
        int code = setup_loaded(&run, &opt, PROG, 0);
        if (code != 0)
            exit(code);
    } else
        setup_new(&run, &opt);

    int status = dedup(&run, &opt);
    run_free(&run, &opt);
    return status;
}
