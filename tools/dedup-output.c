/* simlsh-dedup: groups of verified pairs (clusters, pairs, keep and drop
 * lists); the --save-index sidecar. */
#include "dedup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "simlsh-dedup: %s: %s (%s)\n", what, simlsh_strerror(rc),
            simlsh_error_name(rc));
    return -1;
}

static uint64_t uf_find(uint64_t *parent, uint64_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* --cluster components: label[id] = smallest id of id's component. */
static void component_labels(struct run *r, const struct pair *p, size_t np, uint64_t *label)
{
    size_t n = r->names.count;
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
}

/* The priority of --keep, best first: ids from --index (already in the
 * collection), then the new ids by the policy, ties by id. qsort() passes
 * no context, and one run sorts at a time: the run is a file-scope
 * pointer. */
static const struct run *keep_run;

static int cmp_keep(const void *x, const void *y)
{
    const struct run *r = keep_run;
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    int old_a = a < r->first_new, old_b = b < r->first_new;
    if (old_a != old_b)
        return old_a ? -1 : 1;
    if (!old_a) {
        uint64_t ba = r->id_bytes[a], bb = r->id_bytes[b];
        int64_t ma = r->id_mtime[a], mb = r->id_mtime[b];
        int c = 0;
        switch (r->opt->keep) {
        case KEEP_SHORTEST: c = (ba > bb) - (ba < bb); break;
        case KEEP_LONGEST: c = (ba < bb) - (ba > bb); break;
        case KEEP_OLDEST: c = (ma > mb) - (ma < mb); break;
        case KEEP_NEWEST: c = (ma < mb) - (ma > mb); break;
        default: break;
        }
        if (c)
            return c;
    }
    return (a > b) - (a < b);
}

/* --cluster star: label[id] = smallest id of id's star, kept[id] = its
 * centre. Centres are taken in --keep order (cmp_keep), so each group keeps
 * the best document the policy can keep safely: one near to all it drops. */
static int star_groups(struct run *r, const struct pair *p, size_t np, uint64_t *label,
                       uint64_t *kept)
{
    size_t n = r->names.count;
    uint64_t *a = xmalloc((np ? np : 1) * sizeof *a), *b = xmalloc((np ? np : 1) * sizeof *b);
    double *s = xmalloc((np ? np : 1) * sizeof *s);
    size_t m = 0;
    for (size_t i = 0; i < np; i++) {
        /* Two documents from --index are both kept already: their edge
         * would only make one of them a member. */
        if (p[i].b < r->first_new)
            continue;
        a[m] = p[i].a;
        b[m] = p[i].b;
        s[m++] = p[i].score < 0 ? -1.0 : p[i].score;
    }
    uint64_t *order = NULL;
    size_t norder = 0;
    if (r->opt->keep != KEEP_FIRST || r->first_new > 0) {
        order = xmalloc((n ? n : 1) * sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        keep_run = r;
        qsort(order, n, sizeof *order, cmp_keep);
        norder = n;
    }
    simlsh_results *res = NULL;
    size_t ng = 0;
    int rc = simlsh_results_new(&res, NULL);
    if (rc == 0)
        rc = simlsh_group_star(res, &ng, a, b, s, m, order, norder);
    free(a);
    free(b);
    free(s);
    free(order);
    if (rc != 0) {
        simlsh_results_free(res);
        return lib_fail("star groups", rc);
    }
    for (size_t i = 0; i < n; i++)
        label[i] = kept[i] = i;
    const uint64_t *ga = simlsh_results_a(res), *gb = simlsh_results_b(res);
    for (size_t g = 0; g < ng; g++) {
        size_t lo = 0, hi = 0;
        simlsh_results_offset(&lo, res, g);
        simlsh_results_offset(&hi, res, g + 1);
        uint64_t min = UINT64_MAX;
        for (size_t k = lo; k < hi; k++)
            if (ga[k] < min)
                min = ga[k];
        for (size_t k = lo; k < hi; k++) {
            label[ga[k]] = min;
            kept[ga[k]] = gb[k];
        }
    }
    simlsh_results_free(res);
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

/* Groups the verified edges (--cluster) and writes --output. Groups are
 * listed by their smallest id, members in id order. */
int write_groups(struct run *r, FILE *out, const struct pair *edges, size_t n_edges,
                 uint64_t *clusters, uint64_t *duplicates)
{
    phase_switch(r, PH_GROUP);
    size_t n = r->names.count;
    uint64_t first_new = r->first_new;
    uint64_t *label = xmalloc((n ? n : 1) * sizeof *label);
    uint64_t *order = NULL, *start = NULL;
    uint64_t *kept = xmalloc((n ? n : 1) * sizeof *kept);
    int ret = -1;
    int star = r->opt->cluster == CLUSTER_STAR;
    if (n)
        ensure_idmeta(r, n - 1);
    if (star) {
        if (star_groups(r, edges, n_edges, label, kept))
            goto done;
    } else {
        component_labels(r, edges, n_edges, label);
    }

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

    /* Components: kept[g] for every group is the id --keep chooses. A group
     * with an id from --index keeps that one (it is already in the
     * collection). Stars have their centres already. */
    for (size_t l = 0; l < n && !star; l++) {
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

    phase_switch(r, PH_WRITE);
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
        for (size_t i = 0; i < n_edges; i++)
            if (edges[i].b >= first_new)
                put_pair(r, out, &edges[i]);
    }
    ret = 0;
done:
    free(kept);
    free(label);
    free(order);
    free(start);
    return ret;
}

int write_results(struct run *r, FILE *out, uint64_t *clusters, uint64_t *duplicates)
{
    struct pair *edges = NULL;
    size_t n = 0;
    if (verify_candidates(r, &edges, &n) != 0)
        return -1;
    int rc = write_groups(r, out, edges, n, clusters, duplicates);
    free(edges);
    return rc;
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
