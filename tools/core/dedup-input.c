/*
 * simlsh-dedup: reading inputs and signing them.
 *
 * The main thread reads (it only enumerates files, and splits line inputs
 * into batches), worker threads sign, and the main thread inserts the signed
 * batches into the index strictly in input order. Ids are therefore the
 * input positions of the accepted documents, and the index, and every
 * result, are identical for any number of threads.
 *
 * This file is the main thread's side: the inputs in command-line order
 * into batches, and the pipeline's start and stop. The walk is
 * dedup-walk.c, the workers' readers dedup-read.c, the signing workers
 * dedup-sign.c, the JSONL scanner dedup-jsonl.c, the in-order consumer and
 * the inserts dedup-insert.c.
 */
#include "dedup-pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int add_text_doc(struct run *r, size_t input, int kind, uint64_t line, uint64_t off,
                        const char *text, size_t len, uint64_t bytes, int64_t mtime)
{
    struct doc *d = new_doc(r, input, kind, len);
    if (!d)
        return -1;
    struct batch *b = r->pipe->cur;
    memcpy(b->arena + b->arena_len, text, len);
    d->text_off = b->arena_len;
    d->text_len = len;
    b->arena_len += len;
    d->line = line;
    d->src_off = off;
    d->bytes = bytes;
    d->mtime_ns = mtime;
    return 0;
}

static int add_path_doc(struct run *r, size_t input, size_t path)
{
    struct doc *d = new_doc(r, input, DOCK_PATH, 0);
    if (!d)
        return -1;
    d->path = path;
    d->bytes = r->in.paths.size[path]; /* replaced by the bytes actually read */
    return 0;
}

static int emit_line(struct run *r, size_t input, int json, uint64_t line, uint64_t off,
                     const char *s, size_t len, uint64_t bytes, int64_t mtime)
{
    if (json) {
        /* Blank lines between JSON objects are tolerated, as most JSONL
         * writers and readers do. */
        if (is_blank(s, len))
            return 0;
        return add_text_doc(r, input, DOCK_JSON, line, off, s, len, bytes, mtime);
    }
    if (len > 0 && s[len - 1] == '\r')
        len--; /* CRLF files */
    return add_text_doc(r, input, DOCK_TEXT, line, off, s, len, bytes, mtime);
}

/* A line too long to hold travels as a skipped document, so that its
 * message comes in input order among the others, whatever -j is. */
static int skip_line(struct run *r, size_t input, uint64_t line)
{
    struct doc *d = new_doc(r, input, DOCK_TEXT, 0);
    if (!d)
        return -1;
    d->line = line;
    doc_skip(d, "line longer than --max-doc-bytes, skipped");
    return 0;
}

/* A file whose first bytes are no gzip or zstd magic is read by ranges. */
static int is_compressed(int fd)
{
    unsigned char m[4];
    ssize_t got = pread_full(fd, (char *)m, sizeof m, 0);
    return (got >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
           (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
}

/* Bytes per range: a few hundred documents of a few KiB, enough to keep
 * the per-range costs (a batch handed over, a read past the end) small.
 * SIMLSH_DEDUP_RANGE_BYTES (undocumented) sets it, so that the tests can
 * put range boundaries into a small file. */
static uint64_t range_bytes(void)
{
    const char *e = getenv("SIMLSH_DEDUP_RANGE_BYTES");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0)
            return v;
    }
    return UINT64_C(1) << 20;
}

/* An uncompressed line file: the main thread only cuts it into ranges that
 * the workers read, split and parse (read_range); ranges are consumed in
 * order, so ids and line numbers are those of a sequential read. The last
 * range reads to the end of the file, however long it has grown. A ranged
 * input (the MPI driver's share of a file, cut at line starts) is read
 * from range_beg to range_end only, its lines numbered after line0. */
static int read_ranges(struct run *r, size_t input, int fd, uint64_t size, int64_t mtime)
{
    if (submit(r)) { /* documents before this input go first */
        close(fd);
        return -1;
    }
    const struct input *in = &r->opt->inputs[input];
    uint64_t beg = in->ranged ? in->range_beg : 0;
    uint64_t stop = in->ranged && in->range_end < size ? in->range_end : UINT64_MAX;
    uint64_t step = r->pipe->range_bytes;
    for (uint64_t s = beg;; s += step) {
        struct batch *b = current_batch(r);
        if (!b) {
            close(fd);
            return -1;
        }
        b->is_range = 1;
        b->input = (uint32_t)input;
        b->fd = fd;
        b->mtime = mtime;
        b->start = s;
        b->last_range = stop == UINT64_MAX && (size <= s || size - s <= step);
        b->end = b->last_range ? UINT64_MAX : s + step;
        if (b->end >= stop)
            b->end = stop;
        b->close_fd = b->last_range || b->end == stop;
        int last = b->close_fd; /* b may be consumed and reused by submit */
        if (submit(r))
            return -1; /* on failure the fd is closed at exit */
        if (last)
            return 0;
    }
}

/* Large sequential reads, split at newlines; each line is copied into the
 * batch that carries it, so reading never waits for signing to release a
 * buffer, and standard input works like a file. A line longer than
 * --max-doc-bytes is skipped without being held, so memory stays bounded
 * whatever the input. */
static int read_lines(struct run *r, size_t input)
{
    const struct input *in = &r->opt->inputs[input];
    int json = in->kind == INPUT_JSONL;
    int use_stdin = !strcmp(in->arg, "-");
    const char *shown = use_stdin ? "<stdin>" : in->arg;
    int64_t mtime = 0;
    int fd = STDIN_FILENO;
    if (use_stdin && in->ranged) {
        /* simlsh-dedup-mpi: this rank's share of its copy of standard
         * input, a regular file (tools/mpi/mpi-store.c), read like a file's */
        struct stat st;
        int fd0 = dup(STDIN_FILENO);
        if (fd0 < 0 || fstat(fd0, &st) != 0) {
            int e = errno;
            if (fd0 >= 0)
                close(fd0);
            return skip_input(r, shown, strlen(shown), "%s", strerror(e));
        }
        return read_ranges(r, input, fd0, (uint64_t)st.st_size, 0);
    }
    if (!use_stdin) {
        struct stat st;
        char msg[160];
        fd = open_regular(in->arg, &st, msg, sizeof msg);
        if (fd < 0)
            return skip_input(r, shown, strlen(shown), "%s", msg);
        mtime = mtime_ns(&st);
        if (!is_compressed(fd))
            return read_ranges(r, input, fd, (uint64_t)st.st_size, mtime);
    }
    struct reader rd;
    int rc = 0;
    if (reader_open(&rd, fd) != 0) {
        rc = skip_input(r, shown, strlen(shown), "%s", rd.msg);
        reader_close(&rd);
        if (!use_stdin)
            close(fd);
        return rc;
    }
    reader_limit(&rd, r->opt->max_input_bytes, r->opt->max_ratio);
    uint64_t max = r->opt->max_doc_bytes;
    size_t cap = 4u << 20, len = 0;
    char *buf = xmalloc(cap);
    uint64_t line = 0;
    uint64_t base = 0;  /* stream offset of buf[0] */
    int discarding = 0; /* inside a line longer than max */
    for (;;) {
        ssize_t got = reader_read(&rd, buf + len, cap - len);
        if (got < 0) {
            /* The rest of the input is lost, and the answer with it: never
             * a silent exit 0 (issue 31, F10), and the offsets say where,
             * as gzip -t and zstd -t do. */
            char why[320];
            if (rd.codec != CODEC_PLAIN)
                snprintf(why, sizeof why,
                         "%s at compressed byte %llu (decompressed byte %llu), after line %llu;"
                         " the rest of the input is not read",
                         rd.msg, (unsigned long long)reader_offset(&rd),
                         (unsigned long long)rd.out_total, (unsigned long long)line);
            else
                snprintf(why, sizeof why, "%s after line %llu; the rest of the input is not read",
                         rd.msg, (unsigned long long)line);
            r->inputs_cut++;
            /* after the messages about the lines before */
            rc = submit(r);
            while (rc == 0 && r->pipe->pend_head)
                rc = consume_oldest(r);
            if (rc == 0)
                rc = skip_input(r, shown, strlen(shown), "%s", why);
            break;
        }
        if (got == 0) {
            if (discarding)
                rc = skip_line(r, input, ++line);
            else if (len > 0)
                rc = emit_line(r, input, json, ++line, base, buf, len, len, mtime);
            break;
        }
        len += (size_t)got;
        size_t start = 0;
        const char *nl;
        while (rc == 0 && (nl = memchr(buf + start, '\n', len - start)) != NULL) {
            size_t l = (size_t)(nl - (buf + start));
            if (discarding) {
                discarding = 0;
                rc = skip_line(r, input, ++line);
            } else if (l > max) {
                rc = skip_line(r, input, ++line);
            } else {
                rc = emit_line(r, input, json, ++line, base + start, buf + start, l, l + 1, mtime);
            }
            start += l + 1;
        }
        if (rc)
            break;
        memmove(buf, buf + start, len - start);
        len -= start;
        base += start;
        if (discarding || len > max) {
            discarding = 1;
            base += len;
            len = 0;
        } else if (len == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
    }
    free(buf);
    reader_close(&rd);
    if (!use_stdin)
        close(fd);
    return rc;
}

/* "-": standard input as one document, bounded like a file. */
static int read_stdin_doc(struct run *r, size_t input)
{
    struct worker w;
    memset(&w, 0, sizeof w);
    w.r = r;
    struct doc d;
    memset(&d, 0, sizeof d);
    struct reader rd;
    size_t len = 0;
    int bad = reader_open(&rd, STDIN_FILENO);
    if (bad)
        doc_skip(&d, "%s", rd.msg);
    else
        bad = read_bounded(&w, r->opt, &rd, 0, &d, &len);
    reader_close(&rd);
    int rc = bad ? skip_input(r, "<stdin>", 7, "%s", d.msg)
                 : add_text_doc(r, input, DOCK_TEXT, 0, 0, w.buf, len, len, 0);
    free(w.buf);
    return rc;
}

int run_inputs(struct run *r)
{
    const struct options *opt = r->opt;
    int rc = 0;
    for (size_t i = 0; i < opt->ninputs && rc == 0; i++) {
        const struct input *in = &opt->inputs[i];
        switch (in->kind) {
        case INPUT_PATHS:
            for (size_t p = 0; p < in->npaths && rc == 0; p++)
                if (r->in.pmeta[in->first_path + p].alias_of == SIZE_MAX)
                    rc = add_path_doc(r, i, in->first_path + p);
            break;
        case INPUT_STDIN:
            rc = read_stdin_doc(r, i);
            break;
        case INPUT_LINES:
        case INPUT_JSONL:
            rc = read_lines(r, i);
            break;
        case INPUT_LIST: /* expanded by parse_args */
            break;
        }
    }
    if (rc == 0)
        rc = submit(r);
    while (rc == 0 && r->pipe->pend_head)
        rc = consume_oldest(r);
    if (rc == 0)
        rc = flush_inserts(r);
    if (inserts_wait(r) != 0) /* also after an error: the thread ends first */
        rc = -1;
    r->stats.cpu_main_read = thread_cpu_seconds();
    progress_update(r, 1);
    if (r->progress)
        fputs("\r\033[K", stderr);
    return rc ? -1 : 0;
}

/* Documents a line file holds, estimated from the mean length of the
 * lines in three blocks (start, middle, end; a file too short to tell
 * gives its size over 64): enough to reserve the run's per-document arrays
 * and the index once, instead of growing them by copies while reading. */
static uint64_t estimate_lines(const char *path)
{
    struct stat st;
    char msg[160];
    int fd = open_regular(path, &st, msg, sizeof msg);
    if (fd < 0)
        return 0;
    uint64_t est = 0, size = (uint64_t)st.st_size;
    if (!is_compressed(fd) && size > 0) {
        size_t cap = 64u << 10;
        char *buf = xmalloc(cap);
        uint64_t lines = 0, bytes = 0;
        uint64_t at[3] = {0, size / 2, size > cap ? size - cap : 0};
        for (int k = 0; k < 3; k++) {
            ssize_t got = pread_full(fd, buf, cap, at[k]);
            const char *first = NULL, *last = NULL, *e = buf + (got > 0 ? got : 0);
            uint64_t n = 0;
            for (const char *p = buf; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) {
                if (!first)
                    first = p;
                last = p;
                n++;
            }
            if (n >= 2) { /* whole lines between the first and last newline */
                lines += n - 1;
                bytes += (uint64_t)(last - first);
            }
        }
        free(buf);
        uint64_t mean = lines >= 8 ? bytes / lines : 64;
        est = size / (mean ? mean : 1) + 1;
    }
    close(fd);
    return est;
}

static void reserve_for_inputs(struct run *r)
{
    uint64_t est = 0;
    for (size_t i = 0; i < r->opt->ninputs; i++) {
        const struct input *in = &r->opt->inputs[i];
        if (in->kind == INPUT_PATHS)
            est += in->npaths;
        else if ((in->kind == INPUT_LINES || in->kind == INPUT_JSONL) && strcmp(in->arg, "-"))
            est += estimate_lines(in->arg);
    }
    if (est < 4096)
        return;
    /* A guess a few percent high costs little; beyond 16 Mi documents the
     * arrays grow by realloc (large blocks move by remapping, not copying)
     * rather than trust a sample with so much at stake. */
    est += est / 16;
    if (est > (UINT64_C(1) << 24))
        est = UINT64_C(1) << 24;
    size_t n = (size_t)est;
    /* on the run's threads: the first touch of the tables (page faults,
     * and compaction for huge pages when memory is fragmented) took up to
     * half the main thread's CPU time on the 1 GiB benchmark at -j 16 */
    if (!r->store.sigs)
        simlsh_index_reserve_v2(r->store.index, (size_t)r->store.first_new + n,
                                r->lib_threads); /* ENOMEM: grows later */
    ensure_locs(&r->in, n - 1);
    ensure_idmeta(&r->store, r->store.first_new + n - 1);
    /* names of line documents are short: line numbers, ids */
    if (r->store.names.cap_off < r->store.names.count + n + 2) {
        r->store.names.cap_off = r->store.names.count + n + 2;
        r->store.names.off =
            xrealloc(r->store.names.off, r->store.names.cap_off * sizeof *r->store.names.off);
        r->store.names.size =
            xrealloc(r->store.names.size, r->store.names.cap_off * sizeof *r->store.names.size);
    }
    if (r->store.names.cap < r->store.names.len + n * 8) {
        r->store.names.cap = r->store.names.len + n * 8;
        r->store.names.buf = xrealloc(r->store.names.buf, r->store.names.cap);
    }
}

int run_pipeline_start(struct run *r)
{
    r->pipe = calloc(1, sizeof *r->pipe);
    if (!r->pipe)
        die_oom();
    main_worker.r = r;
    r->pipe->nworkers = r->nthreads > 1 ? (size_t)r->nthreads : 0;
    r->pipe->range_bytes = range_bytes();
    /* undocumented: every record through jansson, to compare (tests) */
    r->pipe->json_slow = getenv("SIMLSH_DEDUP_JSON_SLOW") != NULL;
    reserve_for_inputs(r);
    /* Insert calls get enough documents to use the run's threads: the
     * library gives a thread about 64 Ki band insertions. */
    uint32_t bands = 0, rows = 0;
    simlsh_index_bands(&bands, &rows, r->store.index);
    int64_t np = 0;
    simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &np);
    r->pipe->num_perm = np > 0 ? (size_t)np : 1;
    uint64_t per = (UINT64_C(65536) * (uint64_t)r->nthreads) / ((uint64_t)bands + 1) + 1;
    r->pipe->ins_flush = per < 1024 ? 1024 : per > (1u << 17) ? (1u << 17) : (size_t)per;
    r->stats.worker_cpu =
        calloc(r->pipe->nworkers ? r->pipe->nworkers : 1, sizeof *r->stats.worker_cpu);
    if (!r->stats.worker_cpu)
        die_oom();
    /* Three batches per worker keep every worker busy while the main thread
     * fills the next batch and inserts the oldest one. */
    size_t nbatches = r->pipe->nworkers ? r->pipe->nworkers * 3 : 1;
    for (size_t i = 0; i < nbatches; i++) {
        struct batch *b = batch_new();
        b->next = r->pipe->free_list;
        r->pipe->free_list = b;
    }
    if (!r->pipe->nworkers)
        return 0;
    pthread_mutex_init(&r->pipe->mu, NULL);
    pthread_cond_init(&r->pipe->work_cv, NULL);
    pthread_cond_init(&r->pipe->done_cv, NULL);
    r->pipe->workers = xmalloc(r->pipe->nworkers * sizeof *r->pipe->workers);
    for (size_t i = 0; i < r->pipe->nworkers; i++) {
        struct worker *w = calloc(1, sizeof *w);
        if (!w)
            die_oom();
        w->r = r;
        w->index = i;
        int e = pthread_create(&r->pipe->workers[i], NULL, worker_main, w);
        if (e != 0) {
            fprintf(stderr, "simlsh-dedup: cannot start a thread: %s\n", strerror(e));
            free(w);
            r->pipe->nworkers = i;
            return -1;
        }
    }
    return 0;
}

void run_pipeline_stop(struct run *r)
{
    if (r->pipe->nworkers) {
        pthread_mutex_lock(&r->pipe->mu);
        r->pipe->stopping = 1;
        pthread_cond_broadcast(&r->pipe->work_cv);
        pthread_mutex_unlock(&r->pipe->mu);
        for (size_t i = 0; i < r->pipe->nworkers; i++)
            pthread_join(r->pipe->workers[i], NULL);
        r->stats.nworkers_run = r->pipe->nworkers;
        free(r->pipe->workers);
        r->pipe->workers = NULL;
        pthread_mutex_destroy(&r->pipe->mu);
        pthread_cond_destroy(&r->pipe->work_cv);
        pthread_cond_destroy(&r->pipe->done_cv);
        r->pipe->nworkers = 0;
    }
    struct batch *lists[3] = {r->pipe->pend_head, r->pipe->free_list, r->pipe->cur};
    r->pipe->pend_head = r->pipe->pend_tail = r->pipe->free_list = r->pipe->cur = NULL;
    for (int l = 0; l < 3; l++) {
        struct batch *b = lists[l];
        while (b) {
            struct batch *next = l == 2 ? NULL : b->next;
            if (b->is_range && b->close_fd)
                close(b->fd);
            batch_free(b);
            b = next;
        }
    }
    free(main_worker.buf);
    main_worker.buf = NULL;
    simlsh_signature_free(main_worker.sig);
    main_worker.sig = NULL;
    free(main_worker.jbuf);
    main_worker.jbuf = NULL;
    main_worker.jcap = 0;
    inserts_wait(r);
    free(r->pipe->ins_ids);
    free(r->pipe->ins_values);
    r->pipe->ins_ids = NULL;
    r->pipe->ins_values = NULL;
    r->pipe->ins_n = r->pipe->ins_cap = 0;
    free(r->pipe->ins_async.ids);
    free(r->pipe->ins_async.values);
    r->pipe->ins_async.ids = NULL;
    r->pipe->ins_async.values = NULL;
    r->pipe->ins_async.n = r->pipe->ins_async.cap = 0;
    free(r->pipe);
    r->pipe = NULL;
}
