/*
 * simlsh-dedup: the second pass reads documents again (docs/cli.md,
 * VERIFICATION). Files are opened again by path; lines are read at their
 * offset (pread), and the needed lines of a compressed input are first
 * copied, in one streaming pass, to an unlinked temporary file. Standard
 * input was spooled to such a file before the first pass
 * (reread_prepare()). The text source serves simlsh-dedup-mpi's owners of
 * documents the same way (text_source_open()).
 */
#include "dedup-pass2.h"

#if DEDUP_HAVE_JANSSON
#include <jansson.h>
#endif

#include <errno.h>
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Exact mode: standard input, when an input reads it, must be readable a
 * second time. A regular file already is (from its current offset); a pipe
 * or terminal is copied to an unlinked temporary file, which then becomes
 * descriptor 0, before the first pass reads it. */
int reread_prepare(struct run *r)
{
    const struct options *o = r->opt;
    int uses = 0;
    for (size_t i = 0; i < o->ninputs; i++)
        uses |= !strcmp(o->inputs[i].arg, "-") && o->inputs[i].kind != INPUT_PATHS;
    if (o->verify != VERIFY_EXACT || !uses)
        return 0;
    struct stat st;
    off_t at = -1;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
        at = lseek(STDIN_FILENO, 0, SEEK_CUR);
    if (at >= 0) {
        r->stats.vs.stdin_kept = 1;
        r->stats.vs.stdin_base = (int64_t)at;
        return 0;
    }
    char msg[200];
    int fd = temp_file(msg, sizeof msg);
    if (fd < 0) {
        /* nothing read yet: the run goes on, with estimates for its pairs */
        warnx_doc(r, "standard input: %s; pairs of its documents are verified by estimate", msg);
        return 0;
    }
    size_t cap = 1u << 20;
    char *buf = xmalloc(cap);
    int rc = 0;
    for (;;) {
        ssize_t got = read(STDIN_FILENO, buf, cap);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            fprintf(stderr, "simlsh-dedup: standard input: read error: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        if (got == 0)
            break;
        if (write_all(fd, buf, (size_t)got) != 0) {
            fprintf(stderr,
                    "simlsh-dedup: standard input: cannot spool it to a temporary "
                    "file: %s\n",
                    strerror(errno));
            rc = -1;
            break;
        }
    }
    free(buf);
    if (rc == 0 && (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0)) {
        fprintf(stderr, "simlsh-dedup: standard input: %s\n", strerror(errno));
        rc = -1;
    }
    close(fd);
    if (rc == 0) {
        r->stats.vs.stdin_kept = 1;
        r->stats.vs.stdin_base = 0;
    }
    return rc;
}

/* Reads a whole file (decompressed) into w->buf, at most max bytes. */
static int read_file(struct vworker *w, const char *path, uint64_t max, size_t *len, int64_t *mtime,
                     char *msg, size_t mcap)
{
    struct stat st;
    int fd = open_regular(path, &st, msg, mcap);
    if (fd < 0)
        return -1;
    *mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
    struct reader rd;
    int rc = reader_open(&rd, fd);
    size_t n = 0;
    if (rc != 0)
        snprintf(msg, mcap, "%s", rd.msg);
    while (rc == 0) {
        if (n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 1u << 16;
            w->buf = xrealloc(w->buf, w->cap);
        }
        ssize_t got = reader_read(&rd, w->buf + n, w->cap - n);
        if (got < 0) {
            snprintf(msg, mcap, "%s", rd.msg);
            rc = -1;
        } else if (got == 0) {
            break;
        } else if ((n += (size_t)got) > max) {
            snprintf(msg, mcap, "grew beyond --max-doc-bytes since it was first read");
            rc = -1;
        }
    }
    reader_close(&rd);
    close(fd);
    *len = n;
    return rc;
}

static int pread_all(int fd, char *p, size_t n, int64_t off)
{
    while (n > 0) {
        ssize_t got = pread(fd, p, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
        off += got;
    }
    return 0;
}

/* w->buf holds at least n bytes. */
static void buf_room(struct vworker *w, size_t n)
{
    if (w->cap < n) {
        w->cap = n;
        w->buf = xrealloc(w->buf, w->cap);
    }
}

/* The text of document id into *text (w->buf, or inside it). */
int doc_text(struct vworker *w, uint64_t id, const char **text, size_t *len, char *msg, size_t mcap)
{
    struct vctx *v = w->v;
    struct run *r = v->r;
    const struct docloc *loc = &r->in.locs[id - r->store.first_new];
    if (loc->input == LOC_SPOOL) { /* its owner read it (simlsh-dedup-mpi) */
        size_t n = (size_t)loc->len;
        buf_room(w, n + 1);
        errno = 0;
        if (!r->in.spool_open || pread_all(r->in.spool_fd, w->buf, n, (int64_t)loc->where) != 0) {
            snprintf(msg, mcap, "cannot read the copy its owner sent: %s",
                     errno ? strerror(errno) : "truncated");
            return -1;
        }
        if (loc->kind == DOCK_FAILED) {
            snprintf(msg, mcap, "%.*s", (int)n, w->buf);
            return -1;
        }
        *text = w->buf;
        *len = n;
        return 0;
    }
    if (loc->kind == DOCK_PATH) {
        int64_t mtime = 0;
        const char *path = strlist_get(&r->in.paths, (size_t)loc->where, NULL);
        if (read_file(w, path, r->opt->max_doc_bytes, len, &mtime, msg, mcap) != 0)
            return -1;
        if (*len != r->store.id_bytes[id] || mtime != r->store.id_mtime[id]) {
            snprintf(msg, mcap, "changed since it was first read");
            return -1;
        }
        *text = w->buf;
        return 0;
    }
    struct source *s = &v->src[loc->input];
    if (s->bad) {
        snprintf(msg, mcap, "%s", s->msg);
        return -1;
    }
    uint64_t off = loc->where;
    if (s->nmap) {
        uint64_t *f = bsearch(&off, s->from, s->nmap, sizeof off, cmp_u64);
        if (!f) {
            snprintf(msg, mcap, "internal error: line not copied");
            return -1;
        }
        off = s->to[f - s->from];
    }
    size_t n = (size_t)loc->len;
    buf_room(w, n + 1);
    if (pread_all(s->fd, w->buf, n, s->base + (int64_t)off) != 0) {
        snprintf(msg, mcap, "cannot read it again: %s", errno ? strerror(errno) : "truncated");
        return -1;
    }
    *text = w->buf;
    *len = n;
    if (loc->kind != DOCK_JSON)
        return 0;
#if DEDUP_HAVE_JANSSON
    /* As the first pass extracted it (dedup-sign.c, sign_json): the text
     * field, a string, of the line's object. */
    json_error_t jerr;
    json_t *obj = json_loadb(w->buf, n, JSON_ALLOW_NUL, &jerr);
    json_t *t = obj && json_is_object(obj) ? json_object_get(obj, r->opt->text_field) : NULL;
    int rc = -1;
    if (t && json_is_string(t)) {
        size_t tl = json_string_length(t);
        /* the text goes after the line, which stays intact */
        buf_room(w, n + tl + 1);
        memcpy(w->buf + n, json_string_value(t), tl);
        *text = w->buf + n;
        *len = tl;
        rc = 0;
    } else {
        snprintf(msg, mcap, "changed since it was first read (no text field)");
    }
    json_decref(obj);
    return rc;
#else
    snprintf(msg, mcap, "JSON support missing");
    return -1;
#endif
}

/* The line inputs that hold candidates: opened, checked, and for a
 * compressed one its needed lines copied to a temporary file. */
void open_sources(struct vctx *v)
{
    struct run *r = v->r;
    const struct options *o = r->opt;
    size_t ndocs = v->ndocs;
    v->src = xmalloc((o->ninputs ? o->ninputs : 1) * sizeof *v->src);
    for (size_t i = 0; i < o->ninputs; i++) {
        memset(&v->src[i], 0, sizeof v->src[i]);
        v->src[i].fd = -1;
    }
    for (size_t k = 0; k < ndocs; k++) {
        const struct docloc *loc = &r->in.locs[k];
        if (!(v->state[k] & DS_NEED) || loc->kind == DOCK_PATH || loc->input == LOC_SPOOL)
            continue;
        struct source *s = &v->src[loc->input];
        if (s->fd >= 0 || s->bad)
            continue;
        const struct input *in = &o->inputs[loc->input];
        if (!strcmp(in->arg, "-")) {
            if (!r->stats.vs.stdin_kept) {
                s->bad = 1;
                snprintf(s->msg, sizeof s->msg, "standard input was not kept");
                continue;
            }
            s->fd = dup(STDIN_FILENO);
            s->base = r->stats.vs.stdin_base;
        } else {
            struct stat st;
            s->fd = open_regular(in->arg, &st, s->msg, sizeof s->msg);
            int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
            if (s->fd >= 0 && m != r->store.id_mtime[r->store.first_new + k]) {
                snprintf(s->msg, sizeof s->msg, "%s changed since it was first read",
                         qname(in->arg));
                close(s->fd);
                s->fd = -1;
            }
        }
        if (s->fd < 0) {
            s->bad = 1;
            continue;
        }
        unsigned char m[4] = {0, 0, 0, 0};
        ssize_t got = pread(s->fd, m, 4, (off_t)s->base);
        int compressed = (got >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
                         (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
        if (!compressed)
            continue;
        /* One streaming pass copies the needed lines, in offset order (ids
         * follow the input order), to a temporary file read by pread(). */
        size_t nm = 0;
        for (size_t q = k; q < ndocs; q++)
            nm += (v->state[q] & DS_NEED) && r->in.locs[q].input == loc->input &&
                  r->in.locs[q].kind != DOCK_PATH;
        s->from = xmalloc(nm * sizeof *s->from);
        s->to = xmalloc(nm * sizeof *s->to);
        char msg[160] = "";
        int tmp = temp_file(msg, sizeof msg);
        struct reader rd;
        int opened = 0, rc = -1;
        if (tmp >= 0 && lseek(s->fd, (off_t)s->base, SEEK_SET) < 0)
            snprintf(msg, sizeof msg, "cannot seek: %s", strerror(errno));
        else if (tmp >= 0) {
            opened = 1;
            rc = reader_open(&rd, s->fd);
            if (rc != 0)
                snprintf(msg, sizeof msg, "%s", rd.msg);
        }
        uint64_t pos = 0, written = 0;
        size_t cap = 1u << 20;
        char *buf = xmalloc(cap);
        size_t blen = 0, bpos = 0; /* buf[bpos..blen) is the stream at pos */
        for (size_t q = k; q < ndocs && rc == 0; q++) {
            const struct docloc *l = &r->in.locs[q];
            if (!(v->state[q] & DS_NEED) || l->input != loc->input || l->kind == DOCK_PATH)
                continue;
            uint64_t need = l->where, end = l->where + l->len;
            s->from[s->nmap] = need;
            s->to[s->nmap++] = written;
            while (rc == 0 && pos < end) {
                if (bpos == blen) {
                    ssize_t g = reader_read(&rd, buf, cap);
                    if (g <= 0) {
                        snprintf(msg, sizeof msg, "%s", g < 0 ? rd.msg : "shorter than before");
                        rc = -1;
                        break;
                    }
                    blen = (size_t)g;
                    bpos = 0;
                }
                size_t take = blen - bpos;
                if (pos < need) { /* skip to the line */
                    if (take > need - pos)
                        take = (size_t)(need - pos);
                } else {
                    if (take > end - pos)
                        take = (size_t)(end - pos);
                    if (write_all(tmp, buf + bpos, take) != 0) {
                        snprintf(msg, sizeof msg, "cannot write a temporary file: %s",
                                 strerror(errno));
                        rc = -1;
                        break;
                    }
                    written += take;
                }
                bpos += take;
                pos += take;
            }
        }
        free(buf);
        if (opened)
            reader_close(&rd);
        close(s->fd);
        s->fd = tmp;
        s->base = 0;
        if (rc != 0) {
            s->bad = 1;
            snprintf(s->msg, sizeof s->msg, "%s", msg);
        }
    }
}

void close_sources(struct vctx *v)
{
    for (size_t i = 0; i < v->r->opt->ninputs; i++) {
        if (v->src[i].fd >= 0)
            close(v->src[i].fd);
        free(v->src[i].from);
        free(v->src[i].to);
    }
    free(v->src);
}

struct text_source {
    struct vctx v;
    struct vworker w;
};

struct text_source *text_source_open(struct run *r, const uint64_t *ids, size_t n, size_t ndocs)
{
    struct text_source *t = calloc(1, sizeof *t);
    uint8_t *state = calloc(ndocs ? ndocs : 1, 1);
    if (!t || !state)
        die_oom();
    t->v.r = r;
    t->v.ndocs = ndocs;
    t->v.state = state;
    for (size_t i = 0; i < n; i++)
        state[ids[i] - r->store.first_new] = DS_NEED;
    open_sources(&t->v);
    t->w.v = &t->v;
    return t;
}

int text_source_read(struct text_source *t, uint64_t id, const char **text, size_t *len, char *msg,
                     size_t mcap)
{
    errno = 0;
    return doc_text(&t->w, id, text, len, msg, mcap);
}

void text_source_close(struct text_source *t)
{
    if (!t)
        return;
    close_sources(&t->v);
    free(t->v.state);
    free(t->w.buf);
    free(t);
}
