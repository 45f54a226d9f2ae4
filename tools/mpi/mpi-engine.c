/*
 * simlsh-dedup-mpi: the groups of every grouping output, made at rank 0 by
 * the library's dedup engine, exactly as simlsh-dedup makes them.
 *
 * Rank 0 holds the index of every document (mpi_gather_index()), so the
 * engine walks the same buckets in the same --keep order and claims the
 * same members: the groups are simlsh-dedup's for any number of ranks, at
 * the engine's cost (about documents x bands bucket visits and one
 * verification a claim, never the pairs of a group). Under --verify exact
 * the engine asks for texts a bounded batch at a time; each round rank 0
 * broadcasts the ids it needs, every rank reads those of its own share
 * (as the second pass reads them: sources opened once, size and time
 * checked) and sends rank 0 a record per document: (id, length, bytes),
 * or the reason it could not read it, which rank 0 reports as simlsh-dedup
 * does. So no rank opens another's share, and only the texts the engine
 * verifies move (docs/scale-out.md).
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* rank 0's word for "stop: the engine failed" */
#define ROUND_FAILED UINT64_MAX

/* This rank's records for the ids of a round that it read first. */
static char *serve(struct mpi_ctx *c, const uint64_t *first, struct text_source *ts,
                   const uint64_t *ids, size_t n, size_t *len)
{
    uint64_t lo = first[c->rank], hi = first[c->rank + 1];
    size_t cap = 1u << 16, at = 0;
    char *buf = xmalloc(cap);
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= lo && ids[i] < hi)
            mpi_text_record(ts, ids[i], &buf, &at, &cap);
    *len = at;
    return buf;
}

/* Rank 0: a round's records, from every rank, to the engine. */
static void take(struct mpi_ctx *c, struct star_session *s, const char *rec, size_t len)
{
    for (size_t at = 0; at < len;) {
        uint64_t id;
        const char *text;
        size_t tl;
        int failed;
        size_t next = mpi_text_next(c, rec, len, at, &id, &text, &tl, &failed);
        if (failed) {
            char why[256];
            size_t wl = tl < sizeof why - 1 ? tl : sizeof why - 1;
            memcpy(why, text, wl);
            why[wl] = 0;
            star_unread(s, id, why);
        } else {
            star_text(s, id, text, tl);
            c->texts_fetched++;
        }
        at = next;
    }
}

int mpi_engine_groups(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint64_t **label,
                      uint64_t **kept)
{
    *label = *kept = NULL;
    struct star_session *s = NULL;
    uint64_t head = 0;
    int failed = 0;
    if (c->rank == 0) {
        int rc = star_open(r, &s);
        if (rc == 1) { /* cannot happen: rank 0's index stores signatures */
            fprintf(stderr, MPI_PROG ": grouping: the index stores no signatures\n");
            rc = -1;
        }
        failed = rc != 0;
    }
    /* the sources of this rank's share, opened once (exact mode) */
    struct text_source *ts = NULL;
    uint64_t first_new = first[0], total = first[c->size];
    if (r->opt->verify == VERIFY_EXACT && first[c->rank + 1] > first[c->rank]) {
        size_t mine = (size_t)(first[c->rank + 1] - first[c->rank]);
        uint64_t *ids = xmalloc(mine * sizeof *ids);
        for (size_t i = 0; i < mine; i++)
            ids[i] = first[c->rank] + i;
        ts = text_source_open(r, ids, mine, (size_t)(total - first_new));
        free(ids);
    }
    uint64_t *ids = NULL;
    size_t cap = 0;
    for (;;) {
        const uint64_t *want = NULL;
        size_t n = 0;
        if (c->rank == 0) {
            if (!failed && star_wanted(s, &want, &n) != 0)
                failed = 1;
            head = failed ? ROUND_FAILED : (uint64_t)n;
        }
        MPI_Bcast(&head, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (head == 0 || head == ROUND_FAILED)
            break;
        n = (size_t)head;
        if (n > cap) {
            cap = n;
            ids = xrealloc(ids, cap * sizeof *ids);
        }
        if (c->rank == 0)
            memcpy(ids, want, n * sizeof *ids);
        for (size_t o = 0; o < n; o += 1u << 24) {
            size_t m = n - o < (1u << 24) ? n - o : (1u << 24);
            MPI_Bcast(ids + o, (int)m, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        }
        size_t len = 0, alen = 0;
        char *mine = serve(c, first, ts, ids, n, &len), *all = NULL;
        mpi_gather0(c, mine, len, &all, &alen);
        free(mine);
        if (c->rank == 0) {
            /* documents of --index have no text here: decided by estimate */
            for (size_t i = 0; i < n; i++)
                if (ids[i] < first_new)
                    star_unread(s, ids[i], NULL);
            take(c, s, all, alen);
            if (!failed && star_submit(s) != 0)
                failed = 1;
        }
        free(all);
    }
    free(ids);
    text_source_close(ts);
    int ret = 0;
    if (c->rank == 0) {
        size_t nd = r->store.names.count;
        if (!failed) {
            *label = xmalloc((nd ? nd : 1) * sizeof **label);
            *kept = xmalloc((nd ? nd : 1) * sizeof **kept);
            if (star_close(s, *label, *kept) != 0)
                failed = 1;
        } else if (s != NULL)
            star_close(s, NULL, NULL);
        if (failed) {
            free(*label);
            free(*kept);
            *label = *kept = NULL;
        }
        ret = failed ? -1 : 0;
    }
    MPI_Bcast(&ret, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ret;
}
