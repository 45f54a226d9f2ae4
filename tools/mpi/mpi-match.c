/*
 * simlsh-dedup-mpi: candidate pairs from the buckets at the band keys'
 * owners (MMDS 3.4: the band key is the key of the map-reduce;
 * docs/scale-out.md). mpi-keys.c brings the keys to their owners.
 *
 * A pair is a candidate when its rows are equal in some band (the library
 * confirms a shared key on the rows), kept when its MinHash estimate
 * (equal values / num_perm) reaches the filter of the verify mode
 * (--verify estimate: the threshold; exact: its prefilter; none: no
 * filter), as simlsh_index_pairs_v2() keeps it. Both need the two
 * signatures in one place, and nearly every pair of a bucket fails the
 * filter, so an owner first fetches the sketches of its buckets' members
 * (2 bits a value, 32 bytes at num_perm 128; fewer agreeing fields than
 * the filter needs rule a pair out exactly, as in the library's sweep):
 *
 *  - a bucket of 2 to SMALL_BUCKET members sends each pair that passes to
 *    a rank that holds one of its signatures (the reader of a or of b, by
 *    a hash of the pair), 16 bytes, in rounds; that rank drops the copies
 *    (a pair shares buckets in several bands), fetches each other
 *    signature once (CHUNK_PAIRS at a time) and checks and scores;
 *  - a larger bucket (m^2 / 2 pairs for m members) is scored by its owner
 *    with the signatures of the members in a pair that passes, each pair
 *    only in the first band where its rows are equal (so once over the
 *    large buckets); a pair kept both ways is dropped as a copy when the
 *    candidates are sorted across ranks (mpi_sort_pairs()).
 */
#include "mpi-keys.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_PAIRS 16384 /* signatures fetched (and held) at once */
/* Buckets of at most this many members send their pairs to be scored;
 * the owner of a larger one scores its pairs (m^2 / 2 of them) itself
 * with the members' signatures (m of them). */
#define SMALL_BUCKET 16
#define PREFETCH_AHEAD 8 /* pairs: own signatures are asked for this far ahead */

/* The distinct ids among mg[0 .. n) into want (sorted) and, for each k,
 * place[k]: the index in want of mg[k]. The members' indices are sorted
 * by id (three stable passes of 16 bits: ids are below 2^48), so no
 * member is searched for; idx and tmp hold n each. Returns the count. */
static size_t distinct_ids(const uint64_t *mg, size_t n, uint64_t *want, size_t *place, size_t *idx,
                           size_t *tmp)
{
    static size_t cnt[1 << 16];
    size_t *src = idx, *dst = tmp;
    for (size_t k = 0; k < n; k++)
        src[k] = k;
    for (int sh = 0; sh < GID_BITS; sh += 16) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(mg[src[i]] >> sh) & 0xFFFF]++;
        size_t o = 0;
        for (size_t d = 0; d < (1 << 16); d++) {
            size_t k = cnt[d];
            cnt[d] = o;
            o += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[cnt[(mg[src[i]] >> sh) & 0xFFFF]++] = src[i];
        size_t *t = src;
        src = dst;
        dst = t;
    }
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t g = mg[src[i]];
        if (u == 0 || want[u - 1] != g)
            want[u++] = g;
        place[src[i]] = u - 1;
    }
    return u;
}

static inline uint32_t popcount64(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (uint32_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* Words of a sketch: 2 bits of each of np values. */
static size_t sketch_words(uint32_t np)
{
    return ((size_t)np + 31) / 32;
}

/* The row of local document lid into out: its np values, or (sketch) the
 * lowest 2 bits of each value, 32 to a 64-bit word (in two uint32), as
 * the library's pair sweep sketches them: two documents agree on at most
 * as many values as on these fields, so a pair whose fields agree fewer
 * than need times cannot be kept. */
static void row_of(struct mpi_ctx *c, const struct run *r, uint64_t lid, uint32_t np, int sketch,
                   uint32_t *scratch, uint32_t *out)
{
    if (sketch && c->sketches && lid < c->nsketches) { /* made once, at the start */
        memcpy(out, c->sketches + lid * 2 * sketch_words(np), 2 * sketch_words(np) * sizeof *out);
        return;
    }
    const uint32_t *v = mpi_values(c, &r->store, lid, np, scratch);
    if (!sketch) {
        memcpy(out, v, (size_t)np * sizeof *v);
        return;
    }
    for (uint32_t w = 0; w * 32 < np; w++) {
        uint64_t acc = 0;
        for (uint32_t i = w * 32; i < np && i < w * 32 + 32; i++)
            acc |= (uint64_t)(v[i] & 3) << (2 * (i % 32));
        memcpy(out + 2 * w, &acc, sizeof acc);
    }
}

/* Fields on which two sketches of nw words agree. */
static uint32_t sketch_agree(const uint32_t *x, const uint32_t *y, size_t nw)
{
    uint32_t n = 0;
    for (size_t w = 0; w < nw; w++) {
        uint64_t a, b;
        memcpy(&a, x + 2 * w, sizeof a);
        memcpy(&b, y + 2 * w, sizeof b);
        uint64_t d = a ^ b;
        n += popcount64(~(d | d >> 1) & UINT64_C(0x5555555555555555));
    }
    return n;
}

/* The rows (signatures, or with sketch their sketches) of the ids in want
 * (sorted, unique) from the ranks that read them, in want's order, in
 * rounds. */
static uint32_t *fetch_rows(struct mpi_ctx *c, const struct run *r, uint32_t np,
                            const uint64_t *first, const uint64_t *want, size_t nwant, int sketch)
{
    size_t rw = sketch ? 2 * sketch_words(np) : np; /* uint32 a row */
    size_t sig_bytes = rw * sizeof(uint32_t);
    uint32_t *sigs = xmalloc((nwant ? nwant : 1) * sig_bytes);
    uint32_t *scratch = xmalloc((size_t)np * sizeof *scratch);
    /* documents of --index (the smallest ids, so a prefix of want) are in
     * every rank's index: no need to ask */
    size_t nold = 0;
    while (nold < nwant && want[nold] < first[0]) {
        row_of(c, r, want[nold], np, sketch, scratch, sigs + nold * rw);
        nold++;
    }
    want += nold;
    nwant -= nold;
    uint32_t *out = sigs;
    sigs += nold * rw;
    size_t per = ROUND_BYTES / sig_bytes;
    per = per ? per : 1;
    int rounds = all_rounds(c, nwant, per);
    size_t *count = xmalloc((size_t)c->size * sizeof *count);
    for (int round = 0; round < rounds; round++) {
        size_t lo = (size_t)round * per, hi = lo + per < nwant ? lo + per : nwant;
        size_t m = hi > lo ? hi - lo : 0;
        memset(count, 0, (size_t)c->size * sizeof *count);
        /* want is sorted and ranks hold contiguous ids: already grouped */
        for (size_t i = lo; i < lo + m; i++)
            count[mpi_doc_owner(first, c->size, want[i])] += sizeof(uint64_t);
        /* this rank's own members (a run of want) are not sent to itself:
         * their values are copied straight from the index */
        size_t before = 0;
        for (int d = 0; d < c->rank; d++)
            before += count[d] / sizeof(uint64_t);
        size_t nself = count[c->rank] / sizeof(uint64_t), s0 = lo + before;
        size_t after = m - before - nself;
        const uint64_t *rq = want + lo;
        uint64_t *rqbuf = NULL;
        if (nself) {
            rqbuf = xmalloc((m - nself ? m - nself : 1) * sizeof *rqbuf);
            memcpy(rqbuf, want + lo, before * sizeof *rqbuf);
            memcpy(rqbuf + before, want + s0 + nself, after * sizeof *rqbuf);
            count[c->rank] = 0;
            rq = rqbuf;
        }
        for (size_t k = 0; k < nself; k++)
            row_of(c, r, local_id(c, first, want[s0 + k]), np, sketch, scratch,
                   sigs + (s0 + k) * rw);
        char *req;
        size_t rlen;
        mpi_exchange(c, (const char *)rq, count, &req, &rlen);
        free(rqbuf);
        /* answer: the asking ranks' requests arrive in rank order */
        size_t nreq = rlen / sizeof(uint64_t);
        uint64_t *ids = (uint64_t *)(void *)req;
        char *ans = xmalloc(nreq ? nreq * sig_bytes : 1);
        for (size_t i = 0; i < nreq; i++) {
            uint64_t g = ids[i];
            if (g < first[c->rank] || g >= first[c->rank + 1])
                mpi_die(c, EXIT_DEDUP_INTERNAL, "asked for id %llu, not read here",
                        (unsigned long long)g);
            row_of(c, r, local_id(c, first, g), np, sketch, scratch,
                   (uint32_t *)(void *)(ans + i * sig_bytes));
        }
        /* the counts of what each rank asked give the sizes to send back */
        int *asked = xmalloc((size_t)c->size * 2 * sizeof *asked);
        for (int d = 0; d < c->size; d++)
            asked[c->size + d] = (int)(count[d] / sizeof(uint64_t));
        MPI_Alltoall(asked + c->size, 1, MPI_INT, asked, 1, MPI_INT, MPI_COMM_WORLD);
        for (int d = 0; d < c->size; d++)
            count[d] = (size_t)asked[d] * sig_bytes;
        free(asked);
        char *back;
        size_t blen;
        mpi_exchange(c, ans, count, &back, &blen);
        if (blen != (m - nself) * sig_bytes)
            mpi_die(c, EXIT_DEDUP_INTERNAL, "signature exchange lost data");
        if (before)
            memcpy((char *)sigs + lo * sig_bytes, back, before * sig_bytes);
        if (after)
            memcpy((char *)sigs + (s0 + nself) * sig_bytes, back + before * sig_bytes,
                   after * sig_bytes);
        free(back);
        free(ans);
        free(req);
    }
    free(count);
    free(scratch);
    return out;
}

/* Equal values of a and b; stops early (returning less than need) once
 * need cannot be reached. */
static uint32_t count_equal(const uint32_t *a, const uint32_t *b, uint32_t np, uint32_t need)
{
    uint32_t eq = 0, i = 0;
    while (i < np) {
        uint32_t end = i + 32 < np ? i + 32 : np;
        for (; i < end; i++)
            eq += a[i] == b[i];
        if (eq + (np - i) < need)
            return eq;
    }
    return eq;
}

/* (a loop, not memcmp(): rows are a few values, and this runs for every
 * band before the pair's) */
static inline int rows_equal(const uint32_t *a, const uint32_t *b, uint32_t band, uint32_t rows)
{
    a += (size_t)band * rows;
    b += (size_t)band * rows;
    uint32_t diff = 0;
    for (uint32_t i = 0; i < rows; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

/* The first band (below limit) where a and b have equal rows, or limit. */
static uint32_t first_band(const uint32_t *a, const uint32_t *b, uint32_t limit, uint32_t rows)
{
    for (uint32_t k = 0; k < limit; k++)
        if (rows_equal(a, b, k, rows))
            return k;
    return limit;
}

/* One rank holds every document under its global id (local_id() is the
 * identity): its buckets are the index's own, and the library enumerates
 * them as simlsh-dedup does (each pair once, in the first band where it
 * shares a bucket), with no exchange and no copy of any signature. Only
 * with a filter: without one the library gives no scores. */
static int match_alone(struct mpi_ctx *c, struct run *r, double keep_min, struct pair **out,
                       size_t *nout)
{
    mpi_phase(c, MP_VERIFY);
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    uint32_t nt = r->lib_threads;
    if (rc == 0)
        rc = simlsh_index_pairs_v2(res, r->store.index, SIMLSH_QUERY_VERIFY, 0, keep_min, nt);
    if (rc != 0)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "enumerating pairs: %s", simlsh_strerror(rc));
    size_t n = simlsh_results_count(res);
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    const double *s = simlsh_results_scores(res);
    struct pair *v = xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i].a = a[i] < b[i] ? a[i] : b[i];
        v[i].b = a[i] < b[i] ? b[i] : a[i];
        v[i].score = s[i];
    }
    simlsh_results_free(res);
    *out = v;
    *nout = n;
    return 0;
}

/* The rank that scores pair (a, b), a < b: one that holds a signature of
 * both if there is one (a document of --index is on every rank), else the
 * rank that read a or the one that read b, half and half by a hash of the
 * pair, so that every rank fetches about as many signatures as it sends;
 * a pair of two documents of --index goes to the rank of a's slice. */
static int pair_dest(const struct mpi_ctx *c, const uint64_t *first, uint64_t a, uint64_t b)
{
    if (b < first[0])
        return (int)(a * (uint64_t)c->size / first[0]);
    int rb = mpi_doc_owner(first, c->size, b);
    if (a < first[0])
        return rb;
    int ra = mpi_doc_owner(first, c->size, a);
    if (ra == rb)
        return ra;
    return mix64(a * UINT64_C(0x9E3779B97F4A7C15) ^ b) & 1 ? ra : rb;
}

/* Whether this rank holds the signature of global id g. */
static int held_here(const struct mpi_ctx *c, const uint64_t *first, uint64_t g)
{
    return g < first[0] || (g >= first[c->rank] && g < first[c->rank + 1]);
}

/* Sorts pairs by (a, b): one counting pass on a when the a's span a short
 * range (ids: the usual case), each run of one a (a few) by insertion;
 * qsort otherwise. Then drops the copies. */
static size_t sort_unique_pairs(struct pair *v, size_t n)
{
    if (n < 2)
        return n;
    uint64_t lo = v[0].a, hi = v[0].a;
    for (size_t i = 1; i < n; i++) {
        lo = v[i].a < lo ? v[i].a : lo;
        hi = v[i].a > hi ? v[i].a : hi;
    }
    if (hi - lo < 4 * (uint64_t)n + 1024) {
        size_t span = (size_t)(hi - lo) + 1;
        size_t *at = xmalloc((span + 1) * sizeof *at);
        memset(at, 0, (span + 1) * sizeof *at);
        for (size_t i = 0; i < n; i++)
            at[v[i].a - lo + 1]++;
        for (size_t d = 0; d < span; d++)
            at[d + 1] += at[d];
        struct pair *tmp = xmalloc(n * sizeof *tmp);
        for (size_t i = 0; i < n; i++)
            tmp[at[v[i].a - lo]++] = v[i];
        free(at);
        /* runs of one a, in place; at[] moved to each run's end */
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && tmp[j].a == tmp[i].a)
                j++;
            if (j - i > 32) {
                qsort(tmp + i, j - i, sizeof *tmp, cmp_pair);
            } else {
                for (size_t x = i + 1; x < j; x++) {
                    struct pair p = tmp[x];
                    size_t y = x;
                    while (y > i && tmp[y - 1].b > p.b) {
                        tmp[y] = tmp[y - 1];
                        y--;
                    }
                    tmp[y] = p;
                }
            }
            i = j;
        }
        memcpy(v, tmp, n * sizeof *v);
        free(tmp);
    } else {
        qsort(v, n, sizeof *v, cmp_pair);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1].a != v[i].a || v[m - 1].b != v[i].b)
            v[m++] = v[i];
    return m;
}

/* A bucket at its owner: ents[at .. at + n), one band (lead and band are
 * set for the large buckets, which are ordered by them). */
struct bkt {
    uint64_t lead; /* its smallest member */
    size_t at, n;
    uint32_t band;
};

/* Members of small buckets whose sketches are fetched at once. */
#define SKETCH_CHUNK 32768

/* The pairs of this rank's buckets of two to SMALL_BUCKET members (ents
 * sorted by band, key, id) into e, a < b: with need 0 every one, else
 * those whose sketches agree on at least need fields (the others cannot
 * be kept). The sketches (32 bytes at num_perm 128) of a chunk of about
 * SKETCH_CHUNK buckets' members are fetched at once: nearly all the pairs
 * of a banding for recall are background meetings, and they stop here,
 * before anything is sent for them. */
static void small_pairs(struct mpi_ctx *c, const struct run *r, const struct kent *ents, size_t ne,
                        uint32_t np, const uint64_t *first, uint32_t need, struct pairvec *e)
{
    size_t nb = 0, bcap = 0;
    struct bkt *bs = NULL; /* the small buckets (at, n) */
    size_t nchunks = 0, members = 0;
    for (size_t i = 0; i < ne;) {
        size_t j = bucket_end(ents, ne, i);
        if (j - i >= 2 && j - i <= SMALL_BUCKET) {
            if (need == 0) {
                for (size_t x = i; x < j; x++)
                    for (size_t y = x + 1; y < j; y++)
                        pairvec_add(e, ents[x].gb & GID_MASK, ents[y].gb & GID_MASK, 0);
            } else {
                if (nb == bcap) {
                    bcap = bcap ? 2 * bcap : 1024;
                    bs = xrealloc(bs, bcap * sizeof *bs);
                }
                bs[nb].at = i;
                bs[nb].n = j - i;
                nb++;
                if (nchunks == 0 || members + (j - i) > SKETCH_CHUNK) {
                    nchunks++;
                    members = 0;
                }
                members += j - i;
            }
        }
        i = j;
    }
    if (need == 0)
        return;
    int rounds = all_rounds(c, nchunks, 1);
    size_t rw = 2 * sketch_words(np), nw = sketch_words(np);
    size_t most = SKETCH_CHUNK + SMALL_BUCKET;
    uint64_t *mg = xmalloc(most * sizeof *mg), *want = xmalloc(most * sizeof *want);
    size_t *place = xmalloc(3 * most * sizeof *place), *idx = place + most, *tmp = idx + most;
    size_t at = 0;
    for (int round = 0; round < rounds; round++) {
        size_t stop = at, nm = 0;
        while (stop < nb && !(nm && nm + bs[stop].n > SKETCH_CHUNK)) {
            for (size_t x = bs[stop].at; x < bs[stop].at + bs[stop].n; x++)
                mg[nm++] = ents[x].gb & GID_MASK;
            stop++;
        }
        size_t nwant = distinct_ids(mg, nm, want, place, idx, tmp);
        mpi_phase(c, MP_SIGS);
        uint32_t *sk = fetch_rows(c, r, np, first, want, nwant, 1);
        mpi_phase(c, MP_PAIRS);
        for (size_t b = at, k = 0; b < stop; k += bs[b].n, b++)
            for (size_t x = k; x < k + bs[b].n; x++)
                for (size_t y = x + 1; y < k + bs[b].n; y++)
                    if (sketch_agree(sk + place[x] * rw, sk + place[y] * rw, nw) >= need)
                        pairvec_add(e, mg[x], mg[y], 0);
        free(sk);
        at = stop;
    }
    free(bs);
    free(mg);
    free(want);
    free(place);
}

/* Pairs v (a < b) each sent to the rank that scores it; what this rank
 * got, sorted by (a, b), each pair once. In rounds of at most ROUND_BYTES
 * per rank. */
static struct pair *route_pairs(struct mpi_ctx *c, const struct pair *v, size_t n,
                                const uint64_t *first, size_t *nout)
{
    size_t per = ROUND_BYTES / sizeof(struct pair);
    int rounds = all_rounds(c, n, per);
    struct pair *sorted = xmalloc(per * sizeof *sorted), *got = NULL;
    int *dest = xmalloc(per * sizeof *dest);
    size_t *count = xmalloc((size_t)c->size * 2 * sizeof *count), *at = count + c->size;
    size_t ngot = 0, gcap = 0, unique = 0;
    c->pairs_routed += n;
    for (int round = 0; round < rounds; round++) {
        size_t lo = (size_t)round * per, m = lo < n ? (n - lo < per ? n - lo : per) : 0;
        const struct pair *send = v + lo;
        memset(count, 0, (size_t)c->size * sizeof *count);
        for (size_t i = 0; i < m; i++) {
            dest[i] = pair_dest(c, first, send[i].a, send[i].b);
            count[dest[i]]++;
        }
        size_t o = 0;
        for (int d = 0; d < c->size; d++) {
            at[d] = o;
            o += count[d];
        }
        for (size_t i = 0; i < m; i++)
            sorted[at[dest[i]]++] = send[i];
        for (int d = 0; d < c->size; d++)
            count[d] *= sizeof(struct pair);
        char *recv;
        size_t rlen;
        mpi_exchange(c, (const char *)sorted, count, &recv, &rlen);
        size_t k = rlen / sizeof(struct pair);
        if (ngot + k > gcap) {
            gcap = (ngot + k) * 2;
            got = xrealloc(got, gcap * sizeof *got);
        }
        if (k)
            memcpy(got + ngot, recv, k * sizeof *got);
        ngot += k;
        free(recv);
        /* copies dropped as they pile up: memory follows the distinct
         * pairs, not the bands they share */
        if (ngot > 2 * unique + per) {
            ngot = sort_unique_pairs(got, ngot);
            unique = ngot;
        }
    }
    free(sorted);
    free(dest);
    free(count);
    ngot = sort_unique_pairs(got, ngot);
    *nout = ngot;
    return got;
}

static int cmp_bkt(const void *x, const void *y)
{
    const struct bkt *p = x, *q = y;
    int c = order_u64(p->lead, q->lead);
    if (c == 0)
        c = order_u64(p->band, q->band);
    return c != 0 ? c : order_u64(p->at, q->at);
}

/* The pairs of this rank's buckets of more than SMALL_BUCKET members,
 * scored here: each kept only in the first band where its rows are equal
 * (so once, whichever rank owns that band's bucket), and only when that
 * bucket is one of these (a smaller one sent it to be scored). Buckets
 * ordered by their smallest member and band, so the buckets of one group
 * of near duplicates come together, in chunks of about CHUNK_PAIRS
 * members whose signatures are fetched once. */
static void score_big(struct mpi_ctx *c, const struct run *r, const struct kent *ents, size_t ne,
                      uint32_t np, uint32_t rows, const uint64_t *first, uint32_t need,
                      double keep_min, struct pairvec *e)
{
    size_t nb = 0, bcap = 0;
    struct bkt *bk = NULL;
    for (size_t i = 0; i < ne;) {
        size_t j = bucket_end(ents, ne, i);
        if (j - i > SMALL_BUCKET) {
            if (nb == bcap) {
                bcap = bcap ? 2 * bcap : 1024;
                bk = xrealloc(bk, bcap * sizeof *bk);
            }
            bk[nb].lead = ents[i].gb & GID_MASK;
            bk[nb].band = (uint32_t)(ents[i].gb >> GID_BITS);
            bk[nb].at = i;
            bk[nb].n = j - i;
            nb++;
            c->large_buckets++;
        }
        i = j;
    }
    if (nb > 1)
        qsort(bk, nb, sizeof *bk, cmp_bkt);
    size_t nchunks = 0, members = 0;
    for (size_t i = 0; i < nb; i++) {
        if (nchunks == 0 || members + bk[i].n > CHUNK_PAIRS) {
            nchunks++;
            members = 0;
        }
        members += bk[i].n;
    }
    int rounds = all_rounds(c, nchunks, 1);
    uint64_t *want = NULL, *mg = NULL;
    const uint32_t **mpos = NULL;
    size_t *place = NULL; /* per member: its index in want; then idx, tmp */
    size_t *got = NULL;   /* per want entry: its signature's index, or NONE */
    const size_t NONE = SIZE_MAX;
    size_t mcap = 0, at = 0;
    for (int round = 0; round < rounds; round++) {
        /* this chunk: buckets bk[at .. stop), members in bucket order */
        size_t stop = at, nmem = 0;
        members = 0;
        while (stop < nb && !(members && members + bk[stop].n > CHUNK_PAIRS))
            members += bk[stop++].n;
        if (members > mcap) {
            mcap = members;
            mg = xrealloc(mg, mcap * sizeof *mg);
            want = xrealloc(want, mcap * sizeof *want);
            mpos = xrealloc(mpos, mcap * sizeof *mpos);
            place = xrealloc(place, 3 * mcap * sizeof *place);
            got = xrealloc(got, mcap * sizeof *got);
        }
        for (size_t i = at; i < stop; i++)
            for (size_t k = 0; k < bk[i].n; k++)
                mg[nmem++] = ents[bk[i].at + k].gb & GID_MASK;
        size_t nwant =
            nmem ? distinct_ids(mg, nmem, want, place, place + mcap, place + 2 * mcap) : 0;
        /* With a filter, the members' sketches first: only members of a
         * pair whose sketches agree on need fields (few, unless the
         * bucket is of near copies) have their signatures fetched. */
        size_t nlive = 0;
        if (need > 0) {
            size_t rw = 2 * sketch_words(np), nw = sketch_words(np);
            mpi_phase(c, MP_SIGS);
            uint32_t *sk = fetch_rows(c, r, np, first, want, nwant, 1);
            mpi_phase(c, MP_VERIFY);
            for (size_t u = 0; u < nwant; u++)
                got[u] = NONE;
            for (size_t i = at, k = 0; i < stop; k += bk[i].n, i++)
                for (size_t x = k; x < k + bk[i].n; x++)
                    for (size_t y = x + 1; y < k + bk[i].n; y++)
                        if (sketch_agree(sk + place[x] * rw, sk + place[y] * rw, nw) >= need)
                            got[place[x]] = got[place[y]] = 0;
            free(sk);
            for (size_t u = 0; u < nwant; u++)
                if (got[u] != NONE) {
                    got[u] = nlive;
                    want[nlive++] = want[u]; /* in order: still sorted */
                }
        } else {
            for (size_t u = 0; u < nwant; u++)
                got[u] = u;
            nlive = nwant;
        }
        mpi_phase(c, MP_SIGS);
        uint32_t *sigs = fetch_rows(c, r, np, first, want, nlive, 0);
        mpi_phase(c, MP_VERIFY);
        /* each member's signature, found once (not once per pair); NULL
         * for a member in no pair that can be kept */
        for (size_t k = 0; k < nmem; k++)
            mpos[k] = got[place[k]] == NONE ? NULL : sigs + got[place[k]] * np;
        const uint64_t *bg = mg;
        const uint32_t *const *bs = (const uint32_t *const *)mpos;
        for (size_t i = at; i < stop; i++) {
            size_t mm = bk[i].n;
            uint32_t band = bk[i].band;
            for (size_t x = 0; x < mm; x++) {
                const uint32_t *av = bs[x];
                if (av == NULL)
                    continue;
                for (size_t y = x + 1; y < mm; y++) {
                    const uint32_t *bv = bs[y];
                    if (bv == NULL)
                        continue;
                    /* the estimate first: it stops early, and most
                     * pairs of a large bucket fail it */
                    uint32_t eq = count_equal(av, bv, np, need);
                    if (eq < need || !rows_equal(av, bv, band, rows) ||
                        first_band(av, bv, band, rows) < band)
                        continue;
                    double sc = (double)eq / (double)np;
                    if (keep_min <= 0 || sc >= keep_min)
                        pairvec_add(e, bg[x], bg[y], sc);
                }
            }
            bg += mm;
            bs += mm;
        }
        free(sigs);
        at = stop;
    }
    if (at < nb)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "internal error: buckets left after the last chunk");
    free(bk);
    free(mg);
    free(mpos);
    free(want);
    free(place);
    free(got);
}

/* The candidate pairs this rank scored (a < b, in no order; a pair may
 * also come from another rank), with the MinHash estimate (equal values /
 * num_perm, as the index scores them), kept when some band's rows are
 * equal and the score is >= keep_min (0: all), as simlsh_index_pairs_v2()
 * keeps them under SIMLSH_QUERY_VERIFY. */
int mpi_match(struct mpi_ctx *c, struct run *r, size_t nlocal, uint32_t np, uint32_t bands,
              uint32_t rows, const uint64_t *first, double keep_min, struct pair **out,
              size_t *nout)
{
    if (first[c->size] > GID_MASK)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "more than 2^48 documents");
    if (c->size == 1 && keep_min > 0)
        return match_alone(c, r, keep_min, out, nout);
    mpi_phase(c, MP_KEYS);
    size_t ne;
    struct kent *ents = send_keys(c, r, nlocal, np, bands, rows, first, &ne);
    /* a kept pair needs at least need equal values (the score is
     * eq / np >= keep_min): counting stops once it cannot get there */
    uint32_t need = 0;
    if (keep_min > 0)
        while (need < np && (double)need / (double)np < keep_min)
            need++;
    mpi_phase(c, MP_PAIRS);
    if (need > 0 && r->store.sigs) { /* every document's sketch, asked for about 4 times each */
        size_t rw = 2 * sketch_words(np);
        uint32_t *scratch = xmalloc((size_t)np * sizeof *scratch);
        c->sketches = xmalloc((r->store.sigs->n ? r->store.sigs->n : 1) * rw * sizeof *c->sketches);
        for (size_t i = 0; i < r->store.sigs->n; i++)
            row_of(c, r, i, np, 1, scratch, c->sketches + i * rw);
        c->nsketches = r->store.sigs->n;
        free(scratch);
    }
    struct pairvec small = {NULL, 0, 0};
    small_pairs(c, r, ents, ne, np, first, need, &small);
    free(c->sketches);
    c->sketches = NULL;
    c->nsketches = 0;
    size_t nc;
    struct pair *cand = route_pairs(c, small.v, small.n, first, &nc);
    free(small.v);
    struct pairvec big = {NULL, 0, 0};
    score_big(c, r, ents, ne, np, rows, first, need, keep_min, &big);
    free(ents);

    /* Each pair as (other, own): own a document whose signature is here,
     * other the one that may live elsewhere; sorted by other, so that
     * chunks of up to CHUNK_PAIRS distinct others fetch each signature
     * once, score their pairs and drop the signatures. Every rank takes
     * part in as many fetches as the rank with the most chunks. */
    size_t nothers = 0;
    for (size_t i = 0; i < nc; i++) {
        uint64_t a = cand[i].a, b = cand[i].b;
        int own_a = held_here(c, first, a);
        cand[i].a = own_a ? b : a;
        cand[i].b = own_a ? a : b;
    }
    nc = sort_unique_pairs(cand, nc);
    for (size_t i = 0; i < nc; i++)
        nothers += i == 0 || cand[i].a != cand[i - 1].a;
    size_t nchunks = (nothers + CHUNK_PAIRS - 1) / CHUNK_PAIRS;
    int rounds = all_rounds(c, nchunks, 1);
    uint64_t *want = xmalloc(CHUNK_PAIRS * sizeof *want);
    uint32_t *scratch = xmalloc(np * sizeof *scratch);
    size_t w = 0, at = 0; /* pairs kept, written over cand; the next pair */
    for (int round = 0; round < rounds; round++) {
        size_t nwant = 0, hi = at;
        while (hi < nc && (nwant < CHUNK_PAIRS || cand[hi].a == want[nwant - 1])) {
            if (nwant == 0 || cand[hi].a != want[nwant - 1])
                want[nwant++] = cand[hi].a;
            hi++;
        }
        mpi_phase(c, MP_SIGS);
        uint32_t *sigs = fetch_rows(c, r, np, first, want, nwant, 0);
        mpi_phase(c, MP_VERIFY);
        size_t k = 0;
        for (size_t i = at; i < hi; i++) {
            uint64_t go = cand[i].a, gw = cand[i].b;
            /* own signatures are read at random: ask for one a few pairs
             * ahead (sorting a chunk's pairs by own instead reads most of
             * the store once per chunk: slower) */
            if (r->store.sigs && i + PREFETCH_AHEAD < hi) {
                const char *p = (const char *)sigstore_at(
                    r->store.sigs, (size_t)local_id(c, first, cand[i + PREFETCH_AHEAD].b));
                for (size_t l = 0; l < (size_t)np * 3; l += 64) /* measured: better than all */
                    __builtin_prefetch(p + l);
            }
            while (want[k] != go)
                k++;
            const uint32_t *ov = sigs + k * np;
            const uint32_t *wv = mpi_values(c, &r->store, local_id(c, first, gw), np, scratch);
            /* as the library: a pair is a candidate when its rows are
             * equal in some band (which makes the keys equal); one whose
             * first such band has a large bucket is also scored by that
             * bucket's owner, and mpi_sort_pairs() drops the copy */
            uint32_t eq = count_equal(ov, wv, np, need);
            if (eq < need || first_band(ov, wv, bands, rows) == bands)
                continue;
            double sc = (double)eq / (double)np;
            if (keep_min <= 0 || sc >= keep_min) {
                cand[w].a = go < gw ? go : gw;
                cand[w].b = go < gw ? gw : go;
                cand[w].score = sc;
                w++;
            }
        }
        free(sigs);
        at = hi;
    }
    free(want);
    free(scratch);
    if (big.n) { /* the large buckets' pairs join them (mpi_sort_pairs sorts) */
        cand = xrealloc(cand, (w + big.n) * sizeof *cand);
        memcpy(cand + w, big.v, big.n * sizeof *cand);
        w += big.n;
    }
    free(big.v);
    *out = cand;
    *nout = w;
    return 0;
}
