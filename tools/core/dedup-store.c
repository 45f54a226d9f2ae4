/* simlsh-dedup: the saved index and incremental runs (docs/cli.md,
 * "Incremental runs", and docs/format-index.md, "simlsh-dedup user data").
 *
 * --save-index writes one file: the library's index, with the tool's
 * contract and the name of every id in the index's user data, saved by
 * simlsh_index_save_file_v2() (a temporary file, synced and renamed), so
 * the names can never drift from the ids they name. --index loads it, and
 * still reads the index + FILE.names pair of simlsh-dedup 0.1/0.2. */
#include "dedup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "simlsh-dedup"

/* The user data layout (little-endian, docs/format-index.md):
 *
 *   magic    8   "SLDDUP\0\1"  (the last byte is the layout version)
 *   P        4   contract entries
 *   reserved 4   0
 *   P x 16       key (u16), type (u8: 0 integer, 1 binary64), 5 zero
 *                bytes, value (i64 or binary64)
 *   count    8   documents (= the index's count; ids are 0 .. count-1)
 *   count x      bytes (u64), mtime_ns (i64), flags (u8: bit 0 the name is
 *                a JSON integer), name length (u32), the name's bytes
 */
static const unsigned char UD_MAGIC[8] = {'S', 'L', 'D', 'D', 'U', 'P', 0, 1};
#define UD_MAGIC_ANY 7 /* bytes that say "simlsh-dedup", whatever the version */
#define MAX_KEY 64

struct store {
    /* open addressing over the loaded ids by name: slot = id + 1, 0 empty */
    uint64_t *slot;
    size_t cap;
    uint8_t *gone; /* per loaded id: removed (--remove) or replaced (--replace) */
    uint64_t ngone;
    /* store_admit(): the new document's size and time, and what the loaded
     * ones of its name were (changed_from: 1 size, 2 time) */
    uint64_t want_bytes;
    int64_t want_mtime;
    int check, changed_from;
    uint64_t old_bytes;
    /* ids --replace dropped while reading, not yet out of the index: the
     * insert thread may be writing to it (store_apply_drops) */
    uint64_t *drops;
    size_t ndrops, drops_cap;
};

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, PROG ": %s: %s (%s)\n", what, simlsh_strerror(rc), simlsh_error_name(rc));
    return -1;
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}
#define FNV_INIT UINT64_C(14695981039346656037)

/* ---- little-endian encoding ----------------------------------------------- */

struct buf {
    unsigned char *p;
    size_t len, cap;
};

static void put(struct buf *b, const void *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_le(struct buf *b, uint64_t v, int n)
{
    unsigned char t[8];
    for (int i = 0; i < n; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    put(b, t, (size_t)n);
}

struct cur {
    const unsigned char *p;
    size_t len, pos;
    int bad;
};

static uint64_t get_le(struct cur *c, int n)
{
    if (c->bad || c->len - c->pos < (size_t)n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)c->p[c->pos + i] << (8 * i);
    c->pos += (size_t)n;
    return v;
}

/* ---- names of the loaded ids ----------------------------------------------- */

static void map_build(struct run_store *st)
{
    struct store *s = st->loaded;
    size_t n = (size_t)st->first_new;
    s->cap = 16;
    while (s->cap < 2 * n)
        s->cap *= 2;
    s->slot = calloc(s->cap, sizeof *s->slot);
    s->gone = calloc(n ? n : 1, 1);
    if (!s->slot || !s->gone)
        die_oom();
    for (size_t id = 0; id < n; id++) {
        size_t len;
        const char *name = strlist_get(&st->names, id, &len);
        size_t k = (size_t)fnv1a(FNV_INIT, name, len) & (s->cap - 1);
        while (s->slot[k])
            k = (k + 1) & (s->cap - 1);
        s->slot[k] = id + 1;
    }
}

/* Calls fn for every loaded id still present whose name is name (byte for
 * byte: a JSON id 5 and "5" are one name); returns how many. */
static uint64_t map_each(struct run_store *st, const char *name, size_t len,
                         int (*fn)(struct run_store *, uint64_t), int *err)
{
    struct store *s = st->loaded;
    uint64_t hits = 0;
    if (!s || !s->cap)
        return 0;
    size_t k = (size_t)fnv1a(FNV_INIT, name, len) & (s->cap - 1);
    for (; s->slot[k]; k = (k + 1) & (s->cap - 1)) {
        uint64_t id = s->slot[k] - 1;
        size_t l;
        const char *t = strlist_get(&st->names, id, &l);
        if (s->gone[id] || l != len || memcmp(t, name, len))
            continue;
        hits++;
        if (fn && fn(st, id) != 0) {
            *err = 1;
            return hits;
        }
    }
    return hits;
}

/* Takes a loaded id out of the index; its id stays unused until the next
 * save renumbers the ids. */
static int drop_id(struct run_store *st, uint64_t id)
{
    int rc = simlsh_index_remove(st->index, id);
    if (rc != 0)
        return lib_fail("removing a document from the index", rc);
    st->loaded->gone[id] = 1;
    st->loaded->ngone++;
    return 0;
}

/* --replace, while the inputs are read: the id is gone at once (names
 * and counts see it so), but it leaves the index only in
 * store_apply_drops(), which the reader calls when no insert call runs.
 * The index has one writer at a time, and the insert thread is one. */
static int queue_drop(struct run_store *st, uint64_t id)
{
    struct store *s = st->loaded;
    if (s->ndrops == s->drops_cap) {
        s->drops_cap = s->drops_cap ? 2 * s->drops_cap : 1024;
        s->drops = xrealloc(s->drops, s->drops_cap * sizeof *s->drops);
    }
    s->drops[s->ndrops++] = id;
    s->gone[id] = 1;
    s->ngone++;
    return 0;
}

int store_apply_drops(struct run *r)
{
    struct store *s = r->store.loaded;
    if (!s || !s->ndrops)
        return 0;
    for (size_t i = 0; i < s->ndrops; i++) {
        int rc = simlsh_index_remove(r->store.index, s->drops[i]);
        if (rc != 0) {
            s->ndrops = 0;
            r->failed = EXIT_DEDUP_INTERNAL;
            return lib_fail("removing a document from the index", rc);
        }
    }
    s->ndrops = 0;
    return 0;
}

/* simlsh-dedup-mpi: every rank reads a share of the inputs, so a loaded id
 * that --replace dropped on one rank must be dropped on all of them. */
int store_is_gone(const struct run_store *st, uint64_t id)
{
    return st->loaded && st->loaded->gone && id < st->first_new && st->loaded->gone[id];
}

int store_drop(struct run *r, uint64_t id)
{
    if (!r->store.loaded || !r->store.loaded->gone || id >= r->store.first_new ||
        r->store.loaded->gone[id])
        return 0;
    return drop_id(&r->store, id);
}

int store_has(struct run *r, const char *name, size_t len)
{
    int err = 0;
    return map_each(&r->store, name, len, NULL, &err) > 0;
}

uint64_t store_old_count(const struct run_store *st)
{
    return st->first_new - (st->loaded ? st->loaded->ngone : 0);
}

/* Notes how a loaded id differs from the document store_admit() looks at.
 * A size of 0 is unknown (an index of simlsh-dedup 0.1/0.2). */
static int note_change(struct run_store *st, uint64_t id)
{
    struct store *s = st->loaded;
    if (!s->check || id >= st->idmeta_cap || st->id_bytes[id] == 0)
        return 0;
    if (st->id_bytes[id] != s->want_bytes) {
        s->changed_from |= 1;
        s->old_bytes = st->id_bytes[id];
    }
    if (st->id_mtime[id] != s->want_mtime)
        s->changed_from |= 2;
    return 0;
}

static void warn_changed(struct run *r, const char *name, size_t len, uint64_t was, uint64_t is,
                         int how)
{
    char what[96];
    if (how & 1)
        snprintf(what, sizeof what, "size %llu, now %llu bytes%s", (unsigned long long)was,
                 (unsigned long long)is, how & 2 ? ", and modification time" : "");
    else
        snprintf(what, sizeof what, "modification time");
    warnx_doc(r,
              "%s: changed since it was indexed (%s); the index keeps its old signature: "
              "--update re-signs the changed documents",
              qnamen(name, len), what);
}

/* A new document named name, of bytes bytes and mtime: 1 to index it, 0
 * to skip it (its name is in the loaded index, and neither --replace nor,
 * for a changed file, --update was given), -1 on error. Only files
 * (is_file) are checked for changes: a line's time is its file's, and its
 * name a position. A document changed since it was indexed is never
 * skipped silently (issue 31, F11): make, rsync and git status take a new
 * size or time for a change too. */
int store_admit(struct run *r, const char *name, size_t len, uint64_t bytes, int64_t mtime,
                int is_file)
{
    if (!r->store.loaded || !r->store.loaded->cap)
        return 1;
    int err = 0;
    struct store *s = r->store.loaded;
    if (!r->opt->replace) {
        s->want_bytes = bytes;
        s->want_mtime = mtime;
        s->check = is_file;
        s->changed_from = 0;
        if (map_each(&r->store, name, len, note_change, &err) == 0)
            return 1;
        if (s->changed_from)
            r->stats.changed++;
        if (!s->changed_from || !r->opt->update) {
            if (s->changed_from)
                warn_changed(r, name, len, s->old_bytes, bytes, s->changed_from);
            r->stats.already_indexed++;
            return 0;
        }
    }
    uint64_t n = map_each(&r->store, name, len, queue_drop, &err);
    if (err) {
        r->failed = EXIT_DEDUP_INTERNAL;
        return -1;
    }
    if (n)
        r->stats.replaced++;
    return 1;
}

static int remove_one(struct run *r, const char *name, size_t len)
{
    int err = 0;
    uint64_t n = map_each(&r->store, name, len, drop_id, &err);
    if (err)
        return -1;
    if (n == 0) {
        warnx_doc(r, "--remove %s: not in %s", qnamen(name, len), qname(r->opt->load_index));
        return 0;
    }
    r->stats.removed += n;
    return 0;
}

/* --remove and --remove-from, before any input is read. */
int store_remove(struct run *r)
{
    const struct options *o = r->opt;
    for (size_t i = 0; i < o->nremove; i++)
        if (remove_one(r, o->remove_names[i], strlen(o->remove_names[i])) != 0)
            return -1;
    if (!o->remove_from)
        return 0;
    int is_stdin = !strcmp(o->remove_from, "-");
    FILE *f = is_stdin ? stdin : fopen(o->remove_from, "r");
    if (!f) {
        fprintf(stderr, PROG ": --remove-from %s: %s\n", qname(o->remove_from), strerror(errno));
        r->failed = EXIT_DEDUP_INPUT;
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        /* an empty line names the empty JSONL id "" (a keep or drop list
         * writes it so) when the index has one, and is ignored otherwise */
        if (len == 0 && map_each(&r->store, "", 0, NULL, &rc) == 0)
            continue;
        /* one name a line, escaped as in TSV output, so a keep or drop
         * list of an earlier run can be given back as it is */
        size_t l = unescape_name(line, (size_t)len);
        rc = remove_one(r, line, l);
    }
    int e = ferror(f) ? errno : 0;
    free(line);
    if (!is_stdin)
        fclose(f);
    if (e) {
        fprintf(stderr, PROG ": --remove-from %s: %s\n", qname(o->remove_from), strerror(e));
        r->failed = EXIT_DEDUP_INPUT;
        return -1;
    }
    if (rc != 0)
        r->failed = EXIT_DEDUP_INTERNAL;
    return rc;
}

void store_free(struct run_store *st)
{
    if (!st->loaded)
        return;
    free(st->loaded->slot);
    free(st->loaded->gone);
    free(st->loaded->drops);
    free(st->loaded);
    st->loaded = NULL;
}

/* ---- save ------------------------------------------------------------------- */

/* The user data for the ids kept (every id but the removed and replaced
 * ones), in id order: the saved file's id i is the i-th of them. */
static void encode(struct run *r, struct buf *b, const uint8_t *gone, uint64_t kept)
{
    put(b, UD_MAGIC, sizeof UD_MAGIC);
    size_t at_p = b->len;
    put_le(b, 0, 4);
    put_le(b, 0, 4);
    uint32_t np = 0;
    for (int key = 1; key < MAX_KEY; key++) {
        int64_t iv;
        double dv;
        if (!simlsh_params_key_name(key) || key == SIMLSH_PARAM_ISA)
            continue; /* ISA is not part of the contract */
        if (simlsh_params_get_int(r->store.params, key, &iv) == 0) {
            put_le(b, (uint64_t)key, 2);
            put_le(b, 0, 6);
            put_le(b, (uint64_t)iv, 8);
        } else if (simlsh_params_get_double(r->store.params, key, &dv) == 0) {
            uint64_t bits;
            memcpy(&bits, &dv, sizeof bits);
            put_le(b, (uint64_t)key, 2);
            put_le(b, 1, 1);
            put_le(b, 0, 5);
            put_le(b, bits, 8);
        } else {
            continue;
        }
        np++;
    }
    for (int i = 0; i < 4; i++)
        b->p[at_p + i] = (unsigned char)(np >> (8 * i));
    put_le(b, kept, 8);
    if (r->store.names.count)
        ensure_idmeta(&r->store, r->store.names.count - 1);
    for (size_t id = 0; id < r->store.names.count; id++) {
        if (gone && id < r->store.first_new && gone[id])
            continue;
        size_t len;
        const char *name = strlist_get(&r->store.names, id, &len);
        put_le(b, r->store.id_bytes[id], 8);
        put_le(b, (uint64_t)r->store.id_mtime[id], 8);
        put_le(b, r->store.names.size[id] == 1 ? 1 : 0, 1);
        put_le(b, len, 4);
        put(b, name, len);
    }
}

/* A copy of the index without the removed ids, renumbered 0 .. kept-1 in
 * id order, so a saved file never has unused ids. */
static int compact(struct run_store *st, simlsh_index **out)
{
    simlsh_params *p = NULL;
    simlsh_index *c = NULL;
    int rc = simlsh_index_params(&p, st->index);
    if (rc == 0)
        rc = simlsh_index_new(&c, p);
    simlsh_params_free(p);
    uint64_t next = 0;
    for (size_t id = 0; rc == 0 && id < st->names.count; id++) {
        if (id < st->first_new && st->loaded->gone[id])
            continue;
        simlsh_signature *sig = NULL;
        rc = simlsh_index_signature(&sig, st->index, id);
        if (rc == 0)
            rc = simlsh_index_insert(c, next++, sig);
        simlsh_signature_free(sig);
    }
    uint64_t f1 = 0, f2 = 0;
    if (rc == 0 && (simlsh_index_fingerprint(&f1, st->index) != 0 ||
                    simlsh_index_fingerprint(&f2, c) != 0 || f1 != f2))
        rc = SIMLSH_EMISMATCH;
    if (rc != 0) {
        simlsh_index_free(c);
        return lib_fail("renumbering the index", rc);
    }
    *out = c;
    return 0;
}

/* ---- one writer per index file ---------------------------------------------- *
 *
 * A run that loads FILE and saves it again must not overlap another such
 * run: each would start from the same FILE, and the second rename would
 * drop the first run's documents. The lock is an flock() on FILE itself
 * (no lock file to leave behind), held from before the load to after the
 * rename. A save replaces FILE by another inode, so a run that waited
 * for the lock checks that the file it locked is still the one at the
 * path, and locks the new one otherwise: whoever renames holds the lock
 * on the file it replaces. Advisory, like every flock: it orders runs of
 * simlsh-dedup and simlsh-dedup-mpi, not other programs. */
int store_lock(struct index_lock *lk, const struct options *o, const char *path)
{
    if (lk->held)
        return 0;
    int waited = 0;
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
            return 0; /* nothing to replace yet, or the save reports why */
        int rc = flock(fd, LOCK_EX | LOCK_NB);
        if (rc != 0 && errno == EWOULDBLOCK) {
            if (!waited && !o->quiet)
                fprintf(stderr, PROG ": %s: waiting for another run that replaces it\n",
                        qname(path));
            waited = 1;
            while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
                ;
        }
        if (rc != 0) {
            fprintf(stderr, PROG ": %s: cannot lock it: %s\n", qname(path), strerror(errno));
            close(fd);
            return -1;
        }
        struct stat held, now;
        if (fstat(fd, &held) == 0 && stat(path, &now) == 0 && held.st_dev == now.st_dev &&
            held.st_ino == now.st_ino) {
            lk->fd = fd;
            lk->held = 1;
            return 0;
        }
        close(fd); /* replaced while we waited: lock the new file */
    }
}

int store_lock_update(struct index_lock *lk, const struct options *o)
{
    if (!o->load_index || !o->save_index)
        return 0;
    struct stat a, b;
    int same = !strcmp(o->load_index, o->save_index) ||
               (stat(o->load_index, &a) == 0 && stat(o->save_index, &b) == 0 &&
                a.st_dev == b.st_dev && a.st_ino == b.st_ino);
    return same ? store_lock(lk, o, o->load_index) : 0;
}

static void store_unlock(struct index_lock *lk)
{
    if (lk->held)
        close(lk->fd);
    lk->held = 0;
}

int store_save(struct run *r, const char *path)
{
    if (store_lock(&r->store.lock, r->opt, path) != 0)
        return -1;
    const uint8_t *gone = r->store.loaded ? r->store.loaded->gone : NULL;
    uint64_t removed = 0;
    for (uint64_t id = 0; gone && id < r->store.first_new; id++)
        removed += gone[id];
    simlsh_index *ix = r->store.index, *copy = NULL;
    if (removed) {
        if (compact(&r->store, &copy) != 0)
            return -1;
        ix = copy;
    }
    struct buf b = {NULL, 0, 0};
    encode(r, &b, gone, (uint64_t)r->store.names.count - removed);
    int rc = simlsh_index_set_userdata(ix, b.p, b.len);
    free(b.p);
    if (rc != 0) {
        simlsh_index_free(copy);
        return lib_fail("index user data", rc);
    }
    int err = 0;
    /* the path was checked like every output (no symbolic link); NOFOLLOW
     * keeps it so if one appears meanwhile */
    rc = simlsh_index_save_file_v2(&err, ix, path, SIMLSH_FILE_NOFOLLOW);
    store_unlock(&r->store.lock); /* renamed (or not): the next run may load it */
    simlsh_index_free(copy);
    if (rc != 0) {
        fprintf(stderr, PROG ": %s: cannot save the index: %s\n", qname(path),
                rc == SIMLSH_EIO && err ? strerror(err) : simlsh_strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- load ------------------------------------------------------------------- */

static int apply_key(simlsh_params *p, int key, int type, uint64_t v)
{
    if (type == 0)
        return simlsh_params_set_int(p, key, (int64_t)v);
    double d;
    memcpy(&d, &v, sizeof d);
    return simlsh_params_set_double(p, key, d);
}

/* Parses the user data into r->store.params, r->store.names and the per-id sizes and
 * times. Returns a reason, or NULL. */
static const char *decode(struct run *r, const void *data, size_t len, size_t count)
{
    struct cur c = {data, len, 0, 0};
    if (len < sizeof UD_MAGIC || memcmp(data, UD_MAGIC, UD_MAGIC_ANY))
        return "its user data is not simlsh-dedup's";
    if (memcmp(data, UD_MAGIC, sizeof UD_MAGIC))
        return "its user data has a newer layout (saved by a newer simlsh-dedup?)";
    c.pos = sizeof UD_MAGIC;
    uint32_t np = (uint32_t)get_le(&c, 4);
    if (get_le(&c, 4) != 0)
        return "bad user data header";
    int rc = simlsh_params_new(&r->store.params, NULL);
    if (rc != 0)
        return "out of memory";
    for (uint32_t i = 0; i < np && !c.bad; i++) {
        int key = (int)get_le(&c, 2);
        int type = (int)get_le(&c, 1);
        uint64_t pad = get_le(&c, 5), v = get_le(&c, 8);
        if (c.bad)
            break;
        if (pad != 0 || type > 1 || !simlsh_params_key_name(key) || key == SIMLSH_PARAM_ISA)
            return "unknown contract entry (saved by a newer simlsh-dedup?)";
        if (apply_key(r->store.params, key, type, v) != 0)
            return "a contract value the library refuses";
    }
    uint64_t n = get_le(&c, 8);
    if (c.bad || n != count)
        return "its names do not cover its ids";
    ensure_idmeta(&r->store, n ? n - 1 : 0);
    for (uint64_t id = 0; id < n; id++) {
        uint64_t bytes = get_le(&c, 8), mtime = get_le(&c, 8);
        unsigned flags = (unsigned)get_le(&c, 1);
        uint64_t l = get_le(&c, 4);
        if (c.bad || flags > 1 || l > c.len - c.pos)
            return "truncated or damaged names";
        strlist_add(&r->store.names, (const char *)c.p + c.pos, (size_t)l, flags);
        c.pos += (size_t)l;
        r->store.id_bytes[id] = bytes;
        r->store.id_mtime[id] = (int64_t)mtime;
    }
    if (c.bad || c.pos != c.len)
        return "trailing bytes after the names";
    return NULL;
}

/* ---- the index + FILE.names pair of simlsh-dedup 0.1 and 0.2 (read only) ----- */

/*
 * FILE.names, a text file, was:
 *
 *   simlsh-dedup-names 2
 *   param <key name> <value>        one per contract key
 *   fingerprint <16 hex digits>     simlsh_index_fingerprint() of FILE
 *   index-checksum <16 hex digits>  the last 8 bytes of FILE (its checksum)
 *   count <N>
 *   <name of id 0>                  N lines, escaped as TSV fields
 *   ...
 *   end
 *   checksum <16 hex digits>        FNV-1a 64 of every byte above this line
 *
 * (version 1: no index-checksum, no checksum). It is read when FILE has no
 * user data, so indexes saved before the one-file format still load; it is
 * never written.
 */
#define SIDECAR_MAGIC "simlsh-dedup-names 2"
#define SIDECAR_MAGIC_V1 "simlsh-dedup-names 1"

/* The checksum the library stores in the last 8 bytes of a saved object,
 * as 16 hex digits in file order. */
static int index_file_checksum(const char *index_path, char hex[17])
{
    int fd = open(index_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    unsigned char b[8];
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 8 &&
             pread(fd, b, 8, st.st_size - 8) == 8;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        fprintf(stderr, PROG ": %s: cannot read its checksum: %s\n", qname(index_path),
                e ? strerror(e) : "too short");
        return -1;
    }
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return 0;
}

static int key_by_name(const char *name)
{
    for (int key = 1; key < MAX_KEY; key++) {
        const char *n = simlsh_params_key_name(key);
        if (n && !strcmp(n, name))
            return key;
    }
    return -1;
}

/* Reads INDEX.names: the contract into *params, the names into r->store.names. */
static int sidecar_load(struct run_store *st, const char *index_path, simlsh_params **params,
                        uint64_t *fingerprint, char index_sum[17])
{
    uint64_t sum = FNV_INIT;
    int version = 0, summed = 0;
    index_sum[0] = '\0';
    size_t pl = strlen(index_path);
    char *path = xmalloc(pl + 7);
    memcpy(path, index_path, pl);
    memcpy(path + pl, ".names", 7);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            fprintf(stderr,
                    PROG ": %s: has no names: not saved by " PROG " (and no %s "
                         "beside it)\n",
                    qname(index_path), qname(path));
        else
            fprintf(stderr, PROG ": %s: %s\n", qname(path), strerror(errno));
        free(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    size_t lineno = 0, count = 0, names = 0;
    int state = 0; /* 0 header, 1 params, 2 names, 3 end */
    simlsh_params *p = NULL;
    int rc = simlsh_params_new(&p, NULL);
    if (rc != 0) {
        fclose(f);
        free(path);
        return lib_fail("params", rc);
    }
    const char *why = NULL;
    while (!why && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (state == 4 && version == 2 && !strncmp(line, "checksum ", 9)) {
            char want[32];
            snprintf(want, sizeof want, "checksum %016" PRIx64 "\n", sum);
            if (strcmp(line, want))
                why = "checksum mismatch: the names file was changed or damaged";
            summed = 1;
            state = 5;
            continue;
        }
        sum = fnv1a(sum, line, (size_t)len);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (state == 0) {
            version = !strcmp(line, SIDECAR_MAGIC) ? 2 : !strcmp(line, SIDECAR_MAGIC_V1) ? 1 : 0;
            if (!version)
                why = "not a simlsh-dedup names file (or a newer version)";
            state = 1;
        } else if (state == 1 && !strncmp(line, "param ", 6)) {
            char name[64];
            char value[64];
            if (sscanf(line + 6, "%63s %63s", name, value) != 2) {
                why = "bad param line";
                break;
            }
            int key = key_by_name(name);
            if (key < 0) {
                why = "unknown param (written by a newer version?)";
                break;
            }
            char *end;
            errno = 0;
            long long iv = strtoll(value, &end, 10);
            if (*end == '\0' && errno == 0)
                rc = simlsh_params_set_int(p, key, iv);
            else
                rc = simlsh_params_set_double(p, key, strtod(value, &end));
            if (rc == SIMLSH_EINVAL && *end == '\0') /* an integer given to a double key */
                rc = simlsh_params_set_double(p, key, strtod(value, NULL));
            if (rc != 0) {
                fprintf(stderr, "simlsh-dedup: %s:%zu: param %s: %s\n", qname(path), lineno,
                        qname(name), simlsh_strerror(rc));
                why = "cannot apply the saved contract";
            }
        } else if (state == 1 && !strncmp(line, "fingerprint ", 12)) {
            *fingerprint = strtoull(line + 12, NULL, 16);
        } else if (state == 1 && !strncmp(line, "index-checksum ", 15) && len == 31) {
            memcpy(index_sum, line + 15, 17);
        } else if (state == 1 && !strncmp(line, "count ", 6)) {
            char *end;
            count = (size_t)strtoull(line + 6, &end, 10);
            state = 2;
            if (count == 0)
                state = 3;
        } else if (state == 2) {
            size_t l = unescape_name(line, (size_t)len);
            strlist_add(&st->names, line, l, 0);
            if (++names == count)
                state = 3;
        } else if (state == 3 && !strcmp(line, "end")) {
            state = 4;
        } else {
            why = "unexpected line";
        }
    }
    free(line);
    fclose(f);
    if (!why && (version == 2 ? !summed : state != 4))
        why = "truncated";
    if (!why && version == 2 && !index_sum[0])
        why = "no index-checksum line";
    if (why) {
        fprintf(stderr, "simlsh-dedup: %s:%zu: %s\n", qname(path), lineno, why);
        simlsh_params_free(p);
        free(path);
        return -1;
    }
    free(path);
    *params = p;
    return 0;
}

/* The old pair: FILE.names must belong to this very save of FILE. */
static int legacy_load(struct run *r, const char *path, size_t count)
{
    uint64_t saved_fp = 0, index_fp = 0;
    char saved_sum[17], before[17], after[17];
    /* FILE read before and after, so a save replacing it meanwhile is seen */
    if (index_file_checksum(path, before) != 0 ||
        sidecar_load(&r->store, path, &r->store.params, &saved_fp, saved_sum) != 0 ||
        index_file_checksum(path, after) != 0)
        return EXIT_DEDUP_INPUT;
    /* a version 1 names file has no index checksum to compare */
    if (strcmp(before, after) || (saved_sum[0] && strcmp(saved_sum, before))) {
        fprintf(stderr,
                PROG ": %s.names does not belong to %s (it names the ids of another "
                     "save of the index)\n",
                qname(path), qname(path));
        return EXIT_DEDUP_INPUT;
    }
    int rc = simlsh_index_fingerprint(&index_fp, r->store.index);
    if (rc != 0)
        return lib_fail("index", rc), EXIT_DEDUP_INTERNAL;
    if (index_fp != saved_fp || count != r->store.names.count) {
        fprintf(stderr,
                PROG ": %s.names does not belong to %s (index has %zu ids, the "
                     "names file %zu)\n",
                qname(path), qname(path), count, r->store.names.count);
        return EXIT_DEDUP_INPUT;
    }
    return 0;
}

/* --index FILE: the index, its contract into r->store.params and its names;
 * returns 0 or the exit status. */
int store_load(struct run *r, const char *path)
{
    r->store.loaded = calloc(1, sizeof *r->store.loaded);
    if (!r->store.loaded)
        die_oom();
    int err = 0;
    int rc = simlsh_index_load_file_v2(&r->store.index, &err, path, 0, NULL);
    if (rc != 0) {
        fprintf(stderr, PROG ": %s: cannot load the index: %s\n", qname(path),
                rc == SIMLSH_EIO && err ? strerror(err) : simlsh_strerror(rc));
        return rc == SIMLSH_ENOMEM ? EXIT_DEDUP_INTERNAL : EXIT_DEDUP_INPUT;
    }
    size_t count = 0, ulen = 0;
    const void *ud = NULL;
    rc = simlsh_index_count(&count, r->store.index);
    if (rc == 0)
        rc = simlsh_index_userdata(&ud, &ulen, r->store.index);
    if (rc != 0)
        return lib_fail("index", rc), EXIT_DEDUP_INTERNAL;
    if (ulen == 0) {
        rc = legacy_load(r, path, count);
        if (rc != 0)
            return rc;
    } else {
        const char *why = decode(r, ud, ulen, count);
        if (why) {
            fprintf(stderr, PROG ": %s: %s\n", qname(path), why);
            return EXIT_DEDUP_INPUT;
        }
    }
    /* The contract must give the index's own fingerprint: the library
     * checks its half, this the tool's. */
    uint64_t want = 0, have = 0;
    rc = simlsh_index_fingerprint(&have, r->store.index);
    if (rc != 0)
        return lib_fail("index", rc), EXIT_DEDUP_INTERNAL;
    if (simlsh_params_fingerprint(&want, r->store.params, SIMLSH_SCOPE_INDEX) != 0 ||
        want != have) {
        fprintf(stderr, PROG ": %s: its saved contract does not match its index\n", qname(path));
        return EXIT_DEDUP_INPUT;
    }
    r->store.first_new = r->store.names.count;
    map_build(&r->store);
    return 0;
}
