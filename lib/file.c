/* POSIX whole-file I/O (file.h): atomic replacement (the steps of
 * util/atomic-file.h over a whole buffer) and bounded reads. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "file.h"
#include "alloc.h"
#include "util/atomic-file.h"

/* Symlinks followed before giving up with ELOOP, as the kernel's limit. */
#define MAX_LINKS 40

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

/* ---- the temporary file ------------------------------------------------------- */

/* Write, give the mode and sync an open temporary file. */
static int fill(struct simlsh__afile *af, const void *buf, size_t size, const struct stat *st,
                int exists)
{
    if (simlsh__af_write(af, buf, size) != 0)
        return -1;
    /* A new file gets 0666 less the umask; a replaced one keeps its owner
     * and permission bits. */
    if (exists && simlsh__af_keep_owner(af, st) != 0)
        return -1;
    return simlsh__af_sync(af);
}

/* The file written anonymously and linked under a temporary name, so that
 * only the two calls between link and rename can leave a name behind; else
 * (no O_TMPFILE in this file system, no way to link it) a named temporary
 * file. 0, or -1 with errno (nothing left). */
static int write_tmp(struct simlsh__afile *af, const void *buf, size_t size, const struct stat *st,
                     int exists)
{
    int done = simlsh__af_create_anon(af);
    if (done == 1) {
        if (fill(af, buf, size, st, exists) != 0) {
            simlsh__af_abort(af);
            return -1;
        }
        done = simlsh__af_link(af);
    }
    if (done != 0)
        return done == 1 ? 0 : -1;
    if (simlsh__af_create_named(af, buf) != 0)
        return -1;
    int bad = fill(af, buf, size, st, exists) != 0;
    int e = errno;
    if (simlsh__af_close(af) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        simlsh__af_abort(af);
        errno = e;
        return -1;
    }
    return 0;
}

/* ---- the two calls -------------------------------------------------------------- */

int simlsh__file_write_atomic(const char *path, const void *buf, size_t size, int flags,
                              int *sys_errno, const simlsh_allocator *al)
{
    int err = 0, exists = 0;
    char *target = NULL, *dir = NULL;
    struct simlsh__afile af = {.dirfd = -1};
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
    if (simlsh__af_begin(&af, dir, base, 0) != 0) {
        err = errno;
        rc = SIMLSH_EIO;
        goto out;
    }
    if (write_tmp(&af, buf, size, &st, exists) != 0) {
        err = errno;
        rc = SIMLSH_EIO;
        goto out;
    }
    if (simlsh__af_publish(&af) != 0) {
        err = errno;
        rc = SIMLSH_EIO;
    }
out:
    simlsh__af_end(&af);
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
