/*
 * simlsh-groundtruth: every pair of documents whose exact Jaccard similarity
 * reaches the threshold, for judging simlsh-dedup (docs/quality.md).
 *
 * Documents, names, shingle sets and the output format are those of
 * `simlsh-dedup --verify exact --output pairs` (docs/cli.md): the same
 * inputs (PATH, --lines FILE), the same hashing options and defaults, the
 * same library call to build each set, and the same test (the double
 * inter / union >= threshold). Only the pair search differs: instead of
 * LSH it is exhaustive, so its answer is the truth the tool is measured
 * against.
 *
 * The search is AllPairs with prefix and size filters. Tokens (shingle
 * hashes) are ranked rarest first and each set is sorted by rank. With
 * a = ceil(t |x|), J(x, y) >= t implies |x & y| >= max(a_x, a_y), and two
 * sets that share that many tokens share one among the first |x| - a_x + 1
 * of x and the first |y| - a_y + 1 of y; J >= t also needs
 * min(|x|,|y|) >= t max(|x|,|y|). So only documents whose prefixes meet and
 * whose sizes are close are compared, by a full merge of the two sets.
 * The filters use a threshold a little below t, so a rounding in the double
 * test cannot hide a pair: they may only let more candidates through.
 */
#include <simlsh.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "simlsh-groundtruth"

static const char usage_text[] =
    "Usage: " PROG " [OPTION]... [PATH | --lines FILE]...\n"
    "Print every pair of documents with exact Jaccard similarity >= the threshold,\n"
    "as `simlsh-dedup --verify exact --output pairs` prints them (TSV, input order).\n"
    "\n"
    "Inputs as in simlsh-dedup: a file, a directory (regular files below it, names\n"
    "in byte order), --lines FILE (one document per line), --files-from LIST (one\n"
    "path per line).\n"
    "\n"
    "  --unit UNIT        byte, char (default) or word\n"
    "  -k, --k N          units per shingle (default 5)\n"
    "  --normalize LIST   lower, space, punct, casefold, nfkc, none (default lower,space)\n"
    "  --seed N           hash seed (default 0)\n"
    "  --hash-bits N      32 (default) or 64\n"
    "  --strict-utf8      skip documents with invalid UTF-8\n"
    "  --threshold T      Jaccard threshold, 0 < T <= 1 (default 0.8)\n"
    "  --counts           add two columns: intersection and union sizes\n"
    "  -o FILE            write to FILE instead of standard output\n"
    "  --stats            print a JSON summary to standard error\n"
    "  -q, --quiet        no messages about skipped documents\n"
    "  -h, --help         this help\n";

struct doc {
    char *name;
    uint32_t *set; /* ranks, ascending (rarest token first) */
    uint32_t n;
    uint64_t *hashes; /* until ranked */
};

struct corpus {
    struct doc *d;
    size_t n, cap;
    size_t skipped;
    uint64_t bytes;
};

struct opts {
    simlsh_params *params;
    double threshold;
    int counts, stats, quiet;
    const char *out;
};

static void die(const char *what, const char *why)
{
    fprintf(stderr, PROG ": %s: %s\n", what, why);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory", strerror(ENOMEM));
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die("out of memory", strerror(ENOMEM));
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* Reading: the documents simlsh-dedup reads, named as it names them        */
/* ------------------------------------------------------------------------ */

static void add_doc(struct corpus *c, const struct opts *o, simlsh_shingleset *set, char *name,
                    const char *text, size_t len)
{
    int rc = simlsh_shingleset_clear(set);
    if (rc == 0)
        rc = simlsh_shingleset_add_text(set, text, len);
    size_t n = 0;
    if (rc == 0)
        rc = simlsh_shingleset_count(&n, set);
    c->bytes += len;
    if (rc != 0 || n == 0) {
        if (!o->quiet)
            fprintf(stderr, PROG ": %s: %s, skipped\n", name,
                    rc ? simlsh_strerror(rc) : "empty document");
        c->skipped++;
        free(name);
        return;
    }
    if (n > UINT32_MAX)
        die(name, "too many shingles");
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->d = xrealloc(c->d, c->cap * sizeof *c->d);
    }
    struct doc *d = &c->d[c->n++];
    d->name = name;
    d->n = (uint32_t)n;
    d->set = NULL;
    d->hashes = xmalloc(n * sizeof *d->hashes);
    size_t got = 0;
    rc = simlsh_shingleset_hashes(d->hashes, n, &got, set);
    if (rc != 0 || got != n)
        die(name, "cannot read the shingle hashes");
}

static char *read_all(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 65536, n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        cap = (size_t)st.st_size + 1;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            close(fd);
            free(buf);
            errno = e;
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    *len = n;
    return buf;
}

static void add_file(struct corpus *c, const struct opts *o, simlsh_shingleset *set,
                     const char *path)
{
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text) {
        if (!o->quiet)
            fprintf(stderr, PROG ": %s: cannot open: %s\n", path, strerror(errno));
        c->skipped++;
        return;
    }
    add_doc(c, o, set, xstrdup(path), text, len);
    free(text);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *join_path(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = xmalloc(dl + (size_t)slash + nl + 1);
    memcpy(p, dir, dl);
    if (slash)
        p[dl] = '/';
    memcpy(p + dl + (size_t)slash, name, nl + 1);
    return p;
}

/* As simlsh-dedup walks: depth first, names in byte order, links to files
 * followed, links to directories not. */
static void walk(struct corpus *c, const struct opts *o, simlsh_shingleset *set, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, PROG ": %s: cannot open directory: %s\n", dir, strerror(errno));
        c->skipped++;
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char *p = join_path(dir, names[i]);
        struct stat st;
        if (lstat(p, &st) != 0) {
            c->skipped++;
        } else if (S_ISDIR(st.st_mode)) {
            walk(c, o, set, p);
        } else if (S_ISLNK(st.st_mode)) {
            if (stat(p, &st) != 0)
                c->skipped++;
            else if (S_ISREG(st.st_mode))
                add_file(c, o, set, p);
        } else if (S_ISREG(st.st_mode)) {
            add_file(c, o, set, p);
        } else {
            c->skipped++;
        }
        free(p);
        free(names[i]);
    }
    free(names);
}

static void add_path(struct corpus *c, const struct opts *o, simlsh_shingleset *set,
                     const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        c->skipped++;
    } else if (S_ISDIR(st.st_mode)) {
        walk(c, o, set, path);
    } else {
        add_file(c, o, set, path);
    }
}

static void add_lines(struct corpus *c, const struct opts *o, simlsh_shingleset *set,
                      const char *path, int prefix)
{
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text)
        die(path, strerror(errno));
    size_t start = 0;
    unsigned long long line = 0;
    while (start < len) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t l = nl ? (size_t)(nl - (text + start)) : len - start;
        size_t tl = l > 0 && text[start + l - 1] == '\r' ? l - 1 : l; /* CRLF */
        char num[32];
        snprintf(num, sizeof num, "%llu", ++line);
        char *name;
        if (prefix) {
            name = xmalloc(strlen(path) + strlen(num) + 2);
            sprintf(name, "%s:%s", path, num);
        } else {
            name = xstrdup(num);
        }
        add_doc(c, o, set, name, text + start, tl);
        start += l + 1;
    }
    free(text);
}

static void add_list(struct corpus *c, const struct opts *o, simlsh_shingleset *set,
                     const char *list)
{
    FILE *f = fopen(list, "r");
    if (!f)
        die(list, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        if (n > 0)
            add_path(c, o, set, line);
    }
    free(line);
    fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Ranking tokens, rarest first                                             */
/* ------------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* LSD radix sort on 16-bit digits (bits is 32 or 64: an even number of
 * passes leaves the result in a); qsort on tens of millions of hashes would
 * dominate the run. */
static void sort_u64(uint64_t *a, size_t n, int bits)
{
    uint64_t *tmp = xmalloc(n * sizeof *tmp);
    size_t *cnt = xmalloc(65536 * sizeof *cnt);
    for (int shift = 0; shift < bits; shift += 16) {
        memset(cnt, 0, 65536 * sizeof *cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(a[i] >> shift) & 0xffff]++;
        size_t sum = 0;
        for (size_t k = 0; k < 65536; k++) {
            size_t t = cnt[k];
            cnt[k] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            tmp[cnt[(a[i] >> shift) & 0xffff]++] = a[i];
        uint64_t *s = a;
        a = tmp;
        tmp = s;
    }
    free(tmp);
    free(cnt);
}

struct tok {
    uint64_t hash;
    uint32_t df, rank;
};

static int cmp_tok_df(const void *a, const void *b)
{
    const struct tok *x = a, *y = b;
    if (x->df != y->df)
        return x->df < y->df ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int cmp_tok_hash(const void *a, const void *b)
{
    const struct tok *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static size_t rank_tokens(struct corpus *c, int hash_bits)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++)
        total += c->d[i].n;
    uint64_t *all = xmalloc(total * sizeof *all);
    size_t at = 0;
    for (size_t i = 0; i < c->n; i++) {
        memcpy(all + at, c->d[i].hashes, c->d[i].n * sizeof *all);
        at += c->d[i].n;
    }
    sort_u64(all, total, hash_bits);
    size_t ntok = 0;
    for (size_t i = 0; i < total; i++)
        if (i == 0 || all[i] != all[i - 1])
            ntok++;
    struct tok *t = xmalloc(ntok * sizeof *t);
    ntok = 0;
    for (size_t i = 0; i < total; i++) {
        if (i == 0 || all[i] != all[i - 1]) {
            t[ntok].hash = all[i];
            t[ntok].df = 0;
            ntok++;
        }
        t[ntok - 1].df++;
    }
    free(all);
    qsort(t, ntok, sizeof *t, cmp_tok_df);
    for (size_t i = 0; i < ntok; i++)
        t[i].rank = (uint32_t)i;
    qsort(t, ntok, sizeof *t, cmp_tok_hash);
    for (size_t i = 0; i < c->n; i++) {
        struct doc *d = &c->d[i];
        d->set = xmalloc(d->n * sizeof *d->set);
        /* both sorted by hash: one forward walk with galloping would do,
         * binary search is simpler and fast enough */
        size_t lo = 0;
        for (uint32_t j = 0; j < d->n; j++) {
            size_t l = lo, h = ntok;
            while (l < h) {
                size_t mid = l + (h - l) / 2;
                if (t[mid].hash < d->hashes[j])
                    l = mid + 1;
                else
                    h = mid;
            }
            d->set[j] = t[l].rank;
            lo = l + 1;
        }
        free(d->hashes);
        d->hashes = NULL;
        qsort(d->set, d->n, sizeof *d->set, cmp_u32);
    }
    free(t);
    return ntok;
}

/* ------------------------------------------------------------------------ */
/* AllPairs                                                                 */
/* ------------------------------------------------------------------------ */

struct pair {
    uint32_t a, b; /* input order, a < b */
    uint32_t inter, uni;
};

static int cmp_pair(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static const struct corpus *g_sort_corpus;

static int cmp_by_size(const void *x, const void *y)
{
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    uint32_t a = g_sort_corpus->d[i].n, b = g_sort_corpus->d[j].n;
    if (a != b)
        return a < b ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* |x & y|, or any value below need once need cannot be reached any more
 * (the merge stops early: most candidates fail by far). */
static uint32_t overlap(const uint32_t *x, uint32_t nx, const uint32_t *y, uint32_t ny,
                        uint32_t need)
{
    uint32_t i = 0, j = 0, o = 0;
    while (i < nx && j < ny) {
        if (x[i] < y[j]) {
            i++;
            if (o + (nx - i < ny - j ? nx - i : ny - j) < need)
                break;
        } else if (x[i] > y[j]) {
            j++;
            if (o + (nx - i < ny - j ? nx - i : ny - j) < need)
                break;
        } else {
            o++;
            i++;
            j++;
        }
    }
    return o;
}

struct search_stats {
    uint64_t candidates;
    size_t tokens;
};

/* The shortest prefix that still catches every pair: its length for a set
 * of n tokens at the filter threshold tf (a little below t). */
static uint32_t prefix_len(uint32_t n, double tf)
{
    double a = ceil(tf * (double)n);
    if (a < 1)
        a = 1;
    if (a > n)
        a = n;
    return n - (uint32_t)a + 1;
}

static struct pair *all_pairs(const struct corpus *c, double t, size_t ntok, size_t *npairs,
                              struct search_stats *st)
{
    size_t n = c->n;
    double tf = t * (1.0 - 1e-9);
    uint32_t *order = xmalloc(n * sizeof *order); /* position -> doc */
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    g_sort_corpus = c;
    qsort(order, n, sizeof *order, cmp_by_size);

    /* Posting lists of prefix tokens, filled in size order, so the list of
     * a token holds positions in ascending order. */
    size_t *off = xmalloc((ntok + 1) * sizeof *off);
    memset(off, 0, (ntok + 1) * sizeof *off);
    for (size_t i = 0; i < n; i++) {
        const struct doc *d = &c->d[i];
        uint32_t p = prefix_len(d->n, tf);
        for (uint32_t j = 0; j < p; j++)
            off[d->set[j] + 1]++;
    }
    for (size_t k = 0; k < ntok; k++)
        off[k + 1] += off[k];
    uint32_t *post = xmalloc((off[ntok] ? off[ntok] : 1) * sizeof *post);
    size_t *fill = xmalloc((ntok ? ntok : 1) * sizeof *fill);
    memcpy(fill, off, ntok * sizeof *fill);
    for (size_t pos = 0; pos < n; pos++) {
        const struct doc *d = &c->d[order[pos]];
        uint32_t p = prefix_len(d->n, tf);
        for (uint32_t j = 0; j < p; j++)
            post[fill[d->set[j]]++] = (uint32_t)pos;
    }
    /* fill[k] now marks the end; reuse it as the first position that can
     * still pass the size filter (sizes only grow along the walk) */
    memcpy(fill, off, ntok * sizeof *fill);

    uint32_t *stamp = xmalloc(n * sizeof *stamp);
    uint32_t *cand = xmalloc(n * sizeof *cand);
    for (size_t i = 0; i < n; i++)
        stamp[i] = UINT32_MAX;
    struct pair *out = NULL;
    size_t np = 0, cap = 0;
    for (size_t pos = 0; pos < n; pos++) {
        uint32_t xi = order[pos];
        const struct doc *x = &c->d[xi];
        double minsize = tf * (double)x->n;
        uint32_t p = prefix_len(x->n, tf), nc = 0;
        for (uint32_t j = 0; j < p; j++) {
            uint32_t w = x->set[j];
            size_t k = fill[w];
            while (k < off[w + 1] && post[k] < pos && (double)c->d[order[post[k]]].n < minsize)
                k++;
            fill[w] = k;
            for (; k < off[w + 1] && post[k] < pos; k++) {
                uint32_t yp = post[k];
                if (stamp[yp] != pos) {
                    stamp[yp] = (uint32_t)pos;
                    cand[nc++] = yp;
                }
            }
        }
        st->candidates += nc;
        for (uint32_t q = 0; q < nc; q++) {
            uint32_t yi = order[cand[q]];
            const struct doc *y = &c->d[yi];
            /* J >= t needs o >= t (|x| + |y|) / (1 + t); one less for safety */
            double need = floor(tf * (double)(x->n + y->n) / (1.0 + tf)) - 1;
            uint32_t o = overlap(x->set, x->n, y->set, y->n, need > 0 ? (uint32_t)need : 0);
            uint32_t u = x->n + y->n - o;
            /* the test of simlsh_shingleset_jaccard() and simlsh-dedup */
            double jac = (double)o / (double)u;
            if (!(jac >= t))
                continue;
            if (np == cap) {
                cap = cap ? 2 * cap : 1024;
                out = xrealloc(out, cap * sizeof *out);
            }
            out[np].a = xi < yi ? xi : yi;
            out[np].b = xi < yi ? yi : xi;
            out[np].inter = o;
            out[np].uni = u;
            np++;
        }
    }
    free(stamp);
    free(cand);
    free(post);
    free(fill);
    free(off);
    free(order);
    if (np > 1)
        qsort(out, np, sizeof *out, cmp_pair);
    st->tokens = ntok;
    *npairs = np;
    return out;
}

/* ------------------------------------------------------------------------ */
/* Options and output                                                       */
/* ------------------------------------------------------------------------ */

static void put_name(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\t':
            fputs("\\t", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        default:
            fputc(*s, f);
            break;
        }
    }
}

static long long parse_int(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end)
        die(opt, "not an integer");
    return v;
}

static int pick(const char *opt, const char *s, const char *const *names, const int *values)
{
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(s, names[i]))
            return values[i];
    die(opt, "unknown value");
    return -1;
}

static int parse_normalize(const char *s)
{
    static const char *const names[] = {"lower", "space", "punct", "casefold",
                                        "nfkc",  "none",  NULL};
    static const int values[] = {SIMLSH_NORM_LOWER_ASCII, SIMLSH_NORM_COLLAPSE_SPACE,
                                 SIMLSH_NORM_STRIP_PUNCT, SIMLSH_NORM_CASEFOLD,
                                 SIMLSH_NORM_NFKC,        0};
    int flags = 0;
    char *copy = xstrdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        flags |= pick("--normalize", tok, names, values);
    free(copy);
    return flags;
}

static void set_param(simlsh_params *p, int key, long long v, const char *opt)
{
    if (simlsh_params_set_int(p, key, v) != 0)
        die(opt, "value out of range or unsupported");
}

enum {
    OPT_UNIT = 256,
    OPT_NORMALIZE,
    OPT_SEED,
    OPT_HASH_BITS,
    OPT_STRICT_UTF8,
    OPT_THRESHOLD,
    OPT_COUNTS,
    OPT_STATS,
    OPT_LINES,
    OPT_FILES_FROM
};

int main(int argc, char **argv)
{
    static const struct option lo[] = {{"unit", required_argument, NULL, OPT_UNIT},
                                       {"k", required_argument, NULL, 'k'},
                                       {"normalize", required_argument, NULL, OPT_NORMALIZE},
                                       {"seed", required_argument, NULL, OPT_SEED},
                                       {"hash-bits", required_argument, NULL, OPT_HASH_BITS},
                                       {"strict-utf8", no_argument, NULL, OPT_STRICT_UTF8},
                                       {"threshold", required_argument, NULL, OPT_THRESHOLD},
                                       {"counts", no_argument, NULL, OPT_COUNTS},
                                       {"stats", no_argument, NULL, OPT_STATS},
                                       {"lines", required_argument, NULL, OPT_LINES},
                                       {"files-from", required_argument, NULL, OPT_FILES_FROM},
                                       {"output-file", required_argument, NULL, 'o'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    static const char *const units[] = {"byte", "char", "word", NULL};
    static const int unit_v[] = {SIMLSH_UNIT_BYTE, SIMLSH_UNIT_CHAR, SIMLSH_UNIT_WORD};
    struct opts o = {0};
    o.threshold = 0.8;
    if (simlsh_params_new(&o.params, NULL) != 0)
        die("params", "cannot create");
    /* simlsh-dedup's defaults, which differ from the library's */
    set_param(o.params, SIMLSH_PARAM_NORMALIZE,
              SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE, "--normalize");

    struct input {
        int kind;
        const char *arg;
    } *in = xmalloc((size_t)argc * sizeof *in);
    size_t nin = 0;
    int c;
    while ((c = getopt_long(argc, argv, "-k:o:qh", lo, NULL)) != -1) {
        switch (c) {
        case 1:
            in[nin].kind = 0;
            in[nin++].arg = optarg;
            break;
        case OPT_LINES:
            in[nin].kind = 1;
            in[nin++].arg = optarg;
            break;
        case OPT_FILES_FROM:
            in[nin].kind = 2;
            in[nin++].arg = optarg;
            break;
        case OPT_UNIT:
            set_param(o.params, SIMLSH_PARAM_UNIT, pick("--unit", optarg, units, unit_v), "--unit");
            break;
        case 'k':
            set_param(o.params, SIMLSH_PARAM_K, parse_int("-k", optarg), "-k");
            break;
        case OPT_NORMALIZE:
            set_param(o.params, SIMLSH_PARAM_NORMALIZE, parse_normalize(optarg), "--normalize");
            break;
        case OPT_SEED:
            set_param(o.params, SIMLSH_PARAM_SEED, parse_int("--seed", optarg), "--seed");
            break;
        case OPT_HASH_BITS:
            set_param(o.params, SIMLSH_PARAM_HASH_BITS, parse_int("--hash-bits", optarg),
                      "--hash-bits");
            break;
        case OPT_STRICT_UTF8:
            set_param(o.params, SIMLSH_PARAM_UTF8_POLICY, SIMLSH_UTF8_REJECT, "--strict-utf8");
            break;
        case OPT_THRESHOLD: {
            char *end;
            errno = 0;
            o.threshold = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o.threshold > 0 && o.threshold <= 1))
                die("--threshold", "not a number in (0, 1]");
            break;
        }
        case OPT_COUNTS:
            o.counts = 1;
            break;
        case OPT_STATS:
            o.stats = 1;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (nin == 0)
        die("no input", "give a path, --lines FILE or --files-from LIST");
    FILE *out = stdout;
    if (o.out && !(out = fopen(o.out, "w")))
        die(o.out, strerror(errno));

    double t0 = now();
    simlsh_shingleset *set = NULL;
    if (simlsh_shingleset_new(&set, o.params) != 0)
        die("shingle set", "cannot create");
    struct corpus corp = {0};
    for (size_t i = 0; i < nin; i++) {
        if (in[i].kind == 1)
            add_lines(&corp, &o, set, in[i].arg, nin > 1);
        else if (in[i].kind == 2)
            add_list(&corp, &o, set, in[i].arg);
        else
            add_path(&corp, &o, set, in[i].arg);
    }
    simlsh_shingleset_free(set);
    if (corp.n > UINT32_MAX - 1)
        die("input", "too many documents");
    double t1 = now();
    int64_t hash_bits = 32;
    simlsh_params_get_int(o.params, SIMLSH_PARAM_HASH_BITS, &hash_bits);
    size_t ntok = rank_tokens(&corp, (int)hash_bits);
    double t2 = now();
    struct search_stats st = {0};
    size_t np = 0;
    struct pair *pairs = all_pairs(&corp, o.threshold, ntok, &np, &st);
    double t3 = now();

    for (size_t i = 0; i < np; i++) {
        put_name(out, corp.d[pairs[i].a].name);
        fputc('\t', out);
        put_name(out, corp.d[pairs[i].b].name);
        fprintf(out, "\t%.4f", (double)pairs[i].inter / (double)pairs[i].uni);
        if (o.counts)
            fprintf(out, "\t%u\t%u", pairs[i].inter, pairs[i].uni);
        fputc('\n', out);
    }
    if (fflush(out) != 0 || (out != stdout && fclose(out) != 0))
        die(o.out ? o.out : "stdout", "write error");
    if (o.stats) {
        uint64_t shingles = 0;
        for (size_t i = 0; i < corp.n; i++)
            shingles += corp.d[i].n;
        fprintf(stderr,
                "{\"docs\":%zu,\"skipped\":%zu,\"bytes\":%llu,\"shingles\":%llu,"
                "\"tokens\":%zu,\"threshold\":%g,\"candidates\":%llu,\"pairs\":%zu,"
                "\"read_s\":%.3f,\"rank_s\":%.3f,\"search_s\":%.3f}\n",
                corp.n, corp.skipped, (unsigned long long)corp.bytes, (unsigned long long)shingles,
                st.tokens, o.threshold, (unsigned long long)st.candidates, np, t1 - t0, t2 - t1,
                t3 - t2);
    }
    for (size_t i = 0; i < corp.n; i++) {
        free(corp.d[i].name);
        free(corp.d[i].set);
    }
    free(corp.d);
    free(pairs);
    free(in);
    simlsh_params_free(o.params);
    return 0;
}
