/*
 * simlsh-dedup: batches and the in-order consumer (main thread). Signed
 * batches are consumed strictly in input order: ids are the input
 * positions of the accepted documents, so the index and every result are
 * identical for any number of threads. Signed documents are inserted in
 * one threaded call per buffer, on a thread of its own while the main
 * thread goes on.
 */
#include "dedup-pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Batches and the in-order consumer (main thread)                          */
/* ------------------------------------------------------------------------ */

struct worker main_worker;

struct batch *batch_new(void)
{
    struct batch *b = calloc(1, sizeof *b);
    if (!b)
        die_oom();
    batch_room(b, BATCH_DOCS);
    arena_room(b, BATCH_BYTES + 2 * RANGE_STEP); /* a range and its overrun */
    b->fd = -1;
    return b;
}

void batch_free(struct batch *b)
{
    free(b->docs);
    free(b->values);
    free(b->arena);
    free(b->ids);
    free(b);
}

void doc_name(struct run *r, const struct batch *b, const struct doc *d, const char **s,
              size_t *len, char *tmp, size_t tmpcap)
{
    const struct input *in = &r->opt->inputs[d->input];
    switch (d->kind) {
    case DOCK_PATH:
        *s = strlist_get(&r->in.paths, d->path, len);
        return;
    case DOCK_JSON:
        if (d->id_type != ID_NONE) {
            *s = b->ids + d->id_off;
            *len = d->id_len;
            return;
        }
        break;
    default:
        if (in->kind == INPUT_STDIN) {
            *s = "-";
            *len = 1;
            return;
        }
        break;
    }
    /* tmpcap is at least doc_name_cap(): a cut name would collide with
     * another line's (issue 31, F9) */
    int n;
    if (r->lines_prefix)
        n = snprintf(tmp, tmpcap, "%s:%llu", in->arg, (unsigned long long)d->line);
    else
        n = snprintf(tmp, tmpcap, "%llu", (unsigned long long)d->line);
    if (n < 0 || (size_t)n >= tmpcap)
        abort();
    *s = tmp;
    *len = (size_t)n;
}

/* Bytes doc_name() and doc_where() may need for a document of input i:
 * the input's name, a colon, a 64-bit line number and the NUL. */
size_t doc_name_cap(const struct options *o, uint32_t input)
{
    return strlen(o->inputs[input].arg) + 24;
}

/* Where a message about document d points: "FILE:LINE" or the path. */
static void doc_where(const struct options *o, const struct run_inputs *inputs, const struct doc *d,
                      char *buf, size_t cap)
{
    const struct input *in = &o->inputs[d->input];
    if (d->kind == DOCK_PATH)
        snprintf(buf, cap, "%s", strlist_get(&inputs->paths, d->path, NULL));
    else if (in->kind == INPUT_STDIN)
        snprintf(buf, cap, "<stdin>");
    else
        snprintf(buf, cap, "%s:%llu", strcmp(in->arg, "-") ? in->arg : "<stdin>",
                 (unsigned long long)d->line);
}

void progress_update(struct run *r, int force)
{
    if (!r->progress)
        return;
    double t = now_seconds();
    if (!force && t - r->stats.t_last_progress < 0.25)
        return;
    r->stats.t_last_progress = t;
    double el = t - r->stats.t_start;
    double rate = el > 0 ? (double)r->stats.bytes / el : 0;
    char done[32], eta[48] = "";
    human_bytes(done, sizeof done, (double)r->stats.bytes);
    if (r->stats.total_known && rate > 0 && r->stats.total_bytes > r->stats.bytes)
        snprintf(eta, sizeof eta, "  ETA %.0f s",
                 (double)(r->stats.total_bytes - r->stats.bytes) / rate);
    fprintf(stderr, "\r\033[Ksimlsh-dedup: %llu documents, %s, %.1f MB/s%s",
            (unsigned long long)r->stats.docs, done, rate / 1e6, eta);
    fflush(stderr);
}

void ensure_locs(struct run_inputs *in, uint64_t k)
{
    if (k < in->locs_cap)
        return;
    size_t cap = in->locs_cap ? in->locs_cap * 2 : 4096;
    while (cap <= k)
        cap *= 2;
    in->locs = xrealloc(in->locs, cap * sizeof *in->locs);
    in->locs_cap = cap;
}

static uint64_t hash_name(const char *s, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}

/* A JSONL id seen before in this run is reported (it stays a document:
 * its text may differ), so outputs that name it are known to be ambiguous. */
static void check_duplicate_id(struct run *r, uint64_t id, const struct doc *d)
{
    if (2 * (r->in.idset_n + 1) > r->in.idset_cap) {
        size_t cap = r->in.idset_cap ? r->in.idset_cap * 2 : 1024;
        struct idslot *t = calloc(cap, sizeof *t);
        if (!t)
            die_oom();
        for (size_t i = 0; i < r->in.idset_cap; i++) {
            if (!r->in.idset[i].id1)
                continue;
            size_t l;
            const char *s = strlist_get(&r->store.names, r->in.idset[i].id1 - 1, &l);
            size_t k = (size_t)hash_name(s, l) & (cap - 1);
            while (t[k].id1)
                k = (k + 1) & (cap - 1);
            t[k] = r->in.idset[i];
        }
        free(r->in.idset);
        r->in.idset = t;
        r->in.idset_cap = cap;
    }
    size_t len, l2;
    const char *s = strlist_get(&r->store.names, id, &len);
    size_t k = (size_t)hash_name(s, len) & (r->in.idset_cap - 1);
    while (r->in.idset[k].id1) {
        const char *t = strlist_get(&r->store.names, r->in.idset[k].id1 - 1, &l2);
        if (l2 == len && !memcmp(s, t, len)) {
            const char *a1 = r->opt->inputs[d->input].arg;
            const char *a0 = r->opt->inputs[r->in.idset[k].input].arg;
            r->stats.duplicate_ids++;
            warnx_doc(r, "%s:%llu: duplicate id %s (first at %s:%llu)",
                      qname(strcmp(a1, "-") ? a1 : "<stdin>"), (unsigned long long)d->line,
                      qnamen(s, len), qname(strcmp(a0, "-") ? a0 : "<stdin>"),
                      (unsigned long long)r->in.idset[k].line);
            return;
        }
        k = (k + 1) & (r->in.idset_cap - 1);
    }
    r->in.idset[k].id1 = id + 1;
    r->in.idset[k].line = d->line;
    r->in.idset[k].input = d->input;
    r->in.idset_n++;
}

/* Insert the documents waiting in r->ins_*: one call on the run's threads,
 * in id order, which builds the index that inserting them one at a time
 * would (the library's promise). Gathering several batches first gives the
 * call enough work to use its threads.
 *
 * With threads the call runs on a thread of its own (insert_main) while
 * the main thread goes on handing batches to the signing workers and
 * queueing their documents in the other buffer: a call made by the main
 * thread left the workers idle once the few batches in flight were signed
 * (on 2 cores, about a tenth of the read phase). Calls still come one
 * after the other, in id order: the next waits for the last
 * (inserts_wait), so the index is the same. */
static int insert_now(struct run *r, const uint64_t *ids, const uint32_t *values, size_t n,
                      double *wall, double *cpu)
{
    double t0 = now_seconds(), c0 = thread_cpu_seconds();
    int rc = simlsh_index_insert_values(r->store.index, ids, values, n, r->lib_threads);
    *wall = now_seconds() - t0;
    *cpu = thread_cpu_seconds() - c0;
    return rc;
}

static int insert_failed(struct run *r, const uint64_t *ids, size_t n, int rc)
{
    fprintf(stderr, "simlsh-dedup: cannot index documents %llu to %llu: %s\n",
            (unsigned long long)ids[0], (unsigned long long)ids[n - 1], simlsh_strerror(rc));
    r->failed = EXIT_DEDUP_INTERNAL;
    return -1;
}

/* One insert call made by this thread, counted. */
static int insert_here(struct run *r, const uint64_t *ids, const uint32_t *values, size_t n)
{
    double wall = 0, cpu = 0;
    int rc = insert_now(r, ids, values, n, &wall, &cpu);
    r->stats.wall_inserting += wall;
    r->stats.cpu_inserting += cpu;
    return rc != 0 ? insert_failed(r, ids, n, rc) : 0;
}

static void *insert_main(void *arg)
{
    struct run *r = arg;
    r->pipe->ins_async.rc =
        insert_now(r, r->pipe->ins_async.ids, r->pipe->ins_async.values, r->pipe->ins_async.n,
                   &r->pipe->ins_async.wall, &r->pipe->ins_async.cpu);
    return NULL;
}

/* Waits for the insert call on its own thread, if one runs. */
int inserts_wait(struct run *r)
{
    if (!r->pipe->ins_async.running)
        return 0;
    pthread_join(r->pipe->ins_async.thread, NULL);
    r->pipe->ins_async.running = 0;
    r->stats.wall_inserting += r->pipe->ins_async.wall;
    r->stats.cpu_inserting += r->pipe->ins_async.cpu;
    if (r->pipe->ins_async.rc != 0)
        return insert_failed(r, r->pipe->ins_async.ids, r->pipe->ins_async.n,
                             r->pipe->ins_async.rc);
    return 0;
}

int flush_inserts(struct run *r)
{
    if (inserts_wait(r) != 0)
        return -1;
    /* The removals of --replace queued since the last call, before the
     * next insert call starts: the index has one writer at a time. They
     * come between the same insert calls as in a run without the thread,
     * so the index is the same. */
    if (store_apply_drops(r) != 0)
        return -1;
    if (r->pipe->ins_n == 0)
        return 0;
    if (r->store.sigs) { /* the MPI driver keeps values, no index */
        if (r->pipe->ins_ids[0] != r->store.sigs->n ||
            r->pipe->ins_ids[r->pipe->ins_n - 1] != r->store.sigs->n + r->pipe->ins_n - 1)
            return insert_failed(r, r->pipe->ins_ids, r->pipe->ins_n, SIMLSH_EINVAL);
        sigstore_append(r->store.sigs, r->pipe->ins_values,
                        r->pipe->ins_n); /* ids are consecutive */
        r->pipe->ins_n = 0;
        return 0;
    }
    if (r->nthreads > 1) {
        /* the queue goes to the insert thread; the spare buffer becomes
         * the queue */
        uint64_t *ids = r->pipe->ins_async.ids;
        uint32_t *values = r->pipe->ins_async.values;
        size_t cap = r->pipe->ins_async.cap;
        r->pipe->ins_async.ids = r->pipe->ins_ids;
        r->pipe->ins_async.values = r->pipe->ins_values;
        r->pipe->ins_async.cap = r->pipe->ins_cap;
        r->pipe->ins_async.n = r->pipe->ins_n;
        r->pipe->ins_ids = ids;
        r->pipe->ins_values = values;
        r->pipe->ins_cap = cap;
        r->pipe->ins_n = 0;
        if (pthread_create(&r->pipe->ins_async.thread, NULL, insert_main, r) == 0) {
            r->pipe->ins_async.running = 1;
            return 0;
        }
        /* no thread: the call is made here */
        return insert_here(r, r->pipe->ins_async.ids, r->pipe->ins_async.values,
                           r->pipe->ins_async.n);
    }
    if (insert_here(r, r->pipe->ins_ids, r->pipe->ins_values, r->pipe->ins_n) != 0)
        return -1;
    r->pipe->ins_n = 0;
    return 0;
}

/* Queue document id with its values (num_perm x 4 bytes: a copy far
 * smaller than the text, and it frees the batch at once). */
static void queue_insert(struct run *r, uint64_t id, const struct batch *b, size_t i)
{
    if (r->pipe->ins_n == r->pipe->ins_cap) {
        r->pipe->ins_cap = r->pipe->ins_cap ? r->pipe->ins_cap * 2 : r->pipe->ins_flush + 1;
        r->pipe->ins_ids = xrealloc(r->pipe->ins_ids, r->pipe->ins_cap * sizeof *r->pipe->ins_ids);
        r->pipe->ins_values = xrealloc(r->pipe->ins_values, r->pipe->ins_cap * r->pipe->num_perm *
                                                                sizeof *r->pipe->ins_values);
    }
    r->pipe->ins_ids[r->pipe->ins_n] = id;
    memcpy(r->pipe->ins_values + r->pipe->ins_n * r->pipe->num_perm,
           b->values + i * r->pipe->num_perm, r->pipe->num_perm * sizeof *r->pipe->ins_values);
    r->pipe->ins_n++;
}

/* Consume a signed batch: report its bad documents and name the good ones
 * in input order, and queue them for insertion. */
static int consume(struct run *r, struct batch *b)
{
    static char *namebuf; /* main thread only; grows to the longest name */
    static size_t namebuf_cap;
    if (b->is_range) {
        const struct input *in = &r->opt->inputs[b->input];
        if (b->start == (in->ranged ? in->range_beg : 0)) { /* the first range of an input */
            r->pipe->range_lines = in->ranged ? in->line0 : 0;
            r->pipe->range_stopped = 0;
        }
        if (r->pipe->range_stopped)
            return 0;
        for (size_t i = 0; i < b->n; i++)
            b->docs[i].line += r->pipe->range_lines;
    }
    for (size_t i = 0; i < b->n && !r->failed; i++) {
        struct doc *d = &b->docs[i];
        /* names of any length, never cut: PATH_MAX is 4096 */
        size_t need = doc_name_cap(r->opt, d->input);
        if (d->kind == DOCK_PATH) {
            size_t plen;
            strlist_get(&r->in.paths, d->path, &plen);
            need = plen + 1 > need ? plen + 1 : need;
        }
        if (need > namebuf_cap) {
            free(namebuf);
            namebuf = xmalloc(need);
            namebuf_cap = need;
        }
        if (d->status != DOC_OK) {
            char *where = namebuf;
            doc_where(r->opt, &r->in, d, where, namebuf_cap);
            int rc;
            switch (d->status) {
            case DOC_EEMPTY:
                rc = skip_input(r, where, strlen(where), "empty document, skipped");
                break;
            case DOC_ELIB:
                rc = skip_input(r, where, strlen(where), "%s", simlsh_strerror(d->err));
                if (d->err == SIMLSH_ENOMEM) {
                    r->failed = EXIT_DEDUP_INTERNAL;
                    return -1;
                }
                break;
            default:
                rc = skip_input(r, where, strlen(where), "%s", d->msg);
                break;
            }
            if (rc)
                return -1;
            continue;
        }
        const char *name;
        size_t len;
        doc_name(r, b, d, &name, &len, namebuf, namebuf_cap);
        /* a name already in the --index file: skipped, or replaced */
        int admit = store_admit(r, name, len, d->bytes, d->mtime_ns, d->kind == DOCK_PATH);
        if (admit < 0)
            return -1;
        if (admit == 0)
            continue;
        uint64_t id = r->store.names.count;
        queue_insert(r, id, b, i);
        /* size 1 marks a name that is a JSON integer (--format jsonl) */
        int is_int = d->kind == DOCK_JSON &&
                     (d->id_type == ID_INT || (d->id_type == ID_NONE && !r->lines_prefix));
        strlist_add(&r->store.names, name, len, (uint64_t)is_int);
        if (d->kind == DOCK_JSON && d->id_type != ID_NONE)
            check_duplicate_id(r, id, d);
        if (r->opt->output == OUT_RECORDS || r->opt->output == OUT_DROP_RECORDS)
            strlist_add(&r->in.records, b->arena + d->text_off, d->text_len, 0);
        ensure_idmeta(&r->store, id);
        ensure_locs(&r->in, id - r->store.first_new);
        struct docloc *loc = &r->in.locs[id - r->store.first_new];
        loc->input = d->input;
        loc->kind = d->kind;
        loc->where = d->kind == DOCK_PATH ? (uint64_t)d->path : d->src_off;
        loc->len = d->kind == DOCK_PATH ? 0 : d->text_len;
        r->store.id_bytes[id] = d->bytes;
        r->store.id_mtime[id] = d->mtime_ns;
        r->stats.docs++;
        r->stats.bytes += d->bytes;
    }
    if (b->is_range && !r->failed) {
        uint64_t before = r->pipe->range_lines;
        r->pipe->range_lines += b->newlines;
        if (b->read_err) {
            const char *arg = r->opt->inputs[b->input].arg;
            r->pipe->range_stopped = 1;
            r->inputs_cut++;
            if (skip_input(r, arg, strlen(arg), "read error: %s after line %llu",
                           strerror(b->read_err), (unsigned long long)(before + b->read_line)))
                return -1;
        }
    }
    if (r->pipe->ins_n >= r->pipe->ins_flush && flush_inserts(r))
        return -1;
    progress_update(r, 0);
    return r->failed ? -1 : 0;
}

static void batch_reset(struct batch *b)
{
    b->n = 0;
    b->arena_len = 0;
    b->ids_len = 0;
    b->done = 0;
    b->next = NULL;
    b->is_range = b->last_range = b->close_fd = 0;
    b->fd = -1;
    b->newlines = 0;
    b->read_err = 0;
    b->read_line = 0;
    b->cpu_read = 0;
}

/* Wait for the oldest submitted batch, insert it, recycle it. */
int consume_oldest(struct run *r)
{
    struct batch *b = r->pipe->pend_head;
    if (!b)
        return 0;
    if (r->pipe->nworkers) {
        pthread_mutex_lock(&r->pipe->mu);
        if (!b->done) {
            double t0 = now_seconds();
            while (!b->done)
                pthread_cond_wait(&r->pipe->done_cv, &r->pipe->mu);
            r->stats.wall_waiting += now_seconds() - t0;
        }
        pthread_mutex_unlock(&r->pipe->mu);
    }
    r->pipe->pend_head = b->next;
    if (!r->pipe->pend_head)
        r->pipe->pend_tail = NULL;
    int rc = consume(r, b);
    if (b->is_range && b->close_fd)
        close(b->fd); /* every range of the input is consumed */
    batch_reset(b);
    b->next = r->pipe->free_list;
    r->pipe->free_list = b;
    return rc;
}

int submit(struct run *r)
{
    struct batch *b = r->pipe->cur;
    r->pipe->cur = NULL;
    if (!b)
        return 0;
    if (b->n == 0 && !b->is_range) {
        b->next = r->pipe->free_list;
        r->pipe->free_list = b;
        return 0;
    }
    b->seq = r->pipe->next_seq++;
    b->next = NULL;
    if (r->pipe->pend_tail)
        r->pipe->pend_tail->next = b;
    else
        r->pipe->pend_head = b;
    r->pipe->pend_tail = b;
    if (r->pipe->nworkers == 0) {
        double c0 = thread_cpu_seconds();
        sign_batch(&main_worker, b);
        r->stats.cpu_reading += b->cpu_read;
        r->stats.cpu_signing += thread_cpu_seconds() - c0 - b->cpu_read;
        b->done = 1;
        return consume_oldest(r);
    }
    b->todo_next = NULL;
    pthread_mutex_lock(&r->pipe->mu);
    if (r->pipe->todo_tail)
        r->pipe->todo_tail->todo_next = b;
    else
        r->pipe->todo_head = b;
    r->pipe->todo_tail = b;
    pthread_cond_signal(&r->pipe->work_cv);
    pthread_mutex_unlock(&r->pipe->mu);
    return 0;
}

/* The batch being filled; when every batch is in flight, wait for the
 * oldest, which bounds memory to a few batches per thread. */
struct batch *current_batch(struct run *r)
{
    if (r->pipe->cur)
        return r->pipe->cur;
    while (!r->pipe->free_list) {
        if (consume_oldest(r))
            return NULL;
    }
    r->pipe->cur = r->pipe->free_list;
    r->pipe->free_list = r->pipe->cur->next;
    r->pipe->cur->next = NULL;
    return r->pipe->cur;
}

struct doc *new_doc(struct run *r, size_t input, int kind, size_t text_len)
{
    struct batch *b = r->pipe->cur;
    if (b && (b->n == BATCH_DOCS || (b->n > 0 && b->arena_len + text_len > b->arena_cap))) {
        if (submit(r))
            return NULL;
    }
    b = current_batch(r);
    if (!b)
        return NULL;
    arena_room(b, b->arena_len + text_len);
    return batch_doc(b, input, kind);
}
