/*
 * simlsh-dedup: find near-duplicate documents in files, directories, line
 * files and JSONL files. The manual is docs/cli.md.
 *
 * Built on the public API only: params -> signatures (signed in worker
 * threads) -> index (inserted in input order) -> clusters or pairs.
 */
#include "dedup.h"

#if DEDUP_HAVE_JANSSON
#include <jansson.h>
#define JSON_SUPPORT JANSSON_VERSION
#else
#define JSON_SUPPORT "no"
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROG "simlsh-dedup"

static const char usage_text[] =
    "Usage: " PROG " [OPTION]... [PATH | - | --lines FILE | --jsonl FILE]...\n"
    "Find near-duplicate documents with shingling, MinHash and LSH banding.\n"
    "\n"
    "Input (read in command-line order):\n"
    "  PATH                  a file (one document; its id is the path) or a directory\n"
    "                        (all regular files below it, in byte order of names)\n"
    "  -                     all of standard input as one document\n"
    "      --lines FILE      one document per line; the id is the line number\n"
    "                        (FILE:LINE when several inputs are given); FILE may be -\n"
    "      --jsonl FILE      one JSON object per line; FILE may be -\n"
    "      --id-field NAME   JSONL field with the id, a string or integer (default: id)\n"
    "      --text-field NAME JSONL field with the text (default: text)\n"
    "      --strict-utf8     skip documents with invalid UTF-8 (default: replace them\n"
    "                        with U+FFFD and keep the document)\n"
    "      --strict          stop at the first bad input with exit status 3\n"
    "\n"
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
    "      --verify MODE     none (every candidate), estimate (MinHash estimate >=\n"
    "                        threshold; default) or exact (true Jaccard of the shingle\n"
    "                        sets; keeps them in memory)\n"
    "      --max-pairs N     stop enumerating candidate pairs after N (default\n"
    "                        10000000; 0 = no limit)\n"
    "\n"
    "Output:\n"
    "  -o, --output-file FILE  write results to FILE (default: standard output)\n"
    "      --output MODE     clusters (one line per cluster of 2+ documents; default),\n"
    "                        pairs (id, id, similarity) or keep (one id per cluster\n"
    "                        plus every singleton)\n"
    "      --format FMT      tsv (default) or jsonl\n"
    "      --exit-code       exit with status 1 when duplicates were found\n"
    "\n"
    "Incremental runs:\n"
    "      --save-index FILE save the index to FILE and the ids' names to FILE.names\n"
    "      --index FILE      load a saved index first; results then cover only new\n"
    "                        documents and what they duplicate\n"
    "\n"
    "Other:\n"
    "  -j, --threads N       signing threads (default: one per CPU); results do not\n"
    "                        depend on N\n"
    "  -q, --quiet           no progress line and no summary\n"
    "  -h, --help            show this help\n"
    "  -V, --version         show versions\n"
    "\n"
    "Exit status: 0 success, 1 duplicates found (with --exit-code), 2 usage error,\n"
    "3 input error (with --strict, or an unusable --index), 4 internal error.\n";

static void usage_error(const char *fmt, const char *arg)
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
    OPT_MAX_PAIRS,
    OPT_OUTPUT,
    OPT_FORMAT,
    OPT_EXIT_CODE,
    OPT_SAVE_INDEX,
    OPT_INDEX
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
    {"max-pairs", required_argument, NULL, OPT_MAX_PAIRS},
    {"output-file", required_argument, NULL, 'o'},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"exit-code", no_argument, NULL, OPT_EXIT_CODE},
    {"save-index", required_argument, NULL, OPT_SAVE_INDEX},
    {"index", required_argument, NULL, OPT_INDEX},
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

static int is_double_key(int key)
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
    static const char *const names[] = {"lower", "space", "punct", "casefold", "nfkc", "none",
                                        NULL};
    static const int values[] = {SIMLSH_NORM_LOWER_ASCII, SIMLSH_NORM_COLLAPSE_SPACE,
                                 SIMLSH_NORM_STRIP_PUNCT, SIMLSH_NORM_CASEFOLD,
                                 SIMLSH_NORM_NFKC, 0};
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

static void print_version(void)
{
    printf(PROG " %s (libsimlsh %s, header %d.%d.%d; jansson %s; unicode %s)\n",
           simlsh_version_string(), simlsh_version_string(), SIMLSH_VERSION_MAJOR,
           SIMLSH_VERSION_MINOR, SIMLSH_VERSION_PATCH, JSON_SUPPORT,
           simlsh_has_unicode() ? "yes" : "no");
}

static void parse_args(struct options *o, int argc, char **argv)
{
    static const char *const units[] = {"byte", "char", "word", NULL};
    static const int unit_v[] = {SIMLSH_UNIT_BYTE, SIMLSH_UNIT_CHAR, SIMLSH_UNIT_WORD};
    static const char *const schemes[] = {"oph", "classic", NULL};
    static const int scheme_v[] = {SIMLSH_SCHEME_OPH, SIMLSH_SCHEME_CLASSIC};
    static const char *const verifies[] = {"none", "estimate", "exact", NULL};
    static const int verify_v[] = {VERIFY_NONE, VERIFY_ESTIMATE, VERIFY_EXACT};
    static const char *const outputs[] = {"clusters", "pairs", "keep", NULL};
    static const int output_v[] = {OUT_CLUSTERS, OUT_PAIRS, OUT_KEEP};
    static const char *const formats[] = {"tsv", "jsonl", NULL};
    static const int format_v[] = {FMT_TSV, FMT_JSONL};

    o->verify = VERIFY_ESTIMATE;
    o->output = OUT_CLUSTERS;
    o->format = FMT_TSV;
    o->id_field = "id";
    o->text_field = "text";
    o->max_pairs = 10000000;
    o->threads = 0;

    int c;
    /* A leading '-' returns operands in place (as option 1), so inputs keep
     * their command-line order among --lines and --jsonl. */
    while ((c = getopt_long(argc, argv, "-k:j:o:qhV", long_options, NULL)) != -1) {
        switch (c) {
        case 1:
            add_input(o, strcmp(optarg, "-") ? INPUT_PATHS : INPUT_STDIN, optarg);
            break;
        case OPT_LINES: add_input(o, INPUT_LINES, optarg); break;
        case OPT_JSONL:
#if !DEDUP_HAVE_JANSSON
            /* Refused before anything is read or written, with the usage
             * status, so a script sees at once that this build cannot do it. */
            fputs(PROG ": --jsonl: " PROG " was built without JSON support (libjansson)\n",
                  stderr);
            exit(EXIT_DEDUP_USAGE);
#endif
            add_input(o, INPUT_JSONL, optarg);
            break;
        case OPT_ID_FIELD: o->id_field = optarg; break;
        case OPT_TEXT_FIELD: o->text_field = optarg; break;
        case OPT_STRICT_UTF8:
            o->strict_utf8 = 1;
            set_int(o, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT);
            break;
        case OPT_STRICT: o->strict = 1; break;
        case OPT_UNIT:
            set_int(o, SIMLSH_PARAM_UNIT, pick("--unit", optarg, units, unit_v));
            break;
        case 'k': set_int(o, SIMLSH_PARAM_K, parse_int("-k", optarg)); break;
        case OPT_NORMALIZE:
            set_int(o, SIMLSH_PARAM_NORMALIZE, parse_normalize(optarg));
            break;
        case OPT_NUM_PERM:
            set_int(o, SIMLSH_PARAM_NUM_PERM, parse_int("--num-perm", optarg));
            break;
        case OPT_SCHEME:
            set_int(o, SIMLSH_PARAM_SCHEME, pick("--scheme", optarg, schemes, scheme_v));
            break;
        case OPT_SEED: set_int(o, SIMLSH_PARAM_SEED, parse_int("--seed", optarg)); break;
        case OPT_THRESHOLD:
            set_double(o, SIMLSH_PARAM_THRESHOLD, "--threshold", optarg);
            break;
        case OPT_FP_WEIGHT:
            set_double(o, SIMLSH_PARAM_FP_WEIGHT, "--fp-weight", optarg);
            break;
        case OPT_FN_WEIGHT:
            set_double(o, SIMLSH_PARAM_FN_WEIGHT, "--fn-weight", optarg);
            break;
        case OPT_BANDS: set_int(o, SIMLSH_PARAM_BANDS, parse_int("--bands", optarg)); break;
        case OPT_ROWS: set_int(o, SIMLSH_PARAM_ROWS, parse_int("--rows", optarg)); break;
        case OPT_VERIFY:
            o->verify = (enum verify_mode)pick("--verify", optarg, verifies, verify_v);
            break;
        case OPT_MAX_PAIRS: {
            int64_t v = parse_int("--max-pairs", optarg);
            if (v < 0)
                usage_error("--max-pairs: must be >= 0, not '%s'", optarg);
            o->max_pairs = (size_t)v;
            break;
        }
        case 'o': o->output_path = optarg; break;
        case OPT_OUTPUT:
            o->output = (enum output_mode)pick("--output", optarg, outputs, output_v);
            break;
        case OPT_FORMAT:
            o->format = (enum output_format)pick("--format", optarg, formats, format_v);
            break;
        case OPT_EXIT_CODE: o->exit_code = 1; break;
        case OPT_SAVE_INDEX: o->save_index = optarg; break;
        case OPT_INDEX: o->load_index = optarg; break;
        case 'j': {
            int64_t v = parse_int("-j", optarg);
            if (v < 0 || v > 256)
                usage_error("-j: expected 0 (one per CPU) to 256, not '%s'", optarg);
            o->threads = (int)v;
            break;
        }
        case 'q': o->quiet = 1; break;
        case 'h':
            fputs(usage_text, stdout);
            exit(ferror(stdout) ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_OK);
        case 'V':
            print_version();
            exit(EXIT_DEDUP_OK);
        default:
            fprintf(stderr, "Try '" PROG " --help' for more information.\n");
            exit(EXIT_DEDUP_USAGE);
        }
    }
    if (o->ninputs == 0)
        usage_error("%s", "no input: give files, directories, -, --lines or --jsonl");
    int stdin_uses = 0;
    for (size_t i = 0; i < o->ninputs; i++)
        stdin_uses += !strcmp(o->inputs[i].arg, "-");
    if (stdin_uses > 1)
        usage_error("%s", "standard input (-) can be read only once");
    if (o->verify == VERIFY_EXACT && o->load_index)
        usage_error("%s", "--verify exact cannot be combined with --index: the shingle "
                          "sets of indexed documents are not saved");
    if (!*o->id_field || !*o->text_field)
        usage_error("%s", "--id-field and --text-field must not be empty");
}

/* Apply one explicit option; a value the library refuses is a usage error
 * that names the option and the allowed range. */
static void apply_param(simlsh_params *p, int key, const struct options *o)
{
    int rc;
    if (is_double_key(key))
        rc = simlsh_params_set_double(p, key, o->dval[key]);
    else
        rc = simlsh_params_set_int(p, key, o->ival[key]);
    if (rc == 0)
        return;
    const char *name = simlsh_params_key_name(key);
    if (is_double_key(key)) {
        double lo = 0, hi = 0;
        fprintf(stderr, PROG ": %s %g: %s", name ? name : "?", o->dval[key],
                simlsh_strerror(rc));
        if (simlsh_params_double_bounds(key, &lo, &hi) == 0) {
            if (key == SIMLSH_PARAM_THRESHOLD)
                fprintf(stderr, " (allowed: %g < value <= %g)", lo, hi);
            else
                fprintf(stderr, " (allowed: %g..%g, not both weights 0)", lo, hi);
        }
        fputc('\n', stderr);
    } else {
        int64_t lo = 0, hi = 0;
        fprintf(stderr, PROG ": %s %" PRId64 ": %s", name ? name : "?", o->ival[key],
                simlsh_strerror(rc));
        if (rc == SIMLSH_EINVAL && simlsh_params_int_bounds(key, &lo, &hi) == 0)
            fprintf(stderr, " (allowed: %" PRId64 "..%" PRId64 ")", lo, hi);
        if (rc == SIMLSH_EUNSUPPORTED && key == SIMLSH_PARAM_NORMALIZE)
            fprintf(stderr, " (casefold and nfkc need a build with utf8proc)");
        fputc('\n', stderr);
    }
    exit(EXIT_DEDUP_USAGE);
}

static void apply_options(simlsh_params *p, const struct options *o)
{
    for (int key = 1; key < 32; key++) {
        if (key == SIMLSH_PARAM_BANDS || key == SIMLSH_PARAM_ROWS)
            continue;
        if (o->set_mask & (UINT32_C(1) << key))
            apply_param(p, key, o);
    }
    int has_b = (int)((o->set_mask >> SIMLSH_PARAM_BANDS) & 1);
    int has_r = (int)((o->set_mask >> SIMLSH_PARAM_ROWS) & 1);
    if (!has_b && !has_r)
        return;
    /* Only one of --bands/--rows: the other uses up the signature. */
    int64_t num_perm = 0;
    if (simlsh_params_get_int(p, SIMLSH_PARAM_NUM_PERM, &num_perm) != 0)
        num_perm = 128;
    struct options tmp = *o;
    if (!has_r)
        tmp.ival[SIMLSH_PARAM_ROWS] = o->ival[SIMLSH_PARAM_BANDS] > 0
                                          ? num_perm / o->ival[SIMLSH_PARAM_BANDS] : 0;
    if (!has_b)
        tmp.ival[SIMLSH_PARAM_BANDS] = o->ival[SIMLSH_PARAM_ROWS] > 0
                                           ? num_perm / o->ival[SIMLSH_PARAM_ROWS] : 0;
    if (tmp.ival[SIMLSH_PARAM_BANDS] < 1 || tmp.ival[SIMLSH_PARAM_ROWS] < 1 ||
        tmp.ival[SIMLSH_PARAM_BANDS] * tmp.ival[SIMLSH_PARAM_ROWS] > num_perm) {
        fprintf(stderr, PROG ": --bands %" PRId64 " x --rows %" PRId64
                            " does not fit in --num-perm %" PRId64 "\n",
                tmp.ival[SIMLSH_PARAM_BANDS], tmp.ival[SIMLSH_PARAM_ROWS], num_perm);
        exit(EXIT_DEDUP_USAGE);
    }
    apply_param(p, SIMLSH_PARAM_BANDS, &tmp);
    apply_param(p, SIMLSH_PARAM_ROWS, &tmp);
}

static void fatal_lib(const char *what, int rc, int code)
{
    fprintf(stderr, PROG ": %s: %s (%s)\n", what, simlsh_strerror(rc), simlsh_error_name(rc));
    exit(code);
}

/* A new index with the tool's defaults (which differ from the library's in
 * normalisation: case and spacing rarely make documents different). */
static void setup_new(struct run *r, const struct options *o)
{
    int rc = simlsh_params_new(&r->params, NULL);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);
    rc = simlsh_params_set_int(r->params, SIMLSH_PARAM_NORMALIZE,
                               SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE);
    if (rc == 0)
        rc = simlsh_params_set_double(r->params, SIMLSH_PARAM_THRESHOLD, 0.8);
    /* Lean towards recall: --verify estimate (the default) drops the extra
     * false positives, while a missed pair is lost for good. At 0.8 this
     * picks 14 x 9 instead of 9 x 13: P(candidate) at J = 0.85 becomes
     * 0.975 instead of 0.69 (docs/tuning.md). */
    if (rc == 0)
        rc = simlsh_params_set_double(r->params, SIMLSH_PARAM_FP_WEIGHT, 0.1);
    if (rc == 0)
        rc = simlsh_params_set_double(r->params, SIMLSH_PARAM_FN_WEIGHT, 0.9);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);
    apply_options(r->params, o);
    double wfp = 0, wfn = 0;
    if (simlsh_params_get_double(r->params, SIMLSH_PARAM_FP_WEIGHT, &wfp) == 0 &&
        simlsh_params_get_double(r->params, SIMLSH_PARAM_FN_WEIGHT, &wfn) == 0 && wfp == 0 &&
        wfn == 0)
        usage_error("%s", "--fp-weight and --fn-weight cannot both be 0");
    rc = simlsh_index_new(&r->index, r->params);
    if (rc != 0)
        fatal_lib("cannot create the index", rc,
                  rc == SIMLSH_ENOMEM ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_USAGE);
}

static void setup_loaded(struct run *r, const struct options *o)
{
    uint64_t saved_fp = 0, index_fp = 0, want_fp = 0;
    if (sidecar_load(r, o->load_index, &r->params, &saved_fp) != 0)
        exit(EXIT_DEDUP_INPUT);
    int rc = simlsh_index_load_file(&r->index, o->load_index, NULL);
    if (rc != 0) {
        fprintf(stderr, PROG ": %s: cannot load the index: %s\n", o->load_index,
                simlsh_strerror(rc));
        exit(rc == SIMLSH_ENOMEM ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_INPUT);
    }
    size_t count = 0;
    rc = simlsh_index_fingerprint(&index_fp, r->index);
    if (rc == 0)
        rc = simlsh_index_count(&count, r->index);
    if (rc != 0)
        fatal_lib("index", rc, EXIT_DEDUP_INTERNAL);
    if (index_fp != saved_fp || count != r->names.count) {
        fprintf(stderr, PROG ": %s.names does not belong to %s (index has %zu ids, the "
                        "names file %zu)\n", o->load_index, o->load_index, count,
                r->names.count);
        exit(EXIT_DEDUP_INPUT);
    }
    apply_options(r->params, o);
    rc = simlsh_params_fingerprint(&want_fp, r->params, SIMLSH_SCOPE_INDEX);
    if (rc != 0 || want_fp != index_fp) {
        fprintf(stderr, PROG ": the hashing options given differ from those %s was built "
                        "with; leave them out to use the saved ones\n", o->load_index);
        exit(EXIT_DEDUP_USAGE);
    }
    r->first_new = r->names.count;
}

static const char *const unit_names[] = {"byte", "char", "word"};
static const char *const verify_names[] = {"none", "estimate", "exact"};

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

static void summary(struct run *r, double elapsed, uint64_t clusters, uint64_t dups)
{
    struct rusage ru;
    double peak = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        peak = (double)ru.ru_maxrss * 1024.0; /* KiB on Linux */
    char bytes[32], mem[32];
    human_bytes(bytes, sizeof bytes, (double)r->bytes);
    human_bytes(mem, sizeof mem, peak);
    double rate = elapsed > 0 ? (double)r->bytes / elapsed / 1e6 : 0;
    fprintf(stderr, PROG ": %" PRIu64 " document%s (%s", r->docs, plural(r->docs), bytes);
    if (r->first_new)
        fprintf(stderr, "; %" PRIu64 " more in %s", r->first_new, r->opt->load_index);
    fprintf(stderr, "), %" PRIu64 " cluster%s, %" PRIu64 " duplicate%s, %" PRIu64
                    " skipped; %.2f s, %.1f MB/s, peak memory %s\n",
            clusters, plural(clusters), dups, plural(dups), r->skipped, elapsed, rate, mem);
    int64_t unit = 0, k = 0, np = 0;
    uint32_t b = 0, rows = 0;
    simlsh_params_get_int(r->params, SIMLSH_PARAM_UNIT, &unit);
    simlsh_params_get_int(r->params, SIMLSH_PARAM_K, &k);
    simlsh_params_get_int(r->params, SIMLSH_PARAM_NUM_PERM, &np);
    simlsh_index_bands(&b, &rows, r->index);
    fprintf(stderr, PROG ": %s %" PRId64 "-shingles, %" PRId64 " permutations, %u bands x %u"
                    " rows, threshold %.2f, verify %s, %d thread%s\n",
            unit >= 0 && unit <= 2 ? unit_names[unit] : "?", k, np, b, rows, r->threshold,
            verify_names[r->opt->verify], r->nthreads, r->nthreads == 1 ? "" : "s");
}

static void run_free(struct run *r, struct options *opt)
{
    for (size_t i = 0; i < r->sets_cap; i++)
        simlsh_shingleset_free(r->sets[i]);
    free(r->sets);
    simlsh_index_free(r->index);
    simlsh_params_free(r->params);
    strlist_free(&r->paths);
    strlist_free(&r->names);
    free(opt->inputs);
}

/* Everything after setup; returns the exit status. */
static int dedup(struct run *r, const struct options *opt)
{
    int rc = simlsh_params_get_double(r->params, SIMLSH_PARAM_THRESHOLD, &r->threshold);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);

    size_t lines_inputs = 0;
    for (size_t i = 0; i < opt->ninputs; i++)
        lines_inputs += opt->inputs[i].kind == INPUT_LINES;
    r->lines_prefix = opt->ninputs > 1 || (opt->load_index && lines_inputs);

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    r->nthreads = opt->threads ? opt->threads : (int)(cpus > 0 ? (cpus > 64 ? 64 : cpus) : 1);

    /* Open the output first: a typo in -o should not cost a long run. */
    FILE *out = stdout;
    if (opt->output_path && strcmp(opt->output_path, "-")) {
        out = fopen(opt->output_path, "w");
        if (!out) {
            fprintf(stderr, PROG ": %s: %s\n", opt->output_path, strerror(errno));
            return EXIT_DEDUP_INTERNAL;
        }
    }
    static char outbuf[1 << 16];
    setvbuf(out, outbuf, _IOFBF, sizeof outbuf);

    int status = EXIT_DEDUP_OK;
    uint64_t clusters = 0, dups = 0;
    if (inputs_enumerate(r) != 0) {
        status = r->failed ? r->failed : EXIT_DEDUP_INPUT;
        goto close;
    }
    if (r->paths.count && !opt->load_index) {
        rc = simlsh_index_reserve(r->index, r->paths.count);
        if (rc != 0 && rc != SIMLSH_ENOMEM)
            fatal_lib("index reserve", rc, EXIT_DEDUP_INTERNAL);
    }
    rc = run_pipeline_start(r);
    if (rc == 0)
        rc = run_inputs(r);
    run_pipeline_stop(r);
    if (rc != 0) {
        if (!opt->quiet && r->failed == EXIT_DEDUP_INPUT)
            fprintf(stderr, PROG ": stopped at the first bad input (--strict)\n");
        status = r->failed ? r->failed : EXIT_DEDUP_INTERNAL;
        goto close;
    }

    if (write_results(r, out, &clusters, &dups) != 0) {
        status = EXIT_DEDUP_INTERNAL;
        goto close;
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, PROG ": %s: write error: %s\n",
                opt->output_path ? opt->output_path : "<stdout>", strerror(errno));
        status = EXIT_DEDUP_INTERNAL;
        goto close;
    }

    if (opt->save_index) {
        rc = simlsh_index_save_file(r->index, opt->save_index);
        if (rc != 0) {
            fprintf(stderr, PROG ": %s: cannot save the index: %s\n", opt->save_index,
                    simlsh_strerror(rc));
            status = EXIT_DEDUP_INTERNAL;
            goto close;
        }
        if (sidecar_save(r, opt->save_index) != 0) {
            status = EXIT_DEDUP_INTERNAL;
            goto close;
        }
    }
    if (!opt->quiet)
        summary(r, now_seconds() - r->t_start, clusters, dups);
    if (opt->exit_code && dups > 0)
        status = EXIT_DEDUP_FOUND;
close:
    if (out != stdout && fclose(out) != 0 && status == EXIT_DEDUP_OK) {
        fprintf(stderr, PROG ": %s: write error: %s\n", opt->output_path, strerror(errno));
        status = EXIT_DEDUP_INTERNAL;
    }
    return status;
}

int main(int argc, char **argv)
{
    struct options opt;
    memset(&opt, 0, sizeof opt);
    parse_args(&opt, argc, argv);

    struct run run;
    memset(&run, 0, sizeof run);
    run.opt = &opt;
    run.t_start = now_seconds();
    run.progress = !opt.quiet && isatty(STDERR_FILENO);
    if (opt.load_index)
        setup_loaded(&run, &opt);
    else
        setup_new(&run, &opt);

    int status = dedup(&run, &opt);
    run_free(&run, &opt);
    return status;
}
