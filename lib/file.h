/* Whole-file I/O for the *_save_file / *_load_file calls: the only place
 * that talks to the file system, so a port replaces this file alone. */
#ifndef SIMLSH_FILE_H
#define SIMLSH_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "simlsh.h"

/* Replace the file at path by buf[0 .. size) atomically: written to a
 * temporary file beside it, synced, then renamed over it. Readers see the
 * old file or the complete new one, never a partial one. 0, SIMLSH_ENOMEM
 * or SIMLSH_EIO (then path is untouched and no temporary file is left). */
int simlsh__file_write_atomic(const char *path, const void *buf, size_t size,
                              const simlsh_allocator *al);

/* Read the whole file at path into a new block of *len bytes (capacity
 * may be larger) that the caller frees with al; *buf may be NULL when *len
 * is 0. 0, SIMLSH_ENOMEM or SIMLSH_EIO (then *buf is NULL). */
int simlsh__file_read_all(const char *path, const simlsh_allocator *al, uint8_t **buf,
                          size_t *len);

#endif
