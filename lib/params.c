/* The hash contract: keyed setters and getters with bounds, fingerprints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simlsh_config.h"
#include "alloc.h"
#include "le.h"
#include "murmur3.h"
#include "params.h"

enum {
    T_INT,
    T_DOUBLE
};

typedef struct {
    int key;
    int type;
    const char *name;
    double min, max; /* integers fit exactly in a double below 2^53 */
    size_t offset;
} key_info;

#define OFF(f) offsetof(struct simlsh_params, f)
static const key_info keys[] = {
    {SIMLSH_PARAM_UNIT, T_INT, "unit", 0, 2, OFF(unit)},
    {SIMLSH_PARAM_K, T_INT, "k", 1, SIMLSH__MAX_K, OFF(k)},
    {SIMLSH_PARAM_NORMALIZE, T_INT, "normalize", 0, 31, OFF(normalize)},
    {SIMLSH_PARAM_UTF8_POLICY, T_INT, "utf8_policy", 0, 1, OFF(utf8_policy)},
    {SIMLSH_PARAM_SEED, T_INT, "seed", 0, 4294967295.0, OFF(seed)},
    {SIMLSH_PARAM_HASH_BITS, T_INT, "hash_bits", 32, 64, OFF(hash_bits)},
    {SIMLSH_PARAM_NUM_PERM, T_INT, "num_perm", 1, SIMLSH__MAX_PERM, OFF(num_perm)},
    {SIMLSH_PARAM_SCHEME, T_INT, "scheme", 0, 1, OFF(scheme)},
    {SIMLSH_PARAM_BANDS, T_INT, "bands", 0, SIMLSH__MAX_PERM, OFF(bands)},
    {SIMLSH_PARAM_ROWS, T_INT, "rows", 0, SIMLSH__MAX_PERM, OFF(rows)},
    {SIMLSH_PARAM_STORE_SIGNATURES, T_INT, "store_signatures", 0, 1, OFF(store_signatures)},
    {SIMLSH_PARAM_ISA, T_INT, "isa", 0, 3, OFF(isa)},
    {SIMLSH_PARAM_THRESHOLD, T_DOUBLE, "threshold", 0, 1, OFF(threshold)},
    {SIMLSH_PARAM_FP_WEIGHT, T_DOUBLE, "fp_weight", 0, 1e6, OFF(fp_weight)},
    {SIMLSH_PARAM_FN_WEIGHT, T_DOUBLE, "fn_weight", 0, 1e6, OFF(fn_weight)},
};
#undef OFF

static const key_info *find_key(int key)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].key == key)
            return &keys[i];
    return NULL;
}

void simlsh__params_defaults(struct simlsh_params *p, const simlsh_allocator *alloc)
{
    memset(p, 0, sizeof *p);
    p->tag = SIMLSH__TAG_PARAMS;
    simlsh__alloc_fill(&p->alloc, alloc);
    p->self = p->alloc;
    p->unit = SIMLSH_UNIT_CHAR;
    p->k = 5;
    p->normalize = 0;
    p->utf8_policy = SIMLSH_UTF8_REPLACE;
    p->seed = 0;
    p->hash_bits = 32;
    p->num_perm = 128;
    p->scheme = SIMLSH_SCHEME_OPH;
    p->bands = 0;
    p->rows = 0;
    p->store_signatures = 1;
    p->isa = SIMLSH_ISA_AUTO;
    p->threshold = 0.8;
    p->fp_weight = 0.5;
    p->fn_weight = 0.5;
}

int simlsh_params_new(simlsh_params **out, const simlsh_allocator *alloc)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (!simlsh__alloc_valid(alloc))
        return SIMLSH_EINVAL;
    simlsh_allocator a;
    simlsh__alloc_fill(&a, alloc);
    struct simlsh_params *p = simlsh__malloc(&a, sizeof *p);
    if (p == NULL)
        return SIMLSH_ENOMEM;
    simlsh__params_defaults(p, &a);
    *out = p;
    return 0;
}

void simlsh_params_free(simlsh_params *params)
{
    if (simlsh__handle_is(params, SIMLSH__TAG_PARAMS)) {
        simlsh_allocator a = params->self;
        params->tag = SIMLSH__TAG_DEAD;
        simlsh__free_sized(&a, params, sizeof *params);
    }
}

int simlsh_params_copy(simlsh_params **out, const simlsh_params *src)
{
    if (out != NULL)
        *out = NULL;
    SIMLSH__CHECK_PARAMS(src);
    return simlsh__params_export(out, src);
}

int simlsh_params_set_allocator(simlsh_params *params, const simlsh_allocator_v2 *alloc)
{
    SIMLSH__CHECK_PARAMS(params);
    return simlsh__alloc_fill_v2(&params->alloc, alloc);
}

int simlsh_params_set_int(simlsh_params *params, int key, int64_t value)
{
    const key_info *k = find_key(key);
    SIMLSH__CHECK_PARAMS(params);
    if (k == NULL || k->type != T_INT)
        return SIMLSH_EINVAL;
    if ((double)value < k->min || (double)value > k->max)
        return SIMLSH_EINVAL;
    if (key == SIMLSH_PARAM_HASH_BITS && value != 32 && value != 64)
        return SIMLSH_EINVAL;
    /* Unicode normalisation works on code points, which the byte unit does
     * not decode: the pair is refused by whichever setter would complete
     * it, so no params (and no loaded contract, read through these
     * setters) can ever hold it. */
    if (key == SIMLSH_PARAM_UNIT && value == SIMLSH_UNIT_BYTE &&
        (params->normalize & SIMLSH__UNICODE_FLAGS))
        return SIMLSH_EINVAL;
    if (key == SIMLSH_PARAM_NORMALIZE && (value & SIMLSH__UNICODE_FLAGS) &&
        params->unit == SIMLSH_UNIT_BYTE)
        return SIMLSH_EINVAL;
    if (key == SIMLSH_PARAM_NORMALIZE && (value & SIMLSH__UNICODE_FLAGS) && !SIMLSH_HAVE_UTF8PROC)
        return SIMLSH_EUNSUPPORTED;
    if (key == SIMLSH_PARAM_ISA && !simlsh_isa_supported((int)value))
        return SIMLSH_EUNSUPPORTED;
    if (key == SIMLSH_PARAM_SEED)
        params->seed = (uint32_t)value;
    else
        *(int32_t *)(void *)((char *)params + k->offset) = (int32_t)value;
    return 0;
}

int simlsh_params_get_int(const simlsh_params *params, int key, int64_t *out)
{
    const key_info *k = find_key(key);
    SIMLSH__CHECK_PARAMS(params);
    if (out == NULL || k == NULL || k->type != T_INT)
        return SIMLSH_EINVAL;
    if (key == SIMLSH_PARAM_SEED)
        *out = params->seed;
    else
        *out = *(const int32_t *)(const void *)((const char *)params + k->offset);
    return 0;
}

int simlsh_params_set_double(simlsh_params *params, int key, double value)
{
    const key_info *k = find_key(key);
    SIMLSH__CHECK_PARAMS(params);
    if (k == NULL || k->type != T_DOUBLE || isnan(value))
        return SIMLSH_EINVAL;
    if (value < k->min || value > k->max)
        return SIMLSH_EINVAL;
    if (key == SIMLSH_PARAM_THRESHOLD && !(value > 0.0))
        return SIMLSH_EINVAL;
    *(double *)(void *)((char *)params + k->offset) = value;
    return 0;
}

int simlsh_params_get_double(const simlsh_params *params, int key, double *out)
{
    const key_info *k = find_key(key);
    SIMLSH__CHECK_PARAMS(params);
    if (out == NULL || k == NULL || k->type != T_DOUBLE)
        return SIMLSH_EINVAL;
    *out = *(const double *)(const void *)((const char *)params + k->offset);
    return 0;
}

int simlsh_params_int_bounds(int key, int64_t *min, int64_t *max)
{
    const key_info *k = find_key(key);
    if (k == NULL || k->type != T_INT || min == NULL || max == NULL)
        return SIMLSH_EINVAL;
    *min = (int64_t)k->min;
    *max = (int64_t)k->max;
    return 0;
}

int simlsh_params_double_bounds(int key, double *min, double *max)
{
    const key_info *k = find_key(key);
    if (k == NULL || k->type != T_DOUBLE || min == NULL || max == NULL)
        return SIMLSH_EINVAL;
    *min = k->min;
    *max = k->max;
    return 0;
}

const char *simlsh_params_key_name(int key)
{
    const key_info *k = find_key(key);
    return k ? k->name : NULL;
}

int simlsh__params_check_shingling(const struct simlsh_params *p)
{
    if (p->unit == SIMLSH_UNIT_BYTE && (p->normalize & SIMLSH__UNICODE_FLAGS))
        return SIMLSH_EINVAL; /* Unicode normalisation needs code points */
    if ((p->normalize & SIMLSH__UNICODE_FLAGS) && !SIMLSH_HAVE_UTF8PROC)
        return SIMLSH_EUNSUPPORTED;
    return 0;
}

int simlsh__params_resolve_bands(const struct simlsh_params *p, uint32_t *b, uint32_t *r)
{
    if (p->bands == 0 && p->rows == 0) {
        return simlsh_lsh_optimal_params(b, r, NULL, (uint32_t)p->num_perm, p->threshold,
                                         p->fp_weight, p->fn_weight);
    }
    if (p->bands == 0 || p->rows == 0 || (int64_t)p->bands * p->rows > p->num_perm)
        return SIMLSH_EINVAL;
    *b = (uint32_t)p->bands;
    *r = (uint32_t)p->rows;
    return 0;
}

uint64_t simlsh__fingerprint(const struct simlsh_params *p, int scope)
{
    /* A canonical little-endian encoding of the scope's fields, hashed. */
    uint8_t buf[32] = {0};
    buf[0] = (uint8_t)scope;
    buf[1] = (uint8_t)p->unit;
    buf[2] = (uint8_t)p->k;
    buf[3] = (uint8_t)p->normalize;
    buf[4] = (uint8_t)p->utf8_policy;
    buf[5] = (uint8_t)p->hash_bits;
    simlsh__wr32(buf + 8, p->seed);
    if (scope >= SIMLSH_SCOPE_SIGNATURE) {
        simlsh__wr16(buf + 12, (uint16_t)p->num_perm);
        buf[14] = (uint8_t)p->scheme;
    }
    if (scope >= SIMLSH_SCOPE_INDEX) {
        simlsh__wr16(buf + 16, (uint16_t)p->bands);
        simlsh__wr16(buf + 18, (uint16_t)p->rows);
    }
    uint64_t h[2];
    simlsh__murmur3_128(buf, sizeof buf, 0x53494d4cu, h);
    return h[0];
}

int simlsh_params_fingerprint(uint64_t *out, const simlsh_params *params, int scope)
{
    SIMLSH__CHECK_PARAMS(params);
    if (out == NULL || scope < SIMLSH_SCOPE_SHINGLES || scope > SIMLSH_SCOPE_INDEX)
        return SIMLSH_EINVAL;
    if (scope == SIMLSH_SCOPE_INDEX) {
        struct simlsh_params q = *params;
        uint32_t b, r;
        int rc = simlsh__params_resolve_bands(params, &b, &r);
        if (rc < 0)
            return rc;
        q.bands = (int32_t)b;
        q.rows = (int32_t)r;
        *out = simlsh__fingerprint(&q, scope);
        return 0;
    }
    *out = simlsh__fingerprint(params, scope);
    return 0;
}

int simlsh_hash_bytes(uint64_t *out, const simlsh_params *params, const void *data, size_t len)
{
    SIMLSH__CHECK_PARAMS(params);
    if (out == NULL || (data == NULL && len > 0))
        return SIMLSH_EINVAL;
    static const uint8_t nothing[1] = {0};
    if (data == NULL)
        data = nothing;
    if (params->hash_bits == 64) {
        uint64_t h[2];
        simlsh__murmur3_128(data, len, params->seed, h);
        *out = h[0];
    } else {
        *out = simlsh__murmur3_32(data, len, params->seed);
    }
    return 0;
}

int simlsh__params_export(simlsh_params **out, const struct simlsh_params *src)
{
    if (out == NULL)
        return SIMLSH_EINVAL;
    *out = NULL;
    if (src == NULL)
        return SIMLSH_EINVAL;
    struct simlsh_params *p = simlsh__malloc(&src->alloc, sizeof *p);
    if (p == NULL)
        return SIMLSH_ENOMEM;
    *p = *src;
    p->tag = SIMLSH__TAG_PARAMS;
    p->self = src->alloc;
    *out = p;
    return 0;
}

int simlsh_params_preset(simlsh_params *params, const char *name)
{
    SIMLSH__CHECK_PARAMS(params);
    int64_t which;
    int rc = simlsh_constant_value(&which, SIMLSH_KIND_PRESET, name);
    if (rc < 0)
        return rc;
    struct simlsh_params p;
    simlsh__params_defaults(&p, NULL);
    p.alloc = params->alloc;
    p.self = params->self;
    if (which == 1) {
        /* simlsh-dedup: case and spacing rarely make documents different,
         * and recall is worth more than the false positives that the
         * verification drops (docs/cli.md, docs/tuning.md). */
        p.normalize = SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE;
        p.fp_weight = 0.1;
        p.fn_weight = 0.9;
    }
    *params = p;
    return 0;
}

/* Append to buf at *len what fits, counting the full length in *len. */
static void put(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (buf != NULL && *len < cap) {
        size_t room = cap - *len;
        memcpy(buf + *len, s, n < room ? n : room);
    }
    *len += n;
}

/* The shortest %.{15,16,17}g that reads back as v. */
static void format_double(char *out, size_t cap, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* Writes what fits of the description into buf (NULL: nothing); returns
 * its full length. */
static size_t describe(char *buf, size_t cap, const struct simlsh_params *params)
{
    size_t n = 0;
    char num[64];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const key_info *k = &keys[i];
        if (i > 0)
            put(buf, cap, &n, " ");
        put(buf, cap, &n, k->name);
        put(buf, cap, &n, "=");
        if (k->type == T_DOUBLE) {
            double v = 0;
            simlsh_params_get_double(params, k->key, &v);
            format_double(num, sizeof num, v);
            put(buf, cap, &n, num);
            continue;
        }
        int64_t v = 0;
        simlsh_params_get_int(params, k->key, &v);
        int kind = k->key == SIMLSH_PARAM_UNIT          ? SIMLSH_KIND_UNIT
                   : k->key == SIMLSH_PARAM_UTF8_POLICY ? SIMLSH_KIND_UTF8_POLICY
                   : k->key == SIMLSH_PARAM_SCHEME      ? SIMLSH_KIND_SCHEME
                   : k->key == SIMLSH_PARAM_ISA         ? SIMLSH_KIND_ISA
                                                        : 0;
        const char *name = kind ? simlsh_constant_name(kind, v) : NULL;
        if (k->key == SIMLSH_PARAM_NORMALIZE) {
            const char *flag;
            int64_t bit;
            int first = 1;
            for (size_t j = 0; simlsh_constant_at(&bit, &flag, SIMLSH_KIND_NORMALIZE, j) == 0;
                 j++) {
                if (v & bit) {
                    if (!first)
                        put(buf, cap, &n, ",");
                    put(buf, cap, &n, flag);
                    first = 0;
                }
            }
            if (first)
                put(buf, cap, &n, "none");
        } else if (name != NULL) {
            put(buf, cap, &n, name);
        } else {
            snprintf(num, sizeof num, "%lld", (long long)v);
            put(buf, cap, &n, num);
        }
    }
    return n;
}

int simlsh_params_describe(char *buf, size_t cap, size_t *len, const simlsh_params *params)
{
    SIMLSH__CHECK_PARAMS(params);
    if (len == NULL)
        return SIMLSH_EINVAL;
    size_t n = describe(NULL, 0, params);
    *len = n;
    if (buf != NULL && cap < n + 1)
        return SIMLSH_EBUFSIZE; /* buf untouched */
    if (buf != NULL) {
        describe(buf, cap, params);
        buf[n] = '\0';
    }
    return 0;
}
