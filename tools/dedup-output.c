/* simlsh-dedup: clusters, pairs and keep lists. */
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

/* --only-new (docs/cli.md, Incremental runs): only pairs with a new
 * document link documents, so two old ones are never joined by their own
 * similarity. */
static int pair_links(const struct run *r, const struct pair *p)
{
    return !r->opt->only_new || p->b >= r->first_new;
}

/* label[id] = smallest id of id's cluster (id itself for singletons). */
static int cluster_labels(struct run *r, simlsh_results *res, uint64_t *label)
{
    size_t n = r->names.count;
    if (r->opt->verify == VERIFY_EXACT || r->opt->only_new) {
        struct pair *p = NULL;
        size_t np = 0;
        if (verified_pairs(r, res, &p, &np))
            return -1;
        for (size_t i = 0; i < n; i++)
            label[i] = i;
        for (size_t i = 0; i < np; i++) {
            if (!pair_links(r, &p[i]))
                continue;
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
