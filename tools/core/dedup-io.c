/*
 * simlsh-dedup: the file system side. Bounded, type-checked reads (with
 * transparent gzip and zstd), output files that replace their target only
 * when complete, and the checks that keep an output from overwriting an
 * input (the escaping of names in diagnostics is dedup-escape.c).
 */
#include "dedup.h"
/* The library's atomic writer, compiled into the core (tools/README.md). */
#include "atomic-file.h"

#if DEDUP_HAVE_ZLIB
#include <zlib.h>
#endif
#if DEDUP_HAVE_ZSTD
#include <zstd.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/vfs.h>
#endif

/* ------------------------------------------------------------------------ */
/* File types                                                               */
/* ------------------------------------------------------------------------ */

const char *file_type_name(mode_t mode)
{
    static const struct {
        mode_t type;
        const char *name;
    } types[] = {
        {S_IFREG, "regular file"}, {S_IFDIR, "directory"},        {S_IFLNK, "symbolic link"},
        {S_IFIFO, "FIFO"},         {S_IFCHR, "character device"}, {S_IFBLK, "block device"},
        {S_IFSOCK, "socket"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if ((mode & S_IFMT) == types[i].type)
            return types[i].name;
    return "special file";
}

/* The name of the pseudo file system a directory is on, or NULL. Their
 * files are generated on read, can be endless (/proc/self/task/N/pagemap)
 * or have side effects, so walks never enter them. */
const char *pseudo_fs_name(const char *dir)
{
#if defined(__linux__)
    static const struct {
        unsigned long magic;
        const char *name;
    } fs[] = {
        {0x9fa0, "proc"},          {0x62656572, "sysfs"},       {0x64626720, "debugfs"},
        {0x74726163, "tracefs"},   {0x73636673, "securityfs"},  {0x27e0eb, "cgroup"},
        {0x63677270, "cgroup2"},   {0x1cd1, "devpts"},          {0x6165676C, "pstore"},
        {0xcafe4a11, "bpf"},       {0x62656570, "configfs"},    {0xde5e81e4, "efivarfs"},
        {0xf97cff8c, "selinuxfs"}, {0x42494e4d, "binfmt_misc"}, {0x65735543, "fusectl"},
        {0x19800202, "mqueue"},
    };
    struct statfs sf;
    if (statfs(dir, &sf) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if ((unsigned long)sf.f_type == fs[i].magic)
            return fs[i].name;
#else
    (void)dir;
#endif
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reading: plain, gzip or zstd, recognised by their first bytes            */
/* ------------------------------------------------------------------------ */

#define READER_IN (256u << 10)

static ssize_t read_fd(int fd, void *buf, size_t n)
{
    for (;;) {
        ssize_t got = read(fd, buf, n);
        if (got >= 0 || errno != EINTR)
            return got;
    }
}

/* Fill the input buffer from the descriptor; 0 at end of file. */
static ssize_t refill(struct reader *rd)
{
    rd->in_base += rd->in_pos;
    if (rd->in_pos == rd->in_len) {
        rd->in_pos = rd->in_len = 0;
    } else if (rd->in_pos > 0) {
        memmove(rd->in, rd->in + rd->in_pos, rd->in_len - rd->in_pos);
        rd->in_len -= rd->in_pos;
        rd->in_pos = 0;
    }
    ssize_t got = read_fd(rd->fd, rd->in + rd->in_len, READER_IN - rd->in_len);
    if (got < 0) {
        rd->err = errno;
        snprintf(rd->msg, sizeof rd->msg, "read error: %s", strerror(errno));
        return -1;
    }
    if (got == 0)
        rd->eof = 1;
    rd->in_len += (size_t)got;
    return got;
}

int reader_open(struct reader *rd, int fd)
{
    memset(rd, 0, sizeof *rd);
    rd->fd = fd;
    rd->in = xmalloc(READER_IN);
    /* Enough bytes to see the magic (a pipe may deliver fewer at first). */
    while (rd->in_len < 4 && !rd->eof)
        if (refill(rd) < 0)
            return -1;
    const unsigned char *m = (const unsigned char *)rd->in;
    if (rd->in_len >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
        rd->codec = CODEC_GZIP;
#if DEDUP_HAVE_ZLIB
        z_stream *z = calloc(1, sizeof *z);
        if (!z)
            die_oom();
        if (inflateInit2(z, 15 + 32) != Z_OK) {
            free(z);
            snprintf(rd->msg, sizeof rd->msg, "cannot start gzip decompression");
            return -1;
        }
        rd->state = z;
#else
        rd->unsupported = 1;
        snprintf(rd->msg, sizeof rd->msg,
                 "gzip-compressed, and simlsh-dedup was built without zlib (meson option zlib)");
        return -1;
#endif
    } else if (rd->in_len >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
        rd->codec = CODEC_ZSTD;
#if DEDUP_HAVE_ZSTD
        ZSTD_DStream *zs = ZSTD_createDStream();
        if (!zs)
            die_oom();
        ZSTD_initDStream(zs);
        rd->state = zs;
#else
        rd->unsupported = 1;
        snprintf(rd->msg, sizeof rd->msg,
                 "zstd-compressed, and simlsh-dedup was built without libzstd (meson option zstd)");
        return -1;
#endif
    }
    return 0;
}

void reader_close(struct reader *rd)
{
#if DEDUP_HAVE_ZLIB
    if (rd->codec == CODEC_GZIP && rd->state) {
        inflateEnd(rd->state);
        free(rd->state);
    }
#endif
#if DEDUP_HAVE_ZSTD
    if (rd->codec == CODEC_ZSTD && rd->state)
        ZSTD_freeDStream(rd->state);
#endif
    free(rd->in);
    memset(rd, 0, sizeof *rd);
}

#if DEDUP_HAVE_ZLIB
static ssize_t read_gzip(struct reader *rd, char *out, size_t cap)
{
    z_stream *z = rd->state;
    for (;;) {
        if (rd->in_pos == rd->in_len && !rd->eof && refill(rd) < 0)
            return -1;
        if (rd->in_pos == rd->in_len && rd->eof) {
            if (rd->member_open) {
                snprintf(rd->msg, sizeof rd->msg, "truncated gzip data");
                return -1;
            }
            return 0;
        }
        z->next_in = (unsigned char *)rd->in + rd->in_pos;
        z->avail_in = (uInt)(rd->in_len - rd->in_pos);
        z->next_out = (unsigned char *)out;
        z->avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
        uInt before = z->avail_out;
        int zr = inflate(z, Z_NO_FLUSH);
        rd->in_pos = rd->in_len - z->avail_in;
        size_t made = before - z->avail_out;
        rd->member_open = 1;
        if (zr == Z_STREAM_END) {
            /* concatenated members (cat a.gz b.gz) are one stream */
            inflateReset(z);
            rd->member_open = 0;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(rd->msg, sizeof rd->msg, "corrupt gzip data: %s",
                     z->msg ? z->msg : "inflate error");
            return -1;
        }
        if (made > 0)
            return (ssize_t)made;
    }
}
#endif

#if DEDUP_HAVE_ZSTD
static ssize_t read_zstd(struct reader *rd, char *out, size_t cap)
{
    for (;;) {
        if (rd->in_pos == rd->in_len && !rd->eof && refill(rd) < 0)
            return -1;
        if (rd->in_pos == rd->in_len && rd->eof && !rd->member_open)
            return 0;
        ZSTD_inBuffer ib = {rd->in, rd->in_len, rd->in_pos};
        ZSTD_outBuffer ob = {out, cap, 0};
        size_t zr = ZSTD_decompressStream(rd->state, &ob, &ib);
        rd->in_pos = ib.pos;
        if (ZSTD_isError(zr)) {
            snprintf(rd->msg, sizeof rd->msg, "corrupt zstd data: %s", ZSTD_getErrorName(zr));
            return -1;
        }
        rd->member_open = zr != 0; /* 0: a frame just ended */
        if (ob.pos > 0)
            return (ssize_t)ob.pos;
        if (rd->in_pos == rd->in_len && rd->eof) {
            if (rd->member_open) {
                snprintf(rd->msg, sizeof rd->msg, "truncated zstd data");
                return -1;
            }
            return 0;
        }
    }
}
#endif

static ssize_t read_codec(struct reader *rd, char *out, size_t cap)
{
    switch (rd->codec) {
#if DEDUP_HAVE_ZLIB
    case CODEC_GZIP:
        return read_gzip(rd, out, cap);
#endif
#if DEDUP_HAVE_ZSTD
    case CODEC_ZSTD:
        return read_zstd(rd, out, cap);
#endif
    default:
        snprintf(rd->msg, sizeof rd->msg, "compressed, and no decompressor was built");
        return -1;
    }
}

void reader_limit(struct reader *rd, uint64_t max_out, uint64_t max_ratio)
{
    rd->max_out = max_out;
    rd->max_ratio = max_ratio;
}

uint64_t reader_offset(const struct reader *rd)
{
    return rd->in_base + rd->in_pos;
}

/* Decompressed bytes are bounded so that a bomb costs time in proportion
 * to its compressed size (issue 31, F12): at most max_out in all, and at
 * most max_ratio times the compressed bytes consumed once past a floor
 * that small inputs never reach. */
#define RATIO_FLOOR (UINT64_C(16) << 20)

static ssize_t read_bounded_codec(struct reader *rd, char *out, size_t cap)
{
    if (rd->max_ratio && rd->out_total >= RATIO_FLOOR &&
        rd->out_total / rd->max_ratio > reader_offset(rd)) {
        snprintf(rd->msg, sizeof rd->msg,
                 "decompresses to more than %llu times its compressed size (--max-ratio)",
                 (unsigned long long)rd->max_ratio);
        rd->limited = 1;
        return -1;
    }
    if (rd->max_out && cap > rd->max_out - rd->out_total)
        cap = (size_t)(rd->max_out - rd->out_total);
    ssize_t got;
    if (cap == 0) { /* at the bound: one byte more says whether there is more */
        char one;
        got = read_codec(rd, &one, 1);
        if (got > 0) {
            snprintf(rd->msg, sizeof rd->msg,
                     "decompresses to more than --max-input-bytes (%llu bytes)",
                     (unsigned long long)rd->max_out);
            rd->limited = 1;
            return -1;
        }
        return got;
    }
    got = read_codec(rd, out, cap);
    if (got > 0)
        rd->out_total += (uint64_t)got;
    return got;
}

ssize_t reader_read(struct reader *rd, char *out, size_t cap)
{
    if (rd->codec != CODEC_PLAIN && !rd->unsupported)
        return read_bounded_codec(rd, out, cap);
    if (rd->in_pos < rd->in_len) {
        size_t n = rd->in_len - rd->in_pos;
        if (n > cap)
            n = cap;
        memcpy(out, rd->in + rd->in_pos, n);
        rd->in_pos += n;
        return (ssize_t)n;
    }
    if (rd->eof)
        return 0;
    ssize_t got = read_fd(rd->fd, out, cap);
    if (got < 0) {
        rd->err = errno;
        snprintf(rd->msg, sizeof rd->msg, "read error: %s", strerror(errno));
    }
    return got;
}

/* Open an input that must be a regular file. O_NONBLOCK makes a FIFO (or a
 * file swapped for one since the walk) fail the type check instead of
 * blocking in open(); O_NOCTTY keeps a terminal from becoming ours. */
int open_regular(const char *path, struct stat *st, char *msg, size_t msgcap)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(msg, msgcap, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0) {
        snprintf(msg, msgcap, "cannot stat: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(msg, msgcap, "not a regular file (%s), skipped", file_type_name(st->st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

/* ------------------------------------------------------------------------ */
/* Output files: a temporary file beside the target, renamed over it       */
/* ------------------------------------------------------------------------ */

/* Every temporary output still to be removed if the run dies (exit paths
 * and SIGINT/SIGTERM/SIGHUP): simlsh__af_unlink_on_signal() is
 * async-signal-safe. */
#define MAX_OUTFILES 8
static struct simlsh__afile *volatile pending_tmp[MAX_OUTFILES];

static void remove_pending(void)
{
    for (int i = 0; i < MAX_OUTFILES; i++) {
        struct simlsh__afile *af = pending_tmp[i];
        if (af)
            simlsh__af_unlink_on_signal(af);
    }
}

static void on_signal(int sig)
{
    remove_pending();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_cleanup(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    atexit(remove_pending);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void track_tmp(struct simlsh__afile *af)
{
    for (int i = 0; i < MAX_OUTFILES; i++) {
        if (!pending_tmp[i]) {
            pending_tmp[i] = af;
            return;
        }
    }
}

static void untrack_tmp(const struct simlsh__afile *af)
{
    for (int i = 0; i < MAX_OUTFILES; i++)
        if (pending_tmp[i] == af)
            pending_tmp[i] = NULL;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strcpy(xmalloc(2), ".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

/* The standard stream that PATH names (/dev/stdout, /dev/fd/2,
 * /proc/self/fd/1: a link to what the descriptor is open on), or NULL. Its
 * stream is written, as `-o -` writes stdout, rather than the file opened
 * again: that would truncate a file the shell opened for appending. */
static FILE *std_stream_of(const struct stat *st)
{
    static const int fds[] = {STDOUT_FILENO, STDERR_FILENO};
    for (int i = 0; i < 2; i++) {
        struct stat fst;
        if (fstat(fds[i], &fst) == 0 && fst.st_dev == st->st_dev && fst.st_ino == st->st_ino)
            return fds[i] == STDOUT_FILENO ? stdout : stderr;
    }
    return NULL;
}

/* Is PATH a place to write in place rather than a file to replace? Yes for
 * a device, FIFO or socket, and for a link to one or to a standard stream
 * (what `sort -o` and `cp` write to directly); a regular file, or a name
 * that does not exist, is replaced atomically. */
static int is_direct_output(const char *path, struct stat *target)
{
    struct stat lst;
    if (lstat(path, &lst) != 0 || S_ISREG(lst.st_mode) || S_ISDIR(lst.st_mode))
        return 0;
    if (stat(path, target) != 0)
        return 0;
    if (S_ISLNK(lst.st_mode) && S_ISREG(target->st_mode))
        return std_stream_of(target) != NULL;
    return !S_ISDIR(target->st_mode);
}

/* The writer's state and its directory, once published or aborted. */
static void free_afile(struct outfile *o)
{
    if (o->af) {
        untrack_tmp(o->af);
        simlsh__af_end(o->af);
        free(o->af);
        o->af = NULL;
    }
    free(o->dir);
    o->dir = NULL;
}

/* "-" or NULL is standard output, written in place, and so is a device,
 * FIFO or standard stream given by name (is_direct_output()). Anything else
 * gets a new file in the target's directory (mode 0666 minus the umask, or
 * the mode of the file it replaces), so the rename in outfile_commit() is
 * atomic and a failed run leaves the old file as it was. */
int outfile_open(struct outfile *o, const char *path)
{
    return outfile_open_as(o, path, "simlsh-dedup");
}

int outfile_open_as(struct outfile *o, const char *path, const char *prog)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->prog = prog;
    if (!path || !strcmp(path, "-")) {
        o->f = stdout;
        o->direct = 1;
        return 0;
    }
    struct stat target;
    if (is_direct_output(path, &target)) {
        o->direct = 1;
        o->f = std_stream_of(&target);
        if (o->f)
            return 0;
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 && !(o->f = fdopen(fd, "w")))
            close(fd);
        if (!o->f) {
            fprintf(stderr, "simlsh-dedup: %s: cannot open: %s\n", qname(path), strerror(errno));
            return -1;
        }
        return 0;
    }
    const char *slash = strrchr(path, '/');
    o->dir = dir_of(path);
    o->af = xmalloc(sizeof *o->af);
    /* A directory we may write but not read (-wx) is written all the same,
     * as a file created in it by name would be. */
    if (simlsh__af_begin(o->af, o->dir, slash ? slash + 1 : path, SIMLSH__AF_DIR_WX) != 0) {
        fprintf(stderr, "%s: %s: cannot create a file in its directory: %s\n", o->prog, qname(path),
                strerror(errno));
        free_afile(o);
        return -1;
    }
    /* Signals wait while the file is created and recorded: one arriving in
     * between would otherwise leave the file behind. */
    install_cleanup();
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = simlsh__af_create_named(o->af, o);
    int e = errno;
    if (rc == 0)
        track_tmp(o->af);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "%s: %s: cannot create a file in its directory: %s\n", o->prog, qname(path),
                strerror(e));
        free_afile(o);
        return -1;
    }
    /* The mode of the file replaced (a link followed), or 0666 less the
     * umask, as created. */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && fchmod(o->af->fd, st.st_mode & 07777) != 0) {
        /* not fatal: the file keeps the mode it was created with */
    }
    o->f = fdopen(o->af->fd, "w");
    if (!o->f) {
        e = errno;
        outfile_abort(o);
        fprintf(stderr, "%s: %s: %s\n", o->prog, qname(path), strerror(e));
        return -1;
    }
    return 0;
}

void outfile_abort(struct outfile *o)
{
    if (o->f && o->f != stdout && o->f != stderr)
        fclose(o->f);
    if (o->f && o->af)
        o->af->fd = -1; /* closed with its stream */
    o->f = NULL;
    if (o->af)
        simlsh__af_abort(o->af);
    free_afile(o);
}

/* Flush and fsync; then only the rename is left, so a run with several
 * outputs can finish them all before it replaces any. */
int outfile_finish(struct outfile *o)
{
    if (!o->f)
        return 0;
    const char *shown = o->path && strcmp(o->path, "-") ? o->path : "<stdout>";
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    if (o->f == stdout || o->f == stderr) {
        o->f = NULL;
        if (e) {
            fprintf(stderr, "%s: %s: write error: %s\n", o->prog, qname(shown), strerror(e));
            return -1;
        }
        return 0;
    }
    /* a device or FIFO has nothing to sync (fsync fails with EINVAL) */
    if (!e && !o->direct && simlsh__af_sync(o->af) != 0)
        e = errno;
    if (fclose(o->f) != 0 && !e)
        e = errno;
    if (o->af)
        o->af->fd = -1; /* closed with its stream */
    o->f = NULL;
    if (e) {
        fprintf(stderr, "%s: %s: cannot write: %s\n", o->prog, qname(shown), strerror(e));
        outfile_abort(o);
        return -1;
    }
    return 0;
}

void outfile_write_error(const struct outfile *o, int err)
{
    const char *shown = o->path && strcmp(o->path, "-") ? o->path : "<stdout>";
    fprintf(stderr, "%s: %s: cannot write: %s\n", o->prog, qname(shown), strerror(err ? err : EIO));
}

/* Rename the finished file over the target, fsync the directory. */
int outfile_publish(struct outfile *o)
{
    if (!o->af)
        return 0; /* standard output, or nothing opened */
    int rc = simlsh__af_publish(o->af);
    int e = errno;
    untrack_tmp(o->af);
    if (rc == -1) {
        fprintf(stderr, "%s: %s: cannot write: %s\n", o->prog, qname(o->path), strerror(e));
        outfile_abort(o);
        return -1;
    }
    free_afile(o);
    if (rc != 0) {
        fprintf(stderr, "%s: %s: cannot sync its directory: %s\n", o->prog, qname(o->path),
                strerror(e));
        return -1;
    }
    return 0;
}

int outfile_commit(struct outfile *o)
{
    return outfile_finish(o) != 0 ? -1 : outfile_publish(o);
}

/* ------------------------------------------------------------------------ */
/* Outputs that would overwrite an input or something that is not a file   */
/* ------------------------------------------------------------------------ */

static int cmp_fileid(const void *a, const void *b)
{
    const struct fileid *x = a, *y = b;
    int c = order_u64(x->dev, y->dev);
    return c != 0 ? c : order_u64(x->ino, y->ino);
}

void fileids_add(struct fileids *s, const struct stat *st)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n].dev = (uint64_t)st->st_dev;
    s->v[s->n].ino = (uint64_t)st->st_ino;
    s->n++;
    s->sorted = 0;
}

int fileids_has(struct fileids *s, const struct stat *st)
{
    if (!s->sorted) {
        if (s->n > 1)
            qsort(s->v, s->n, sizeof *s->v, cmp_fileid);
        s->sorted = 1;
    }
    struct fileid key = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};
    return s->n && bsearch(&key, s->v, s->n, sizeof *s->v, cmp_fileid) != NULL;
}

void fileids_free(struct fileids *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Names that promise a compressed file: outputs are written uncompressed,
 * so these are refused rather than written as plain text under them. */
static const char *compressed_suffix(const char *path)
{
    static const char *const sfx[] = {".gz", ".zst", ".xz", ".bz2", ".lz4", ".zip"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t l = strlen(sfx[i]);
        if (n > l && !strcmp(path + n - l, sfx[i]))
            return sfx[i];
    }
    return NULL;
}

static int refuse_input(const char *what, const char *path)
{
    fprintf(stderr,
            "simlsh-dedup: %s %s: is one of the inputs (the same file); refusing to "
            "overwrite it\n",
            what, qname(path));
    return -1;
}

/* May PATH be an output? It must not exist, or be a regular file (not a
 * symbolic link: the rename would replace the link, not its target) that
 * is none of the inputs; with DIRECT_OK also a device, FIFO or standard
 * stream, written in place (is_direct_output()), unless it is an input.
 * *what names the option. */
int output_path_ok(struct fileids *inputs, const char *path, const char *what,
                   const char *allowed_same, int direct_ok)
{
    struct stat st;
    const char *sfx = direct_ok ? compressed_suffix(path) : NULL;
    if (sfx) {
        fprintf(stderr,
                "simlsh-dedup: %s %s: outputs are written uncompressed, so a %s name "
                "would hold plain text; compress the file after the run, or pipe "
                "standard output (-o -) through a compressor\n",
                what, qname(path), sfx);
        return -1;
    }
    if (direct_ok && is_direct_output(path, &st)) {
        return fileids_has(inputs, &st) ? refuse_input(what, path) : 0;
    }
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "simlsh-dedup: %s %s: %s\n", what, qname(path), strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        fprintf(stderr,
                "simlsh-dedup: %s %s: is a symbolic link; outputs replace the file "
                "at the path given, so give the link's target instead\n",
                what, qname(path));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "simlsh-dedup: %s %s: is a %s; %s\n", what, qname(path),
                file_type_name(st.st_mode),
                direct_ok ? "outputs are regular files, devices or FIFOs"
                          : "this output is written only to a regular file");
        return -1;
    }
    if (allowed_same) {
        struct stat st2;
        if (stat(allowed_same, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino)
            return 0;
    }
    return fileids_has(inputs, &st) ? refuse_input(what, path) : 0;
}
