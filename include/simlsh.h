/*
 * simlsh: near-duplicate detection with shingling, MinHash and LSH banding.
 *
 * One public header. Every type is opaque; every call that can fail returns
 * an int: 0 on success, a negative SIMLSH_E* code on failure, and on failure
 * no object the call was given is changed. Out-parameters come first.
 *
 * Pipeline: simlsh_params (the hash contract) -> simlsh_shingleset (hashed
 * k-shingles of a document) -> simlsh_signature (MinHash) -> simlsh_index
 * (LSH band tables) -> simlsh_results (candidates, pairs, clusters).
 *
 * Objects never keep pointers into objects the caller owns: each copies what
 * it needs, so they may be freed in any order.
 */
#ifndef SIMLSH_H
#define SIMLSH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Export macros                                                            */
/* ------------------------------------------------------------------------ */

/* A tool that reads the header (an FFI generator, a parser) may define
 * SIMLSH_API, SIMLSH_OUT and SIMLSH_BORROWED itself, e.g. as nothing. */
#ifndef SIMLSH_API
#if defined(_WIN32) && defined(SIMLSH_BUILDING_SHARED)
#define SIMLSH_API __declspec(dllexport)
#elif defined(_WIN32) && defined(SIMLSH_USING_SHARED)
#define SIMLSH_API __declspec(dllimport)
#elif defined(__GNUC__) && __GNUC__ >= 4
#define SIMLSH_API __attribute__((visibility("default")))
#else
#define SIMLSH_API
#endif
#endif

/*
 * Annotations for binding generators; they expand to nothing.
 * SIMLSH_OUT marks a parameter the call writes through (an out-parameter or
 * an output buffer); a pointer parameter without it is only read, apart
 * from the handle the call works on. SIMLSH_BORROWED marks a returned
 * pointer into an object: valid until that object is next filled or freed.
 */
#ifndef SIMLSH_OUT
#define SIMLSH_OUT
#endif
#ifndef SIMLSH_BORROWED
#define SIMLSH_BORROWED
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define SIMLSH_VERSION_MAJOR 0
#define SIMLSH_VERSION_MINOR 2
#define SIMLSH_VERSION_PATCH 0
/** MAJOR * 10000 + MINOR * 100 + PATCH. */
#define SIMLSH_VERSION_NUMBER \
    (SIMLSH_VERSION_MAJOR * 10000 + SIMLSH_VERSION_MINOR * 100 + SIMLSH_VERSION_PATCH)

/** @return the run-time library version as MAJOR * 10000 + MINOR * 100 + PATCH.
 *  Threads: safe. */
SIMLSH_API unsigned int simlsh_version_number(void);
/** @return the run-time library version as "MAJOR.MINOR.PATCH" (static).
 *  Threads: safe. */
SIMLSH_API const char *simlsh_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * X(NAME, value, message). Released values are frozen and never reused.
 */
#define SIMLSH_ERRNO_MAP(X)                                                    \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOMEM, -2, "out of memory")                                             \
    X(EMISMATCH, -3, "contract mismatch: objects built with different params") \
    X(ECORRUPT, -4, "corrupt or truncated data")                               \
    X(EUNSUPPORTED, -5, "unsupported: feature not built in or format too new") \
    X(ENOTFOUND, -6, "not found")                                              \
    X(EEXIST, -7, "already exists")                                            \
    X(EEMPTY, -8, "empty input")                                               \
    X(EUTF8, -9, "invalid UTF-8")                                              \
    X(EBUFSIZE, -10, "buffer too small")                                       \
    X(ESTATE, -11, "call not valid in the object's current state")             \
    X(EIO, -12, "input/output error")

/** Error codes; 0 (SIMLSH_OK) is success. */
typedef enum simlsh_errno {
    SIMLSH_OK = 0,
#define SIMLSH_ERRNO_ENUM_(name, value, msg) SIMLSH_##name = value,
    SIMLSH_ERRNO_MAP(SIMLSH_ERRNO_ENUM_)
#undef SIMLSH_ERRNO_ENUM_
    SIMLSH_ERRNO_DUMMY_ = -10000 /* keeps the enum signed; not a code */
} simlsh_errno;
#ifndef __cplusplus
/* Its name up to 0.1.0, kept for C; C++ reserves every name with "__". */
#define SIMLSH__ERRNO_DUMMY SIMLSH_ERRNO_DUMMY_
#endif

/** @return a static English message for @p err ("unknown error" for values
 *  that are not codes). Never NULL. Threads: safe. */
SIMLSH_API const char *simlsh_strerror(int err);
/** @return the static name of @p err without the prefix, e.g. "EINVAL", "OK",
 *  or "UNKNOWN". Never NULL. Threads: safe. */
SIMLSH_API const char *simlsh_error_name(int err);

/* ------------------------------------------------------------------------ */
/* Allocator                                                                */
/* ------------------------------------------------------------------------ */

/**
 * Memory hooks. @c alloc returns @p size bytes aligned for any type, or NULL
 * on failure; @c free releases a block from @c alloc (never called with NULL).
 * Both get @c user. Passing a NULL allocator anywhere selects malloc/free.
 * Const calls that may run concurrently (index queries, pairs, cluster)
 * allocate scratch memory through the hooks, so hooks shared by threads must
 * be thread-safe.
 * The struct is copied; the hooks must stay valid while any object made with
 * them lives. Every object allocates and frees through the hooks it was made
 * with (params hand theirs to the objects built from them).
 */
typedef struct simlsh_allocator {
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} simlsh_allocator;

/**
 * Memory hooks whose @c free gets the block's size (for allocators that
 * need it, such as Rust's GlobalAlloc), set on params with
 * simlsh_params_set_allocator(). Since 0.2.
 *
 * @c alloc returns @p size bytes aligned for any type (alignof(max_align_t)),
 * or NULL; @c free releases a block from @c alloc and gets the @p size that
 * @c alloc was asked for (never called with NULL). Both get @c user.
 * Initialise with SIMLSH_ALLOCATOR_V2_INIT, which sets @c size to the size
 * the caller was compiled with, and leave @c reserved zero: later versions
 * add members there, and the library reads only the members @c size covers.
 *
 * Unlike simlsh_allocator, the struct is not copied: params and every object
 * built from them keep a pointer to it, so it must stay valid and unchanged
 * while any of them lives (a static const struct, typically).
 */
typedef struct simlsh_allocator_v2 {
    size_t size; /**< sizeof(simlsh_allocator_v2) */
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr, size_t size);
    void *user;
    void *reserved[4]; /**< must be NULL */
} simlsh_allocator_v2;

/** Initialiser for simlsh_allocator_v2: fill in alloc, free and user. */
#define SIMLSH_ALLOCATOR_V2_INIT                       \
    {                                                  \
        sizeof(simlsh_allocator_v2), NULL, NULL, NULL, \
        {                                              \
            NULL, NULL, NULL, NULL                     \
        }                                              \
    }

/* ------------------------------------------------------------------------ */
/* Params: the hash contract                                                */
/* ------------------------------------------------------------------------ */

/** Shingle units (key SIMLSH_PARAM_UNIT). */
enum {
    SIMLSH_UNIT_BYTE = 0, /**< bytes of the (normalised) text */
    SIMLSH_UNIT_CHAR = 1, /**< UTF-8 code points (default) */
    SIMLSH_UNIT_WORD = 2  /**< runs of non-separators; k words joined by ' ' */
};

/** Normalisation flags (key SIMLSH_PARAM_NORMALIZE, a bitmask). */
enum {
    SIMLSH_NORM_LOWER_ASCII = 1,    /**< A-Z -> a-z */
    SIMLSH_NORM_COLLAPSE_SPACE = 2, /**< whitespace runs -> one ' ', trimmed */
    SIMLSH_NORM_STRIP_PUNCT = 4,    /**< drop punctuation characters */
    SIMLSH_NORM_CASEFOLD = 8,       /**< Unicode case folding (utf8proc) */
    SIMLSH_NORM_NFKC = 16           /**< Unicode NFKC (utf8proc) */
};

/** Invalid UTF-8 policies (key SIMLSH_PARAM_UTF8_POLICY). */
enum {
    SIMLSH_UTF8_REPLACE = 0, /**< each maximal invalid subpart -> U+FFFD */
    SIMLSH_UTF8_REJECT = 1   /**< fail with SIMLSH_EUTF8 */
};

/** Signature schemes (key SIMLSH_PARAM_SCHEME). */
enum {
    SIMLSH_SCHEME_OPH = 0,    /**< one-permutation hashing, optimal densification */
    SIMLSH_SCHEME_CLASSIC = 1 /**< num_perm independent multiply-shift hashes */
};

/** Instruction sets for the hot loops (key SIMLSH_PARAM_ISA). */
enum {
    SIMLSH_ISA_AUTO = 0,
    SIMLSH_ISA_SCALAR = 1,
    SIMLSH_ISA_AVX2 = 2,
    SIMLSH_ISA_AVX512 = 3
};

/** Fingerprint scopes for simlsh_params_fingerprint(). */
enum {
    SIMLSH_SCOPE_SHINGLES = 0,  /**< unit, k, normalize, utf8 policy, seed, hash bits */
    SIMLSH_SCOPE_SIGNATURE = 1, /**< the above plus num_perm and scheme */
    SIMLSH_SCOPE_INDEX = 2      /**< the above plus bands, rows (resolved) */
};

/**
 * Parameter keys. Integer keys use simlsh_params_set_int(), double keys
 * simlsh_params_set_double(); the other setter fails with SIMLSH_EINVAL.
 *
 * | key                | type   | range              | default |
 * |--------------------|--------|--------------------|---------|
 * | UNIT               | int    | SIMLSH_UNIT_*      | CHAR    |
 * | K                  | int    | 1..64              | 5       |
 * | NORMALIZE          | int    | 0..31 (flags)      | 0       |
 * | UTF8_POLICY        | int    | SIMLSH_UTF8_*      | REPLACE |
 * | SEED               | int    | 0..2^32-1          | 0       |
 * | HASH_BITS          | int    | 32 or 64           | 32      |
 * | NUM_PERM           | int    | 1..1024            | 128     |
 * | SCHEME             | int    | SIMLSH_SCHEME_*    | OPH     |
 * | BANDS              | int    | 0..1024 (0 = auto) | 0       |
 * | ROWS               | int    | 0..1024 (0 = auto) | 0       |
 * | STORE_SIGNATURES   | int    | 0 or 1             | 1       |
 * | ISA                | int    | SIMLSH_ISA_*       | AUTO    |
 * | THRESHOLD          | double | (0, 1]             | 0.8     |
 * | FP_WEIGHT          | double | 0..1e6             | 0.5     |
 * | FN_WEIGHT          | double | 0..1e6             | 0.5     |
 *
 * With BANDS and ROWS both 0 the index picks (b, r) by
 * simlsh_lsh_optimal_params() from THRESHOLD and the weights. ISA is not part
 * of the contract: every path gives identical bits.
 */
enum {
    SIMLSH_PARAM_UNIT = 1,
    SIMLSH_PARAM_K = 2,
    SIMLSH_PARAM_NORMALIZE = 3,
    SIMLSH_PARAM_UTF8_POLICY = 4,
    SIMLSH_PARAM_SEED = 5,
    SIMLSH_PARAM_HASH_BITS = 6,
    SIMLSH_PARAM_NUM_PERM = 7,
    SIMLSH_PARAM_SCHEME = 8,
    SIMLSH_PARAM_BANDS = 9,
    SIMLSH_PARAM_ROWS = 10,
    SIMLSH_PARAM_STORE_SIGNATURES = 11,
    SIMLSH_PARAM_ISA = 12,
    SIMLSH_PARAM_THRESHOLD = 13,
    SIMLSH_PARAM_FP_WEIGHT = 14,
    SIMLSH_PARAM_FN_WEIGHT = 15
};

typedef struct simlsh_params simlsh_params;

/**
 * Create params holding the defaults.
 * @param out   receives the new params (set to NULL on failure).
 * @param alloc memory hooks for the params and every object built from them,
 *              or NULL for malloc/free.
 * @return 0, SIMLSH_EINVAL (out NULL or incomplete hooks), SIMLSH_ENOMEM.
 * Threads: params are plain values; setters need exclusive access, and
 * objects copy the params, so later changes never affect them.
 */
SIMLSH_API int simlsh_params_new(SIMLSH_OUT simlsh_params **out, const simlsh_allocator *alloc);
/** Free params; NULL is a no-op. */
SIMLSH_API void simlsh_params_free(simlsh_params *params);
/** Copy @p src (with its allocator) into a new params object.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_params_copy(SIMLSH_OUT simlsh_params **out, const simlsh_params *src);
/** Set an integer key. Out-of-range values, unknown keys and double keys give
 *  SIMLSH_EINVAL, and so does the setter that would pair the byte unit with
 *  a Unicode normalisation flag (CASEFOLD, NFKC need code points), in either
 *  order; Unicode normalisation flags without utf8proc, or an ISA the CPU
 *  lacks, give SIMLSH_EUNSUPPORTED. On error the params are unchanged. */
SIMLSH_API int simlsh_params_set_int(simlsh_params *params, int key, int64_t value);
/** Read an integer key. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_params_get_int(const simlsh_params *params, int key, SIMLSH_OUT int64_t *out);
/** Set a double key (NaN and out-of-range values give SIMLSH_EINVAL). */
SIMLSH_API int simlsh_params_set_double(simlsh_params *params, int key, double value);
/** Read a double key. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_params_get_double(const simlsh_params *params, int key,
                                        SIMLSH_OUT double *out);
/** Bounds of an integer key (inclusive). @return 0 or SIMLSH_EINVAL. Threads: safe. */
SIMLSH_API int simlsh_params_int_bounds(int key, SIMLSH_OUT int64_t *min, SIMLSH_OUT int64_t *max);
/** Bounds of a double key; THRESHOLD's lower bound is exclusive.
 *  @return 0 or SIMLSH_EINVAL. Threads: safe. */
SIMLSH_API int simlsh_params_double_bounds(int key, SIMLSH_OUT double *min, SIMLSH_OUT double *max);
/** @return the static lower-case name of @p key ("k", "num_perm", ...) or
 *  NULL for an unknown key. Threads: safe. */
SIMLSH_API const char *simlsh_params_key_name(int key);
/**
 * 64-bit fingerprint of the contract fields of @p scope (SIMLSH_SCOPE_*).
 * Objects record it; combining objects with different fingerprints fails with
 * SIMLSH_EMISMATCH. For SIMLSH_SCOPE_INDEX the bands and rows are resolved
 * first, so the call may fail as simlsh_index_new() would.
 * @return 0 or SIMLSH_EINVAL.
 */
SIMLSH_API int simlsh_params_fingerprint(SIMLSH_OUT uint64_t *out, const simlsh_params *params,
                                         int scope);

/**
 * Objects built from @p params from now on allocate and free through
 * @p alloc (the params object itself keeps the hooks it was made with).
 * @p alloc is kept by reference (see simlsh_allocator_v2); NULL selects
 * malloc/free. Since 0.2.
 * @return 0, or SIMLSH_EINVAL (wrong handle, @c size smaller than this
 * library's struct, a NULL hook, a non-NULL reserved word); on error the
 * params are unchanged.
 * Threads: needs exclusive access to @p params.
 */
SIMLSH_API int simlsh_params_set_allocator(simlsh_params *params, const simlsh_allocator_v2 *alloc);
/**
 * Set every key of @p params to the named preset (the allocator is kept):
 *  - "default": the library's defaults (the table above);
 *  - "dedup": the shingling and threshold simlsh-dedup uses when no option
 *    is given: the defaults with NORMALIZE = LOWER_ASCII | COLLAPSE_SPACE,
 *    FP_WEIGHT 0.1 and FN_WEIGHT 0.9 (docs/cli.md says why). BANDS and ROWS
 *    stay automatic, which is the banding of `--verify estimate`; under its
 *    default exact verification the tool sets them with
 *    simlsh_dedup_banding() at its --recall (0.99), since verification
 *    removes every false positive (16 x 6 at 0.8).
 * simlsh_constant_at(SIMLSH_KIND_PRESET, ...) lists the names. Since 0.2.
 * @return 0, SIMLSH_EINVAL (wrong handle, NULL name), SIMLSH_ENOTFOUND
 * (unknown name; the params are unchanged).
 * Threads: needs exclusive access to @p params.
 */
SIMLSH_API int simlsh_params_preset(simlsh_params *params, const char *name);
/**
 * The whole contract as one line of text: every key in key order as
 * "name=value" separated by single spaces, enumerated values by their
 * run-time names (simlsh_constant_name()), NORMALIZE as a comma list of
 * flag names or "none", doubles in the shortest form that reads back
 * exactly, e.g. "unit=char k=5 normalize=lower,space ... fn_weight=0.9".
 * @p *len receives the length without the terminating NUL; @p buf NULL is
 * a size query; otherwise @p cap must be at least @p *len + 1. Since 0.2.
 * @return 0, SIMLSH_EINVAL, SIMLSH_EBUFSIZE.
 * Threads: safe with other const calls on @p params.
 */
SIMLSH_API int simlsh_params_describe(SIMLSH_OUT char *buf, size_t cap, SIMLSH_OUT size_t *len,
                                      const simlsh_params *params);

/**
 * Kinds of named constants, for simlsh_constant_name(),
 * simlsh_constant_value() and simlsh_constant_at(). Names are lower case
 * and stable, as in simlsh-dedup's options; errors use simlsh_error_name().
 */
enum {
    SIMLSH_KIND_ERROR = 1,       /**< SIMLSH_OK and SIMLSH_E*: "OK", "EINVAL", ... */
    SIMLSH_KIND_PARAM = 2,       /**< SIMLSH_PARAM_*: "unit", "k", ... */
    SIMLSH_KIND_UNIT = 3,        /**< "byte", "char", "word" */
    SIMLSH_KIND_NORMALIZE = 4,   /**< flags: "lower", "space", "punct", "casefold", "nfkc" */
    SIMLSH_KIND_UTF8_POLICY = 5, /**< "replace", "reject" */
    SIMLSH_KIND_SCHEME = 6,      /**< "oph", "classic" */
    SIMLSH_KIND_ISA = 7,         /**< "auto", "scalar", "avx2", "avx512" */
    SIMLSH_KIND_SCOPE = 8,       /**< "shingles", "signature", "index" */
    SIMLSH_KIND_QUERY_FLAG = 9,  /**< "verify" */
    SIMLSH_KIND_PRESET = 10,     /**< simlsh_params_preset() names; values 0, 1, ... */
    /** enum simlsh_dedup_mode: "none", "estimate", "exact". Since 0.3. */
    SIMLSH_KIND_DEDUP_MODE = 11,
    /** enum simlsh_dedup_key: "threads", "memory", "prefilter", "keep_below",
     *  "giant", "giant_cost", "cluster", "link_kept", "sample_memory". Since 0.3. */
    SIMLSH_KIND_DEDUP_KEY = 12,
    /** enum simlsh_dedup_stat: "visits", "candidates", "exact", "identical",
     *  "estimated", "texts", "batches", "set_bytes", "groups", "members",
     *  "edits", "set_aside", "set_aside_members", "sampled". Since 0.3. */
    SIMLSH_KIND_DEDUP_STAT = 13,
    /** enum simlsh_dedup_cluster: "star", "components". Since 0.3. */
    SIMLSH_KIND_DEDUP_CLUSTER = 14
};

/** @return the static name of @p value among the constants of @p kind
 *  (SIMLSH_KIND_*), or NULL when it has none. Since 0.2. Threads: safe. */
SIMLSH_API const char *simlsh_constant_name(int kind, int64_t value);
/** The value of the constant of @p kind named @p name (exact, case
 *  sensitive). Since 0.2. @return 0, SIMLSH_EINVAL (unknown kind, NULL),
 *  SIMLSH_ENOTFOUND (no such name). Threads: safe. */
SIMLSH_API int simlsh_constant_value(SIMLSH_OUT int64_t *out, int kind, const char *name);
/** The @p i-th constant of @p kind (in increasing value order, errors from
 *  0 down), to enumerate them all. Either out pointer may be NULL. Since
 *  0.2. @return 0, SIMLSH_EINVAL (unknown kind), SIMLSH_ENOTFOUND (@p i past
 *  the last). Threads: safe. */
SIMLSH_API int simlsh_constant_at(SIMLSH_OUT int64_t *value, SIMLSH_OUT const char **name, int kind,
                                  size_t i);

/** @return 1 if this CPU and build can run @p isa (SIMLSH_ISA_*), else 0.
 *  SIMLSH_ISA_AUTO and SIMLSH_ISA_SCALAR always give 1. Threads: safe. */
SIMLSH_API int simlsh_isa_supported(int isa);
/** @return 1 if the library was built with utf8proc (Unicode normalisation
 *  and Unicode word separators), else 0. Threads: safe. */
SIMLSH_API int simlsh_has_unicode(void);

/**
 * Hash bytes exactly as the shingler hashes a shingle: MurmurHash3 x86_32
 * (HASH_BITS 32, zero-extended) or the low 64 bits of MurmurHash3 x64_128
 * (HASH_BITS 64), with the contract's seed. Use it to make raw features that
 * mix with shingles. @return 0 or SIMLSH_EINVAL (data NULL with len > 0).
 * Threads: safe with other const calls on @p params.
 */
SIMLSH_API int simlsh_hash_bytes(SIMLSH_OUT uint64_t *out, const simlsh_params *params,
                                 const void *data, size_t len);

/* ------------------------------------------------------------------------ */
/* Shingle sets                                                             */
/* ------------------------------------------------------------------------ */

/**
 * The set of hashed k-shingles of one or more documents: a sorted array of
 * unique 64-bit values.
 *
 * A document arrives with begin / feed* / end (or add_text in one call); the
 * result does not depend on where the chunks split the text. A document of
 * fewer than k units yields one shingle (all its units); an empty document
 * yields nothing. Adding several documents gives the union of their sets.
 * Reading the set (count, hashes, jaccard, save, copy) between begin and end
 * fails with SIMLSH_ESTATE.
 *
 * Threads: one writer; concurrent readers are safe when nobody writes.
 */
typedef struct simlsh_shingleset simlsh_shingleset;

/** Create an empty set with a copy of @p params' shingling contract.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_new(SIMLSH_OUT simlsh_shingleset **out,
                                     const simlsh_params *params);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_shingleset_free(simlsh_shingleset *set);
/** Deep copy (same allocator). @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_copy(SIMLSH_OUT simlsh_shingleset **out,
                                      const simlsh_shingleset *src);
/** Start a document. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE (already started). */
SIMLSH_API int simlsh_shingleset_begin(simlsh_shingleset *set);
/** Feed the next @p len bytes of the document. With SIMLSH_UTF8_REJECT an
 *  invalid sequence fails with SIMLSH_EUTF8 and the chunk is not consumed
 *  (the document stays open). On SIMLSH_ENOMEM the document is abandoned and
 *  the set is as it was before begin.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE (no document), SIMLSH_EUTF8, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_feed(simlsh_shingleset *set, const void *data, size_t len);
/** Finish the document (a truncated UTF-8 sequence at the end is invalid).
 *  After SIMLSH_EUTF8 the document stays open (abort it or feed more); after
 *  SIMLSH_ENOMEM it is abandoned as for feed.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EUTF8, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_end(simlsh_shingleset *set);
/** begin + feed + end. On error the set is unchanged. */
SIMLSH_API int simlsh_shingleset_add_text(simlsh_shingleset *set, const void *text, size_t len);
/** Abandon the document in progress, dropping the shingles it added.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE (no document). */
SIMLSH_API int simlsh_shingleset_abort(simlsh_shingleset *set);
/** Add raw caller features (used as hashes, not hashed again).
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_add_features(simlsh_shingleset *set, const uint64_t *features,
                                              size_t n);
/** Empty the set (and any document in progress), keeping its memory.
 *  @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_shingleset_clear(simlsh_shingleset *set);
/** Number of distinct hashes. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE. */
SIMLSH_API int simlsh_shingleset_count(SIMLSH_OUT size_t *out, const simlsh_shingleset *set);
/**
 * Copy the sorted hashes into @p buf. @p *count receives the number of
 * hashes. With @p buf NULL only the count is stored (size query).
 * @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EBUFSIZE (@p cap too small;
 * @p *count still set, nothing copied).
 */
SIMLSH_API int simlsh_shingleset_hashes(SIMLSH_OUT uint64_t *buf, size_t cap,
                                        SIMLSH_OUT size_t *count, const simlsh_shingleset *set);
/**
 * The hash of every k-shingle of @p text, in text order with repeats:
 * what simlsh_shingleset_add_text() would add to @p set, without the sort
 * and the removal of repeats that make them a set (they cost several times
 * the hashing). For callers that need only membership, e.g. an exact
 * Jaccard through a hash table. @p set supplies the shingling (its params)
 * and working space; its content is unchanged. Up to @p cap hashes go to
 * @p buf and @p *count receives their total number; with more than @p cap
 * the call returns SIMLSH_EBUFSIZE, and a call with a larger buffer gets
 * them all (there are usually at most @p len + 1: normalisation can make
 * more units than bytes). With @p buf NULL only the count is stored (size
 * query). Since 0.2.
 * @return 0, SIMLSH_EINVAL (NULL @p set or @p count, NULL @p text with
 * @p len > 0), SIMLSH_ESTATE (@p set is in a document), SIMLSH_EUTF8
 * (REJECT policy, invalid UTF-8), SIMLSH_ENOMEM, SIMLSH_EBUFSIZE.
 * Threads: needs exclusive access to @p set.
 */
SIMLSH_API int simlsh_shingleset_text_hashes(SIMLSH_OUT uint64_t *buf, size_t cap,
                                             SIMLSH_OUT size_t *count, simlsh_shingleset *set,
                                             const void *text, size_t len);
/** Exact Jaccard |A∩B|/|A∪B| by a linear merge; two empty sets give 1.0,
 *  one empty set gives 0.0. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EMISMATCH. */
SIMLSH_API int simlsh_shingleset_jaccard(SIMLSH_OUT double *out, const simlsh_shingleset *a,
                                         const simlsh_shingleset *b);
/** Containment |A∩B|/|A| of @p a in @p b; an empty @p a gives 1.0.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EMISMATCH. */
SIMLSH_API int simlsh_shingleset_containment(SIMLSH_OUT double *out, const simlsh_shingleset *a,
                                             const simlsh_shingleset *b);
/** A new params object holding the set's contract (the params it was made
 *  with, or read from its bytes), with the set's allocator: use it to build
 *  objects that must match a loaded set. @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_params(SIMLSH_OUT simlsh_params **out,
                                        const simlsh_shingleset *set);
/** The set's SIMLSH_SCOPE_SHINGLES fingerprint. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_shingleset_fingerprint(SIMLSH_OUT uint64_t *out,
                                             const simlsh_shingleset *set);
/**
 * Serialise (docs/format.md). @p *size receives the byte size; with @p buf
 * NULL only the size is stored. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE,
 * SIMLSH_EBUFSIZE.
 */
SIMLSH_API int simlsh_shingleset_save(SIMLSH_OUT void *buf, size_t cap, SIMLSH_OUT size_t *size,
                                      const simlsh_shingleset *set);
/** Load a serialised set (its contract travels with it). @p alloc as in
 *  simlsh_params_new(). @return 0, SIMLSH_EINVAL, SIMLSH_ECORRUPT,
 *  SIMLSH_EUNSUPPORTED (newer format or Unicode flags without utf8proc), SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_shingleset_load(SIMLSH_OUT simlsh_shingleset **out, const void *buf,
                                      size_t len, const simlsh_allocator *alloc);

/* ------------------------------------------------------------------------ */
/* Signatures                                                               */
/* ------------------------------------------------------------------------ */

/**
 * A MinHash signature of num_perm 32-bit values. It keeps the raw per-row
 * minima, so adding more input (text, features, shingle sets, or another
 * signature with simlsh_signature_merge()) always gives the signature of the
 * union; the exported values are densified (SIMLSH_SCHEME_OPH) on the fly.
 *
 * Streaming text (begin / feed* / end, or add_text) gives the same bits as
 * building a shingle set of the same text and adding it.
 *
 * Threads: one writer; once built, any number of readers may share it.
 */
typedef struct simlsh_signature simlsh_signature;

/** Create an empty signature for @p params (num_perm, scheme, shingling).
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_signature_new(SIMLSH_OUT simlsh_signature **out, const simlsh_params *params);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_signature_free(simlsh_signature *sig);
/** Deep copy. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_signature_copy(SIMLSH_OUT simlsh_signature **out,
                                     const simlsh_signature *src);
/** Start streaming a document. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE. */
SIMLSH_API int simlsh_signature_begin(simlsh_signature *sig);
/** Feed document bytes; as simlsh_shingleset_feed(). */
SIMLSH_API int simlsh_signature_feed(simlsh_signature *sig, const void *data, size_t len);
/** Finish the document; as simlsh_shingleset_end(). */
SIMLSH_API int simlsh_signature_end(simlsh_signature *sig);
/** begin + feed + end; on error the signature is unchanged. */
SIMLSH_API int simlsh_signature_add_text(simlsh_signature *sig, const void *text, size_t len);
/** Abandon the document in progress, restoring the signature as before begin.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE. */
SIMLSH_API int simlsh_signature_abort(simlsh_signature *sig);
/** Add raw features, exactly as simlsh_shingleset_add_features() would.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE. */
SIMLSH_API int simlsh_signature_add_features(simlsh_signature *sig, const uint64_t *features,
                                             size_t n);
/** Add every hash of @p set. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EMISMATCH. */
SIMLSH_API int simlsh_signature_add_shingleset(simlsh_signature *sig, const simlsh_shingleset *set);
/** @p dst becomes the signature of the union: element-wise minimum of the raw
 *  rows. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EMISMATCH. */
SIMLSH_API int simlsh_signature_merge(simlsh_signature *dst, const simlsh_signature *src);
/** Reset to the empty signature. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_signature_clear(simlsh_signature *sig);
/**
 * Estimated Jaccard: the fraction of equal values. Two empty signatures give
 * 1.0 (equal empty sets); one empty and one not give 0.0.
 * @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EMISMATCH.
 */
SIMLSH_API int simlsh_signature_jaccard(SIMLSH_OUT double *out, const simlsh_signature *a,
                                        const simlsh_signature *b);
/** @return 1 if nothing was added, 0 if not, SIMLSH_EINVAL for NULL. */
SIMLSH_API int simlsh_signature_is_empty(const simlsh_signature *sig);
/** @return num_perm (> 0), or SIMLSH_EINVAL for NULL. */
SIMLSH_API int simlsh_signature_num_perm(const simlsh_signature *sig);
/**
 * Copy the num_perm values (densified for OPH) into @p buf; @p *count
 * receives num_perm; @p buf NULL is a size query. An empty signature has all
 * values 0xFFFFFFFF. @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE, SIMLSH_EBUFSIZE.
 */
SIMLSH_API int simlsh_signature_values(SIMLSH_OUT uint32_t *buf, size_t cap,
                                       SIMLSH_OUT size_t *count, const simlsh_signature *sig);
/**
 * The signature's @p bands band keys for @p rows rows per band, into
 * @p keys[0 .. bands-1]: key of band i = a 64-bit hash of the band number and
 * values [i*rows, (i+1)*rows) (docs/format.md gives the function). The index
 * buckets on exactly these keys.
 * @return 0, SIMLSH_EINVAL (bands*rows > num_perm, zero, NULL),
 * SIMLSH_EBUFSIZE (@p cap < bands), SIMLSH_ESTATE, SIMLSH_EEMPTY (empty signature).
 */
SIMLSH_API int simlsh_signature_band_keys(SIMLSH_OUT uint64_t *keys, size_t cap,
                                          const simlsh_signature *sig, uint32_t bands,
                                          uint32_t rows);
/** A new params object holding the signature's contract; as
 *  simlsh_shingleset_params(). @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_signature_params(SIMLSH_OUT simlsh_params **out, const simlsh_signature *sig);
/** The SIMLSH_SCOPE_SIGNATURE fingerprint. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_signature_fingerprint(SIMLSH_OUT uint64_t *out, const simlsh_signature *sig);
/** Serialise; as simlsh_shingleset_save(). */
SIMLSH_API int simlsh_signature_save(SIMLSH_OUT void *buf, size_t cap, SIMLSH_OUT size_t *size,
                                     const simlsh_signature *sig);
/** Load; as simlsh_shingleset_load(). */
SIMLSH_API int simlsh_signature_load(SIMLSH_OUT simlsh_signature **out, const void *buf, size_t len,
                                     const simlsh_allocator *alloc);
/**
 * A signature holding @p values, the inverse of simlsh_signature_values():
 * its values() give @p values back, and jaccard(), band keys, save() and
 * index calls treat it as the signature those values came from. Use it for
 * values computed elsewhere or kept in a column store.
 * @p values are densified values: num_perm entries, each below 0xFFFFFFFF,
 * or all 0xFFFFFFFF for the empty signature.
 * merge() takes the element-wise minimum of raw rows, and the raw rows of
 * this signature are @p values: merging two signatures made from values gives
 * the element-wise minimum of their values (the union for SIMLSH_SCHEME_CLASSIC
 * and for OPH signatures with no empty bin), while merging one with an OPH
 * signature of a small set is an estimate, not the signature of the union,
 * because densified values stand in for bins the set left empty.
 * Text and features may be added later, as to any signature.
 * @param params the contract the values were made with (copied).
 * @param n      must equal the params' num_perm.
 * @return 0, SIMLSH_EINVAL (NULL, @p n != num_perm, 0xFFFFFFFF in some
 * entries but not all), SIMLSH_EUNSUPPORTED (as simlsh_signature_new()),
 * SIMLSH_ENOMEM. Threads: safe on distinct outputs.
 */
SIMLSH_API int simlsh_signature_from_values(SIMLSH_OUT simlsh_signature **out,
                                            const simlsh_params *params, const uint32_t *values,
                                            size_t n);

/* ------------------------------------------------------------------------ */
/* Banding math                                                             */
/* ------------------------------------------------------------------------ */

/** P(s) = 1 - (1 - s^r)^b: probability that two documents of Jaccard @p s
 *  share a bucket. @return 0 or SIMLSH_EINVAL (b or r 0, s outside [0,1]). Threads: safe. */
SIMLSH_API int simlsh_lsh_probability(SIMLSH_OUT double *out, uint32_t bands, uint32_t rows,
                                      double s);
/** Approximate threshold (1/b)^(1/r). @return 0 or SIMLSH_EINVAL. Threads: safe. */
SIMLSH_API int simlsh_lsh_threshold(SIMLSH_OUT double *out, uint32_t bands, uint32_t rows);
/** The similarity where P(s) = 1/2 exactly. @return 0 or SIMLSH_EINVAL. Threads: safe. */
SIMLSH_API int simlsh_lsh_threshold_exact(SIMLSH_OUT double *out, uint32_t bands, uint32_t rows);
/** False-positive area: integral of P(s) over [0, t]. @return 0 or SIMLSH_EINVAL. Threads: safe. */
SIMLSH_API int simlsh_lsh_false_positive_area(SIMLSH_OUT double *out, uint32_t bands, uint32_t rows,
                                              double t);
/** False-negative area: integral of 1 - P(s) over [t, 1]. @return 0 or SIMLSH_EINVAL.
 *  Threads: safe. */
SIMLSH_API int simlsh_lsh_false_negative_area(SIMLSH_OUT double *out, uint32_t bands, uint32_t rows,
                                              double t);
/**
 * Choose (b, r) with b*r <= @p num_perm minimising
 * w_fp * FP(t) + w_fn * FN(t) by exhaustive search; ties go to fewer unused
 * rows, then fewer bands. @p unused receives num_perm - b*r (may be NULL).
 * @return 0 or SIMLSH_EINVAL (t outside (0,1], num_perm 0 or above 1024,
 * negative or both zero weights).
 * Threads: safe (a pure function).
 */
SIMLSH_API int simlsh_lsh_optimal_params(SIMLSH_OUT uint32_t *bands, SIMLSH_OUT uint32_t *rows,
                                         SIMLSH_OUT uint32_t *unused, uint32_t num_perm, double t,
                                         double w_fp, double w_fn);

/* ------------------------------------------------------------------------ */
/* Results                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Rows of (a, b, score) filled by index calls:
 *  - simlsh_index_query(): a = id, b = 0, score = estimated Jaccard (-1 when
 *    the index stores no signatures); sorted by id.
 *  - simlsh_index_query_batch(): as above with b = the query's position;
 *    rows of query q are [simlsh_results_offset(q), simlsh_results_offset(q+1)).
 *  - simlsh_index_pairs(): a < b ids, score as for queries; sorted by (a, b),
 *    so a limit keeps a well-defined prefix.
 *  - simlsh_index_cluster(): a = id, b = cluster label (smallest id of the
 *    cluster), score = -1; sorted by id.
 * Each call replaces the previous content, reusing memory.
 * Threads: one owner, which may hand it to another thread (no object has
 * thread affinity); the reading calls (count, row, the columns, offset) may
 * run concurrently while nothing fills or frees it.
 */
typedef struct simlsh_results simlsh_results;

/** @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. @p alloc may be NULL. */
SIMLSH_API int simlsh_results_new(SIMLSH_OUT simlsh_results **out, const simlsh_allocator *alloc);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_results_free(simlsh_results *res);
/** @return the number of rows (0 for NULL or a handle of another type). */
SIMLSH_API size_t simlsh_results_count(const simlsh_results *res);
/** Row @p i. Any out pointer may be NULL. @return 0 or SIMLSH_EINVAL (i out of range). */
SIMLSH_API int simlsh_results_row(const simlsh_results *res, size_t i, SIMLSH_OUT uint64_t *a,
                                  SIMLSH_OUT uint64_t *b, SIMLSH_OUT double *score);
/** Column a of all rows (the matched id, the smaller id of a pair, or the
 *  clustered id; see simlsh_results): a borrowed array of
 *  simlsh_results_count() entries, valid until the next call that fills or
 *  frees @p res. Never NULL: an empty column (no rows, or @p res NULL or
 *  not a results handle) is a valid pointer to read zero entries from. */
SIMLSH_API SIMLSH_BORROWED const uint64_t *simlsh_results_a(const simlsh_results *res);
/** Column b of all rows (0 for a single query, the query's position for a
 *  batch, the larger id of a pair, the cluster label): a borrowed array of
 *  simlsh_results_count() entries, valid until the next call that fills or
 *  frees @p res. Never NULL: an empty column (no rows, or @p res NULL or
 *  not a results handle) is a valid pointer to read zero entries from. */
SIMLSH_API SIMLSH_BORROWED const uint64_t *simlsh_results_b(const simlsh_results *res);
/** The scores of all rows (estimated Jaccard similarity, or -1 without
 *  stored signatures and for clusters): a borrowed array of
 *  simlsh_results_count() entries, valid until the next call that fills or
 *  frees @p res. Never NULL: an empty column (no rows, or @p res NULL or
 *  not a results handle) is a valid pointer to read zero entries from. */
SIMLSH_API SIMLSH_BORROWED const double *simlsh_results_scores(const simlsh_results *res);
/** Batch queries: first row of query @p q (q == number of queries gives the
 *  row count). After a single query there is one query (offset(1) is the
 *  row count); after pairs or cluster there are none (offset(0) is the row
 *  count). @return 0 or SIMLSH_EINVAL (q beyond the number of queries). */
SIMLSH_API int simlsh_results_offset(SIMLSH_OUT size_t *out, const simlsh_results *res, size_t q);
/** @return 1 if the last fill stopped at a caller limit, 0 otherwise,
 *  SIMLSH_EINVAL when @p res is NULL or not a results handle. */
SIMLSH_API int simlsh_results_truncated(const simlsh_results *res);

/* ------------------------------------------------------------------------ */
/* LSH index                                                                */
/* ------------------------------------------------------------------------ */

/** Query and enumeration flags. */
enum {
    SIMLSH_QUERY_VERIFY = 1 /**< keep only ids with estimate >= threshold
                                 (needs STORE_SIGNATURES) */
};

/**
 * b band tables mapping band keys to caller-chosen uint64_t ids, with the
 * signatures stored when STORE_SIGNATURES is 1 (needed for verification,
 * scores and remove()). Band entries keep a 32-bit fingerprint of the band
 * key: with stored signatures a bucket match is confirmed on the rows
 * themselves; without them two different keys with equal fingerprints
 * (about n^2 / 2^33 pairs per band for n documents) add extra candidates.
 * An index holds at most 2^30 documents (more gives SIMLSH_ENOMEM).
 *
 * Threads: any number of concurrent const calls (queries, pairs, cluster,
 * save, memory, userdata, copy, being the source of a merge); insert, remove,
 * reserve, clear, set_userdata and merge into the index need exclusive access.
 */
typedef struct simlsh_index simlsh_index;

/** Create an index; (b, r) come from BANDS/ROWS or, when both are 0, from
 *  the optimiser. @return 0, SIMLSH_EINVAL (b*r > num_perm, one of b/r 0),
 *  SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_index_new(SIMLSH_OUT simlsh_index **out, const simlsh_params *params);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_index_free(simlsh_index *index);
/** The resolved bands and rows. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_index_bands(SIMLSH_OUT uint32_t *bands, SIMLSH_OUT uint32_t *rows,
                                  const simlsh_index *index);
/** A new params object holding the index's contract with bands and rows
 *  resolved (so a loaded index tells how to sign queries for it); as
 *  simlsh_shingleset_params(). @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_index_params(SIMLSH_OUT simlsh_params **out, const simlsh_index *index);
/** The SIMLSH_SCOPE_INDEX fingerprint. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_index_fingerprint(SIMLSH_OUT uint64_t *out, const simlsh_index *index);
/** Insert @p sig under @p id. @return 0, SIMLSH_EINVAL, SIMLSH_EMISMATCH,
 *  SIMLSH_EEXIST (id present), SIMLSH_EEMPTY (empty signature),
 *  SIMLSH_ESTATE, SIMLSH_ENOMEM; on error the index is unchanged. */
SIMLSH_API int simlsh_index_insert(simlsh_index *index, uint64_t id, const simlsh_signature *sig);
/** Remove @p id. @return 0, SIMLSH_EINVAL, SIMLSH_ENOTFOUND,
 *  SIMLSH_EUNSUPPORTED (no stored signatures). */
SIMLSH_API int simlsh_index_remove(simlsh_index *index, uint64_t id);
/** @return 1 if @p id is present, 0 if not, SIMLSH_EINVAL for NULL. */
SIMLSH_API int simlsh_index_contains(const simlsh_index *index, uint64_t id);
/**
 * The stored signature of @p id, as a new signature with the index's
 * contract, made by simlsh_signature_from_values() from the stored values
 * (so the same jaccard(), band keys and queries as the inserted one; merge()
 * as described there).
 * @return 0, SIMLSH_EINVAL (NULL), SIMLSH_EUNSUPPORTED (the index stores no
 * signatures), SIMLSH_ENOTFOUND (no such id), SIMLSH_ENOMEM.
 * Threads: a const call, like queries.
 */
SIMLSH_API int simlsh_index_signature(SIMLSH_OUT simlsh_signature **out, const simlsh_index *index,
                                      uint64_t id);
/** Number of ids. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_index_count(SIMLSH_OUT size_t *out, const simlsh_index *index);
/** Make room for @p n ids in total. @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_index_reserve(simlsh_index *index, size_t n);
/** Remove every id, keeping the tables' memory (overflow lists of large
 *  buckets are released). @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_index_clear(simlsh_index *index);
/** Bytes the index holds, in total and (optional) in band tables alone.
 *  @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_index_memory(SIMLSH_OUT size_t *total, SIMLSH_OUT size_t *band_tables,
                                   const simlsh_index *index);
/**
 * Ids sharing at least one band bucket with @p sig, each once, sorted by id.
 * @p flags: SIMLSH_QUERY_VERIFY. An empty @p sig gives no rows.
 * @return 0, SIMLSH_EINVAL, SIMLSH_EMISMATCH, SIMLSH_EUNSUPPORTED (verify
 * without stored signatures), SIMLSH_ESTATE, SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_index_query(simlsh_results *res, const simlsh_index *index,
                                  const simlsh_signature *sig, int flags);
/** As simlsh_index_query() into a caller buffer of @p cap ids; @p *count
 *  receives the number of ids; @p ids NULL is a size query.
 *  @return as simlsh_index_query(), or SIMLSH_EBUFSIZE. */
SIMLSH_API int simlsh_index_query_ids(SIMLSH_OUT uint64_t *ids, size_t cap,
                                      SIMLSH_OUT size_t *count, const simlsh_index *index,
                                      const simlsh_signature *sig, int flags);
/** Query @p n signatures at once (the fast path); see simlsh_results.
 *  @return as simlsh_index_query(). */
SIMLSH_API int simlsh_index_query_batch(simlsh_results *res, const simlsh_index *index,
                                        const simlsh_signature *const *sigs, size_t n, int flags);
/**
 * Candidate pairs of the indexed ids (each unordered pair once, a < b),
 * optionally verified. Stops after @p max_pairs pairs (0 = no limit) and then
 * simlsh_results_truncated() is 1.
 * @return 0, SIMLSH_EINVAL, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_index_pairs(simlsh_results *res, const simlsh_index *index, int flags,
                                  size_t max_pairs);
/**
 * Cluster the indexed ids: one row per id, labelled with the smallest id of
 * its cluster. Without SIMLSH_QUERY_VERIFY, clusters are the connected
 * components of "shares a bucket". With it, a bucket is split greedily: each
 * member joins the first earlier member-leader of that bucket whose estimated
 * similarity is >= threshold, or leads a new group; groups of all buckets are
 * then joined transitively (so chains a~b~c form one cluster even when a and
 * c are not similar). Near-linear: a bucket of m members makes at most m
 * links; with SIMLSH_QUERY_VERIFY a bucket costs m x (number of groups)
 * estimates, which is quadratic only for a big bucket of mutually
 * dissimilar members. @return 0, SIMLSH_EINVAL, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_index_cluster(simlsh_results *res, const simlsh_index *index, int flags);
/** Serialise (docs/format.md), with the user data if any
 *  (simlsh_index_set_userdata()); @p buf NULL is a size query.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_EBUFSIZE. */
SIMLSH_API int simlsh_index_save(SIMLSH_OUT void *buf, size_t cap, SIMLSH_OUT size_t *size,
                                 const simlsh_index *index);
/** Save to a file: simlsh_index_save_file_v2() with no errno and flags 0.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_EIO, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_index_save_file(const simlsh_index *index, const char *path);
/** Load from bytes. @return 0, SIMLSH_EINVAL, SIMLSH_ECORRUPT,
 *  SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_index_load(SIMLSH_OUT simlsh_index **out, const void *buf, size_t len,
                                 const simlsh_allocator *alloc);
/** Load from a file: simlsh_index_load_file_v2() with no errno and flags 0.
 *  @return as simlsh_index_load(), or SIMLSH_EIO. */
SIMLSH_API int simlsh_index_load_file(SIMLSH_OUT simlsh_index **out, const char *path,
                                      const simlsh_allocator *alloc);

/* ------------------------------------------------------------------------ */
/* Top-k neighbours: LSH Forest (since 0.2)                                 */
/* ------------------------------------------------------------------------ */

/**
 * An LSH Forest (Bawa, Condie and Ganesan, WWW 2005): the k indexed
 * signatures most similar to a query, with no threshold to choose.
 *
 * Shape: l prefix trees of depth d. Tree t keys a signature by its values
 * [t*d, (t+1)*d), and documents that agree with a query on a long key prefix
 * in some tree are likely similar. The params keys BANDS and ROWS give l and
 * d (so the fingerprint's bands and rows are the shape); both 0 (the
 * default) gives l = min(8, num_perm) and d = num_perm / l (16 for 128
 * permutations); one of them 0 is derived as num_perm divided by the other;
 * l * d must not exceed num_perm. THRESHOLD and the weights are not used;
 * signatures are always stored (STORE_SIGNATURES is ignored), since they
 * rank the candidates.
 *
 * Query: starting from the longest prefix any tree shares with the query,
 * the forest takes every document sharing a prefix of the current length in
 * any tree, one length at a time, until a length ends with at least 4k
 * distinct candidates or no prefix of length >= 1 is left; the candidates
 * are ranked by estimated Jaccard against the query, ties by id. So a query
 * returns fewer than k rows only when fewer than k documents share at least
 * one tree's first value with it. Answers depend only on the documents
 * present, not on the order of inserts or removals.
 *
 * Cost: insert O(l log n) amortised (sorted runs merged as they grow, so
 * queries never sort); query O(l log^2 n + candidates * num_perm); remove
 * marks the document and compacts in place once removed documents outnumber
 * the others (no allocation, O(l log n) amortised). Memory: num_perm * 4 + 8
 * bytes per document for the signature and id, 8 per tree, and the id map.
 * At most 2^30 documents (more gives SIMLSH_ENOMEM).
 *
 * Threads: any number of concurrent const calls (queries, count, save,
 * params); insert and remove need exclusive access.
 */
typedef struct simlsh_forest simlsh_forest;

/**
 * Create an empty forest for signatures of @p params.
 * @param out    receives the forest (NULL on failure).
 * @param params contract and shape (BANDS = trees, ROWS = depth, see above);
 *               copied, with its allocator.
 * @return 0, SIMLSH_EINVAL (NULL, trees * depth > num_perm, or one of them
 *         above num_perm), SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_forest_new(SIMLSH_OUT simlsh_forest **out, const simlsh_params *params);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_forest_free(simlsh_forest *forest);
/** A new params object holding the forest's contract, with BANDS and ROWS
 *  set to its trees and depth (so a loaded forest tells how to sign queries
 *  for it); as simlsh_shingleset_params(). @return 0, SIMLSH_EINVAL,
 *  SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_forest_params(SIMLSH_OUT simlsh_params **out, const simlsh_forest *forest);
/**
 * Insert a copy of @p sig under @p id.
 * @return 0, SIMLSH_EINVAL (NULL), SIMLSH_EMISMATCH (other contract),
 * SIMLSH_ESTATE (document in progress), SIMLSH_EEMPTY (empty signature),
 * SIMLSH_EEXIST (id present), SIMLSH_ENOMEM; on error the forest is unchanged.
 */
SIMLSH_API int simlsh_forest_insert(simlsh_forest *forest, uint64_t id,
                                    const simlsh_signature *sig);
/** Remove @p id. Never allocates. @return 0, SIMLSH_EINVAL, SIMLSH_ENOTFOUND. */
SIMLSH_API int simlsh_forest_remove(simlsh_forest *forest, uint64_t id);
/** Number of documents. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_forest_count(SIMLSH_OUT size_t *out, const simlsh_forest *forest);
/**
 * The (at most) @p k documents most similar to @p sig: rows a = id, b = 0,
 * score = estimated Jaccard, sorted by score (highest first), ties by id.
 * An empty @p sig gives no rows. One query: simlsh_results_offset(1) is the
 * row count. On error @p res is unchanged.
 * @return 0, SIMLSH_EINVAL (NULL, k = 0), SIMLSH_EMISMATCH, SIMLSH_ESTATE,
 * SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_forest_query_topk(simlsh_results *res, const simlsh_forest *forest,
                                        const simlsh_signature *sig, size_t k);
/** Serialise (docs/format-forest.md); @p buf NULL is a size query.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_EBUFSIZE. */
SIMLSH_API int simlsh_forest_save(SIMLSH_OUT void *buf, size_t cap, SIMLSH_OUT size_t *size,
                                  const simlsh_forest *forest);
/** Load from bytes, validated before anything sized by them is allocated.
 *  A loaded forest answers every query as the saved one did, and saves to
 *  the same bytes. @p alloc as in simlsh_params_new().
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ECORRUPT, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_forest_load(SIMLSH_OUT simlsh_forest **out, const void *buf, size_t len,
                                  const simlsh_allocator *alloc);

/* ------------------------------------------------------------------------ */
/* Containment search: LSH Ensemble (since 0.2)                             */
/* ------------------------------------------------------------------------ */

/**
 * An LSH Ensemble (Zhu, Nargesian, Pu and Miller, VLDB 2016): which indexed
 * sets X contain at least a fraction t of a query set Q, i.e.
 * |Q ∩ X| / |Q| >= t, with t chosen per query.
 *
 * Sets are partitioned by their exact size, given at insert: partition
 * boundaries are the sizes whose two leading bits change, [2^e, 3 * 2^(e-1))
 * and [3 * 2^(e-1), 2^(e+1)), so within a partition the largest size is at
 * most 1.5 times the smallest. Partitions are made as sizes arrive; there is
 * no build step. Each partition is a forest of l prefix trees of depth d (as
 * simlsh_forest, same BANDS / ROWS rule, but both 0 gives d = min(2,
 * num_perm) and l = num_perm / d: containment needs many short bands), which
 * can be queried as b <= l bands of r <= d rows. At depth 2 each partition
 * also sorts the sets by the second value of each tree's key, so one-row
 * bandings reach 2 l bands (with the default shape every value once: 128
 * for 128 permutations, as datasketch's ensemble); that costs 8 more bytes
 * per set and tree (docs/tuning.md, section 7: about 1.5 times the memory,
 * 1.5-1.9 times the insert time, and more small queries find their sets).
 * For a query of size q and a
 * partition whose largest size is u, containment c corresponds to Jaccard
 * c q / (q + u - c q) (the smallest Jaccard any set of the partition can have
 * at that containment); (b, r) minimise FP_WEIGHT * (mean false-positive
 * rate over c in [0, t]) + FN_WEIGHT * (mean false-negative rate over c in
 * [t, min(1, u/q)]) of the S-curve in that Jaccard (means rather than the
 * paper's areas, so a t near 1 still weighs misses). Partitions whose sizes
 * are all below t q are skipped: such a set cannot contain t q elements.
 *
 * Memory and cost as simlsh_forest, per partition, with the one-value
 * trees at depth 2 on top (8 bytes per set and tree). At most 2^30 sets.
 *
 * Threads: any number of concurrent const calls (queries, count, save,
 * params); insert and remove need exclusive access.
 */
typedef struct simlsh_ensemble simlsh_ensemble;

/** Create an empty ensemble; as simlsh_forest_new() (BANDS = trees, ROWS =
 *  depth; FP_WEIGHT and FN_WEIGHT weigh the per-query banding choice, a
 *  false negative counting 4 times FN_WEIGHT: docs/tuning.md, section 7).
 *  @return 0, SIMLSH_EINVAL (also both weights 0), SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_ensemble_new(SIMLSH_OUT simlsh_ensemble **out, const simlsh_params *params);
/** Free; NULL is a no-op. */
SIMLSH_API void simlsh_ensemble_free(simlsh_ensemble *ensemble);
/** The ensemble's contract with BANDS and ROWS set to its trees and depth;
 *  as simlsh_forest_params(). @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_ensemble_params(SIMLSH_OUT simlsh_params **out,
                                      const simlsh_ensemble *ensemble);
/**
 * Insert a copy of @p sig under @p id, for a set of exactly @p size distinct
 * elements (simlsh_shingleset_count() of the set it was made from).
 * @return 0, SIMLSH_EINVAL (NULL, size 0), SIMLSH_EMISMATCH, SIMLSH_ESTATE,
 * SIMLSH_EEMPTY (empty signature), SIMLSH_EEXIST (id present),
 * SIMLSH_ENOMEM; on error the ensemble is unchanged.
 */
SIMLSH_API int simlsh_ensemble_insert(simlsh_ensemble *ensemble, uint64_t id,
                                      const simlsh_signature *sig, uint64_t size);
/** Remove @p id. Never allocates. @return 0, SIMLSH_EINVAL, SIMLSH_ENOTFOUND. */
SIMLSH_API int simlsh_ensemble_remove(simlsh_ensemble *ensemble, uint64_t id);
/** Number of sets. @return 0 or SIMLSH_EINVAL. */
SIMLSH_API int simlsh_ensemble_count(SIMLSH_OUT size_t *out, const simlsh_ensemble *ensemble);
/**
 * Sets likely to contain at least a fraction @p t of the query set, whose
 * signature is @p sig and size @p query_size: rows a = id, b = 0, score =
 * estimated containment (from the estimated Jaccard J and the two sizes,
 * J (q + x) / (q (1 + J)), capped at 1), sorted by id. Without flags these
 * are all candidates of the banding; with SIMLSH_QUERY_VERIFY only those
 * whose estimated containment is >= @p t. An empty @p sig gives no rows.
 * On error @p res is unchanged.
 * @return 0, SIMLSH_EINVAL (NULL, query_size 0, t outside (0, 1], unknown
 * flags), SIMLSH_EMISMATCH, SIMLSH_ESTATE, SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_ensemble_query(simlsh_results *res, const simlsh_ensemble *ensemble,
                                     const simlsh_signature *sig, uint64_t query_size, double t,
                                     int flags);
/** Serialise (docs/format-forest.md); @p buf NULL is a size query.
 *  @return 0, SIMLSH_EINVAL, SIMLSH_EBUFSIZE. */
SIMLSH_API int simlsh_ensemble_save(SIMLSH_OUT void *buf, size_t cap, SIMLSH_OUT size_t *size,
                                    const simlsh_ensemble *ensemble);
/** Load from bytes; as simlsh_forest_load().
 *  @return 0, SIMLSH_EINVAL, SIMLSH_ECORRUPT, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM. */
SIMLSH_API int simlsh_ensemble_load(SIMLSH_OUT simlsh_ensemble **out, const void *buf, size_t len,
                                    const simlsh_allocator *alloc);

/* ------------------------------------------------------------------------ */
/* Banding that targets recall (since 0.2)                                  */
/* ------------------------------------------------------------------------ */

/**
 * Choose (b, r) with b*r <= @p num_perm for exactly verified candidates:
 * minimise the false-positive area (integral of P(s) over [0, t], see
 * simlsh_lsh_false_positive_area()) subject to a recall floor R = @p recall:
 *  - @p width 0: P(t) >= R. P rises with s, so every pair of similarity
 *    s >= t then becomes a candidate with probability at least R.
 *  - @p width w > 0: the mean of P(s) over [t, min(1, t + w)] is >= R, a
 *    weaker floor (P(t) itself may be lower) for pairs spread just above t.
 * Exhaustive over (b, r); ties within 1e-12 of area go to fewer unused
 * rows, then fewer bands. When no banding meets the floor (e.g. num_perm 4,
 * t 0.5, R 0.99) the one with the largest constrained quantity is chosen
 * (that is b = num_perm, r = 1) and @p *achieved < @p recall tells so.
 * The other figures of the choice come from simlsh_lsh_probability(),
 * simlsh_lsh_false_positive_area() and simlsh_lsh_false_negative_area().
 * @param bands      receives the number of bands of the choice.
 * @param rows       receives the rows per band of the choice.
 * @param achieved   receives the constrained quantity of the choice (P(t),
 *                   or the mean over the window); may be NULL.
 * @param num_perm   1..1024.
 * @param t          the threshold, in (0, 1].
 * @param recall     R, in (0, 1).
 * @param width      0 or the window above t, in [0, 1].
 * @return 0 or SIMLSH_EINVAL (NULL bands or rows, or a value out of range);
 * on error nothing is written.
 * Threads: safe.
 */
SIMLSH_API int simlsh_lsh_optimal_params_recall(SIMLSH_OUT uint32_t *bands,
                                                SIMLSH_OUT uint32_t *rows,
                                                SIMLSH_OUT double *achieved, uint32_t num_perm,
                                                double t, double recall, double width);

/* ------------------------------------------------------------------------ */
/* Grouping pairs (0.2)                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Pure functions over a list of n pairs (a[i], b[i]) of caller ids, for
 * example the rows of simlsh_index_pairs() or pairs the caller verified
 * itself. The outputs depend only on the set of pairs (and on the priority
 * order for stars), never on the order or repetition of the input, so every
 * front end that calls them gives the same answer.
 *  - A pair may appear several times, in either orientation; a repeated
 *    pair counts once, with the largest of its scores.
 *  - A self-pair (a[i] == b[i]) or a NaN score gives SIMLSH_EINVAL.
 *  - n = 0 is valid (a and b may then be NULL) and gives no rows.
 *  - Only ids that occur in a pair get rows.
 *  - A group call fills @p res with one "query" per group: rows of group g
 *    are [simlsh_results_offset(g), simlsh_results_offset(g + 1)), and
 *    @p *ngroups (may be NULL) receives the number of groups.
 * Errors: SIMLSH_EINVAL (NULL res, NULL a or b with n > 0, bad pair or
 * score), SIMLSH_ENOMEM (also for an n too large to index, checked before
 * the arrays are read, and for more than 2^32 - 2 distinct ids). On error
 * @p res is unchanged. Scratch memory comes from @p res's allocator.
 * Threads: safe for distinct results objects (the inputs are only read).
 */

/**
 * Connected components of the pairs (union-find). Rows (id, label, -1),
 * label = the smallest id of the component; components in ascending label
 * order, ids ascending within each. simlsh_index_cluster() uses the same
 * labels (it sorts all rows by id and lists unpaired ids too).
 * @return 0, SIMLSH_EINVAL, SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_group_components(simlsh_results *res, SIMLSH_OUT size_t *ngroups,
                                       const uint64_t *a, const uint64_t *b, size_t n);

/**
 * Star groups that are safe to delete from. The pairs are verified edges
 * (similarity >= threshold). Documents are visited by priority: first the
 * ids of @p order (@p norder of them; the first occurrence of an id counts,
 * ids in no pair are ignored), then every other id by ascending id. Each
 * visited document that no group holds yet becomes a centre, and every
 * document that shares a pair with it and is in no group yet joins its
 * group. So every member has an edge to its centre (dropping all members
 * and keeping the centres loses no document that is not >= threshold
 * similar to a kept one), and a centre outranks all its members.
 * Rows (id, centre id, score): the member's @p score for its edge to the
 * centre (-1 when @p score is NULL), 1.0 for the centre itself. Groups in
 * the order of their centres' priority, members by priority within a group:
 * the centre is each group's first row. A document whose neighbours are all
 * taken is the centre of a group of one.
 * @param score  n scores, or NULL.
 * @param order  priority order of ids (for example input order, or a keep
 *               policy's order), or NULL with @p norder 0 for ascending ids.
 * @return 0, SIMLSH_EINVAL (also @p order NULL with @p norder > 0), SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_group_star(simlsh_results *res, SIMLSH_OUT size_t *ngroups, const uint64_t *a,
                                 const uint64_t *b, const double *score, size_t n,
                                 const uint64_t *order, size_t norder);

/**
 * Candidate pairs in batches for exact verification in bounded memory: a
 * caller loads the documents of one batch (simlsh_group_batch_ids()),
 * verifies the batch's pairs and frees them before the next batch.
 * Rows (a, b, score) with a < b, each distinct pair once (score as given, or
 * -1 when @p score is NULL), in batches; @p *nbatches (may be NULL) receives
 * the number of batches.
 *  - @p max_docs 0: one batch per connected component, in ascending label
 *    order, the same numbering as simlsh_group_components().
 *  - @p max_docs >= 2: no batch touches more than @p max_docs documents.
 *    Whole components are packed, in label order, while their documents fit;
 *    a component of more than @p max_docs documents is cut, by ascending id,
 *    into chunks of max_docs / 2 documents, and each pair goes to the block
 *    (i, j) of the chunks of its ends (i <= j): every non-empty block is a
 *    batch, blocks in (i, j) order. A document then appears in the batches
 *    of its chunk only (one per other chunk it has pairs with).
 * Within a batch, pairs are grouped by component (label order) and sorted
 * by (a, b).
 * @return 0, SIMLSH_EINVAL (also @p max_docs 1), SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_group_batches(simlsh_results *res, SIMLSH_OUT size_t *nbatches,
                                    const uint64_t *a, const uint64_t *b, const double *score,
                                    size_t n, size_t max_docs);

/**
 * The distinct ids of batch (or group) @p q of @p res, ascending, into
 * @p ids[0 .. cap); @p *count receives their number (also when the buffer
 * is too small); @p ids NULL is a size query. After simlsh_group_batches()
 * with max_docs > 0, a buffer of max_docs ids always suffices.
 * @return 0, SIMLSH_EINVAL (NULL count or res, @p q not below the number of
 * groups), SIMLSH_EBUFSIZE, SIMLSH_ENOMEM (scratch from @p res's allocator).
 * Threads: a const call; concurrent calls on one results object are safe.
 */
SIMLSH_API int simlsh_group_batch_ids(SIMLSH_OUT uint64_t *ids, size_t cap,
                                      SIMLSH_OUT size_t *count, const simlsh_results *res,
                                      size_t q);
/* Batches and threads (0.2)                                                */
/* ------------------------------------------------------------------------ */

/*
 * Calls that take @p nthreads split their work into units whose results do
 * not depend on which thread runs them: the output (and any index they
 * build) is identical for every thread count. @p nthreads 0 means one
 * thread per online CPU, 1 runs in the calling thread; small inputs use
 * fewer threads than asked. Threads are started by the call and joined
 * before it returns. Worker threads call the allocator hooks, one call at a
 * time. A library built without threads (meson -Dthreads=disabled) runs
 * every call serially; simlsh_has_threads() tells.
 */

/** @return 1 if calls taking a thread count can use threads, 0 if this
 *  build runs them serially. Threads: safe. */
SIMLSH_API int simlsh_has_threads(void);

/**
 * Insert @p n documents: ids @p ids[i] with the densified values of row i
 * of @p values, an @p n x num_perm matrix (row-major, as
 * simlsh_signature_values() or simlsh_sign_batch() give). The result is the
 * same as calling simlsh_index_insert() for i = 0, 1, ... (same slots, same
 * saved bytes), but the band tables are filled one band per unit of work,
 * on up to @p nthreads threads.
 * All or nothing: rows are checked first (a row of all 0xFFFFFFFF is an
 * empty signature: SIMLSH_EEMPTY), then ids (one already present, or twice
 * in @p ids: SIMLSH_EEXIST); on any error, SIMLSH_ENOMEM included, the index
 * holds exactly the documents it held (its tables may have grown).
 * @return 0, SIMLSH_EINVAL (NULL with @p n > 0), SIMLSH_EEMPTY,
 * SIMLSH_EEXIST, SIMLSH_ENOMEM (also beyond 2^30 documents).
 * Threads: needs exclusive access to @p index, as simlsh_index_insert().
 */
SIMLSH_API int simlsh_index_insert_values(simlsh_index *index, const uint64_t *ids,
                                          const uint32_t *values, size_t n, uint32_t nthreads);
/**
 * As simlsh_index_reserve(): make room for @p n ids in total, with the new
 * band tables initialised (and the old entries moved) one band per unit of
 * work, on up to @p nthreads threads (filling the tables for half a
 * million documents takes a quarter of a second on one). The index is the
 * same, and saves to the same bytes, whatever the thread count.
 * @return 0, SIMLSH_EINVAL (@p index NULL), SIMLSH_ENOMEM (the index is
 * then unchanged).
 * Threads: needs exclusive access to @p index, as simlsh_index_insert().
 */
SIMLSH_API int simlsh_index_reserve_v2(simlsh_index *index, size_t n, uint32_t nthreads);
/**
 * As simlsh_index_insert_values() with the values of @p n signatures.
 * @return as simlsh_index_insert_values(), and for a signature: SIMLSH_EINVAL
 * (NULL), SIMLSH_ESTATE (document open), SIMLSH_EMISMATCH, SIMLSH_EEMPTY.
 * Threads: needs exclusive access to @p index; the signatures are only read.
 */
SIMLSH_API int simlsh_index_insert_batch(simlsh_index *index, const uint64_t *ids,
                                         const simlsh_signature *const *sigs, size_t n,
                                         uint32_t nthreads);

/**
 * Sign @p n texts in one call: row i of @p values (an @p n x num_perm
 * matrix, row-major) receives the densified values of text i, exactly as
 * simlsh_signature_add_text() on a new signature and
 * simlsh_signature_values() would give. An empty document (no shingles) is
 * no error: its row is all 0xFFFFFFFF (the empty mark), and @p empty[i]
 * (@p empty may be NULL) is 1 for it, 0 for the others. Texts are
 * @p lens[i] bytes at @p texts[i] (NULL only with length 0).
 * Documents are signed in order by units of a few documents on up to
 * @p nthreads threads; on error the first failing document's code is
 * returned (for data errors such as SIMLSH_EUTF8 it does not depend on the
 * thread count) and the matrix content is unspecified.
 * @return 0, SIMLSH_EINVAL (NULL arguments, a NULL text with a length, bad
 * params), SIMLSH_EUNSUPPORTED, SIMLSH_EUTF8 (SIMLSH_UTF8_REJECT), SIMLSH_ENOMEM.
 * Threads: @p params is only read; any number of calls may run at once.
 */
SIMLSH_API int simlsh_sign_batch(SIMLSH_OUT uint32_t *values, SIMLSH_OUT uint8_t *empty,
                                 const simlsh_params *params, const void *const *texts,
                                 const size_t *lens, size_t n, uint32_t nthreads);
/**
 * Band keys of @p n signatures given as an @p n x num_perm matrix of
 * values: row i of @p keys (an @p n x bands matrix) receives what
 * simlsh_signature_band_keys() gives for the bands and rows that
 * simlsh_index_new() resolves from @p params, i.e. the keys an index made
 * with @p params buckets on. Rows of the empty mark get keys like any
 * other (filter them with simlsh_sign_batch()'s @p empty).
 * @return 0, SIMLSH_EINVAL (NULL, or bands and rows that do not resolve).
 * Threads: @p params is only read; safe.
 */
SIMLSH_API int simlsh_band_keys_batch(SIMLSH_OUT uint64_t *keys, const simlsh_params *params,
                                      const uint32_t *values, size_t n);

/**
 * simlsh_index_pairs() with a threshold for this call and threads: with
 * SIMLSH_QUERY_VERIFY, pairs with estimate >= @p threshold are kept
 * (@p threshold <= 0 or NaN: the params' THRESHOLD; above 1: SIMLSH_EINVAL;
 * ignored without verify). Threads sweep ranges of the band tables and
 * verify each pair in the first band where it shares a bucket (so each pair
 * once, with no query per document); one parallel sort orders the rows.
 * Cost: O(bucket collisions + rows log rows); memory: 16 bytes per kept
 * row, and with @p max_pairs at most about 2 (max_pairs + 1) rows per
 * thread. The rows (and the prefix kept by @p max_pairs) are those of
 * simlsh_index_pairs(), byte for byte, for any @p nthreads.
 * @return 0, SIMLSH_EINVAL, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM; on error
 * @p res is unchanged.
 * Threads: a const call on @p index (others may query it meanwhile); @p res
 * has one owner.
 */
SIMLSH_API int simlsh_index_pairs_v2(simlsh_results *res, const simlsh_index *index, int flags,
                                     size_t max_pairs, double threshold, uint32_t nthreads);
/**
 * simlsh_index_cluster() with a threshold for this call (the greedy split's,
 * as for simlsh_index_pairs_v2()) and threads: each band's buckets are
 * linked or split by one thread into one shared union-find, whose
 * components do not depend on the order of links, so the rows are those
 * of simlsh_index_cluster() for any @p nthreads.
 * @return 0, SIMLSH_EINVAL, SIMLSH_EUNSUPPORTED, SIMLSH_ENOMEM.
 * Threads: as simlsh_index_pairs_v2().
 */
SIMLSH_API int simlsh_index_cluster_v2(simlsh_results *res, const simlsh_index *index, int flags,
                                       double threshold, uint32_t nthreads);
/**
 * simlsh_index_query() with a threshold for this call: with
 * SIMLSH_QUERY_VERIFY, ids whose estimated similarity is >= @p threshold
 * are kept, whatever the params' THRESHOLD (the index and its params are
 * not changed; the bands still decide which ids are candidates, so a
 * threshold far below the one the bands were chosen for misses more).
 * Without SIMLSH_QUERY_VERIFY the rows are those of simlsh_index_query().
 * @param threshold in (0, 1]; anything else (0, negative, NaN, above 1) is
 *   SIMLSH_EINVAL, with or without verify. Unlike simlsh_index_pairs_v2(),
 *   no value stands for the params' THRESHOLD: simlsh_index_query() is that.
 * @return as simlsh_index_query(); on error @p res is unchanged.
 * Threads: as simlsh_index_query(), a const call.
 */
SIMLSH_API int simlsh_index_query_v2(simlsh_results *res, const simlsh_index *index,
                                     const simlsh_signature *sig, int flags, double threshold);
/** simlsh_index_query_batch() with a threshold for this call, as
 *  simlsh_index_query_v2(). @return as simlsh_index_query_v2().
 *  Threads: a const call. */
SIMLSH_API int simlsh_index_query_batch_v2(simlsh_results *res, const simlsh_index *index,
                                           const simlsh_signature *const *sigs, size_t n, int flags,
                                           double threshold);
/**
 * simlsh_index_query_batch() straight from values, with no signature object
 * per query: query q has the densified values @p values[q * @p stride] ..
 * @p values[q * @p stride + @p num_perm - 1] (a row-major matrix, as
 * simlsh_sign_batch() and simlsh_signature_values() give; @p stride larger
 * than @p num_perm reads the first columns of a wider matrix). The rows of
 * @p res are those simlsh_index_query_batch_v2() gives for the signatures
 * simlsh_signature_from_values() makes of these rows under the index's
 * contract, byte for byte; a row of all 0xFFFFFFFF (the empty mark) is an
 * empty signature and gives no rows. Made for bindings: one call, and no
 * allocation by the caller, per batch.
 * @param num_perm entries per query; must equal the index's num_perm.
 * @param stride   distance between the starts of two rows, in entries
 *   (not bytes); at least @p num_perm.
 * @param threshold 0 for the params' THRESHOLD (as simlsh_index_query_batch()),
 *   or in (0, 1] for this call (as simlsh_index_query_batch_v2()); ignored
 *   without SIMLSH_QUERY_VERIFY.
 * @p n 0 is an empty batch: @p res then holds no rows and no queries
 * (@p values may be NULL).
 * @return 0; SIMLSH_EINVAL (@p res or @p index NULL or not of that type,
 * @p values NULL with @p n > 0, unknown flags, @p stride below
 * @p num_perm or a matrix beyond the address space, @p threshold negative,
 * NaN or above 1, a row with 0xFFFFFFFF in some entries but not all);
 * SIMLSH_EMISMATCH (@p num_perm is not the index's); SIMLSH_EUNSUPPORTED
 * (verify without stored signatures); SIMLSH_ENOMEM. Every row is checked
 * before any query runs; on error @p res is unchanged.
 * Since 0.3.
 * Threads: a const call on @p index, like simlsh_index_query(): any number
 * may run at once, with other queries, but not with a writer of @p index;
 * @p values is only read; @p res has one owner.
 */
SIMLSH_API int simlsh_index_query_values(simlsh_results *res, const simlsh_index *index,
                                         const uint32_t *values, size_t n, size_t num_perm,
                                         size_t stride, int flags, double threshold);
/**
 * A deep, independent copy of @p src: same params (allocator included),
 * documents, stored signatures and user data, and the same state, so the
 * copy saves to the same bytes and answers every call as @p src does; each
 * may then change without affecting the other. Made for snapshots: a writer
 * copies the index, and readers query the copy while the writer inserts
 * into the original (or the other way round).
 * @return 0, SIMLSH_EINVAL (NULL), SIMLSH_ENOMEM; on error *@p out is NULL.
 * Threads: a const call on @p src: it may run concurrently with queries
 *   and other copies of @p src, but not with a writer of @p src (insert,
 *   remove, reserve, clear, merge into it, set_userdata).
 */
SIMLSH_API int simlsh_index_copy(SIMLSH_OUT simlsh_index **out, const simlsh_index *src);
/**
 * Add every document of @p src (an index built elsewhere, e.g. on another
 * shard) to @p dst. Both must have the same SIMLSH_SCOPE_INDEX fingerprint
 * (hash contract, bands and rows) and the same STORE_SIGNATURES; the other
 * params (THRESHOLD, allocator, ...) of @p dst stay. Stored signatures are
 * copied; without them the band fingerprints are, so the merged index
 * answers exactly as one into which both had been inserted. The user data
 * of @p dst stays as it was; that of @p src is not copied (the library
 * does not know how to combine caller bytes).
 *
 * The result is rebuilt in id order: afterwards @p dst saves to exactly the
 * bytes of a new index with @p dst's params and user data into which the
 * union of both id sets was inserted in increasing id order, whatever the
 * history (insertion order, removals) of either; so merging shards in any
 * order gives the same bytes. This costs time linear in the size of both
 * and, while it runs, memory for a third index of the union.
 *
 * All or nothing: an id present in both is SIMLSH_EEXIST and nothing is
 * merged (the check covers every id before anything changes; datasketch's
 * MinHashLSH.merge has it as an option, here it always runs, since a
 * duplicate would make the id ambiguous). On any error @p dst is unchanged,
 * down to its memory. @p src == @p dst is allowed: SIMLSH_EEXIST unless
 * empty.
 * @return 0, SIMLSH_EINVAL (NULL), SIMLSH_EMISMATCH (other fingerprint or
 *   STORE_SIGNATURES), SIMLSH_EEXIST, SIMLSH_ENOMEM (also when the union
 *   would exceed 2^30 documents).
 * Threads: needs exclusive access to @p dst, as insert; a const call on
 *   @p src (others may query it meanwhile, nobody may write it).
 */
SIMLSH_API int simlsh_index_merge(simlsh_index *dst, const simlsh_index *src);
/** Flags of simlsh_index_save_file_v2() and simlsh_index_load_file_v2(). */
enum {
    SIMLSH_FILE_NOFOLLOW = 1 /**< refuse (SIMLSH_EINVAL) a path whose last
                                  component is a symlink instead of following it */
};

/**
 * Save to a file atomically. The bytes go to a temporary file in the
 * directory of the file replaced (anonymous, with O_TMPFILE, where the
 * kernel and file system have it), which is synced, renamed over the
 * target, and the directory is synced. A symlink at @p path is followed
 * (relative targets from the link's directory), so the file it names is
 * replaced and the link stays; with SIMLSH_FILE_NOFOLLOW it is refused. A
 * replaced file keeps its permission bits, and its owner and group where
 * the caller may set them (as root); other hard links to it keep the old
 * bytes. A new file gets 0666 less the umask. Only a regular file or
 * nothing is ever replaced.
 *
 * A failed or killed save leaves the old file byte-identical; a temporary
 * file is left only by a kill between two system calls (link and rename),
 * or anywhere during the write where O_TMPFILE is missing, and is named
 * ".NAME.simlsh-tmp.PID.HEX": the next save to the same path removes those
 * of dead processes. Saves to one path that run at the same time (threads
 * or processes) each write their own temporary file: the file is then
 * complete from one of them, the one that renamed last (last writer wins).
 *
 * @param sys_errno may be NULL; receives the errno of the failing system
 *   call when the result is SIMLSH_EIO (ENOSPC, EACCES, EROFS, EDQUOT, ...:
 *   strerror() gives the message), 0 otherwise.
 * @param flags 0 or SIMLSH_FILE_NOFOLLOW.
 * @return 0; SIMLSH_EINVAL (NULL or empty path, unknown flags, a path with
 *   no file name such as "dir/", or one naming a directory, device, FIFO or
 *   socket, or a symlink with SIMLSH_FILE_NOFOLLOW); SIMLSH_ENOMEM;
 *   SIMLSH_EIO. When only the final directory sync fails (SIMLSH_EIO), the
 *   complete new file is already in place but may not survive a power loss.
 *
 * Threads: a const call on the index (concurrent with queries and saves).
 */
SIMLSH_API int simlsh_index_save_file_v2(SIMLSH_OUT int *sys_errno, const simlsh_index *index,
                                         const char *path, int flags);
/**
 * Load from a file, reading only a regular file and at most the size it
 * had when opened (so a file that grows cannot exhaust memory). The file
 * is opened non-blocking and checked with fstat() before any read: a FIFO,
 * device, socket or directory is refused at once, never read or waited on.
 * To load from a stream, read it into memory and call simlsh_index_load().
 *
 * @param sys_errno may be NULL; the errno of the failing system call when
 *   the result is SIMLSH_EIO (ENOENT, EACCES, ...), 0 otherwise.
 * @param flags 0 or SIMLSH_FILE_NOFOLLOW.
 * @return as simlsh_index_load(); SIMLSH_EINVAL also for unknown flags and
 *   a path that is not a regular file (or a symlink with
 *   SIMLSH_FILE_NOFOLLOW); SIMLSH_EIO.
 */
SIMLSH_API int simlsh_index_load_file_v2(SIMLSH_OUT simlsh_index **out, SIMLSH_OUT int *sys_errno,
                                         const char *path, int flags,
                                         const simlsh_allocator *alloc);
/**
 * Attach caller bytes to the index (copied; @p len 0 removes them, and then
 * @p data may be NULL). They are saved inside the checksummed file by every
 * save call and given back by every load (docs/format-index.md), so data
 * that belongs to the ids (names, keys, a caller's contract) is replaced
 * together with the index by one atomic save and can never drift from it.
 * The library never reads them; simlsh_index_clear() keeps them.
 * @return 0, SIMLSH_EINVAL (index NULL, data NULL with len > 0),
 *   SIMLSH_ENOMEM (then the previous bytes stay).
 * Threads: needs exclusive access, as insert.
 */
SIMLSH_API int simlsh_index_set_userdata(simlsh_index *index, const void *data, size_t len);
/**
 * The bytes attached by simlsh_index_set_userdata() or loaded with the
 * index: *data (NULL when there are none) stays owned by the index and
 * valid until the next simlsh_index_set_userdata() or simlsh_index_free().
 * @return 0 or SIMLSH_EINVAL.
 * Threads: a const call.
 */
SIMLSH_API int simlsh_index_userdata(SIMLSH_OUT const void **data, SIMLSH_OUT size_t *len,
                                     const simlsh_index *index);

/* ------------------------------------------------------------------------ */
/* Deduplication engine (0.3)                                               */
/* ------------------------------------------------------------------------ */

/*
 * Groups that are safe to delete from, straight from an index's buckets,
 * with no list of all candidate pairs: the work follows the documents and
 * the members of their buckets, not the square of a bucket's size.
 *
 * The rule is the star of simlsh_group_star() over the verified candidate
 * pairs: documents are visited by priority; each that no group holds yet
 * becomes a centre and claims every document that shares a bucket with it
 * in some band, is in no group yet and passes verification against it.
 * Verification is, by mode:
 *  - SIMLSH_DEDUP_NONE: none (every bucket-mate is claimed);
 *  - SIMLSH_DEDUP_ESTIMATE: the signature estimate >= threshold;
 *  - SIMLSH_DEDUP_EXACT: the estimate >= a prefilter (SIMLSH_DEDUP_PREFILTER),
 *    then the exact Jaccard of the two texts' shingle sets >= threshold.
 *    A member's score is then its exact Jaccard with the centre.
 * The groups are the same as simlsh_group_star() gives for the pairs that
 * simlsh_index_pairs_v2() enumerates (with the same threshold or prefilter)
 * once verified, with the same priority.
 *
 * Exact mode is a pull loop with no callbacks, so that any FFI can drive
 * it: simlsh_dedup_next() names the documents whose texts it needs next,
 * the caller hands them over with simlsh_dedup_texts() (or says they cannot
 * be had with simlsh_dedup_missing()), and so on until simlsh_dedup_next()
 * names none. The engine asks for a bounded batch at a time
 * (SIMLSH_DEDUP_MEMORY) and keeps only the shingle sets of the batch's
 * centres. Texts that are byte for byte the same as their centre's are
 * decided without shingling, and near-copies (byte or code point units,
 * at most ASCII lower-casing and whitespace collapsing) from a window
 * around the bytes where they differ: the exact same counts, at a fraction
 * of the cost.
 *
 * The engine keeps no pointer to the index: every call that reads it takes
 * it, and it must be the index given to simlsh_dedup_new(), unchanged
 * (SIMLSH_ESTATE after an insert, remove or clear).
 * Threads: an engine needs exclusive access; the index is only read, so
 * queries on it may run at the same time, and several engines may share it.
 */
typedef struct simlsh_dedup simlsh_dedup;

/** Verification modes of simlsh_dedup_new(). */
enum simlsh_dedup_mode {
    SIMLSH_DEDUP_NONE = 0,
    SIMLSH_DEDUP_ESTIMATE = 1,
    SIMLSH_DEDUP_EXACT = 2
};

/** Settings of simlsh_dedup_set(), before the first simlsh_dedup_next(). */
enum simlsh_dedup_key {
    /** Threads of simlsh_dedup_texts() (0: one per online CPU; default 1). */
    SIMLSH_DEDUP_THREADS = 0,
    /** Bytes of text one batch may ask for (default 64 MiB, at least 1): with
     *  simlsh_dedup_sizes(), the sizes given; without, 4 KiB a document. A
     *  batch always holds at least one centre and one document to verify. */
    SIMLSH_DEDUP_MEMORY = 1,
    /** Exact mode: the estimate a pair needs before its texts are compared.
     *  Default simlsh_dedup_prefilter(threshold, num_perm); 0 compares every
     *  bucket-mate's text. */
    SIMLSH_DEDUP_PREFILTER = 2,
    /** Ids below this value are kept documents (already in the collection):
     *  they are centres when their turn comes and never claimed (default 0). */
    SIMLSH_DEDUP_KEEP_BELOW = 3,
    /** Estimate and exact modes: buckets of more members than this (default
     *  64; 0: none) are judged at the start from a sample of 16 members
     *  (those with the smallest hash of their id, so the same members
     *  whatever the order of insertion): they hold unlike documents (a
     *  template most of a corpus shares) when fewer than a quarter of the
     *  sample's 120 pairs pass the exact mode's default prefilter. Every
     *  member of a bucket of s unlike documents looks at every other, s^2
     *  in all, and the prefilter passes a few per cent of such pairs to
     *  exact verification; so the largest are set aside until the others
     *  cost at most SIMLSH_DEDUP_GIANT_COST looks per document and band.
     *  A set-aside bucket's members meet only through their other buckets.
     *  A bucket of copies is never set aside (its first centre claims it
     *  whole). Setting buckets aside can only lose groups, never make a
     *  wrong one: it loses the pairs that share no other bucket.
     *  SIMLSH_DEDUP_STAT_SET_ASIDE and SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS
     *  count what was set aside. */
    SIMLSH_DEDUP_GIANT = 4,
    /** What the unlike buckets kept may cost, in looks per document and
     *  band (default 64, so that ordinary corpora keep every bucket; 0 sets
     *  every unlike bucket above SIMLSH_DEDUP_GIANT aside, at most 1e15). */
    SIMLSH_DEDUP_GIANT_COST = 5,
    /** The grouping (enum simlsh_dedup_cluster; default SIMLSH_DEDUP_STAR). */
    SIMLSH_DEDUP_CLUSTER = 6,
    /** Components: 1 (default) when a pair of two kept documents
     *  (SIMLSH_DEDUP_KEEP_BELOW) links them, 0 when only pairs with a new
     *  document do (incremental runs that must not join old documents). */
    SIMLSH_DEDUP_LINK_KEPT = 7,
    /** Exact mode: bytes of samples kept between batches (default 64 MiB;
     *  0: none). A text whose pair is put to the sample test (see
     *  SIMLSH_DEDUP_STAT_SAMPLED) leaves a sample of at least 128 of its
     *  distinct hashes (its hashes of the highest level that gives that
     *  many), 4 bytes each (8 with 64-bit hashes); a later pair of two
     *  documents with samples is put to the test on them before their
     *  texts are asked for, and the texts are asked for only if the
     *  samples cannot decide it. The verdicts are those the texts give, so
     *  the groups do not change: a shared template is read far less often
     *  (SIMLSH_DEDUP_STAT_TEXTS). Samples are kept until the budget is
     *  spent, in walk order, and never dropped; they are held in chunks of
     *  512 KiB (1 MiB with 64-bit hashes), so a budget under one chunk
     *  keeps none. */
    SIMLSH_DEDUP_SAMPLE_MEMORY = 8
};

/** Groupings of SIMLSH_DEDUP_CLUSTER. */
enum simlsh_dedup_cluster {
    /** Stars (the default): in priority order, each document that no group
     *  holds yet is a centre and claims the unplaced bucket-mates that pass
     *  verification against it; every member is near its centre, so
     *  deleting the members is safe. The groups of simlsh_group_star(). */
    SIMLSH_DEDUP_STAR = 0,
    /** Connected components of the verified candidate pairs (chains
     *  included), each led by its first document in priority order, with
     *  score -1 for the other members. A pair is verified only while its
     *  two documents are in different components, and a bucket whose
     *  members are all in one is never looked at again, so a group of m
     *  copies costs about m verifications. The components of the verified
     *  pairs of simlsh_index_pairs_v2(). */
    SIMLSH_DEDUP_COMPONENTS = 1
};

/** Counters of simlsh_dedup_stat(). */
enum simlsh_dedup_stat {
    SIMLSH_DEDUP_STAT_VISITS = 0,     /**< bucket members looked at */
    SIMLSH_DEDUP_STAT_CANDIDATES = 1, /**< pairs (centre, unplaced mate) that passed the
                                           estimate or prefilter (exact mode: with those of a
                                           document taken as a centre ahead of its turn and
                                           then claimed) */
    SIMLSH_DEDUP_STAT_EXACT = 2,      /**< pairs decided by comparing texts */
    SIMLSH_DEDUP_STAT_IDENTICAL = 3,  /**< ... of them, texts identical to the centre's */
    SIMLSH_DEDUP_STAT_ESTIMATED = 4,  /**< exact mode: pairs decided by the estimate (a
                                           text missing) */
    SIMLSH_DEDUP_STAT_TEXTS = 5,      /**< texts handed over (with repeats) */
    SIMLSH_DEDUP_STAT_BATCHES = 6,    /**< batches of texts asked for */
    SIMLSH_DEDUP_STAT_SET_BYTES = 7,  /**< most bytes of shingle sets held at once */
    SIMLSH_DEDUP_STAT_GROUPS = 8,     /**< groups with at least one member */
    SIMLSH_DEDUP_STAT_MEMBERS = 9,    /**< documents claimed by a centre */
    SIMLSH_DEDUP_STAT_EDITS = 10,     /**< pairs of SIMLSH_DEDUP_STAT_EXACT decided from
                                           the bytes where the texts differ (byte or
                                           code point units, ASCII normalisation) */
    /** Buckets of unlike documents set aside (SIMLSH_DEDUP_GIANT). */
    SIMLSH_DEDUP_STAT_SET_ASIDE = 11,
    /** Their members, summed over them. */
    SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS = 12,
    /** Pairs of SIMLSH_DEDUP_STAT_EXACT rejected from a sample of their
     *  shingle sets: the hashes whose low s bits are 0, on both sides,
     *  for s from where the centre has 64 of them down to 2, rejected once
     *  the chance that a pair at the threshold shows so few shared ones is
     *  under e^-16 (Chernoff's bound), so a pair at or above the threshold
     *  is lost with a probability under 2e-6. Only when the prefilter is
     *  on: with SIMLSH_DEDUP_PREFILTER 0 every pair is compared whole. */
    SIMLSH_DEDUP_STAT_SAMPLED = 13
};

/**
 * The exact mode's default prefilter: @p threshold less 3.5 standard
 * deviations of the estimate at the threshold, sqrt(t (1 - t) / num_perm),
 * or 0 when that is negative. A pair at the threshold falls below it with
 * probability about 2.3e-4. @return the prefilter, or -1 for a threshold
 * outside (0, 1] or num_perm 0. Threads: safe.
 */
SIMLSH_API double simlsh_dedup_prefilter(double threshold, uint32_t num_perm);

/**
 * The deduplication policy's banding, the one simlsh-dedup, simlsh.dedup()
 * and the bindings' examples use. With @p bands and @p rows both 0,
 * SIMLSH_DEDUP_EXACT takes simlsh_lsh_optimal_params_recall(num_perm,
 * threshold, @p recall, 0): the least false-positive area whose chance of
 * making a pair at the threshold a candidate is at least @p recall (exact
 * verification removes every false positive, so the banding only has to
 * find the true pairs: 16 x 6 for 0.8 and 128 permutations at 0.99), and
 * the other modes keep the automatic banding of the params' weights (0 and
 * 0). One of the two alone makes the other num_perm divided by it; both
 * are taken as given. Sets BANDS and ROWS of @p params; @p bands_out and
 * @p rows_out (each may be NULL) receive the banding, also when it does
 * not fit (to say so). Since 0.3.
 * @return 0, SIMLSH_EINVAL (wrong handle, bad mode, @p recall outside
 * (0, 1), bands x rows above num_perm; @p params unchanged).
 * Threads: needs exclusive access to @p params.
 */
SIMLSH_API int simlsh_dedup_banding(simlsh_params *params, int mode, double recall, uint32_t bands,
                                    uint32_t rows, SIMLSH_OUT uint32_t *bands_out,
                                    SIMLSH_OUT uint32_t *rows_out);

/**
 * A new engine over @p index (which must store signatures) for @p mode and
 * @p threshold in (0, 1] (ignored by SIMLSH_DEDUP_NONE). Priority is by
 * ascending id until simlsh_dedup_order() says otherwise. Memory comes from
 * @p index's allocator; the engine uses about 40 bytes a document slot.
 * @return 0, SIMLSH_EINVAL (NULL, bad mode or threshold),
 * SIMLSH_EUNSUPPORTED (an index without stored signatures), SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_dedup_new(SIMLSH_OUT simlsh_dedup **out, const simlsh_index *index, int mode,
                                double threshold);
/** Free the engine (NULL: no-op). */
SIMLSH_API void simlsh_dedup_free(simlsh_dedup *d);
/**
 * Change a setting (enum simlsh_dedup_key) before the first
 * simlsh_dedup_next(). @return 0, SIMLSH_EINVAL (unknown key, value out of
 * range: threads 0 .. 256, memory >= 1, prefilter in [0, 1], keep-below
 * >= 0, or NaN), SIMLSH_ESTATE (the engine has started).
 */
SIMLSH_API int simlsh_dedup_set(simlsh_dedup *d, int key, double value);
/**
 * Priority of documents (the --keep policy of a tool): @p ids[0 .. n) first,
 * the first occurrence of an id counting and ids the index does not hold
 * ignored, then every other document by ascending id. Replaces an earlier
 * order. @return 0, SIMLSH_EINVAL (NULL with n > 0), SIMLSH_ESTATE (started),
 * SIMLSH_ENOMEM (then the previous order stays).
 */
SIMLSH_API int simlsh_dedup_order(simlsh_dedup *d, const uint64_t *ids, size_t n);
/**
 * Text sizes in bytes, for batches of SIMLSH_DEDUP_MEMORY bytes (ids not
 * held are ignored; documents without a size count 4 KiB).
 * @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE (started).
 */
SIMLSH_API int simlsh_dedup_sizes(simlsh_dedup *d, const uint64_t *ids, const uint64_t *bytes,
                                  size_t n);
/**
 * Advance: place every document that needs no text, and fill @p need with
 * the documents whose texts are needed next (rows (id, id, -1), centres
 * first, then by id), those already handed over left out. A count of 0
 * means the groups are complete (always so for the modes without texts).
 * Call it again after handing over texts.
 * @return 0, SIMLSH_EINVAL (NULL, @p index not the engine's),
 * SIMLSH_ESTATE (@p index changed since simlsh_dedup_new()), SIMLSH_ENOMEM
 * (the engine stays usable: the call may be repeated).
 */
SIMLSH_API int simlsh_dedup_next(simlsh_results *need, simlsh_dedup *d, const simlsh_index *index);
/**
 * Hand over the texts of @p n documents that the last simlsh_dedup_next()
 * asked for, in any order and in as many calls as the caller likes: text
 * i is @p lens[i] bytes at @p texts[i] (NULL only with length 0), shingled
 * with the index's params. The pairs whose texts are all here are decided
 * on up to SIMLSH_DEDUP_THREADS threads; the texts are not kept.
 * @return 0, SIMLSH_EINVAL (NULL arrays with n > 0, an id not asked for or
 * given twice: nothing is taken then), SIMLSH_EUTF8 (SIMLSH_UTF8_REJECT and
 * invalid UTF-8: that document counts as missing, the others are taken),
 * SIMLSH_ENOMEM (nothing taken).
 */
SIMLSH_API int simlsh_dedup_texts(simlsh_dedup *d, const uint64_t *ids, const void *const *texts,
                                  const size_t *lens, size_t n);
/**
 * The texts of @p ids cannot be had (a file gone or changed): their pairs
 * are decided by the signature estimate >= threshold.
 * @return as simlsh_dedup_texts().
 */
SIMLSH_API int simlsh_dedup_missing(simlsh_dedup *d, const uint64_t *ids, size_t n);
/**
 * The groups with at least one member, in simlsh_group_star()'s rows: (id,
 * centre id, score), score 1.0 for the centre and the member's verified
 * similarity with its centre otherwise (-1 for SIMLSH_DEDUP_NONE); groups
 * in their centres' priority order, members by priority, the centre first.
 * A document in no group is kept alone. @p *ngroups (may be NULL) receives
 * the number of groups.
 * @return 0, SIMLSH_EINVAL, SIMLSH_ESTATE (simlsh_dedup_next() has not yet
 * returned a count of 0), SIMLSH_ENOMEM.
 */
SIMLSH_API int simlsh_dedup_groups(simlsh_results *res, SIMLSH_OUT size_t *ngroups,
                                   const simlsh_dedup *d);
/**
 * A counter (enum simlsh_dedup_stat) of the work done so far.
 * @return 0 or SIMLSH_EINVAL (NULL, unknown key).
 */
SIMLSH_API int simlsh_dedup_stat(SIMLSH_OUT uint64_t *value, const simlsh_dedup *d, int key);

/**
 * The @p k largest buckets of @p index with at least @p min_size members:
 * rows (smallest member id, band, size), largest first (then by band and
 * id), one query's offsets; @p *docs_above (may be NULL) receives the number
 * of documents in at least one bucket of @p min_size or more members. For
 * --stats of a tool: a bucket that holds a large share of a corpus is a
 * template or boilerplate that every member shares.
 * @return 0, SIMLSH_EINVAL (NULL @p res or @p index), SIMLSH_ENOMEM.
 * Threads: a const call on @p index.
 */
SIMLSH_API int simlsh_index_largest_buckets(simlsh_results *res, SIMLSH_OUT uint64_t *docs_above,
                                            const simlsh_index *index, size_t k, size_t min_size);

#ifdef __cplusplus
}
#endif

#endif /* SIMLSH_H */
