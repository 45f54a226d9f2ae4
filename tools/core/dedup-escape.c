/*
 * simlsh-dedup: escaping, in one place. Names in messages and TSV output
 * (escape_name(), qname(): C-style escapes of control bytes, invalid UTF-8
 * and backslashes; unescape_name() is the inverse), JSON strings
 * (escape_json()) and the UTF-8 checks they share.
 */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is invalid. */
size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    unsigned cp = c & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* The one escaping of names (docs/cli.md, NAMES): printable UTF-8 as is;
 * backslash, tab, newline and carriage return as \\ \t \n \r; every other
 * control byte (C0, DEL, and the two-byte C1 controls a terminal may obey)
 * and every byte that is not part of valid UTF-8 as \xHH. The result has
 * no byte below 0x20, so it can neither forge a line nor move the cursor,
 * and unescape_name() gives the original bytes back. dst holds 4 * len + 1. */
size_t escape_name(char *dst, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0, i = 0;
    while (i < len) {
        unsigned c = u[i];
        size_t n = c < 0x80 ? 1 : utf8_seq(u + i, len - i);
        int c1 = n == 2 && c == 0xC2 && u[i + 1] < 0xA0;
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            dst[o++] = '\\';
            dst[o++] = c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
            i++;
        } else if (c < 0x20 || c == 0x7F || n == 0 || c1) {
            size_t m = n ? n : 1;
            for (size_t k = 0; k < m; k++) {
                dst[o++] = '\\';
                dst[o++] = 'x';
                dst[o++] = hex[u[i + k] >> 4];
                dst[o++] = hex[u[i + k] & 15];
            }
            i += m;
        } else {
            memcpy(dst + o, u + i, n);
            o += n;
            i += n;
        }
    }
    dst[o] = '\0';
    return o;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The inverse of escape_name(), in place; also reads the \0 that names
 * files written by earlier versions hold. */
size_t unescape_name(char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 == len) {
            s[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 'x' && i + 2 < len && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            s[o++] = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == '0' ? '\0' : c;
        }
    }
    return o;
}

void escape_tsv(FILE *f, const char *s, size_t len)
{
    char stack[1024];
    char *buf = 4 * len + 1 <= sizeof stack ? stack : xmalloc(4 * len + 1);
    size_t n = escape_name(buf, s, len);
    fwrite(buf, 1, n, f);
    if (buf != stack)
        free(buf);
}

/* Messages are printed by the main thread only; a small ring of buffers
 * lets one message show a few names. */
const char *qnamen(const char *s, size_t len)
{
    static char *ring[4];
    static size_t cap[4];
    static unsigned next;
    unsigned k = next++ % 4;
    if (cap[k] < 4 * len + 1) {
        cap[k] = 4 * len + 1;
        ring[k] = xrealloc(ring[k], cap[k]);
    }
    escape_name(ring[k], s, len);
    return ring[k];
}

const char *qname(const char *s)
{
    return qnamen(s, strlen(s));
}

int utf8_valid(const unsigned char *s, size_t len, size_t *bad_at)
{
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        if (!n) {
            if (bad_at)
                *bad_at = i;
            return 0;
        }
        i += n;
    }
    return 1;
}

/* JSON strings must be valid UTF-8; file names need not be. Invalid bytes
 * become U+FFFD so the output line always parses. */
void escape_json(FILE *f, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    fputc('"', f);
    size_t i = 0;
    while (i < len) {
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                fputs("\\n", f);
                break;
            case '\t':
                fputs("\\t", f);
                break;
            case '\r':
                fputs("\\r", f);
                break;
            default:
                fprintf(f, "\\u%04x", c);
                break;
            }
            i++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            i++;
        } else {
            size_t n = utf8_seq(u + i, len - i);
            if (n) {
                fwrite(u + i, 1, n, f);
                i += n;
            } else {
                fputs("\\ufffd", f);
                i++;
            }
        }
    }
    fputc('"', f);
}
