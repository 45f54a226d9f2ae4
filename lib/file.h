/* Whole-file I/O for the *_save_file / *_load_file calls: the only place
 * that talks to the file system, so a port replaces this file alone.
 *
 * The atomic replacement is the steps of util/atomic-file.h (shared with
 * the tools) over one buffer, the target's symlinks followed first.
 * Both calls take the public SIMLSH_FILE_* flags and report the errno of
 * a failing system call in *sys_errno (when not NULL; 0 when the failure
 * was not a system call's). */
#ifndef SIMLSH_FILE_H
#define SIMLSH_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "simlsh.h"

/* Replace the file at path by buf[0 .. size) atomically: written to a
 * temporary file in the target's directory (anonymous with O_TMPFILE where
 * the kernel has it, so a kill leaves nothing), synced, renamed over the
 * target, then the directory synced. A symlink at path is followed to the
 * file it names (refused with SIMLSH_FILE_NOFOLLOW). Readers and
 * concurrent writers see the old file or one complete new one, never a
 * partial one; the last rename wins.
 * 0; SIMLSH_EINVAL when path names something other than a regular file
 * (directory, device, FIFO, socket; a symlink with NOFOLLOW) or has no
 * file name; SIMLSH_ENOMEM; SIMLSH_EIO with *sys_errno. On any failure
 * before the rename the old file is byte-identical and no temporary file
 * is left; a failure of the final directory sync is reported although the
 * complete new file is in place (it may not survive a power loss). */
int simlsh__file_write_atomic(const char *path, const void *buf, size_t size, int flags,
                              int *sys_errno, const simlsh_allocator *al);

/* Read the whole regular file at path into a new block of *len bytes that
 * the caller frees with al; *buf may be NULL when *len is 0. At most the
 * size fstat gave at open is read, so a growing file cannot exhaust
 * memory; the file is opened non-blocking and anything but a regular file
 * (a FIFO, a device, a directory; a symlink with SIMLSH_FILE_NOFOLLOW) is
 * refused with SIMLSH_EINVAL before any read. 0, SIMLSH_EINVAL,
 * SIMLSH_ENOMEM or SIMLSH_EIO with *sys_errno (then *buf is NULL). */
int simlsh__file_read_all(const char *path, int flags, int *sys_errno, const simlsh_allocator *al,
                          uint8_t **buf, size_t *len);

/* Test builds' fault hook (SIMLSH_FILE_FAULTS, simlsh__file_fault) is the
 * one of the writer's steps. */
#include "util/atomic-file.h"

#endif
