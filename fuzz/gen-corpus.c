/* Write the fuzz seed corpus: small valid saved objects made with the public
 * API under a spread of contracts, so the loaders' fuzzers start from inputs
 * that pass every check and mutate from there.
 *
 *   gen-corpus DIR          write DIR/{set,signature,index,index-mode,index-userdata,
 *                           forest-mode,ensemble-mode,shingler}/
 *   gen-corpus --check DIR  exit 1 unless DIR holds exactly those files
 *
 * The output depends only on this file and the format (fixed texts, seeds
 * and parameters), so the committed corpus can be checked against it.
 * index-mode/ holds the index files behind the mode byte fuzz-index-load
 * reads first (1: reseal the frame, 0: take it as it is), and forest-mode/ and
 * ensemble-mode/ the same for fuzz-forest-load and fuzz-ensemble-load; shingler/ holds
 * fuzz-shingler inputs (4 parameter bytes, then a document). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "simlsh.h"

static const char *root;
static int check_mode;
static int failures;

/* The folders written and how many files each got, for --check. */
static struct {
    const char *dir;
    int files;
} dirs[12];
static int ndirs;

static void count_file(const char *dir)
{
    int i = 0;
    while (i < ndirs && strcmp(dirs[i].dir, dir) != 0)
        i++;
    if (i == ndirs) {
        if (ndirs == (int)(sizeof dirs / sizeof dirs[0]))
            exit(2);
        dirs[ndirs++].dir = dir;
    }
    dirs[i].files++;
}

/* A file the generator does not write would be stale seed. */
static void check_no_extra(void)
{
    for (int i = 0; i < ndirs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, dirs[i].dir);
        DIR *d = opendir(path);
        int seen = 0;
        for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
            seen += e->d_name[0] != '.';
        if (d != NULL)
            closedir(d);
        if (seen != dirs[i].files) {
            fprintf(stderr, "gen-corpus: %s has %d files, expected %d\n", path, seen,
                    dirs[i].files);
            failures++;
        }
    }
}

#define DIE(...)                                     \
    do {                                             \
        fprintf(stderr, "gen-corpus: " __VA_ARGS__); \
        fputc('\n', stderr);                         \
        exit(2);                                     \
    } while (0)

#define OK(call)                                                         \
    do {                                                                 \
        int rc_ = (call);                                                \
        if (rc_ != 0)                                                    \
            DIE("%s:%d: %s failed: %d", __FILE__, __LINE__, #call, rc_); \
    } while (0)

static void emit(const char *dir, const char *name, const void *prefix, size_t np, const void *data,
                 size_t n)
{
    char path[4096];
    count_file(dir);
    snprintf(path, sizeof path, "%s/%s", root, dir);
    if (!check_mode && mkdir(path, 0777) != 0 && errno != EEXIST)
        DIE("mkdir %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/%s/%s", root, dir, name);
    if (check_mode) {
        FILE *f = fopen(path, "rb");
        int same = f != NULL;
        for (size_t i = 0; same && i < np + n; i++) {
            int c = fgetc(f);
            same = c == (i < np ? ((const unsigned char *)prefix)[i]
                                : ((const unsigned char *)data)[i - np]);
        }
        if (same && fgetc(f) != EOF)
            same = 0;
        if (f != NULL)
            fclose(f);
        if (!same) {
            fprintf(stderr, "gen-corpus: %s is missing or differs\n", path);
            failures++;
        }
        return;
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(prefix, 1, np, f) != np || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        DIE("write %s: %s", path, strerror(errno));
}

static simlsh_params *params(int unit, int k, int norm, int policy, uint32_t seed, int hash_bits,
                             int scheme, int num_perm)
{
    simlsh_params *p;
    OK(simlsh_params_new(&p, NULL));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_UNIT, unit));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_K, k));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE, norm));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_UTF8_POLICY, policy));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, seed));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_HASH_BITS, hash_bits));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm));
    return p;
}

static const char *const texts[] = {
    "The quick brown fox jumps over the lazy dog.",
    "The quick brown fox jumped over the lazy dog!",
    "A quick brown fox jumps over the lazy dogs.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
    ("Stra\xc3\x9f"
     "e, na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 "
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"),
    "bad \xff\xfe utf-8 \xe2\x82 cut",
};
#define NTEXTS (sizeof texts / sizeof texts[0])

/* ---- shingle sets -------------------------------------------------------- */

static void set_file(const char *name, simlsh_params *p, const char *const *docs, size_t ndocs,
                     const uint64_t *features, size_t nf)
{
    simlsh_shingleset *s;
    OK(simlsh_shingleset_new(&s, p));
    for (size_t i = 0; i < ndocs; i++)
        OK(simlsh_shingleset_add_text(s, docs[i], strlen(docs[i])));
    OK(simlsh_shingleset_add_features(s, features, nf));
    size_t n;
    OK(simlsh_shingleset_save(NULL, 0, &n, s));
    unsigned char *buf = malloc(n);
    if (buf == NULL)
        DIE("out of memory");
    OK(simlsh_shingleset_save(buf, n, &n, s));
    simlsh_shingleset *back;
    OK(simlsh_shingleset_load(&back, buf, n, NULL));
    emit("set", name, "", 0, buf, n);
    simlsh_shingleset_free(back);
    simlsh_shingleset_free(s);
    simlsh_params_free(p);
    free(buf);
}

static void sets(void)
{
    static const uint64_t feats[] = {0,           1,          0xfffffffeu,
                                     0xffffffffu, 1ull << 32, 0xffffffffffffffffull};
    set_file("char-k5-h64", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 128), texts, 1, NULL, 0);
    set_file("word-k2-h32-lower-collapse",
             params(SIMLSH_UNIT_WORD, 2, SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE, 0, 7,
                    32, 0, 128),
             texts, 3, NULL, 0);
    set_file("byte-k4-h32-reject-seed", params(SIMLSH_UNIT_BYTE, 4, 0, 1, 0xdeadbeef, 32, 1, 64),
             texts + 3, 1, NULL, 0);
    set_file("char-k3-h64-strip-utf8",
             params(SIMLSH_UNIT_CHAR, 3, SIMLSH_NORM_STRIP_PUNCT, 0, 42, 64, 0, 128), texts + 4, 2,
             NULL, 0);
    set_file("features-h64", params(SIMLSH_UNIT_WORD, 1, 0, 0, 1, 64, 1, 16), NULL, 0, feats,
             sizeof feats / sizeof feats[0]);
    set_file("empty", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, 0, 128), NULL, 0, NULL, 0);
}

/* ---- signatures ---------------------------------------------------------- */

static void sig_file(const char *name, simlsh_params *p, const char *const *docs, size_t ndocs,
                     const uint64_t *features, size_t nf)
{
    simlsh_signature *s;
    OK(simlsh_signature_new(&s, p));
    for (size_t i = 0; i < ndocs; i++)
        OK(simlsh_signature_add_text(s, docs[i], strlen(docs[i])));
    OK(simlsh_signature_add_features(s, features, nf));
    size_t n;
    OK(simlsh_signature_save(NULL, 0, &n, s));
    unsigned char *buf = malloc(n);
    if (buf == NULL)
        DIE("out of memory");
    OK(simlsh_signature_save(buf, n, &n, s));
    simlsh_signature *back;
    OK(simlsh_signature_load(&back, buf, n, NULL));
    emit("signature", name, "", 0, buf, n);
    simlsh_signature_free(back);
    simlsh_signature_free(s);
    simlsh_params_free(p);
    free(buf);
}

static void signatures(void)
{
    static const uint64_t few[] = {3, 1ull << 40};
    sig_file("oph-p64-h64", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, SIMLSH_SCHEME_OPH, 64), texts,
             2, NULL, 0);
    sig_file(
        "classic-p32-h32",
        params(SIMLSH_UNIT_WORD, 2, SIMLSH_NORM_LOWER_ASCII, 0, 9, 32, SIMLSH_SCHEME_CLASSIC, 32),
        texts + 1, 1, NULL, 0);
    /* two features into 16 bins: most rows are filled by densification */
    sig_file("oph-p16-sparse", params(SIMLSH_UNIT_BYTE, 3, 0, 0, 5, 32, SIMLSH_SCHEME_OPH, 16),
             NULL, 0, few, 2);
    sig_file("oph-p1", params(SIMLSH_UNIT_CHAR, 2, 0, 1, 0, 64, SIMLSH_SCHEME_OPH, 1), texts + 2, 1,
             NULL, 0);
    sig_file("empty-classic-p8", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, SIMLSH_SCHEME_CLASSIC, 8),
             NULL, 0, NULL, 0);
    sig_file("oph-p128-utf8",
             params(SIMLSH_UNIT_CHAR, 4, SIMLSH_NORM_STRIP_PUNCT | SIMLSH_NORM_COLLAPSE_SPACE, 0,
                    0xffffffffu, 64, SIMLSH_SCHEME_OPH, 128),
             texts + 4, 2, NULL, 0);
}

/* ---- indexes ------------------------------------------------------------- */

/* An index of @p ndocs documents: texts[i % NTEXTS] plus a feature i / dup,
 * so every @p dup consecutive ids share their signature. */
static void index_file(const char *name, simlsh_params *p, int bands, int rows, int store,
                       double threshold, size_t ndocs, size_t dup)
{
    if (bands > 0) {
        OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, bands));
        OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, rows));
    }
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store));
    OK(simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, threshold));
    simlsh_index *ix;
    OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < ndocs; i++) {
        simlsh_signature *s;
        OK(simlsh_signature_new(&s, p));
        const char *t = texts[(i / dup) % NTEXTS];
        OK(simlsh_signature_add_text(s, t, strlen(t)));
        uint64_t f = i / dup;
        OK(simlsh_signature_add_features(s, &f, 1));
        OK(simlsh_index_insert(ix, 1000 + 17 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    size_t n;
    OK(simlsh_index_save(NULL, 0, &n, ix));
    unsigned char *buf = malloc(n);
    if (buf == NULL)
        DIE("out of memory");
    OK(simlsh_index_save(buf, n, &n, ix));
    simlsh_index *back;
    OK(simlsh_index_load(&back, buf, n, NULL));
    emit("index", name, "", 0, buf, n);
    emit("index-mode", name, "\1", 1, buf, n);
    simlsh_index_free(back);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    free(buf);
}

static void indexes(void)
{
    index_file("oph-p32-b8r4-stored", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 32), 8, 4, 1, 0.8,
               6, 1);
    index_file("oph-p32-b8r4-bare", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 32), 8, 4, 0, 0.8,
               6, 1);
    index_file("classic-p16-b4r4-h32-stored",
               params(SIMLSH_UNIT_WORD, 2, SIMLSH_NORM_LOWER_ASCII, 0, 3, 32, 1, 16), 4, 4, 1, 0.5,
               5, 2);
    /* 12 identical documents: one bucket per band outgrows the table and
     * becomes an overflow list */
    index_file("oph-p16-b8r2-bigbucket", params(SIMLSH_UNIT_BYTE, 4, 0, 0, 11, 32, 0, 16), 8, 2, 1,
               0.9, 12, 12);
    index_file("classic-p24-auto-bare", params(SIMLSH_UNIT_CHAR, 3, 0, 1, 5, 64, 1, 24), 0, 0, 0,
               0.6, 4, 1);
    index_file("oph-p8-b1r7-empty", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, 0, 8), 1, 7, 1, 1.0, 0,
               1);
}

/* ---- indexes with user data (one-file saves) ------------------------------ */

/* As index_file, with user data attached: written to index-userdata/ for
 * fuzz-index-userdata-sealed and to index/ and index-mode/ for the index
 * loaders' targets, so every one of them starts past the section. */
static void index_ud_file(const char *name, simlsh_params *p, int bands, int rows, int store,
                          size_t ndocs, const void *ud, size_t udlen)
{
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, bands));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, rows));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_STORE_SIGNATURES, store));
    simlsh_index *ix;
    OK(simlsh_index_new(&ix, p));
    for (size_t i = 0; i < ndocs; i++) {
        simlsh_signature *s;
        OK(simlsh_signature_new(&s, p));
        const char *t = texts[i % NTEXTS];
        OK(simlsh_signature_add_text(s, t, strlen(t)));
        OK(simlsh_index_insert(ix, 5 + 3 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    OK(simlsh_index_set_userdata(ix, ud, udlen));
    size_t n;
    OK(simlsh_index_save(NULL, 0, &n, ix));
    unsigned char *buf = malloc(n);
    if (buf == NULL)
        DIE("out of memory");
    OK(simlsh_index_save(buf, n, &n, ix));
    simlsh_index *back;
    OK(simlsh_index_load(&back, buf, n, NULL));
    char full[128];
    snprintf(full, sizeof full, "userdata-%s", name);
    emit("index-userdata", name, "", 0, buf, n);
    emit("index", full, "", 0, buf, n);
    emit("index-mode", full, "\1", 1, buf, n);
    simlsh_index_free(back);
    simlsh_index_free(ix);
    simlsh_params_free(p);
    free(buf);
}

static void userdata_indexes(void)
{
    /* the tool's shape: NUL-terminated names of the ids in order */
    static const char names[] = "notes-01.txt\0notes-02.txt\0dir/\xc3\xa9t\xc3\xa9.txt\0"
                                "bad\xff\nname\0";
    static const unsigned char bin[] = {0, 1, 2, 0xff, 0xfe, 0, 0x80, 'S', 'L', 'I', 'X'};
    index_ud_file("names-bare", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 32), 8, 4, 0, 4, names,
                  sizeof names);
    index_ud_file("names-stored", params(SIMLSH_UNIT_WORD, 2, 1, 0, 9, 32, 1, 16), 4, 4, 1, 3,
                  names, sizeof names);
    index_ud_file("binary-bare-b1r1", params(SIMLSH_UNIT_BYTE, 3, 0, 0, 2, 32, 0, 4), 1, 1, 0, 2,
                  bin, sizeof bin);
    index_ud_file("one-byte-empty", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, 0, 8), 2, 3, 1, 0, "x",
                  1);
    /* no user data: mutations that set flag bit 1 must find the section */
    index_ud_file("none-bare", params(SIMLSH_UNIT_CHAR, 4, 0, 0, 1, 64, 0, 16), 4, 2, 0, 3, NULL,
                  0);
}

/* ---- forests and ensembles ------------------------------------------------ */

/* A save of either object through its save function, as @p name behind the
 * mode byte their fuzz targets read first. */
#define EMIT_SAVED(dir, name, save, obj)    \
    do {                                    \
        size_t n_;                          \
        OK(save(NULL, 0, &n_, (obj)));      \
        unsigned char *buf_ = malloc(n_);   \
        if (buf_ == NULL)                   \
            DIE("out of memory");           \
        OK(save(buf_, n_, &n_, (obj)));     \
        emit(dir, name, "\1", 1, buf_, n_); \
        free(buf_);                         \
    } while (0)

/* Document i: texts[i % NTEXTS] plus features i / dup .. i / dup + extra. */
static simlsh_signature *doc_sig(simlsh_params *p, size_t i, size_t dup, size_t extra)
{
    simlsh_signature *s;
    OK(simlsh_signature_new(&s, p));
    const char *t = texts[i % NTEXTS];
    OK(simlsh_signature_add_text(s, t, strlen(t)));
    for (size_t k = 0; k <= extra; k++) {
        uint64_t f = i / dup + k;
        OK(simlsh_signature_add_features(s, &f, 1));
    }
    return s;
}

/* A forest of @p ndocs documents; then every third one removed and, when
 * @p reinsert, the first of those put back, so the saved order (slots)
 * differs from the order of inserts. */
static void forest_file(const char *name, simlsh_params *p, int trees, int depth, size_t ndocs,
                        int reinsert)
{
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, trees));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, depth));
    simlsh_forest *f;
    OK(simlsh_forest_new(&f, p));
    for (size_t i = 0; i < ndocs; i++) {
        simlsh_signature *s = doc_sig(p, i, 2, 0);
        OK(simlsh_forest_insert(f, 100 + 7 * (uint64_t)i, s));
        simlsh_signature_free(s);
    }
    for (size_t i = 0; reinsert && i < ndocs; i += 3)
        OK(simlsh_forest_remove(f, 100 + 7 * (uint64_t)i));
    if (reinsert && ndocs > 0) {
        simlsh_signature *s = doc_sig(p, 0, 2, 3);
        OK(simlsh_forest_insert(f, 100, s));
        simlsh_signature_free(s);
    }
    EMIT_SAVED("forest-mode", name, simlsh_forest_save, f);
    simlsh_forest_free(f);
    simlsh_params_free(p);
}

static void forests(void)
{
    forest_file("oph-p32-default", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 32), 0, 0, 6, 0);
    forest_file("classic-p16-l4d4-removed",
                params(SIMLSH_UNIT_WORD, 2, SIMLSH_NORM_LOWER_ASCII, 0, 3, 32, 1, 16), 4, 4, 9, 1);
    forest_file("oph-p24-l2d5-h32", params(SIMLSH_UNIT_BYTE, 4, 0, 0, 11, 32, 0, 24), 2, 5, 5, 0);
    forest_file("oph-p8-empty", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, 0, 8), 8, 1, 0, 0);
}

/* An ensemble of @p ndocs sets with sizes spread over several partitions;
 * with @p remove, every fourth one removed. */
static void ensemble_file(const char *name, simlsh_params *p, int trees, int depth, size_t ndocs,
                          int remove)
{
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_BANDS, trees));
    OK(simlsh_params_set_int(p, SIMLSH_PARAM_ROWS, depth));
    simlsh_ensemble *e;
    OK(simlsh_ensemble_new(&e, p));
    static const uint64_t sizes[] = {1, 3, 40, 41, 900, 7, 1ull << 40, 2, 64, 65};
    for (size_t i = 0; i < ndocs; i++) {
        simlsh_signature *s = doc_sig(p, i, 1, i % 4);
        OK(simlsh_ensemble_insert(e, 9 + 5 * (uint64_t)i, s, sizes[i % 10]));
        simlsh_signature_free(s);
    }
    for (size_t i = 0; remove && i < ndocs; i += 4)
        OK(simlsh_ensemble_remove(e, 9 + 5 * (uint64_t)i));
    EMIT_SAVED("ensemble-mode", name, simlsh_ensemble_save, e);
    simlsh_ensemble_free(e);
    simlsh_params_free(p);
}

static void ensembles(void)
{
    ensemble_file("oph-p32-default", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 64, 0, 32), 0, 0, 8, 0);
    ensemble_file("classic-p16-l8d2-removed",
                  params(SIMLSH_UNIT_WORD, 2, SIMLSH_NORM_LOWER_ASCII, 0, 3, 32, 1, 16), 8, 2, 10,
                  1);
    ensemble_file("oph-p16-l16d1-h32", params(SIMLSH_UNIT_BYTE, 3, 0, 0, 2, 32, 0, 16), 16, 1, 4,
                  0);
    ensemble_file("oph-p8-empty", params(SIMLSH_UNIT_CHAR, 5, 0, 0, 0, 32, 0, 8), 0, 0, 0, 0);
}

/* ---- shingler inputs ----------------------------------------------------- */

static void shingler(void)
{
    /* byte 0: unit (% 3); byte 1: k - 1 (% 12) and chunk - 1 (high nibble);
     * byte 2: normalisation flags; byte 3: hash bits, policy, scheme, num_perm */
    static const struct {
        const char *name;
        unsigned char head[4];
        size_t text;
    } in[] = {
        {"byte-k4", {0, 0x33, 0, 0x09}, 0},        {"char-k5-nfkc", {1, 0x74, 31, 0x1c}, 4},
        {"word-k2-reject", {2, 0x11, 7, 0x03}, 5}, {"word-k3-lower", {2, 0xf2, 1, 0x45}, 1},
        {"char-k1-chunk1", {1, 0x00, 2, 0xff}, 3},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        emit("shingler", in[i].name, in[i].head, 4, texts[in[i].text], strlen(texts[in[i].text]));
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        check_mode = 1;
        root = argv[2];
    } else if (argc == 2 && argv[1][0] != '-') {
        root = argv[1];
        if (mkdir(root, 0777) != 0 && errno != EEXIST)
            DIE("mkdir %s: %s", root, strerror(errno));
    } else {
        fprintf(stderr, "usage: gen-corpus DIR | gen-corpus --check DIR\n");
        return 2;
    }
    sets();
    signatures();
    indexes();
    userdata_indexes();
    forests();
    ensembles();
    shingler();
    if (check_mode)
        check_no_extra();
    if (failures > 0) {
        fprintf(stderr, "gen-corpus: %d file(s) differ; regenerate (fuzz/README.md)\n", failures);
        return 1;
    }
    return 0;
}
