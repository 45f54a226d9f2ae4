/*
 * A deliberately naive reference shingler for the tests: whole text at once,
 * explicit unit lists, no buffers shared with the library. It follows
 * docs/format.md's definition of shingles (ASCII classes only, so tests that
 * use it avoid non-ASCII punctuation and spaces when built with utf8proc).
 */
#ifndef SIMLSH_REFSHINGLE_H
#define SIMLSH_REFSHINGLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simlsh.h"

typedef struct {
    int unit, k, norm;
} ref_cfg;

/* Decode with U+FFFD per maximal invalid subpart (Unicode 15, 3.9). */
static inline size_t ref_decode(const uint8_t *s, size_t n, uint32_t *out)
{
    size_t m = 0, i = 0;
    while (i < n) {
        uint8_t b = s[i];
        if (b < 0x80) {
            out[m++] = b;
            i++;
            continue;
        }
        int need;
        uint32_t cp;
        uint8_t lo = 0x80, hi = 0xbf;
        if (b >= 0xc2 && b <= 0xdf) {
            need = 1;
            cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            need = 2;
            cp = b & 0x0f;
            if (b == 0xe0)
                lo = 0xa0;
            if (b == 0xed)
                hi = 0x9f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            need = 3;
            cp = b & 0x07;
            if (b == 0xf0)
                lo = 0x90;
            if (b == 0xf4)
                hi = 0x8f;
        } else {
            out[m++] = 0xfffd;
            i++;
            continue;
        }
        size_t j = i + 1;
        int ok = 1;
        for (int t = 0; t < need; t++, j++) {
            if (j >= n || s[j] < lo || s[j] > hi) {
                ok = 0;
                break;
            }
            cp = (cp << 6) | (s[j] & 0x3f);
            lo = 0x80;
            hi = 0xbf;
        }
        if (ok) {
            out[m++] = cp;
            i = j;
        } else {
            out[m++] = 0xfffd;
            i = j;
        } /* j is the first byte not in the subpart */
    }
    return m;
}

static inline size_t ref_utf8(uint32_t cp, uint8_t *o)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

static inline int ref_space(uint32_t c)
{
    return c == ' ' || (c >= 9 && c <= 13);
}
static inline int ref_punct(uint32_t c)
{
    return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) ||
           (c >= 0x7b && c <= 0x7e);
}

/* Units as byte strings; then shingles; hashes via simlsh_hash_bytes.
 * Returns the number of hashes written to out (caller sorts/uniques). */
static inline size_t ref_shingles(const simlsh_params *p, ref_cfg c, const uint8_t *text, size_t n,
                                  uint64_t *out)
{
    uint32_t *cps = malloc((n + 1) * sizeof *cps);
    size_t m;
    if (c.unit == SIMLSH_UNIT_BYTE) {
        for (m = 0; m < n; m++)
            cps[m] = text[m];
    } else {
        m = ref_decode(text, n, cps);
    }
    /* normalise into a list of units (each unit: start/len in buf) */
    uint8_t *buf = malloc(4 * n + 8);
    size_t *us = malloc((n + 2) * sizeof *us), *ul = malloc((n + 2) * sizeof *ul);
    size_t blen = 0, nu = 0;
    int emitted = 0, pend = 0, inword = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t cp = cps[i];
        if ((c.norm & SIMLSH_NORM_LOWER_ASCII) && cp >= 'A' && cp <= 'Z')
            cp += 32;
        if (c.unit == SIMLSH_UNIT_WORD) {
            int sep = cp < 0x20 || cp == 0x7f || ref_space(cp) || ref_punct(cp);
            if (sep) {
                inword = 0;
                continue;
            }
            if (!inword) {
                us[nu] = blen;
                ul[nu] = 0;
                nu++;
                inword = 1;
            }
            size_t l = ref_utf8(cp, buf + blen);
            blen += l;
            ul[nu - 1] += l;
            continue;
        }
        if ((c.norm & SIMLSH_NORM_STRIP_PUNCT) && ref_punct(cp))
            continue;
        if ((c.norm & SIMLSH_NORM_COLLAPSE_SPACE) && ref_space(cp)) {
            if (emitted)
                pend = 1;
            continue;
        }
        if (pend) {
            us[nu] = blen;
            ul[nu] = 1;
            nu++;
            buf[blen++] = ' ';
            pend = 0;
        }
        emitted = 1;
        us[nu] = blen;
        if (c.unit == SIMLSH_UNIT_BYTE) {
            buf[blen] = (uint8_t)cp;
            ul[nu] = 1;
            blen++;
        } else {
            ul[nu] = ref_utf8(cp, buf + blen);
            blen += ul[nu];
        }
        nu++;
    }
    size_t nh = 0;
    uint8_t *sh = malloc(4 * n + 8 + 64 * 2);
    size_t k = (size_t)c.k;
    size_t windows = nu >= k ? nu - k + 1 : (nu > 0 ? 1 : 0);
    size_t width = nu >= k ? k : nu;
    for (size_t w = 0; w < windows; w++) {
        size_t L = 0;
        for (size_t u = w; u < w + width; u++) {
            if (c.unit == SIMLSH_UNIT_WORD && u > w)
                sh[L++] = ' ';
            memcpy(sh + L, buf + us[u], ul[u]);
            L += ul[u];
        }
        simlsh_hash_bytes(&out[nh++], p, sh, L);
    }
    free(sh);
    free(cps);
    free(buf);
    free(us);
    free(ul);
    return nh;
}

static inline int ref_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static inline size_t ref_sort_unique(uint64_t *a, size_t n)
{
    qsort(a, n, sizeof *a, ref_cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || a[i] != a[m - 1])
            a[m++] = a[i];
    return m;
}

#endif
