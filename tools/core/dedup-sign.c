/*
 * simlsh-dedup: the signing workers. Each worker takes the oldest batch
 * waiting (dedup-pipeline.h), reads what the batch names (dedup-read.c),
 * signs every document with its own signature object and keeps only the
 * values; the main thread inserts them in input order (dedup-insert.c).
 */
#include "dedup-jsonl.h"
#include "dedup-pipeline.h"

#if DEDUP_HAVE_JANSSON
#include <jansson.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void sign_text(struct doc *d, simlsh_signature *sig, const char *text, size_t len)
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
static int sign_json_fast(struct worker *w, const struct options *opt, struct batch *b,
                          struct doc *d, simlsh_signature *sig)
{
    const char *line = b->arena + d->text_off;
    int by_line = !strcmp(opt->id_field, "-");
    struct jstr id = {NULL, 0, 0}, text = {NULL, 0, 0};
    int id_int = 0;
    if (js_record(line, d->text_len, opt->id_field, opt->text_field, by_line, &id, &id_int, &text))
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
        sign_text(d, sig, (const char *)text.s, text.len);
        return 1;
    }
    if (w->jcap < text.len) {
        w->jcap = text.len;
        w->jbuf = xrealloc(w->jbuf, w->jcap);
    }
    size_t n = js_decode(&text, w->jbuf);
    sign_text(d, sig, w->jbuf, n);
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

static void sign_json(const struct options *o, struct batch *b, struct doc *d,
                      simlsh_signature *sig)
{
    json_error_t jerr;
    json_t *obj = json_loadb(b->arena + d->text_off, d->text_len, JSON_ALLOW_NUL, &jerr);
    if (!obj) {
        d->status = DOC_EJSON;
        snprintf(d->msg, sizeof d->msg, "invalid JSON: %.80s (column %d)", jerr.text, jerr.column);
        return;
    }
    const char *idf = o->id_field, *tf = o->text_field;
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
            sign_text(d, sig, json_string_value(text), json_string_length(text));
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
        sign_text(d, sig, json_string_value(text), json_string_length(text));
    }
    json_decref(obj);
}
#endif

void sign_batch(struct worker *w, struct batch *b)
{
    struct run *r = w->r;
    if (b->is_range) {
        double c0 = thread_cpu_seconds();
        read_range(r->opt, b);
        b->cpu_read = thread_cpu_seconds() - c0;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct doc *d = &b->docs[i];
        if (d->status != DOC_OK)
            continue; /* skipped while reading */
        /* One signature object per thread: its buffers grow with the
         * documents signed, too large to keep one per queued document. */
        if (!w->sig) {
            int rc = simlsh_signature_new(&w->sig, r->store.params);
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
            const char *path = strlist_get(&r->in.paths, d->path, NULL);
            if (read_path_doc(w, r->opt, path, d, &len) != 0)
                break;
            d->bytes = len;
            sign_text(d, sig, w->buf, len);
            break;
        }
        case DOCK_TEXT:
            sign_text(d, sig, b->arena + d->text_off, d->text_len);
            break;
#if DEDUP_HAVE_JANSSON
        case DOCK_JSON:
            skip_bom(b, d);
            if (r->pipe->json_slow || !sign_json_fast(w, r->opt, b, d, sig))
                sign_json(r->opt, b, d, sig);
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
            b->values = xrealloc(b->values, b->cap * r->pipe->num_perm * sizeof *b->values);
            b->values_cap = b->cap;
        }
        size_t count = 0;
        rc = simlsh_signature_values(b->values + i * r->pipe->num_perm, r->pipe->num_perm, &count,
                                     sig);
        if (rc != 0) {
            d->status = DOC_ELIB;
            d->err = rc;
        }
    }
}

void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->r;
    double cpu_read = 0, cpu_sign = 0;
    for (;;) {
        pthread_mutex_lock(&r->pipe->mu);
        while (!r->pipe->todo_head && !r->pipe->stopping)
            pthread_cond_wait(&r->pipe->work_cv, &r->pipe->mu);
        struct batch *b = r->pipe->stopping ? NULL : r->pipe->todo_head;
        if (!b) {
            pthread_mutex_unlock(&r->pipe->mu);
            break;
        }
        r->pipe->todo_head = b->todo_next;
        if (!r->pipe->todo_head)
            r->pipe->todo_tail = NULL;
        pthread_mutex_unlock(&r->pipe->mu);

        double c0 = thread_cpu_seconds();
        sign_batch(w, b);
        double c = thread_cpu_seconds() - c0;
        cpu_read += b->cpu_read;
        cpu_sign += c - b->cpu_read;

        pthread_mutex_lock(&r->pipe->mu);
        b->done = 1;
        pthread_cond_broadcast(&r->pipe->done_cv);
        pthread_mutex_unlock(&r->pipe->mu);
    }
    pthread_mutex_lock(&r->pipe->mu);
    r->stats.worker_cpu[w->index] = thread_cpu_seconds();
    r->stats.cpu_reading += cpu_read;
    r->stats.cpu_signing += cpu_sign;
    pthread_mutex_unlock(&r->pipe->mu);
    simlsh_signature_free(w->sig);
    free(w->jbuf);
    free(w->buf);
    free(w);
    return NULL;
}
