/* Run-time names of the header's constants, so that bindings and tools
 * print and parse "char" or "lower,space" without copying the header's
 * numbers. Contract layer. The names are those of simlsh-dedup's options;
 * the API description test checks that every kind lists every constant of
 * its enum in the header. */
#include <string.h>

#include "simlsh.h"

typedef struct {
    int64_t value;
    const char *name;
} named;

#define ERR(name, value, msg) {value, #name},
static const named errors[] = {{SIMLSH_OK, "OK"}, SIMLSH_ERRNO_MAP(ERR)};
#undef ERR

static const named params[] = {
    {SIMLSH_PARAM_UNIT, "unit"},
    {SIMLSH_PARAM_K, "k"},
    {SIMLSH_PARAM_NORMALIZE, "normalize"},
    {SIMLSH_PARAM_UTF8_POLICY, "utf8_policy"},
    {SIMLSH_PARAM_SEED, "seed"},
    {SIMLSH_PARAM_HASH_BITS, "hash_bits"},
    {SIMLSH_PARAM_NUM_PERM, "num_perm"},
    {SIMLSH_PARAM_SCHEME, "scheme"},
    {SIMLSH_PARAM_BANDS, "bands"},
    {SIMLSH_PARAM_ROWS, "rows"},
    {SIMLSH_PARAM_STORE_SIGNATURES, "store_signatures"},
    {SIMLSH_PARAM_ISA, "isa"},
    {SIMLSH_PARAM_THRESHOLD, "threshold"},
    {SIMLSH_PARAM_FP_WEIGHT, "fp_weight"},
    {SIMLSH_PARAM_FN_WEIGHT, "fn_weight"},
};

static const named units[] = {
    {SIMLSH_UNIT_BYTE, "byte"},
    {SIMLSH_UNIT_CHAR, "char"},
    {SIMLSH_UNIT_WORD, "word"},
};

static const named norms[] = {
    {SIMLSH_NORM_LOWER_ASCII, "lower"}, {SIMLSH_NORM_COLLAPSE_SPACE, "space"},
    {SIMLSH_NORM_STRIP_PUNCT, "punct"}, {SIMLSH_NORM_CASEFOLD, "casefold"},
    {SIMLSH_NORM_NFKC, "nfkc"},
};

static const named utf8[] = {
    {SIMLSH_UTF8_REPLACE, "replace"},
    {SIMLSH_UTF8_REJECT, "reject"},
};

static const named schemes[] = {
    {SIMLSH_SCHEME_OPH, "oph"},
    {SIMLSH_SCHEME_CLASSIC, "classic"},
};

static const named isas[] = {
    {SIMLSH_ISA_AUTO, "auto"},
    {SIMLSH_ISA_SCALAR, "scalar"},
    {SIMLSH_ISA_AVX2, "avx2"},
    {SIMLSH_ISA_AVX512, "avx512"},
};

static const named scopes[] = {
    {SIMLSH_SCOPE_SHINGLES, "shingles"},
    {SIMLSH_SCOPE_SIGNATURE, "signature"},
    {SIMLSH_SCOPE_INDEX, "index"},
};

static const named query_flags[] = {
    {SIMLSH_QUERY_VERIFY, "verify"},
};

/* params.c applies them by value. */
static const named presets[] = {
    {0, "default"},
    {1, "dedup"},
};

/* A new mode, key or counter of the dedup engine is one more row here (the
 * api test fails until it has one); the field names keep clang-format from
 * packing the rows into columns, so a row is one line of a diff. */
static const named dedup_modes[] = {
    {.value = SIMLSH_DEDUP_NONE, .name = "none"},
    {.value = SIMLSH_DEDUP_ESTIMATE, .name = "estimate"},
    {.value = SIMLSH_DEDUP_EXACT, .name = "exact"},
};

static const named dedup_keys[] = {
    {.value = SIMLSH_DEDUP_THREADS, .name = "threads"},
    {.value = SIMLSH_DEDUP_MEMORY, .name = "memory"},
    {.value = SIMLSH_DEDUP_PREFILTER, .name = "prefilter"},
    {.value = SIMLSH_DEDUP_KEEP_BELOW, .name = "keep_below"},
    {.value = SIMLSH_DEDUP_GIANT, .name = "giant"},
    {.value = SIMLSH_DEDUP_GIANT_COST, .name = "giant_cost"},
    {.value = SIMLSH_DEDUP_CLUSTER, .name = "cluster"},
    {.value = SIMLSH_DEDUP_LINK_KEPT, .name = "link_kept"},
    {.value = SIMLSH_DEDUP_SAMPLE_MEMORY, .name = "sample_memory"},
};

static const named dedup_stats[] = {
    {.value = SIMLSH_DEDUP_STAT_VISITS, .name = "visits"},
    {.value = SIMLSH_DEDUP_STAT_CANDIDATES, .name = "candidates"},
    {.value = SIMLSH_DEDUP_STAT_EXACT, .name = "exact"},
    {.value = SIMLSH_DEDUP_STAT_IDENTICAL, .name = "identical"},
    {.value = SIMLSH_DEDUP_STAT_ESTIMATED, .name = "estimated"},
    {.value = SIMLSH_DEDUP_STAT_TEXTS, .name = "texts"},
    {.value = SIMLSH_DEDUP_STAT_BATCHES, .name = "batches"},
    {.value = SIMLSH_DEDUP_STAT_SET_BYTES, .name = "set_bytes"},
    {.value = SIMLSH_DEDUP_STAT_GROUPS, .name = "groups"},
    {.value = SIMLSH_DEDUP_STAT_MEMBERS, .name = "members"},
    {.value = SIMLSH_DEDUP_STAT_EDITS, .name = "edits"},
    {.value = SIMLSH_DEDUP_STAT_SET_ASIDE, .name = "set_aside"},
    {.value = SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS, .name = "set_aside_members"},
    {.value = SIMLSH_DEDUP_STAT_SAMPLED, .name = "sampled"},
};

static const named dedup_clusters[] = {
    {.value = SIMLSH_DEDUP_STAR, .name = "star"},
    {.value = SIMLSH_DEDUP_COMPONENTS, .name = "components"},
};

typedef struct {
    const named *v;
    size_t n;
} table;

#define T(a)                      \
    {                             \
        a, sizeof a / sizeof a[0] \
    }
/* Indexed by kind, so a table cannot slip into another kind's place. */
static const table tables[] = {
    [SIMLSH_KIND_ERROR] = T(errors),
    [SIMLSH_KIND_PARAM] = T(params),
    [SIMLSH_KIND_UNIT] = T(units),
    [SIMLSH_KIND_NORMALIZE] = T(norms),
    [SIMLSH_KIND_UTF8_POLICY] = T(utf8),
    [SIMLSH_KIND_SCHEME] = T(schemes),
    [SIMLSH_KIND_ISA] = T(isas),
    [SIMLSH_KIND_SCOPE] = T(scopes),
    [SIMLSH_KIND_QUERY_FLAG] = T(query_flags),
    [SIMLSH_KIND_PRESET] = T(presets),
    [SIMLSH_KIND_DEDUP_MODE] = T(dedup_modes),
    [SIMLSH_KIND_DEDUP_KEY] = T(dedup_keys),
    [SIMLSH_KIND_DEDUP_STAT] = T(dedup_stats),
    [SIMLSH_KIND_DEDUP_CLUSTER] = T(dedup_clusters),
};
#undef T

static const table *find_table(int kind)
{
    if (kind < SIMLSH_KIND_ERROR || (size_t)kind >= sizeof tables / sizeof tables[0])
        return NULL;
    return &tables[kind];
}

const char *simlsh_constant_name(int kind, int64_t value)
{
    const table *t = find_table(kind);
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if (t->v[i].value == value)
            return t->v[i].name;
    return NULL;
}

int simlsh_constant_value(int64_t *out, int kind, const char *name)
{
    const table *t = find_table(kind);
    if (out == NULL || name == NULL || t == NULL)
        return SIMLSH_EINVAL;
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i].name, name) == 0) {
            *out = t->v[i].value;
            return 0;
        }
    }
    return SIMLSH_ENOTFOUND;
}

int simlsh_constant_at(int64_t *value, const char **name, int kind, size_t i)
{
    const table *t = find_table(kind);
    if (t == NULL)
        return SIMLSH_EINVAL;
    if (i >= t->n)
        return SIMLSH_ENOTFOUND;
    if (value != NULL)
        *value = t->v[i].value;
    if (name != NULL)
        *name = t->v[i].name;
    return 0;
}
