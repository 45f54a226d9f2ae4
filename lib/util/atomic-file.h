/* A file replaced atomically, as steps: the one writer of the library's
 * saves (file.c, a whole buffer) and of the tools' outputs
 * (tools/core/dedup-io.c, a stream with several outputs finished before
 * any is renamed). Layer 1 and libc only, so that the tools compile it in
 * as it is (tools/README.md); errors are -1 with errno, as the system calls
 * it makes.
 *
 * The course of one file:
 *
 *   simlsh__af_begin()        the target's directory opened, temporary
 *                             files of dead writers removed
 *   simlsh__af_create_anon()  an anonymous file (O_TMPFILE), or
 *   simlsh__af_create_named() a named one
 *   simlsh__af_write() ...    (or a FILE * on af->fd)
 *   simlsh__af_keep_owner()   the replaced file's owner and mode
 *   simlsh__af_sync()         fsync
 *   simlsh__af_link() or      the anonymous file named, and closed
 *   simlsh__af_close()        the named file closed
 *   simlsh__af_publish()      renamed over the target, the directory synced
 *   simlsh__af_end()          the directory closed
 *
 * and simlsh__af_abort() at any point before the rename leaves the target
 * as it was and no temporary file. Temporary names are
 * ".BASE.simlsh-tmp.PID.HEX16" beside the target: the pid lets a later
 * writer tell a dead writer's file (removed) from a live one's (kept).
 *
 * Threads: one afile per thread; the calls keep no other state. */
#ifndef SIMLSH_UTIL_ATOMIC_FILE_H
#define SIMLSH_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/* The target's name as kept in a temporary name: long names are cut so
 * that the temporary name stays under NAME_MAX (255). */
#define SIMLSH__AF_BASE_MAX 160

/* simlsh__af_begin() flag: a directory that may be written but not read
 * (mode -wx) is opened as a path only (O_PATH), so the file is written
 * and renamed, and only the final directory sync fails (with the error of
 * opening it for reading). Without it, begin() fails there. */
#define SIMLSH__AF_DIR_WX 1

struct simlsh__afile {
    int dirfd;                          /* the target's directory; -1 when not begun */
    int dir_path;                       /* dirfd is a path only (SIMLSH__AF_DIR_WX) */
    int fd;                             /* the temporary file while open, else -1. A caller
                       * that wraps it in a FILE * closes it by fclose()
                       * and sets fd to -1 */
    int named;                          /* tmp names a file in dirfd that is ours to remove */
    const char *base;                   /* the target's name in dirfd (the caller's string) */
    char tmp[SIMLSH__AF_BASE_MAX + 64]; /* the temporary file's name */
};

/* Open the directory dir (dir and base are kept by reference until
 * simlsh__af_end()) and remove the temporary files of base that dead
 * writers left there (best effort). 0, or -1 with errno. */
int simlsh__af_begin(struct simlsh__afile *af, const char *dir, const char *base, int flags);

/* An anonymous file in the directory, written before it has a name, so a
 * kill leaves nothing. 1 done; 0 when the file system cannot (the caller
 * creates a named file instead); -1 with errno when the directory is full,
 * read-only or not ours to write. */
int simlsh__af_create_anon(struct simlsh__afile *af);

/* A named temporary file, created exclusively with mode 0666 (the umask
 * applies). salt is any pointer that differs between concurrent writers
 * of one process (the data written, the afile). 0, or -1 with errno
 * (nothing left). */
int simlsh__af_create_named(struct simlsh__afile *af, const void *salt);

/* Write all of p[0 .. n). 0, or -1 with errno (ENOSPC for a write that
 * makes no progress). */
int simlsh__af_write(struct simlsh__afile *af, const void *p, size_t n);

/* Give the file the owner (where the caller may: root re-saving a user's
 * file leaves it the user's) and the permission bits of the file it
 * replaces, whose lstat is st. 0, or -1 with errno (the mode). */
int simlsh__af_keep_owner(struct simlsh__afile *af, const struct stat *st);

/* fsync the temporary file. 0, or -1 with errno. */
int simlsh__af_sync(struct simlsh__afile *af);

/* The anonymous file given a temporary name, then closed. 1 done; 0 when
 * it cannot be named here (no /proc and no privilege: the caller writes a
 * named file instead); -1 with errno (nothing left). */
int simlsh__af_link(struct simlsh__afile *af);

/* Close the named file. close() releases the descriptor even when it
 * reports an error, so it is never retried. 0, or -1 with errno. */
int simlsh__af_close(struct simlsh__afile *af);

/* Rename the closed temporary file over the target, then sync the
 * directory (a file system that cannot sync a directory, EINVAL or
 * ENOTSUP, needs nothing more). 0; -1 with errno when the rename failed
 * (the temporary file is removed, the target is as it was); -2 with errno
 * when the directory sync failed (the new file is in place but may not
 * survive a power loss). */
int simlsh__af_publish(struct simlsh__afile *af);

/* Close the temporary file if open and remove it if named: the target is
 * as it was. The directory stays open. */
void simlsh__af_abort(struct simlsh__afile *af);

/* Close the directory. */
void simlsh__af_end(struct simlsh__afile *af);

/* Remove the temporary file of a writer that is being killed: only
 * async-signal-safe calls, no state changed. */
void simlsh__af_unlink_on_signal(const struct simlsh__afile *af);

#ifdef SIMLSH_FILE_FAULTS
/* Test builds only (tests/test-save-fault.c and the tools' fault build
 * compile this file with it defined): called before each system call
 * that can fail with the name of the operation ("open", "tmpfile",
 * "write", "chmod", "fsync", "close", "link", "rename", "dirsync"); a
 * non-zero return is the errno that call then fails with. Writes are also
 * cut into chunks of at most SIMLSH__FILE_FAULT_CHUNK bytes, so a small
 * file has many write points. */
#define SIMLSH__FILE_FAULT_CHUNK 4096
extern int (*simlsh__file_fault)(const char *op);
#endif

#endif
