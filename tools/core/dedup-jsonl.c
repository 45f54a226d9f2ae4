/*
 * simlsh-dedup: the JSONL scanner (dedup-jsonl.h), used by the signing
 * workers (dedup-sign.c) for --jsonl records.
 */
#include "dedup-jsonl.h"
#include "dedup.h"

#include <stdint.h>
#include <string.h>

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
size_t js_decode(const struct jstr *s, char *out)
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
int js_record(const char *line, size_t len, const char *idf, const char *tf, int by_line,
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
