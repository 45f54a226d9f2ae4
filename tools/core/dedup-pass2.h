/*
 * simlsh-dedup: the second pass's private header, for its files only:
 * dedup-verify.c (candidates, batches, the workers) -> dedup-exact.c (sets
 * and exact Jaccard) -> dedup-reread.c (documents read again). The rest of
 * the core and the front ends see it through dedup.h.
 */
#ifndef SIMLSH_DEDUP_PASS2_H
#define SIMLSH_DEDUP_PASS2_H

#include "dedup-jaccard.h"
#include "dedup.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* A line input (--lines, --jsonl, or "-" as one document) during the second
 * pass: its lines are read by pread() from fd at base + offset, where the
 * offsets of a compressed input are first mapped into the copy of its
 * needed lines. */
struct source {
    int fd;       /* -1: not opened (no candidate in it) */
    int64_t base; /* offset of the stream's first byte in fd */
    int bad;      /* cannot be read again; msg says why */
    char msg[160];
    uint64_t *from, *to; /* compressed: offset in the stream -> in the copy */
    size_t nmap;
};

/* Per new document (id - first_new). */
enum {
    DS_NEED = 1,
    DS_BAD = 2,
    DS_WARNED = 4,
    DS_MULTI = 8, /* in more than one candidate pair */
    DS_LONE = 16  /* in one pair, with a document in no other: fused */
};

/* A pair of two documents that occur in no other pair (most pairs, when
 * duplicates come in twos): both texts are hashed by one worker and the
 * Jaccard counted on the way, without keeping either set. */
struct lone {
    uint64_t a, b;
    double s;     /* the candidate's estimate (NaN: from the index) */
    double j;     /* exact Jaccard, or -1: bad cannot be read (msg) */
    uint64_t bad; /* with j < 0 */
    char *msg;
};

/* A document of the current batch. */
struct slot {
    uint64_t id;
    void *vals; /* 32-bit: distinct hashes in text order; 64-bit: sorted */
    size_t n;
    uint64_t est; /* planned bytes */
    size_t chunk;
    int loaded; /* 1 ok, -1 unreadable (msg) */
    char *msg;  /* why it is unreadable (malloc'ed), or NULL */
};

struct vctx;
struct vworker {
    struct vctx *v;
    simlsh_shingleset *set;
    char *buf;
    size_t cap;
    uint64_t *hashes; /* a text's shingle hashes (32-bit sets) */
    size_t hcap;
    uint64_t *hashes2; /* lone pairs: the second text's hashes */
    size_t hcap2;
    uint32_t *v32[2]; /* lone pairs: both texts' hashes, 32 bits */
    size_t v32cap[2];
    struct jc_scratch jc; /* the Jaccard counts' */
    struct jc_table held; /* with held_valid: the values of document held_id,
                           * whose walk with another set failed */
    uint64_t held_id;
    int held_valid;
    char msg[160];
    pthread_t thread;
};

struct vctx {
    struct run *r;
    int bits32;
    size_t elem;
    struct source *src;
    uint8_t *state; /* DS_* per new document */
    size_t ndocs;   /* new documents: ids first_new .. first_new + ndocs - 1 */
    struct slot *slots;
    size_t nslots;
    /* parallel work: fn(worker, item) for item in [0, nitems) */
    void (*fn)(struct vworker *, size_t);
    size_t *items;
    size_t nitems;
    atomic_size_t next;
    struct vworker *w;
    size_t nw;
    /* rows of the current batch; a slice of them at a time */
    const uint64_t *ra, *rb;
    const uint64_t *ids; /* the batch's documents, ascending: slot i is ids[i] */
    double *exact;       /* per item of the slice: exact Jaccard, or -1 */
    uint64_t held, held_shingles;
    pthread_mutex_t big; /* one large document at a time */
    struct lone *lone;   /* fused pairs, items index them */
};

/* A document of more than this many bytes is shingled by one thread at a
 * time, and the thread gives its buffers back afterwards: building its set
 * takes about 20 bytes per byte of text (the library's set holds 8-byte
 * hashes with spare room, plus the copy into the compact array). */
#define BIG_DOC (UINT64_C(1) << 20)

/* After a document of more than this many bytes, the thread gives its
 * buffers back too: kept, they would hold about 20 bytes per byte of the
 * largest text until the end, per thread. */
#define KEEP_DOC (UINT64_C(1) << 17)

/* dedup-exact.c */
/* Worker item k: load the shingle set of slot items[k]. */
void load_slot(struct vworker *w, size_t k);
/* The slot of document id in the current batch. */
size_t slot_of(const struct vctx *v, uint64_t id);
/* Worker item k: the exact Jaccard of row items[k] of the slice (when both
 * sets are loaded). */
void jaccard_row(struct vworker *w, size_t k);
/* Worker item k: the fused pair v->lone[items[k]], hashed and counted. */
void lone_row(struct vworker *w, size_t k);

/* dedup-reread.c */
/* The text of document id into *text (w->buf, or inside it), or -1 and
 * the reason in msg. */
int doc_text(struct vworker *w, uint64_t id, const char **text, size_t *len, char *msg,
             size_t mcap);
/* The line inputs that hold candidates (v->state DS_NEED): opened,
 * checked, and for a compressed one its needed lines copied to a
 * temporary file; close_sources() closes them. */
void open_sources(struct vctx *v);
void close_sources(struct vctx *v);

#endif
