/*
 * simlsh-dedup: the JSONL scanner (dedup-jsonl.c). Most records are
 * objects whose id and text fields are plain JSON; they are read in one
 * pass, with no allocation, the text used in place when it holds no
 * escape. Whatever the scanner is not sure of is left to jansson, which
 * then decides: what is accepted, and every message, stay jansson's. Used
 * only in a build with jansson (dedup-sign.c).
 */
#ifndef SIMLSH_DEDUP_JSONL_H
#define SIMLSH_DEDUP_JSONL_H

#include <stddef.h>

/* A JSON string as it stands in the record. */
struct jstr {
    const unsigned char *s; /* raw bytes between the quotes */
    size_t len;
    int esc; /* holds a backslash escape */
};

/* The id (by_line: none) and text of a plain record; -1 sends it to
 * jansson. id_int: the id is an integer, its digits in *id. */
int js_record(const char *line, size_t len, const char *idf, const char *tf, int by_line,
              struct jstr *id, int *id_int, struct jstr *text);
/* Decode a string js_record() returned into out (room for s->len bytes:
 * an escape never decodes to more bytes than it takes); the length. */
size_t js_decode(const struct jstr *s, char *out);

#endif
