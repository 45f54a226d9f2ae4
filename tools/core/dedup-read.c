/*
 * simlsh-dedup: the workers' readers. A worker reads a file (bounded,
 * decompressed, binary detected) or a byte range of a line file, split
 * into lines in the batch's arena, so the main thread never touches the
 * bytes (dedup-pipeline.h).
 */
#include "dedup-pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void doc_skip(struct doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->status = DOC_ESKIP;
}

int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

/* The first block decides whether a document is text (as git and grep
 * decide): a NUL byte in it means binary. */
#define BINARY_PROBE 8192

/* Read a whole stream into w->buf, at most max bytes: one more byte than
 * that and the document is skipped, even if the file grew since the walk.
 * Returns 0, or -1 with d->status set. */
int read_bounded(struct worker *w, const struct options *o, struct reader *rd, size_t hint,
                 struct doc *d, size_t *len)
{
    uint64_t max = o->max_doc_bytes;
    size_t limit = max >= SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)max + 1;
    size_t want = hint < limit ? hint + 1 : limit;
    if (want < 4096)
        want = 4096 < limit ? 4096 : limit;
    if (w->cap < want) {
        w->buf = xrealloc(w->buf, want);
        w->cap = want;
    }
    size_t n = 0;
    int probed = o->binary;
    for (;;) {
        if (n == w->cap) {
            if (w->cap >= limit)
                break;
            w->cap = w->cap > limit / 2 ? limit : w->cap * 2;
            w->buf = xrealloc(w->buf, w->cap);
        }
        size_t room = w->cap - n;
        if (room > limit - n)
            room = limit - n;
        ssize_t got = reader_read(rd, w->buf + n, room);
        if (got < 0 && rd->codec != CODEC_PLAIN) {
            doc_skip(d, "%s at compressed byte %llu, skipped", rd->msg,
                     (unsigned long long)reader_offset(rd));
            return -1;
        }
        if (got < 0) {
            doc_skip(d, "%s", rd->msg);
            return -1;
        }
        n += (size_t)got;
        if (!probed && (got == 0 || n >= BINARY_PROBE)) {
            const char *nul = memchr(w->buf, 0, n < BINARY_PROBE ? n : BINARY_PROBE);
            if (nul) {
                doc_skip(d, "binary (NUL byte at offset %zu), skipped; --binary reads it",
                         (size_t)(nul - w->buf));
                return -1;
            }
            probed = 1;
        }
        if (got == 0)
            break;
        if (n >= limit)
            break;
    }
    if (n > max) {
        doc_skip(d, "%s more than --max-doc-bytes (%llu bytes), skipped",
                 rd->codec == CODEC_PLAIN ? "holds" : "decompresses to", (unsigned long long)max);
        return -1;
    }
    *len = n;
    return 0;
}

int read_path_doc(struct worker *w, const struct options *o, const char *path, struct doc *d,
                  size_t *len)
{
    struct stat st;
    int fd = open_regular(path, &st, d->msg, sizeof d->msg);
    if (fd < 0) {
        d->status = DOC_ESKIP;
        return -1;
    }
    d->mtime_ns = mtime_ns(&st);
    if ((uint64_t)st.st_size > o->max_doc_bytes) {
        close(fd);
        doc_skip(d, "larger than --max-doc-bytes (%llu > %llu bytes), skipped",
                 (unsigned long long)st.st_size, (unsigned long long)o->max_doc_bytes);
        return -1;
    }
    struct reader rd;
    int rc = reader_open(&rd, fd);
    if (rc != 0)
        doc_skip(d, "%s", rd.msg);
    else
        rc = read_bounded(w, o, &rd, (size_t)st.st_size, d, len);
    reader_close(&rd);
    close(fd);
    return rc;
}

/* Room for n documents in b (their signatures are made when first used). */
void batch_room(struct batch *b, size_t n)
{
    if (n <= b->cap)
        return;
    size_t cap = b->cap ? b->cap * 2 : BATCH_DOCS;
    while (cap < n)
        cap *= 2;
    b->docs = xrealloc(b->docs, cap * sizeof *b->docs);
    /* values are sized by the worker, which knows num_perm */
    b->cap = cap;
}

void arena_room(struct batch *b, size_t n)
{
    if (n <= b->arena_cap)
        return;
    size_t cap = b->arena_cap ? b->arena_cap : BATCH_BYTES;
    while (cap < n)
        cap *= 2;
    b->arena = xrealloc(b->arena, cap);
    b->arena_cap = cap;
}

struct doc *batch_doc(struct batch *b, size_t input, int kind)
{
    batch_room(b, b->n + 1);
    struct doc *d = &b->docs[b->n++];
    memset(d, 0, offsetof(struct doc, msg));
    d->msg[0] = '\0';
    d->input = (uint32_t)input;
    d->kind = (uint8_t)kind;
    return d;
}

int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

/* pread that retries interrupted calls; -1 with errno on failure. */
ssize_t pread_full(int fd, char *buf, size_t len, uint64_t off)
{
    for (;;) {
        ssize_t got = pread(fd, buf, len, (off_t)off);
        if (got >= 0 || errno != EINTR)
            return got;
    }
}

/* The document of line number line of a range: arena[p .. p + l), which
 * starts at file offset lstart and ends with newline (0 or 1) newline
 * bytes; skipped when longer than max. */
static void range_line(struct batch *b, uint64_t line, uint64_t lstart, size_t p, size_t l,
                       size_t newline, int json, uint64_t max)
{
    if (l > max) {
        struct doc *d = batch_doc(b, b->input, DOCK_TEXT);
        d->line = line;
        doc_skip(d, "line longer than --max-doc-bytes, skipped");
    } else if (!json || !is_blank(b->arena + p, l)) {
        /* Blank lines between JSON objects are tolerated, as most JSONL
         * writers and readers do. */
        struct doc *d = batch_doc(b, b->input, json ? DOCK_JSON : DOCK_TEXT);
        d->line = line;
        d->src_off = lstart;
        d->text_off = p;
        d->text_len = !json && l > 0 && b->arena[p + l - 1] == '\r' ? l - 1 : l; /* CRLF */
        d->bytes = l + newline;
        d->mtime_ns = b->mtime;
    }
}

/* A worker's half of reading a line file: the lines that start in
 * [b->start, b->end) (the last range: to the end of the file), read with
 * pread into the batch's arena and split there, so the main thread never
 * touches the bytes. A line that starts before b->start belongs to the
 * range before, which reads on past its end to finish it. Line numbers are
 * counted from 1 within the range; the main thread, which consumes ranges
 * in order, adds the newlines of the ranges before. */
void read_range(const struct options *o, struct batch *b)
{
    const struct input *in = &o->inputs[b->input];
    int json = in->kind == INPUT_JSONL;
    uint64_t max = o->max_doc_bytes;
    uint64_t fpos = b->start; /* file offset of arena[have] */
    size_t have = 0, p = 0;   /* bytes in the arena; start of the current line */
    uint64_t line = 0, newlines = 0;
    int eof = 0;
    /* Reads past the range's end, to finish its last line, go by steps in
     * proportion to the range (small ranges are for tests). */
    size_t step = RANGE_STEP;
    if (!b->last_range && b->end - b->start < step)
        step = b->end - b->start < 256 ? 256 : (size_t)(b->end - b->start);
    arena_room(b, (size_t)(b->last_range ? BATCH_BYTES : b->end - b->start) + step);
    if (b->start > 0) {
        /* Skip the end of a line begun before the range. */
        int found = 0;
        size_t chunk = step;
        fpos = b->start - 1;
        while (!found) {
            ssize_t got = pread_full(b->fd, b->arena, chunk, fpos);
            if (chunk < b->arena_cap / 2)
                chunk *= 2;
            if (got <= 0) {
                if (got < 0) {
                    b->read_err = errno;
                    b->read_line = 0;
                }
                b->newlines = 0;
                return;
            }
            const char *nl = memchr(b->arena, '\n', (size_t)got);
            if (nl) {
                fpos += (uint64_t)(nl - b->arena) + 1;
                found = 1;
            } else {
                fpos += (uint64_t)got;
            }
            if (fpos >= b->end && !b->last_range) /* no line starts here */
                return;
        }
    }
    for (;;) {
        uint64_t lstart = fpos - (have - p);
        if (!b->last_range && lstart >= b->end)
            break;
        char *nl = memchr(b->arena + p, '\n', have - p);
        if (!nl && eof) {
            if (have > p) /* a last line without its newline */
                range_line(b, ++line, lstart, p, have - p, 0, json, max);
            break;
        }
        if (!nl) {
            if (have - p > max) {
                /* Too long to hold: find its end without keeping it. */
                line++;
                struct doc *d = batch_doc(b, b->input, DOCK_TEXT);
                d->line = line;
                doc_skip(d, "line longer than --max-doc-bytes, skipped");
                have = p;
                for (;;) {
                    ssize_t got = pread_full(b->fd, b->arena + p, b->arena_cap - p, fpos);
                    if (got < 0) {
                        b->read_err = errno;
                        b->read_line = line;
                        b->newlines = newlines;
                        return;
                    }
                    if (got == 0) {
                        eof = 1;
                        break;
                    }
                    fpos += (uint64_t)got;
                    char *e = memchr(b->arena + p, '\n', (size_t)got);
                    if (e) {
                        size_t keep = (size_t)got - (size_t)(e - (b->arena + p)) - 1;
                        memmove(b->arena + p, e + 1, keep);
                        have = p + keep;
                        newlines++;
                        break;
                    }
                }
                continue;
            }
            /* More bytes: the rest of the range at first, then steps. */
            size_t want = step;
            if (!b->last_range && fpos < b->end && b->end - fpos + step > want)
                want = (size_t)(b->end - fpos) + step;
            else if (b->last_range && b->arena_cap - have > want)
                want = b->arena_cap - have; /* to the end of the file */
            if (have - p > want)
                want = have - p; /* a long line: double what is held */
            arena_room(b, have + want);
            ssize_t got = pread_full(b->fd, b->arena + have, want, fpos);
            if (got < 0) {
                b->read_err = errno;
                b->read_line = line;
                break;
            }
            if (got == 0)
                eof = 1;
            have += (size_t)got;
            fpos += (uint64_t)got;
            continue;
        }
        size_t l = (size_t)(nl - (b->arena + p));
        newlines++;
        range_line(b, ++line, lstart, p, l, 1, json, max);
        p += l + 1;
    }
    b->arena_len = have;
    b->newlines = newlines;
}
