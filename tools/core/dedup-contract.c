/*
 * simlsh-dedup: the hashing contract the command line asks for: explicit
 * options over the defaults or over the contract loaded with --index, the
 * saved values --index checks, and the banding of a new run. Shared by
 * simlsh-dedup and simlsh-dedup-mpi.
 */
#include "dedup.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROG "simlsh-dedup"

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
        fprintf(stderr, PROG ": %s %g: %s", name ? name : "?", o->dval[key], simlsh_strerror(rc));
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
        if (rc == SIMLSH_EINVAL && simlsh_params_int_bounds(key, &lo, &hi) == 0 &&
            (o->ival[key] < lo || o->ival[key] > hi))
            fprintf(stderr, " (allowed: %" PRId64 "..%" PRId64 ")", lo, hi);
        else if (rc == SIMLSH_EINVAL && (key == SIMLSH_PARAM_UNIT || key == SIMLSH_PARAM_NORMALIZE))
            fprintf(stderr, " (the byte unit takes no casefold or nfkc: they need characters)");
        if (rc == SIMLSH_EUNSUPPORTED && key == SIMLSH_PARAM_NORMALIZE)
            fprintf(stderr, " (casefold and nfkc need a build with utf8proc)");
        fputc('\n', stderr);
    }
    exit(EXIT_DEDUP_USAGE);
}

void apply_options(simlsh_params *p, const struct options *o)
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
        tmp.ival[SIMLSH_PARAM_ROWS] =
            o->ival[SIMLSH_PARAM_BANDS] > 0 ? num_perm / o->ival[SIMLSH_PARAM_BANDS] : 0;
    if (!has_b)
        tmp.ival[SIMLSH_PARAM_BANDS] =
            o->ival[SIMLSH_PARAM_ROWS] > 0 ? num_perm / o->ival[SIMLSH_PARAM_ROWS] : 0;
    if (tmp.ival[SIMLSH_PARAM_BANDS] < 1 || tmp.ival[SIMLSH_PARAM_ROWS] < 1 ||
        tmp.ival[SIMLSH_PARAM_BANDS] * tmp.ival[SIMLSH_PARAM_ROWS] > num_perm) {
        fprintf(stderr,
                PROG ": --bands %" PRId64 " x --rows %" PRId64
                     " does not fit in --num-perm %" PRId64 "\n",
                tmp.ival[SIMLSH_PARAM_BANDS], tmp.ival[SIMLSH_PARAM_ROWS], num_perm);
        exit(EXIT_DEDUP_USAGE);
    }
    apply_param(p, SIMLSH_PARAM_BANDS, &tmp);
    apply_param(p, SIMLSH_PARAM_ROWS, &tmp);
}

/* The threshold and the weights are not in the index's fingerprint, yet the
 * saved banding was chosen for them: another threshold would keep a banding
 * that misses its pairs (at 0.5, 78 % of them for 0.8's banding) and
 * --save-index would store it for every later run (issue 31, F8). So a
 * different value is refused, as docs/cli.md says; re-banding would mean
 * signing every indexed document again. */
static const int saved_keys[SAVED_DOUBLES] = {SIMLSH_PARAM_THRESHOLD, SIMLSH_PARAM_FP_WEIGHT,
                                              SIMLSH_PARAM_FN_WEIGHT};

void saved_doubles_get(const simlsh_params *p, double *saved)
{
    for (int i = 0; i < SAVED_DOUBLES; i++)
        if (simlsh_params_get_double(p, saved_keys[i], &saved[i]) != 0)
            saved[i] = -1;
}

int saved_doubles_check(const simlsh_params *p, const struct options *o, const double *saved,
                        const char *prog)
{
    for (int i = 0; i < SAVED_DOUBLES; i++) {
        double now = 0;
        if (!(o->set_mask & (UINT32_C(1) << saved_keys[i])) || saved[i] < 0 ||
            simlsh_params_get_double(p, saved_keys[i], &now) != 0 || now == saved[i])
            continue;
        const char *key = simlsh_params_key_name(saved_keys[i]);
        char opt[32];
        snprintf(opt, sizeof opt, "%s", key ? key : "?");
        for (char *c = opt; *c; c++)
            if (*c == '_')
                *c = '-';
        fprintf(stderr,
                "%s: --%s %g: %s was built with --%s %g, and its banding was chosen for "
                "that value; leave --%s out, or build a new index\n",
                prog, opt, now, qname(o->load_index), opt, saved[i], opt);
        return -1;
    }
    return 0;
}

/* Exact verification removes every false candidate, so the banding only has
 * to find the true pairs: the policy's banding (simlsh_dedup_banding(), the
 * least false-positive area with P(threshold) >= --recall), unless --bands
 * or --rows are given. */
static void recall_banding(struct run *r, const struct options *o)
{
    if (o->verify != VERIFY_EXACT ||
        (o->set_mask & ((UINT32_C(1) << SIMLSH_PARAM_BANDS) | (UINT32_C(1) << SIMLSH_PARAM_ROWS))))
        return;
    int rc = simlsh_dedup_banding(r->store.params, SIMLSH_DEDUP_EXACT, o->recall, 0, 0, NULL, NULL);
    if (rc != 0)
        fatal_lib("banding for --recall", rc, EXIT_DEDUP_USAGE);
    r->stats.vs.recall_banding = 1;
}

/* A new index with the tool's defaults (which differ from the library's in
 * normalisation: case and spacing rarely make documents different). */
void setup_new(struct run *r, const struct options *o)
{
    int rc = simlsh_params_new(&r->store.params, NULL);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);
    rc = simlsh_params_set_int(r->store.params, SIMLSH_PARAM_NORMALIZE,
                               SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE);
    if (rc == 0)
        rc = simlsh_params_set_double(r->store.params, SIMLSH_PARAM_THRESHOLD, 0.8);
    /* Lean towards recall: --verify estimate (the default) drops the extra
     * false positives, while a missed pair is lost for good. At 0.8 this
     * picks 14 x 9 instead of 9 x 13: P(candidate) at J = 0.85 becomes
     * 0.975 instead of 0.69 (docs/tuning.md). */
    if (rc == 0)
        rc = simlsh_params_set_double(r->store.params, SIMLSH_PARAM_FP_WEIGHT, 0.1);
    if (rc == 0)
        rc = simlsh_params_set_double(r->store.params, SIMLSH_PARAM_FN_WEIGHT, 0.9);
    if (rc != 0)
        fatal_lib("params", rc, EXIT_DEDUP_INTERNAL);
    apply_options(r->store.params, o);
    recall_banding(r, o);
    double wfp = 0, wfn = 0;
    if (simlsh_params_get_double(r->store.params, SIMLSH_PARAM_FP_WEIGHT, &wfp) == 0 &&
        simlsh_params_get_double(r->store.params, SIMLSH_PARAM_FN_WEIGHT, &wfn) == 0 && wfp == 0 &&
        wfn == 0)
        usage_error("%s", "--fp-weight and --fn-weight cannot both be 0");
    rc = simlsh_index_new(&r->store.index, r->store.params);
    if (rc != 0)
        fatal_lib("cannot create the index", rc,
                  rc == SIMLSH_ENOMEM ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_USAGE);
}
