/* simlsh-dedup: groups of verified pairs (clusters, pairs, keep and drop
 * lists). */
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

/* --only-new (docs/cli.md, Incremental runs): only pairs with a new
 * document link documents, so two old ones are never joined by their own
 * similarity. */
static int pair_links(const struct run *r, const struct pair *p)
{
    return !r->opt->only_new || p->b >= r->store.first_new;
}

/* --cluster components: label[id] = smallest id of id's component, by the
 * library's simlsh_group_components() over the pairs that link. */
static int component_labels(struct run *r, const struct pair *p, size_t np, uint64_t *label)
{
    size_t n = r->store.names.count, k = 0, ng = 0;
    for (size_t i = 0; i < n; i++)
        label[i] = i;
    uint64_t *a = xmalloc((np ? np : 1) * sizeof *a), *b = xmalloc((np ? np : 1) * sizeof *b);
    for (size_t i = 0; i < np; i++)
        if (pair_links(r, &p[i])) {
            a[k] = p[i].a;
            b[k++] = p[i].b;
        }
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc == 0)
        rc = simlsh_group_components(res, &ng, a, b, k);
    for (size_t i = 0; rc == 0 && i < simlsh_results_count(res); i++)
        label[simlsh_results_a(res)[i]] = simlsh_results_b(res)[i];
    simlsh_results_free(res);
    free(a);
    free(b);
    return rc == 0 ? 0 : lib_fail("components", rc);
}

/* --cluster star: label[id] = smallest id of id's star, kept[id] = its
 * centre. Centres are taken in --keep order (keep_order()), so each group keeps
 * the best document the policy can keep safely: one near to all it drops. */
static int star_groups(struct run *r, const struct pair *p, size_t np, uint64_t *label,
                       uint64_t *kept)
{
    size_t n = r->store.names.count;
    uint64_t *a = xmalloc((np ? np : 1) * sizeof *a), *b = xmalloc((np ? np : 1) * sizeof *b);
    double *s = xmalloc((np ? np : 1) * sizeof *s);
    size_t m = 0;
    for (size_t i = 0; i < np; i++) {
        /* Two documents from --index are both kept already: their edge
         * would only make one of them a member. */
        if (p[i].b < r->store.first_new)
            continue;
        a[m] = p[i].a;
        b[m] = p[i].b;
        s[m++] = p[i].score < 0 ? -1.0 : p[i].score;
    }
    uint64_t *order = keep_order(r);
    size_t norder = order ? n : 0;
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
    rc = star_labels(r->store.names.count, res, ng, label, kept);
    simlsh_results_free(res);
    return rc;
}

static void put_name(const struct run *r, FILE *out, uint64_t id)
{
    size_t len;
    const char *s = strlist_get(&r->store.names, id, &len);
    if (r->opt->format == FMT_JSONL && r->store.names.size[id] == 1)
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

void write_pair(const struct run *r, FILE *out, const struct pair *p)
{
    put_pair(r, out, p);
}

/* --output from groups made (label[id]: the smallest id of id's group,
 * kept[id]: the id its group keeps, for stars its centre; components get
 * theirs here by --keep), and the counts. Groups are listed by their
 * smallest id, members in id order. */
static int write_labels(struct run *r, FILE *out, const struct pair *edges, size_t n_edges,
                        const uint64_t *label, uint64_t *kept, uint64_t *clusters,
                        uint64_t *duplicates)
{
    size_t n = r->store.names.count;
    uint64_t first_new = r->store.first_new;
    int star = r->opt->cluster == CLUSTER_STAR;
    uint64_t *order = NULL, *start = NULL;
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
                case KEEP_SHORTEST:
                    better = r->store.id_bytes[id] < r->store.id_bytes[best];
                    break;
                case KEEP_LONGEST:
                    better = r->store.id_bytes[id] > r->store.id_bytes[best];
                    break;
                case KEEP_OLDEST:
                    better = r->store.id_mtime[id] < r->store.id_mtime[best];
                    break;
                case KEEP_NEWEST:
                    better = r->store.id_mtime[id] > r->store.id_mtime[best];
                    break;
                default:
                    break;
                }
                if (better)
                    best = id; /* ties keep the earlier id: order is by id */
            }
        }
        for (size_t k = b; k < e; k++)
            kept[order[k]] = best;
    }

    phase_switch(&r->stats, PH_WRITE);
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
            const char *s = strlist_get(&r->in.records, i - first_new, &len);
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
    free(order);
    free(start);
    return 0;
}

/* Groups the verified edges (--cluster) and writes --output. Groups are
 * listed by their smallest id, members in id order. */
static int write_grouped(struct run *r, FILE *out, const struct pair *edges, size_t n_edges,
                         int from_buckets, uint64_t *clusters, uint64_t *duplicates)
{
    phase_switch(&r->stats, PH_GROUP);
    size_t n = r->store.names.count;
    uint64_t *label = xmalloc((n ? n : 1) * sizeof *label);
    uint64_t *kept = xmalloc((n ? n : 1) * sizeof *kept);
    int ret = -1;
    int star = r->opt->cluster == CLUSTER_STAR;
    if (n)
        ensure_idmeta(&r->store, n - 1);
    if (from_buckets) {
        /* the engine verifies as it groups: its phase is the verify one */
        phase_switch(&r->stats, r->opt->verify == VERIFY_EXACT ? PH_VERIFY : PH_PAIRS);
        int rc = star_from_buckets(r, label, kept);
        phase_switch(&r->stats, PH_GROUP);
        if (rc != 0) {
            ret = rc; /* 1: the index cannot be grouped so */
            goto done;
        }
    } else if (star) {
        if (star_groups(r, edges, n_edges, label, kept))
            goto done;
    } else {
        if (component_labels(r, edges, n_edges, label))
            goto done;
    }
    ret = write_labels(r, out, edges, n_edges, label, kept, clusters, duplicates);
done:
    free(kept);
    free(label);
    return ret;
}

int write_labelled(struct run *r, FILE *out, const uint64_t *label, uint64_t *kept,
                   uint64_t *clusters, uint64_t *duplicates)
{
    phase_switch(&r->stats, PH_GROUP);
    if (r->store.names.count)
        ensure_idmeta(&r->store, r->store.names.count - 1);
    return write_labels(r, out, NULL, 0, label, kept, clusters, duplicates);
}

int write_groups(struct run *r, FILE *out, const struct pair *edges, size_t n_edges,
                 uint64_t *clusters, uint64_t *duplicates)
{
    return write_grouped(r, out, edges, n_edges, 0, clusters, duplicates);
}

int write_results(struct run *r, FILE *out, uint64_t *clusters, uint64_t *duplicates)
{
    /* Groups never need the list of all pairs (--max-pairs bounds only
     * --output pairs, which still enumerates them). */
    if (r->opt->output != OUT_PAIRS) {
        int rc = write_grouped(r, out, NULL, 0, 1, clusters, duplicates);
        if (rc <= 0)
            return rc;
    }
    struct pair *edges = NULL;
    size_t n = 0;
    if (verify_candidates(r, &edges, &n) != 0)
        return -1;
    int rc = write_groups(r, out, edges, n, clusters, duplicates);
    free(edges);
    return rc;
}

/* --skipped: one line per input that was not read, with the reason; in
 * TSV "NAME<TAB>REASON" (NAME escaped as in every output), in JSONL
 * {"name":...,"reason":...}. */
int write_skipped(const struct run_inputs *in, const struct options *o, FILE *out)
{
    for (size_t i = 0; i < in->skips.count; i++) {
        size_t len;
        const char *s = strlist_get(&in->skips, i, &len);
        if (o->format == FMT_TSV) {
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
