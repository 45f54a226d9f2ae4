/* POSIX whole-file I/O (file.h): atomic replacement and bounded reads. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "alloc.h"
#include "murmur3.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* Symlinks followed before giving up with ELOOP, as the kernel's limit. */
#define MAX_LINKS 40
/* The target's name as kept in a temporary name: long names are cut so
 * that the temporary name stays under NAME_MAX (255). */
#define TMP_BASE_MAX 160
#define TMP_TAG ".simlsh-tmp."

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

/* close() releases the descriptor even when it reports an error (POSIX
 * leaves it unspecified, Linux always releases it), so it is never retried. */
static int x_close(int fd)
{
    int e = fault("close") ? errno : 0;
    int rc = close(fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    return rc;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t chunk = n < WRITE_CHUNK ? n : WRITE_CHUNK;
        ssize_t w = fault("write") ? -1 : write(fd, p, chunk);
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

/* ---- paths ---------------------------------------------------------------------- */

static char *dup_range(const simlsh_allocator *al, const char *s, size_t n)
{
    char *d = simlsh__malloc(al, n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* The file a save to path replaces: symlinks at the last component are
 * followed (relative targets from the link's directory) unless nofollow.
 * *out is a new string; *exists tells whether it exists, *st its lstat.
 * 0, SIMLSH_EINVAL (a symlink with nofollow), SIMLSH_ENOMEM, SIMLSH_EIO. */
static int resolve(const simlsh_allocator *al, const char *path, int nofollow, char **out,
                   struct stat *st, int *exists, int *err)
{
    char *cur = dup_range(al, path, strlen(path));
    if (cur == NULL)
        return SIMLSH_ENOMEM;
    for (int hops = 0;; hops++) {
        if (lstat(cur, st) != 0) {
            if (errno != ENOENT)
                break;
            *exists = 0;
            *out = cur;
            return 0;
        }
        if (!S_ISLNK(st->st_mode)) {
            *exists = 1;
            *out = cur;
            return 0;
        }
        if (nofollow) {
            simlsh__free_sized(al, cur, strlen(cur) + 1);
            return SIMLSH_EINVAL;
        }
        if (hops == MAX_LINKS) {
            errno = ELOOP;
            break;
        }
        /* st_size is the link's length on Linux but 0 on some file
         * systems: grow until the whole target fits. */
        size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
        char *link = NULL;
        ssize_t n;
        for (;;) {
            link = simlsh__malloc(al, cap);
            if (link == NULL) {
                simlsh__free_sized(al, cur, strlen(cur) + 1);
                return SIMLSH_ENOMEM;
            }
            n = readlink(cur, link, cap);
            if (n < 0 || (size_t)n < cap)
                break;
            simlsh__free_sized(al, link, cap);
            cap *= 2;
        }
        if (n < 0) {
            simlsh__free_sized(al, link, cap);
            break;
        }
        char *next;
        const char *slash = strrchr(cur, '/');
        if (link[0] == '/' || slash == NULL) {
            next = dup_range(al, link, (size_t)n);
        } else {
            size_t dl = (size_t)(slash - cur) + 1;
            next = simlsh__malloc(al, dl + (size_t)n + 1);
            if (next != NULL) {
                memcpy(next, cur, dl);
                memcpy(next + dl, link, (size_t)n);
                next[dl + (size_t)n] = '\0';
            }
        }
        simlsh__free_sized(al, link, cap);
        simlsh__free_sized(al, cur, strlen(cur) + 1);
        if (next == NULL)
            return SIMLSH_ENOMEM;
        cur = next;
    }
    *err = errno;
    simlsh__free_sized(al, cur, strlen(cur) + 1);
    return SIMLSH_EIO;
}

/* ---- temporary files ----------------------------------------------------------- */

/* ".BASE.simlsh-tmp.PID.RANDOM": the pid lets a later save tell a temporary
 * file of a dead writer (removed) from one being written (left alone). */
static void tmp_name(char *out, size_t cap, const char *base, uint64_t rnd)
{
    snprintf(out, cap, ".%.*s" TMP_TAG "%ld.%016llx", TMP_BASE_MAX, base, (long)getpid(),
             (unsigned long long)rnd);
}

static uint64_t tmp_salt(const void *p)
{
    /* Two threads saving in the same nanosecond still differ. */
    static atomic_uint counter;
    uint64_t c = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return simlsh__fmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                          ((uint64_t)getpid() << 20) ^ (uint64_t)(uintptr_t)p ^ (c << 48));
}

/* Is name a temporary file of base left by a process that no longer
 * exists? The process is asked with kill(pid, 0): ESRCH means gone. A
 * writer in another pid namespace sharing the directory may look gone;
 * removing its file then fails its rename, never corrupts the target. */
static int stale_tmp(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (bl > TMP_BASE_MAX)
        bl = TMP_BASE_MAX;
    size_t tl = sizeof TMP_TAG - 1;
    if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 ||
        strncmp(name + 1 + bl, TMP_TAG, tl) != 0)
        return 0;
    const char *s = name + 1 + bl + tl;
    char *end;
    errno = 0;
    long pid = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '.' || pid <= 0 || (pid_t)pid != pid)
        return 0;
    s = end + 1;
    for (int i = 0; i < 16; i++, s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    if (*s != '\0' || (pid_t)pid == getpid())
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Remove the temporary files of base that dead writers left in the
 * directory (a kill between link and rename, or anywhere without
 * O_TMPFILE). Best effort: errors are ignored, the save goes on. */
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

/* Write, give the mode and sync an open temporary file. */
static int fill(int fd, const void *buf, size_t size, const struct stat *st, int exists)
{
    if (write_all(fd, buf, size) != 0)
        return -1;
    /* A replaced file keeps its owner where the caller may give it (root
     * re-saving a user's index leaves it the user's; otherwise the call
     * fails and the file is the caller's, as any new file) and its
     * permission bits (an index made private stays private); a new one
     * gets 0666 less the umask. Owner first: chown clears set-id bits. */
    if (exists && (st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchown(fd, st->st_uid, st->st_gid) != 0) {
        /* EPERM: not ours to give away, the file stays the caller's */
    }
    if (exists && (fault("chmod") || fchmod(fd, st->st_mode & 07777) != 0))
        return -1;
    return x_fsync(fd, "fsync");
}

#ifdef O_TMPFILE
/* Give the anonymous file fd the name tmp in dirfd: through AT_EMPTY_PATH
 * (needs CAP_DAC_READ_SEARCH) or its /proc/self/fd link. */
static int link_anon(int fd, int dirfd, const char *tmp)
{
    if (fault("link"))
        return -1;
    if (linkat(fd, "", dirfd, tmp, AT_EMPTY_PATH) == 0)
        return 0;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW);
}

/* The file written anonymously and linked under a temporary name, so that
 * only the two calls between link and rename can leave a name behind.
 * 1 done (the name is tmp), 0 not possible here (no O_TMPFILE in this file
 * system, no way to link it: the caller writes a named file), -1 error. */
static int write_anon(int dirfd, const void *buf, size_t size, const struct stat *st, int exists,
                      char *tmp, size_t tcap, const char *base)
{
    int fd = x_openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666, "tmpfile");
    if (fd < 0)
        return errno == ENOSPC || errno == EDQUOT || errno == EACCES || errno == EROFS ? -1 : 0;
    if (fill(fd, buf, size, st, exists) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        tmp_name(tmp, tcap, base, tmp_salt(buf));
        if (link_anon(fd, dirfd, tmp) == 0) {
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
    int e = errno;
    if (x_close(fd) != 0 && rc == 1) {
        e = errno;
        (void)unlinkat(dirfd, tmp, 0);
        rc = -1;
    }
    errno = e;
    return rc;
}
#endif

/* A named temporary file, created exclusively with 0666 (the umask
 * applies; mkstemp would force 0600). 1 done, -1 error (nothing left). */
static int write_named(int dirfd, const void *buf, size_t size, const struct stat *st, int exists,
                       char *tmp, size_t tcap, const char *base)
{
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        tmp_name(tmp, tcap, base, tmp_salt(buf));
        fd = x_openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666, "open");
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    int bad = fill(fd, buf, size, st, exists) != 0;
    int e = errno;
    if (x_close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        (void)unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    return 1;
}

/* ---- the two calls -------------------------------------------------------------- */

int simlsh__file_write_atomic(const char *path, const void *buf, size_t size, int flags,
                              int *sys_errno, const simlsh_allocator *al)
{
    int err = 0, exists = 0, dirfd = -1;
    char *target = NULL, *dir = NULL;
    struct stat st;
    int rc = resolve(al, path, (flags & SIMLSH_FILE_NOFOLLOW) != 0, &target, &st, &exists, &err);
    if (rc < 0)
        goto out;
    /* Only a regular file is ever replaced: renaming over a device or a
     * FIFO would swap the node itself (/dev/null as root). */
    if (exists && !S_ISREG(st.st_mode)) {
        rc = SIMLSH_EINVAL;
        goto out;
    }
    const char *slash = strrchr(target, '/'), *base = slash != NULL ? slash + 1 : target;
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        rc = SIMLSH_EINVAL;
        goto out;
    }
    dir = slash == NULL ? dup_range(al, ".", 1)
                        : dup_range(al, target, slash == target ? 1 : (size_t)(slash - target));
    if (dir == NULL) {
        rc = SIMLSH_ENOMEM;
        goto out;
    }
    dirfd = x_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, "open");
    if (dirfd < 0) {
        err = errno;
        rc = SIMLSH_EIO;
        goto out;
    }
    remove_stale(dirfd, base);

    char tmp[TMP_BASE_MAX + 64];
    int done = 0;
#ifdef O_TMPFILE
    done = write_anon(dirfd, buf, size, &st, exists, tmp, sizeof tmp, base);
#endif
    if (done == 0)
        done = write_named(dirfd, buf, size, &st, exists, tmp, sizeof tmp, base);
    if (done < 0) {
        err = errno;
        rc = SIMLSH_EIO;
        goto out;
    }
    if (fault("rename") || renameat(dirfd, tmp, dirfd, base) != 0) {
        err = errno;
        (void)unlinkat(dirfd, tmp, 0);
        rc = SIMLSH_EIO;
        goto out;
    }
    /* The rename is durable only once the directory is; some file systems
     * cannot sync a directory (EINVAL) and need nothing more. */
    if (x_fsync(dirfd, "dirsync") != 0 && errno != EINVAL) {
        err = errno;
        rc = SIMLSH_EIO;
    }
out:
    if (dirfd >= 0)
        close(dirfd);
    simlsh__free_sized(al, dir, dir ? strlen(dir) + 1 : 0);
    simlsh__free_sized(al, target, target ? strlen(target) + 1 : 0);
    if (sys_errno != NULL)
        *sys_errno = rc == SIMLSH_EIO ? err : 0;
    return rc;
}

int simlsh__file_read_all(const char *path, int flags, int *sys_errno, const simlsh_allocator *al,
                          uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int err = 0, rc = 0, fd = -1;
    int nofollow = (flags & SIMLSH_FILE_NOFOLLOW) != 0;
    uint8_t *buf = NULL;
    size_t want = 0, got = 0;
    struct stat st;
    if (nofollow && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        rc = SIMLSH_EINVAL;
    /* Non-blocking: opening a FIFO for reading never waits for a writer,
     * and the fstat below refuses it before any read could block. */
    if (rc == 0) {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0 && nofollow && errno == ELOOP) /* a symlink swapped in since */
            rc = SIMLSH_EINVAL;
        else if (fd < 0)
            rc = SIMLSH_EIO;
    }
    if (rc == 0 && fstat(fd, &st) != 0)
        rc = SIMLSH_EIO;
    else if (rc == 0 && !S_ISREG(st.st_mode))
        rc = SIMLSH_EINVAL;
    else if (rc == 0 && (st.st_size < 0 || (uint64_t)st.st_size >= SIZE_MAX))
        rc = SIMLSH_ENOMEM;
    if (rc == SIMLSH_EIO)
        err = errno;
    if (rc == 0 && st.st_size > 0) {
        want = (size_t)st.st_size;
        buf = simlsh__malloc(al, want);
        if (buf == NULL)
            rc = SIMLSH_ENOMEM;
    }
    /* The size at open bounds the read: a file that grows meanwhile is
     * read as it was, and its frame check decides. */
    while (rc == 0 && got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            rc = SIMLSH_EIO;
        } else if (n == 0) {
            break; /* shrank: what is there is checked as it is */
        } else {
            got += (size_t)n;
        }
    }
    if (fd >= 0)
        close(fd);
    /* Callers free the buffer by its length: a file that shrank gets a
     * block of the bytes read. */
    if (rc == 0 && got < want) {
        uint8_t *q = simlsh__realloc_sized(al, buf, got, want, got);
        if (q == NULL) {
            rc = SIMLSH_ENOMEM;
        } else {
            buf = q;
            want = got;
        }
    }
    if (rc == 0) {
        *out = buf;
        *len = got;
    } else {
        simlsh__free_sized(al, buf, want);
    }
    if (sys_errno != NULL)
        *sys_errno = rc == SIMLSH_EIO ? err : 0;
    return rc;
}
