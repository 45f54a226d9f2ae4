/* simlsh-dedup: --cluster star groups straight from the index's buckets.
 *
 * The library's dedup engine (simlsh_dedup_*) walks the documents in --keep
 * order and lets each centre claim its verified bucket-mates, so no list of
 * all candidate pairs is ever made: a group of m copies costs m
 * verifications, not m^2 / 2 (docs/cli.md, VERIFICATION). In exact mode the
 * engine asks for texts a bounded batch at a time; this file reads them
 * (text_source_*: files again by path, lines by offset, compressed inputs
 * through a temporary copy) and hands them over. Documents from --index
 * have no text here: their pairs are decided by the estimate, as the pairs'
 * second pass does. */
#include "dedup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Text bytes of one batch at most, unless --verify-memory says otherwise:
 * the budget of the texts kept between batches (the cache below, which
 * the peak memory also holds); a batch takes half of it (its centres' sets
 * take more than their texts). */
#define STAR_BATCH_BYTES (UINT64_C(8) << 20)

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "simlsh-dedup: %s: %s (%s)\n", what, simlsh_strerror(rc),
            simlsh_error_name(rc));
    return -1;
}

/* Texts of one batch, copied (text_source_read() keeps one at a time). */
struct texts {
    char *arena;
    size_t len, cap;
    uint64_t *ids;
    size_t *off, *lens;
    const void **ptr;
    size_t n, capn;
};

static void texts_add(struct texts *t, uint64_t id, const char *s, size_t len)
{
    if (t->n == t->capn) {
        t->capn = t->capn ? 2 * t->capn : 256;
        t->ids = xrealloc(t->ids, t->capn * sizeof *t->ids);
        t->off = xrealloc(t->off, t->capn * sizeof *t->off);
        t->lens = xrealloc(t->lens, t->capn * sizeof *t->lens);
        t->ptr = xrealloc(t->ptr, t->capn * sizeof *t->ptr);
    }
    if (t->len + len > t->cap) {
        size_t c = t->cap ? t->cap : (size_t)1 << 20;
        while (c < t->len + len)
            c *= 2;
        t->arena = xrealloc(t->arena, c);
        t->cap = c;
    }
    if (len > 0)
        memcpy(t->arena + t->len, s, len);
    t->ids[t->n] = id;
    t->off[t->n] = t->len;
    t->lens[t->n] = len;
    t->n++;
    t->len += len;
}

static void texts_free(struct texts *t)
{
    free(t->arena);
    free(t->ids);
    free(t->off);
    free(t->lens);
    free(t->ptr);
}

/* Texts of files read again, kept for the next batches: a batch ends where
 * its centres' candidates begin, so a document near many centres (pages
 * of one generated manual) is asked for in several batches, and a
 * compressed file would be decompressed each time. A ring of as many bytes
 * as a batch may ask for, the oldest text dropped first; lines are read by
 * offset and not kept. */

struct text_cache {
    char *ring;
    size_t cap, head, used; /* next write at head; used: bytes held */
    struct cache_ent {
        uint64_t id;
        size_t off, len, span; /* span: bytes taken, with a skipped tail */
    } * q;                     /* FIFO of held texts */
    size_t qhead, qn, qcap;
    uint32_t *at; /* per new document: its entry in q + 1, 0: not held */
    uint64_t first_new;
};

static void cache_init(struct text_cache *c, const struct run *r, size_t ndocs)
{
    memset(c, 0, sizeof *c);
    c->cap = r->stats.vs.budget < SIZE_MAX / 2 ? (size_t)r->stats.vs.budget : SIZE_MAX / 2;
    c->first_new = r->store.first_new;
    c->at = calloc(ndocs ? ndocs : 1, sizeof *c->at);
    if (!c->at)
        die_oom();
}

static void cache_drop_oldest(struct text_cache *c)
{
    struct cache_ent *e = &c->q[c->qhead];
    c->at[e->id - c->first_new] = 0;
    c->used -= e->span;
    c->qhead = (c->qhead + 1) % c->qcap;
    c->qn--;
}

static const char *cache_get(const struct text_cache *c, uint64_t id, size_t *len)
{
    uint32_t k = c->at[id - c->first_new];
    if (k == 0)
        return NULL;
    *len = c->q[k - 1].len;
    return c->ring + c->q[k - 1].off;
}

static void cache_put(struct text_cache *c, uint64_t id, const char *s, size_t len)
{
    if (len == 0 || len > c->cap / 8 || c->at[id - c->first_new] != 0)
        return;
    if (c->ring == NULL)
        c->ring = xmalloc(c->cap);
    if (c->qn == c->qcap) { /* grow the FIFO, oldest first */
        size_t nc = c->qcap ? 2 * c->qcap : 1024;
        struct cache_ent *q = xmalloc(nc * sizeof *q);
        for (size_t i = 0; i < c->qn; i++) {
            q[i] = c->q[(c->qhead + i) % c->qcap];
            c->at[q[i].id - c->first_new] = (uint32_t)i + 1;
        }
        free(c->q);
        c->q = q;
        c->qhead = 0;
        c->qcap = nc;
    }
    /* A text never wraps: a tail too short for it is skipped, and charged
     * to it. used counts every byte from the oldest text to head, so once
     * used + skip + len fits, so does the text (at 0 when skipping: a ring
     * that wraps cannot fit, and is emptied past its end first). */
    size_t skip = c->head + len > c->cap ? c->cap - c->head : 0;
    while (c->qn > 0 && c->used + skip + len > c->cap)
        cache_drop_oldest(c);
    if (skip)
        c->head = 0;
    memcpy(c->ring + c->head, s, len);
    size_t slot = (c->qhead + c->qn) % c->qcap;
    c->q[slot] = (struct cache_ent){id, c->head, len, len + skip};
    c->at[id - c->first_new] = (uint32_t)slot + 1;
    c->qn++;
    c->used += len + skip;
    c->head += len;
    if (c->head == c->cap)
        c->head = 0;
}

static void cache_free(struct text_cache *c)
{
    free(c->ring);
    free(c->q);
    free(c->at);
}

/* One run of the engine, a batch of texts at a time. */
struct star_session {
    struct run *r;
    simlsh_dedup *d;
    int mode;
    simlsh_results *need;
    struct texts t; /* the batch's texts */
    uint64_t *gone; /* and the ids that have none */
    size_t ngone, capgone;
    uint8_t *warned; /* per new document: said unreadable */
};

/* Document id cannot be read again: said once, as the pairs' pass says it. */
void star_unread(struct star_session *s, uint64_t id, const char *msg)
{
    struct run *r = s->r;
    if (id >= r->store.first_new && !s->warned[id - r->store.first_new]) {
        s->warned[id - r->store.first_new] = 1;
        r->stats.vs.docs_unread++;
        size_t nl = 0;
        const char *name = strlist_get(&r->store.names, id, &nl);
        warnx_doc(r, "%s: %s; its pairs are verified by estimate", qnamen(name, nl),
                  msg && *msg ? msg : strerror(EIO));
    }
    if (s->ngone == s->capgone) {
        s->capgone = s->capgone ? 2 * s->capgone : 64;
        s->gone = xrealloc(s->gone, s->capgone * sizeof *s->gone);
    }
    s->gone[s->ngone++] = id;
}

void star_text(struct star_session *s, uint64_t id, const char *text, size_t len)
{
    texts_add(&s->t, id, text, len);
}

int star_wanted(struct star_session *s, const uint64_t **ids, size_t *n)
{
    *n = 0;
    s->t.n = s->t.len = 0;
    s->ngone = 0;
    int rc = simlsh_dedup_next(s->need, s->d, s->r->store.index);
    if (rc != 0)
        return lib_fail("grouping", rc);
    if (s->mode == SIMLSH_DEDUP_EXACT) {
        *n = simlsh_results_count(s->need);
        *ids = simlsh_results_a(s->need);
    }
    return 0;
}

int star_submit(struct star_session *s)
{
    struct texts *t = &s->t;
    for (size_t i = 0; i < t->n; i++)
        t->ptr[i] = t->arena + t->off[i];
    int rc = simlsh_dedup_texts(s->d, t->ids, t->ptr, t->lens, t->n);
    if (rc == 0 && s->ngone > 0)
        rc = simlsh_dedup_missing(s->d, s->gone, s->ngone);
    if (rc != 0 && rc != SIMLSH_EUTF8)
        return lib_fail("verifying", rc);
    return 0;
}

/* The exact mode's pull loop: texts in, until the engine needs none. */
static int feed_texts(struct star_session *s)
{
    struct run *r = s->r;
    size_t ndocs = r->store.names.count - r->store.first_new;
    uint64_t *all = xmalloc((ndocs ? ndocs : 1) * sizeof *all);
    for (size_t i = 0; i < ndocs; i++)
        all[i] = r->store.first_new + i;
    /* every new document may be asked for: sources open once */
    struct text_source *src = text_source_open(r, all, ndocs, ndocs);
    free(all);
    int ret = -1;
    struct text_cache cache;
    cache_init(&cache, r, ndocs);
    for (;;) {
        const uint64_t *ids = NULL;
        size_t n = 0;
        if (star_wanted(s, &ids, &n) != 0)
            goto out;
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            uint64_t id = ids[i];
            const char *text = NULL;
            size_t len = 0;
            char msg[160];
            msg[0] = 0;
            if (id >= r->store.first_new && (text = cache_get(&cache, id, &len)) != NULL) {
                star_text(s, id, text, len);
                r->stats.vs.cached++;
                continue;
            }
            if (id >= r->store.first_new &&
                text_source_read(src, id, &text, &len, msg, sizeof msg) == 0) {
                star_text(s, id, text, len);
                if (r->in.locs[id - r->store.first_new].kind == DOCK_PATH)
                    cache_put(&cache, id, text, len);
                continue;
            }
            if (id >= r->store.first_new && !msg[0])
                snprintf(msg, sizeof msg, "%s", strerror(errno ? errno : EIO));
            star_unread(s, id, msg);
        }
        if (star_submit(s) != 0)
            goto out;
    }
    ret = 0;
out:
    text_source_close(src);
    cache_free(&cache);
    return ret;
}

int star_open(struct run *r, struct star_session **out)
{
    size_t n = r->store.names.count;
    int mode = r->opt->verify == VERIFY_EXACT      ? SIMLSH_DEDUP_EXACT
               : r->opt->verify == VERIFY_ESTIMATE ? SIMLSH_DEDUP_ESTIMATE
                                                   : SIMLSH_DEDUP_NONE;
    simlsh_dedup *d = NULL;
    int rc = simlsh_dedup_new(&d, r->store.index, mode, r->threshold);
    if (rc == SIMLSH_EUNSUPPORTED)
        return 1;
    if (rc != 0)
        return lib_fail("grouping", rc);
    struct star_session *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->r = r;
    s->d = d;
    s->mode = mode;
    size_t ndocs = n - r->store.first_new;
    s->warned = calloc(ndocs ? ndocs : 1, 1);
    if (!s->warned)
        die_oom();
    if ((rc = simlsh_results_new(&s->need, NULL)) != 0)
        goto lib;
    uint32_t nt = r->nthreads > 0 ? (uint32_t)r->nthreads : 1;
    if ((rc = simlsh_dedup_set(d, SIMLSH_DEDUP_THREADS, nt)) != 0 ||
        (rc = simlsh_dedup_set(d, SIMLSH_DEDUP_KEEP_BELOW, (double)r->store.first_new)) != 0)
        goto lib;
    if (r->opt->giant_buckets >= 0 &&
        (rc = simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT, (double)r->opt->giant_buckets)) != 0)
        goto lib;
    if (r->opt->giant_cost >= 0 &&
        (rc = simlsh_dedup_set(d, SIMLSH_DEDUP_GIANT_COST, r->opt->giant_cost)) != 0)
        goto lib;
    /* components: --only-new keeps two documents of --index apart */
    if (r->opt->cluster == CLUSTER_COMPONENTS &&
        ((rc = simlsh_dedup_set(d, SIMLSH_DEDUP_CLUSTER, SIMLSH_DEDUP_COMPONENTS)) != 0 ||
         (rc = simlsh_dedup_set(d, SIMLSH_DEDUP_LINK_KEPT, r->opt->only_new ? 0 : 1)) != 0))
        goto lib;
    if (mode == SIMLSH_DEDUP_EXACT) {
        int64_t np = 128;
        simlsh_params_get_int(r->store.params, SIMLSH_PARAM_NUM_PERM, &np);
        r->stats.vs.prefilter = simlsh_dedup_prefilter(r->threshold, (uint32_t)np);
        /* texts are read a batch at a time into one buffer: small
         * batches keep it in cache and add little to the peak */
        r->stats.vs.budget = verify_budget(r->opt);
        /* samples kept between batches (a template's documents read
         * about once): within the same budget */
        if ((rc = simlsh_dedup_set(d, SIMLSH_DEDUP_SAMPLE_MEMORY, (double)r->stats.vs.budget)) != 0)
            goto lib;
        if (r->stats.vs.budget > STAR_BATCH_BYTES && !r->opt->verify_memory)
            r->stats.vs.budget = STAR_BATCH_BYTES;
        r->stats.vs.bytes_per_shingle = 8;
        uint64_t batch = r->opt->verify_memory ? r->stats.vs.budget : r->stats.vs.budget / 2;
        if ((rc = simlsh_dedup_set(d, SIMLSH_DEDUP_MEMORY, (double)batch)) != 0)
            goto lib;
        uint64_t *ids = xmalloc((ndocs ? ndocs : 1) * sizeof *ids);
        for (size_t i = 0; i < ndocs; i++)
            ids[i] = r->store.first_new + i;
        rc = simlsh_dedup_sizes(d, ids, r->store.id_bytes + r->store.first_new, ndocs);
        free(ids);
        if (rc != 0)
            goto lib;
    }
    uint64_t *order = keep_order(r);
    if (order != NULL) {
        rc = simlsh_dedup_order(d, order, n);
        free(order);
        if (rc != 0)
            goto lib;
    }
    *out = s;
    return 0;
lib:
    lib_fail("grouping", rc);
    star_close(s, NULL, NULL);
    return -1;
}

int star_close(struct star_session *s, uint64_t *label, uint64_t *kept)
{
    struct run *r = s->r;
    int ret = -1, rc = 0;
    simlsh_results *res = NULL;
    size_t ng = 0;
    if (label == NULL) {
        ret = 0;
        goto out;
    }
    if ((rc = simlsh_results_new(&res, NULL)) != 0 ||
        (rc = simlsh_dedup_groups(res, &ng, s->d)) != 0) {
        lib_fail("grouping", rc);
        goto out;
    }
    /* the engine's counters, as the summary and --stats name them */
    const struct {
        int key;
        uint64_t *to;
    } counters[] = {
        {SIMLSH_DEDUP_STAT_CANDIDATES, &r->stats.vs.candidates},
        {SIMLSH_DEDUP_STAT_EXACT, &r->stats.vs.exact},
        {SIMLSH_DEDUP_STAT_ESTIMATED, &r->stats.vs.estimated},
        {SIMLSH_DEDUP_STAT_TEXTS, &r->stats.vs.reads},
        {SIMLSH_DEDUP_STAT_BATCHES, &r->stats.vs.batches},
        {SIMLSH_DEDUP_STAT_SET_BYTES, &r->stats.vs.set_bytes_peak},
        {SIMLSH_DEDUP_STAT_VISITS, &r->stats.vs.visits},
        {SIMLSH_DEDUP_STAT_IDENTICAL, &r->stats.vs.identical},
        {SIMLSH_DEDUP_STAT_EDITS, &r->stats.vs.edits},
        {SIMLSH_DEDUP_STAT_SAMPLED, &r->stats.vs.sampled},
        {SIMLSH_DEDUP_STAT_SET_ASIDE, &r->stats.vs.set_aside},
        {SIMLSH_DEDUP_STAT_SET_ASIDE_MEMBERS, &r->stats.vs.set_aside_docs},
    };
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
        simlsh_dedup_stat(counters[i].to, s->d, counters[i].key);
    if (star_labels(r->store.names.count, res, ng, label, kept) == 0)
        ret = 0;
out:
    simlsh_results_free(res);
    simlsh_results_free(s->need);
    simlsh_dedup_free(s->d);
    texts_free(&s->t);
    free(s->gone);
    free(s->warned);
    free(s);
    return ret;
}

int star_from_buckets(struct run *r, uint64_t *label, uint64_t *kept)
{
    struct star_session *s = NULL;
    int rc = star_open(r, &s);
    if (rc != 0)
        return rc;
    if (s->mode == SIMLSH_DEDUP_EXACT) {
        if (feed_texts(s) != 0) {
            star_close(s, NULL, NULL);
            return -1;
        }
    } else {
        const uint64_t *ids;
        size_t n;
        if (star_wanted(s, &ids, &n) != 0) {
            star_close(s, NULL, NULL);
            return -1;
        }
    }
    return star_close(s, label, kept);
}

int bucket_census(struct run_store *st, struct census *c)
{
    memset(c, 0, sizeof *c);
    size_t n = 0;
    simlsh_index_count(&n, st->index);
    /* large: 1 % of the corpus, and at least 100 documents */
    c->min_size = n / 100 > 100 ? n / 100 : 100;
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc == 0) {
        /* the top buckets of any size, then the count above min_size */
        rc = simlsh_index_largest_buckets(res, NULL, st->index, CENSUS_TOP, 2);
        c->n = rc == 0 ? simlsh_results_count(res) : 0;
        for (size_t i = 0; i < c->n; i++) {
            c->size[i] = (uint64_t)simlsh_results_scores(res)[i];
            c->band[i] = simlsh_results_b(res)[i];
            c->sample[i] = simlsh_results_a(res)[i];
        }
        if (rc == 0)
            rc = simlsh_index_largest_buckets(res, &c->docs_in_large, st->index, 0, c->min_size);
    }
    simlsh_results_free(res);
    return rc == 0 ? 0 : lib_fail("bucket sizes", rc);
}
