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
 */
#include "dedup-mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Weight of a unit beyond its bytes, so empty files are shared out too. */
#define UNIT_EXTRA 64

enum {
    U_PATH,
    U_WHOLE,
    U_SPLIT
};

struct unit {
    size_t input, path;
    int kind;
    uint64_t size, pos; /* pos: start in the sequence */
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

int mpi_split(struct mpi_ctx *c, struct run *r)
{
    struct options *opt = (struct options *)r->opt;
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
                if (r->pmeta[p].alias_of != SIZE_MAX)
                    continue;
                u[nu] = (struct unit){i, p, U_PATH, r->paths.size[p], w};
                w += r->paths.size[p] + UNIT_EXTRA;
                nu++;
            }
        } else if (in->kind == INPUT_STDIN) {
            /* standard input as one document (a copy of it on every rank:
             * mpi-store.c) is read by one rank */
            struct stat st;
            uint64_t size = fstat(STDIN_FILENO, &st) == 0 ? (uint64_t)st.st_size : 0;
            u[nu] = (struct unit){i, 0, U_WHOLE, size, w};
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
            struct stat st;
            int split = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
                        !is_compressed(fd);
            uint64_t size = fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
            u[nu] = (struct unit){i, 0, split ? U_SPLIT : U_WHOLE, size, w};
            w += size + (split ? 0 : UNIT_EXTRA);
            nu++;
            if (split)
                fds[i] = fd;
            else if (fd >= 0)
                close(fd);
        }
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
