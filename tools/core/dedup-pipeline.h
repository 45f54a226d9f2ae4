/*
 * simlsh-dedup: the reading pipeline's private header, for its files only
 * (dedup-input.c, dedup-read.c, dedup-sign.c, dedup-insert.c). The rest of
 * the core and the front ends see the pipeline through dedup.h
 * (run_pipeline_start(), run_inputs(), run_pipeline_stop()).
 *
 * The calls go one way: dedup-input.c (main thread: the inputs into
 * batches) -> dedup-insert.c (batches, the in-order consumer, the inserts)
 * -> dedup-sign.c (the workers) -> dedup-read.c (what a worker reads).
 */
#ifndef SIMLSH_DEDUP_PIPELINE_H
#define SIMLSH_DEDUP_PIPELINE_H

#include "dedup.h"

#include <sys/stat.h>
#include <sys/types.h>

/* reads past a range's end, to finish its last line */
#define RANGE_STEP (64u << 10)

/* The pipeline's state, r->pipe of a run from run_pipeline_start() to
 * run_pipeline_stop(). */
struct pipeline {
    pthread_t *workers;
    size_t nworkers;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    struct batch *todo_head, *todo_tail; /* waiting for a worker */
    struct batch *pend_head, *pend_tail; /* submitted, in input order */
    struct batch *free_list;
    struct batch *cur; /* being filled */
    uint64_t next_seq;
    int stopping;

    /* reading line files by ranges (consumed in order) */
    uint64_t range_bytes; /* nominal size of a range */
    uint64_t range_lines; /* lines of the current input before this range */
    int range_stopped;    /* a read error ended the current input */
    int json_slow;        /* no fast path for JSONL records (tests) */
    /* signed documents waiting to be inserted in one threaded call */
    size_t num_perm;
    uint64_t *ins_ids;
    uint32_t *ins_values; /* ins_n x num_perm */
    size_t ins_n, ins_cap, ins_flush;
    /* with threads, one insert call runs on a thread of its own while the
     * main thread goes on consuming batches into the other buffer */
    struct {
        pthread_t thread;
        int running;
        int rc;
        uint64_t *ids; /* the buffer it inserts, and then the spare one */
        uint32_t *values;
        size_t n, cap;
        double wall, cpu; /* of its call, in its thread */
    } ins_async;
};

/* A signing thread's own state (one per worker; main_worker when the main
 * thread signs, -j 1). */
struct worker {
    struct run *r;
    size_t index; /* in r->worker_cpu */
    simlsh_signature *sig;
    char *buf;  /* file contents, reused across documents */
    char *jbuf; /* a JSON text with escapes, decoded */
    size_t jcap;
    size_t cap;
};

/* dedup-read.c: what a worker reads */
void doc_skip(struct doc *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int64_t mtime_ns(const struct stat *st);
/* Read a whole stream into w->buf, at most max bytes: one more byte than
 * that and the document is skipped, even if the file grew since the walk.
 * Returns 0, or -1 with d->status set. */
int read_bounded(struct worker *w, const struct options *o, struct reader *rd, size_t hint,
                 struct doc *d, size_t *len);
int read_path_doc(struct worker *w, const struct options *o, const char *path, struct doc *d,
                  size_t *len);
/* Room for n documents in b (their signatures are made when first used). */
void batch_room(struct batch *b, size_t n);
void arena_room(struct batch *b, size_t n);
struct doc *batch_doc(struct batch *b, size_t input, int kind);
int is_blank(const char *s, size_t len);
/* pread that retries interrupted calls; -1 with errno on failure. */
ssize_t pread_full(int fd, char *buf, size_t len, uint64_t off);
/* A worker's half of reading a line file: the lines of the batch's range,
 * read into its arena and split there. */
void read_range(const struct options *o, struct batch *b);

/* dedup-sign.c: the workers */
void sign_batch(struct worker *w, struct batch *b);
void *worker_main(void *arg);

/* dedup-insert.c: batches and the in-order consumer (main thread) */
extern struct worker main_worker; /* the main thread signs when -j 1 */
struct batch *batch_new(void);
void batch_free(struct batch *b);
void progress_update(struct run *r, int force);
void ensure_locs(struct run_inputs *in, uint64_t k);
int inserts_wait(struct run *r);
int flush_inserts(struct run *r);
int consume_oldest(struct run *r);
int submit(struct run *r);
struct batch *current_batch(struct run *r);
struct doc *new_doc(struct run *r, size_t input, int kind, size_t text_len);

#endif
