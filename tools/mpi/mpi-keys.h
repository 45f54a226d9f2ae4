/*
 * simlsh-dedup-mpi: band keys at their owners (mpi-keys.c), for the
 * candidate pairs of their buckets (mpi-match.c).
 */
#ifndef SIMLSH_DEDUP_MPI_KEYS_H
#define SIMLSH_DEDUP_MPI_KEYS_H

#include "dedup-mpi.h"

#define ROUND_BYTES (size_t)(4u << 20)
#define GID_BITS 48
#define GID_MASK ((UINT64_C(1) << GID_BITS) - 1)

/* One band key at its owner. */
struct kent {
    uint64_t key;
    uint64_t gb; /* band << GID_BITS | global id */
};

/* A 64-bit mix (splitmix64's finaliser): owners of keys, and of pairs. */
uint64_t mix64(uint64_t z);
/* The end of the bucket (run of one band and key) that starts at i. */
size_t bucket_end(const struct kent *v, size_t n, size_t i);
/* The id under which this rank's index stores global id g: a document of
 * --index keeps its id (every rank loaded the index), a new one is the
 * base (first[0], the loaded ids) plus its place in this rank's share. */
uint64_t local_id(const struct mpi_ctx *c, const uint64_t *first, uint64_t g);
/* The rounds of at most per items each that the rank with the most of n
 * items needs (collective). */
int all_rounds(struct mpi_ctx *c, size_t n, size_t per);
/* Band keys of the local documents, and of this rank's slice of the
 * documents loaded with --index (those still indexed), to their owners;
 * the owner's entries, sorted by (band, key, id) (collective). */
struct kent *send_keys(struct mpi_ctx *c, const struct run *r, size_t nlocal, uint32_t np,
                       uint32_t bands, uint32_t rows, const uint64_t *first, size_t *nout);

#endif
