/*
 * simlsh-dedup: candidate pairs and their verification (docs/cli.md,
 * VERIFICATION).
 *
 * In exact mode (the default) the first pass keeps only signatures. The
 * candidate pairs are cut into batches of whole components
 * (simlsh_group_batches()) that fit --verify-memory (and SET_BATCH_BYTES),
 * and a second pass reads again only the documents of candidate pairs, one
 * batch at a time, builds their shingle sets (32-bit hashes: distinct
 * values in text order, 4 bytes a shingle; 64-bit: sorted), decides each
 * pair by its exact Jaccard (32-bit: aligned first, dedup-jaccard.c) and
 * frees the batch. A pair whose two documents are in no other pair (with
 * 32-bit hashes) skips the batches: one worker hashes both texts and counts
 * the Jaccard of the two hash sequences (lone_row(), jc_count_seq()),
 * keeping no set.
 * Files are opened again by path; lines are read at their offset (pread), and
 * the needed lines of a compressed input are first copied, in one streaming
 * pass, to an unlinked temporary file. Standard input was spooled to such a
 * file before the first pass (reread_prepare()).
 */
#include "dedup.h"
#include "dedup-jaccard.h"

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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Exact mode drops candidates whose estimate is this many standard
 * deviations below the threshold (verify_candidates). */
#define PREFILTER_SD 3.5

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "simlsh-dedup: %s: %s (%s)\n", what, simlsh_strerror(rc),
            simlsh_error_name(rc));
    return -1;
}

static int cmp_pair(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

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
        r->vs.stdin_kept = 1;
        r->vs.stdin_base = (int64_t)at;
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
        r->vs.stdin_kept = 1;
        r->vs.stdin_base = 0;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The second pass                                                          */
/* ------------------------------------------------------------------------ */

/* A line input (--lines, --jsonl, or "-" as one document) during the second
 * pass: its lines are read by pread() from fd at base + offset, where the
 * offsets of a compressed input are first mapped into the copy of its
 * needed lines. */
struct source {
    int fd;       /* -1: not opened (no candidate in it) */
    int64_t base; /* offset of the stream's first byte in fd */
    int bad;      /* cannot be read again; msg says why */
    char msg[160];
    uint64_t *from, *to; /* compressed: offset in the stream -> in the copy */
    size_t nmap;
};

/* Per new document (id - first_new). */
enum {
    DS_NEED = 1,
    DS_BAD = 2,
    DS_WARNED = 4,
    DS_MULTI = 8, /* in more than one candidate pair */
    DS_LONE = 16  /* in one pair, with a document in no other: fused */
};

/* A pair of two documents that occur in no other pair (most pairs, when
 * duplicates come in twos): both texts are hashed by one worker and the
 * Jaccard counted on the way, without keeping either set. */
struct lone {
    uint64_t a, b;
    double s;     /* the candidate's estimate (NaN: from the index) */
    double j;     /* exact Jaccard, or -1: bad cannot be read (msg) */
    uint64_t bad; /* with j < 0 */
    char *msg;
};

/* A document of the current batch. */
struct slot {
    uint64_t id;
    void *vals; /* 32-bit: distinct hashes in text order; 64-bit: sorted */
    size_t n;
    uint64_t est; /* planned bytes */
    size_t chunk;
    int loaded; /* 1 ok, -1 unreadable (msg) */
    char *msg;  /* why it is unreadable (malloc'ed), or NULL */
};

struct vctx;
struct vworker {
    struct vctx *v;
    simlsh_shingleset *set;
    char *buf;
    size_t cap;
    uint64_t *hashes; /* a text's shingle hashes (32-bit sets) */
    size_t hcap;
    uint64_t *hashes2; /* lone pairs: the second text's hashes */
    size_t hcap2;
    uint32_t *v32[2]; /* lone pairs: both texts' hashes, 32 bits */
    size_t v32cap[2];
    struct jc_scratch jc; /* the Jaccard counts' */
    struct jc_table held; /* with held_valid: the values of document held_id,
                           * whose walk with another set failed */
    uint64_t held_id;
    int held_valid;
    char msg[160];
    pthread_t thread;
};

struct vctx {
    struct run *r;
    int bits32;
    size_t elem;
    struct source *src;
    uint8_t *state; /* DS_* per new document */
    size_t ndocs;   /* new documents: ids first_new .. first_new + ndocs - 1 */
    struct slot *slots;
    size_t nslots;
    /* parallel work: fn(worker, item) for item in [0, nitems) */
    void (*fn)(struct vworker *, size_t);
    size_t *items;
    size_t nitems;
    atomic_size_t next;
    struct vworker *w;
    size_t nw;
    /* rows of the current batch; a slice of them at a time */
    const uint64_t *ra, *rb;
    const uint64_t *ids; /* the batch's documents, ascending: slot i is ids[i] */
    double *exact;       /* per item of the slice: exact Jaccard, or -1 */
    uint64_t held, held_shingles;
    pthread_mutex_t big; /* one large document at a time */
    struct lone *lone;   /* fused pairs, items index them */
};

/* A document of more than this many bytes is shingled by one thread at a
 * time, and the thread gives its buffers back afterwards: building its set
 * takes about 20 bytes per byte of text (the library's set holds 8-byte
 * hashes with spare room, plus the copy into the compact array). */
#define BIG_DOC (UINT64_C(1) << 20)

/* After a document of more than this many bytes, the thread gives its
 * buffers back too: kept, they would hold about 20 bytes per byte of the
 * largest text until the end, per thread. */
#define KEEP_DOC (UINT64_C(1) << 17)

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
static int doc_text(struct vworker *w, uint64_t id, const char **text, size_t *len, char *msg,
                    size_t mcap)
{
    struct vctx *v = w->v;
    struct run *r = v->r;
    const struct docloc *loc = &r->locs[id - r->first_new];
    if (loc->input == LOC_SPOOL) { /* its owner read it (simlsh-dedup-mpi) */
        size_t n = (size_t)loc->len;
        buf_room(w, n + 1);
        errno = 0;
        if (!r->spool_open || pread_all(r->spool_fd, w->buf, n, (int64_t)loc->where) != 0) {
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
        const char *path = strlist_get(&r->paths, (size_t)loc->where, NULL);
        if (read_file(w, path, r->opt->max_doc_bytes, len, &mtime, msg, mcap) != 0)
            return -1;
        if (*len != r->id_bytes[id] || mtime != r->id_mtime[id]) {
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
    /* As the first pass extracted it (dedup-input.c, sign_json): the text
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

static void shingle_slot(struct vworker *w, struct slot *sl, const char *text, size_t len);

/* Worker item k: load the shingle set of slot items[k]. */
static void load_slot(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    struct slot *sl = &v->slots[v->items[k]];
    const char *text = NULL;
    size_t len = 0;
    int big = v->r->id_bytes[sl->id] > BIG_DOC;
    int release = v->r->id_bytes[sl->id] > KEEP_DOC;
    sl->loaded = -1;
    w->msg[0] = 0;
    if (big)
        pthread_mutex_lock(&v->big);
    if (doc_text(w, sl->id, &text, &len, w->msg, sizeof w->msg) == 0)
        shingle_slot(w, sl, text, len);
    if (sl->loaded != 1)
        sl->msg = xstrdup(w->msg);
    if (release) {
        simlsh_shingleset_free(w->set);
        w->set = NULL;
        free(w->buf);
        w->buf = NULL;
        w->cap = 0;
        free(w->hashes);
        w->hashes = NULL;
        w->hcap = 0;
        jc_free(&w->jc);
        jc_table_free(&w->held);
        w->held_valid = 0;
    }
    if (big)
        pthread_mutex_unlock(&v->big);
}

/* The text's shingle set through the library's set object (sorted, its
 * repeats folded while the text streams in): a malloc'ed array and its
 * count, or NULL (w->msg says why). */
static uint64_t *set_hashes(struct vworker *w, const char *text, size_t len, size_t *count)
{
    struct vctx *v = w->v;
    size_t n = 0;
    int rc =
        w->set ? simlsh_shingleset_clear(w->set) : simlsh_shingleset_new(&w->set, v->r->params);
    if (rc == 0)
        rc = simlsh_shingleset_add_text(w->set, text, len);
    if (rc == 0)
        rc = simlsh_shingleset_count(&n, w->set);
    uint64_t *h = rc == 0 ? xmalloc((n ? n : 1) * sizeof *h) : NULL;
    if (rc == 0)
        rc = simlsh_shingleset_hashes(h, n, &n, w->set);
    if (rc != 0) {
        free(h);
        snprintf(w->msg, sizeof w->msg, "cannot shingle it again: %s", simlsh_strerror(rc));
        return NULL;
    }
    *count = n;
    return h;
}

/* A long text (more than KEEP_DOC bytes) goes through a shingle set
 * instead, which folds its repeats while they stream in: the text's hashes
 * with repeats would take 8 bytes a byte, and the table to drop them 8 to
 * 16 more (a 2 MB copyright file that quotes one licence a hundred times
 * made 40 MB of them, for 20,000 distinct values). Sorted, not in text
 * order: the Jaccard below needs only membership. */
static void shingle_long32(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    size_t n = 0;
    uint64_t *h = set_hashes(w, text, len, &n);
    if (h == NULL)
        return;
    uint32_t *o = xmalloc((n ? n : 1) * sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = (uint32_t)h[i];
    free(h);
    sl->vals = o;
    sl->n = n;
    sl->loaded = 1;
}

/* The text's shingle hashes in text order, repeats and all, into *buf
 * (grown as needed): 0 and their count, or the library's error code. */
static int text_hashes(struct vworker *w, uint64_t **buf, size_t *cap, const char *text, size_t len,
                       size_t *n)
{
    struct vctx *v = w->v;
    *n = 0;
    int rc = w->set ? 0 : simlsh_shingleset_new(&w->set, v->r->params);
    /* room for the usual len + 1 hashes up front, so that a text is hashed
     * twice only when normalisation made more units than bytes */
    if (rc == 0 && *cap < len + 1) {
        free(*buf);
        *cap = len + 1;
        *buf = xmalloc(*cap * sizeof **buf);
    }
    if (rc == 0)
        rc = simlsh_shingleset_text_hashes(*buf, *cap, n, w->set, text, len);
    if (rc == SIMLSH_EBUFSIZE) {
        free(*buf);
        *cap = *n;
        *buf = xmalloc(*cap * sizeof **buf);
        rc = simlsh_shingleset_text_hashes(*buf, *cap, n, w->set, text, len);
    }
    if (rc != 0)
        snprintf(w->msg, sizeof w->msg, "cannot shingle it again: %s", simlsh_strerror(rc));
    return rc;
}

/* 32-bit hashes (HASH_BITS 32): the text's shingle hashes in text order,
 * their repeats dropped (jc_distinct()), kept in that order at
 * 4 bytes a shingle. No sort: sorting a set costs several times hashing it,
 * and the Jaccard below needs only membership. */
static void shingle_slot32(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    size_t n = 0;
    if (len > KEEP_DOC) {
        shingle_long32(w, sl, text, len);
        return;
    }
    if (text_hashes(w, &w->hashes, &w->hcap, text, len, &n) != 0)
        return;
    uint32_t *o = xmalloc((n ? n : 1) * sizeof *o);
    size_t m = jc_distinct(&w->jc, w->hashes, n, o);
    void *shrunk = m < n ? realloc(o, (m ? m : 1) * sizeof *o) : o;
    sl->vals = shrunk ? shrunk : o;
    sl->n = m;
    sl->loaded = 1;
}

static void shingle_slot(struct vworker *w, struct slot *sl, const char *text, size_t len)
{
    struct vctx *v = w->v;
    if (v->bits32) {
        shingle_slot32(w, sl, text, len);
        return;
    }
    size_t n = 0;
    uint64_t *h = set_hashes(w, text, len, &n);
    if (h == NULL)
        return;
    sl->vals = h;
    sl->n = n;
    sl->loaded = 1;
}

/* The fewest shared shingles that reach the threshold: the smallest i with
 * i / (total - i) >= t, computed as the library divides (so the early exits
 * below decide exactly as the full division would). */
static size_t min_inter(size_t total, double t)
{
    double guess = t * (double)total / (1.0 + t);
    size_t i = guess > 2.0 ? (size_t)guess - 2 : 0;
    while (i > 0 && (double)(i - 1) / (double)(total - i + 1) >= t)
        i--;
    while (i < total && (double)i / (double)(total - i) < t)
        i++;
    return i;
}

/* |A and B| / |A or B| of two sorted arrays, as simlsh_shingleset_jaccard()
 * computes it; a pair that cannot reach t (too different in size, or too
 * few shared shingles left to find) stops early and gives 0. */
#define JACCARD_BODY(T, FAST)                                          \
    const T *x = xa, *y = ya;                                          \
    if (na == nb && memcmp(x, y, na * sizeof(T)) == 0)                 \
        return 1.0;                                                    \
    size_t need = min_inter(na + nb, t);                               \
    if ((na < nb ? na : nb) < need)                                    \
        return 0.0;                                                    \
    size_t i = 0, j = 0, inter = 0;                                    \
    if (FAST)                                                          \
        return 0.0;                                                    \
    for (;;) {                                                         \
        size_t left = na - i < nb - j ? na - i : nb - j;               \
        if (left == 0)                                                 \
            break;                                                     \
        if (inter + left < need)                                       \
            return 0.0;                                                \
        /* each step moves i or j or both: `left` steps stay inside */ \
        for (size_t s = left < 512 ? left : 512; s > 0; s--) {         \
            T p = x[i], q = y[j];                                      \
            inter += p == q;                                           \
            i += p <= q;                                               \
            j += q <= p;                                               \
        }                                                              \
    }                                                                  \
    size_t uni = na + nb - inter;                                      \
    return uni == 0 ? 1.0 : (double)inter / (double)uni;

/* |A and B| / |A or B| of two 32-bit sets of distinct values (in text
 * order), as simlsh_shingleset_jaccard() computes it. Near-duplicates
 * line up: the walk of dedup-jaccard.c pairs most values and only what is
 * left over goes to a table. Sets that do not line up (candidates of
 * a large component, most of them below the threshold) are counted
 * through a table of x kept while the next rows share x, as rows in batch
 * order mostly do, stopping once too few values are left to reach t; once
 * a walk with x has failed, its next rows go to the table directly. A
 * pair that cannot reach t (too different in size) gives 0 at once. */
static double jaccard32(struct vworker *w, const struct slot *x, const struct slot *y, double t)
{
    const uint32_t *xa = x->vals, *ya = y->vals;
    size_t na = x->n, nb = y->n;
    if (na == nb && memcmp(xa, ya, na * sizeof *xa) == 0)
        return 1.0;
    size_t need = min_inter(na + nb, t);
    if ((na < nb ? na : nb) < need)
        return 0.0;
    /* x's table is made only after a walk with x failed: the next rows
     * with x skip the walk (in a large component of unlike documents most
     * would fail too) */
    int held = w->held_valid && w->held_id == x->id;
    size_t inter;
    size_t paired = held ? 0 : jc_walk(&w->jc, xa, na, ya, nb);
    if (paired > 0 && na + nb - 2 * paired <= (na + nb) / 4) {
        inter = jc_inter_left(&w->jc, xa, na, ya, nb, paired);
    } else {
        if (!held) {
            jc_fill(&w->held, xa, na);
            w->held_id = x->id;
            w->held_valid = 1;
        }
        inter = jc_probe(&w->held, ya, nb, need);
    }
    if (inter < need)
        return 0.0;
    size_t uni = na + nb - inter;
    return uni == 0 ? 1.0 : (double)inter / (double)uni;
}

static double jaccard64(const void *xa, size_t na, const void *ya, size_t nb, double t)
{
    JACCARD_BODY(uint64_t, 0)
}

static size_t slot_of(const struct vctx *v, uint64_t id)
{
    const uint64_t *p = bsearch(&id, v->ids, v->nslots, sizeof id, cmp_u64);
    return (size_t)(p - v->ids);
}

/* Worker item k: the exact Jaccard of row items[k], when both sets are
 * loaded (-1 otherwise). */
static void jaccard_row(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    size_t row = v->items[k];
    const struct slot *x = &v->slots[slot_of(v, v->ra[row])];
    const struct slot *y = &v->slots[slot_of(v, v->rb[row])];
    if (x->loaded != 1 || y->loaded != 1) {
        v->exact[k] = -1;
        return;
    }
    double t = v->r->threshold;
    v->exact[k] = v->bits32 ? jaccard32(w, x, y, t) : jaccard64(x->vals, x->n, y->vals, y->n, t);
}

/* The low 32 bits of n hashes into w->v32[side] (grown as needed). */
static const uint32_t *narrow(struct vworker *w, int side, const uint64_t *h, size_t n)
{
    if (w->v32cap[side] < n) {
        free(w->v32[side]);
        w->v32cap[side] = n;
        w->v32[side] = xmalloc(n * sizeof *w->v32[side]);
    }
    uint32_t *o = w->v32[side];
    for (size_t i = 0; i < n; i++)
        o[i] = (uint32_t)h[i];
    return o;
}

/* |A and B| / |A or B| of two texts' 32-bit hashes (in text order, with
 * repeats), as jaccard32() decides it, counted without building either
 * set (jc_count_seq()). */
static double fused32(struct vworker *w, const uint64_t *ha, size_t na, const uint64_t *hb,
                      size_t nb, double t)
{
    struct jc_counts c;
    jc_count_seq(&w->jc, narrow(w, 0, ha, na), na, narrow(w, 1, hb, nb), nb, &c);
    size_t uni = c.a + c.b - c.both;
    if (uni == 0)
        return 1.0;
    if (c.both < min_inter(c.a + c.b, t))
        return 0.0;
    return (double)c.both / (double)uni;
}

/* Worker item k: the fused pair lone[items[k]]. */
static void lone_row(struct vworker *w, size_t k)
{
    struct vctx *v = w->v;
    struct lone *p = &v->lone[v->items[k]];
    const char *text = NULL;
    size_t len = 0, na = 0, nb = 0;
    p->j = -1;
    w->msg[0] = 0;
    p->bad = p->a;
    if (doc_text(w, p->a, &text, &len, w->msg, sizeof w->msg) != 0 ||
        text_hashes(w, &w->hashes, &w->hcap, text, len, &na) != 0)
        goto fail;
    p->bad = p->b;
    if (doc_text(w, p->b, &text, &len, w->msg, sizeof w->msg) != 0 ||
        text_hashes(w, &w->hashes2, &w->hcap2, text, len, &nb) != 0)
        goto fail;
    p->j = fused32(w, w->hashes, na, w->hashes2, nb, v->r->threshold);
    return;
fail:
    p->msg = xstrdup(w->msg);
}

/* Items are taken in runs of PAR_RUN, so a thread works on neighbouring
 * rows (which share documents) and the counter is touched less often. */
#define PAR_RUN 16

static void *vworker_main(void *arg)
{
    struct vworker *w = arg;
    struct vctx *v = w->v;
    for (;;) {
        size_t i = atomic_fetch_add(&v->next, PAR_RUN);
        if (i >= v->nitems)
            break;
        size_t e = v->nitems - i < PAR_RUN ? v->nitems : i + PAR_RUN;
        for (; i < e; i++)
            v->fn(w, i);
    }
    return NULL;
}

/* fn over items 0..n-1 on the workers; the results land in per-item
 * places, so they do not depend on which thread ran what. */
static void par_for(struct vctx *v, void (*fn)(struct vworker *, size_t), size_t n)
{
    v->fn = fn;
    v->nitems = n;
    atomic_store(&v->next, 0);
    /* With two or more threads the calling thread only waits, as the
     * library's calls do (pool.c): its CPU time is then the serial part. */
    size_t want = v->nw < n ? v->nw : n, started = 0;
    if (want > 1) {
        for (size_t t = 0; t < want; t++) {
            if (pthread_create(&v->w[t].thread, NULL, vworker_main, &v->w[t]) != 0)
                break; /* fewer threads: same results */
            started++;
        }
    }
    if (started < want || want == 0)
        vworker_main(&v->w[started < v->nw ? started : 0]);
    for (size_t t = 0; t < started; t++)
        pthread_join(v->w[t].thread, NULL);
}

static void unload(struct vctx *v, struct slot *sl)
{
    if (sl->loaded == 1) {
        v->held -= (uint64_t)sl->n * v->elem;
        v->held_shingles -= sl->n;
    }
    free(sl->vals);
    sl->vals = NULL;
    free(sl->msg);
    sl->msg = NULL;
    sl->n = 0;
    sl->loaded = 0;
}

/* Document id cannot be read again (msg says why): marked, and reported
 * once. */
static void report_unread(struct vctx *v, uint64_t id, const char *msg)
{
    struct run *r = v->r;
    uint8_t *st = &v->state[id - r->first_new];
    *st |= DS_BAD;
    if (*st & DS_WARNED)
        return;
    *st |= DS_WARNED;
    r->vs.docs_unread++;
    size_t nl = 0;
    const char *name = NULL;
    if (id < r->names.count)
        name = strlist_get(&r->names, id, &nl);
    if (name)
        warnx_doc(r, "%s: %s; its pairs are verified by estimate", qnamen(name, nl), msg);
    else /* the MPI driver's ranks know only the names they read */
        warnx_doc(r, "document %" PRIu64 ": %s; its pairs are verified by estimate", id, msg);
}

/* Loads the slots of chunks ci and cj that are not loaded and unloads the
 * others; reports documents that cannot be read (once each). */
static void load_chunks(struct vctx *v, size_t ci, size_t cj)
{
    struct run *r = v->r;
    size_t n = 0;
    for (size_t i = 0; i < v->nslots; i++) {
        struct slot *sl = &v->slots[i];
        int want = sl->chunk == ci || sl->chunk == cj;
        if (!want && sl->loaded)
            unload(v, sl);
        else if (want && !sl->loaded && !(v->state[sl->id - r->first_new] & DS_BAD))
            v->items[n++] = i;
    }
    par_for(v, load_slot, n);
    for (size_t k = 0; k < n; k++) {
        struct slot *sl = &v->slots[v->items[k]];
        r->vs.reads++;
        if (sl->loaded == 1) {
            v->held += (uint64_t)sl->n * v->elem;
            v->held_shingles += sl->n;
            continue;
        }
        report_unread(v, sl->id, sl->msg);
    }
    if (v->held > r->vs.set_bytes_peak)
        r->vs.set_bytes_peak = v->held;
    if (v->held_shingles > r->vs.shingles_peak)
        r->vs.shingles_peak = v->held_shingles;
}

/* The MinHash estimate of a and b from the index's stored signatures, or
 * -1 (no index, or no stored signatures): what a pair whose documents
 * cannot be read again is decided by. */
static double index_estimate(const struct run *r, uint64_t a, uint64_t b)
{
    simlsh_signature *x = NULL, *y = NULL;
    double s = -1;
    if (r->index != NULL && simlsh_index_signature(&x, r->index, a) == 0 &&
        simlsh_index_signature(&y, r->index, b) == 0 && simlsh_signature_jaccard(&s, x, y) != 0)
        s = -1;
    simlsh_signature_free(x);
    simlsh_signature_free(y);
    return s;
}

/* s: the pair's estimate, or NaN to ask the index for it. */
static void decide_by_estimate(struct run *r, struct pairvec *out, uint64_t a, uint64_t b, double s)
{
    r->vs.estimated++;
    if (s != s)
        s = index_estimate(r, a, b);
    if (s < 0 || s >= r->threshold)
        pairvec_add(out, a, b, s);
}

/* Rows of a cut batch, by block (chunk lo, chunk hi), then row. */
struct blockrow {
    uint32_t lo, hi;
    size_t row;
};

static int cmp_blockrow(const void *x, const void *y)
{
    const struct blockrow *p = x, *q = y;
    if (p->lo != q->lo)
        return p->lo < q->lo ? -1 : 1;
    if (p->hi != q->hi)
        return p->hi < q->hi ? -1 : 1;
    return p->row < q->row ? -1 : p->row > q->row;
}

/* The sets of a batch: at most this much even when the budget allows more,
 * so that a batch's sets are still in cache when its rows are verified and
 * the next batch reuses their memory instead of faulting in more. */
#define SET_BATCH_BYTES (UINT64_C(16) << 20)

/* Rows verified at once: bounds the per-row scratch whatever the batch. */
#define SLICE 65536

/* Verifies rows[0..n) (row numbers of the batch; NULL: rows 0..n), whose
 * documents are loaded, slice by slice. */
static void verify_rows(struct vctx *v, const size_t *rows, size_t n, const double *rs,
                        struct pairvec *out)
{
    struct run *r = v->r;
    for (size_t at = 0; at < n; at += SLICE) {
        size_t m = n - at < SLICE ? n - at : SLICE;
        for (size_t k = 0; k < m; k++)
            v->items[k] = rows ? rows[at + k] : at + k;
        par_for(v, jaccard_row, m);
        for (size_t k = 0; k < m; k++) {
            size_t row = v->items[k];
            if (v->exact[k] >= 0) {
                r->vs.exact++;
                if (v->exact[k] >= r->threshold)
                    pairvec_add(out, v->ra[row], v->rb[row], v->exact[k]);
            } else {
                decide_by_estimate(r, out, v->ra[row], v->rb[row], rs ? rs[row] : NAN);
            }
        }
    }
}

/* --verify-memory 0 (the default): the sets of one batch may take half the
 * memory the run has needed so far, plus 16 MiB, between 16 and 256 MiB. The
 * first pass (signatures, index, candidates) is what --verify estimate needs
 * too, so the second pass adds at most about half of that: exact answers
 * for about 1.5 times the memory of estimated ones. */
uint64_t verify_budget(const struct run *r)
{
    if (r->opt->verify_memory)
        return r->opt->verify_memory;
    struct rusage ru;
    uint64_t peak = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0)
        peak = (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
    uint64_t b = peak / 2 + (UINT64_C(16) << 20), hi = UINT64_C(256) << 20;
    return b > hi ? hi : b;
}

/* One batch: documents ids[0..nids) (ascending), rows [0, nrows). When the
 * planned sets exceed the budget, the documents are cut in chunks of half
 * the budget and the rows are verified block by block (chunk i x chunk j),
 * holding two chunks at a time. */
static void verify_batch(struct vctx *v, const uint64_t *ids, size_t nids, const uint64_t *ra,
                         const uint64_t *rb, const double *rs, size_t nrows, struct pairvec *out)
{
    struct run *r = v->r;
    uint64_t budget = r->vs.budget, total = 0;
    v->slots = xrealloc(v->slots, (nids ? nids : 1) * sizeof *v->slots);
    v->nslots = nids;
    v->ids = ids;
    v->ra = ra;
    v->rb = rb;
    for (size_t i = 0; i < nids; i++) {
        struct slot *sl = &v->slots[i];
        memset(sl, 0, sizeof *sl);
        sl->id = ids[i];
        sl->est = r->id_bytes[ids[i]] * v->elem;
        total += sl->est;
    }
    size_t nchunks = 1;
    if (total > budget) {
        uint64_t fill = 0;
        nchunks = 0;
        for (size_t i = 0; i < nids; i++) {
            if (i > 0 && fill + v->slots[i].est > budget / 2) {
                nchunks++;
                fill = 0;
            }
            fill += v->slots[i].est;
            v->slots[i].chunk = nchunks;
        }
        nchunks++;
    }
    v->items = xmalloc((nids > SLICE ? nids : SLICE) * sizeof *v->items);
    v->exact = xmalloc(SLICE * sizeof *v->exact);
    if (nchunks == 1) {
        load_chunks(v, 0, 0);
        verify_rows(v, NULL, nrows, rs, out);
    } else {
        struct blockrow *br = xmalloc((nrows ? nrows : 1) * sizeof *br);
        for (size_t k = 0; k < nrows; k++) {
            size_t ca = v->slots[slot_of(v, ra[k])].chunk, cb = v->slots[slot_of(v, rb[k])].chunk;
            br[k].lo = (uint32_t)(ca < cb ? ca : cb);
            br[k].hi = (uint32_t)(ca < cb ? cb : ca);
            br[k].row = k;
        }
        qsort(br, nrows, sizeof *br, cmp_blockrow);
        size_t *rows = xmalloc((nrows ? nrows : 1) * sizeof *rows);
        for (size_t k = 0; k < nrows; k++)
            rows[k] = br[k].row;
        for (size_t k = 0; k < nrows;) {
            size_t e = k;
            while (e < nrows && br[e].lo == br[k].lo && br[e].hi == br[k].hi)
                e++;
            load_chunks(v, br[k].lo, br[k].hi);
            verify_rows(v, rows + k, e - k, rs, out);
            k = e;
        }
        free(rows);
        free(br);
    }
    for (size_t i = 0; i < nids; i++)
        unload(v, &v->slots[i]);
    free(v->exact);
    free(v->items);
    v->items = NULL;
    v->exact = NULL;
}

/* The line inputs that hold candidates: opened, checked, and for a
 * compressed one its needed lines copied to a temporary file. */
static void open_sources(struct vctx *v)
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
        const struct docloc *loc = &r->locs[k];
        if (!(v->state[k] & DS_NEED) || loc->kind == DOCK_PATH || loc->input == LOC_SPOOL)
            continue;
        struct source *s = &v->src[loc->input];
        if (s->fd >= 0 || s->bad)
            continue;
        const struct input *in = &o->inputs[loc->input];
        if (!strcmp(in->arg, "-")) {
            if (!r->vs.stdin_kept) {
                s->bad = 1;
                snprintf(s->msg, sizeof s->msg, "standard input was not kept");
                continue;
            }
            s->fd = dup(STDIN_FILENO);
            s->base = r->vs.stdin_base;
        } else {
            struct stat st;
            s->fd = open_regular(in->arg, &st, s->msg, sizeof s->msg);
            int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
            if (s->fd >= 0 && m != r->id_mtime[r->first_new + k]) {
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
            nm += (v->state[q] & DS_NEED) && r->locs[q].input == loc->input &&
                  r->locs[q].kind != DOCK_PATH;
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
            const struct docloc *l = &r->locs[q];
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

static void close_sources(struct vctx *v)
{
    for (size_t i = 0; i < v->r->opt->ninputs; i++) {
        if (v->src[i].fd >= 0)
            close(v->src[i].fd);
        free(v->src[i].from);
        free(v->src[i].to);
    }
    free(v->src);
}

/* Exact mode: pairs with a document from --index are decided by their
 * estimate (its text is not known); the others by the second pass. The
 * candidates are columns ca, cb, cs (n rows) of ids below first_new +
 * ndocs; cs NULL: estimates, where needed, come from the index. With
 * owned, ca and cb are the caller's malloc'ed arrays, freed once the
 * candidates are in batches. */
static int verify_exact_cols(struct run *r, uint64_t *ca, uint64_t *cb, double *cs, size_t n,
                             size_t ndocs, int owned, struct pairvec *out)
{
    uint64_t first_new = r->first_new;
    struct vctx v;
    memset(&v, 0, sizeof v);
    v.r = r;
    v.ndocs = ndocs;
    int64_t bits = 32;
    simlsh_params_get_int(r->params, SIMLSH_PARAM_HASH_BITS, &bits);
    v.bits32 = bits == 32;
    v.elem = v.bits32 ? 4 : 8;
    r->vs.bytes_per_shingle = (int)v.elem;
    v.state = calloc(ndocs ? ndocs : 1, 1);
    if (!v.state)
        die_oom();

    /* New-new pairs go to the second pass, the others are decided now. */
    uint64_t *na = NULL, *nb = NULL;
    double *ns = NULL;
    size_t m = 0;
    if (first_new > 0) {
        na = xmalloc((n ? n : 1) * sizeof *na);
        nb = xmalloc((n ? n : 1) * sizeof *nb);
        ns = cs ? xmalloc((n ? n : 1) * sizeof *ns) : NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t x = ca[i] < cb[i] ? ca[i] : cb[i], y = ca[i] < cb[i] ? cb[i] : ca[i];
        if (x < first_new) {
            decide_by_estimate(r, out, x, y, cs ? cs[i] : NAN);
            continue;
        }
        uint8_t *sx = &v.state[x - first_new], *sy = &v.state[y - first_new];
        *sx |= (uint8_t)(*sx & DS_NEED ? DS_MULTI : DS_NEED);
        *sy |= (uint8_t)(*sy & DS_NEED ? DS_MULTI : DS_NEED);
        if (first_new > 0) {
            na[m] = x;
            nb[m] = y;
            if (ns)
                ns[m] = cs[i];
            m++;
        }
    }
    if (first_new == 0)
        m = n;
    /* Pairs whose two documents are in no other pair are fused (lone_row)
     * and leave the batches; the others stay, in order. */
    uint64_t *wa = first_new ? na : ca, *wb = first_new ? nb : cb;
    double *ws = first_new ? ns : cs;
    struct lone *lone = NULL;
    size_t nlone = 0;
    for (size_t pass = 0; v.bits32 && pass < 2; pass++) {
        size_t kept = 0;
        for (size_t i = 0; i < m; i++) {
            uint64_t x = wa[i], y = wb[i];
            int fuse = !((v.state[x - first_new] | v.state[y - first_new]) & DS_MULTI) &&
                       r->id_bytes[x] <= KEEP_DOC && r->id_bytes[y] <= KEEP_DOC;
            if (pass == 0) {
                nlone += (size_t)fuse;
                continue;
            }
            if (fuse) {
                struct lone *p = &lone[nlone++];
                p->a = x;
                p->b = y;
                p->s = ws ? ws[i] : NAN;
                p->msg = NULL;
                v.state[x - first_new] |= DS_LONE;
                v.state[y - first_new] |= DS_LONE;
                continue;
            }
            wa[kept] = x;
            wb[kept] = y;
            if (ws)
                ws[kept] = ws[i];
            kept++;
        }
        if (pass == 0) {
            lone = xmalloc((nlone ? nlone : 1) * sizeof *lone);
            nlone = 0;
        } else {
            m = kept;
        }
    }
    uint64_t planned = 0, cdocs = 0;
    for (size_t k = 0; k < ndocs; k++)
        if ((v.state[k] & DS_NEED) && !(v.state[k] & DS_LONE)) {
            planned += r->id_bytes[first_new + k] * v.elem;
            cdocs++;
        }
    /* Batches of whole components while they fit: max_docs from the mean
     * planned size (verify_batch cuts a batch that is larger still). */
    r->vs.budget = verify_budget(r);
    uint64_t budget = r->vs.budget < SET_BATCH_BYTES ? r->vs.budget : SET_BATCH_BYTES;
    size_t max_docs;
    if (planned <= budget)
        max_docs = cdocs;
    else
        max_docs = (size_t)((double)budget / ((double)planned / (double)cdocs));
    if (max_docs < 2)
        max_docs = 2;
    simlsh_results *batches = NULL;
    size_t nbatches = 0;
    int rc = simlsh_results_new(&batches, NULL);
    if (rc == 0 && m > 0)
        rc = simlsh_group_batches(batches, &nbatches, first_new ? na : ca, first_new ? nb : cb,
                                  first_new ? ns : cs, m, max_docs);
    free(na);
    free(nb);
    free(ns);
    if (rc != 0) {
        free(lone);
        free(v.state);
        simlsh_results_free(batches);
        return lib_fail("batches of candidate pairs", rc);
    }
    /* the candidates are in the batches now */
    if (owned) {
        free(ca);
        free(cb);
        ca = cb = NULL;
    }
    r->vs.batches = nbatches;

    open_sources(&v);
    v.nw = r->nthreads > 1 ? (size_t)r->nthreads : 1;
    v.w = calloc(v.nw, sizeof *v.w);
    if (!v.w)
        die_oom();
    for (size_t t = 0; t < v.nw; t++)
        v.w[t].v = &v;
    pthread_mutex_init(&v.big, NULL);
#if defined(__GLIBC__)
    /* Sets of large documents come and go: a fixed threshold maps each
     * block of 1 MiB or more on its own, and gives it back when freed. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* and memory freed at the end of a batch stays for the next one */
    mallopt(M_TRIM_THRESHOLD, (int)(SET_BATCH_BYTES * 2));
    /* The first pass and the pairs left freed memory in the main arena;
     * the workers' sets go to arenas of their own, so that memory would
     * stay resident under them. Give it back first. */
    malloc_trim(0);
#endif
    if (nlone > 0) {
        v.lone = lone;
        v.items = xmalloc(SLICE * sizeof *v.items);
        for (size_t at = 0; at < nlone; at += SLICE) {
            size_t cnt = nlone - at < SLICE ? nlone - at : SLICE;
            for (size_t k = 0; k < cnt; k++)
                v.items[k] = at + k;
            par_for(&v, lone_row, cnt);
        }
        free(v.items);
        v.items = NULL;
        for (size_t k = 0; k < nlone; k++) {
            struct lone *p = &lone[k];
            r->vs.reads += p->j >= 0 || p->bad == p->b ? 2 : 1;
            if (p->j >= 0) {
                r->vs.exact++;
                if (p->j >= r->threshold)
                    pairvec_add(out, p->a, p->b, p->j);
                continue;
            }
            report_unread(&v, p->bad, p->msg);
            decide_by_estimate(r, out, p->a, p->b, p->s);
            free(p->msg);
        }
        v.lone = NULL;
    }
    free(lone);
    uint64_t *ids = xmalloc(max_docs * sizeof *ids);
    size_t idcap = max_docs;
    const uint64_t *ba = simlsh_results_a(batches), *bb = simlsh_results_b(batches);
    const double *bs = cs ? simlsh_results_scores(batches) : NULL;
    for (size_t q = 0; q < nbatches && rc == 0; q++) {
        size_t lo = 0, hi = 0, nids = 0;
        rc = simlsh_results_offset(&lo, batches, q);
        if (rc == 0)
            rc = simlsh_results_offset(&hi, batches, q + 1);
        if (rc == 0)
            rc = simlsh_group_batch_ids(NULL, 0, &nids, batches, q);
        if (rc == 0 && nids > idcap) {
            idcap = nids;
            ids = xrealloc(ids, idcap * sizeof *ids);
        }
        if (rc == 0)
            rc = simlsh_group_batch_ids(ids, idcap, &nids, batches, q);
        if (rc == 0)
            verify_batch(&v, ids, nids, ba + lo, bb + lo, bs ? bs + lo : NULL, hi - lo, out);
    }
    free(ids);
    for (size_t t = 0; t < v.nw; t++) {
        simlsh_shingleset_free(v.w[t].set);
        free(v.w[t].buf);
        free(v.w[t].hashes);
        jc_free(&v.w[t].jc);
        jc_table_free(&v.w[t].held);
        free(v.w[t].v32[0]);
        free(v.w[t].v32[1]);
        free(v.w[t].hashes2);
    }
    free(v.w);
    pthread_mutex_destroy(&v.big);
    free(v.slots);
    close_sources(&v);
    free(v.state);
    simlsh_results_free(batches);
    return rc != 0 ? lib_fail("verification", rc) : 0;
}

/* The candidates' ids go on alone (16 bytes a pair, not the results' 24),
 * and the results are freed before the batches are made: their scores are
 * needed only for a document that cannot be read again, and the index
 * gives those. */
static int verify_exact(struct run *r, simlsh_results **candp, struct pairvec *out)
{
    simlsh_results *cand = *candp;
    size_t n = simlsh_results_count(cand);
    uint64_t *ca = xmalloc((n ? n : 1) * sizeof *ca), *cb = xmalloc((n ? n : 1) * sizeof *cb);
    if (n > 0) {
        memcpy(ca, simlsh_results_a(cand), n * sizeof *ca);
        memcpy(cb, simlsh_results_b(cand), n * sizeof *cb);
    }
    simlsh_results_free(cand);
    *candp = NULL;
#if defined(__GLIBC__)
    malloc_trim(0); /* what the pairs' threads freed, before the batches */
#endif
    return verify_exact_cols(r, ca, cb, NULL, n, r->names.count - r->first_new, 1, out);
}

double verify_prefilter(const struct run *r)
{
    /* The banding for recall also makes many candidates far below the
     * threshold (on man pages, 60 times as many as true pairs). Their
     * MinHash estimate sorts them out first: a pair at the threshold t
     * has an estimate below t - 3.5 sd (sd = sqrt(t (1 - t) / num_perm))
     * with probability about 2.3e-4, a pair above t less often: with the
     * banding's P(t) = 0.9923 for --recall 0.99, 0.9921 together. On man
     * pages, 4 sd would keep 1.12 million candidates where 3.5 keeps 0.92
     * and the same 130 thousand pairs but 10. */
    int64_t np = 128;
    double thr = r->threshold;
    simlsh_params_get_int(r->params, SIMLSH_PARAM_NUM_PERM, &np);
    double low = thr - PREFILTER_SD * sqrt(thr * (1 - thr) / (double)np);
    return low > 0 ? low : 0;
}

int verify_exact_pairs(struct run *r, const struct pair *cand, size_t n, size_t ndocs,
                       struct pair **edges, size_t *nedges)
{
    uint64_t *ca = xmalloc((n ? n : 1) * sizeof *ca), *cb = xmalloc((n ? n : 1) * sizeof *cb);
    double *cs = xmalloc((n ? n : 1) * sizeof *cs);
    for (size_t i = 0; i < n; i++) {
        ca[i] = cand[i].a;
        cb[i] = cand[i].b;
        cs[i] = cand[i].score;
    }
    struct pairvec out = {NULL, 0, 0};
    int rc = verify_exact_cols(r, ca, cb, cs, n, ndocs, 0, &out);
    free(ca);
    free(cb);
    free(cs);
    if (rc != 0) {
        free(out.v);
        return -1;
    }
    if (out.n > 1)
        qsort(out.v, out.n, sizeof *out.v, cmp_pair);
    *edges = out.v ? out.v : xmalloc(sizeof *out.v);
    *nedges = out.n;
    return 0;
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
        state[ids[i] - r->first_new] = DS_NEED;
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

int verify_candidates(struct run *r, struct pair **edges, size_t *n)
{
    phase_switch(r, PH_PAIRS);
#if defined(__GLIBC__)
    /* The readers' buffers were freed in arenas of their own threads; the
     * pairs and the second pass allocate elsewhere, so that memory would
     * stay resident under them. */
    if (r->opt->verify == VERIFY_EXACT)
        malloc_trim(0);
#endif
    simlsh_results *res = NULL;
    int rc = simlsh_results_new(&res, NULL);
    if (rc != 0)
        return lib_fail("results", rc);
    int mode = r->opt->verify;
    int flags = mode == VERIFY_ESTIMATE ? SIMLSH_QUERY_VERIFY : 0;
    double thr = r->threshold;
    if (mode == VERIFY_EXACT) {
        double low = verify_prefilter(r);
        if (low > 0) {
            flags = SIMLSH_QUERY_VERIFY;
            thr = low;
        }
    }
    r->vs.prefilter = flags && mode == VERIFY_EXACT ? thr : 0;
    uint32_t nt = r->nthreads > 0 ? (uint32_t)r->nthreads : 1;
    /* --max-pairs bounds --output pairs only: groups are never cut short */
    size_t max_pairs = r->opt->output == OUT_PAIRS ? r->opt->max_pairs : 0;
    rc = simlsh_index_pairs_v2(res, r->index, flags, max_pairs, thr, nt);
    if (rc == SIMLSH_EUNSUPPORTED && mode == VERIFY_EXACT && flags) {
        /* an index without stored signatures has no estimates */
        r->vs.prefilter = 0;
        rc = simlsh_index_pairs_v2(res, r->index, 0, max_pairs, r->threshold, nt);
    }
    if (rc != 0) {
        simlsh_results_free(res);
        return lib_fail("enumerating pairs", rc);
    }
    if (simlsh_results_truncated(res) == 1) {
        r->truncated = 1;
        fprintf(stderr,
                "simlsh-dedup: warning: stopped at %zu candidate pairs (--max-pairs);"
                " results are incomplete\n",
                r->opt->max_pairs);
    }
    size_t count = simlsh_results_count(res);
    const uint64_t *a = simlsh_results_a(res), *b = simlsh_results_b(res);
    const double *s = simlsh_results_scores(res);
    for (size_t i = 0; i < count; i++) {
        uint64_t y = a[i] < b[i] ? b[i] : a[i];
        if (y >= r->names.count) {
            fprintf(stderr,
                    "simlsh-dedup: the index holds id %" PRIu64
                    " that has no name; was it saved by another program?\n",
                    y);
            simlsh_results_free(res);
            return -1;
        }
    }
    r->vs.candidates = count;
    struct pairvec out = {NULL, 0, 0};
    if (mode == VERIFY_EXACT) {
        phase_switch(r, PH_VERIFY);
        rc = verify_exact(r, &res, &out);
    } else {
        for (size_t i = 0; i < count; i++)
            pairvec_add(&out, a[i], b[i], s ? s[i] : -1.0);
    }
    simlsh_results_free(res);
    if (rc != 0) {
        free(out.v);
        return -1;
    }
    if (out.n > 1)
        qsort(out.v, out.n, sizeof *out.v, cmp_pair);
    *edges = out.v ? out.v : xmalloc(sizeof *out.v);
    *n = out.n;
    return 0;
}
