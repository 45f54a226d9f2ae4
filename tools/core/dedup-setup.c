/*
 * simlsh-dedup: what both front ends do before reading (simlsh-dedup and
 * simlsh-dedup-mpi): the saved index loaded with --index and checked
 * against the options, the run's threshold, threads and line names, and
 * the checks that keep an output from replacing an input or another
 * output. Messages name the program given.
 */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void run_init(struct run *r, const struct options *o)
{
    memset(r, 0, sizeof *r);
    r->opt = o;
    r->stats.t_start = now_seconds();
    r->stats.t_phase = r->stats.t_start;
    r->stats.cpu_phase = cpu_seconds();
}

int run_status(const struct run *r, uint64_t dups)
{
    if (r->stats.docs == 0 && r->stats.skipped > 0)
        return EXIT_DEDUP_NOTHING;
    if (r->truncated || r->inputs_cut)
        return EXIT_DEDUP_TRUNCATED;
    if (r->opt->exit_code && dups > 0)
        return EXIT_DEDUP_FOUND;
    return EXIT_DEDUP_OK;
}

int setup_loaded(struct run *r, const struct options *o, const char *prog, int need_signatures)
{
    int code = store_load(r, o->load_index);
    if (code != 0)
        return code;
    uint64_t index_fp = 0, want_fp = 0;
    int rc = simlsh_index_fingerprint(&index_fp, r->store.index);
    if (rc != 0) {
        fprintf(stderr, "%s: index: %s (%s)\n", prog, simlsh_strerror(rc), simlsh_error_name(rc));
        return EXIT_DEDUP_INTERNAL;
    }
    if (need_signatures) {
        simlsh_params *ip = NULL;
        int64_t stored = 1;
        rc = simlsh_index_params(&ip, r->store.index);
        if (rc == 0)
            rc = simlsh_params_get_int(ip, SIMLSH_PARAM_STORE_SIGNATURES, &stored);
        simlsh_params_free(ip);
        if (rc != 0 || !stored) {
            fprintf(stderr,
                    "%s: %s: the index stores no signatures, which %s needs; use "
                    "simlsh-dedup with it\n",
                    prog, qname(o->load_index), prog);
            return EXIT_DEDUP_INPUT;
        }
    }
    double saved[SAVED_DOUBLES];
    saved_doubles_get(r->store.params, saved);
    apply_options(r->store.params, o);
    if (saved_doubles_check(r->store.params, o, saved, prog) != 0)
        return EXIT_DEDUP_USAGE;
    rc = simlsh_params_fingerprint(&want_fp, r->store.params, SIMLSH_SCOPE_INDEX);
    if (rc != 0 || want_fp != index_fp) {
        fprintf(stderr,
                "%s: the hashing options given differ from those %s was built "
                "with; leave them out to use the saved ones\n",
                prog, o->load_index);
        return EXIT_DEDUP_USAGE;
    }
    if (store_remove(r) != 0)
        return r->failed ? r->failed : EXIT_DEDUP_INTERNAL;
    return 0;
}

int run_threads(int requested)
{
    if (requested > 0)
        return requested;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)(cpus > 0 ? (cpus > 256 ? 256 : cpus) : 1);
}

void setup_run(struct run *r, const struct options *o)
{
    int rc = simlsh_params_get_double(r->store.params, SIMLSH_PARAM_THRESHOLD, &r->threshold);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);
    size_t lines_inputs = 0;
    for (size_t i = 0; i < o->ninputs; i++)
        lines_inputs += o->inputs[i].kind == INPUT_LINES;
    r->lines_prefix = o->ninputs > 1 || ((o->load_index || o->save_index) && lines_inputs);
    r->nthreads = run_threads(o->threads);
    /* library calls get -j as given: 0 lets the library apply its rule */
    r->lib_threads = (uint32_t)o->threads;
}

/* The file an output path would be: its directory resolved, plus its
 * last component (which need not exist yet). */
static char *output_key(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        die_oom();
    char *real = realpath(dir, NULL);
    free(dir);
    const char *base = slash ? slash + 1 : path;
    size_t rl = real ? strlen(real) : 0, bl = strlen(base);
    char *key = xmalloc(rl + bl + 2);
    snprintf(key, rl + bl + 2, "%s/%s", real ? real : "", base);
    free(real);
    return key;
}

int check_outputs(struct run_inputs *in, const struct options *o, const char *prog)
{
    struct stat st;
    if (o->load_index) {
        /* FILE.names too: a 0.1/0.2 index is read with it */
        char *names = xmalloc(strlen(o->load_index) + 7);
        sprintf(names, "%s.names", o->load_index);
        if (stat(o->load_index, &st) == 0)
            fileids_add(&in->input_ids, &st);
        if (stat(names, &st) == 0)
            fileids_add(&in->input_ids, &st);
        free(names);
    }
    if (o->remove_from && strcmp(o->remove_from, "-") && stat(o->remove_from, &st) == 0)
        fileids_add(&in->input_ids, &st);
    for (size_t i = 0; i < o->list_ids.n; i++) {
        struct stat fake;
        memset(&fake, 0, sizeof fake);
        fake.st_dev = (dev_t)o->list_ids.v[i].dev;
        fake.st_ino = (ino_t)o->list_ids.v[i].ino;
        fileids_add(&in->input_ids, &fake);
    }
    struct {
        const char *path, *what, *same;
    } outs[] = {
        {o->output_path && strcmp(o->output_path, "-") ? o->output_path : NULL, "-o", NULL},
        {o->stats_path, "--stats", NULL},
        {o->skipped_path, "--skipped", NULL},
        {o->save_index, "--save-index", o->load_index},
    };
    size_t n = sizeof outs / sizeof outs[0];
    int rc = 0;
    char *keys[sizeof outs / sizeof outs[0]] = {NULL};
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!outs[i].path)
            continue;
        /* the index is saved by the library, always through a rename */
        if (output_path_ok(&in->input_ids, outs[i].path, outs[i].what, outs[i].same,
                           strcmp(outs[i].what, "--save-index") != 0) != 0) {
            rc = -1;
            break;
        }
        /* two outputs may share a device (-o /dev/null --stats /dev/null) */
        if (stat(outs[i].path, &st) == 0 && S_ISCHR(st.st_mode))
            continue;
        keys[i] = output_key(outs[i].path);
        for (size_t j = 0; j < i; j++) {
            if (keys[j] && !strcmp(keys[i], keys[j])) {
                fprintf(stderr, "%s: %s %s: also the file of %s; give each output its own file\n",
                        prog, outs[i].what, qname(outs[i].path), outs[j].what);
                rc = -1;
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    return rc;
}
