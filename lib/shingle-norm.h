/* The shingler's ASCII normalisation kernels (shingle-norm.c): lowercasing
 * and whitespace collapsing a block of bytes at a time. Object layer, used
 * only by shingle.c. */
#ifndef SIMLSH_SHINGLE_NORM_H
#define SIMLSH_SHINGLE_NORM_H

#include <stddef.h>
#include <stdint.h>

/* Flags of a kernel call. */
#define SIMLSH__AN_LOWER 1u    /* A-Z -> a-z */
#define SIMLSH__AN_COLLAPSE 2u /* ASCII whitespace runs -> one ' ' */
#define SIMLSH__AN_ASCII 4u    /* stop before a block with a byte >= 0x80 */

/* The largest block: fewer bytes than this left are the caller's. */
#define SIMLSH__AN_BLOCK 32

/*
 * Normalise in[0..len) to out + *m a block at a time, stopping when less
 * than a block is left or (ASCII) at a byte >= 0x80. With COLLAPSE, a
 * whitespace run becomes the ' ' owed before the next byte kept; *prev_space
 * (0 or 1) says one is owed, on entry from before in and on return at its
 * end. Returns the bytes of in consumed and adds the bytes written to *m.
 * Something must already have been emitted (leading whitespace is the
 * caller's), and out + *m must have room for len + 1 bytes.
 */
typedef size_t (*simlsh__ascii_norm_fn)(uint8_t *out, size_t *m, const uint8_t *in, size_t len,
                                        unsigned flags, unsigned *prev_space);

/* Portable: eight bytes per step in a 64-bit word. */
size_t simlsh__ascii_norm_swar(uint8_t *out, size_t *m, const uint8_t *in, size_t len,
                               unsigned flags, unsigned *prev_space);

/* The kernel for a resolved SIMLSH_ISA_*: 32 bytes per step with AVX2 for
 * the AVX2 and AVX-512 ISAs, SWAR for the scalar ISA (so that tests reach
 * it on any machine) and elsewhere. Same bytes either way. */
simlsh__ascii_norm_fn simlsh__ascii_norm_for(int isa);

#endif
