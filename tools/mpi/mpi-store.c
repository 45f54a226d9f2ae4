/*
 * simlsh-dedup-mpi: standard input, --index and --save-index
 * (docs/scale-out.md, "Standard input and incremental runs").
 *
 * Standard input reaches rank 0 only (mpirun forwards it there). Rank 0
 * reads it and broadcasts it in bounded chunks; every rank keeps a copy in
 * an unlinked temporary file that becomes its descriptor 0, so every rank
 * can split it, read it and read it again (the exact second pass) as a
 * regular file, wherever the ranks run.
 *
 * --index: every rank loads the index (the file must be on a filesystem
 * every rank sees, as the inputs), with its contract and names, so every
 * rank can tell which new documents are already indexed and answer for the
 * signatures of the loaded documents itself. A loaded document that
 * --replace drops on one rank is dropped on every rank before the band keys
 * are exchanged.
 *
 * --save-index: rank 0 holds the whole index (the loaded one, or a new one
 * with the run's contract, into which it inserted its own documents); the
 * other ranks send it the signature values of their documents in rank
 * order, in bounded chunks; rank 0 inserts them under their global ids, in
 * increasing id order, and saves with simlsh-dedup's store_save(): the
 * same index, the same user data, the same atomic replacement, so the same
 * bytes.
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIN_CHUNK (16u << 20) /* bytes of standard input broadcast at once */
#define SAVE_CHUNK (4u << 20)   /* bytes of signature values sent at once */

int mpi_spool_stdin(struct mpi_ctx *c)
{
    char msg[200] = "";
    int fd = temp_file(msg, sizeof msg);
    int status = 0;
    if (fd < 0) {
        fprintf(stderr, MPI_PROG ": rank %d: standard input: %s\n", c->rank, msg);
        status = EXIT_DEDUP_INTERNAL;
    }
    char *buf = xmalloc(STDIN_CHUNK);
    for (;;) {
        /* rank 0 fills a chunk (or reaches the end); -1: a read error */
        int64_t len = 0;
        if (c->rank == 0) {
            while ((uint64_t)len < STDIN_CHUNK) {
                ssize_t got = read(STDIN_FILENO, buf + len, STDIN_CHUNK - (size_t)len);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got < 0) {
                    fprintf(stderr, MPI_PROG ": standard input: read error: %s\n", strerror(errno));
                    len = -1;
                    break;
                }
                if (got == 0)
                    break;
                len += got;
            }
        }
        MPI_Bcast(&len, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (len < 0) {
            status = EXIT_DEDUP_INPUT;
            break;
        }
        if (len == 0)
            break;
        MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (c->rank != 0)
            c->bytes_received += (uint64_t)len;
        else
            c->bytes_sent += (uint64_t)len * (uint64_t)(c->size - 1);
        if (status == 0 && write_all(fd, buf, (size_t)len) != 0) {
            fprintf(stderr,
                    MPI_PROG ": rank %d: standard input: cannot copy it to a temporary "
                             "file: %s\n",
                    c->rank, strerror(errno));
            status = EXIT_DEDUP_INTERNAL;
        }
        if ((uint64_t)len < STDIN_CHUNK)
            break;
    }
    free(buf);
    if (status == 0 && (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0)) {
        fprintf(stderr, MPI_PROG ": rank %d: standard input: %s\n", c->rank, strerror(errno));
        status = EXIT_DEDUP_INTERNAL;
    }
    if (fd >= 0)
        close(fd);
    return status;
}

#define PIECE (1u << 30)

static const struct strlist *names_of;

static int cmp_name(const void *x, const void *y)
{
    size_t la, lb;
    const char *a = strlist_get(names_of, *(const uint64_t *)x, &la);
    const char *b = strlist_get(names_of, *(const uint64_t *)y, &lb);
    int c = memcmp(a, b, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

uint64_t mpi_merge_gone(struct mpi_ctx *c, struct run *r, const uint8_t *before)
{
    uint64_t n = r->store.first_new;
    if (n == 0)
        return 0;
    uint8_t *gone = xmalloc((size_t)n);
    for (uint64_t id = 0; id < n; id++)
        gone[id] = (uint8_t)store_is_gone(&r->store, id);
    for (uint64_t at = 0; at < n; at += PIECE) {
        int m = (int)(n - at < PIECE ? n - at : PIECE);
        if (MPI_Allreduce(MPI_IN_PLACE, gone + at, m, MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD) !=
            MPI_SUCCESS)
            mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot agree on the replaced documents");
    }
    for (uint64_t id = 0; id < n; id++)
        if (gone[id] && store_drop(r, id) != 0)
            mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot drop a replaced document");
    /* simlsh-dedup counts a new document that replaced loaded ones; one
     * of that name read later finds them gone: the names replaced */
    uint64_t *ids = xmalloc((size_t)n * sizeof *ids);
    size_t m = 0;
    for (uint64_t id = 0; id < n; id++)
        if (gone[id] && !before[id])
            ids[m++] = id;
    names_of = &r->store.names;
    if (m > 1)
        qsort(ids, m, sizeof *ids, cmp_name);
    uint64_t replaced = 0;
    for (size_t i = 0; i < m; i++)
        replaced += i == 0 || cmp_name(&ids[i - 1], &ids[i]) != 0;
    free(ids);
    free(gone);
    return replaced;
}

void mpi_gather_index(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint32_t np)
{
    size_t sig_bytes = (size_t)np * sizeof(uint32_t);
    size_t per = SAVE_CHUNK / sig_bytes;
    per = per ? per : 1;
    uint32_t *vals = xmalloc(per * sig_bytes);
    if (c->rank != 0) {
        /* this rank's documents, under first[0] + local id in its index */
        uint64_t n = first[c->rank + 1] - first[c->rank];
        for (uint64_t at = 0; at < n; at += per) {
            size_t m = (size_t)(n - at < per ? n - at : per);
            for (size_t i = 0; i < m; i++) {
                const uint32_t *v = mpi_values(c, &r->store, first[0] + at + i, np, vals + i * np);
                if (v != vals + i * np)
                    memcpy(vals + i * np, v, sig_bytes);
            }
            MPI_Send(vals, (int)(m * sig_bytes), MPI_BYTE, 0, 11, MPI_COMM_WORLD);
            c->bytes_sent += m * sig_bytes;
        }
        free(vals);
        return;
    }
    uint64_t *ids = xmalloc(per * sizeof *ids);
    uint32_t nt = r->lib_threads;
    for (int k = 1; k < c->size; k++) {
        uint64_t n = first[k + 1] - first[k];
        for (uint64_t at = 0; at < n; at += per) {
            size_t m = (size_t)(n - at < per ? n - at : per);
            MPI_Recv(vals, (int)(m * sig_bytes), MPI_BYTE, k, 11, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            c->bytes_received += m * sig_bytes;
            for (size_t i = 0; i < m; i++)
                ids[i] = first[k] + at + i;
            int rc = simlsh_index_insert_values(r->store.index, ids, vals, m, nt);
            if (rc != 0)
                mpi_die(c, EXIT_DEDUP_INTERNAL, "the index of every document: %s",
                        simlsh_strerror(rc));
        }
    }
    free(ids);
    free(vals);
}

int mpi_save_index(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint32_t np, int save,
                   int gathered)
{
    if (!gathered)
        mpi_gather_index(c, r, first, np);
    if (c->rank != 0 || !save)
        return 0;
    return store_save(r, r->opt->save_index) != 0 ? EXIT_DEDUP_INTERNAL : 0;
}
