/*
 * simlsh-dedup-mpi: which documents each rank reads.
 *
 * The inputs, in command-line order, form one sequence of units: each file
 * of a PATH input, standard input as one document and each compressed
 * line file whole, and the bytes of each plain --lines/--jsonl file
 * (standard input among them). The sequence is cut into N runs of about the
 * same number of bytes, rank k taking run k, so each rank's documents are a
 * contiguous stretch of the documents simlsh-dedup would read, and global
 * ids are an offset (the documents of lower ranks) plus the local ids. A
 * cut inside a line file moves forward to the next line start; every rank
 * computes every cut the same way, so the pieces tile the file.
 *
 * So every rank must see the same inputs: before any cut, the ranks
 * compare their views (each unit's name, kind, size and modification
 * time, or why it cannot be opened) by a digest, and when a rank's view
 * differs from rank 0's, rank 0 sends its view and that rank says what
 * differs; every rank then stops (issue 31 F1: a rank that lacked a file
 * read an empty share and the others' documents were renumbered).
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Weight of a unit beyond its bytes, so empty files are shared out too. */
#define UNIT_EXTRA 64

enum {
    U_PATH,
    U_WHOLE,
    U_SPLIT
};

/* What a unit is like on a rank, compared between ranks. */
enum {
    T_REGULAR,
    T_COMPRESSED, /* a gzip or zstd line file */
    T_OTHER       /* a directory, a FIFO...: not a regular file */
};

struct unit {
    size_t input, path;
    int kind;
    uint64_t size, pos; /* pos: start in the sequence */
    int type, err;      /* err: errno of open or fstat, 0 if it opened */
    int64_t mtime;      /* ns; 0 for standard input (a copy on each rank) */
};

/* Bound k of N over a sequence of w bytes, without overflow. */
static uint64_t bound(uint64_t w, int k, int n)
{
    if (k >= n)
        return w;
    return (w / (uint64_t)n) * (uint64_t)k + (w % (uint64_t)n) * (uint64_t)k / (uint64_t)n;
}

/* The rank whose run holds position pos: the last k with bound(k) <= pos. */
static int owner_of(uint64_t w, int n, uint64_t pos)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (bound(w, mid, n) <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* gzip or zstd magic: such a file cannot be entered in the middle. */
static int is_compressed(int fd)
{
    unsigned char m[4];
    ssize_t got = pread(fd, m, sizeof m, 0);
    if (got >= 2 && m[0] == 0x1f && m[1] == 0x8b)
        return 1;
    return got == 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd;
}

/* The first line start at or after x (size when there is none). */
static uint64_t line_start(int fd, uint64_t x, uint64_t size)
{
    if (x == 0 || x >= size)
        return x == 0 ? 0 : size;
    char buf[1 << 16];
    uint64_t at = x - 1;
    while (at < size) {
        ssize_t got = pread(fd, buf, sizeof buf, (off_t)at);
        if (got <= 0)
            return size;
        char *nl = memchr(buf, '\n', (size_t)got);
        if (nl)
            return at + (uint64_t)(nl - buf) + 1;
        at += (uint64_t)got;
    }
    return size;
}

static uint64_t count_newlines(int fd, uint64_t beg, uint64_t end)
{
    static char buf[1 << 20];
    uint64_t n = 0;
    while (beg < end) {
        size_t want = end - beg < sizeof buf ? (size_t)(end - beg) : sizeof buf;
        ssize_t got = pread(fd, buf, want, (off_t)beg);
        if (got <= 0)
            break;
        for (const char *p = buf, *e = buf + got; (p = memchr(p, '\n', (size_t)(e - p))); p++)
            n++;
        beg += (uint64_t)got;
    }
    return n;
}

/* ---- the ranks agree on their view of the inputs ------------------------- */

struct view {
    unsigned char *p;
    size_t len, cap;
};

static void view_put(struct view *v, uint64_t x, int n)
{
    if (v->len + (size_t)n > v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4096;
        v->p = xrealloc(v->p, v->cap);
    }
    for (int i = 0; i < n; i++)
        v->p[v->len++] = (unsigned char)(x >> (8 * i));
}

static const char *unit_name(const struct options *o, const struct run_inputs *in,
                             const struct unit *u)
{
    size_t len;
    return u->kind == U_PATH ? strlist_get(&in->paths, u->path, &len) : o->inputs[u->input].arg;
}

/* A unit as bytes: input (4), kind (1), type (1), errno (4), size (8),
 * mtime (8), name length (4), name. */
static void view_add(struct view *v, const struct options *o, const struct run_inputs *in,
                     const struct unit *u)
{
    const char *name = unit_name(o, in, u);
    size_t len = strlen(name);
    view_put(v, u->input, 4);
    view_put(v, (uint64_t)u->kind, 1);
    view_put(v, (uint64_t)u->type, 1);
    view_put(v, (uint64_t)(uint32_t)u->err, 4);
    view_put(v, u->size, 8);
    view_put(v, (uint64_t)u->mtime, 8);
    view_put(v, len, 4);
    if (v->len + len > v->cap) {
        while (v->len + len > v->cap)
            v->cap *= 2;
        v->p = xrealloc(v->p, v->cap);
    }
    memcpy(v->p + v->len, name, len);
    v->len += len;
}

/* One unit of a view read back; name is not NUL-terminated. */
struct vunit {
    uint32_t input;
    int kind, type, err;
    uint64_t size;
    int64_t mtime;
    const char *name;
    size_t name_len;
};

static uint64_t view_get(const unsigned char *p, size_t *at, int n)
{
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x |= (uint64_t)p[*at + (size_t)i] << (8 * i);
    *at += (size_t)n;
    return x;
}

/* The units of view bytes (written by view_add, so well formed). */
static struct vunit *view_units(const unsigned char *p, size_t len, size_t *n)
{
    size_t cap = 16, at = 0;
    struct vunit *v = xmalloc(cap * sizeof *v);
    *n = 0;
    while (at < len) {
        if (*n == cap) {
            cap *= 2;
            v = xrealloc(v, cap * sizeof *v);
        }
        struct vunit *u = &v[(*n)++];
        u->input = (uint32_t)view_get(p, &at, 4);
        u->kind = (int)view_get(p, &at, 1);
        u->type = (int)view_get(p, &at, 1);
        u->err = (int)(uint32_t)view_get(p, &at, 4);
        u->size = view_get(p, &at, 8);
        u->mtime = (int64_t)view_get(p, &at, 8);
        u->name_len = (size_t)view_get(p, &at, 4);
        u->name = (const char *)p + at;
        at += u->name_len;
    }
    return v;
}

static const char *mtime_text(int64_t ns, char *buf, size_t size)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    char day[40];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(day, sizeof day, "%lld s", (long long)t);
    snprintf(buf, size, "%s.%09lld UTC", day, (long long)(ns % 1000000000));
    return buf;
}

static const char *type_text(int type)
{
    return type == T_REGULAR      ? "a file"
           : type == T_COMPRESSED ? "a compressed file"
                                  : "not a regular file";
}

/* This rank's view (mine) differs from rank 0's (v0): say how, naming
 * the first unit that differs. */
static void say_difference(const struct mpi_ctx *c, const struct vunit *v0, size_t n0,
                           const struct vunit *mine, size_t n1)
{
    const char *pre = MPI_PROG ": rank";
    size_t k = 0;
    while (k < n0 && k < n1 && v0[k].input == mine[k].input && v0[k].kind == mine[k].kind &&
           v0[k].name_len == mine[k].name_len &&
           !memcmp(v0[k].name, mine[k].name, v0[k].name_len) && v0[k].type == mine[k].type &&
           v0[k].err == mine[k].err && v0[k].size == mine[k].size && v0[k].mtime == mine[k].mtime)
        k++;
    if (k < n0 && k < n1 && v0[k].input == mine[k].input && v0[k].name_len == mine[k].name_len &&
        !memcmp(v0[k].name, mine[k].name, v0[k].name_len)) {
        const struct vunit *a = &v0[k], *b = &mine[k];
        char *name = xmalloc(a->name_len + 1);
        memcpy(name, a->name, a->name_len);
        name[a->name_len] = '\0';
        if (b->err && !a->err)
            fprintf(stderr, "%s %d: %s: cannot open: %s (rank 0 reads %llu bytes)\n", pre, c->rank,
                    qname(name), strerror(b->err), (unsigned long long)a->size);
        else if (a->err && !b->err)
            fprintf(stderr, "%s %d: %s: rank 0 cannot open it (%s); %llu bytes here\n", pre,
                    c->rank, qname(name), strerror(a->err), (unsigned long long)b->size);
        else if (a->err != b->err)
            fprintf(stderr, "%s %d: %s: cannot open: %s (rank 0: %s)\n", pre, c->rank, qname(name),
                    strerror(b->err), strerror(a->err));
        else if (a->type != b->type)
            fprintf(stderr, "%s %d: %s: %s here, %s on rank 0\n", pre, c->rank, qname(name),
                    type_text(b->type), type_text(a->type));
        else if (a->size != b->size)
            fprintf(stderr, "%s %d: %s: %llu bytes here, %llu on rank 0\n", pre, c->rank,
                    qname(name), (unsigned long long)b->size, (unsigned long long)a->size);
        else {
            char t0[80], t1[80];
            fprintf(stderr,
                    "%s %d: %s: modified %s here, %s on rank 0 (a copy must keep the "
                    "modification time: cp -p, rsync -t)\n",
                    pre, c->rank, qname(name), mtime_text(b->mtime, t1, sizeof t1),
                    mtime_text(a->mtime, t0, sizeof t0));
        }
        free(name);
        return;
    }
    /* the lists differ: a name of rank 0's list missing here, or one more */
    if (k < n0) {
        int here = 0;
        for (size_t j = k; j < n1 && !here; j++)
            here = mine[j].input == v0[k].input && mine[j].name_len == v0[k].name_len &&
                   !memcmp(mine[j].name, v0[k].name, v0[k].name_len);
        if (!here) {
            char *name = xmalloc(v0[k].name_len + 1);
            memcpy(name, v0[k].name, v0[k].name_len);
            name[v0[k].name_len] = '\0';
            struct stat st;
            const char *why = stat(name, &st) != 0   ? strerror(errno)
                              : S_ISDIR(st.st_mode)  ? "a directory here"
                              : !S_ISREG(st.st_mode) ? "not a regular file here"
                                                     : "skipped here";
            fprintf(stderr, "%s %d: %s: %s (rank 0 reads it: %llu bytes)\n", pre, c->rank,
                    qname(name), why, (unsigned long long)v0[k].size);
            free(name);
            return;
        }
    }
    if (k < n1) {
        char *name = xmalloc(mine[k].name_len + 1);
        memcpy(name, mine[k].name, mine[k].name_len);
        name[mine[k].name_len] = '\0';
        fprintf(stderr, "%s %d: %s: read here (%llu bytes), but not on rank 0\n", pre, c->rank,
                qname(name), (unsigned long long)mine[k].size);
        free(name);
        return;
    }
    fprintf(stderr, "%s %d: the inputs differ from rank 0's\n", pre, c->rank);
}

/* Every rank's units against rank 0's: 0 when they agree, else (on every
 * rank) EXIT_DEDUP_INPUT, after the ranks that differ said how. Only a
 * digest travels unless a view differs. */
static int agree_on_view(struct mpi_ctx *c, const struct options *o, const struct run_inputs *in,
                         const struct unit *u, size_t nu)
{
    /* the digest (FNV-1a 64 and the length) unit by unit: the whole view
     * (tens of bytes a file) is kept only when it must be compared */
    struct view v = {NULL, 0, 0};
    uint64_t h[2] = {UINT64_C(14695981039346656037), 0};
    for (size_t k = 0; k < nu; k++) {
        v.len = 0;
        view_add(&v, o, in, &u[k]);
        for (size_t i = 0; i < v.len; i++)
            h[0] = (h[0] ^ v.p[i]) * UINT64_C(1099511628211);
        h[1] += v.len;
    }
    uint64_t *all = xmalloc((size_t)c->size * 2 * sizeof *all);
    if (MPI_Allgather(h, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot compare the inputs");
    int differ = 0;
    for (int k = 1; k < c->size; k++)
        differ += all[2 * k] != all[0] || all[2 * k + 1] != all[1];
    if (!differ) {
        free(all);
        free(v.p);
        return 0;
    }
    v.len = 0;
    if (c->rank == 0 || all[2 * c->rank] != all[0] || all[2 * c->rank + 1] != all[1])
        for (size_t k = 0; k < nu; k++)
            view_add(&v, o, in, &u[k]);
    /* rank 0's view to every rank, in pieces below 2 GiB */
    size_t len0 = (size_t)all[1];
    unsigned char *p0 = c->rank == 0 ? v.p : xmalloc(len0 ? len0 : 1);
    for (size_t at = 0; at < len0;) {
        size_t n = len0 - at < (1u << 30) ? len0 - at : (1u << 30);
        if (MPI_Bcast(p0 + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot compare the inputs");
        at += n;
    }
    if (c->rank != 0 && (all[2 * c->rank] != all[0] || all[2 * c->rank + 1] != all[1])) {
        size_t n0 = 0, n1 = 0;
        struct vunit *v0 = view_units(p0, len0, &n0), *mine = view_units(v.p, v.len, &n1);
        say_difference(c, v0, n0, mine, n1);
        free(v0);
        free(mine);
    }
    fflush(stderr);
    /* the ranks' messages come first, as far as the launcher keeps order */
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0) {
        fprintf(stderr, MPI_PROG ": stopped: rank%s", differ > 1 ? "s" : "");
        for (int k = 1, said = 0; k < c->size; k++)
            if (all[2 * k] != all[0] || all[2 * k + 1] != all[1])
                fprintf(stderr, "%s %d", said++ ? "," : "", k);
        fprintf(stderr,
                " %s other inputs than rank 0: every rank must see the same "
                "files, sizes and modification times (docs/scale-out.md)\n",
                differ > 1 ? "see" : "sees");
    }
    if (c->rank != 0)
        free(p0);
    free(all);
    free(v.p);
    return EXIT_DEDUP_INPUT;
}

int mpi_split(struct mpi_ctx *c, struct options *opt, const struct run_inputs *found)
{
    size_t ni = opt->ninputs;
    struct unit *u = NULL;
    size_t nu = 0, cap = 0;
    uint64_t w = 0;
    int *fds = xmalloc((ni ? ni : 1) * sizeof *fds);
    for (size_t i = 0; i < ni; i++) {
        struct input *in = &opt->inputs[i];
        fds[i] = -1;
        size_t need = in->kind == INPUT_PATHS ? in->npaths : 1;
        if (nu + need > cap) {
            cap = (nu + need) * 2;
            u = xrealloc(u, cap * sizeof *u);
        }
        if (in->kind == INPUT_PATHS) {
            for (size_t p = in->first_path; p < in->first_path + in->npaths; p++) {
                if (found->pmeta[p].alias_of != SIZE_MAX)
                    continue;
                u[nu] = (struct unit){i, p,         U_PATH, found->paths.size[p],
                                      w, T_REGULAR, 0,      found->pmeta[p].mtime_ns};
                w += found->paths.size[p] + UNIT_EXTRA;
                nu++;
            }
        } else if (in->kind == INPUT_STDIN) {
            /* standard input as one document (a copy of it on every rank:
             * mpi-store.c) is read by one rank */
            struct stat st;
            uint64_t size = fstat(STDIN_FILENO, &st) == 0 ? (uint64_t)st.st_size : 0;
            u[nu] = (struct unit){i, 0, U_WHOLE, size, w, T_REGULAR, 0, 0};
            w += size + UNIT_EXTRA;
            nu++;
        } else if (in->kind == INPUT_LINES || in->kind == INPUT_JSONL) {
            /* A file that cannot be opened now stays whole: its reader
             * reports it, on one rank, as simlsh-dedup would. Standard
             * input is a regular file here, cut like one unless it is
             * compressed. */
            int fd = !strcmp(in->arg, "-")
                         ? dup(STDIN_FILENO)
                         : open(in->arg, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
            int err = fd < 0 ? errno : 0;
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) != 0) {
                err = errno;
                close(fd);
                fd = -1;
            }
            int type = fd < 0                 ? T_OTHER
                       : !S_ISREG(st.st_mode) ? T_OTHER
                       : is_compressed(fd)    ? T_COMPRESSED
                                              : T_REGULAR;
            int split = fd >= 0 && type == T_REGULAR && st.st_size > 0;
            uint64_t size = fd >= 0 ? (uint64_t)st.st_size : 0;
            /* standard input: each rank's copy is its own file */
            int64_t mtime = fd < 0 || !strcmp(in->arg, "-")
                                ? 0
                                : (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            u[nu] = (struct unit){i, 0, split ? U_SPLIT : U_WHOLE, size, w, type, err, mtime};
            w += size + (split ? 0 : UNIT_EXTRA);
            nu++;
            if (split)
                fds[i] = fd;
            else if (fd >= 0)
                close(fd);
        }
    }
    int status = agree_on_view(c, opt, found, u, nu);
    if (status != 0) {
        for (size_t i = 0; i < ni; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        free(fds);
        free(u);
        return status;
    }
    uint64_t lo = bound(w, c->rank, c->size), hi = bound(w, c->rank + 1, c->size);
    uint64_t *lines = calloc(ni ? ni : 1, sizeof *lines);
    uint64_t *line0 = calloc(ni ? ni : 1, sizeof *line0);
    size_t *pmin = xmalloc((ni ? ni : 1) * 2 * sizeof *pmin), *pmax = pmin + (ni ? ni : 1);
    if (!lines || !line0)
        die_oom();
    for (size_t i = 0; i < ni; i++) {
        pmin[i] = SIZE_MAX;
        pmax[i] = 0;
    }
    int *mine = calloc(ni ? ni : 1, sizeof *mine);
    if (!mine)
        die_oom();
    for (size_t k = 0; k < nu; k++) {
        struct input *in = &opt->inputs[u[k].input];
        if (u[k].kind == U_SPLIT) {
            uint64_t a = lo > u[k].pos ? lo - u[k].pos : 0;
            uint64_t b = hi > u[k].pos ? hi - u[k].pos : 0;
            a = a < u[k].size ? a : u[k].size;
            b = b < u[k].size ? b : u[k].size;
            int fd = fds[u[k].input];
            uint64_t beg = line_start(fd, a, u[k].size), end = line_start(fd, b, u[k].size);
            in->ranged = 1;
            in->range_beg = beg;
            in->range_end = end > beg ? end : beg;
            mine[u[k].input] = end > beg;
            if (end > beg)
                lines[u[k].input] = count_newlines(fd, beg, end);
            continue;
        }
        if (owner_of(w, c->size, u[k].pos) != c->rank)
            continue;
        mine[u[k].input] = 1;
        if (u[k].kind == U_PATH) {
            if (u[k].path < pmin[u[k].input])
                pmin[u[k].input] = u[k].path;
            if (u[k].path > pmax[u[k].input])
                pmax[u[k].input] = u[k].path;
        }
    }
    /* lines before this rank's piece of each file: those of lower ranks */
    if (MPI_Exscan(lines, line0, (int)ni, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        mpi_die(c, EXIT_DEDUP_INTERNAL, "cannot count lines");
    for (size_t i = 0; i < ni; i++) {
        struct input *in = &opt->inputs[i];
        in->line0 = c->rank == 0 ? 0 : line0[i];
        if (fds[i] >= 0)
            close(fds[i]);
        if (!mine[i]) {
            /* nothing of this input here: an empty PATH input reads nothing */
            in->kind = INPUT_PATHS;
            in->npaths = 0;
            in->ranged = 0;
        } else if (in->kind == INPUT_PATHS) {
            in->first_path = pmin[i];
            in->npaths = pmax[i] - pmin[i] + 1;
        }
    }
    free(mine);
    free(pmin);
    free(lines);
    free(line0);
    free(fds);
    free(u);
    return 0;
}
