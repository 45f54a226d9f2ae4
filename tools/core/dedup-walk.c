/*
 * simlsh-dedup: the walk. The files under each PATH input, in a fixed
 * order (names sorted byte-wise), filtered by --include/--exclude and the
 * version-control rule; the names that stand for one file found once.
 */
#include "dedup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
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

static void add_path(struct run_inputs *in, const char *p, const struct stat *st, int is_link)
{
    size_t i = in->paths.count;
    strlist_add(&in->paths, p, strlen(p), (uint64_t)st->st_size);
    if (i >= in->pmeta_cap) {
        in->pmeta_cap = in->pmeta_cap ? in->pmeta_cap * 2 : 1024;
        in->pmeta = xrealloc(in->pmeta, in->pmeta_cap * sizeof *in->pmeta);
    }
    in->pmeta[i].dev = (uint64_t)st->st_dev;
    in->pmeta[i].ino = (uint64_t)st->st_ino;
    in->pmeta[i].mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
    in->pmeta[i].is_link = is_link;
    in->pmeta[i].alias_of = SIZE_MAX;
    fileids_add(&in->input_ids, st);
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

static int wanted(const struct options *o, const char *path, const char *base, int is_dir)
{
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
            if ((r->opt->include_vcs || !is_vcs_dir(names[i])) && wanted(r->opt, p, names[i], 1))
                rc = walk_dir(r, p, (uint64_t)st.st_dev != dev, (uint64_t)st.st_dev);
        } else if (!wanted(r->opt, p, names[i], 0)) {
            /* left out by --include / --exclude */
        } else if (S_ISLNK(st.st_mode)) {
            if (stat(p, &st) != 0)
                rc = skip_path(r, p, "symbolic link to nothing readable: %s", strerror(errno));
            else if (S_ISREG(st.st_mode))
                add_path(&r->in, p, &st, 1);
            else if (!S_ISDIR(st.st_mode)) /* links to directories: not followed */
                rc = skip_path(r, p, "symbolic link to a %s, skipped", file_type_name(st.st_mode));
        } else if (S_ISREG(st.st_mode)) {
            add_path(&r->in, p, &st, 0);
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
    int c = order_u64(x->dev, y->dev);
    if (c == 0)
        c = order_u64(x->ino, y->ino);
    return c != 0 ? c : order_u64(x->path, y->path);
}

/* Names of one file (hard links, symbolic links, a file given twice) make
 * one document. It is read under its first name that is not a symbolic
 * link (the first name when all are links), and in that name's place in
 * the input order; the other names are reported and listed by --skipped,
 * so deleting what is not kept never deletes the file itself. */
static void resolve_aliases(struct run *r)
{
    size_t n = r->in.paths.count;
    if (n < 2)
        return;
    struct alias_key *k = xmalloc(n * sizeof *k);
    for (size_t i = 0; i < n; i++) {
        k[i].dev = r->in.pmeta[i].dev;
        k[i].ino = r->in.pmeta[i].ino;
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
            if (!r->in.pmeta[k[j].path].is_link) {
                keep = k[j].path;
                break;
            }
        }
        for (size_t j = b; j < e; j++) {
            size_t p = k[j].path;
            if (p == keep)
                continue;
            r->in.pmeta[p].alias_of = keep;
            r->stats.aliases++;
            size_t pl, kl;
            const char *ps = strlist_get(&r->in.paths, p, &pl);
            const char *ks = strlist_get(&r->in.paths, keep, &kl);
            const char *qp = qnamen(ps, pl), *qk = qnamen(ks, kl);
            if (!r->opt->quiet) /* not bad input: --quiet silences it */
                warnx_doc(r, "%s: same file as %s, read once under that name", qp, qk);
            if (r->opt->skipped_path) {
                size_t a = strlen(qp), c = strlen(qk);
                char *line = xmalloc(a + c + 16);
                snprintf(line, a + c + 16, "%s\tsame file as %s", qp, qk);
                strlist_add(&r->in.skips, line, strlen(line), 0);
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
    r->stats.total_known = 1;
    for (size_t i = 0; i < opt->ninputs; i++) {
        struct input *in = &opt->inputs[i];
        struct stat st, lst;
        in->first_path = r->in.paths.count;
        in->npaths = 0;
        if (in->kind == INPUT_STDIN || !strcmp(in->arg, "-")) {
            r->stats.total_known = 0;
            if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
                fileids_add(&r->in.input_ids, &st);
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
            fileids_add(&r->in.input_ids, &st);
            r->stats.total_bytes += (uint64_t)st.st_size;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (walk_dir(r, in->arg, 1, (uint64_t)st.st_dev))
                return -1;
        } else if (S_ISREG(st.st_mode)) {
            add_path(&r->in, in->arg, &st, is_link);
        } else if (skip_path(r, in->arg,
                             "not a regular file (%s), skipped; give - to read "
                             "a stream",
                             file_type_name(st.st_mode))) {
            return -1;
        }
        in->npaths = r->in.paths.count - in->first_path;
        for (size_t p = in->first_path; p < r->in.paths.count; p++)
            r->stats.total_bytes += r->in.paths.size[p];
    }
    resolve_aliases(r);
    return 0;
}
