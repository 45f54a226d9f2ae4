/*
 * simlsh-dedup-mpi: declarations shared by its source files (mpi-*.c).
 * The documents, signing and output are simlsh-dedup's own code (dedup.h);
 * these files only split the work among ranks and move data between them.
 */
#ifndef SIMLSH_DEDUP_MPI_H
#define SIMLSH_DEDUP_MPI_H

#include "dedup.h"

#include <mpi.h>

#define MPI_PROG "simlsh-dedup-mpi"

/* Phases of the MPI run, timed per rank for --stats. */
enum mphase {
    MP_SETUP,  /* options, contract, walking the inputs */
    MP_SPLIT,  /* cutting line files at line ends, counting lines */
    MP_READ,   /* reading and signing this rank's share */
    MP_KEYS,   /* band keys to their owners */
    MP_PAIRS,  /* buckets to candidate pairs, at the rank of their first document */
    MP_SIGS,   /* signatures of second documents to those ranks */
    MP_TEXTS,  /* exact: texts of the pairs' documents from their owners */
    MP_VERIFY, /* candidates scored, then (exact) verified */
    MP_GATHER, /* candidates sorted across ranks; names, metadata to rank 0 */
    MP_GROUP,  /* groups formed across ranks */
    MP_WRITE,  /* rank 0 writes */
    MP_COUNT
};
extern const char *const mphase_names[MP_COUNT];

struct mpi_ctx {
    int rank, size;
    uint64_t bytes_sent, bytes_received; /* by this rank, every exchange */
    uint64_t pairs_routed;               /* pairs of small buckets sent to be scored */
    uint64_t large_buckets;              /* buckets whose pairs were scored at their owner */
    uint64_t texts_fetched;              /* exact: documents whose text other ranks sent */
    uint32_t *sketches; /* mpi-match.c: sketches of this rank's documents, by local id */
    size_t nsketches;
    double phase_wall[MP_COUNT];
    int phase;
    double t_phase;
};

/* mpi-comm.c */
void mpi_phase(struct mpi_ctx *c, int phase);
/* The rank that read global id g: first[k] <= g < first[k + 1] (first as
 * mpi_match's, n ranks). */
int mpi_doc_owner(const uint64_t *first, int n, uint64_t g);
/* v sorted, its repeats dropped: returns the new count. */
size_t mpi_uniq(uint64_t *v, size_t n);
/* Print "simlsh-dedup-mpi: rank R: MESSAGE" and stop every rank with
 * status code: for errors in the middle of a collective sequence. */
void mpi_die(struct mpi_ctx *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4), noreturn))
#endif
    ;
/* The worst status of all ranks (statuses are ordered: 0 is success and a
 * larger EXIT_DEDUP_* code wins). A phase boundary every rank reaches. */
int mpi_agree(struct mpi_ctx *c, int status);
/* The np values of the document this rank stores under local id lid:
 * from st->sigs (a pointer into it) or else from st->index (copied to
 * scratch, which is returned). Stops every rank if there is none. */
const uint32_t *mpi_values(struct mpi_ctx *c, const struct run_store *st, uint64_t lid, uint32_t np,
                           uint32_t *scratch);
/* Every rank sends scount[d] bytes of send (destination order) to rank d;
 * recv gets what each rank sent here, in rank order (*rlen bytes, malloc'd).
 * Each count and the total received must stay below 2 GiB: callers send
 * in bounded rounds. */
void mpi_exchange(struct mpi_ctx *c, const char *send, const size_t *scount, char **recv,
                  size_t *rlen);
/* mpi_exchange, and rcount[s]: the bytes received from rank s. */
void mpi_exchange_counts(struct mpi_ctx *c, const char *send, const size_t *scount, char **recv,
                         size_t *rlen, size_t *rcount);
/* Rank 0 receives each rank's bytes in rank order (any size, in pieces);
 * other ranks get *recv NULL. */
void mpi_gather0(struct mpi_ctx *c, const char *send, size_t len, char **recv, size_t *rlen);

/* mpi-split.c: this rank's share of the inputs, of the paths the walk
 * found (opt's struct input edited in place: path subranges, byte ranges
 * of line files, empty elsewhere).
 * Returns 0, or on every rank EXIT_DEDUP_INPUT when a rank sees other
 * inputs than rank 0 (a message says which rank, path and cause). */
int mpi_split(struct mpi_ctx *c, struct options *opt, const struct run_inputs *found);

/* mpi-match.c: this rank's band keys to their owners, and the candidate
 * pairs this rank scored (a < b, any order; another rank may have one
 * too: mpi_sort_pairs() drops copies) with their estimate, those below
 * keep_min dropped (0: none). r->store.sigs (or r->store.index) stores the local
 * documents' signatures (under first[0] plus their local ids) and, with
 * --index, r->store.index the loaded ones under their ids;
 * first[0]: the documents loaded with --index (0 without), first[k]: the
 * first global id of rank k's new documents, first[size] the total. */
int mpi_match(struct mpi_ctx *c, struct run *r, size_t nlocal, uint32_t np, uint32_t bands,
              uint32_t rows, const uint64_t *first, double keep_min, struct pair **out,
              size_t *nout);

/* mpi-texts.c: under exact, the documents of this rank's pairs (edges, a
 * range of the sorted list) that other ranks own are read again by their
 * owners, which send their texts (or why they could not read them); they
 * are kept in a temporary file (r->spool_fd) and their r->locs (indexed by
 * global id - first[0], this rank's own filled in) point at it. */
/* Appends to *buf (*len bytes used, *cap allocated; grown) the record of
 * document id as ts reads it: (id, length, bytes), or the reason it could
 * not be read, flagged. */
void mpi_text_record(struct text_source *ts, uint64_t id, char **buf, size_t *len, size_t *cap);
/* The record at offset at of rec (len bytes): its id, text (or reason,
 * *failed set) and length; the offset of the next. A record cut short or
 * too long stops every rank. */
size_t mpi_text_next(struct mpi_ctx *c, const char *rec, size_t len, size_t at, uint64_t *id,
                     const char **text, size_t *tl, int *failed);
void mpi_fetch_texts(struct mpi_ctx *c, struct run *r, const uint64_t *first,
                     const struct pair *edges, size_t n);

/* mpi-group.c: this rank's candidate pairs (any order, copies allowed)
 * become its share of the sorted, unique list of all ranks' pairs (ranks
 * in order give the list), cut after its first max_pairs (0: no cut) of
 * ndocs documents' pairs; returns 1 when cut. */
int mpi_sort_pairs(struct mpi_ctx *c, uint64_t ndocs, size_t max_pairs, struct pair **edges,
                   size_t *n);
/* The groups of the edges (this rank's share of the sorted list), formed
 * across ranks: rank 0 gets them as star edges (*out, *nout) that
 * write_groups() turns into the same groups, and the number of clusters
 * and duplicates. */
void mpi_group(struct mpi_ctx *c, struct run *r, const struct pair *edges, size_t n,
               struct pair **out, size_t *nout, uint64_t *clusters, uint64_t *dups);
/* --output pairs: rank 0 writes every rank's edges, in rank order;
 * returns 0, or the errno of the first write that failed (rank 0). */
int mpi_write_pairs(struct mpi_ctx *c, struct run *r, FILE *out, const struct pair *edges,
                    size_t n);

/* mpi-store.c: standard input and incremental runs (all collective). */
/* Rank 0 reads standard input to its end and broadcasts it in chunks;
 * every rank's descriptor 0 becomes a copy (an unlinked temporary file).
 * Returns the status of this rank. */
int mpi_spool_stdin(struct mpi_ctx *c);
/* Loaded ids replaced on any rank are dropped on every rank; before[id]:
 * id was gone before the inputs were read (--remove). Returns the number
 * of names replaced, as simlsh-dedup counts them. */
uint64_t mpi_merge_gone(struct mpi_ctx *c, struct run *r, const uint8_t *before);
/* The other ranks' signatures into rank 0's index (which must hold the
 * real bands), under their global ids: rank 0's index is then the one
 * simlsh-dedup makes. */
void mpi_gather_index(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint32_t np);
/* --save-index: mpi_gather_index() unless gathered already, then rank 0
 * saves when save is non-zero (it has every name and size by then); rank
 * 0's status. */
int mpi_save_index(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint32_t np, int save,
                   int gathered);

/* mpi-engine.c: the groups of every grouping output, made as simlsh-dedup
 * makes them (the library's dedup engine, over rank 0's index of every
 * document, after mpi_gather_index()). Under --verify exact the engine
 * asks for texts a batch at a time: rank 0 broadcasts the ids, each rank
 * reads those it read first (r->in.locs indexed by global id - first[0],
 * as for mpi_fetch_texts) and sends the texts, or why it could not read
 * them, to rank 0. Collective; rank 0 gets label and kept (n ids, as
 * star_from_buckets() gives them); 0, or -1 on every rank when rank 0
 * failed (said why). */
int mpi_engine_groups(struct mpi_ctx *c, struct run *r, const uint64_t *first, uint64_t **label,
                      uint64_t **kept);

#endif
