/*
 * simlsh-dedup: declarations shared by its source files. The program uses
 * only the public header, exactly as an outside user would.
 */
#ifndef SIMLSH_DEDUP_H
#define SIMLSH_DEDUP_H

#include <simlsh.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Exit codes (docs/cli.md, EXIT STATUS). */
enum {
    EXIT_DEDUP_OK = 0,
    EXIT_DEDUP_FOUND = 1,    /* duplicates found and --exit-code given */
    EXIT_DEDUP_USAGE = 2,    /* bad command line or option values */
    EXIT_DEDUP_INPUT = 3,    /* bad input under --strict, unusable --index */
    EXIT_DEDUP_INTERNAL = 4, /* library error, out of memory, write failure */
    EXIT_DEDUP_NOTHING = 5,  /* inputs given, every one skipped: nothing read */
    EXIT_DEDUP_TRUNCATED = 6 /* --max-pairs cut the answer short */
};

/* 64 MiB: far above any text document, far below what hurts. */
#define DEFAULT_MAX_DOC_BYTES (UINT64_C(64) << 20)
/* gzip cannot exceed about 1032:1, and text compresses 3-20:1 with zstd
 * -19; a bomb reaches 30,000:1 (issue 31, F12). */
#define DEFAULT_MAX_RATIO 1000

enum output_mode {
    OUT_CLUSTERS,
    OUT_PAIRS,
    OUT_KEEP,
    OUT_DROP,
    OUT_RECORDS,
    OUT_DROP_RECORDS
};
enum keep_policy {
    KEEP_FIRST,
    KEEP_SHORTEST,
    KEEP_LONGEST,
    KEEP_OLDEST,
    KEEP_NEWEST
};
enum output_format {
    FMT_TSV,
    FMT_JSONL
};
enum verify_mode {
    VERIFY_NONE,
    VERIFY_ESTIMATE,
    VERIFY_EXACT
};
enum cluster_mode {
    CLUSTER_STAR,
    CLUSTER_COMPONENTS
};

/* A candidate or verified pair of ids, a < b; score is the similarity
 * (exact or estimated), -1 when unknown. */
struct pair {
    uint64_t a, b;
    double score;
};

/* --verify-memory default: the shingle sets held at once by the second pass. */
#define DEFAULT_VERIFY_MEMORY 0 /* auto: see verify_budget() in dedup-verify.c */

/* One command-line input, processed in command-line order. */
enum input_kind {
    INPUT_PATHS, /* a file or directory: one document per file */
    INPUT_STDIN, /* "-": all of standard input is one document */
    INPUT_LINES, /* --lines: one document per line */
    INPUT_JSONL, /* --jsonl: one JSON object per line */
    INPUT_LIST   /* --files-from, replaced by its names after parsing */
};

struct input {
    enum input_kind kind;
    const char *arg;   /* as given; "-" is standard input */
    size_t first_path; /* INPUT_PATHS: range in the run's path list */
    size_t npaths;
    /* --lines/--jsonl of an uncompressed file, read in part (the MPI
     * driver): the lines starting in [range_beg, range_end), both line
     * starts, with line0 lines before range_beg. */
    int ranged;
    uint64_t range_beg, range_end, line0;
};

/* A growable list of strings (arena + offsets) with an optional size each. */
struct strlist {
    char *buf;
    size_t len, cap;
    size_t *off; /* off[i] .. off[i+1]-1 is string i, NUL-terminated */
    uint64_t *size;
    size_t count, cap_off;
};

int strlist_add(struct strlist *l, const char *s, size_t len, uint64_t size);
const char *strlist_get(const struct strlist *l, size_t i, size_t *len);
void strlist_free(struct strlist *l);

/* Per-document outcome, filled by a signing worker. */
enum doc_status {
    DOC_OK,
    DOC_EOPEN,  /* cannot open or read the file (err = errno) */
    DOC_EEMPTY, /* nothing to shingle */
    DOC_EUTF8,  /* invalid UTF-8 under --strict-utf8 */
    DOC_EJSON,  /* invalid JSON line (msg) */
    DOC_EFIELD, /* missing or mistyped JSON field (msg) */
    DOC_ELIB,   /* library error (err = SIMLSH_E*) */
    DOC_ESKIP   /* not read: special file, too large, binary, compressed (msg) */
};

enum doc_kind {
    DOCK_PATH,
    DOCK_TEXT,
    DOCK_JSON,
    DOCK_FAILED /* docloc in the spool only: why its owner could not read it */
};
enum id_type {
    ID_NONE,
    ID_STRING,
    ID_INT
};

struct doc {
    uint32_t input; /* index into the run's inputs */
    uint8_t kind;   /* enum doc_kind */
    uint8_t status; /* enum doc_status */
    int err;
    uint64_t line;    /* 1-based line for line inputs, 0 otherwise */
    uint64_t src_off; /* line inputs: offset of the line's first byte in
                           * the input's (decompressed) byte stream */
    size_t path;      /* DOCK_PATH: index into the run's path list */
    size_t text_off;  /* DOCK_TEXT / DOCK_JSON: bytes in batch->arena */
    size_t text_len;
    size_t id_off; /* DOCK_JSON: the id, in batch->ids */
    size_t id_len;
    uint8_t id_type;  /* DOCK_JSON: enum id_type */
    uint64_t bytes;   /* bytes of the document's text */
    int64_t mtime_ns; /* modification time of its file, for --keep */
    char msg[120];
};

#define BATCH_DOCS 256
#define BATCH_BYTES (1u << 20)

/* Documents travel in batches: the main thread fills one (paths, or lines
 * of a stream it reads) or names a byte range of a line file that the
 * worker reads and splits itself; a worker signs it (with its own
 * signature object, keeping only the values); the main thread consumes it.
 * Batches are recycled with their buffers, so the steady state allocates
 * nothing per document. */
struct batch {
    uint64_t seq;
    size_t n, cap; /* documents, and room for them in docs */
    struct doc *docs;
    uint32_t *values;  /* row i: the signature values of docs[i] */
    size_t values_cap; /* rows */
    char *arena;
    size_t arena_len, arena_cap;
    char *ids;
    size_t ids_len, ids_cap;
    /* a range of a line file: lines starting in [start, end) of fd */
    int is_range, last_range;
    int close_fd; /* the input's last range (of its share): consumed, fd closes */
    uint32_t input;
    int fd;
    int64_t mtime;
    uint64_t start, end;
    uint64_t newlines; /* newline characters in the lines of the range */
    int read_err;      /* errno of a failed read, after read_line lines */
    uint64_t read_line;
    double cpu_read; /* worker CPU seconds reading and splitting */
    int done;
    struct batch *next;      /* pending (input order) or free list */
    struct batch *todo_next; /* queue of batches waiting for a worker */
};

/* Device and inode of a file, to recognise one file under several names. */
struct fileid {
    uint64_t dev, ino;
};

struct fileids {
    struct fileid *v;
    size_t n, cap;
    int sorted;
};

struct options {
    /* hashing contract: explicit values, applied over the defaults or over
     * the contract loaded with --index */
    uint32_t set_mask; /* bit per SIMLSH_PARAM_* key given */
    int64_t ival[32];
    double dval[32];
    const char *unit_arg, *normalize_arg;
    enum verify_mode verify;
    enum cluster_mode cluster;
    uint64_t verify_memory; /* --verify-memory: budget of the second pass */
    int64_t giant_buckets;  /* --giant-buckets: -1 the library's default */
    double giant_cost;      /* --giant-cost: < 0 the library's default */
    double recall;          /* --recall: P(candidate | J = threshold) target */
    enum output_mode output;
    enum output_format format;
    const char *output_path, *stats_path, *skipped_path;
    enum keep_policy keep;
    uint64_t max_doc_bytes;
    uint64_t max_input_bytes, max_ratio; /* compressed line inputs; 0: none */
    int binary, include_vcs;
    const char **globs_in, **globs_ex;
    size_t nglobs_in, nglobs_ex;
    char **owned; /* strings read by --files-from, freed at exit */
    size_t nowned;
    struct fileids list_ids; /* the --files-from files themselves */
    const char *save_index, *load_index;
    /* incremental runs (dedup-store.c) */
    int replace, only_new;
    int update;                /* --update: re-sign the changed ones only */
    const char **remove_names; /* --remove, in order */
    size_t nremove;
    const char *remove_from;
    const char *id_field, *text_field;
    size_t max_pairs;
    int threads;
    int quiet, strict, strict_utf8, exit_code;
    struct input *inputs;
    size_t ninputs;
};

/* What the walk learnt about each path. */
struct pathmeta {
    uint64_t dev, ino;
    int64_t mtime_ns; /* modification time (simlsh-dedup-mpi: ranks must agree) */
    int is_link;      /* the name is a symbolic link */
    size_t alias_of;  /* SIZE_MAX, or the path that stands for the same file */
};

/* Where an indexed document came from, so a second pass can read it again
 * (issue 9): a file by its path index, a line by its input and offset. */
/* docloc.input of a document whose text another process read and sent
 * (simlsh-dedup-mpi): len bytes at offset where of run.spool_fd, the text
 * (DOCK_TEXT) or the reason it could not be read (DOCK_FAILED). */
#define LOC_SPOOL UINT32_MAX

struct docloc {
    uint32_t input; /* index into the run's inputs, or LOC_SPOOL */
    uint8_t kind;   /* enum doc_kind */
    uint64_t where; /* DOCK_PATH: path index; otherwise the line's src_off */
    uint64_t len;   /* bytes of the line without its newline (0 for files) */
};

/* Phases of a run, timed for --stats (wall and process CPU seconds). */
enum phase {
    PH_SETUP,
    PH_READ,
    PH_PAIRS,
    PH_VERIFY,
    PH_GROUP,
    PH_WRITE,
    PH_SAVE,
    PH_COUNT
};
extern const char *const phase_names[PH_COUNT];

struct idslot {
    uint64_t id1; /* id + 1; 0 is an empty slot */
    uint64_t line;
    size_t input;
};

/* Signatures kept in blocks (simlsh-dedup-mpi's ranks store their
 * documents' values here instead of indexing them: the owners of the band
 * keys make the buckets). Blocks of SIGSTORE_BLOCK signatures: growing
 * copies nothing. */
#define SIGSTORE_BLOCK 4096
struct sigstore {
    uint32_t **blk;
    size_t nblk, cap_blk;
    size_t n;  /* signatures stored: ids 0 .. n-1 */
    size_t np; /* values per signature */
};
void sigstore_append(struct sigstore *s, const uint32_t *values, size_t n);
static inline const uint32_t *sigstore_at(const struct sigstore *s, size_t i)
{
    return s->blk[i / SIGSTORE_BLOCK] + (i % SIGSTORE_BLOCK) * s->np;
}
void sigstore_free(struct sigstore *s);

/* What reading found: the walk's files, the skipped inputs, and where
 * every new document came from, to read it again (a part of struct run). */
struct run_inputs {
    struct strlist paths;   /* files found under INPUT_PATHS inputs */
    struct pathmeta *pmeta; /* one per path */
    size_t pmeta_cap;
    struct fileids input_ids; /* every input file: no output may replace one */
    struct strlist skips;     /* "NAME\tREASON" for --skipped */
    struct strlist records;   /* --output records: the line of each new id */
    struct idslot *idset;     /* JSONL ids seen, to report duplicates */
    size_t idset_cap, idset_n;
    struct docloc *locs; /* per new id (id - first_new): where to re-read it */
    size_t locs_cap;
    int spool_fd; /* with spool_open: texts of LOC_SPOOL documents */
    int spool_open;
};

/* What a run counts and times, for the summary and --stats (a part of
 * struct run: a function that only counts takes this). */
struct run_stats {
    uint64_t docs, bytes, skipped, total_bytes;
    int total_known;
    uint64_t aliases; /* names that are another name of an input file */
    uint64_t changed; /* indexed documents changed since (--update) */
    uint64_t duplicate_ids;
    uint64_t already_indexed, replaced, removed; /* incremental runs */
    double t_start, t_last_progress;
    /* --stats: time spent in each phase; the current one runs since t_phase */
    double phase_wall[PH_COUNT], phase_cpu[PH_COUNT];
    int phase;
    double t_phase, cpu_phase;
    /* --stats: CPU seconds per thread (CLOCK_THREAD_CPUTIME_ID), and where
     * the read phase's time went */
    double *worker_cpu;    /* one per worker, written as it ends */
    size_t nworkers_run;   /* workers that ran (nworkers is 0 after them) */
    double cpu_reading;    /* all threads: reading and splitting ranges */
    double cpu_signing;    /* all threads: parsing and signing */
    double wall_inserting; /* in index insert calls */
    double cpu_inserting;  /* the CPU of the thread that made them */
    double wall_waiting;   /* main thread: waiting for a signed batch */
    double cpu_main_read;  /* main thread's CPU when reading ended */
    /* verification (dedup-verify.c), for the summary and --stats */
    struct {
        uint64_t candidates;     /* candidate pairs enumerated */
        uint64_t exact;          /* pairs decided by exact Jaccard */
        uint64_t estimated;      /* exact mode: pairs decided by their estimate */
        uint64_t docs_unread;    /* exact mode: documents that could not be read again */
        uint64_t reads;          /* documents read by the second pass (with repeats) */
        uint64_t batches;        /* batches of the second pass */
        uint64_t budget;         /* bytes of sets one batch may plan (--verify-memory) */
        uint64_t set_bytes_peak; /* most bytes of shingle sets held at once */
        uint64_t shingles_peak;  /* most shingles held at once */
        int bytes_per_shingle;   /* 4 (32-bit hashes) or 8 */
        int recall_banding;      /* bands and rows chosen for --recall */
        double prefilter;        /* exact mode: candidates need an estimate >= this */
        uint64_t visits;         /* bucket members looked at by the grouping */
        uint64_t identical;      /* pairs decided as identical texts */
        uint64_t edits;          /* pairs decided from the bytes where they differ */
        uint64_t sampled;        /* pairs rejected from a sample of their sets */
        uint64_t set_aside;      /* giant buckets of unlike documents set aside */
        uint64_t cached;         /* texts handed over again from memory */
        uint64_t set_aside_docs; /* their members, summed */
        int stdin_kept;          /* standard input can be read again */
        int64_t stdin_base;      /* ... from this offset of descriptor 0 */
    } vs;
};

/* Everything one run owns, in parts: the options (struct options, read
 * only), what reading found (struct run_inputs), the store, the counters
 * (struct run_stats) and the first pass's pipeline (struct pipeline,
 * private to it). */
/* The index file a run replaces, locked (flock) from before --index loads
 * it to after --save-index renames over it (dedup-store.c). */
struct index_lock {
    int held, fd;
};

/* The store of a run: the contract, the index (or an MPI rank's
 * signatures), the names of its ids and their sizes and times
 * (dedup-store.c, dedup-keep.c). */
struct run_store {
    simlsh_params *params;
    simlsh_index *index;
    struct sigstore *sigs; /* non-NULL: new documents' values go here, not to index */
    struct strlist names;  /* output name of each indexed id (id = position) */
    uint64_t first_new;    /* ids below this came from --index */
    struct store *loaded;  /* dedup-store.c: names of the loaded ids, removals */
    struct index_lock lock;
    uint64_t *id_bytes; /* per id: text bytes and mtime, for --keep (dedup-keep.c) */
    int64_t *id_mtime;
    size_t idmeta_cap;
};

struct run {
    const struct options *opt;
    struct run_inputs in;

    struct run_store store;

    /* the run's course */
    int verify_flags;
    double threshold;
    int truncated;       /* --max-pairs cut the answer short */
    uint64_t inputs_cut; /* line inputs whose rest was lost (exit status 6) */
    int progress;        /* stderr is a terminal and not --quiet */
    size_t warnings;
    int failed; /* exit code to stop with, 0 while all is well */
    struct run_stats stats;

    /* threads, and the first pass */
    int nthreads;         /* the tool's own threads (-j, or run_threads(0)) */
    uint32_t lib_threads; /* threads of library calls: -j, or 0 for the library's rule */
    int lines_prefix;     /* name line documents "FILE:N" (several inputs) */
    /* the workers, the batches and the inserts (dedup-pipeline.h), from
     * run_pipeline_start() to run_pipeline_stop() */
    struct pipeline *pipe;
};

/* dedup-options.c */
void usage_error(const char *fmt, const char *arg);
void parse_args(struct options *o, int argc, char **argv);
/* Is SIMLSH_PARAM_* key a double (o->dval) rather than an integer? */
int is_double_key(int key);
/* "simlsh-dedup: WHAT: library message (NAME)", then exit(code). */
void fatal_lib(const char *what, int rc, int code);

/* dedup-setup.c: what both front ends do before reading */
/* The exit status of a run that went well: nothing read (every input
 * skipped), the answer cut short, or duplicates found under --exit-code;
 * dups is the number of duplicates. */
int run_status(const struct run *r, uint64_t dups);
/* A run of the options o, empty, its clocks started (the setup phase). */
void run_init(struct run *r, const struct options *o);
/* --index: the saved index loaded (dedup-store.c), the options given
 * checked against its contract and applied over it, then --remove and
 * --remove-from; need_signatures: refuse an index that stores none.
 * Messages name prog. 0, or the exit status. The caller holds the lock
 * of a file it replaces (store_lock_update()). */
int setup_loaded(struct run *r, const struct options *o, const char *prog, int need_signatures);
/* The threads of the tool's own pools: requested (-j), or for 0 the
 * library's rule for 0 (one per online CPU, at most 256), so both agree. */
int run_threads(int requested);
/* The threshold, the threads and how line documents are named, from the
 * options and the contract (after setup_new() or setup_loaded()). */
void setup_run(struct run *r, const struct options *o);
/* No output may replace an input (the --index file and its 0.1 FILE.names,
 * --remove-from, the --files-from lists, every input file), something that
 * is not a regular file, or another output of the same run (compared by
 * their resolved directory); --save-index may name the --index file.
 * Checked after every input is known and before any output is created:
 * 0, or -1 with the reason printed, naming prog. */
int check_outputs(struct run_inputs *in, const struct options *o, const char *prog);

/* dedup-contract.c */
void apply_options(simlsh_params *p, const struct options *o);
/* --index: the saved threshold and weights, which the loaded banding was
 * chosen for; a different value given is an error (-1, printed). */
#define SAVED_DOUBLES 3
void saved_doubles_get(const simlsh_params *p, double *saved);
int saved_doubles_check(const simlsh_params *p, const struct options *o, const double *saved,
                        const char *prog);
void setup_new(struct run *r, const struct options *o);

/* A growable list of edges (dedup-util.c): pairvec_add() stores (a, b)
 * with a < b, as struct pair wants. */
struct pairvec {
    struct pair *v;
    size_t n, cap;
};
void pairvec_add(struct pairvec *p, uint64_t a, uint64_t b, double score);
/* An unlinked temporary file in $TMPDIR (or /tmp), or -1 with msg set. */
int temp_file(char *msg, size_t cap);
/* write() until all n bytes are written; 0 or -1 (errno). */
int write_all(int fd, const char *p, size_t n);

/* dedup-mem.c: "simlsh-dedup: out of memory" and exit status 4 on failure */
void die_oom(void);
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* dedup-util.c */
/* -1, 0 or 1 as x is below, equal to or above y: comparators chain it. */
static inline int order_u64(uint64_t x, uint64_t y)
{
    return (x > y) - (x < y);
}
int cmp_u64(const void *x, const void *y);  /* qsort() order of uint64_t */
int cmp_pair(const void *x, const void *y); /* qsort() order of struct pair: a, b */
double now_seconds(void);
double cpu_seconds(void);
double thread_cpu_seconds(void);
void phase_switch(struct run_stats *st, int phase);
void warnx_doc(struct run *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void human_bytes(char *buf, size_t cap, double bytes);
int skip_input(struct run *r, const char *name, size_t name_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* dedup-escape.c */
size_t utf8_seq(const unsigned char *s, size_t len);
int utf8_valid(const unsigned char *s, size_t len, size_t *bad_len);
size_t escape_name(char *dst, const char *s, size_t len);
size_t unescape_name(char *s, size_t len);
void escape_tsv(FILE *f, const char *s, size_t len);
const char *qname(const char *s);
const char *qnamen(const char *s, size_t len);
void escape_json(FILE *f, const char *s, size_t len);

/* dedup-io.c */
const char *file_type_name(mode_t mode);
const char *pseudo_fs_name(const char *dir);
int open_regular(const char *path, struct stat *st, char *msg, size_t msgcap);

enum {
    CODEC_PLAIN,
    CODEC_GZIP,
    CODEC_ZSTD
};

/* A byte stream from a descriptor, decompressed when its first bytes are
 * a gzip or zstd magic number. */
struct reader {
    int fd;
    int codec;
    char *in;
    size_t in_len, in_pos;
    int eof, member_open, unsupported, err;
    void *state;
    char msg[112];
    uint64_t in_base;            /* offset in the file of in[0] */
    uint64_t out_total;          /* decompressed bytes returned */
    uint64_t max_out, max_ratio; /* reader_limit(); 0: none */
    int limited;                 /* a bound stopped the stream (msg says which) */
};
int reader_open(struct reader *rd, int fd);
/* Bound what a compressed stream may decompress to (0: no bound): a read
 * past it fails with the reason in msg. */
void reader_limit(struct reader *rd, uint64_t max_out, uint64_t max_ratio);
/* Compressed bytes consumed so far: where a decompression error is. */
uint64_t reader_offset(const struct reader *rd);
ssize_t reader_read(struct reader *rd, char *out, size_t cap);
void reader_close(struct reader *rd);

struct simlsh__afile; /* lib/util/atomic-file.h, known to dedup-io.c only */
struct outfile {
    const char *prog; /* the program named in messages */
    const char *path;
    char *dir;                /* path's directory, while af is */
    struct simlsh__afile *af; /* the temporary file renamed over path, or NULL */
    FILE *f;                  /* stdout, stderr, a device or FIFO opened in place, or af's */
    int direct;               /* written in place: no fsync, no rename */
};
int outfile_open(struct outfile *o, const char *path);
int outfile_open_as(struct outfile *o, const char *path, const char *prog);
int outfile_commit(struct outfile *o);
int outfile_finish(struct outfile *o);
int outfile_publish(struct outfile *o);
void outfile_abort(struct outfile *o);
/* "PROG: NAME: cannot write: CAUSE" for a write to o that failed with
 * errno err (EIO when 0): a writer that stops at ferror() says why. */
void outfile_write_error(const struct outfile *o, int err);

void fileids_add(struct fileids *s, const struct stat *st);
int fileids_has(struct fileids *s, const struct stat *st);
void fileids_free(struct fileids *s);
int output_path_ok(struct fileids *inputs, const char *path, const char *what,
                   const char *allowed_same, int direct_ok);

/* dedup-walk.c: the files of every PATH input, before any is read */
int inputs_enumerate(struct run *r);

/* dedup-input.c: the first pass (dedup-pipeline.h) */
int run_pipeline_start(struct run *r);
int run_inputs(struct run *r);
void run_pipeline_stop(struct run *r);

/* dedup-insert.c: the output name of a document */
void doc_name(struct run *r, const struct batch *b, const struct doc *d, const char **s,
              size_t *len, char *tmp, size_t tmpcap);
size_t doc_name_cap(const struct options *o, uint32_t input);

/* dedup-verify.c: the second pass (dedup-pass2.h) */
/* Bytes of sets (or texts) one batch of the second pass may hold
 * (--verify-memory, or the default rule). */
uint64_t verify_budget(const struct options *o);
int verify_candidates(struct run *r, struct pair **edges, size_t *n);
/* Exact mode's estimate prefilter: candidates need an estimate >= this (0:
 * none). */
double verify_prefilter(const struct run *r);
/* The exact second pass over given candidates (a < b, score = estimate or
 * -1) of ids below first_new + ndocs, read again by r->locs: the verified
 * edges, sorted (the MPI driver, which verifies by ranges of pairs). */
int verify_exact_pairs(struct run *r, const struct pair *cand, size_t n, size_t ndocs,
                       struct pair **edges, size_t *nedges);
/* dedup-reread.c: documents read again */
/* Standard input, when an input reads it, made readable a second time
 * (exact mode), before the first pass reads it. */
int reread_prepare(struct run *r);
/* This process's documents read again for another one (simlsh-dedup-mpi
 * sends the texts of a rank's documents to the ranks that verify their
 * pairs): ids are sorted, distinct new ids whose r->locs are this
 * process's, ndocs as above. Sources open as the second pass opens them
 * (a compressed input's needed lines copied once). Not thread-safe. */
struct text_source;
struct text_source *text_source_open(struct run *r, const uint64_t *ids, size_t n, size_t ndocs);
/* The text of id, one of the ids (valid until the next call), or -1 and
 * the reason in msg, with the second pass's checks (size, time). */
int text_source_read(struct text_source *t, uint64_t id, const char **text, size_t *len, char *msg,
                     size_t mcap);
void text_source_close(struct text_source *t);

/* dedup-star.c: --cluster star groups from the index's buckets, by the
 * library's dedup engine: label[id] = smallest id of id's group, kept[id]
 * = its centre. 0, -1 on failure (reported), 1 when the engine cannot
 * serve this index (no stored signatures): group the pairs instead. */
int star_from_buckets(struct run *r, uint64_t *label, uint64_t *kept);

/* The same run in steps, for a front end that brings the texts itself
 * (simlsh-dedup-mpi: from the ranks that read them). star_open(): 0 and
 * *s, -1 on failure (reported), 1 as above. star_wanted(): the ids whose
 * texts the engine needs next (valid until the next call), *n = 0 once
 * it needs none (at once outside exact mode); 0 or -1. Each of them is
 * then given, star_text() (copied) or star_unread() (said once, as the
 * pass says it; msg may be NULL), and star_submit() hands the batch
 * over. star_close(): the groups into label and kept (as above; both
 * NULL: nothing but freed), the engine's counters into r->stats; 0 or
 * -1. */
struct star_session;
int star_open(struct run *r, struct star_session **s);
int star_wanted(struct star_session *s, const uint64_t **ids, size_t *n);
void star_text(struct star_session *s, uint64_t id, const char *text, size_t len);
void star_unread(struct star_session *s, uint64_t id, const char *msg);
int star_submit(struct star_session *s);
int star_close(struct star_session *s, uint64_t *label, uint64_t *kept);

/* The largest buckets of st->index (--stats, and the summary's note on a
 * bucket that holds a large share of the corpus). */
#define CENSUS_TOP 5
struct census {
    size_t n; /* buckets listed */
    uint64_t size[CENSUS_TOP], band[CENSUS_TOP], sample[CENSUS_TOP];
    uint64_t min_size;      /* a bucket this large or more is "large" */
    uint64_t docs_in_large; /* documents in at least one large bucket */
};
int bucket_census(struct run_store *st, struct census *c);

/* dedup-output.c */
/* --output from groups already made (label and kept as star_from_buckets()
 * gives them), and the counts; 0 or -1 (said why). */
int write_labelled(struct run *r, FILE *out, const uint64_t *label, uint64_t *kept,
                   uint64_t *clusters, uint64_t *duplicates);
int write_groups(struct run *r, FILE *out, const struct pair *edges, size_t n, uint64_t *clusters,
                 uint64_t *duplicates);
int write_results(struct run *r, FILE *out, uint64_t *clusters, uint64_t *duplicates);
int write_skipped(const struct run_inputs *in, const struct options *o, FILE *out);
/* One --output pairs line. */
void write_pair(const struct run *r, FILE *out, const struct pair *p);

/* dedup-keep.c: the --keep priority */
/* Room in st->id_bytes and st->id_mtime (what --keep compares) for id. */
void ensure_idmeta(struct run_store *st, uint64_t id);
/* The --keep priority of every id, best first (n = names.count ids), or
 * NULL when it is ascending id order. */
uint64_t *keep_order(struct run *r);
/* --keep's priority of two ids (< 0: a first), as --cluster star uses it. */
int keep_compare(const struct run *r, uint64_t a, uint64_t b);
/* Star groups' rows (id, centre, score) of res, ng groups, over n named
 * ids: label[id] = smallest id of id's group, kept[id] = its centre (ids
 * in no group: their own). -1 (said) for an id without a name (>= n). */
int star_labels(size_t n, const simlsh_results *res, size_t ng, uint64_t *label, uint64_t *kept);

/* dedup-store.c: the saved index (one file: the library's index with the
 * tool's names and contract in its user data) and incremental runs */
int store_load(struct run *r, const char *path);
int store_remove(struct run *r);
int store_admit(struct run *r, const char *name, size_t len, uint64_t bytes, int64_t mtime,
                int is_file);
/* The removals store_admit() queued under --replace, made now: call it
 * only when nothing else writes to r->store.index (no insert call runs). */
int store_apply_drops(struct run *r);
/* Locks the file at path for a run that replaces it (nothing when there is
 * none yet), waiting for another run that holds it; 0, or -1 with a
 * message. store_save() takes it if the run does not hold it already. */
int store_lock(struct index_lock *lk, const struct options *o, const char *path);
/* store_lock() of the --index file when --save-index names it too: call
 * it before store_load(), on one process of a run. */
int store_lock_update(struct index_lock *lk, const struct options *o);
int store_save(struct run *r, const char *path);
uint64_t store_old_count(const struct run_store *st); /* loaded ids still indexed */
/* Is a loaded id still indexed named name? */
int store_has(struct run *r, const char *name, size_t len);
/* A loaded id removed or replaced in this run; drop one (no-op if gone). */
int store_is_gone(const struct run_store *st, uint64_t id);
int store_drop(struct run *r, uint64_t id);
void store_free(struct run_store *st);

#endif
