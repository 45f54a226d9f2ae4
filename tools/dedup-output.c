/* simlsh-dedup: clusters, pairs and keep lists; the --save-index sidecar. */
#include "dedup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pair {
    uint64_t a, b;
    double score;
};

static int cmp_pair(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return 0;
}

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "simlsh-dedup: %s: %s (%s)\n", what, simlsh_strerror(rc),
            simlsh_error_name(rc));
    return -1;
}

/* Candidate pairs, verified as --verify asks, sorted by (a, b). */
static int verified_pairs(struct run *r, simlsh_results *res, struct pair **out, size_t *n_out)
{
    int flags = r->opt->verify == VERIFY_ESTIMATE ? SIMLSH_QUERY_VERIFY : 0;
    int rc = simlsh_index_pairs(res, r->index, flags, r->opt->max_pairs);
    if (rc != 0)
        return lib_fail("enumerating pairs", rc);
    if (simlsh_results_truncated(res) == 1)
        r->truncated = 1;
    if (simlsh_results_truncated(res) == 1)
        fprintf(stderr, "simlsh-dedup: warning: stopped at %zu candidate pairs (--max-pairs);"
                        " results are incomplete\n", r->opt->max_pairs);
    size_t n = simlsh_results_count(res), m = 0;
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    const double *s = simlsh_results_scores(res);
    struct pair *p = xmalloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = a[i] < b[i] ? a[i] : b[i], y = a[i] < b[i] ? b[i] : a[i];
        double score = s ? s[i] : -1.0;
        if (y >= r->names.count) {
            fprintf(stderr, "simlsh-dedup: the index holds id %" PRIu64
                            " that has no name; was it saved by another program?\n", y);
            free(p);
            return -1;
        }
        if (r->opt->verify == VERIFY_EXACT) {
            if (x >= r->sets_cap || y >= r->sets_cap || !r->sets[x] || !r->sets[y]) {
                fputs("simlsh-dedup: internal error: shingle set missing\n", stderr);
                free(p);
                return -1;
            }
            rc = simlsh_shingleset_jaccard(&score, r->sets[x], r->sets[y]);
            if (rc != 0) {
                free(p);
                return lib_fail("exact Jaccard", rc);
            }
            if (score < r->threshold)
                continue;
        }
        p[m].a = x;
        p[m].b = y;
        p[m].score = score;
        m++;
    }
    qsort(p, m, sizeof *p, cmp_pair);
    *out = p;
    *n_out = m;
    return 0;
}

static uint64_t uf_find(uint64_t *parent, uint64_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* label[id] = smallest id of id's cluster (id itself for singletons). */
static int cluster_labels(struct run *r, simlsh_results *res, uint64_t *label)
{
    size_t n = r->names.count;
    if (r->opt->verify == VERIFY_EXACT) {
        struct pair *p = NULL;
        size_t np = 0;
        if (verified_pairs(r, res, &p, &np))
            return -1;
        for (size_t i = 0; i < n; i++)
            label[i] = i;
        for (size_t i = 0; i < np; i++) {
            uint64_t x = uf_find(label, p[i].a), y = uf_find(label, p[i].b);
            /* the smaller root wins, so every root is its cluster's minimum */
            if (x < y)
                label[y] = x;
            else if (y < x)
                label[x] = y;
        }
        for (size_t i = 0; i < n; i++)
            label[i] = uf_find(label, i);
        free(p);
        return 0;
    }
    int flags = r->opt->verify == VERIFY_ESTIMATE ? SIMLSH_QUERY_VERIFY : 0;
    int rc = simlsh_index_cluster(res, r->index, flags);
    if (rc != 0)
        return lib_fail("clustering", rc);
    for (size_t i = 0; i < n; i++)
        label[i] = i;
    size_t rows = simlsh_results_count(res);
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    for (size_t i = 0; i < rows; i++) {
        if (a[i] >= n || b[i] >= n) {
            fprintf(stderr, "simlsh-dedup: the index holds id %" PRIu64
                            " that has no name; was it saved by another program?\n",
                    a[i] >= n ? a[i] : b[i]);
            return -1;
        }
        label[a[i]] = b[i];
    }
    return 0;
}

static void put_name(const struct run *r, FILE *out, uint64_t id)
{
    size_t len;
    const char *s = strlist_get(&r->names, id, &len);
    if (r->opt->format == FMT_JSONL && r->names.size[id] == 1)
        fwrite(s, 1, len, out); /* a JSONL id that was an integer stays one */
    else if (r->opt->format == FMT_JSONL)
        escape_json(out, s, len);
    else
        escape_tsv(out, s, len);
}

static void put_pair(const struct run *r, FILE *out, const struct pair *p)
{
    if (r->opt->format == FMT_JSONL) {
        fputs("{\"a\":", out);
        put_name(r, out, p->a);
        fputs(",\"b\":", out);
        put_name(r, out, p->b);
        if (p->score < 0)
            fputs(",\"similarity\":null}\n", out);
        else
            fprintf(out, ",\"similarity\":%.4f}\n", p->score);
    } else {
        put_name(r, out, p->a);
        fputc('\t', out);
        put_name(r, out, p->b);
        if (p->score < 0)
            fputs("\tNA\n", out);
        else
            fprintf(out, "\t%.4f\n", p->score);
    }
}

int write_results(struct run *r, FILE *out, uint64_t *clusters, uint64_t *duplicates)
{
    size_t n = r->names.count;
    uint64_t first_new = r->first_new;
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc != 0)
        return lib_fail("results", rc);
    uint64_t *label = xmalloc((n ? n : 1) * sizeof *label);
    uint64_t *order = NULL, *start = NULL, *kept = NULL;
    int ret = -1;
    if (cluster_labels(r, res, label))
        goto done;

    /* Ids grouped by label, each group in id order (a stable counting
     * sort), groups in order of their smallest id. */
    start = calloc(n + 1, sizeof *start);
    order = xmalloc((n ? n : 1) * sizeof *order);
    if (!start)
        die_oom();
    for (size_t i = 0; i < n; i++)
        start[label[i] + 1]++;
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (size_t i = 0; i < n; i++)
        order[start[label[i]]++] = i;
    /* start[l] now ends group l; rebuild the beginnings */
    for (size_t i = n; i > 0; i--)
        start[i] = start[i - 1];
    start[0] = 0;

    /* kept[g] for every group: the id --keep chooses. A group with an id
     * from --index keeps that one (it is already in the collection). */
    kept = xmalloc((n ? n : 1) * sizeof *kept);
    if (n)
        ensure_idmeta(r, n - 1);
    for (size_t l = 0; l < n; l++) {
        size_t b = start[l], e = start[l + 1];
        if (e == b)
            continue;
        uint64_t best = order[b];
        if (best >= first_new) {
            for (size_t k = b + 1; k < e; k++) {
                uint64_t id = order[k];
                int better = 0;
                switch (r->opt->keep) {
                case KEEP_SHORTEST: better = r->id_bytes[id] < r->id_bytes[best]; break;
                case KEEP_LONGEST: better = r->id_bytes[id] > r->id_bytes[best]; break;
                case KEEP_OLDEST: better = r->id_mtime[id] < r->id_mtime[best]; break;
                case KEEP_NEWEST: better = r->id_mtime[id] > r->id_mtime[best]; break;
                default: break;
                }
                if (better)
                    best = id; /* ties keep the earlier id: order is by id */
            }
        }
        for (size_t k = b; k < e; k++)
            kept[order[k]] = best;
    }

    *clusters = 0;
    *duplicates = 0;
    for (size_t i = first_new; i < n; i++)
        if (kept[i] != i)
            (*duplicates)++;

    uint64_t cluster_no = 0;
    for (size_t l = 0; l < n; l++) {
        size_t b = start[l], e = start[l + 1];
        if (e - b < 2 || order[e - 1] < first_new)
            continue;
        (*clusters)++;
        if (r->opt->output != OUT_CLUSTERS)
            continue;
        cluster_no++;
        if (r->opt->format == FMT_JSONL) {
            fprintf(out, "{\"cluster\":%" PRIu64 ",\"size\":%zu,\"ids\":[", cluster_no, e - b);
            for (size_t k = b; k < e; k++) {
                if (k > b)
                    fputc(',', out);
                put_name(r, out, order[k]);
            }
            fputs("]}\n", out);
        } else {
            for (size_t k = b; k < e; k++) {
                if (k > b)
                    fputc('\t', out);
                put_name(r, out, order[k]);
            }
            fputc('\n', out);
        }
    }

    if (r->opt->output == OUT_RECORDS || r->opt->output == OUT_DROP_RECORDS) {
        int want_kept = r->opt->output == OUT_RECORDS;
        for (size_t i = first_new; i < n; i++) {
            if ((kept[i] == i) != want_kept)
                continue;
            size_t len;
            const char *s = strlist_get(&r->records, i - first_new, &len);
            fwrite(s, 1, len, out);
            fputc('\n', out);
        }
    } else if (r->opt->output == OUT_KEEP || r->opt->output == OUT_DROP) {
        int want_kept = r->opt->output == OUT_KEEP;
        for (size_t i = first_new; i < n; i++) {
            if ((kept[i] == i) != want_kept)
                continue;
            if (r->opt->format == FMT_JSONL) {
                fputs("{\"id\":", out);
                put_name(r, out, i);
                fputs("}\n", out);
            } else {
                put_name(r, out, i);
                fputc('\n', out);
            }
        }
    } else if (r->opt->output == OUT_PAIRS) {
        struct pair *p = NULL;
        size_t np = 0;
        if (verified_pairs(r, res, &p, &np))
            goto done;
        for (size_t i = 0; i < np; i++)
            if (p[i].b >= first_new)
                put_pair(r, out, &p[i]);
        free(p);
    }
    ret = 0;
done:
    free(kept);
    free(label);
    free(order);
    free(start);
    simlsh_results_free(res);
    return ret;
}

/* ------------------------------------------------------------------------ */
/* Sidecar: INDEX.names                                                     */
/* ------------------------------------------------------------------------ */

/*
 * The library's index file holds signatures and band tables under numeric
 * ids; simlsh-dedup keeps the rest in INDEX.names, a text file:
 *
 *   simlsh-dedup-names 2
 *   param <key name> <value>        one per contract key
 *   fingerprint <16 hex digits>     simlsh_index_fingerprint() of INDEX
 *   index-checksum <16 hex digits>  the last 8 bytes of INDEX (its checksum)
 *   count <N>
 *   <name of id 0>                  N lines, escaped as TSV fields
 *   ...
 *   end
 *   checksum <16 hex digits>        FNV-1a 64 of every byte above this line
 *
 * The params make the file say which contract the index was built with.
 * index-checksum ties the names to one save of INDEX: a names file from
 * another save (same count or not) is refused instead of naming the ids
 * wrongly, and the checksum catches an edited or damaged names file.
 * Version 1 files (no index-checksum, no checksum) still load.
 */

#define SIDECAR_MAGIC "simlsh-dedup-names 2"
#define SIDECAR_MAGIC_V1 "simlsh-dedup-names 1"
#define MAX_KEY 64

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}
#define FNV_INIT UINT64_C(14695981039346656037)

/* The checksum the library stores in the last 8 bytes of a saved object,
 * as 16 hex digits in file order. */
int index_file_checksum(const char *index_path, char hex[17])
{
    int fd = open(index_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    unsigned char b[8];
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 8 &&
             pread(fd, b, 8, st.st_size - 8) == 8;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        fprintf(stderr, "simlsh-dedup: %s: cannot read its checksum: %s\n", qname(index_path),
                e ? strerror(e) : "too short");
        return -1;
    }
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return 0;
}

static char *sidecar_path(const char *index_path)
{
    size_t l = strlen(index_path);
    char *p = xmalloc(l + 7);
    memcpy(p, index_path, l);
    memcpy(p + l, ".names", 7);
    return p;
}

int sidecar_save(const struct run *r, const char *index_path)
{
    uint64_t fp = 0;
    int rc = simlsh_index_fingerprint(&fp, r->index);
    if (rc != 0)
        return lib_fail("index fingerprint", rc);
    char ixsum[17];
    if (index_file_checksum(index_path, ixsum) != 0)
        return -1;
    /* The body is composed in memory so its checksum can follow it. */
    char *body = NULL;
    size_t body_len = 0;
    FILE *f = open_memstream(&body, &body_len);
    if (!f)
        die_oom();
    fprintf(f, "%s\n", SIDECAR_MAGIC);
    for (int key = 1; key < MAX_KEY; key++) {
        const char *name = simlsh_params_key_name(key);
        int64_t iv;
        double dv;
        if (!name || key == SIMLSH_PARAM_ISA)
            continue; /* ISA is not part of the contract */
        if (simlsh_params_get_int(r->params, key, &iv) == 0)
            fprintf(f, "param %s %" PRId64 "\n", name, iv);
        else if (simlsh_params_get_double(r->params, key, &dv) == 0)
            fprintf(f, "param %s %.17g\n", name, dv);
    }
    fprintf(f, "fingerprint %016" PRIx64 "\n", fp);
    fprintf(f, "index-checksum %s\n", ixsum);
    fprintf(f, "count %zu\n", r->names.count);
    for (size_t i = 0; i < r->names.count; i++) {
        size_t len;
        const char *s = strlist_get(&r->names, i, &len);
        escape_tsv(f, s, len);
        fputc('\n', f);
    }
    fputs("end\n", f);
    if (fclose(f) != 0)
        die_oom();
    char *path = sidecar_path(index_path);
    struct outfile of;
    if (outfile_open(&of, path) != 0) {
        free(path);
        free(body);
        return -1;
    }
    fwrite(body, 1, body_len, of.f);
    fprintf(of.f, "checksum %016" PRIx64 "\n", fnv1a(FNV_INIT, body, body_len));
    free(body);
    int rc2 = outfile_commit(&of);
    free(path);
    return rc2;
}

static int key_by_name(const char *name)
{
    for (int key = 1; key < MAX_KEY; key++) {
        const char *n = simlsh_params_key_name(key);
        if (n && !strcmp(n, name))
            return key;
    }
    return -1;
}

/* Reads INDEX.names: the contract into *params, the names into r->names. */
int sidecar_load(struct run *r, const char *index_path, simlsh_params **params,
                 uint64_t *fingerprint, char index_sum[17])
{
    uint64_t sum = FNV_INIT;
    int version = 0, summed = 0;
    index_sum[0] = '\0';
    char *path = sidecar_path(index_path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "simlsh-dedup: %s: %s (written next to the index by --save-index)\n",
                qname(path), strerror(errno));
        free(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t lineno = 0, count = 0, names = 0;
    int state = 0; /* 0 header, 1 params, 2 names, 3 end */
    simlsh_params *p = NULL;
    int rc = simlsh_params_new(&p, NULL);
    if (rc != 0) {
        fclose(f);
        free(path);
        return lib_fail("params", rc);
    }
    const char *why = NULL;
    while (!why && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (state == 4 && version == 2 && !strncmp(line, "checksum ", 9)) {
            char want[32];
            snprintf(want, sizeof want, "checksum %016" PRIx64 "\n", sum);
            if (strcmp(line, want))
                why = "checksum mismatch: the names file was changed or damaged";
            summed = 1;
            state = 5;
            continue;
        }
        sum = fnv1a(sum, line, (size_t)len);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (state == 0) {
            version = !strcmp(line, SIDECAR_MAGIC) ? 2 : !strcmp(line, SIDECAR_MAGIC_V1) ? 1 : 0;
            if (!version)
                why = "not a simlsh-dedup names file (or a newer version)";
            state = 1;
        } else if (state == 1 && !strncmp(line, "param ", 6)) {
            char name[64];
            char value[64];
            if (sscanf(line + 6, "%63s %63s", name, value) != 2) {
                why = "bad param line";
                break;
            }
            int key = key_by_name(name);
            if (key < 0) {
                why = "unknown param (written by a newer version?)";
                break;
            }
            char *end;
            errno = 0;
            long long iv = strtoll(value, &end, 10);
            if (*end == '\0' && errno == 0)
                rc = simlsh_params_set_int(p, key, iv);
            else
                rc = simlsh_params_set_double(p, key, strtod(value, &end));
            if (rc == SIMLSH_EINVAL && *end == '\0') /* an integer given to a double key */
                rc = simlsh_params_set_double(p, key, strtod(value, NULL));
            if (rc != 0) {
                fprintf(stderr, "simlsh-dedup: %s:%zu: param %s: %s\n", qname(path), lineno,
                        qname(name),
                        simlsh_strerror(rc));
                why = "cannot apply the saved contract";
            }
        } else if (state == 1 && !strncmp(line, "fingerprint ", 12)) {
            *fingerprint = strtoull(line + 12, NULL, 16);
        } else if (state == 1 && !strncmp(line, "index-checksum ", 15) && len == 31) {
            memcpy(index_sum, line + 15, 17);
        } else if (state == 1 && !strncmp(line, "count ", 6)) {
            char *end;
            count = (size_t)strtoull(line + 6, &end, 10);
            state = 2;
            if (count == 0)
                state = 3;
        } else if (state == 2) {
            size_t l = unescape_name(line, (size_t)len);
            strlist_add(&r->names, line, l, 0);
            if (++names == count)
                state = 3;
        } else if (state == 3 && !strcmp(line, "end")) {
            state = 4;
        } else {
            why = "unexpected line";
        }
    }
    free(line);
    fclose(f);
    if (!why && (version == 2 ? !summed : state != 4))
        why = "truncated";
    if (!why && version == 2 && !index_sum[0])
        why = "no index-checksum line";
    if (why) {
        fprintf(stderr, "simlsh-dedup: %s:%zu: %s\n", qname(path), lineno, why);
        simlsh_params_free(p);
        free(path);
        return -1;
    }
    free(path);
    *params = p;
    return 0;
}

/* --skipped: one line per input that was not read, with the reason; in
 * TSV "NAME<TAB>REASON" (NAME escaped as in every output), in JSONL
 * {"name":...,"reason":...}. */
int write_skipped(const struct run *r, FILE *out)
{
    for (size_t i = 0; i < r->skips.count; i++) {
        size_t len;
        const char *s = strlist_get(&r->skips, i, &len);
        if (r->opt->format == FMT_TSV) {
            fwrite(s, 1, len, out);
            fputc('\n', out);
            continue;
        }
        const char *tab = memchr(s, '\t', len);
        size_t nl = tab ? (size_t)(tab - s) : len;
        char *raw = xmalloc(nl + 1);
        memcpy(raw, s, nl);
        size_t rl = unescape_name(raw, nl);
        fputs("{\"name\":", out);
        escape_json(out, raw, rl);
        fputs(",\"reason\":", out);
        escape_json(out, tab ? tab + 1 : "", tab ? len - nl - 1 : 0);
        fputs("}\n", out);
        free(raw);
    }
    return ferror(out) ? -1 : 0;
}
