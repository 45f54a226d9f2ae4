/* A file replaced atomically, as steps (atomic-file.h). POSIX, with
 * O_TMPFILE and O_PATH where Linux has them. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* O_TMPFILE, O_PATH, AT_EMPTY_PATH */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "atomic-file.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define TMP_TAG ".simlsh-tmp."
/* The tools named their temporary files ".BASE.simlsh-PID-XXXXXX" (mkstemp)
 * before they shared this writer; such files of dead runs are removed too. */
#define OLD_TAG ".simlsh-"

/* ---- system calls, with the test builds' fault hook ------------------------------ */

#ifdef SIMLSH_FILE_FAULTS
int (*simlsh__file_fault)(const char *op);

static int fault(const char *op)
{
    int e = simlsh__file_fault != NULL ? simlsh__file_fault(op) : 0;
    if (e != 0)
        errno = e;
    return e != 0;
}
#define WRITE_CHUNK ((size_t)SIMLSH__FILE_FAULT_CHUNK)
#else
#define fault(op) ((void)(op), 0)
/* Linux writes at most 0x7ffff000 bytes per call anyway. */
#define WRITE_CHUNK ((size_t)1 << 30)
#endif

static int x_openat(int dir, const char *name, int flags, mode_t mode, const char *op)
{
    return fault(op) ? -1 : openat(dir, name, flags, mode);
}

static int x_fsync(int fd, const char *op)
{
    return fault(op) ? -1 : fsync(fd);
}

/* ---- temporary names ----------------------------------------------------------- */

static void tmp_name(struct simlsh__afile *af, const void *salt)
{
    /* Two threads naming in the same nanosecond still differ (the counter),
     * and so do two processes (the pid, also in the name). The product
     * spreads the bits over all sixteen digits. */
    static atomic_uint counter;
    uint64_t c = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 20) ^
                 (uint64_t)(uintptr_t)salt ^ (c << 48);
    x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15u;
    snprintf(af->tmp, sizeof af->tmp, ".%.*s" TMP_TAG "%ld.%016llx", SIMLSH__AF_BASE_MAX, af->base,
             (long)getpid(), (unsigned long long)(x ^ (x >> 29)));
}

/* Is s a pid followed by end (a character), and that process gone? It is
 * asked with kill(pid, 0): ESRCH means gone. A writer in another pid
 * namespace sharing the directory may look gone; removing its file then
 * fails its rename, never corrupts the target. *rest is past end. */
static int dead_pid(const char *s, char end, const char **rest)
{
    char *e;
    errno = 0;
    long pid = strtol(s, &e, 10);
    if (errno != 0 || e == s || *e != end || pid <= 0 || (pid_t)pid != pid)
        return 0;
    *rest = e + 1;
    if ((pid_t)pid == getpid())
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Is name a temporary file of base left by a process that no longer
 * exists: ".BASE.simlsh-tmp.PID.HEX16" (BASE cut as tmp_name() cuts it),
 * or the tools' former ".BASE.simlsh-PID-XXXXXX"? */
static int stale_tmp(const char *name, const char *base)
{
    size_t full = strlen(base), bl = full > SIMLSH__AF_BASE_MAX ? SIMLSH__AF_BASE_MAX : full;
    size_t tl = sizeof TMP_TAG - 1, ol = sizeof OLD_TAG - 1;
    const char *s;
    if (name[0] != '.')
        return 0;
    if (strncmp(name + 1, base, bl) == 0 && strncmp(name + 1 + bl, TMP_TAG, tl) == 0) {
        if (!dead_pid(name + 1 + bl + tl, '.', &s))
            return 0;
        for (int i = 0; i < 16; i++, s++)
            if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                return 0;
        return *s == '\0';
    }
    if (strncmp(name + 1, base, full) == 0 && strncmp(name + 1 + full, OLD_TAG, ol) == 0)
        return dead_pid(name + 1 + full + ol, '-', &s) && strlen(s) == 6;
    return 0;
}

/* Remove the temporary files of base that dead writers left in the
 * directory (a kill between link and rename, or anywhere without
 * O_TMPFILE). Best effort: errors are ignored, the write goes on. */
static void remove_stale(int dirfd, const char *base)
{
    int fd = dup(dirfd);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return;
    }
    int saved = errno;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (stale_tmp(e->d_name, base))
            (void)unlinkat(dirfd, e->d_name, 0);
    closedir(d);
    errno = saved;
}

/* ---- the steps ------------------------------------------------------------------ */

int simlsh__af_begin(struct simlsh__afile *af, const char *dir, const char *base, int flags)
{
    af->fd = -1;
    af->named = 0;
    af->dir_path = 0;
    af->base = base;
    af->tmp[0] = '\0';
    af->dirfd = x_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, "open");
#ifdef O_PATH
    if (af->dirfd < 0 && errno == EACCES && (flags & SIMLSH__AF_DIR_WX)) {
        af->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        af->dir_path = af->dirfd >= 0;
        if (af->dirfd < 0)
            errno = EACCES;
    }
#else
    (void)flags;
#endif
    if (af->dirfd < 0)
        return -1;
    if (!af->dir_path)
        remove_stale(af->dirfd, base);
    return 0;
}

int simlsh__af_create_anon(struct simlsh__afile *af)
{
#ifdef O_TMPFILE
    af->fd = x_openat(af->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666, "tmpfile");
    if (af->fd >= 0)
        return 1;
    return errno == ENOSPC || errno == EDQUOT || errno == EACCES || errno == EROFS ? -1 : 0;
#else
    (void)af;
    return 0;
#endif
}

int simlsh__af_create_named(struct simlsh__afile *af, const void *salt)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        tmp_name(af, salt);
        af->fd =
            x_openat(af->dirfd, af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666, "open");
        if (af->fd >= 0) {
            af->named = 1;
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int simlsh__af_write(struct simlsh__afile *af, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        size_t chunk = n < WRITE_CHUNK ? n : WRITE_CHUNK;
        ssize_t w = fault("write") ? -1 : write(af->fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) { /* no progress and no error: treat as a full disk */
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int simlsh__af_keep_owner(struct simlsh__afile *af, const struct stat *st)
{
    /* A replaced file keeps its owner where the caller may give it (root
     * re-saving a user's index leaves it the user's; otherwise the call
     * fails and the file is the caller's, as any new file) and its
     * permission bits (an index made private stays private). Owner first:
     * chown clears set-id bits. */
    if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchown(af->fd, st->st_uid, st->st_gid) != 0) {
        /* EPERM: not ours to give away, the file stays the caller's */
    }
    return fault("chmod") || fchmod(af->fd, st->st_mode & 07777) != 0 ? -1 : 0;
}

int simlsh__af_sync(struct simlsh__afile *af)
{
    return x_fsync(af->fd, "fsync");
}

int simlsh__af_close(struct simlsh__afile *af)
{
    int e = fault("close") ? errno : 0;
    int rc = close(af->fd);
    af->fd = -1;
    if (e != 0) {
        errno = e;
        return -1;
    }
    return rc;
}

#ifdef O_TMPFILE
/* Give the anonymous file its temporary name: through AT_EMPTY_PATH
 * (needs CAP_DAC_READ_SEARCH) or its /proc/self/fd link. */
static int link_anon(struct simlsh__afile *af)
{
    if (fault("link"))
        return -1;
    if (linkat(af->fd, "", af->dirfd, af->tmp, AT_EMPTY_PATH) == 0)
        return 0;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", af->fd);
    return linkat(AT_FDCWD, proc, af->dirfd, af->tmp, AT_SYMLINK_FOLLOW);
}
#endif

int simlsh__af_link(struct simlsh__afile *af)
{
    int rc = -1;
#ifdef O_TMPFILE
    for (int attempt = 0; attempt < 100; attempt++) {
        tmp_name(af, af);
        if (link_anon(af) == 0) {
            rc = 1;
            break;
        }
        if (errno == EEXIST)
            continue;
        /* No /proc and no privilege: fall back to a named file. */
        if (errno == ENOENT || errno == EPERM || errno == EACCES || errno == EINVAL ||
            errno == EOPNOTSUPP)
            rc = 0;
        break;
    }
#endif
    int e = errno;
    af->named = rc == 1;
    if (simlsh__af_close(af) != 0 && rc == 1) {
        e = errno;
        (void)unlinkat(af->dirfd, af->tmp, 0);
        af->named = 0;
        rc = -1;
    }
    errno = e;
    return rc;
}

int simlsh__af_publish(struct simlsh__afile *af)
{
    if (fault("rename") || renameat(af->dirfd, af->tmp, af->dirfd, af->base) != 0) {
        int e = errno;
        (void)unlinkat(af->dirfd, af->tmp, 0);
        af->named = 0;
        errno = e;
        return -1;
    }
    af->named = 0;
    /* The rename is durable only once the directory is. A directory
     * opened as a path only is opened again to be synced, and fails as
     * opening it would have. */
    int fd = af->dirfd;
    if (af->dir_path && (fd = openat(af->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -2;
    int rc = x_fsync(fd, "dirsync");
    int e = errno;
    if (fd != af->dirfd)
        close(fd);
    errno = e;
    return rc != 0 && errno != EINVAL && errno != ENOTSUP ? -2 : 0;
}

void simlsh__af_abort(struct simlsh__afile *af)
{
    int e = errno;
    if (af->fd >= 0)
        close(af->fd);
    af->fd = -1;
    if (af->named)
        (void)unlinkat(af->dirfd, af->tmp, 0);
    af->named = 0;
    errno = e;
}

void simlsh__af_end(struct simlsh__afile *af)
{
    if (af->dirfd >= 0)
        close(af->dirfd);
    af->dirfd = -1;
}

void simlsh__af_unlink_on_signal(const struct simlsh__afile *af)
{
    if (af->named && af->dirfd >= 0)
        (void)unlinkat(af->dirfd, af->tmp, 0);
}
