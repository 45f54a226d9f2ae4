/* Framing shared by every serialised object (serialize.c, docs/format.md):
 * header, contract, payload, checksum trailer. Contract layer. */
#ifndef SIMLSH_FRAME_H
#define SIMLSH_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

#define SIMLSH__HEADER_SIZE 16
#define SIMLSH__CONTRACT_SIZE 32
#define SIMLSH__TRAILER_SIZE 8
#define SIMLSH__FRAME_OVERHEAD (SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE + SIMLSH__TRAILER_SIZE)
#define SIMLSH__MAGIC_SET 0x53534C53u   /* "SLSS" little-endian */
#define SIMLSH__MAGIC_SIG 0x47534C53u   /* "SLSG" */
#define SIMLSH__MAGIC_INDEX 0x58494C53u /* "SLIX" */
#define SIMLSH__FORMAT_VERSION 1

/* The save prologue of every framed object: *size = the framed size of a
 * payload of payload_len bytes. Returns 0 when buf is NULL (the size query
 * is answered), SIMLSH_EBUFSIZE when cap < *size, SIMLSH_EINVAL when the
 * size does not fit in a size_t; otherwise writes header and contract and
 * returns 1 with *payload at the payload: the caller writes it and then
 * calls simlsh__frame_write_tail(buf, *size). */
int simlsh__frame_begin(void *buf, size_t cap, size_t *size, uint64_t payload_len, uint32_t magic,
                        const struct simlsh_params *p, uint8_t **payload);
/* The load prologue, after the constructor's out check: a NULL buf or a
 * half-filled allocator is SIMLSH_EINVAL; then magic, version, flags,
 * length and checksum are checked (SIMLSH_ECORRUPT, or SIMLSH_EUNSUPPORTED
 * for a newer version) and the contract is read into *params (with alloc);
 * on success *payload / *payload_len are the payload. */
int simlsh__frame_open(const void *buf, size_t len, const simlsh_allocator *alloc, uint32_t magic,
                       struct simlsh_params *params, const uint8_t **payload,
                       uint64_t *payload_len);

/* The save epilogue: append the checksum of buf[0 .. total-8) at
 * buf + total - 8. */
void simlsh__frame_write_tail(uint8_t *buf, size_t total);

#endif
