/* simlsh-dedup-mpi: the few collective operations the driver needs. */
#include "dedup-mpi.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const mphase_names[MP_COUNT] = {"setup",  "split",      "read",  "keys",
                                            "pairs",  "signatures", "texts", "verify",
                                            "gather", "group",      "write"};

const uint32_t *mpi_values(struct mpi_ctx *c, const struct run_store *st, uint64_t lid, uint32_t np,
                           uint32_t *scratch)
{
    if (st->sigs) {
        if (lid >= st->sigs->n)
            mpi_die(c, EXIT_DEDUP_INTERNAL, "no signature for local id %llu",
                    (unsigned long long)lid);
        return sigstore_at(st->sigs, (size_t)lid);
    }
    simlsh_signature *sig = NULL;
    size_t cnt = 0;
    int rc = simlsh_index_signature(&sig, st->index, lid);
    if (rc == 0)
        rc = simlsh_signature_values(scratch, np, &cnt, sig);
    simlsh_signature_free(sig);
    if (rc != 0)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "signature of local id %llu: %s", (unsigned long long)lid,
                simlsh_strerror(rc));
    return scratch;
}

int mpi_doc_owner(const uint64_t *first, int n, uint64_t g)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (first[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

size_t mpi_uniq(uint64_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

void mpi_phase(struct mpi_ctx *c, int phase)
{
    double t = now_seconds();
    c->phase_wall[c->phase] += t - c->t_phase;
    c->t_phase = t;
    c->phase = phase;
}

void mpi_die(struct mpi_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, MPI_PROG ": rank %d: ", c->rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return; keeps the compiler sure of it */
}

int mpi_agree(struct mpi_ctx *c, int status)
{
    int worst = status;
    if (MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot agree on the status");
    return worst;
}

static int to_int(struct mpi_ctx *c, size_t n)
{
    if (n > (size_t)INT_MAX)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "an exchange round is larger than 2 GiB");
    return (int)n;
}

void mpi_exchange(struct mpi_ctx *c, const char *send, const size_t *scount, char **recv,
                  size_t *rlen)
{
    mpi_exchange_counts(c, send, scount, recv, rlen, NULL);
}

void mpi_exchange_counts(struct mpi_ctx *c, const char *send, const size_t *scount, char **recv,
                         size_t *rlen, size_t *rcount)
{
    int n = c->size;
    int *sc = xmalloc(4 * (size_t)n * sizeof *sc);
    int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    size_t off = 0;
    for (int d = 0; d < n; d++) {
        sc[d] = to_int(c, scount[d]);
        sd[d] = to_int(c, off);
        off += scount[d];
        if (d != c->rank)
            c->bytes_sent += scount[d];
    }
    if (MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "exchange of counts failed");
    size_t total = 0;
    for (int s = 0; s < n; s++) {
        rd[s] = to_int(c, total);
        total += (size_t)rc[s];
        if (rcount)
            rcount[s] = (size_t)rc[s];
        if (s != c->rank)
            c->bytes_received += (size_t)rc[s];
    }
    to_int(c, total);
    char *buf = xmalloc(total ? total : 1);
    if (MPI_Alltoallv(send, sc, sd, MPI_BYTE, buf, rc, rd, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "exchange failed");
    free(sc);
    *recv = buf;
    *rlen = total;
}

#define PIECE (1u << 30)

void mpi_gather0(struct mpi_ctx *c, const char *send, size_t len, char **recv, size_t *rlen)
{
    *recv = NULL;
    *rlen = 0;
    if (c->rank != 0) {
        uint64_t l = len;
        MPI_Send(&l, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD);
        for (size_t o = 0; o < len; o += PIECE) {
            size_t n = len - o < PIECE ? len - o : PIECE;
            MPI_Send(send + o, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
        c->bytes_sent += len + 8;
        return;
    }
    uint64_t *lens = xmalloc((size_t)c->size * sizeof *lens);
    lens[0] = len;
    size_t total = len;
    for (int s = 1; s < c->size; s++) {
        MPI_Recv(&lens[s], 1, MPI_UINT64_T, s, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        total += lens[s];
    }
    char *buf = xmalloc(total ? total : 1);
    if (len > 0) /* send is NULL on a rank with nothing to give */
        memcpy(buf, send, len);
    size_t at = len;
    for (int s = 1; s < c->size; s++) {
        for (size_t o = 0; o < lens[s]; o += PIECE) {
            size_t n = lens[s] - o < PIECE ? lens[s] - o : PIECE;
            MPI_Recv(buf + at + o, (int)n, MPI_BYTE, s, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        at += lens[s];
        c->bytes_received += lens[s] + 8;
    }
    free(lens);
    *recv = buf;
    *rlen = total;
}
