/* POSIX whole-file I/O (file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "murmur3.h"
#include "vec.h"

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return SIMLSH_EIO;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int simlsh__file_write_atomic(const char *path, const void *buf, size_t size,
                              const simlsh_allocator *al)
{
    size_t plen = strlen(path), tlen = plen + 64;
    char *tmp = simlsh__malloc(al, tlen);
    if (tmp == NULL)
        return SIMLSH_ENOMEM;

    /* A unique name beside the target, created exclusively with 0666 so
     * the umask applies (mkstemp would force 0600); rename() then swaps the
     * complete file in atomically, and readers never see a partial one. */
    int rc = 0, fd = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t salt = simlsh__fmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                                   ((uint64_t)getpid() << 20) ^ (uint64_t)(uintptr_t)buf);
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        memcpy(tmp, path, plen);
        snprintf(tmp + plen, tlen - plen, ".tmp-%016llx",
                 (unsigned long long)simlsh__fmix64(salt + (uint64_t)attempt));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        rc = SIMLSH_EIO;
        goto out;
    }
    rc = write_all(fd, buf, size);
    if (rc == 0 && fsync(fd) != 0)
        rc = SIMLSH_EIO;
    if (close(fd) != 0 && rc == 0)
        rc = SIMLSH_EIO;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = SIMLSH_EIO;
    if (rc < 0)
        unlink(tmp);
out:
    simlsh__free(al, tmp);
    return rc;
}

int simlsh__file_read_all(const char *path, const simlsh_allocator *al, uint8_t **out,
                          size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return SIMLSH_EIO;
    SIMLSH__VEC(uint8_t) buf = {NULL, 0, 0};
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((uint64_t)st.st_size >= SIZE_MAX) {
            rc = SIMLSH_ENOMEM;
            goto out;
        }
        /* +1: a read of 0 confirms the end */
        rc = simlsh__vec_reserve(al, &buf, (size_t)st.st_size + 1, NULL);
        if (rc < 0)
            goto out;
    }
    for (;;) {
        if (buf.n == buf.cap) {
            rc = simlsh__vec_reserve(al, &buf, buf.cap + 1, NULL);
            if (rc < 0)
                goto out;
        }
        ssize_t got = read(fd, buf.v + buf.n, buf.cap - buf.n);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = SIMLSH_EIO;
            goto out;
        }
        if (got == 0)
            break;
        buf.n += (size_t)got;
    }
out:
    close(fd);
    if (rc < 0) {
        simlsh__vec_free(al, &buf, NULL);
        return rc;
    }
    *out = buf.v;
    *len = buf.n;
    return 0;
}
