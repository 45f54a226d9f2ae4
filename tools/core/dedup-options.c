/*
 * simlsh-dedup: the command line (options, usage, version); shared by
 * simlsh-dedup and simlsh-dedup-mpi. The contract it asks for is
 * dedup-contract.c.
 */
#include "dedup.h"

#if DEDUP_HAVE_JANSSON
#include <jansson.h>
#define JSON_SUPPORT JANSSON_VERSION
#else
#define JSON_SUPPORT "no"
#endif
#if DEDUP_HAVE_ZLIB
#include <zlib.h>
#define ZLIB_SUPPORT ZLIB_VERSION
#else
#define ZLIB_SUPPORT "no"
#endif
#if DEDUP_HAVE_ZSTD
#include <zstd.h>
#define ZSTD_SUPPORT ZSTD_VERSION_STRING
#else
#define ZSTD_SUPPORT "no"
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "simlsh-dedup"

/* In parts: ISO C limits a string literal to 4095 bytes. */
static const char *const usage_text[] = {
    "Usage: " PROG " [OPTION]... [PATH | - | --lines FILE | --jsonl FILE | --files-from FILE]...\n"
    "Find near-duplicate documents with shingling, MinHash and LSH banding.\n"
    "\n"
    "Input (read in command-line order):\n"
    "  PATH                  a regular file (one document; its id is the path) or a\n"
    "                        directory (all regular files below it, in byte order of\n"
    "                        names); other file types are skipped with a reason\n"
    "  -                     all of standard input as one document\n"
    "  Standard input read by -, --lines - or --jsonl - is copied to an unlinked\n"
    "  temporary file in $TMPDIR (or /tmp) first, unless it is a regular file,\n"
    "  so --verify exact can read it again.\n"
    "      --lines FILE      one document per line; the id is the line number\n"
    "                        (FILE:LINE when several inputs are given); FILE may be -\n"
    "      --jsonl FILE      one JSON object per line; FILE may be -\n"
    "      --files-from FILE read PATHs from FILE (one per line; - for standard input)\n"
    "  -0, --null            --files-from names end with NUL, not newline\n"
    "      --id-field NAME   JSONL field with the id, a string or integer (default: id;\n"
    "                        - numbers the lines instead)\n"
    "      --text-field NAME JSONL field with the text (default: text)\n"
    "      --include GLOB    in directories, read only files matching GLOB (repeatable)\n"
    "      --exclude GLOB    in directories, skip files and directories matching GLOB\n"
    "      --include-vcs     also walk .git, .hg and .svn directories\n"
    "      --binary          also read files with a NUL byte in their first 8 KiB\n"
    "      --max-doc-bytes N skip documents (and lines) longer than N bytes after\n"
    "                        decompression; K, M, G suffixes (default 64M)\n"
    "      --max-input-bytes N  read at most N decompressed bytes of a compressed\n"
    "                        --lines/--jsonl input (default 0: no bound)\n"
    "      --max-ratio R     stop a compressed --lines/--jsonl input that decompresses\n"
    "                        to more than R times its compressed size (default 1000;\n"
    "                        0: no bound); either bound gives exit status 6\n"
    "      --strict-utf8     skip documents with invalid UTF-8 (default: replace them\n"
    "                        with U+FFFD and keep the document)\n"
    "      --strict          stop at the first bad input with exit status 3\n"
    "  gzip and zstd files are decompressed, recognised by their first bytes.\n"
    "\n",
    "Hashing (the contract; a saved index keeps it):\n"
    "      --unit UNIT       byte, char (UTF-8 code points; default) or word\n"
    "  -k, --k N             units per shingle (default 5)\n"
    "      --normalize LIST  comma list of lower, space, punct, casefold, nfkc, or none\n"
    "                        (default: lower,space)\n"
    "      --num-perm N      MinHash values per signature (default 128)\n"
    "      --scheme S        oph (one-permutation hashing; default) or classic\n"
    "      --seed N          hash seed (default 0)\n"
    "      --threshold T     Jaccard similarity threshold (default 0.8)\n"
    "      --bands B         LSH bands (default: chosen for the threshold)\n"
    "      --rows R          rows per band (default: chosen for the threshold)\n"
    "      --fp-weight W     weight of false positives when choosing bands and rows\n"
    "                        (default 0.1)\n"
    "      --fn-weight W     weight of false negatives (default 0.9: favour recall,\n"
    "                        verification removes the false positives)\n"
    "\n"
    "Matching:\n"
    "      --verify MODE     exact (true Jaccard of the shingle sets, which a second\n"
    "                        pass reads again for candidate pairs only; default),\n"
    "                        estimate (MinHash estimate >= threshold) or none (every\n"
    "                        candidate)\n"
    "      --verify-memory N shingle sets held at once by the second pass, planned\n"
    "                        at 4 bytes a text byte, and as much for samples kept\n"
    "                        between its batches; K, M, G suffixes (default 0:\n"
    "                        half the peak memory so far + 16M, at most 256M)\n"
    "      --giant-buckets N buckets of more than N documents (default 64) whose\n"
    "                        sample says they hold unlike documents (a shared\n"
    "                        template) may be set aside: their members then meet\n"
    "                        only through their other buckets; 0 keeps them all\n"
    "      --giant-cost C    set the largest of those aside until the others cost\n"
    "                        at most C looks per document and band (default 64;\n"
    "                        0 sets them all aside: fastest on templated pages)\n"
    "      --recall R        with --verify exact and no --bands/--rows: bands and\n"
    "                        rows make a pair at the threshold a candidate with\n"
    "                        probability >= R (default 0.99)\n"
    "      --cluster MODE    star (every member is >= threshold similar to the kept\n"
    "                        document of its group; default) or components\n"
    "      --max-pairs N     --output pairs: stop after N candidate pairs (default\n"
    "                        10000000; 0 = no limit); exit status 6 when reached;\n"
    "                        groups are never cut\n"
    "\n",
    "Output (files are replaced only when the run succeeds; no output may name\n"
    "an input, a symbolic link or a special file):\n"
    "  -o, --output-file FILE  write results to FILE (default, or -: standard output)\n"
    "      --output MODE     clusters (one line per cluster of 2+ documents; default),\n"
    "                        pairs (id, id, similarity), keep (one id per cluster plus\n"
    "                        every singleton), drop (every other clustered id), or,\n"
    "                        for --lines and --jsonl inputs, records or drop-records\n"
    "                        (the input lines of the keep or drop list)\n"
    "      --keep POLICY     which member of a cluster is kept: first (in input order;\n"
    "                        default), shortest, longest, oldest or newest\n"
    "      --format FMT      tsv (default) or jsonl\n"
    "      --skipped FILE    list the inputs not read, with the reason\n"
    "      --stats FILE      write the summary and the contract as JSON\n"
    "      --exit-code       exit with status 1 when duplicates were found\n"
    "\n"
    "Incremental runs:\n"
    "      --save-index FILE save the index, with the names and the contract, to FILE\n"
    "                        (one file, replaced atomically)\n"
    "      --index FILE      load a saved index first; results then cover only new\n"
    "                        documents and what they duplicate; a document whose name\n"
    "                        is in the index already is skipped\n"
    "      --replace         re-sign documents whose name is in the index already\n"
    "      --update          re-sign only those whose size or modification time\n"
    "                        changed since they were indexed\n"
    "      --remove NAME     remove the documents named NAME from the index\n"
    "      --remove-from FILE remove the names listed in FILE (one a line, escaped\n"
    "                        as in TSV output; - for standard input)\n"
    "      --only-new        link documents only through pairs with a new document\n"
    "\n"
    "Other:\n"
    "  -j, --threads N       threads that read, parse, sign, index and verify\n"
    "                        (default: one per CPU); results do not depend on N.\n"
    "                        Uncompressed --lines/--jsonl files are read by every\n"
    "                        thread; compressed ones and standard input by one\n"
    "  -q, --quiet           no progress line and no summary\n"
    "  -h, --help            show this help\n"
    "  -V, --version         show versions\n"
    "\n"
    "Names in messages and TSV output are escaped: \\\\ \\t \\n \\r, and \\xHH for other\n"
    "control bytes and bytes that are not UTF-8.\n"
    "\n"
    "Exit status: 0 success, 1 duplicates found (with --exit-code), 2 usage error,\n"
    "3 input error (with --strict, or an unusable --index), 4 internal or write error,\n"
    "5 nothing could be read (every input skipped), 6 the answer is incomplete\n"
    "(--max-pairs reached, or a line input cut short: corrupt or truncated\n"
    "compressed data, a read error, --max-input-bytes, --max-ratio).\n",
    NULL};

void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
    exit(EXIT_DEDUP_USAGE);
}

enum {
    OPT_LINES = 256,
    OPT_JSONL,
    OPT_ID_FIELD,
    OPT_TEXT_FIELD,
    OPT_STRICT_UTF8,
    OPT_STRICT,
    OPT_UNIT,
    OPT_NORMALIZE,
    OPT_NUM_PERM,
    OPT_SCHEME,
    OPT_SEED,
    OPT_THRESHOLD,
    OPT_BANDS,
    OPT_ROWS,
    OPT_FP_WEIGHT,
    OPT_FN_WEIGHT,
    OPT_VERIFY,
    OPT_VERIFY_MEMORY,
    OPT_GIANT_BUCKETS,
    OPT_GIANT_COST,
    OPT_RECALL,
    OPT_CLUSTER,
    OPT_MAX_PAIRS,
    OPT_OUTPUT,
    OPT_FORMAT,
    OPT_EXIT_CODE,
    OPT_SAVE_INDEX,
    OPT_INDEX,
    OPT_MAX_DOC_BYTES,
    OPT_MAX_INPUT_BYTES,
    OPT_MAX_RATIO,
    OPT_UPDATE,
    OPT_KEEP,
    OPT_SKIPPED,
    OPT_STATS,
    OPT_BINARY,
    OPT_INCLUDE,
    OPT_EXCLUDE,
    OPT_INCLUDE_VCS,
    OPT_FILES_FROM,
    OPT_REPLACE,
    OPT_ONLY_NEW,
    OPT_REMOVE,
    OPT_REMOVE_FROM
};

static const struct option long_options[] = {
    {"lines", required_argument, NULL, OPT_LINES},
    {"jsonl", required_argument, NULL, OPT_JSONL},
    {"id-field", required_argument, NULL, OPT_ID_FIELD},
    {"text-field", required_argument, NULL, OPT_TEXT_FIELD},
    {"strict-utf8", no_argument, NULL, OPT_STRICT_UTF8},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"unit", required_argument, NULL, OPT_UNIT},
    {"k", required_argument, NULL, 'k'},
    {"normalize", required_argument, NULL, OPT_NORMALIZE},
    {"num-perm", required_argument, NULL, OPT_NUM_PERM},
    {"scheme", required_argument, NULL, OPT_SCHEME},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"bands", required_argument, NULL, OPT_BANDS},
    {"rows", required_argument, NULL, OPT_ROWS},
    {"fp-weight", required_argument, NULL, OPT_FP_WEIGHT},
    {"fn-weight", required_argument, NULL, OPT_FN_WEIGHT},
    {"verify", required_argument, NULL, OPT_VERIFY},
    {"verify-memory", required_argument, NULL, OPT_VERIFY_MEMORY},
    {"giant-buckets", required_argument, NULL, OPT_GIANT_BUCKETS},
    {"giant-cost", required_argument, NULL, OPT_GIANT_COST},
    {"recall", required_argument, NULL, OPT_RECALL},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"max-pairs", required_argument, NULL, OPT_MAX_PAIRS},
    {"output-file", required_argument, NULL, 'o'},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"exit-code", no_argument, NULL, OPT_EXIT_CODE},
    {"save-index", required_argument, NULL, OPT_SAVE_INDEX},
    {"index", required_argument, NULL, OPT_INDEX},
    {"max-doc-bytes", required_argument, NULL, OPT_MAX_DOC_BYTES},
    {"max-input-bytes", required_argument, NULL, OPT_MAX_INPUT_BYTES},
    {"max-ratio", required_argument, NULL, OPT_MAX_RATIO},
    {"update", no_argument, NULL, OPT_UPDATE},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"skipped", required_argument, NULL, OPT_SKIPPED},
    {"stats", required_argument, NULL, OPT_STATS},
    {"binary", no_argument, NULL, OPT_BINARY},
    {"include", required_argument, NULL, OPT_INCLUDE},
    {"exclude", required_argument, NULL, OPT_EXCLUDE},
    {"include-vcs", no_argument, NULL, OPT_INCLUDE_VCS},
    {"files-from", required_argument, NULL, OPT_FILES_FROM},
    {"replace", no_argument, NULL, OPT_REPLACE},
    {"only-new", no_argument, NULL, OPT_ONLY_NEW},
    {"remove", required_argument, NULL, OPT_REMOVE},
    {"remove-from", required_argument, NULL, OPT_REMOVE_FROM},
    {"null", no_argument, NULL, '0'},
    {"threads", required_argument, NULL, 'j'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int64_t parse_int(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end != '\0') {
        fprintf(stderr, PROG ": %s: not an integer: '%s'\n", opt, s);
        exit(EXIT_DEDUP_USAGE);
    }
    return (int64_t)v;
}

/* A byte count: digits with an optional K, M or G (powers of 1024). */
static uint64_t parse_size(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (errno || end == s || *end != '\0' || s[0] == '-' || v == 0 || v > (UINT64_MAX >> shift)) {
        fprintf(stderr,
                PROG ": %s: expected a size of at least 1 byte (N, NK, NM or NG), "
                     "not '%s'\n",
                opt, s);
        exit(EXIT_DEDUP_USAGE);
    }
    return (uint64_t)v << shift;
}

static void set_int(struct options *o, int key, int64_t v)
{
    o->ival[key] = v;
    o->set_mask |= UINT32_C(1) << key;
}

static void set_double(struct options *o, int key, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0') {
        fprintf(stderr, PROG ": %s: not a number: '%s'\n", opt, s);
        exit(EXIT_DEDUP_USAGE);
    }
    o->dval[key] = v;
    o->set_mask |= UINT32_C(1) << key;
}

int is_double_key(int key)
{
    return key == SIMLSH_PARAM_THRESHOLD || key == SIMLSH_PARAM_FP_WEIGHT ||
           key == SIMLSH_PARAM_FN_WEIGHT;
}

static int pick(const char *opt, const char *s, const char *const *names, const int *values)
{
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(s, names[i]))
            return values[i];
    fprintf(stderr, PROG ": %s: unknown value '%s' (one of:", opt, s);
    for (size_t i = 0; names[i]; i++)
        fprintf(stderr, " %s", names[i]);
    fprintf(stderr, ")\n");
    exit(EXIT_DEDUP_USAGE);
}

static int parse_normalize(const char *s)
{
    static const char *const names[] = {"lower", "space", "punct", "casefold",
                                        "nfkc",  "none",  NULL};
    static const int values[] = {SIMLSH_NORM_LOWER_ASCII, SIMLSH_NORM_COLLAPSE_SPACE,
                                 SIMLSH_NORM_STRIP_PUNCT, SIMLSH_NORM_CASEFOLD,
                                 SIMLSH_NORM_NFKC,        0};
    int flags = 0;
    size_t len = strlen(s);
    char *copy = xmalloc(len + 1);
    memcpy(copy, s, len + 1);
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        flags |= pick("--normalize", tok, names, values);
    free(copy);
    return flags;
}

static void add_input(struct options *o, enum input_kind kind, const char *arg)
{
    o->inputs = xrealloc(o->inputs, (o->ninputs + 1) * sizeof *o->inputs);
    memset(&o->inputs[o->ninputs], 0, sizeof o->inputs[0]);
    o->inputs[o->ninputs].kind = kind;
    o->inputs[o->ninputs].arg = arg;
    o->ninputs++;
}

static void add_glob(const char ***v, size_t *n, const char *g)
{
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = g;
}

/* A --files-from list: a regular file, or a pipe or FIFO (<(find ...)),
 * which tar -T, rsync --files-from and xargs -a read too (issue 31, F14).
 * A FIFO's open() waits for its writer, as theirs do; anything else is
 * opened with O_NONBLOCK, so a device cannot block it, and fails the type
 * check with the reason in msg. */
static int open_list(const char *path, struct stat *st, char *msg, size_t msgcap)
{
    int fifo = stat(path, st) == 0 && S_ISFIFO(st->st_mode);
    int fd = open(path, O_RDONLY | (fifo ? 0 : O_NONBLOCK) | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(msg, msgcap, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !(S_ISREG(st->st_mode) || S_ISFIFO(st->st_mode))) {
        snprintf(msg, msgcap, "not a regular file or a pipe (%s)",
                 fstat(fd, st) != 0 ? strerror(errno) : file_type_name(st->st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        snprintf(msg, msgcap, "cannot read: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* --files-from: its names become PATH inputs in its place. Read after the
 * whole command line, so -0 applies wherever it is given. */
static void expand_lists(struct options *o, int nul)
{
    size_t extra = 0;
    for (size_t i = 0; i < o->ninputs; i++)
        extra += o->inputs[i].kind == INPUT_LIST;
    if (!extra)
        return;
    struct input *old = o->inputs;
    size_t nold = o->ninputs;
    o->inputs = NULL;
    o->ninputs = 0;
    for (size_t i = 0; i < nold; i++) {
        if (old[i].kind != INPUT_LIST) {
            add_input(o, old[i].kind, old[i].arg);
            continue;
        }
        const char *arg = old[i].arg;
        int fd = STDIN_FILENO;
        struct stat st;
        if (strcmp(arg, "-")) {
            char msg[160];
            fd = open_list(arg, &st, msg, sizeof msg);
            if (fd < 0) {
                fprintf(stderr, PROG ": --files-from %s: %s\n", qname(arg), msg);
                exit(EXIT_DEDUP_INPUT);
            }
            fileids_add(&o->list_ids, &st);
        }
        size_t cap = 1 << 16, len = 0;
        char *buf = xmalloc(cap);
        for (;;) {
            if (len == cap) {
                cap *= 2;
                buf = xrealloc(buf, cap);
            }
            ssize_t got = read(fd, buf + len, cap - len);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                fprintf(stderr, PROG ": --files-from %s: read error: %s\n",
                        strcmp(arg, "-") ? qname(arg) : "<stdin>", strerror(errno));
                free(buf);
                exit(EXIT_DEDUP_INPUT);
            }
            if (got == 0)
                break;
            len += (size_t)got;
        }
        if (fd != STDIN_FILENO)
            close(fd);
        /* No file name holds a NUL byte: a list with one was written by
         * find -print0 or the like, and reading it by lines would take only
         * what comes before the first NUL. */
        if (!nul && memchr(buf, '\0', len)) {
            fprintf(stderr,
                    PROG ": --files-from %s: has NUL bytes, so its names are NUL-separated; "
                         "read it with -0 (--null)\n",
                    strcmp(arg, "-") ? qname(arg) : "<stdin>");
            free(buf);
            exit(EXIT_DEDUP_USAGE);
        }
        char sep = nul ? '\0' : '\n';
        for (size_t b = 0; b < len;) {
            char *e = memchr(buf + b, sep, len - b);
            size_t l = e ? (size_t)(e - (buf + b)) : len - b;
            if (l > 0) {
                /* a listed "-" is a file named "-", not standard input */
                int dash = l == 1 && buf[b] == '-';
                char *name = xmalloc(l + 3);
                memcpy(name, dash ? "./-" : buf + b, dash ? 3 : l);
                name[dash ? 3 : l] = '\0';
                o->owned = xrealloc(o->owned, (o->nowned + 1) * sizeof *o->owned);
                o->owned[o->nowned++] = name;
                add_input(o, INPUT_PATHS, name);
            }
            b += l + 1;
        }
        free(buf);
    }
    free(old);
}

static void print_version(void)
{
    printf(PROG " %s (libsimlsh %s, header %d.%d.%d; jansson %s; zlib %s; zstd %s; "
                "unicode %s)\n",
           simlsh_version_string(), simlsh_version_string(), SIMLSH_VERSION_MAJOR,
           SIMLSH_VERSION_MINOR, SIMLSH_VERSION_PATCH, JSON_SUPPORT, ZLIB_SUPPORT, ZSTD_SUPPORT,
           simlsh_has_unicode() ? "yes" : "no");
}

void parse_args(struct options *o, int argc, char **argv)
{
    static const char *const units[] = {"byte", "char", "word", NULL};
    static const int unit_v[] = {SIMLSH_UNIT_BYTE, SIMLSH_UNIT_CHAR, SIMLSH_UNIT_WORD};
    static const char *const schemes[] = {"oph", "classic", NULL};
    static const int scheme_v[] = {SIMLSH_SCHEME_OPH, SIMLSH_SCHEME_CLASSIC};
    static const char *const verifies[] = {"none", "estimate", "exact", NULL};
    static const int verify_v[] = {VERIFY_NONE, VERIFY_ESTIMATE, VERIFY_EXACT};
    static const char *const clusters[] = {"star", "components", NULL};
    static const int cluster_v[] = {CLUSTER_STAR, CLUSTER_COMPONENTS};
    static const char *const outputs[] = {"clusters", "pairs",        "keep", "drop",
                                          "records",  "drop-records", NULL};
    static const int output_v[] = {OUT_CLUSTERS, OUT_PAIRS,   OUT_KEEP,
                                   OUT_DROP,     OUT_RECORDS, OUT_DROP_RECORDS};
    static const char *const keeps[] = {"first", "shortest", "longest", "oldest", "newest", NULL};
    static const int keep_v[] = {KEEP_FIRST, KEEP_SHORTEST, KEEP_LONGEST, KEEP_OLDEST, KEEP_NEWEST};
    int nul = 0;
    static const char *const formats[] = {"tsv", "jsonl", NULL};
    static const int format_v[] = {FMT_TSV, FMT_JSONL};

    o->verify = VERIFY_EXACT;
    o->verify_memory = DEFAULT_VERIFY_MEMORY;
    o->giant_buckets = -1;
    o->giant_cost = -1;
    o->recall = 0.99;
    o->cluster = CLUSTER_STAR;
    o->output = OUT_CLUSTERS;
    o->format = FMT_TSV;
    o->id_field = "id";
    o->text_field = "text";
    o->max_pairs = 10000000;
    o->threads = 0;
    o->max_doc_bytes = DEFAULT_MAX_DOC_BYTES;
    o->max_ratio = DEFAULT_MAX_RATIO;
    o->keep = KEEP_FIRST;

    int c;
    /* A leading '-' returns operands in place (as option 1), so inputs keep
     * their command-line order among --lines and --jsonl. */
    while ((c = getopt_long(argc, argv, "-k:j:o:0qhV", long_options, NULL)) != -1) {
        switch (c) {
        case 1:
            add_input(o, strcmp(optarg, "-") ? INPUT_PATHS : INPUT_STDIN, optarg);
            break;
        case OPT_LINES:
            add_input(o, INPUT_LINES, optarg);
            break;
        case OPT_JSONL:
#if !DEDUP_HAVE_JANSSON
            /* Refused before anything is read or written, with the usage
             * status, so a script sees at once that this build cannot do it. */
            fputs(PROG ": --jsonl: " PROG " was built without JSON support (libjansson)\n", stderr);
            exit(EXIT_DEDUP_USAGE);
#endif
            add_input(o, INPUT_JSONL, optarg);
            break;
        case OPT_ID_FIELD:
            o->id_field = optarg;
            break;
        case OPT_TEXT_FIELD:
            o->text_field = optarg;
            break;
        case OPT_STRICT_UTF8:
            o->strict_utf8 = 1;
            set_int(o, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT);
            break;
        case OPT_STRICT:
            o->strict = 1;
            break;
        case OPT_UNIT:
            set_int(o, SIMLSH_PARAM_UNIT, pick("--unit", optarg, units, unit_v));
            break;
        case 'k':
            set_int(o, SIMLSH_PARAM_K, parse_int("-k", optarg));
            break;
        case OPT_NORMALIZE:
            set_int(o, SIMLSH_PARAM_NORMALIZE, parse_normalize(optarg));
            break;
        case OPT_NUM_PERM:
            set_int(o, SIMLSH_PARAM_NUM_PERM, parse_int("--num-perm", optarg));
            break;
        case OPT_SCHEME:
            set_int(o, SIMLSH_PARAM_SCHEME, pick("--scheme", optarg, schemes, scheme_v));
            break;
        case OPT_SEED:
            set_int(o, SIMLSH_PARAM_SEED, parse_int("--seed", optarg));
            break;
        case OPT_THRESHOLD:
            set_double(o, SIMLSH_PARAM_THRESHOLD, "--threshold", optarg);
            break;
        case OPT_FP_WEIGHT:
            set_double(o, SIMLSH_PARAM_FP_WEIGHT, "--fp-weight", optarg);
            break;
        case OPT_FN_WEIGHT:
            set_double(o, SIMLSH_PARAM_FN_WEIGHT, "--fn-weight", optarg);
            break;
        case OPT_BANDS:
            set_int(o, SIMLSH_PARAM_BANDS, parse_int("--bands", optarg));
            break;
        case OPT_ROWS:
            set_int(o, SIMLSH_PARAM_ROWS, parse_int("--rows", optarg));
            break;
        case OPT_VERIFY:
            o->verify = (enum verify_mode)pick("--verify", optarg, verifies, verify_v);
            break;
        case OPT_GIANT_BUCKETS:
            o->giant_buckets = parse_int("--giant-buckets", optarg);
            if (o->giant_buckets < 0) {
                fprintf(stderr, PROG ": --giant-buckets: expected 0 or more, not '%s'\n", optarg);
                exit(EXIT_DEDUP_USAGE);
            }
            break;
        case OPT_GIANT_COST: {
            char *end;
            errno = 0;
            o->giant_cost = strtod(optarg, &end);
            if (errno || end == optarg || *end != '\0' ||
                !(o->giant_cost >= 0 && o->giant_cost <= 1e15)) {
                fprintf(stderr, PROG ": --giant-cost: expected a number from 0 to 1e15, not '%s'\n",
                        optarg);
                exit(EXIT_DEDUP_USAGE);
            }
            break;
        }
        case OPT_VERIFY_MEMORY:
            o->verify_memory = parse_size("--verify-memory", optarg);
            break;
        case OPT_RECALL: {
            char *end;
            errno = 0;
            o->recall = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->recall > 0 && o->recall < 1))
                usage_error("--recall: expected a number between 0 and 1 (exclusive), not '%s'",
                            optarg);
            break;
        }
        case OPT_CLUSTER:
            o->cluster = (enum cluster_mode)pick("--cluster", optarg, clusters, cluster_v);
            break;
        case OPT_MAX_PAIRS: {
            int64_t v = parse_int("--max-pairs", optarg);
            if (v < 0)
                usage_error("--max-pairs: must be >= 0, not '%s'", optarg);
            o->max_pairs = (size_t)v;
            break;
        }
        case 'o':
            o->output_path = optarg;
            break;
        case OPT_OUTPUT:
            o->output = (enum output_mode)pick("--output", optarg, outputs, output_v);
            break;
        case OPT_FORMAT:
            o->format = (enum output_format)pick("--format", optarg, formats, format_v);
            break;
        case OPT_EXIT_CODE:
            o->exit_code = 1;
            break;
        case OPT_SAVE_INDEX:
            o->save_index = optarg;
            break;
        case OPT_INDEX:
            o->load_index = optarg;
            break;
        case OPT_MAX_DOC_BYTES:
            o->max_doc_bytes = parse_size("--max-doc-bytes", optarg);
            break;
        case OPT_MAX_INPUT_BYTES:
            o->max_input_bytes = strcmp(optarg, "0") ? parse_size("--max-input-bytes", optarg) : 0;
            break;
        case OPT_MAX_RATIO: {
            int64_t v = parse_int("--max-ratio", optarg);
            if (v < 0)
                usage_error("--max-ratio: must be >= 0 (0: no bound), not '%s'", optarg);
            o->max_ratio = (uint64_t)v;
            break;
        }
        case OPT_UPDATE:
            o->update = 1;
            break;
        case OPT_KEEP:
            o->keep = (enum keep_policy)pick("--keep", optarg, keeps, keep_v);
            break;
        case OPT_SKIPPED:
            o->skipped_path = optarg;
            break;
        case OPT_STATS:
            o->stats_path = optarg;
            break;
        case OPT_BINARY:
            o->binary = 1;
            break;
        case OPT_INCLUDE:
            add_glob(&o->globs_in, &o->nglobs_in, optarg);
            break;
        case OPT_EXCLUDE:
            add_glob(&o->globs_ex, &o->nglobs_ex, optarg);
            break;
        case OPT_INCLUDE_VCS:
            o->include_vcs = 1;
            break;
        case OPT_FILES_FROM:
            add_input(o, INPUT_LIST, optarg);
            break;
        case OPT_REPLACE:
            o->replace = 1;
            break;
        case OPT_ONLY_NEW:
            o->only_new = 1;
            break;
        case OPT_REMOVE:
            o->remove_names = xrealloc(o->remove_names, (o->nremove + 1) * sizeof *o->remove_names);
            o->remove_names[o->nremove++] = optarg;
            break;
        case OPT_REMOVE_FROM:
            o->remove_from = optarg;
            break;
        case '0':
            nul = 1;
            break;
        case 'j': {
            int64_t v = parse_int("-j", optarg);
            if (v < 0 || v > 256)
                usage_error("-j: expected 0 (one per CPU) to 256, not '%s'", optarg);
            o->threads = (int)v;
            break;
        }
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            for (size_t i = 0; usage_text[i]; i++)
                fputs(usage_text[i], stdout);
            exit(ferror(stdout) ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_OK);
        case 'V':
            print_version();
            exit(EXIT_DEDUP_OK);
        default:
            fprintf(stderr, "Try '" PROG " --help' for more information.\n");
            exit(EXIT_DEDUP_USAGE);
        }
    }
    if (optind < argc) /* after "--": inputs, even when named like options */
        for (int i = optind; i < argc; i++)
            add_input(o, strcmp(argv[i], "-") ? INPUT_PATHS : INPUT_STDIN, argv[i]);
    if ((o->replace || o->only_new || o->nremove || o->remove_from) && !o->load_index)
        usage_error("%s", "--replace, --only-new, --remove and --remove-from work on an index "
                          "loaded with --index");
    if (o->update && !o->load_index)
        usage_error("%s", "--update works on an index loaded with --index");
    if (o->update && o->replace)
        usage_error("%s", "--update and --replace: give one (--replace re-signs every "
                          "indexed document, --update the changed ones)");
    /* removals alone are a run too: --index FILE --remove NAME --save-index FILE */
    if (o->ninputs == 0 && !o->nremove && !o->remove_from)
        usage_error("%s", "no input: give files, directories, -, --lines, --jsonl or "
                          "--files-from");
    int stdin_uses = o->remove_from && !strcmp(o->remove_from, "-");
    for (size_t i = 0; i < o->ninputs; i++)
        stdin_uses += !strcmp(o->inputs[i].arg, "-");
    if (stdin_uses > 1)
        usage_error("%s", "standard input (-) can be read only once");
    expand_lists(o, nul);
    if (o->output == OUT_RECORDS || o->output == OUT_DROP_RECORDS)
        for (size_t i = 0; i < o->ninputs; i++)
            if (o->inputs[i].kind != INPUT_LINES && o->inputs[i].kind != INPUT_JSONL)
                usage_error("--output records and drop-records write input lines: every "
                            "input must be --lines or --jsonl, not '%s'",
                            o->inputs[i].arg);
    if (!*o->id_field || !*o->text_field)
        usage_error("%s", "--id-field and --text-field must not be empty");
}

void fatal_lib(const char *what, int rc, int code)
{
    fprintf(stderr, PROG ": %s: %s (%s)\n", what, simlsh_strerror(rc), simlsh_error_name(rc));
    exit(code);
}
