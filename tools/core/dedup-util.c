/* simlsh-dedup: small helpers (strings, signatures in blocks, time,
 * per-document messages, temporary files; memory is dedup-mem.c, the
 * escaping dedup-escape.c). */
#include "dedup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* After this many per-document messages the rest are only counted: a corpus
 * with a million blank lines should not bury the summary. */
#define MAX_WARNINGS 100

void sigstore_append(struct sigstore *s, const uint32_t *values, size_t n)
{
    size_t sig = s->np * sizeof *values;
    while (n > 0) {
        size_t off = s->n % SIGSTORE_BLOCK;
        if (off == 0) {
            if (s->nblk == s->cap_blk) {
                s->cap_blk = s->cap_blk ? 2 * s->cap_blk : 64;
                s->blk = xrealloc(s->blk, s->cap_blk * sizeof *s->blk);
            }
            s->blk[s->nblk++] = xmalloc(SIGSTORE_BLOCK * sig);
        }
        size_t m = SIGSTORE_BLOCK - off < n ? SIGSTORE_BLOCK - off : n;
        memcpy(s->blk[s->nblk - 1] + off * s->np, values, m * sig);
        values += m * s->np;
        s->n += m;
        n -= m;
    }
}

void sigstore_free(struct sigstore *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nblk; i++)
        free(s->blk[i]);
    free(s->blk);
    memset(s, 0, sizeof *s);
}

const char *const phase_names[PH_COUNT] = {"setup", "read",  "pairs", "verify",
                                           "group", "write", "save"};

/* CPU seconds of the whole process, every thread included. */
double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the calling thread alone. */
double thread_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Close the running phase (its wall and CPU time accumulate) and start
 * another: phases follow each other, so every second lands in one. */
void phase_switch(struct run_stats *st, int phase)
{
    double t = now_seconds(), c = cpu_seconds();
    st->phase_wall[st->phase] += t - st->t_phase;
    st->phase_cpu[st->phase] += c - st->cpu_phase;
    st->phase = phase;
    st->t_phase = t;
    st->cpu_phase = c;
}

void pairvec_add(struct pairvec *p, uint64_t a, uint64_t b, double score)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 1024;
        p->v = xrealloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n].a = a < b ? a : b;
    p->v[p->n].b = a < b ? b : a;
    p->v[p->n].score = score;
    p->n++;
}

/* qsort() order of pairs: by a, then b. */
int cmp_pair(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    int c = order_u64(p->a, q->a);
    return c != 0 ? c : order_u64(p->b, q->b);
}

/* qsort() order of uint64_t values. */
int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int strlist_add(struct strlist *l, const char *s, size_t len, uint64_t size)
{
    if (l->count + 2 > l->cap_off) {
        size_t cap = l->cap_off ? l->cap_off * 2 : 1024;
        l->off = xrealloc(l->off, cap * sizeof *l->off);
        l->size = xrealloc(l->size, cap * sizeof *l->size);
        l->cap_off = cap;
    }
    if (l->len + len + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 65536;
        while (cap < l->len + len + 1)
            cap *= 2;
        l->buf = xrealloc(l->buf, cap);
        l->cap = cap;
    }
    if (l->count == 0)
        l->off[0] = 0;
    memcpy(l->buf + l->len, s, len);
    l->buf[l->len + len] = '\0';
    l->len += len + 1;
    l->size[l->count] = size;
    l->count++;
    l->off[l->count] = l->len;
    return 0;
}

const char *strlist_get(const struct strlist *l, size_t i, size_t *len)
{
    if (len)
        *len = l->off[i + 1] - l->off[i] - 1;
    return l->buf + l->off[i];
}

void strlist_free(struct strlist *l)
{
    free(l->buf);
    free(l->off);
    free(l->size);
    memset(l, 0, sizeof *l);
}

/* A skipped input: counted, reported (NAME escaped), and listed for
 * --skipped; under --strict it stops the run. */
int skip_input(struct run *r, const char *name, size_t name_len, const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    const char *shown = qnamen(name, name_len);
    warnx_doc(r, "%s: %s", shown, reason);
    if (r->opt->skipped_path) {
        size_t sl = strlen(shown), rl = strlen(reason);
        char *line = xmalloc(sl + rl + 2);
        memcpy(line, shown, sl);
        line[sl] = '\t';
        memcpy(line + sl + 1, reason, rl + 1);
        strlist_add(&r->in.skips, line, sl + rl + 1, 0);
        free(line);
    }
    r->stats.skipped++;
    if (r->opt->strict) {
        r->failed = EXIT_DEDUP_INPUT;
        return -1;
    }
    return 0;
}

void warnx_doc(struct run *r, const char *fmt, ...)
{
    va_list ap;
    r->warnings++;
    if (r->warnings > MAX_WARNINGS)
        return;
    if (r->progress)
        fputs("\r\033[K", stderr);
    fputs("simlsh-dedup: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (r->warnings == MAX_WARNINGS)
        fprintf(stderr, "simlsh-dedup: further messages suppressed (see the skipped count)\n");
}

void human_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    size_t u = 0;
    while (bytes >= 1000.0 && u + 1 < sizeof units / sizeof units[0]) {
        bytes /= 1000.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f B", bytes);
    else
        snprintf(buf, cap, "%.1f %s", bytes, units[u]);
}

/* ------------------------------------------------------------------------ */
/* Temporary files                                                          */
/* ------------------------------------------------------------------------ */

/* An unlinked temporary file in $TMPDIR (or /tmp): it disappears with the
 * process, however the process ends. */
int temp_file(char *msg, size_t cap)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    size_t l = strlen(dir);
    char *path = xmalloc(l + 32);
    memcpy(path, dir, l);
    memcpy(path + l, "/simlsh-dedup-XXXXXX", 21);
    int t = mkstemp(path);
    if (t >= 0)
        unlink(path);
    else
        snprintf(msg, cap, "cannot create a temporary file in %s: %s", qname(dir), strerror(errno));
    free(path);
    return t;
}

int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}
