/*
 * simlsh-dedup-mpi: the groups of the verified edges, formed across ranks
 * (docs/scale-out.md, "Groups").
 *
 * Each rank holds a range of the sorted edge list. Groups never cross a
 * connected component of the edges that link (--cluster star: every edge
 * but those between two documents of --index; components: those of
 * --only-new's rule), and both groupings decide a component from its own
 * edges alone (a star is taken greedily in --keep order, and the order
 * of the documents of one component is the order of the whole restricted
 * to them). So:
 *
 *  1. each rank reduces its edges to a spanning forest (the library's
 *     simlsh_group_components(), each tree rooted at its smallest id), and the forests merge up a binary
 *     tree of ranks (rank k takes the forest of rank k + s for s = 1, 2,
 *     4, ...) into rank 0's forest of the whole: component labels;
 *  2. rank 0 broadcasts the labels in bounded chunks; each rank keeps those
 *     of the ids its edges touch and sends each edge to the owner of its
 *     component, hash(label) mod N;
 *  3. each owner groups its components as simlsh-dedup does (stars by
 *     simlsh_group_star() in keep_compare() order, or components) and
 *     reduces each group to the edges of a star: centre to each member,
 *     or (components) each member to the largest id, a new document;
 *  4. rank 0 gathers these finished groups, which write_groups() turns
 *     into the very same groups (a centre outranks its members, stars are
 *     disjoint), and the owners' counts of clusters and duplicates.
 *
 * Rank 0 thus holds one edge per grouped document, not every edge; the
 * forest it merges has one entry per document in some edge.
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_BYTES (size_t)(4u << 20)
#define LABEL_CHUNK ((size_t)1 << 20) /* labels broadcast at once */
#define PIECE ((size_t)1 << 26)       /* links sent at once up the tree */

struct link {
    uint64_t id, root;
};

struct gedge {
    uint64_t a, b, label;
};

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int cmp_gedge(const void *x, const void *y)
{
    const struct gedge *p = x, *q = y;
    int c = order_u64(p->label, q->label);
    if (c == 0)
        c = order_u64(p->a, q->a);
    return c != 0 ? c : order_u64(p->b, q->b);
}

static size_t find_id(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_link(const void *x, const void *y)
{
    const struct link *p = x, *q = y;
    return order_u64(p->id, q->id);
}

/* The spanning forest of n links (any pairs of distinct ids): (id,
 * smallest id of its tree) for every id that is not that smallest one,
 * sorted by id; the labels are simlsh_group_components()'s. */
static struct link *forest(struct mpi_ctx *c, const struct link *l, size_t n, size_t *nout)
{
    uint64_t *a = xmalloc((n ? n : 1) * sizeof *a), *b = xmalloc((n ? n : 1) * sizeof *b);
    for (size_t i = 0; i < n; i++) {
        a[i] = l[i].id;
        b[i] = l[i].root;
    }
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc == 0)
        rc = simlsh_group_components(res, NULL, a, b, n);
    free(a);
    free(b);
    if (rc != 0)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "components: %s", simlsh_strerror(rc));
    size_t m = simlsh_results_count(res), k = 0;
    const uint64_t *id = simlsh_results_a(res), *label = simlsh_results_b(res);
    struct link *out = xmalloc((m ? m : 1) * sizeof *out);
    for (size_t i = 0; i < m; i++)
        if (id[i] != label[i])
            out[k++] = (struct link){id[i], label[i]};
    simlsh_results_free(res);
    /* rows come by component: by id for the walk of mpi_group() */
    if (k > 1)
        qsort(out, k, sizeof *out, cmp_link);
    *nout = k;
    return out;
}

static void send_links(struct mpi_ctx *c, const struct link *l, size_t n, int to)
{
    uint64_t len = n;
    MPI_Send(&len, 1, MPI_UINT64_T, to, 21, MPI_COMM_WORLD);
    for (size_t at = 0; at < n; at += PIECE) {
        size_t m = n - at < PIECE ? n - at : PIECE;
        MPI_Send(l + at, (int)(m * sizeof *l), MPI_BYTE, to, 22, MPI_COMM_WORLD);
    }
    c->bytes_sent += n * sizeof *l + 8;
}

static struct link *recv_links(struct mpi_ctx *c, struct link *l, size_t *n, int from)
{
    uint64_t len = 0;
    MPI_Recv(&len, 1, MPI_UINT64_T, from, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    l = xrealloc(l, (*n + (size_t)len ? *n + (size_t)len : 1) * sizeof *l);
    for (size_t at = 0; at < len; at += PIECE) {
        size_t m = (size_t)len - at < PIECE ? (size_t)len - at : PIECE;
        MPI_Recv(l + *n + at, (int)(m * sizeof *l), MPI_BYTE, from, 22, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    *n += (size_t)len;
    c->bytes_received += len * sizeof *l + 8;
    return l;
}

/* Does this edge join two documents in the grouping (write_groups()'s
 * rules for star_groups() and component_labels())? */
static int links(const struct run *r, const struct pair *p)
{
    if (r->opt->cluster == CLUSTER_STAR)
        return p->b >= r->store.first_new;
    return !r->opt->only_new || p->b >= r->store.first_new;
}

static const struct run *order_run;

static int cmp_priority(const void *x, const void *y)
{
    return keep_compare(order_run, *(const uint64_t *)x, *(const uint64_t *)y);
}

static void add_edge(struct pairvec *v, uint64_t x, uint64_t y)
{
    pairvec_add(v, x < y ? x : y, x < y ? y : x, -1.0);
}

/* Step 3 at an owner: its components' edges (sorted by label) to stars. */
static void owner_groups(struct mpi_ctx *c, struct run *r, const struct gedge *e, size_t n,
                         struct pairvec *out, uint64_t *clusters, uint64_t *dups)
{
    uint64_t first_new = r->store.first_new;
    if (r->opt->cluster == CLUSTER_COMPONENTS) {
        uint64_t *ids = NULL;
        size_t cap = 0;
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j < n && e[j].label == e[i].label)
                j++;
            if (2 * (j - i) > cap) {
                cap = 2 * (j - i);
                ids = xrealloc(ids, cap * sizeof *ids);
            }
            for (size_t k = i; k < j; k++) {
                ids[2 * (k - i)] = e[k].a;
                ids[2 * (k - i) + 1] = e[k].b;
            }
            size_t m = mpi_uniq(ids, 2 * (j - i));
            /* the largest id is new whenever the component is a cluster,
             * so the star's edges link under --only-new too */
            uint64_t hub = ids[m - 1], nnew = m - find_id(ids, m, first_new);
            /* a component of --index documents alone is no cluster and
             * drops nothing: rank 0 need not see it */
            for (size_t k = 0; k + 1 < m && hub >= first_new; k++)
                add_edge(out, ids[k], hub);
            if (hub >= first_new) {
                (*clusters)++;
                /* the one kept is the smallest id if it is old, else new */
                *dups += nnew - (ids[0] >= first_new ? 1 : 0);
            }
            i = j;
        }
        free(ids);
        return;
    }
    /* star: one call for all the owner's components, in --keep order */
    uint64_t *a = xmalloc((n ? n : 1) * sizeof *a), *b = xmalloc((n ? n : 1) * sizeof *b);
    double *s = xmalloc((n ? n : 1) * sizeof *s);
    uint64_t *order = xmalloc((n ? 2 * n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++) {
        a[i] = e[i].a;
        b[i] = e[i].b;
        s[i] = -1.0;
        order[2 * i] = e[i].a;
        order[2 * i + 1] = e[i].b;
    }
    size_t m = mpi_uniq(order, 2 * n), norder = 0;
    if (r->opt->keep != KEEP_FIRST || first_new > 0) {
        order_run = r;
        if (m > 1)
            qsort(order, m, sizeof *order, cmp_priority);
        norder = m;
    }
    simlsh_results *res = NULL;
    size_t ng = 0;
    int rc = simlsh_results_new(&res, NULL);
    if (rc == 0)
        rc = simlsh_group_star(res, &ng, a, b, s, n, norder ? order : NULL, norder);
    free(a);
    free(b);
    free(s);
    free(order);
    if (rc != 0)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "star groups: %s", simlsh_strerror(rc));
    const uint64_t *ga = simlsh_results_a(res), *gb = simlsh_results_b(res);
    for (size_t g = 0; g < ng; g++) {
        size_t lo = 0, hi = 0;
        simlsh_results_offset(&lo, res, g);
        simlsh_results_offset(&hi, res, g + 1);
        if (hi - lo < 2)
            continue;
        /* members are new: an edge between two old documents never links,
         * and an old document outranks every new one */
        (*clusters)++;
        for (size_t k = lo; k < hi; k++) {
            if (ga[k] == gb[k])
                continue;
            add_edge(out, ga[k], gb[k]);
            (*dups)++;
        }
    }
    simlsh_results_free(res);
}

static int cmp_pair_ab(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Items of isz bytes to rank dest(item i), in rounds of at most
 * ROUND_BYTES from each rank; what arrives (*nout items, malloc'd), in
 * rank order within a round, rounds one after the other: not in the
 * senders' order when a rank receives from several over several rounds. */
static char *route(struct mpi_ctx *c, const char *items, size_t n, size_t isz,
                   int (*dest)(const void *item, size_t i, const void *arg), const void *arg,
                   size_t *nout)
{
    size_t per = ROUND_BYTES / isz;
    int mine = (int)((n + per - 1) / per), rounds = mine;
    MPI_Allreduce(&mine, &rounds, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    size_t *count = xmalloc((size_t)c->size * 2 * sizeof *count), *pos = count + c->size;
    int *to = xmalloc(per * sizeof *to);
    char *send = xmalloc(per * isz), *got = NULL;
    size_t ngot = 0;
    for (int round = 0; round < rounds; round++) {
        size_t lo = (size_t)round * per, hi = lo + per < n ? lo + per : n;
        memset(count, 0, (size_t)c->size * sizeof *count);
        for (size_t i = lo; i < hi; i++) {
            to[i - lo] = dest(items + i * isz, i, arg);
            count[to[i - lo]]++;
        }
        size_t o = 0;
        for (int d = 0; d < c->size; d++) {
            pos[d] = o;
            o += count[d];
            count[d] *= isz;
        }
        for (size_t i = lo; i < hi; i++)
            memcpy(send + pos[to[i - lo]]++ * isz, items + i * isz, isz);
        char *recv;
        size_t rlen;
        mpi_exchange(c, send, count, &recv, &rlen);
        got = xrealloc(got, ngot * isz + rlen + 1);
        memcpy(got + ngot * isz, recv, rlen);
        ngot += rlen / isz;
        free(recv);
    }
    free(send);
    free(to);
    free(count);
    *nout = ngot;
    return got;
}

struct split {
    uint64_t total; /* ids, or pairs */
    uint64_t first; /* this rank's first pair in the global list */
    int size;
};

/* Pairs by their smaller id: rank k takes ids [total k / N, total (k+1) / N). */
static int by_id(const void *item, size_t i, const void *arg)
{
    (void)i;
    const struct split *sp = arg;
    uint64_t a = ((const struct pair *)item)->a;
    int lo = 0, hi = sp->size - 1;
    while (lo < hi) { /* the last k whose range starts at or before a */
        int mid = lo + (hi - lo + 1) / 2;
        if (sp->total / (uint64_t)sp->size * (uint64_t)mid +
                sp->total % (uint64_t)sp->size * (uint64_t)mid / (uint64_t)sp->size <=
            a)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Pairs by their place in the global list: equal ranges. */
static int by_place(const void *item, size_t i, const void *arg)
{
    (void)item;
    const struct split *sp = arg;
    uint64_t g = sp->first + i;
    int lo = 0, hi = sp->size - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (sp->total * (uint64_t)mid / (uint64_t)sp->size <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int mpi_sort_pairs(struct mpi_ctx *c, uint64_t ndocs, size_t max_pairs, struct pair **edges,
                   size_t *n)
{
    /* by the smaller id, to ranges of ids: sorted and unique within each
     * rank, the ranks in order give the whole list sorted */
    struct split sp = {ndocs, 0, c->size};
    size_t m = 0;
    struct pair *v =
        (struct pair *)(void *)route(c, (const char *)*edges, *n, sizeof **edges, by_id, &sp, &m);
    free(*edges);
    if (m > 1)
        qsort(v, m, sizeof *v, cmp_pair_ab);
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
        if (k == 0 || v[k - 1].a != v[i].a || v[k - 1].b != v[i].b)
            v[k++] = v[i];
    m = k;
    /* --max-pairs keeps the prefix of the whole list */
    uint64_t cnt = m, before = 0, all = 0;
    MPI_Exscan(&cnt, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (c->rank == 0)
        before = 0;
    MPI_Allreduce(&cnt, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    int cut = 0;
    if (max_pairs && all > max_pairs) {
        cut = 1;
        all = max_pairs;
        m = before >= max_pairs ? 0 : (size_t)(max_pairs - before < m ? max_pairs - before : m);
        if (before > max_pairs)
            before = max_pairs;
    }
    /* equal ranges of the list, for the verification */
    struct split place = {all, before, c->size};
    size_t got = 0;
    *edges = (struct pair *)(void *)route(c, (const char *)v, m, sizeof *v, by_place, &place, &got);
    free(v);
    if (got > 1) /* pieces of two senders may arrive interleaved by rounds */
        qsort(*edges, got, sizeof **edges, cmp_pair_ab);
    *n = got;
    return cut;
}

/* An edge to the owner of its component. */
static int by_label(const void *item, size_t i, const void *arg)
{
    (void)i;
    return (int)(mix64(((const struct gedge *)item)->label) % (uint64_t) * (const int *)arg);
}

void mpi_group(struct mpi_ctx *c, struct run *r, const struct pair *edges, size_t n,
               struct pair **out, size_t *nout, uint64_t *clusters, uint64_t *dups)
{
    /* 1. spanning forests, merged up a binary tree */
    struct link *l = xmalloc((n ? n : 1) * sizeof *l);
    size_t nl = 0;
    for (size_t i = 0; i < n; i++)
        if (links(r, &edges[i]))
            l[nl++] = (struct link){edges[i].a, edges[i].b};
    size_t nf = 0;
    struct link *f = forest(c, l, nl, &nf);
    free(l);
    for (int s = 1; s < c->size; s *= 2) {
        if (c->rank % (2 * s) == s) {
            send_links(c, f, nf, c->rank - s);
            nf = 0;
            break;
        }
        if (c->rank + s < c->size) {
            f = recv_links(c, f, &nf, c->rank + s);
            struct link *g = forest(c, f, nf, &nf);
            free(f);
            f = g;
        }
    }

    /* 2. the labels of the ids this rank's edges touch; edges to owners */
    uint64_t *need = xmalloc((n ? 2 * n : 1) * sizeof *need);
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!links(r, &edges[i]))
            continue;
        need[nn++] = edges[i].a;
        need[nn++] = edges[i].b;
    }
    nn = mpi_uniq(need, nn);
    uint64_t *label = xmalloc((nn ? nn : 1) * sizeof *label);
    memcpy(label, need, nn * sizeof *label); /* a root labels itself */
    uint64_t total = nf;
    MPI_Bcast(&total, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    struct link *chunk = c->rank == 0 ? NULL : xmalloc(LABEL_CHUNK * sizeof *chunk);
    size_t at_need = 0;
    for (uint64_t at = 0; at < total; at += LABEL_CHUNK) {
        size_t m = (size_t)(total - at < LABEL_CHUNK ? total - at : LABEL_CHUNK);
        struct link *p = c->rank == 0 ? f + at : chunk;
        MPI_Bcast(p, (int)(m * sizeof *p), MPI_BYTE, 0, MPI_COMM_WORLD);
        if (c->rank == 0)
            c->bytes_sent += m * sizeof *p * (size_t)(c->size - 1);
        else
            c->bytes_received += m * sizeof *p;
        /* both sorted by id: one walk */
        for (size_t k = 0; k < m && at_need < nn; k++) {
            while (at_need < nn && need[at_need] < p[k].id)
                at_need++;
            if (at_need < nn && need[at_need] == p[k].id)
                label[at_need] = p[k].root;
        }
    }
    free(chunk);
    free(f);

    struct gedge *ge = xmalloc((n ? n : 1) * sizeof *ge);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++)
        if (links(r, &edges[i]))
            ge[ng++] = (struct gedge){edges[i].a, edges[i].b, label[find_id(need, nn, edges[i].a)]};
    free(need);
    free(label);
    size_t ngot = 0;
    struct gedge *got = (struct gedge *)(void *)route(c, (const char *)ge, ng, sizeof *ge, by_label,
                                                      &c->size, &ngot);
    free(ge);

    /* 3. each owner's groups, as stars */
    if (ngot > 1)
        qsort(got, ngot, sizeof *got, cmp_gedge);
    struct pairvec stars = {NULL, 0, 0};
    uint64_t counts[2] = {0, 0}, sums[2] = {0, 0};
    owner_groups(c, r, got, ngot, &stars, &counts[0], &counts[1]);
    free(got);

    /* 4. the finished groups and the counts to rank 0 */
    char *all = NULL;
    size_t alen = 0;
    mpi_gather0(c, (const char *)stars.v, stars.n * sizeof *stars.v, &all, &alen);
    free(stars.v);
    MPI_Reduce(counts, sums, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    *out = (struct pair *)(void *)all;
    *nout = alen / sizeof(struct pair);
    *clusters = sums[0];
    *dups = sums[1];
}

int mpi_write_pairs(struct mpi_ctx *c, struct run *r, FILE *out, const struct pair *edges, size_t n)
{
    size_t per = ROUND_BYTES / sizeof *edges;
    if (c->rank != 0) {
        uint64_t len = n;
        MPI_Send(&len, 1, MPI_UINT64_T, 0, 31, MPI_COMM_WORLD);
        for (size_t at = 0; at < n; at += per) {
            size_t m = n - at < per ? n - at : per;
            MPI_Send(edges + at, (int)(m * sizeof *edges), MPI_BYTE, 0, 32, MPI_COMM_WORLD);
        }
        c->bytes_sent += n * sizeof *edges + 8;
        return 0;
    }
    /* the errno of the first write that failed (a full disk), taken at
     * once: the receives that follow (every rank's pairs, so none waits)
     * may change errno */
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        if (edges[i].b >= r->store.first_new) {
            write_pair(r, out, &edges[i]);
            if (ferror(out))
                err = errno ? errno : EIO;
        }
    struct pair *buf = xmalloc(per * sizeof *buf);
    for (int k = 1; k < c->size; k++) {
        uint64_t len = 0;
        MPI_Recv(&len, 1, MPI_UINT64_T, k, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (uint64_t at = 0; at < len; at += per) {
            size_t m = (size_t)(len - at < per ? len - at : per);
            MPI_Recv(buf, (int)(m * sizeof *buf), MPI_BYTE, k, 32, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (size_t i = 0; i < m && !err; i++)
                if (buf[i].b >= r->store.first_new) {
                    write_pair(r, out, &buf[i]);
                    if (ferror(out))
                        err = errno ? errno : EIO;
                }
        }
        c->bytes_received += len * sizeof *buf + 8;
    }
    free(buf);
    return err;
}
