/*
 * simlsh-dedup: reading inputs and signing them.
 *
 * The main thread reads (it only enumerates files, and splits line inputs
 * into batches), worker threads sign, and the main thread inserts the signed
 * batches into the index strictly in input order. Ids are therefore the
 * input positions of the accepted documents, and the index, and every
 * result, are identical for any number of threads.
 */
#include "dedup.h"

#if DEDUP_HAVE_JANSSON
#include <jansson.h>
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Enumerating files and directories                                        */
/* ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *join_path(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = xmalloc(dl + (size_t)slash + nl + 1);
    memcpy(p, dir, dl);
    if (slash)
        p[dl] = '/';
    memcpy(p + dl + (size_t)slash, name, nl + 1);
    return p;
}

static int skip_path(struct run *r, const char *path, const char *fmt, const char *arg)
{
    return skip_input(r, path, strlen(path), fmt, arg);
}

static void add_path(struct run *r, const char *p, const struct stat *st, int is_link)
{
    size_t i = r->paths.count;
    strlist_add(&r->paths, p, strlen(p), (uint64_t)st->st_size);
    if (i >= r->pmeta_cap) {
        r->pmeta_cap = r->pmeta_cap ? r->pmeta_cap * 2 : 1024;
        r->pmeta = xrealloc(r->pmeta, r->pmeta_cap * sizeof *r->pmeta);
    }
    r->pmeta[i].dev = (uint64_t)st->st_dev;
    r->pmeta[i].ino = (uint64_t)st->st_ino;
    r->pmeta[i].mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
    r->pmeta[i].is_link = is_link;
    r->pmeta[i].alias_of = SIZE_MAX;
    fileids_add(&r->input_ids, st);
}

/* A glob with a slash is matched against the whole path as enumerated,
 * one without against the last component (as find -name does). */
static int glob_match(const char *const *globs, size_t n, const char *path, const char *base)
{
    for (size_t i = 0; i < n; i++)
        if (fnmatch(globs[i], strchr(globs[i], '/') ? path : base, 0) == 0)
            return 1;
    return 0;
}

static int wanted(const struct run *r, const char *path, const char *base, int is_dir)
{
    const struct options *o = r->opt;
    if (glob_match(o->globs_ex, o->nglobs_ex, path, base))
        return 0;
    if (is_dir || o->nglobs_in == 0)
        return 1;
    return glob_match(o->globs_in, o->nglobs_in, path, base);
}

static int is_vcs_dir(const char *name)
{
    return !strcmp(name, ".git") || !strcmp(name, ".hg") || !strcmp(name, ".svn");
}

/* Depth-first, entries in byte order, so the document order (and with it
 * every id and output line) does not depend on the file system. Symbolic
 * links to files are followed; links to directories are not, which rules out
 * cycles. A directory on another device is checked for a pseudo file
 * system (proc, sysfs...), which is never entered. */
static int walk_dir(struct run *r, const char *dir, int check_fs, uint64_t dev)
{
    if (check_fs) {
        const char *fs = pseudo_fs_name(dir);
        if (fs)
            return skip_path(r, dir,
                             "on a pseudo file system (%s), not walked; name its "
                             "files to read them",
                             fs);
    }
    DIR *d = opendir(dir);
    if (!d)
        return skip_path(r, dir, "cannot open directory: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = xrealloc(names, cap * sizeof *names);
        }
        size_t len = strlen(e->d_name);
        names[n] = xmalloc(len + 1);
        memcpy(names[n], e->d_name, len + 1);
        n++;
    }
    int rerr = errno;
    closedir(d);
    int rc = 0;
    if (rerr)
        rc = skip_path(r, dir, "cannot read directory: %s", strerror(rerr));
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *p = join_path(dir, names[i]);
        struct stat st;
        if (lstat(p, &st) != 0) {
            rc = skip_path(r, p, "cannot stat: %s", strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            if ((r->opt->include_vcs || !is_vcs_dir(names[i])) && wanted(r, p, names[i], 1))
                rc = walk_dir(r, p, (uint64_t)st.st_dev != dev, (uint64_t)st.st_dev);
        } else if (!wanted(r, p, names[i], 0)) {
            /* left out by --include / --exclude */
        } else if (S_ISLNK(st.st_mode)) {
            if (stat(p, &st) != 0)
                rc = skip_path(r, p, "symbolic link to nothing readable: %s", strerror(errno));
            else if (S_ISREG(st.st_mode))
                add_path(r, p, &st, 1);
            else if (!S_ISDIR(st.st_mode)) /* links to directories: not followed */
                rc = skip_path(r, p, "symbolic link to a %s, skipped", file_type_name(st.st_mode));
        } else if (S_ISREG(st.st_mode)) {
            add_path(r, p, &st, 0);
        } else {
            rc = skip_path(r, p, "not a regular file (%s), skipped", file_type_name(st.st_mode));
        }
        free(p);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

struct alias_key {
    uint64_t dev, ino;
    size_t path;
};

static int cmp_alias(const void *a, const void *b)
{
    const struct alias_key *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->path < y->path ? -1 : x->path > y->path;
}

/* Names of one file (hard links, symbolic links, a file given twice) make
 * one document. It is read under its first name that is not a symbolic
 * link (the first name when all are links), and in that name's place in
 * the input order; the other names are reported and listed by --skipped,
 * so deleting what is not kept never deletes the file itself. */
static void resolve_aliases(struct run *r)
{
    size_t n = r->paths.count;
    if (n < 2)
        return;
    struct alias_key *k = xmalloc(n * sizeof *k);
    for (size_t i = 0; i < n; i++) {
        k[i].dev = r->pmeta[i].dev;
        k[i].ino = r->pmeta[i].ino;
        k[i].path = i;
    }
    qsort(k, n, sizeof *k, cmp_alias);
    for (size_t b = 0, e; b < n; b = e) {
        for (e = b + 1; e < n && k[e].dev == k[b].dev && k[e].ino == k[b].ino; e++) {
        }
        if (e - b < 2)
            continue;
        size_t keep = k[b].path; /* the smallest position */
        for (size_t j = b; j < e; j++) {
            if (!r->pmeta[k[j].path].is_link) {
                keep = k[j].path;
                break;
            }
        }
        for (size_t j = b; j < e; j++) {
            size_t p = k[j].path;
            if (p == keep)
                continue;
            r->pmeta[p].alias_of = keep;
            r->aliases++;
            size_t pl, kl;
            const char *ps = strlist_get(&r->paths, p, &pl);
            const char *ks = strlist_get(&r->paths, keep, &kl);
            const char *qp = qnamen(ps, pl), *qk = qnamen(ks, kl);
            if (!r->opt->quiet) /* not bad input: --quiet silences it */
                warnx_doc(r, "%s: same file as %s, read once under that name", qp, qk);
            if (r->opt->skipped_path) {
                size_t a = strlen(qp), c = strlen(qk);
                char *line = xmalloc(a + c + 16);
                snprintf(line, a + c + 16, "%s\tsame file as %s", qp, qk);
                strlist_add(&r->skips, line, strlen(line), 0);
                free(line);
            }
        }
    }
    free(k);
}

/* Resolve every input before reading any, so the total size (for the ETA)
 * is known, a bad path fails early under --strict, and every input file is
 * known before any output is opened. Arguments are followed when they are
 * symbolic links; only regular files (and directories to walk) are read. */
int inputs_enumerate(struct run *r)
{
    struct options *opt = (struct options *)r->opt;
    r->total_known = 1;
    for (size_t i = 0; i < opt->ninputs; i++) {
        struct input *in = &opt->inputs[i];
        struct stat st, lst;
        in->first_path = r->paths.count;
        in->npaths = 0;
        if (in->kind == INPUT_STDIN || !strcmp(in->arg, "-")) {
            r->total_known = 0;
            if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
                fileids_add(&r->input_ids, &st);
            continue;
        }
        int is_link = lstat(in->arg, &lst) == 0 && S_ISLNK(lst.st_mode);
        if (stat(in->arg, &st) != 0) {
            int e = errno;
            in->kind = INPUT_PATHS; /* nothing to read */
            if (skip_path(r, in->arg, "%s", strerror(e)))
                return -1;
            continue;
        }
        if (in->kind == INPUT_LINES || in->kind == INPUT_JSONL) {
            if (!S_ISREG(st.st_mode)) {
                in->kind = INPUT_PATHS;
                if (skip_path(r, in->arg,
                              "not a regular file (%s), skipped; give - to read "
                              "a stream",
                              file_type_name(st.st_mode)))
                    return -1;
                continue;
            }
            fileids_add(&r->input_ids, &st);
            r->total_bytes += (uint64_t)st.st_size;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (walk_dir(r, in->arg, 1, (uint64_t)st.st_dev))
                return -1;
        } else if (S_ISREG(st.st_mode)) {
            add_path(r, in->arg, &st, is_link);
        } else if (skip_path(r, in->arg,
                             "not a regular file (%s), skipped; give - to read "
                             "a stream",
                             file_type_name(st.st_mode))) {
            return -1;
        }
        in->npaths = r->paths.count - in->first_path;
        for (size_t p = in->first_path; p < r->paths.count; p++)
            r->total_bytes += r->paths.size[p];
    }
    resolve_aliases(r);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Signing (worker side)                                                    */
/* ------------------------------------------------------------------------ */

struct worker {
    struct run *r;
    size_t index; /* in r->worker_cpu */
    simlsh_signature *sig;
    char *buf;  /* file contents, reused across documents */
    char *jbuf; /* a JSON text with escapes, decoded */
    size_t jcap;
    size_t cap;
};

static void doc_skip(struct doc *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void doc_skip(struct doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->status = DOC_ESKIP;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

/* The first block decides whether a document is text (as git and grep
 * decide): a NUL byte in it means binary. */
#define BINARY_PROBE 8192

/* Read a whole stream into w->buf, at most max bytes: one more byte than
 * that and the document is skipped, even if the file grew since the walk.
 * Returns 0, or -1 with d->status set. */
static int read_bounded(struct worker *w, const struct run *r, struct reader *rd, size_t hint,
                        struct doc *d, size_t *len)
{
    uint64_t max = r->opt->max_doc_bytes;
    size_t limit = max >= SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)max + 1;
    size_t want = hint < limit ? hint + 1 : limit;
    if (want < 4096)
        want = 4096 < limit ? 4096 : limit;
    if (w->cap < want) {
        w->buf = xrealloc(w->buf, want);
        w->cap = want;
    }
    size_t n = 0;
    int probed = r->opt->binary;
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

static int read_path_doc(struct worker *w, const struct run *r, const char *path, struct doc *d,
                         size_t *len)
{
    struct stat st;
    int fd = open_regular(path, &st, d->msg, sizeof d->msg);
    if (fd < 0) {
        d->status = DOC_ESKIP;
        return -1;
    }
    d->mtime_ns = mtime_ns(&st);
    if ((uint64_t)st.st_size > r->opt->max_doc_bytes) {
        close(fd);
        doc_skip(d, "larger than --max-doc-bytes (%llu > %llu bytes), skipped",
                 (unsigned long long)st.st_size, (unsigned long long)r->opt->max_doc_bytes);
        return -1;
    }
    struct reader rd;
    int rc = reader_open(&rd, fd);
    if (rc != 0)
        doc_skip(d, "%s", rd.msg);
    else
        rc = read_bounded(w, r, &rd, (size_t)st.st_size, d, len);
    reader_close(&rd);
    close(fd);
    return rc;
}

static void sign_text(struct run *r, struct doc *d, simlsh_signature *sig, const char *text,
                      size_t len)
{
    /* Exact verification reads the document again later (dedup-verify.c):
     * the first pass keeps signatures only. */
    int rc = simlsh_signature_add_text(sig, text, len);
    if (rc == SIMLSH_EUTF8) {
        size_t at = 0;
        utf8_valid((const unsigned char *)text, len, &at);
        d->status = DOC_EUTF8;
        snprintf(d->msg, sizeof d->msg, "invalid UTF-8 at byte %zu", at);
        return;
    }
    if (rc != 0) {
        d->status = DOC_ELIB;
        d->err = rc;
        return;
    }
    if (simlsh_signature_is_empty(sig) == 1)
        d->status = DOC_EEMPTY;
}

/* Only reached in a build with jansson: without it --jsonl is refused
 * before any input is read (parse_args), so no DOCK_JSON document exists. */
#if DEDUP_HAVE_JANSSON
static void set_msg(struct doc *d, int status, const char *fmt, const char *a)
{
    d->status = (uint8_t)status;
    snprintf(d->msg, sizeof d->msg, fmt, a);
}

/* ---- JSONL records without a tree --------------------------------------
 * Most records are objects whose id and text fields are plain JSON; they
 * are read here in one pass, with no allocation, the text used in place
 * when it holds no escape. Whatever this reader is not sure of (invalid
 * JSON, a lone surrogate, a number with an exponent, deep nesting, an
 * escaped key, a missing or mistyped field...) is left to jansson, which
 * then decides: what is accepted, and every message, stay jansson's. */

struct jscan {
    const unsigned char *p, *e;
};

struct jstr {
    const unsigned char *s; /* raw bytes between the quotes */
    size_t len;
    int esc; /* holds a backslash escape */
};

static void js_ws(struct jscan *j)
{
    while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int js_hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Nonzero if one of the 8 bytes in v is a quote, a backslash, a control
 * byte or not ASCII. The zero-byte test can misfire only above a byte that
 * truly matches, so "any" is exact. */
static inline uint64_t js_special8(uint64_t v)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

/* The string at j->p; 0, or -1 for anything jansson must judge. */
static int js_string(struct jscan *j, struct jstr *out)
{
    if (j->p >= j->e || *j->p != '"')
        return -1;
    const unsigned char *p = ++j->p, *e = j->e;
    out->s = p;
    out->esc = 0;
    while (p < e) {
        uint64_t v;
        while (e - p >= 8 && (memcpy(&v, p, 8), !js_special8(v)))
            p += 8; /* plain ASCII, eight bytes at a time */
        if (p >= e)
            break;
        unsigned c = *p;
        if (c == '"') {
            out->len = (size_t)(p - out->s);
            j->p = p + 1;
            return 0;
        }
        if (c == '\\') {
            out->esc = 1;
            if (e - p < 2)
                return -1;
            unsigned x = p[1], u, lo;
            if (x != 'u') {
                if (!strchr("\"\\/bfnrt", (int)x) || x == 0)
                    return -1;
                p += 2;
                continue;
            }
            if (e - p < 6 || js_hex4(p + 2, &u))
                return -1;
            p += 6;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return -1;
            if (u >= 0xD800 && u <= 0xDBFF) { /* a pair, or jansson's error */
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || js_hex4(p + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                p += 6;
            }
            continue;
        }
        if (c < 0x20)
            return -1;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t n = utf8_seq(p, (size_t)(e - p));
        if (n == 0)
            return -1;
        p += n;
    }
    return -1;
}

static void put_utf8(char **o, unsigned cp)
{
    unsigned char *q = (unsigned char *)*o;
    if (cp < 0x80) {
        *q++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *q++ = (unsigned char)(0xC0 | cp >> 6);
        *q++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *q++ = (unsigned char)(0xE0 | cp >> 12);
        *q++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *q++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *q++ = (unsigned char)(0xF0 | cp >> 18);
        *q++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        *q++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *q++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    *o = (char *)q;
}

/* Decode a string js_string accepted into out (room for s->len bytes: an
 * escape never decodes to more bytes than it takes); returns the length. */
static size_t js_decode(const struct jstr *s, char *out)
{
    const unsigned char *p = s->s, *e = s->s + s->len;
    char *o = out;
    while (p < e) {
        if (*p != '\\') {
            *o++ = (char)*p++;
            continue;
        }
        unsigned x = p[1], u = 0, lo = 0xDC00;
        if (x != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            *o++ = to[strchr(from, (int)x) - from];
            p += 2;
            continue;
        }
        js_hex4(p + 2, &u);
        p += 6;
        if (u >= 0xD800 && u <= 0xDBFF) {
            js_hex4(p + 2, &lo);
            p += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(&o, u);
    }
    return (size_t)(o - out);
}

/* A number as JSON writes it; *is_int for -?(0|[1-9][0-9]*) of at most 18
 * digits (what jansson stores as an integer without overflow). Exponents
 * and long numbers are left to jansson (it reports overflow). */
static int js_number(struct jscan *j, int *is_int)
{
    const unsigned char *p = j->p, *e = j->e, *start = p;
    if (p < e && *p == '-')
        p++;
    if (p >= e || *p < '0' || *p > '9')
        return -1;
    if (*p == '0' && p + 1 < e && p[1] >= '0' && p[1] <= '9')
        return -1;
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    size_t digits = (size_t)(p - start) - (*start == '-');
    *is_int = 1;
    if (p < e && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9')
            return -1;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E'))
        return -1;
    if (p - start > 40 || (*is_int && digits > 18))
        return -1;
    j->p = p;
    return 0;
}

static int js_skip(struct jscan *j, int depth)
{
    if (depth > 64 || j->p >= j->e)
        return -1;
    struct jstr s;
    int is_int;
    switch (*j->p) {
    case '"':
        return js_string(j, &s);
    case '{':
    case '[': {
        int obj = *j->p == '{';
        unsigned char close = obj ? '}' : ']';
        j->p++;
        js_ws(j);
        if (j->p < j->e && *j->p == close) {
            j->p++;
            return 0;
        }
        for (;;) {
            if (obj) {
                if (js_string(j, &s))
                    return -1;
                js_ws(j);
                if (j->p >= j->e || *j->p != ':')
                    return -1;
                j->p++;
                js_ws(j);
            }
            if (js_skip(j, depth + 1))
                return -1;
            js_ws(j);
            if (j->p >= j->e)
                return -1;
            if (*j->p == close) {
                j->p++;
                return 0;
            }
            if (*j->p != ',')
                return -1;
            j->p++;
            js_ws(j);
        }
    }
    case 't':
    case 'f':
    case 'n': {
        const char *lit = *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null";
        size_t n = strlen(lit);
        if ((size_t)(j->e - j->p) < n || memcmp(j->p, lit, n))
            return -1;
        j->p += n;
        return 0;
    }
    default:
        return js_number(j, &is_int);
    }
}

/* The id (by_line: none) and text of a plain record; -1 sends it to
 * jansson. id_int: the id is an integer, its digits in *id. */
static int js_record(const char *line, size_t len, const char *idf, const char *tf, int by_line,
                     struct jstr *id, int *id_int, struct jstr *text)
{
    struct jscan j = {(const unsigned char *)line, (const unsigned char *)line + len};
    size_t idl = strlen(idf), tl = strlen(tf);
    int have_id = 0, have_text = 0;
    js_ws(&j);
    if (j.p >= j.e || *j.p != '{')
        return -1;
    j.p++;
    js_ws(&j);
    if (j.p < j.e && *j.p == '}')
        return -1; /* no fields: jansson names the missing one */
    for (;;) {
        struct jstr key;
        if (js_string(&j, &key) || key.esc)
            return -1;
        js_ws(&j);
        if (j.p >= j.e || *j.p != ':')
            return -1;
        j.p++;
        js_ws(&j);
        /* a key given twice: the last value counts, as in jansson */
        int is_id = !by_line && key.len == idl && !memcmp(key.s, idf, idl);
        int is_text = key.len == tl && !memcmp(key.s, tf, tl);
        const unsigned char *v = j.p;
        if (is_id || is_text) {
            struct jstr s;
            int is_int = 0;
            if (j.p < j.e && *j.p == '"') {
                if (js_string(&j, &s))
                    return -1;
            } else if (is_id && !is_text && js_number(&j, &is_int) == 0 && is_int) {
                s.s = v;
                s.len = (size_t)(j.p - v);
                s.esc = 0;
            } else {
                return -1; /* mistyped: jansson's message */
            }
            if (is_id) {
                *id = s;
                *id_int = is_int;
                have_id = 1;
            }
            if (is_text) {
                *text = s;
                have_text = 1;
            }
        } else if (js_skip(&j, 1)) {
            return -1;
        }
        js_ws(&j);
        if (j.p >= j.e)
            return -1;
        if (*j.p == '}') {
            j.p++;
            break;
        }
        if (*j.p != ',')
            return -1;
        j.p++;
        js_ws(&j);
    }
    js_ws(&j);
    if (j.p != j.e || !have_text || (!by_line && !have_id))
        return -1;
    return 0;
}

static void batch_ids_room(struct batch *b, size_t n)
{
    if (b->ids_len + n <= b->ids_cap)
        return;
    size_t cap = b->ids_cap ? b->ids_cap * 2 : 16384;
    while (cap < b->ids_len + n)
        cap *= 2;
    b->ids = xrealloc(b->ids, cap);
    b->ids_cap = cap;
}

/* 1 if the record was signed here, 0 to hand it to jansson. */
static int sign_json_fast(struct worker *w, struct run *r, struct batch *b, struct doc *d,
                          simlsh_signature *sig)
{
    const char *line = b->arena + d->text_off;
    int by_line = !strcmp(r->opt->id_field, "-");
    struct jstr id = {NULL, 0, 0}, text = {NULL, 0, 0};
    int id_int = 0;
    if (js_record(line, d->text_len, r->opt->id_field, r->opt->text_field, by_line, &id, &id_int,
                  &text))
        return 0;
    if (!by_line) {
        batch_ids_room(b, id.len + 24);
        char *o = b->ids + b->ids_len;
        size_t n;
        if (id_int) { /* as jansson prints it: no sign on zero, no plus */
            long long v = strtoll((const char *)id.s, NULL, 10);
            n = (size_t)snprintf(o, 24, "%lld", v);
        } else {
            n = id.esc ? js_decode(&id, o) : (memcpy(o, id.s, id.len), id.len);
        }
        d->id_off = b->ids_len;
        d->id_len = n;
        d->id_type = id_int ? ID_INT : ID_STRING;
        b->ids_len += n;
    }
    if (!text.esc) {
        sign_text(r, d, sig, (const char *)text.s, text.len);
        return 1;
    }
    if (w->jcap < text.len) {
        w->jcap = text.len;
        w->jbuf = xrealloc(w->jbuf, w->jcap);
    }
    size_t n = js_decode(&text, w->jbuf);
    sign_text(r, d, sig, w->jbuf, n);
    return 1;
}

/* A UTF-8 byte order mark before the first record is not part of it, as
 * jq and Python's utf-8-sig read it (issue 31, F14). The document then
 * starts after it, so --output records and the second pass see the record
 * alone. */
static void skip_bom(struct batch *b, struct doc *d)
{
    const unsigned char *p = (const unsigned char *)b->arena + d->text_off;
    if (d->src_off == 0 && d->text_len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
        d->text_off += 3;
        d->text_len -= 3;
        d->src_off = 3;
    }
}

static void sign_json(struct run *r, struct batch *b, struct doc *d, simlsh_signature *sig)
{
    json_error_t jerr;
    json_t *obj = json_loadb(b->arena + d->text_off, d->text_len, JSON_ALLOW_NUL, &jerr);
    if (!obj) {
        d->status = DOC_EJSON;
        snprintf(d->msg, sizeof d->msg, "invalid JSON: %.80s (column %d)", jerr.text, jerr.column);
        return;
    }
    const char *idf = r->opt->id_field, *tf = r->opt->text_field;
    json_t *id = NULL, *text = NULL;
    int by_line = !strcmp(idf, "-"); /* the line number is the id */
    if (!json_is_object(obj)) {
        set_msg(d, DOC_EJSON, "%s", "invalid JSON: not an object");
    } else if (by_line) {
        if (!(text = json_object_get(obj, tf)))
            set_msg(d, DOC_EFIELD, "missing field \"%s\"", tf);
        else if (!json_is_string(text))
            set_msg(d, DOC_EFIELD, "field \"%s\" is not a string", tf);
        else
            sign_text(r, d, sig, json_string_value(text), json_string_length(text));
    } else if (!(id = json_object_get(obj, idf))) {
        set_msg(d, DOC_EFIELD, "missing field \"%s\"", idf);
    } else if (!json_is_string(id) && !json_is_integer(id)) {
        set_msg(d, DOC_EFIELD, "field \"%s\" is not a string or an integer", idf);
    } else if (!(text = json_object_get(obj, tf))) {
        set_msg(d, DOC_EFIELD, "missing field \"%s\"", tf);
    } else if (!json_is_string(text)) {
        set_msg(d, DOC_EFIELD, "field \"%s\" is not a string", tf);
    } else {
        char num[32];
        const char *ids;
        size_t idl;
        if (json_is_string(id)) {
            ids = json_string_value(id);
            idl = json_string_length(id);
        } else {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
            ids = num;
            idl = strlen(num);
        }
        if (b->ids_len + idl > b->ids_cap) {
            size_t cap = b->ids_cap ? b->ids_cap * 2 : 16384;
            while (cap < b->ids_len + idl)
                cap *= 2;
            b->ids = xrealloc(b->ids, cap);
            b->ids_cap = cap;
        }
        memcpy(b->ids + b->ids_len, ids, idl);
        d->id_off = b->ids_len;
        d->id_len = idl;
        d->id_type = json_is_string(id) ? ID_STRING : ID_INT;
        b->ids_len += idl;
        sign_text(r, d, sig, json_string_value(text), json_string_length(text));
    }
    json_decref(obj);
}
#endif

/* Room for n documents in b (their signatures are made when first used). */
static void batch_room(struct batch *b, size_t n)
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

static void arena_room(struct batch *b, size_t n)
{
    if (n <= b->arena_cap)
        return;
    size_t cap = b->arena_cap ? b->arena_cap : BATCH_BYTES;
    while (cap < n)
        cap *= 2;
    b->arena = xrealloc(b->arena, cap);
    b->arena_cap = cap;
}

static struct doc *batch_doc(struct batch *b, size_t input, int kind)
{
    batch_room(b, b->n + 1);
    struct doc *d = &b->docs[b->n++];
    memset(d, 0, offsetof(struct doc, msg));
    d->msg[0] = '\0';
    d->input = (uint32_t)input;
    d->kind = (uint8_t)kind;
    return d;
}

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

/* pread that retries interrupted calls; -1 with errno on failure. */
static ssize_t pread_full(int fd, char *buf, size_t len, uint64_t off)
{
    for (;;) {
        ssize_t got = pread(fd, buf, len, (off_t)off);
        if (got >= 0 || errno != EINTR)
            return got;
    }
}

#define RANGE_STEP (64u << 10) /* reads past a range's end, to finish its last line */

/* A worker's half of reading a line file: the lines that start in
 * [b->start, b->end) (the last range: to the end of the file), read with
 * pread into the batch's arena and split there, so the main thread never
 * touches the bytes. A line that starts before b->start belongs to the
 * range before, which reads on past its end to finish it. Line numbers are
 * counted from 1 within the range; the main thread, which consumes ranges
 * in order, adds the newlines of the ranges before. */
static void read_range(const struct run *r, struct batch *b)
{
    const struct input *in = &r->opt->inputs[b->input];
    int json = in->kind == INPUT_JSONL;
    uint64_t max = r->opt->max_doc_bytes;
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
            if (have > p) { /* a last line without its newline */
                line++;
                size_t l = have - p;
                if (l > max) {
                    struct doc *d = batch_doc(b, b->input, DOCK_TEXT);
                    d->line = line;
                    doc_skip(d, "line longer than --max-doc-bytes, skipped");
                } else if (!json || !is_blank(b->arena + p, l)) {
                    struct doc *d = batch_doc(b, b->input, json ? DOCK_JSON : DOCK_TEXT);
                    d->line = line;
                    d->src_off = lstart;
                    d->text_off = p;
                    d->text_len = !json && b->arena[p + l - 1] == '\r' ? l - 1 : l;
                    d->bytes = l;
                    d->mtime_ns = b->mtime;
                }
            }
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
        line++;
        newlines++;
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
            d->bytes = l + 1;
            d->mtime_ns = b->mtime;
        }
        p += l + 1;
    }
    b->arena_len = have;
    b->newlines = newlines;
}

static void sign_batch(struct worker *w, struct batch *b)
{
    struct run *r = w->r;
    if (b->is_range) {
        double c0 = thread_cpu_seconds();
        read_range(r, b);
        b->cpu_read = thread_cpu_seconds() - c0;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct doc *d = &b->docs[i];
        if (d->status != DOC_OK)
            continue; /* skipped while reading */
        /* One signature object per thread: its buffers grow with the
         * documents signed, too large to keep one per queued document. */
        if (!w->sig) {
            int rc = simlsh_signature_new(&w->sig, r->params);
            if (rc != 0) {
                d->status = DOC_ELIB;
                d->err = rc;
                continue;
            }
        }
        simlsh_signature *sig = w->sig;
        int rc = simlsh_signature_clear(sig);
        if (rc != 0) {
            d->status = DOC_ELIB;
            d->err = rc;
            continue;
        }
        switch (d->kind) {
        case DOCK_PATH: {
            size_t len = 0;
            const char *path = strlist_get(&r->paths, d->path, NULL);
            if (read_path_doc(w, r, path, d, &len) != 0)
                break;
            d->bytes = len;
            sign_text(r, d, sig, w->buf, len);
            break;
        }
        case DOCK_TEXT:
            sign_text(r, d, sig, b->arena + d->text_off, d->text_len);
            break;
#if DEDUP_HAVE_JANSSON
        case DOCK_JSON:
            skip_bom(b, d);
            if (r->json_slow || !sign_json_fast(w, r, b, d, sig))
                sign_json(r, b, d, sig);
            break;
#endif
        default:
            break;
        }
        if (d->status != DOC_OK)
            continue;
        /* The values are what the index stores: insertion then needs no
         * signature object, so none is held across batches. */
        if (b->values_cap < b->cap) {
            b->values = xrealloc(b->values, b->cap * r->num_perm * sizeof *b->values);
            b->values_cap = b->cap;
        }
        size_t count = 0;
        rc = simlsh_signature_values(b->values + i * r->num_perm, r->num_perm, &count, sig);
        if (rc != 0) {
            d->status = DOC_ELIB;
            d->err = rc;
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->r;
    double cpu_read = 0, cpu_sign = 0;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!r->todo_head && !r->stopping)
            pthread_cond_wait(&r->work_cv, &r->mu);
        struct batch *b = r->stopping ? NULL : r->todo_head;
        if (!b) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        r->todo_head = b->todo_next;
        if (!r->todo_head)
            r->todo_tail = NULL;
        pthread_mutex_unlock(&r->mu);

        double c0 = thread_cpu_seconds();
        sign_batch(w, b);
        double c = thread_cpu_seconds() - c0;
        cpu_read += b->cpu_read;
        cpu_sign += c - b->cpu_read;

        pthread_mutex_lock(&r->mu);
        b->done = 1;
        pthread_cond_broadcast(&r->done_cv);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_lock(&r->mu);
    r->worker_cpu[w->index] = thread_cpu_seconds();
    r->cpu_reading += cpu_read;
    r->cpu_signing += cpu_sign;
    pthread_mutex_unlock(&r->mu);
    simlsh_signature_free(w->sig);
    free(w->jbuf);
    free(w->buf);
    free(w);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Batches and the in-order consumer (main thread)                          */
/* ------------------------------------------------------------------------ */

static struct worker main_worker; /* the main thread signs when -j 1 */

static struct batch *batch_new(void)
{
    struct batch *b = calloc(1, sizeof *b);
    if (!b)
        die_oom();
    batch_room(b, BATCH_DOCS);
    arena_room(b, BATCH_BYTES + 2 * RANGE_STEP); /* a range and its overrun */
    b->fd = -1;
    return b;
}

static void batch_free(struct batch *b)
{
    free(b->docs);
    free(b->values);
    free(b->arena);
    free(b->ids);
    free(b);
}

void doc_name(struct run *r, const struct batch *b, const struct doc *d, const char **s,
              size_t *len, char *tmp, size_t tmpcap)
{
    const struct input *in = &r->opt->inputs[d->input];
    switch (d->kind) {
    case DOCK_PATH:
        *s = strlist_get(&r->paths, d->path, len);
        return;
    case DOCK_JSON:
        if (d->id_type != ID_NONE) {
            *s = b->ids + d->id_off;
            *len = d->id_len;
            return;
        }
        break;
    default:
        if (in->kind == INPUT_STDIN) {
            *s = "-";
            *len = 1;
            return;
        }
        break;
    }
    /* tmpcap is at least doc_name_cap(): a cut name would collide with
     * another line's (issue 31, F9) */
    int n;
    if (r->lines_prefix)
        n = snprintf(tmp, tmpcap, "%s:%llu", in->arg, (unsigned long long)d->line);
    else
        n = snprintf(tmp, tmpcap, "%llu", (unsigned long long)d->line);
    if (n < 0 || (size_t)n >= tmpcap)
        abort();
    *s = tmp;
    *len = (size_t)n;
}

/* Bytes doc_name() and doc_where() may need for a document of input i:
 * the input's name, a colon, a 64-bit line number and the NUL. */
size_t doc_name_cap(const struct run *r, uint32_t input)
{
    return strlen(r->opt->inputs[input].arg) + 24;
}

/* Where a message about document d points: "FILE:LINE" or the path. */
static void doc_where(struct run *r, const struct doc *d, char *buf, size_t cap)
{
    const struct input *in = &r->opt->inputs[d->input];
    if (d->kind == DOCK_PATH)
        snprintf(buf, cap, "%s", strlist_get(&r->paths, d->path, NULL));
    else if (in->kind == INPUT_STDIN)
        snprintf(buf, cap, "<stdin>");
    else
        snprintf(buf, cap, "%s:%llu", strcmp(in->arg, "-") ? in->arg : "<stdin>",
                 (unsigned long long)d->line);
}

static void progress_update(struct run *r, int force)
{
    if (!r->progress)
        return;
    double t = now_seconds();
    if (!force && t - r->t_last_progress < 0.25)
        return;
    r->t_last_progress = t;
    double el = t - r->t_start;
    double rate = el > 0 ? (double)r->bytes / el : 0;
    char done[32], eta[48] = "";
    human_bytes(done, sizeof done, (double)r->bytes);
    if (r->total_known && rate > 0 && r->total_bytes > r->bytes)
        snprintf(eta, sizeof eta, "  ETA %.0f s", (double)(r->total_bytes - r->bytes) / rate);
    fprintf(stderr, "\r\033[Ksimlsh-dedup: %llu documents, %s, %.1f MB/s%s",
            (unsigned long long)r->docs, done, rate / 1e6, eta);
    fflush(stderr);
}

static void ensure_locs(struct run *r, uint64_t k)
{
    if (k < r->locs_cap)
        return;
    size_t cap = r->locs_cap ? r->locs_cap * 2 : 4096;
    while (cap <= k)
        cap *= 2;
    r->locs = xrealloc(r->locs, cap * sizeof *r->locs);
    r->locs_cap = cap;
}

void ensure_idmeta(struct run *r, uint64_t id)
{
    if (id < r->idmeta_cap)
        return;
    size_t cap = r->idmeta_cap ? r->idmeta_cap * 2 : 4096;
    while (cap <= id)
        cap *= 2;
    r->id_bytes = xrealloc(r->id_bytes, cap * sizeof *r->id_bytes);
    r->id_mtime = xrealloc(r->id_mtime, cap * sizeof *r->id_mtime);
    memset(r->id_bytes + r->idmeta_cap, 0, (cap - r->idmeta_cap) * sizeof *r->id_bytes);
    memset(r->id_mtime + r->idmeta_cap, 0, (cap - r->idmeta_cap) * sizeof *r->id_mtime);
    r->idmeta_cap = cap;
}

static uint64_t hash_name(const char *s, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}

/* A JSONL id seen before in this run is reported (it stays a document:
 * its text may differ), so outputs that name it are known to be ambiguous. */
static void check_duplicate_id(struct run *r, uint64_t id, const struct doc *d)
{
    if (2 * (r->idset_n + 1) > r->idset_cap) {
        size_t cap = r->idset_cap ? r->idset_cap * 2 : 1024;
        struct idslot *t = calloc(cap, sizeof *t);
        if (!t)
            die_oom();
        for (size_t i = 0; i < r->idset_cap; i++) {
            if (!r->idset[i].id1)
                continue;
            size_t l;
            const char *s = strlist_get(&r->names, r->idset[i].id1 - 1, &l);
            size_t k = (size_t)hash_name(s, l) & (cap - 1);
            while (t[k].id1)
                k = (k + 1) & (cap - 1);
            t[k] = r->idset[i];
        }
        free(r->idset);
        r->idset = t;
        r->idset_cap = cap;
    }
    size_t len, l2;
    const char *s = strlist_get(&r->names, id, &len);
    size_t k = (size_t)hash_name(s, len) & (r->idset_cap - 1);
    while (r->idset[k].id1) {
        const char *t = strlist_get(&r->names, r->idset[k].id1 - 1, &l2);
        if (l2 == len && !memcmp(s, t, len)) {
            const char *a1 = r->opt->inputs[d->input].arg;
            const char *a0 = r->opt->inputs[r->idset[k].input].arg;
            r->duplicate_ids++;
            warnx_doc(r, "%s:%llu: duplicate id %s (first at %s:%llu)",
                      qname(strcmp(a1, "-") ? a1 : "<stdin>"), (unsigned long long)d->line,
                      qnamen(s, len), qname(strcmp(a0, "-") ? a0 : "<stdin>"),
                      (unsigned long long)r->idset[k].line);
            return;
        }
        k = (k + 1) & (r->idset_cap - 1);
    }
    r->idset[k].id1 = id + 1;
    r->idset[k].line = d->line;
    r->idset[k].input = d->input;
    r->idset_n++;
}

/* Insert the documents waiting in r->ins_*: one call on the run's threads,
 * in id order, which builds the index that inserting them one at a time
 * would (the library's promise). Gathering several batches first gives the
 * call enough work to use its threads.
 *
 * With threads the call runs on a thread of its own (insert_main) while
 * the main thread goes on handing batches to the signing workers and
 * queueing their documents in the other buffer: a call made by the main
 * thread left the workers idle once the few batches in flight were signed
 * (on 2 cores, about a tenth of the read phase). Calls still come one
 * after the other, in id order: the next waits for the last
 * (inserts_wait), so the index is the same. */
static int insert_now(struct run *r, const uint64_t *ids, const uint32_t *values, size_t n,
                      double *wall, double *cpu)
{
    double t0 = now_seconds(), c0 = thread_cpu_seconds();
    int rc = simlsh_index_insert_values(r->index, ids, values, n, (uint32_t)r->nthreads);
    *wall = now_seconds() - t0;
    *cpu = thread_cpu_seconds() - c0;
    return rc;
}

static int insert_failed(struct run *r, const uint64_t *ids, size_t n, int rc)
{
    fprintf(stderr, "simlsh-dedup: cannot index documents %llu to %llu: %s\n",
            (unsigned long long)ids[0], (unsigned long long)ids[n - 1], simlsh_strerror(rc));
    r->failed = EXIT_DEDUP_INTERNAL;
    return -1;
}

/* One insert call made by this thread, counted. */
static int insert_here(struct run *r, const uint64_t *ids, const uint32_t *values, size_t n)
{
    double wall = 0, cpu = 0;
    int rc = insert_now(r, ids, values, n, &wall, &cpu);
    r->wall_inserting += wall;
    r->cpu_inserting += cpu;
    return rc != 0 ? insert_failed(r, ids, n, rc) : 0;
}

static void *insert_main(void *arg)
{
    struct run *r = arg;
    r->ins_async.rc = insert_now(r, r->ins_async.ids, r->ins_async.values, r->ins_async.n,
                                 &r->ins_async.wall, &r->ins_async.cpu);
    return NULL;
}

/* Waits for the insert call on its own thread, if one runs. */
static int inserts_wait(struct run *r)
{
    if (!r->ins_async.running)
        return 0;
    pthread_join(r->ins_async.thread, NULL);
    r->ins_async.running = 0;
    r->wall_inserting += r->ins_async.wall;
    r->cpu_inserting += r->ins_async.cpu;
    if (r->ins_async.rc != 0)
        return insert_failed(r, r->ins_async.ids, r->ins_async.n, r->ins_async.rc);
    return 0;
}

static int flush_inserts(struct run *r)
{
    if (inserts_wait(r) != 0)
        return -1;
    /* The removals of --replace queued since the last call, before the
     * next insert call starts: the index has one writer at a time. They
     * come between the same insert calls as in a run without the thread,
     * so the index is the same. */
    if (store_apply_drops(r) != 0)
        return -1;
    if (r->ins_n == 0)
        return 0;
    if (r->sigs) { /* the MPI driver keeps values, no index */
        if (r->ins_ids[0] != r->sigs->n || r->ins_ids[r->ins_n - 1] != r->sigs->n + r->ins_n - 1)
            return insert_failed(r, r->ins_ids, r->ins_n, SIMLSH_EINVAL);
        sigstore_append(r->sigs, r->ins_values, r->ins_n); /* ids are consecutive */
        r->ins_n = 0;
        return 0;
    }
    if (r->nthreads > 1) {
        /* the queue goes to the insert thread; the spare buffer becomes
         * the queue */
        uint64_t *ids = r->ins_async.ids;
        uint32_t *values = r->ins_async.values;
        size_t cap = r->ins_async.cap;
        r->ins_async.ids = r->ins_ids;
        r->ins_async.values = r->ins_values;
        r->ins_async.cap = r->ins_cap;
        r->ins_async.n = r->ins_n;
        r->ins_ids = ids;
        r->ins_values = values;
        r->ins_cap = cap;
        r->ins_n = 0;
        if (pthread_create(&r->ins_async.thread, NULL, insert_main, r) == 0) {
            r->ins_async.running = 1;
            return 0;
        }
        /* no thread: the call is made here */
        return insert_here(r, r->ins_async.ids, r->ins_async.values, r->ins_async.n);
    }
    if (insert_here(r, r->ins_ids, r->ins_values, r->ins_n) != 0)
        return -1;
    r->ins_n = 0;
    return 0;
}

/* Queue document id with its values (num_perm x 4 bytes: a copy far
 * smaller than the text, and it frees the batch at once). */
static void queue_insert(struct run *r, uint64_t id, const struct batch *b, size_t i)
{
    if (r->ins_n == r->ins_cap) {
        r->ins_cap = r->ins_cap ? r->ins_cap * 2 : r->ins_flush + 1;
        r->ins_ids = xrealloc(r->ins_ids, r->ins_cap * sizeof *r->ins_ids);
        r->ins_values = xrealloc(r->ins_values, r->ins_cap * r->num_perm * sizeof *r->ins_values);
    }
    r->ins_ids[r->ins_n] = id;
    memcpy(r->ins_values + r->ins_n * r->num_perm, b->values + i * r->num_perm,
           r->num_perm * sizeof *r->ins_values);
    r->ins_n++;
}

/* Consume a signed batch: report its bad documents and name the good ones
 * in input order, and queue them for insertion. */
static int consume(struct run *r, struct batch *b)
{
    static char *namebuf; /* main thread only; grows to the longest name */
    static size_t namebuf_cap;
    if (b->is_range) {
        const struct input *in = &r->opt->inputs[b->input];
        if (b->start == (in->ranged ? in->range_beg : 0)) { /* the first range of an input */
            r->range_lines = in->ranged ? in->line0 : 0;
            r->range_stopped = 0;
        }
        if (r->range_stopped)
            return 0;
        for (size_t i = 0; i < b->n; i++)
            b->docs[i].line += r->range_lines;
    }
    for (size_t i = 0; i < b->n && !r->failed; i++) {
        struct doc *d = &b->docs[i];
        /* names of any length, never cut: PATH_MAX is 4096 */
        size_t need = doc_name_cap(r, d->input);
        if (d->kind == DOCK_PATH) {
            size_t plen;
            strlist_get(&r->paths, d->path, &plen);
            need = plen + 1 > need ? plen + 1 : need;
        }
        if (need > namebuf_cap) {
            free(namebuf);
            namebuf = xmalloc(need);
            namebuf_cap = need;
        }
        if (d->status != DOC_OK) {
            char *where = namebuf;
            doc_where(r, d, where, namebuf_cap);
            int rc;
            switch (d->status) {
            case DOC_EEMPTY:
                rc = skip_input(r, where, strlen(where), "empty document, skipped");
                break;
            case DOC_ELIB:
                rc = skip_input(r, where, strlen(where), "%s", simlsh_strerror(d->err));
                if (d->err == SIMLSH_ENOMEM) {
                    r->failed = EXIT_DEDUP_INTERNAL;
                    return -1;
                }
                break;
            default:
                rc = skip_input(r, where, strlen(where), "%s", d->msg);
                break;
            }
            if (rc)
                return -1;
            continue;
        }
        const char *name;
        size_t len;
        doc_name(r, b, d, &name, &len, namebuf, namebuf_cap);
        /* a name already in the --index file: skipped, or replaced */
        int admit = store_admit(r, name, len, d->bytes, d->mtime_ns, d->kind == DOCK_PATH);
        if (admit < 0)
            return -1;
        if (admit == 0)
            continue;
        uint64_t id = r->names.count;
        queue_insert(r, id, b, i);
        /* size 1 marks a name that is a JSON integer (--format jsonl) */
        int is_int = d->kind == DOCK_JSON &&
                     (d->id_type == ID_INT || (d->id_type == ID_NONE && !r->lines_prefix));
        strlist_add(&r->names, name, len, (uint64_t)is_int);
        if (d->kind == DOCK_JSON && d->id_type != ID_NONE)
            check_duplicate_id(r, id, d);
        if (r->opt->output == OUT_RECORDS || r->opt->output == OUT_DROP_RECORDS)
            strlist_add(&r->records, b->arena + d->text_off, d->text_len, 0);
        ensure_idmeta(r, id);
        ensure_locs(r, id - r->first_new);
        struct docloc *loc = &r->locs[id - r->first_new];
        loc->input = d->input;
        loc->kind = d->kind;
        loc->where = d->kind == DOCK_PATH ? (uint64_t)d->path : d->src_off;
        loc->len = d->kind == DOCK_PATH ? 0 : d->text_len;
        r->id_bytes[id] = d->bytes;
        r->id_mtime[id] = d->mtime_ns;
        r->docs++;
        r->bytes += d->bytes;
    }
    if (b->is_range && !r->failed) {
        uint64_t before = r->range_lines;
        r->range_lines += b->newlines;
        if (b->read_err) {
            const char *arg = r->opt->inputs[b->input].arg;
            r->range_stopped = 1;
            r->inputs_cut++;
            if (skip_input(r, arg, strlen(arg), "read error: %s after line %llu",
                           strerror(b->read_err), (unsigned long long)(before + b->read_line)))
                return -1;
        }
    }
    if (r->ins_n >= r->ins_flush && flush_inserts(r))
        return -1;
    progress_update(r, 0);
    return r->failed ? -1 : 0;
}

static void batch_reset(struct batch *b)
{
    b->n = 0;
    b->arena_len = 0;
    b->ids_len = 0;
    b->done = 0;
    b->next = NULL;
    b->is_range = b->last_range = b->close_fd = 0;
    b->fd = -1;
    b->newlines = 0;
    b->read_err = 0;
    b->read_line = 0;
    b->cpu_read = 0;
}

/* Wait for the oldest submitted batch, insert it, recycle it. */
static int consume_oldest(struct run *r)
{
    struct batch *b = r->pend_head;
    if (!b)
        return 0;
    if (r->nworkers) {
        pthread_mutex_lock(&r->mu);
        if (!b->done) {
            double t0 = now_seconds();
            while (!b->done)
                pthread_cond_wait(&r->done_cv, &r->mu);
            r->wall_waiting += now_seconds() - t0;
        }
        pthread_mutex_unlock(&r->mu);
    }
    r->pend_head = b->next;
    if (!r->pend_head)
        r->pend_tail = NULL;
    int rc = consume(r, b);
    if (b->is_range && b->close_fd)
        close(b->fd); /* every range of the input is consumed */
    batch_reset(b);
    b->next = r->free_list;
    r->free_list = b;
    return rc;
}

static int submit(struct run *r)
{
    struct batch *b = r->cur;
    r->cur = NULL;
    if (!b)
        return 0;
    if (b->n == 0 && !b->is_range) {
        b->next = r->free_list;
        r->free_list = b;
        return 0;
    }
    b->seq = r->next_seq++;
    b->next = NULL;
    if (r->pend_tail)
        r->pend_tail->next = b;
    else
        r->pend_head = b;
    r->pend_tail = b;
    if (r->nworkers == 0) {
        double c0 = thread_cpu_seconds();
        sign_batch(&main_worker, b);
        r->cpu_reading += b->cpu_read;
        r->cpu_signing += thread_cpu_seconds() - c0 - b->cpu_read;
        b->done = 1;
        return consume_oldest(r);
    }
    b->todo_next = NULL;
    pthread_mutex_lock(&r->mu);
    if (r->todo_tail)
        r->todo_tail->todo_next = b;
    else
        r->todo_head = b;
    r->todo_tail = b;
    pthread_cond_signal(&r->work_cv);
    pthread_mutex_unlock(&r->mu);
    return 0;
}

/* The batch being filled; when every batch is in flight, wait for the
 * oldest, which bounds memory to a few batches per thread. */
static struct batch *current_batch(struct run *r)
{
    if (r->cur)
        return r->cur;
    while (!r->free_list) {
        if (consume_oldest(r))
            return NULL;
    }
    r->cur = r->free_list;
    r->free_list = r->cur->next;
    r->cur->next = NULL;
    return r->cur;
}

static struct doc *new_doc(struct run *r, size_t input, int kind, size_t text_len)
{
    struct batch *b = r->cur;
    if (b && (b->n == BATCH_DOCS || (b->n > 0 && b->arena_len + text_len > b->arena_cap))) {
        if (submit(r))
            return NULL;
    }
    b = current_batch(r);
    if (!b)
        return NULL;
    arena_room(b, b->arena_len + text_len);
    return batch_doc(b, input, kind);
}

static int add_text_doc(struct run *r, size_t input, int kind, uint64_t line, uint64_t off,
                        const char *text, size_t len, uint64_t bytes, int64_t mtime)
{
    struct doc *d = new_doc(r, input, kind, len);
    if (!d)
        return -1;
    struct batch *b = r->cur;
    memcpy(b->arena + b->arena_len, text, len);
    d->text_off = b->arena_len;
    d->text_len = len;
    b->arena_len += len;
    d->line = line;
    d->src_off = off;
    d->bytes = bytes;
    d->mtime_ns = mtime;
    return 0;
}

static int add_path_doc(struct run *r, size_t input, size_t path)
{
    struct doc *d = new_doc(r, input, DOCK_PATH, 0);
    if (!d)
        return -1;
    d->path = path;
    d->bytes = r->paths.size[path]; /* replaced by the bytes actually read */
    return 0;
}

static int emit_line(struct run *r, size_t input, int json, uint64_t line, uint64_t off,
                     const char *s, size_t len, uint64_t bytes, int64_t mtime)
{
    if (json) {
        /* Blank lines between JSON objects are tolerated, as most JSONL
         * writers and readers do. */
        if (is_blank(s, len))
            return 0;
        return add_text_doc(r, input, DOCK_JSON, line, off, s, len, bytes, mtime);
    }
    if (len > 0 && s[len - 1] == '\r')
        len--; /* CRLF files */
    return add_text_doc(r, input, DOCK_TEXT, line, off, s, len, bytes, mtime);
}

/* A line too long to hold travels as a skipped document, so that its
 * message comes in input order among the others, whatever -j is. */
static int skip_line(struct run *r, size_t input, uint64_t line)
{
    struct doc *d = new_doc(r, input, DOCK_TEXT, 0);
    if (!d)
        return -1;
    d->line = line;
    doc_skip(d, "line longer than --max-doc-bytes, skipped");
    return 0;
}

/* A file whose first bytes are no gzip or zstd magic is read by ranges. */
static int is_compressed(int fd)
{
    unsigned char m[4];
    ssize_t got = pread_full(fd, (char *)m, sizeof m, 0);
    return (got >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
           (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
}

/* Bytes per range: a few hundred documents of a few KiB, enough to keep
 * the per-range costs (a batch handed over, a read past the end) small.
 * SIMLSH_DEDUP_RANGE_BYTES (undocumented) sets it, so that the tests can
 * put range boundaries into a small file. */
static uint64_t range_bytes(void)
{
    const char *e = getenv("SIMLSH_DEDUP_RANGE_BYTES");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0)
            return v;
    }
    return UINT64_C(1) << 20;
}

/* An uncompressed line file: the main thread only cuts it into ranges that
 * the workers read, split and parse (read_range); ranges are consumed in
 * order, so ids and line numbers are those of a sequential read. The last
 * range reads to the end of the file, however long it has grown. A ranged
 * input (the MPI driver's share of a file, cut at line starts) is read
 * from range_beg to range_end only, its lines numbered after line0. */
static int read_ranges(struct run *r, size_t input, int fd, uint64_t size, int64_t mtime)
{
    if (submit(r)) { /* documents before this input go first */
        close(fd);
        return -1;
    }
    const struct input *in = &r->opt->inputs[input];
    uint64_t beg = in->ranged ? in->range_beg : 0;
    uint64_t stop = in->ranged && in->range_end < size ? in->range_end : UINT64_MAX;
    uint64_t step = r->range_bytes;
    for (uint64_t s = beg;; s += step) {
        struct batch *b = current_batch(r);
        if (!b) {
            close(fd);
            return -1;
        }
        b->is_range = 1;
        b->input = (uint32_t)input;
        b->fd = fd;
        b->mtime = mtime;
        b->start = s;
        b->last_range = stop == UINT64_MAX && (size <= s || size - s <= step);
        b->end = b->last_range ? UINT64_MAX : s + step;
        if (b->end >= stop)
            b->end = stop;
        b->close_fd = b->last_range || b->end == stop;
        int last = b->close_fd; /* b may be consumed and reused by submit */
        if (submit(r))
            return -1; /* on failure the fd is closed at exit */
        if (last)
            return 0;
    }
}

/* Large sequential reads, split at newlines; each line is copied into the
 * batch that carries it, so reading never waits for signing to release a
 * buffer, and standard input works like a file. A line longer than
 * --max-doc-bytes is skipped without being held, so memory stays bounded
 * whatever the input. */
static int read_lines(struct run *r, size_t input)
{
    const struct input *in = &r->opt->inputs[input];
    int json = in->kind == INPUT_JSONL;
    int use_stdin = !strcmp(in->arg, "-");
    const char *shown = use_stdin ? "<stdin>" : in->arg;
    int64_t mtime = 0;
    int fd = STDIN_FILENO;
    if (use_stdin && in->ranged) {
        /* simlsh-dedup-mpi: this rank's share of its copy of standard
         * input, a regular file (tools/mpi/mpi-store.c), read like a file's */
        struct stat st;
        int fd0 = dup(STDIN_FILENO);
        if (fd0 < 0 || fstat(fd0, &st) != 0) {
            int e = errno;
            if (fd0 >= 0)
                close(fd0);
            return skip_input(r, shown, strlen(shown), "%s", strerror(e));
        }
        return read_ranges(r, input, fd0, (uint64_t)st.st_size, 0);
    }
    if (!use_stdin) {
        struct stat st;
        char msg[160];
        fd = open_regular(in->arg, &st, msg, sizeof msg);
        if (fd < 0)
            return skip_input(r, shown, strlen(shown), "%s", msg);
        mtime = mtime_ns(&st);
        if (!is_compressed(fd))
            return read_ranges(r, input, fd, (uint64_t)st.st_size, mtime);
    }
    struct reader rd;
    int rc = 0;
    if (reader_open(&rd, fd) != 0) {
        rc = skip_input(r, shown, strlen(shown), "%s", rd.msg);
        reader_close(&rd);
        if (!use_stdin)
            close(fd);
        return rc;
    }
    reader_limit(&rd, r->opt->max_input_bytes, r->opt->max_ratio);
    uint64_t max = r->opt->max_doc_bytes;
    size_t cap = 4u << 20, len = 0;
    char *buf = xmalloc(cap);
    uint64_t line = 0;
    uint64_t base = 0;  /* stream offset of buf[0] */
    int discarding = 0; /* inside a line longer than max */
    for (;;) {
        ssize_t got = reader_read(&rd, buf + len, cap - len);
        if (got < 0) {
            /* The rest of the input is lost, and the answer with it: never
             * a silent exit 0 (issue 31, F10), and the offsets say where,
             * as gzip -t and zstd -t do. */
            char why[320];
            if (rd.codec != CODEC_PLAIN)
                snprintf(why, sizeof why,
                         "%s at compressed byte %llu (decompressed byte %llu), after line %llu;"
                         " the rest of the input is not read",
                         rd.msg, (unsigned long long)reader_offset(&rd),
                         (unsigned long long)rd.out_total, (unsigned long long)line);
            else
                snprintf(why, sizeof why, "%s after line %llu; the rest of the input is not read",
                         rd.msg, (unsigned long long)line);
            r->inputs_cut++;
            /* after the messages about the lines before */
            rc = submit(r);
            while (rc == 0 && r->pend_head)
                rc = consume_oldest(r);
            if (rc == 0)
                rc = skip_input(r, shown, strlen(shown), "%s", why);
            break;
        }
        if (got == 0) {
            if (discarding)
                rc = skip_line(r, input, ++line);
            else if (len > 0)
                rc = emit_line(r, input, json, ++line, base, buf, len, len, mtime);
            break;
        }
        len += (size_t)got;
        size_t start = 0;
        const char *nl;
        while (rc == 0 && (nl = memchr(buf + start, '\n', len - start)) != NULL) {
            size_t l = (size_t)(nl - (buf + start));
            if (discarding) {
                discarding = 0;
                rc = skip_line(r, input, ++line);
            } else if (l > max) {
                rc = skip_line(r, input, ++line);
            } else {
                rc = emit_line(r, input, json, ++line, base + start, buf + start, l, l + 1, mtime);
            }
            start += l + 1;
        }
        if (rc)
            break;
        memmove(buf, buf + start, len - start);
        len -= start;
        base += start;
        if (discarding || len > max) {
            discarding = 1;
            base += len;
            len = 0;
        } else if (len == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
    }
    free(buf);
    reader_close(&rd);
    if (!use_stdin)
        close(fd);
    return rc;
}

/* "-": standard input as one document, bounded like a file. */
static int read_stdin_doc(struct run *r, size_t input)
{
    struct worker w;
    memset(&w, 0, sizeof w);
    w.r = r;
    struct doc d;
    memset(&d, 0, sizeof d);
    struct reader rd;
    size_t len = 0;
    int bad = reader_open(&rd, STDIN_FILENO);
    if (bad)
        doc_skip(&d, "%s", rd.msg);
    else
        bad = read_bounded(&w, r, &rd, 0, &d, &len);
    reader_close(&rd);
    int rc = bad ? skip_input(r, "<stdin>", 7, "%s", d.msg)
                 : add_text_doc(r, input, DOCK_TEXT, 0, 0, w.buf, len, len, 0);
    free(w.buf);
    return rc;
}

int run_inputs(struct run *r)
{
    const struct options *opt = r->opt;
    int rc = 0;
    for (size_t i = 0; i < opt->ninputs && rc == 0; i++) {
        const struct input *in = &opt->inputs[i];
        switch (in->kind) {
        case INPUT_PATHS:
            for (size_t p = 0; p < in->npaths && rc == 0; p++)
                if (r->pmeta[in->first_path + p].alias_of == SIZE_MAX)
                    rc = add_path_doc(r, i, in->first_path + p);
            break;
        case INPUT_STDIN:
            rc = read_stdin_doc(r, i);
            break;
        case INPUT_LINES:
        case INPUT_JSONL:
            rc = read_lines(r, i);
            break;
        case INPUT_LIST: /* expanded by parse_args */
            break;
        }
    }
    if (rc == 0)
        rc = submit(r);
    while (rc == 0 && r->pend_head)
        rc = consume_oldest(r);
    if (rc == 0)
        rc = flush_inserts(r);
    if (inserts_wait(r) != 0) /* also after an error: the thread ends first */
        rc = -1;
    r->cpu_main_read = thread_cpu_seconds();
    progress_update(r, 1);
    if (r->progress)
        fputs("\r\033[K", stderr);
    return rc ? -1 : 0;
}

/* Documents a line file holds, estimated from the mean length of the
 * lines in three blocks (start, middle, end; a file too short to tell
 * gives its size over 64): enough to reserve the run's per-document arrays
 * and the index once, instead of growing them by copies while reading. */
static uint64_t estimate_lines(const char *path)
{
    struct stat st;
    char msg[160];
    int fd = open_regular(path, &st, msg, sizeof msg);
    if (fd < 0)
        return 0;
    uint64_t est = 0, size = (uint64_t)st.st_size;
    if (!is_compressed(fd) && size > 0) {
        size_t cap = 64u << 10;
        char *buf = xmalloc(cap);
        uint64_t lines = 0, bytes = 0;
        uint64_t at[3] = {0, size / 2, size > cap ? size - cap : 0};
        for (int k = 0; k < 3; k++) {
            ssize_t got = pread_full(fd, buf, cap, at[k]);
            const char *first = NULL, *last = NULL, *e = buf + (got > 0 ? got : 0);
            uint64_t n = 0;
            for (const char *p = buf; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) {
                if (!first)
                    first = p;
                last = p;
                n++;
            }
            if (n >= 2) { /* whole lines between the first and last newline */
                lines += n - 1;
                bytes += (uint64_t)(last - first);
            }
        }
        free(buf);
        uint64_t mean = lines >= 8 ? bytes / lines : 64;
        est = size / (mean ? mean : 1) + 1;
    }
    close(fd);
    return est;
}

static void reserve_for_inputs(struct run *r)
{
    uint64_t est = 0;
    for (size_t i = 0; i < r->opt->ninputs; i++) {
        const struct input *in = &r->opt->inputs[i];
        if (in->kind == INPUT_PATHS)
            est += in->npaths;
        else if ((in->kind == INPUT_LINES || in->kind == INPUT_JSONL) && strcmp(in->arg, "-"))
            est += estimate_lines(in->arg);
    }
    if (est < 4096)
        return;
    /* A guess a few percent high costs little; beyond 16 Mi documents the
     * arrays grow by realloc (large blocks move by remapping, not copying)
     * rather than trust a sample with so much at stake. */
    est += est / 16;
    if (est > (UINT64_C(1) << 24))
        est = UINT64_C(1) << 24;
    size_t n = (size_t)est;
    /* on the run's threads: the first touch of the tables (page faults,
     * and compaction for huge pages when memory is fragmented) took up to
     * half the main thread's CPU time on the 1 GiB benchmark at -j 16 */
    if (!r->sigs)
        simlsh_index_reserve_v2(
            r->index, (size_t)r->first_new + n,
            (uint32_t)(r->nthreads > 0 ? r->nthreads : 1)); /* ENOMEM: grows later */
    ensure_locs(r, n - 1);
    ensure_idmeta(r, r->first_new + n - 1);
    /* names of line documents are short: line numbers, ids */
    if (r->names.cap_off < r->names.count + n + 2) {
        r->names.cap_off = r->names.count + n + 2;
        r->names.off = xrealloc(r->names.off, r->names.cap_off * sizeof *r->names.off);
        r->names.size = xrealloc(r->names.size, r->names.cap_off * sizeof *r->names.size);
    }
    if (r->names.cap < r->names.len + n * 8) {
        r->names.cap = r->names.len + n * 8;
        r->names.buf = xrealloc(r->names.buf, r->names.cap);
    }
}

int run_pipeline_start(struct run *r)
{
    main_worker.r = r;
    r->nworkers = r->nthreads > 1 ? (size_t)r->nthreads : 0;
    r->range_bytes = range_bytes();
    /* undocumented: every record through jansson, to compare (tests) */
    r->json_slow = getenv("SIMLSH_DEDUP_JSON_SLOW") != NULL;
    reserve_for_inputs(r);
    /* Insert calls get enough documents to use the run's threads: the
     * library gives a thread about 64 Ki band insertions. */
    uint32_t bands = 0, rows = 0;
    simlsh_index_bands(&bands, &rows, r->index);
    int64_t np = 0;
    simlsh_params_get_int(r->params, SIMLSH_PARAM_NUM_PERM, &np);
    r->num_perm = np > 0 ? (size_t)np : 1;
    uint64_t per = (UINT64_C(65536) * (uint64_t)r->nthreads) / ((uint64_t)bands + 1) + 1;
    r->ins_flush = per < 1024 ? 1024 : per > (1u << 17) ? (1u << 17) : (size_t)per;
    r->worker_cpu = calloc(r->nworkers ? r->nworkers : 1, sizeof *r->worker_cpu);
    if (!r->worker_cpu)
        die_oom();
    /* Three batches per worker keep every worker busy while the main thread
     * fills the next batch and inserts the oldest one. */
    size_t nbatches = r->nworkers ? r->nworkers * 3 : 1;
    for (size_t i = 0; i < nbatches; i++) {
        struct batch *b = batch_new();
        b->next = r->free_list;
        r->free_list = b;
    }
    if (!r->nworkers)
        return 0;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work_cv, NULL);
    pthread_cond_init(&r->done_cv, NULL);
    r->workers = xmalloc(r->nworkers * sizeof *r->workers);
    for (size_t i = 0; i < r->nworkers; i++) {
        struct worker *w = calloc(1, sizeof *w);
        if (!w)
            die_oom();
        w->r = r;
        w->index = i;
        int e = pthread_create(&r->workers[i], NULL, worker_main, w);
        if (e != 0) {
            fprintf(stderr, "simlsh-dedup: cannot start a thread: %s\n", strerror(e));
            free(w);
            r->nworkers = i;
            return -1;
        }
    }
    return 0;
}

void run_pipeline_stop(struct run *r)
{
    if (r->nworkers) {
        pthread_mutex_lock(&r->mu);
        r->stopping = 1;
        pthread_cond_broadcast(&r->work_cv);
        pthread_mutex_unlock(&r->mu);
        for (size_t i = 0; i < r->nworkers; i++)
            pthread_join(r->workers[i], NULL);
        r->nworkers_run = r->nworkers;
        free(r->workers);
        r->workers = NULL;
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->work_cv);
        pthread_cond_destroy(&r->done_cv);
        r->nworkers = 0;
    }
    struct batch *lists[3] = {r->pend_head, r->free_list, r->cur};
    r->pend_head = r->pend_tail = r->free_list = r->cur = NULL;
    for (int l = 0; l < 3; l++) {
        struct batch *b = lists[l];
        while (b) {
            struct batch *next = l == 2 ? NULL : b->next;
            if (b->is_range && b->close_fd)
                close(b->fd);
            batch_free(b);
            b = next;
        }
    }
    free(main_worker.buf);
    main_worker.buf = NULL;
    simlsh_signature_free(main_worker.sig);
    main_worker.sig = NULL;
    free(main_worker.jbuf);
    main_worker.jbuf = NULL;
    main_worker.jcap = 0;
    inserts_wait(r);
    free(r->ins_ids);
    free(r->ins_values);
    r->ins_ids = NULL;
    r->ins_values = NULL;
    r->ins_n = r->ins_cap = 0;
    free(r->ins_async.ids);
    free(r->ins_async.values);
    r->ins_async.ids = NULL;
    r->ins_async.values = NULL;
    r->ins_async.n = r->ins_async.cap = 0;
}
