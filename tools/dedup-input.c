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
            return skip_path(r, dir, "on a pseudo file system (%s), not walked; name its "
                                     "files to read them", fs);
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
                rc = skip_path(r, p, "symbolic link to a %s, skipped",
                               file_type_name(st.st_mode));
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
                if (skip_path(r, in->arg, "not a regular file (%s), skipped; give - to read "
                                          "a stream", file_type_name(st.st_mode)))
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
        } else if (skip_path(r, in->arg, "not a regular file (%s), skipped; give - to read "
                                         "a stream", file_type_name(st.st_mode))) {
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
    char *buf; /* file contents, reused across documents */
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
                 rd->codec == CODEC_PLAIN ? "holds" : "decompresses to",
                 (unsigned long long)max);
        return -1;
    }
    *len = n;
    return 0;
}

static int read_path_doc(struct worker *w, const struct run *r, const char *path,
                         struct doc *d, size_t *len)
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
    if (simlsh_signature_is_empty(sig) == 1) {
        d->status = DOC_EEMPTY;
        simlsh_shingleset_free(d->set);
        d->set = NULL;
    }
}

/* Only reached in a build with jansson: without it --jsonl is refused
 * before any input is read (parse_args), so no DOCK_JSON document exists. */
#if DEDUP_HAVE_JANSSON
static void set_msg(struct doc *d, int status, const char *fmt, const char *a)
{
    d->status = (uint8_t)status;
    snprintf(d->msg, sizeof d->msg, fmt, a);
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

static void sign_batch(struct worker *w, struct batch *b)
{
    struct run *r = w->r;
    for (size_t i = 0; i < b->n; i++) {
        struct doc *d = &b->docs[i];
        simlsh_signature *sig = b->sigs[i];
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
            sign_json(r, b, d, sig);
            break;
#endif
        default:
            break;
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->r;
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

        sign_batch(w, b);

        pthread_mutex_lock(&r->mu);
        b->done = 1;
        pthread_cond_broadcast(&r->done_cv);
        pthread_mutex_unlock(&r->mu);
    }
    free(w->buf);
    free(w);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Batches and the in-order consumer (main thread)                          */
/* ------------------------------------------------------------------------ */

static struct worker main_worker; /* the main thread signs when -j 1 */

static struct batch *batch_new(struct run *r)
{
    struct batch *b = calloc(1, sizeof *b);
    if (!b)
        die_oom();
    for (size_t i = 0; i < BATCH_DOCS; i++) {
        int rc = simlsh_signature_new(&b->sigs[i], r->params);
        if (rc != 0) {
            fprintf(stderr, "simlsh-dedup: cannot create a signature: %s\n",
                    simlsh_strerror(rc));
            exit(rc == SIMLSH_ENOMEM ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_USAGE);
        }
    }
    b->arena_cap = BATCH_BYTES;
    b->arena = xmalloc(b->arena_cap);
    return b;
}

static void batch_free(struct batch *b)
{
    for (size_t i = 0; i < BATCH_DOCS; i++)
        simlsh_signature_free(b->sigs[i]);
    for (size_t i = 0; i < b->n; i++)
        simlsh_shingleset_free(b->docs[i].set);
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
    int n;
    if (r->lines_prefix)
        n = snprintf(tmp, tmpcap, "%s:%llu", in->arg, (unsigned long long)d->line);
    else
        n = snprintf(tmp, tmpcap, "%llu", (unsigned long long)d->line);
    *s = tmp;
    *len = n < 0 ? 0 : ((size_t)n >= tmpcap ? tmpcap - 1 : (size_t)n);
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

static void ensure_sets(struct run *r, uint64_t id)
{
    if (id < r->sets_cap)
        return;
    size_t cap = r->sets_cap ? r->sets_cap * 2 : 4096;
    while (cap <= id)
        cap *= 2;
    r->sets = xrealloc(r->sets, cap * sizeof *r->sets);
    memset(r->sets + r->sets_cap, 0, (cap - r->sets_cap) * sizeof *r->sets);
    r->sets_cap = cap;
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

/* Insert a signed batch; reports its bad documents in input order. */
static int consume(struct run *r, struct batch *b)
{
    for (size_t i = 0; i < b->n && !r->failed; i++) {
        struct doc *d = &b->docs[i];
        char where[512];
        if (d->status != DOC_OK) {
            doc_where(r, d, where, sizeof where);
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
        uint64_t id = r->names.count;
        int rc = simlsh_index_insert(r->index, id, b->sigs[i]);
        if (rc != 0) {
            doc_where(r, d, where, sizeof where);
            fprintf(stderr, "simlsh-dedup: %s: cannot index: %s\n", where, simlsh_strerror(rc));
            r->failed = EXIT_DEDUP_INTERNAL;
            return -1;
        }
        char tmp[600];
        const char *name;
        size_t len;
        doc_name(r, b, d, &name, &len, tmp, sizeof tmp);
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
        if (d->set) {
            ensure_sets(r, id);
            r->sets[id] = d->set;
            d->set = NULL;
        }
        r->docs++;
        r->bytes += d->bytes;
    }
    progress_update(r, 0);
    return r->failed ? -1 : 0;
}

static void batch_reset(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        simlsh_shingleset_free(b->docs[i].set);
        b->docs[i].set = NULL;
    }
    b->n = 0;
    b->arena_len = 0;
    b->ids_len = 0;
    b->done = 0;
    b->next = NULL;
}

/* Wait for the oldest submitted batch, insert it, recycle it. */
static int consume_oldest(struct run *r)
{
    struct batch *b = r->pend_head;
    if (!b)
        return 0;
    if (r->nworkers) {
        pthread_mutex_lock(&r->mu);
        while (!b->done)
            pthread_cond_wait(&r->done_cv, &r->mu);
        pthread_mutex_unlock(&r->mu);
    }
    r->pend_head = b->next;
    if (!r->pend_head)
        r->pend_tail = NULL;
    int rc = consume(r, b);
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
    if (b->n == 0) {
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
        sign_batch(&main_worker, b);
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
    if (b->arena_len + text_len > b->arena_cap) {
        size_t cap = b->arena_cap;
        while (cap < b->arena_len + text_len)
            cap *= 2;
        b->arena = xrealloc(b->arena, cap);
        b->arena_cap = cap;
    }
    struct doc *d = &b->docs[b->n++];
    memset(d, 0, offsetof(struct doc, msg));
    d->msg[0] = '\0';
    d->input = (uint32_t)input;
    d->kind = (uint8_t)kind;
    return d;
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

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
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

static int skip_line(struct run *r, const char *shown, uint64_t line, const char *why)
{
    char where[600];
    int n = snprintf(where, sizeof where, "%s:%llu", shown, (unsigned long long)line);
    size_t wl = n < 0 ? 0 : (size_t)n >= sizeof where ? sizeof where - 1 : (size_t)n;
    return skip_input(r, where, wl, "%s", why);
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
    if (!use_stdin) {
        struct stat st;
        char msg[160];
        fd = open_regular(in->arg, &st, msg, sizeof msg);
        if (fd < 0)
            return skip_input(r, shown, strlen(shown), "%s", msg);
        mtime = mtime_ns(&st);
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
    uint64_t max = r->opt->max_doc_bytes;
    size_t cap = 4u << 20, len = 0;
    char *buf = xmalloc(cap);
    uint64_t line = 0;
    uint64_t base = 0;  /* stream offset of buf[0] */
    int discarding = 0; /* inside a line longer than max */
    for (;;) {
        ssize_t got = reader_read(&rd, buf + len, cap - len);
        if (got < 0) {
            char why[200];
            snprintf(why, sizeof why, "%s after line %llu", rd.msg, (unsigned long long)line);
            rc = skip_input(r, shown, strlen(shown), "%s", why);
            break;
        }
        if (got == 0) {
            if (discarding)
                rc = skip_line(r, shown, ++line, "line longer than --max-doc-bytes, skipped");
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
                rc = skip_line(r, shown, ++line, "line longer than --max-doc-bytes, skipped");
            } else if (l > max) {
                rc = skip_line(r, shown, ++line, "line longer than --max-doc-bytes, skipped");
            } else {
                rc = emit_line(r, input, json, ++line, base + start, buf + start, l, l + 1,
                               mtime);
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
    progress_update(r, 1);
    if (r->progress)
        fputs("\r\033[K", stderr);
    return rc ? -1 : 0;
}

int run_pipeline_start(struct run *r)
{
    main_worker.r = r;
    r->nworkers = r->nthreads > 1 ? (size_t)r->nthreads : 0;
    /* Three batches per worker keep every worker busy while the main thread
     * fills the next batch and inserts the oldest one. */
    size_t nbatches = r->nworkers ? r->nworkers * 3 : 1;
    for (size_t i = 0; i < nbatches; i++) {
        struct batch *b = batch_new(r);
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
            batch_free(b);
            b = next;
        }
    }
    free(main_worker.buf);
    main_worker.buf = NULL;
}
