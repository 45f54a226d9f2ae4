/*
 * simlsh-dedup: exact Jaccard counts of two sequences of 32-bit shingle
 * hashes, aligned first (tools/core/dedup-jaccard.c).
 *
 * The second pass of exact verification compares near-duplicates: texts
 * that are the same but for a few edits, whose hash sequences agree over
 * long runs. The counts below first walk the two sequences side by side,
 * pairing equal values in runs, and give only what is left to a hash
 * table. Any pairing of equal values gives the exact counts, so the walk
 * decides speed only: texts that do not line up are counted through the
 * table as before.
 */
#ifndef SIMLSH_DEDUP_JACCARD_H
#define SIMLSH_DEDUP_JACCARD_H

#include <stddef.h>
#include <stdint.h>

/* An open-addressing table of 32-bit values, 0 empty (value 0 is kept
 * aside), with a byte of tags per entry when asked for. */
struct jc_table {
    uint32_t *v;
    uint8_t *tag;
    size_t cap;        /* entries in use (a power of 2) */
    unsigned shift;    /* 32 - log2(cap): a value's home is its top bits */
    size_t v_n, tag_n; /* entries allocated */
    unsigned zero;     /* value 0: 1 present (its tags | 1) */
};

/* Scratch of one thread, reused between calls (zero it before the first
 * call; jc_free() releases it). */
struct jc_scratch {
    struct jc_table c; /* paired values */
    struct jc_table x; /* left-over values, tagged */
    size_t *runs;      /* aligned runs: (start in a, start in b, length) */
    size_t nruns, rcap;
};

/* Distinct values of A, of B and of both. */
struct jc_counts {
    size_t a, b, both;
};

/* The counts of the distinct values of sequences a[0..na) and b[0..nb),
 * repeats allowed, 0 a value like any other. */
void jc_count_seq(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                  struct jc_counts *out);

/* |A and B| for a and b that each hold distinct values (in any order), in
 * two steps, so that a caller may choose jc_probe() instead after the
 * first: the walk (the number of values it paired), then, for the same a
 * and b, |A and B| from what it left over. */
size_t jc_walk(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b, size_t nb);
size_t jc_inter_left(struct jc_scratch *s, const uint32_t *a, size_t na, const uint32_t *b,
                     size_t nb, size_t paired);

/* Table t made to hold the distinct values a[0..na). */
void jc_fill(struct jc_table *t, const uint32_t *a, size_t na);

/* |A and B| for A in t (jc_fill()) and b of distinct values; once the
 * rest of b cannot bring it to need, it stops and returns less than need
 * (0: always exact). */
size_t jc_probe(const struct jc_table *t, const uint32_t *b, size_t nb, size_t need);

void jc_table_free(struct jc_table *t);

/* The distinct values among the low 32 bits of h[0..n), in the order
 * first seen, into out (room for n); their number. */
size_t jc_distinct(struct jc_scratch *s, const uint64_t *h, size_t n, uint32_t *out);

/* Values of a and b paired by the alignment walk of the last call, for
 * tests and statistics. */
size_t jc_aligned(const struct jc_scratch *s);

void jc_free(struct jc_scratch *s);

/* Allocation that exits on failure: dedup-mem.c's (the test has its own). */
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);

#endif
