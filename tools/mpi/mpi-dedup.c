/*
 * simlsh-dedup-mpi: simlsh-dedup on N MPI ranks, with the same options and
 * byte for byte the same output (docs/scale-out.md).
 *
 *   mpirun -np N simlsh-dedup-mpi [OPTION]... INPUT...
 *
 * Every rank parses the command line and walks the inputs (the same code
 * as simlsh-dedup; standard input is first copied to every rank and
 * --index loaded by every rank: mpi-store.c), reads and signs its
 * contiguous share with its threads (mpi-split.c), sends its band keys to
 * their owners, which turn buckets into candidate pairs (mpi-match.c).
 * The candidates become one sorted list held in ranges by the ranks in
 * order, cut at --max-pairs as simlsh-dedup cuts them; under --verify
 * exact each rank verifies its range with simlsh-dedup's second pass
 * (re-reading the documents of its pairs: inputs are on a shared
 * filesystem). The groups are formed across ranks and rank 0 gets them
 * finished (mpi-group.c), with the names and the per-document metadata,
 * and writes with write_groups(); under --save-index it gathers the
 * signatures and saves the index with simlsh-dedup's store_save(). A
 * failure on any rank stops every rank with its status.
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct mpi_ctx ctx;
/* While 1, every rank exits the same way (the command line, the contract
 * and the walk are the same everywhere): an exit finalises. After, an exit
 * on one rank (out of memory, say) aborts the others instead of leaving
 * them waiting. */
static int uniform = 1;

static void at_exit(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (done)
        return;
    if (uniform) {
        MPI_Finalize();
        return;
    }
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, EXIT_DEDUP_INTERNAL);
}

static double peak_rss(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0;
}

/* Strings from the from-th on with their size field, as [u64 len][u64
 * size][bytes]. */
static char *pack_strlist(const struct strlist *l, size_t from, size_t *len)
{
    size_t total = 0, n;
    for (size_t i = from; i < l->count; i++) {
        strlist_get(l, i, &n);
        total += 16 + n;
    }
    char *buf = xmalloc(total ? total : 1), *p = buf;
    for (size_t i = from; i < l->count; i++) {
        const char *s = strlist_get(l, i, &n);
        uint64_t h[2] = {n, l->size ? l->size[i] : 0};
        memcpy(p, h, 16);
        memcpy(p + 16, s, n);
        p += 16 + n;
    }
    *len = total;
    return buf;
}

/* Keeps the first from strings of l and appends those of buf. */
static void unpack_strlist(struct strlist *l, size_t from, const char *buf, size_t len)
{
    if (from == 0) {
        strlist_free(l);
    } else if (l->count > from) {
        l->count = from;
        l->len = l->off[from];
    }
    for (size_t at = 0; at + 16 <= len;) {
        uint64_t h[2];
        memcpy(h, buf + at, 16);
        strlist_add(l, buf + at + 16, (size_t)h[0], h[1]);
        at += 16 + (size_t)h[0];
    }
}

/* Rank 0 gets every rank's strings from the from-th on (the first from
 * are the same on every rank: the names loaded with --index). */
static void gather_strlist(struct strlist *l, size_t from)
{
    size_t len, rlen;
    char *buf = pack_strlist(l, from, &len), *all;
    mpi_gather0(&ctx, buf, len, &all, &rlen);
    free(buf);
    if (ctx.rank == 0)
        unpack_strlist(l, from, all, rlen);
    free(all);
}

/* Every rank gets the concatenation, in rank order, of each rank's bytes. */
static char *allgather_bytes(const void *send, size_t len, size_t *rlen)
{
    char *all = NULL;
    size_t alen = 0;
    mpi_gather0(&ctx, send, len, &all, &alen);
    uint64_t n = alen;
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (ctx.rank != 0)
        all = xmalloc(n ? (size_t)n : 1);
    for (uint64_t at = 0; at < n;) {
        uint64_t piece = n - at < (UINT64_C(1) << 30) ? n - at : (UINT64_C(1) << 30);
        MPI_Bcast(all + at, (int)piece, MPI_BYTE, 0, MPI_COMM_WORLD);
        at += piece;
    }
    if (!all)
        all = xmalloc(1);
    *rlen = (size_t)n;
    return all;
}

/* What each rank reports for --stats. */
struct rank_stats {
    double phase[MP_COUNT];
    double peak_rss;
    uint64_t sent, received, docs, bytes, pairs_routed, large_buckets, texts_fetched;
    uint64_t exact, estimated, docs_unread; /* this rank's pairs, under exact */
};

static void write_stats(FILE *f, const struct run *r, const struct rank_stats *rs, double elapsed,
                        uint64_t clusters, uint64_t dups, int status, uint32_t bands, uint32_t rows)
{
    static const char *const verify_names[] = {"none", "estimate", "exact"};
    uint64_t exchanged = 0;
    for (int k = 0; k < ctx.size; k++)
        exchanged += rs[k].sent;
    fprintf(f, "{\"program\":\"" MPI_PROG "\",\"version\":\"%s\",\"exit_status\":%d",
            simlsh_version_string(), status);
    fprintf(f, ",\"ranks\":%d,\"threads\":%d,\"documents\":%" PRIu64 ",\"bytes\":%" PRIu64,
            ctx.size, r->nthreads, r->stats.docs, r->stats.bytes);
    fprintf(f,
            ",\"clusters\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"skipped\":%" PRIu64
            ",\"truncated\":%s,\"seconds\":%.3f,\"verify\":\"%s\",\"bands\":%u,\"rows\":%u"
            ",\"bytes_exchanged\":%" PRIu64 ",\"per_rank\":[",
            clusters, dups, r->stats.skipped, r->truncated ? "true" : "false", elapsed,
            verify_names[r->opt->verify], bands, rows, exchanged);
    for (int k = 0; k < ctx.size; k++) {
        fprintf(f,
                "%s{\"rank\":%d,\"documents\":%" PRIu64 ",\"bytes\":%" PRIu64
                ",\"peak_memory_bytes\":%.0f,\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64
                ",\"pairs_routed\":%" PRIu64 ",\"large_buckets\":%" PRIu64
                ",\"texts_fetched\":%" PRIu64 ",\"phases\":{",
                k ? "," : "", k, rs[k].docs, rs[k].bytes, rs[k].peak_rss, rs[k].sent,
                rs[k].received, rs[k].pairs_routed, rs[k].large_buckets, rs[k].texts_fetched);
        for (int p = 0; p < MP_COUNT; p++)
            fprintf(f, "%s\"%s\":%.6f", p ? "," : "", mphase_names[p], rs[k].phase[p]);
        fputs("}}", f);
    }
    fputs("]}\n", f);
}

/* Everything after setup; returns the exit status (the same on every rank). */
static int dedup_mpi(struct run *r, struct options *opt)
{
    setup_run(r, opt);
    int rc = 0;

    /* Every rank walks the inputs (the walk decides the ids); only rank 0
     * reports what the walk skips, as it reports everything else first. */
    if (ctx.rank != 0)
        r->warnings = SIZE_MAX / 2;
    int status = inputs_enumerate(r) != 0 ? (r->failed ? r->failed : EXIT_DEDUP_INPUT) : 0;
    if (ctx.rank != 0) {
        r->warnings = 0;
        strlist_free(&r->in.skips);
        r->stats.skipped = 0;
    }
    struct outfile out, stats, skipped;
    memset(&out, 0, sizeof out);
    memset(&stats, 0, sizeof stats);
    memset(&skipped, 0, sizeof skipped);
    if (status == 0 && ctx.rank == 0) {
        if (check_outputs(&r->in, opt, MPI_PROG) != 0)
            status = EXIT_DEDUP_USAGE;
        else if (outfile_open_as(&out, opt->output_path, MPI_PROG) != 0 ||
                 (opt->stats_path && outfile_open_as(&stats, opt->stats_path, MPI_PROG) != 0) ||
                 (opt->skipped_path && outfile_open_as(&skipped, opt->skipped_path, MPI_PROG) != 0))
            status = EXIT_DEDUP_INTERNAL;
    }
    status = mpi_agree(&ctx, status);
    uniform = 0;
    if (status != 0)
        goto fail;

    /* The local index only stores signatures (the owners of the band keys
     * make the buckets): one band of one row keeps its tables small. The
     * index loaded with --index stays (it holds the old signatures, and
     * the loaded ids to drop), and so does rank 0's under --save-index,
     * which becomes the saved one. A lone rank keeps the full index: its
     * buckets are all there are, and mpi_match() lets the library pair
     * them. */
    uint32_t bands = 0, rows = 0;
    simlsh_params *lean = NULL;
    simlsh_index_bands(&bands, &rows, r->store.index);
    /* Grouping outputs are made at rank 0 by the library's dedup engine,
     * over the index of every document (mpi-engine.c); --output pairs
     * lists the pairs the owners of the band keys make. */
    int engine = opt->output != OUT_PAIRS;
    int keep_full =
        opt->load_index || (ctx.rank == 0 && (opt->save_index || engine)) || ctx.size == 1;
    rc = keep_full ? 0 : simlsh_params_copy(&lean, r->store.params);
    if (rc == 0 && !keep_full)
        rc = simlsh_params_set_int(lean, SIMLSH_PARAM_BANDS, 1);
    if (rc == 0 && !keep_full)
        rc = simlsh_params_set_int(lean, SIMLSH_PARAM_ROWS, 1);
    if (rc == 0 && !keep_full) {
        simlsh_index_free(r->store.index);
        r->store.index = NULL;
        rc = simlsh_index_new(&r->store.index, lean);
    }
    simlsh_params_free(lean);
    if (rc != 0)
        mpi_die(&ctx, EXIT_DEDUP_INTERNAL, "signature store: %s", simlsh_strerror(rc));
    if (!keep_full) { /* the values, in blocks: nothing indexes them here */
        int64_t npv = 0;
        simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &npv);
        r->store.sigs = xmalloc(sizeof *r->store.sigs);
        memset(r->store.sigs, 0, sizeof *r->store.sigs);
        r->store.sigs->np = (size_t)npv;
    }

    /* Exact mode: standard input (a regular file by now) is read again,
     * on any rank; before the split, which leaves it to one rank. */
    if (reread_prepare(r) != 0)
        mpi_die(&ctx, EXIT_DEDUP_INTERNAL, "%s", "standard input cannot be read again");

    mpi_phase(&ctx, MP_SPLIT);
    status = mpi_split(&ctx, opt, &r->in);
    if (status != 0)
        goto fail; /* the same status on every rank */

    mpi_phase(&ctx, MP_READ);
    /* the loaded ids --remove took, to tell those --replace takes */
    uint8_t *gone0 = xmalloc(r->store.first_new ? (size_t)r->store.first_new : 1);
    for (uint64_t id = 0; id < r->store.first_new; id++)
        gone0[id] = (uint8_t)store_is_gone(&r->store, id);
    rc = run_pipeline_start(r);
    if (rc == 0)
        rc = run_inputs(r);
    run_pipeline_stop(r);
    status = rc != 0 ? (r->failed ? r->failed : EXIT_DEDUP_INTERNAL) : 0;
    /* Test hooks (SIMLSH_DEDUP_MPI_FAIL_RANK=R): rank R fails after
     * reading, so every rank stops with the status and nobody waits; with
     * -R-1, rank R exits during the exchange instead. */
    const char *fail = getenv("SIMLSH_DEDUP_MPI_FAIL_RANK");
    if (fail && atoi(fail) == ctx.rank) {
        fprintf(stderr,
                MPI_PROG ": rank %d: failing on request "
                         "(SIMLSH_DEDUP_MPI_FAIL_RANK)\n",
                ctx.rank);
        status = EXIT_DEDUP_INTERNAL;
    }
    int worst = mpi_agree(&ctx, status);
    if (worst != 0) {
        if (ctx.rank == 0) {
            if (worst == EXIT_DEDUP_INPUT && !opt->quiet)
                fprintf(stderr, MPI_PROG ": stopped at the first bad input (--strict)\n");
            else if (status == 0)
                fprintf(stderr, MPI_PROG ": stopped: another rank failed (status %d)\n", worst);
        }
        status = worst;
        free(gone0);
        goto fail;
    }

    /* --replace on one rank drops the loaded document on every rank */
    if (opt->load_index)
        r->stats.replaced = mpi_merge_gone(&ctx, r, gone0);
    free(gone0);

    /* Global ids: the documents loaded with --index keep theirs, then the
     * new documents of the lower ranks come first. */
    uint64_t first_new = r->store.first_new;
    uint64_t nlocal = r->store.names.count - first_new;
    uint64_t *first = xmalloc(((size_t)ctx.size + 1) * sizeof *first);
    MPI_Allgather(&nlocal, 1, MPI_UINT64_T, first + 1, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    first[0] = first_new;
    for (int k = 0; k < ctx.size; k++)
        first[k + 1] += first[k];

    int64_t np64 = 0;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &np64);
    uint32_t np = (uint32_t)np64;
    /* The other test hook: the named rank exits in the middle of the
     * exchange, as an out-of-memory exit would; the others must not wait. */
    if (fail && atoi(fail) == -ctx.rank - 1) {
        fprintf(stderr, MPI_PROG ": rank %d: exiting on request (SIMLSH_DEDUP_MPI_FAIL_RANK)\n",
                ctx.rank);
        exit(EXIT_DEDUP_INTERNAL);
    }
    /* Candidates as simlsh_index_pairs_v2() keeps them: by estimate under
     * --verify estimate, by the prefilter under exact (verify_candidates). */
    int exact = opt->verify == VERIFY_EXACT;
    double keep_min = opt->verify == VERIFY_ESTIMATE ? r->threshold
                      : exact                        ? verify_prefilter(r)
                                                     : 0;
    struct pair *edges = NULL;
    size_t nedges = 0;
    int cut = 0;
    if (engine) {
        /* every signature to rank 0's index; nothing else needs them */
        mpi_phase(&ctx, MP_SIGS);
        mpi_gather_index(&ctx, r, first, np);
        if (ctx.rank != 0) {
            simlsh_index_free(r->store.index);
            r->store.index = NULL;
            sigstore_free(r->store.sigs);
            r->store.sigs = NULL;
        }
    } else {
        mpi_match(&ctx, r, (size_t)nlocal, np, bands, rows, first, keep_min, &edges, &nedges);
        if (!opt->save_index) { /* else its signatures go to rank 0 at the end */
            simlsh_index_free(r->store.index);
            r->store.index = NULL;
            sigstore_free(r->store.sigs);
            r->store.sigs = NULL;
        }
        /* The candidates become one sorted list held in equal ranges by
         * the ranks in order: owners of different bands may give the same
         * pair; the library's rows are in (a, b) order, and --max-pairs
         * keeps their prefix. */
        mpi_phase(&ctx, MP_GATHER);
        cut = mpi_sort_pairs(&ctx, first[ctx.size], opt->max_pairs, &edges, &nedges);
    }
    if (cut) {
        r->truncated = 1;
        if (ctx.rank == 0)
            fprintf(stderr,
                    "simlsh-dedup: warning: stopped at %zu candidate pairs "
                    "(--max-pairs); results are incomplete\n",
                    opt->max_pairs);
    }
    /* Under exact, and for --cluster star in an order of --keep (its owners
     * order their documents), every rank needs each document's size and
     * time; otherwise only rank 0 (components keep by --keep there). */
    int share_meta =
        exact || (opt->cluster == CLUSTER_STAR && (opt->keep != KEEP_FIRST || first_new > 0));
    uint64_t total = first[ctx.size];
    if (share_meta) {
        size_t llen = 0;
        /* the loaded documents' are on every rank already */
        char *mb = allgather_bytes(nlocal ? r->store.id_bytes + first_new : NULL,
                                   (size_t)nlocal * 8, &llen);
        char *mt = allgather_bytes(nlocal ? r->store.id_mtime + first_new : NULL,
                                   (size_t)nlocal * 8, &llen);
        if (total > first_new) { /* with no document anywhere the arrays stay NULL */
            ensure_idmeta(&r->store, total - 1);
            memcpy(r->store.id_bytes + first_new, mb, (size_t)(total - first_new) * 8);
            memcpy(r->store.id_mtime + first_new, mt, (size_t)(total - first_new) * 8);
        }
        free(mb);
        free(mt);
    }
    if (exact) {
        /* Every rank needs where each document is (the second pass reads
         * it again and checks its size and time), then verifies its range
         * of pairs. */
        mpi_phase(&ctx, MP_TEXTS);
        struct docloc *locs =
            calloc(total > first_new ? (size_t)(total - first_new) : 1, sizeof *locs);
        if (!locs)
            die_oom();
        if (nlocal)
            memcpy(locs + (first[ctx.rank] - first_new), r->in.locs, (size_t)nlocal * sizeof *locs);
        free(r->in.locs);
        r->in.locs = locs;
        r->in.locs_cap = (size_t)(total - first_new);
        /* Test hook (SIMLSH_DEDUP_MPI_PAUSE=FILE): rank 0 creates FILE
         * and every rank waits until it is gone (60 s at most), so a test
         * can change the inputs between the two passes. */
        const char *pause = getenv("SIMLSH_DEDUP_MPI_PAUSE");
        if (pause && *pause) {
            if (ctx.rank == 0) {
                FILE *pf = fopen(pause, "w");
                if (pf)
                    fclose(pf);
                for (int i = 0; pf && i < 6000 && access(pause, F_OK) == 0; i++)
                    nanosleep(&(struct timespec){0, 10000000}, NULL);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (!engine) { /* (the engine asks for its texts as it groups) */
            mpi_fetch_texts(&ctx, r, first, edges, nedges);
            mpi_phase(&ctx, MP_VERIFY);
            struct pair *ver = NULL;
            size_t nver = 0;
            status =
                verify_exact_pairs(r, edges, nedges, (size_t)(total - first_new), &ver, &nver) != 0
                    ? EXIT_DEDUP_INTERNAL
                    : 0;
            free(edges);
            if (status != 0)
                mpi_die(&ctx, status, "%s", "verification failed");
            /* ranges are in order and each sorted: the whole list is sorted */
            edges = ver;
            nedges = nver;
        }
    }
    mpi_phase(&ctx, MP_GATHER);
    gather_strlist(&r->store.names, (size_t)first_new);
    if (opt->output == OUT_RECORDS || opt->output == OUT_DROP_RECORDS)
        gather_strlist(&r->in.records, 0);
    if (opt->skipped_path)
        gather_strlist(&r->in.skips, 0);
    /* --keep: bytes and modification time of each document, at rank 0 */
    size_t mlen = share_meta ? 0 : (size_t)nlocal * 16;
    char *meta = xmalloc(mlen ? mlen : 1), *all = NULL;
    size_t alen = 0;
    if (mlen) {
        memcpy(meta, r->store.id_bytes + first_new, (size_t)nlocal * 8);
        memcpy(meta + nlocal * 8, r->store.id_mtime + first_new, (size_t)nlocal * 8);
    }
    mpi_gather0(&ctx, meta, mlen, &all, &alen);
    free(meta);
    if (ctx.rank == 0 && total > first_new)
        ensure_idmeta(&r->store, total - 1);
    for (int k = 0; ctx.rank == 0 && k < ctx.size && !share_meta; k++) {
        uint64_t n = first[k + 1] - first[k];
        const char *m = all + (first[k] - first_new) * 16;
        if (n == 0)
            continue;
        memcpy(r->store.id_bytes + first[k], m, (size_t)n * 8);
        memcpy(r->store.id_mtime + first[k], m + n * 8, (size_t)n * 8);
    }
    free(all);
    uint64_t mine[5] = {r->stats.docs, r->stats.bytes, r->stats.skipped, r->stats.already_indexed,
                        r->inputs_cut};
    uint64_t sum[5] = {0, 0, 0, 0, 0};
    MPI_Reduce(mine, sum, 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    struct rank_stats me;
    memset(&me, 0, sizeof me);
    me.docs = r->stats.docs;
    me.bytes = r->stats.bytes;

    /* The groups, formed across ranks; rank 0 gets them finished. */
    mpi_phase(&ctx, MP_GROUP);
    uint64_t clusters = 0, dups = 0;
    uint64_t *label = NULL, *kept = NULL;
    status = 0;
    if (engine && mpi_engine_groups(&ctx, r, first, &label, &kept) != 0)
        status = EXIT_DEDUP_INTERNAL; /* said why */
    if (!engine) {                    /* --output pairs: the groups' counts, for the summary */
        struct pair *stars = NULL;
        size_t nstars = 0;
        mpi_group(&ctx, r, edges, nedges, &stars, &nstars, &clusters, &dups);
        free(stars);
    }
    mpi_phase(&ctx, MP_WRITE);
    if (ctx.rank == 0) {
        r->stats.docs = sum[0];
        r->stats.bytes = sum[1];
        r->stats.skipped = sum[2];
        r->stats.already_indexed = sum[3];
        r->inputs_cut = sum[4];
        /* the pairs come from every rank below */
        if (engine && status == 0 && write_labelled(r, out.f, label, kept, &clusters, &dups) != 0)
            status = EXIT_DEDUP_INTERNAL; /* said why; a write error is seen at the finish */
    }
    free(label);
    free(kept);
    if (opt->output == OUT_PAIRS) {
        int err = mpi_write_pairs(&ctx, r, out.f, edges, nedges);
        if (err != 0) { /* rank 0 only: it alone writes */
            outfile_write_error(&out, err);
            status = EXIT_DEDUP_INTERNAL;
        }
    }
    free(edges);
    edges = NULL;
    /* --save-index: the whole index at rank 0, saved there unless the run
     * failed (simlsh-dedup saves after the groups, before --skipped) */
    if (opt->save_index) {
        int saved = mpi_save_index(&ctx, r, first, np, status == 0, engine);
        if (ctx.rank == 0 && status == 0)
            status = saved;
    }
    if (ctx.rank == 0) {
        if (status == 0 && skipped.f && write_skipped(&r->in, r->opt, skipped.f) != 0) {
            outfile_write_error(&skipped, errno);
            status = EXIT_DEDUP_INTERNAL;
        }
        if (status == 0)
            status = run_status(r, dups);
    }
    mpi_phase(&ctx, MP_WRITE);
    for (int p = 0; p < MP_COUNT; p++)
        me.phase[p] = ctx.phase_wall[p];
    me.peak_rss = peak_rss();
    me.sent = ctx.bytes_sent;
    me.received = ctx.bytes_received;
    me.pairs_routed = ctx.pairs_routed;
    me.large_buckets = ctx.large_buckets;
    me.texts_fetched = ctx.texts_fetched;
    me.exact = r->stats.vs.exact;
    me.estimated = r->stats.vs.estimated;
    me.docs_unread = r->stats.vs.docs_unread;
    struct rank_stats *rs = ctx.rank == 0 ? xmalloc((size_t)ctx.size * sizeof *rs) : NULL;
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, rs, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (ctx.rank == 0) {
        double elapsed = now_seconds() - r->stats.t_start;
        int failed = status == EXIT_DEDUP_INTERNAL;
        if (!failed && stats.f)
            write_stats(stats.f, r, rs, elapsed, clusters, dups, status, bands, rows);
        if (!failed && (outfile_finish(&out) != 0 || outfile_finish(&skipped) != 0 ||
                        outfile_finish(&stats) != 0 || outfile_publish(&out) != 0 ||
                        outfile_publish(&skipped) != 0 || outfile_publish(&stats) != 0))
            failed = 1;
        if (failed) {
            status = EXIT_DEDUP_INTERNAL;
            outfile_abort(&out);
            outfile_abort(&stats);
            outfile_abort(&skipped);
        } else if (!opt->quiet) {
            char b[32];
            human_bytes(b, sizeof b, (double)r->stats.bytes);
            fprintf(stderr,
                    MPI_PROG ": %" PRIu64 " documents (%s), %" PRIu64 " clusters, %" PRIu64
                             " duplicates, %" PRIu64 " skipped; %.2f s, %.1f MB/s, %d "
                             "ranks x %d threads\n",
                    r->stats.docs, b, clusters, dups, r->stats.skipped, elapsed,
                    elapsed > 0 ? (double)r->stats.bytes / elapsed / 1e6 : 0, ctx.size,
                    r->nthreads);
            uint64_t ex = 0, est = 0, unread = 0;
            for (int k = 0; k < ctx.size; k++) {
                ex += rs[k].exact;
                est += rs[k].estimated;
                unread += rs[k].docs_unread;
            }
            if (opt->verify == VERIFY_EXACT)
                fprintf(stderr, MPI_PROG ": verify exact: %" PRIu64 " pairs by exact Jaccard\n",
                        ex);
            if (est)
                fprintf(stderr,
                        MPI_PROG ": verify exact: %" PRIu64 " pairs decided by estimate: %s%s%s\n",
                        est, first_new ? "pairs with a document from --index" : "",
                        first_new && unread ? ", and " : "",
                        unread ? "documents that could not be read again" : "");
            if (opt->load_index)
                fprintf(stderr,
                        MPI_PROG ": %s: %" PRIu64 " documents before, %" PRIu64
                                 " already indexed, %" PRIu64 " replaced, %" PRIu64 " removed\n",
                        qname(opt->load_index), store_old_count(&r->store),
                        r->stats.already_indexed, r->stats.replaced, r->stats.removed);
        }
        if (status == EXIT_DEDUP_NOTHING)
            fprintf(stderr, MPI_PROG ": nothing could be read: every input was skipped\n");
        else if (status == EXIT_DEDUP_TRUNCATED && r->inputs_cut)
            fprintf(stderr,
                    MPI_PROG ": the answer is incomplete: %" PRIu64
                             " input%s not read to the end\n",
                    r->inputs_cut, r->inputs_cut == 1 ? "" : "s");
    }
    free(rs);
    free(first);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
fail:
    if (ctx.rank == 0) {
        outfile_abort(&out);
        outfile_abort(&stats);
        outfile_abort(&skipped);
    }
    return status;
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fputs(MPI_PROG ": cannot start MPI\n", stderr);
        return EXIT_DEDUP_INTERNAL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    atexit(at_exit);

    ctx.t_phase = now_seconds();

    /* Parsing and the contract fail the same way on every rank: rank 0
     * alone speaks (--help, --version, usage errors). */
    int saved_out = -1, saved_err = -1;
    if (ctx.rank != 0) {
        int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
        saved_out = dup(STDOUT_FILENO);
        saved_err = dup(STDERR_FILENO);
        if (nul >= 0) {
            dup2(nul, STDOUT_FILENO);
            dup2(nul, STDERR_FILENO);
            close(nul);
        }
    }
    struct options opt;
    memset(&opt, 0, sizeof opt);
    parse_args(&opt, argc, argv);
    struct run run;
    run_init(&run, &opt);
    run.progress = 0; /* one line per rank would interleave */
    /* Standard input (an input or --remove-from) reaches rank 0 only:
     * every rank gets a copy before anything reads it. */
    int uses_stdin = opt.remove_from && !strcmp(opt.remove_from, "-");
    for (size_t i = 0; i < opt.ninputs; i++)
        uses_stdin |= !strcmp(opt.inputs[i].arg, "-");
    int st = uses_stdin ? mpi_spool_stdin(&ctx) : 0;
    /* --save-index of the --index file: rank 0, which saves, holds its
     * lock before any rank loads it (dedup-store.c) */
    if (opt.load_index && opt.save_index) {
        if (st == 0 && ctx.rank == 0 && store_lock_update(&run.store.lock, &opt) != 0)
            st = EXIT_DEDUP_INTERNAL;
        st = mpi_agree(&ctx, st);
    }
    if (opt.load_index && st == 0)
        st = setup_loaded(&run, &opt, MPI_PROG, 1);
    else if (st == 0)
        setup_new(&run, &opt);
    st = mpi_agree(&ctx, st);
    if (st != 0)
        exit(st); /* every rank: the exit finalises */
    if (saved_out >= 0) {
        fflush(stdout);
        dup2(saved_out, STDOUT_FILENO);
        close(saved_out);
    }
    if (saved_err >= 0) {
        dup2(saved_err, STDERR_FILENO);
        close(saved_err);
    }

    int status = dedup_mpi(&run, &opt);
    simlsh_index_free(run.store.index);
    sigstore_free(run.store.sigs);
    free(run.store.sigs);
    simlsh_params_free(run.store.params);
    strlist_free(&run.in.paths);
    strlist_free(&run.store.names);
    strlist_free(&run.in.skips);
    strlist_free(&run.in.records);
    free(run.in.locs);
    if (run.in.spool_open)
        close(run.in.spool_fd);
    store_free(&run.store);
    free(run.in.idset);
    free(run.in.pmeta);
    free(run.store.id_bytes);
    free(run.store.id_mtime);
    fileids_free(&run.in.input_ids);
    free(opt.inputs);
    free(opt.globs_in);
    free(opt.globs_ex);
    free(opt.remove_names);
    for (size_t i = 0; i < opt.nowned; i++)
        free(opt.owned[i]);
    free(opt.owned);
    fileids_free(&opt.list_ids);
    MPI_Finalize();
    return status;
}
