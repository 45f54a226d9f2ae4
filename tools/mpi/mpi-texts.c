/*
 * simlsh-dedup-mpi: under --verify exact, each rank verifies a range of the
 * sorted candidate pairs; the documents of those pairs that other ranks
 * read are read again by those ranks (their owners) and their texts sent
 * here, so that no rank opens another rank's share of the inputs a second
 * time. Inputs may then live on the node that reads them (docs/scale-out.md).
 *
 * Two steps, both in bounded rounds:
 *  1. requests: each rank sends every owner the ids it needs from it, each
 *     with the reply round it falls in (a rank numbers its rounds so that
 *     the texts it receives in one round stay within TEXT_ROUND / N bytes,
 *     by the documents' sizes, which every rank knows under exact);
 *  2. replies: each owner opens its sources once for every id asked of it
 *     (the second pass's text_source: a compressed line input is copied
 *     once), and in round k sends each rank the texts it asked for in round
 *     k: a record (id, length, bytes) per document, or the reason the owner
 *     could not read it (changed, removed), which the second pass then
 *     reports as it reports its own unreadable documents.
 * The received rounds are appended, as they came, to an unlinked temporary
 * file (run.in.spool_fd) and the documents' locations point into it.
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of texts all ranks receive in one reply round: each rank asks for
 * at most TEXT_ROUND / N (4 MiB at least; one document larger than that
 * comes alone), so that an owner asked by every rank sends about
 * TEXT_ROUND in a round. */
#define TEXT_ROUND (UINT64_C(256) << 20)
#define TEXT_ROUND_MIN (UINT64_C(4) << 20)
/* Requests one rank sends in one request round. */
#define REQ_ROUND ((size_t)1 << 22)
/* Room counted for a record's header and a failure's reason. */
#define REC_EXTRA 256
#define FAILED_BIT (UINT64_C(1) << 63)

struct request {
    uint64_t id, round;
};

static void put64(char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint64_t get64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

void mpi_text_record(struct text_source *ts, uint64_t id, char **buf, size_t *len, size_t *cap)
{
    const char *text = NULL;
    size_t tl = 0;
    char why[200];
    uint64_t flag = 0;
    why[0] = 0;
    if (text_source_read(ts, id, &text, &tl, why, sizeof why) != 0) {
        if (!why[0])
            snprintf(why, sizeof why, "%s", strerror(errno ? errno : EIO));
        text = why;
        tl = strlen(why);
        flag = FAILED_BIT;
    }
    if (*len + 16 + tl > *cap) {
        while (*len + 16 + tl > *cap)
            *cap = *cap ? 2 * *cap : 1u << 16;
        *buf = xrealloc(*buf, *cap);
    }
    put64(*buf + *len, id);
    put64(*buf + *len + 8, (uint64_t)tl | flag);
    memcpy(*buf + *len + 16, text, tl);
    *len += 16 + tl;
}

size_t mpi_text_next(struct mpi_ctx *c, const char *rec, size_t len, size_t at, uint64_t *id,
                     const char **text, size_t *tl, int *failed)
{
    if (len - at < 16)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "a text record was cut short");
    uint64_t lf = get64(rec + at + 8), n = lf & ~FAILED_BIT;
    if (n > len - at - 16)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "a text record does not fit");
    *id = get64(rec + at);
    *text = rec + at + 16;
    *tl = (size_t)n;
    *failed = (lf & FAILED_BIT) != 0;
    return at + 16 + (size_t)n;
}

void mpi_fetch_texts(struct mpi_ctx *c, struct run *r, const uint64_t *first,
                     const struct pair *edges, size_t n)
{
    int size = c->size;
    uint64_t first_new = first[0], lo = first[c->rank], hi = first[c->rank + 1];
    size_t ndocs = (size_t)(first[size] - first_new);

    /* The documents this rank's pairs need from other ranks, in id order,
     * so grouped by owner. */
    uint64_t *need = xmalloc((n ? 2 * n : 1) * sizeof *need);
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x[2] = {edges[i].a, edges[i].b};
        for (int j = 0; j < 2; j++)
            if (x[j] >= first_new && (x[j] < lo || x[j] >= hi))
                need[nn++] = x[j];
    }
    nn = mpi_uniq(need, nn);
    c->texts_fetched = nn;

    /* Reply rounds, numbered by this rank as their texts add up. */
    struct request *req = xmalloc((nn ? nn : 1) * sizeof *req);
    uint64_t budget = TEXT_ROUND / (uint64_t)size;
    if (budget < TEXT_ROUND_MIN)
        budget = TEXT_ROUND_MIN;
    size_t req_round = REQ_ROUND;
    /* Test hook (SIMLSH_DEDUP_MPI_TEXT_ROUND=B): rounds of B bytes of
     * texts and B / 1024 requests, so that small inputs take many. */
    const char *hook = getenv("SIMLSH_DEDUP_MPI_TEXT_ROUND");
    if (hook && atoll(hook) > 0) {
        budget = (uint64_t)atoll(hook);
        req_round = budget / 1024 ? (size_t)(budget / 1024) : 1;
    }
    uint64_t round = 0, sum = 0;
    for (size_t i = 0; i < nn; i++) {
        uint64_t bytes = r->store.id_bytes[need[i]] + REC_EXTRA;
        if (sum > 0 && sum + bytes > budget) {
            round++;
            sum = 0;
        }
        sum += bytes;
        req[i] = (struct request){need[i], round};
    }
    free(need);
    uint64_t rounds = nn ? round + 1 : 0, all_rounds = 0;
    MPI_Allreduce(&rounds, &all_rounds, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);

    /* 1. Requests to the owners, REQ_ROUND at a time. Each owner keeps,
     * per asking rank, its requests in the order sent (ids ascending). */
    struct request **asked = xmalloc((size_t)size * sizeof *asked);
    size_t *nasked = xmalloc((size_t)size * sizeof *nasked);
    size_t *cap = xmalloc((size_t)size * sizeof *cap);
    size_t *scount = xmalloc((size_t)size * sizeof *scount);
    size_t *rcount = xmalloc((size_t)size * sizeof *rcount);
    for (int s = 0; s < size; s++) {
        asked[s] = NULL;
        nasked[s] = cap[s] = 0;
    }
    size_t sent = 0;
    for (;;) {
        size_t take = nn - sent < req_round ? nn - sent : req_round;
        int more = take > 0, any = 0;
        MPI_Allreduce(&more, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!any)
            break;
        for (int d = 0; d < size; d++)
            scount[d] = 0;
        for (size_t i = sent; i < sent + take; i++)
            scount[mpi_doc_owner(first, size, req[i].id)] += sizeof *req;
        char *recv = NULL;
        size_t rlen = 0;
        mpi_exchange_counts(c, (const char *)(req + sent), scount, &recv, &rlen, rcount);
        sent += take;
        size_t at = 0;
        for (int s = 0; s < size; s++) {
            size_t k = rcount[s] / sizeof *req;
            if (nasked[s] + k > cap[s]) {
                cap[s] = (nasked[s] + k) * 2;
                asked[s] = xrealloc(asked[s], cap[s] * sizeof *asked[s]);
            }
            if (k > 0) /* asked[s] is NULL until a rank asks */
                memcpy(asked[s] + nasked[s], recv + at, k * sizeof *req);
            for (size_t i = nasked[s]; i < nasked[s] + k; i++)
                if (asked[s][i].id < lo || asked[s][i].id >= hi)
                    mpi_die(c, EXIT_DEDUP_INTERNAL, "asked for the text of document %llu, not ours",
                            (unsigned long long)asked[s][i].id);
            nasked[s] += k;
            at += rcount[s];
        }
        free(recv);
    }
    free(rcount);
    free(req);

    /* 2. Replies: the sources opened once for every id asked of this rank. */
    size_t total_asked = 0;
    for (int s = 0; s < size; s++)
        total_asked += nasked[s];
    uint64_t *ids = xmalloc((total_asked ? total_asked : 1) * sizeof *ids);
    size_t ni = 0;
    for (int s = 0; s < size; s++)
        for (size_t i = 0; i < nasked[s]; i++)
            ids[ni++] = asked[s][i].id;
    ni = mpi_uniq(ids, ni);
    struct text_source *ts = ni ? text_source_open(r, ids, ni, ndocs) : NULL;
    free(ids);

    if (all_rounds > 0 && nn > 0) {
        char msg[200] = "";
        r->in.spool_fd = temp_file(msg, sizeof msg);
        if (r->in.spool_fd < 0)
            mpi_die(c, EXIT_DEDUP_INTERNAL,
                    "cannot keep the texts other ranks send for verification: %s", msg);
        r->in.spool_open = 1;
    }
    uint64_t spool_at = 0;
    size_t *pos = xmalloc((size_t)size * sizeof *pos);
    for (int s = 0; s < size; s++)
        pos[s] = 0;
    size_t bcap = 1u << 16, blen = 0;
    char *buf = xmalloc(bcap);
    for (uint64_t k = 0; k < all_rounds; k++) {
        blen = 0;
        for (int d = 0; d < size; d++) {
            size_t start = blen;
            for (; pos[d] < nasked[d] && asked[d][pos[d]].round == k; pos[d]++) {
                mpi_text_record(ts, asked[d][pos[d]].id, &buf, &blen, &bcap);
            }
            scount[d] = blen - start;
        }
        char *recv = NULL;
        size_t rlen = 0;
        mpi_exchange(c, buf, scount, &recv, &rlen);
        /* kept as received; the records' texts are where their documents
         * are read from */
        if (rlen > 0 && write_all(r->in.spool_fd, recv, rlen) != 0)
            mpi_die(c, EXIT_DEDUP_INTERNAL,
                    "cannot keep the texts other ranks send for verification in a temporary "
                    "file: %s",
                    strerror(errno));
        for (size_t at = 0; at < rlen;) {
            uint64_t id;
            const char *text;
            size_t tl;
            int failed;
            size_t next = mpi_text_next(c, recv, rlen, at, &id, &text, &tl, &failed);
            if (id < first_new || id - first_new >= ndocs)
                mpi_die(c, EXIT_DEDUP_INTERNAL, "a text record does not fit");
            struct docloc *loc = &r->in.locs[id - first_new];
            loc->input = LOC_SPOOL;
            loc->kind = failed ? DOCK_FAILED : DOCK_TEXT;
            loc->where = spool_at + at + 16;
            loc->len = tl;
            at = next;
        }
        spool_at += rlen;
        free(recv);
    }
    for (int d = 0; d < size; d++)
        if (pos[d] != nasked[d])
            mpi_die(c, EXIT_DEDUP_INTERNAL, "texts asked by rank %d were not all sent", d);
    free(buf);
    free(pos);
    text_source_close(ts);
    for (int s = 0; s < size; s++)
        free(asked[s]);
    free(asked);
    free(nasked);
    free(cap);
    free(scount);
}
