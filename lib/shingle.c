/*
 * The shingler: document bytes -> normalised unit stream -> k-shingle hashes.
 *
 * Text may arrive in chunks split anywhere (inside a UTF-8 sequence, inside a
 * word); all state that crosses a chunk boundary lives in the struct, so the
 * hashes are the same as for the whole text at once.
 *
 * The normalised text goes to one buffer `nb` whose shape makes every shingle
 * a contiguous byte range:
 *  - bytes and code points: units are consecutive (code points as UTF-8);
 *  - words: complete words separated by exactly one ' ' (words never contain
 *    a space), so k words joined by ' ' are again a contiguous range.
 * Unit boundaries are recovered by scanning nb, so no per-unit arrays are
 * kept. After hashing the windows that are complete, only the last k-1 units
 * (plus a word in progress) stay in nb.
 *
 * With Unicode normalisation (utf8proc) the whole document is buffered and
 * normalised at end(): NFKC composition can reach back across any number of
 * combining marks, so there is no cheap safe chunk boundary.
 */
#include <string.h>

#include "simlsh_config.h"
#include "alloc.h"
#include "cpu.h"
#include "le.h"
#include "murmur3.h"
#include "shingle.h"
#include "shingle-norm.h"
#include "vec.h"

#if SIMLSH_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

#define SLICE 8192 /* input bytes processed per step; bounds scratch sizes */

/* ASCII byte classes for the table-driven fast path. */
enum {
    C_KEEP = 0,
    C_SPACE = 1,
    C_PUNCT = 2
};

/* Incremental UTF-8 decoder state (maximal-subpart replacement). */
typedef struct {
    uint32_t cp;
    uint8_t need, lo, hi;
} u8state;

struct simlsh__shingler {
    simlsh_allocator alloc;
    int unit, k, norm, policy, hash_bits;
    const struct simlsh__kernels *kern; /* resolved at creation */
    simlsh__ascii_norm_fn ascii_norm;   /* likewise */
    uint32_t seed;
    uint8_t lower[256]; /* byte -> byte after ASCII lowercasing (if asked) */
    uint8_t cls[256];   /* C_* for ASCII bytes */

    /* document state */
    u8state u8;
    int emitted_any;    /* something was emitted in this document */
    int pending_space;  /* collapse: a ' ' is owed before the next unit */
    int in_word;        /* word mode: nb ends inside a word */
    int nb_ascii;       /* nb holds only ASCII bytes */
    int full;           /* at least k units were seen: no short-doc shingle */
    size_t total_units; /* complete units seen in this document (capped use) */

    uint8_t *nb;
    size_t nb_len, nb_cap; /* nb_cap excludes the SIMLSH__PAD tail */

    uint32_t *pos;  /* scratch: unit starts, plus one */
    uint32_t *ends; /* scratch: word-window ends */
    size_t pos_cap;
    uint32_t *h32;
    uint64_t *h64;
    size_t h_cap;

    SIMLSH__VEC(uint8_t) raw; /* Unicode mode: the whole document */
};

/* ---- character classes ---------------------------------------------------- */

static int is_space_cp(uint32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0d);
#if SIMLSH_HAVE_UTF8PROC
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return cp == 0x85 || c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
           c == UTF8PROC_CATEGORY_ZP;
#else
    return 0;
#endif
}

static int is_punct_cp(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 0x21 && cp <= 0x2f) || (cp >= 0x3a && cp <= 0x40) ||
               (cp >= 0x5b && cp <= 0x60) || (cp >= 0x7b && cp <= 0x7e);
#if SIMLSH_HAVE_UTF8PROC
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
#else
    return 0;
#endif
}

/* Word separators: whitespace, punctuation and control characters. */
static int is_sep_cp(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7f)
        return 1;
    return is_space_cp(cp) || is_punct_cp(cp);
}

/* ---- buffers -------------------------------------------------------------- */

static int nb_reserve(simlsh__shingler *s, size_t extra)
{
    size_t need = s->nb_len + extra;
    if (need <= s->nb_cap)
        return 0;
    size_t ncap = s->nb_cap ? s->nb_cap : 4096;
    while (ncap < need)
        ncap *= 2;
    uint8_t *q = simlsh__realloc_sized(&s->alloc, s->nb, s->nb_len,
                                       s->nb ? s->nb_cap + SIMLSH__PAD : 0, ncap + SIMLSH__PAD);
    if (q == NULL)
        return SIMLSH_ENOMEM;
    s->nb = q;
    s->nb_cap = ncap;
    return 0;
}

static int scratch_reserve(simlsh__shingler *s, size_t n)
{
    if (n <= s->h_cap && n <= s->pos_cap)
        return 0;
    size_t ncap = n < 1024 ? 1024 : n;
    uint32_t *h32 = simlsh__malloc(&s->alloc, ncap * sizeof *h32);
    uint64_t *h64 = simlsh__malloc(&s->alloc, ncap * sizeof *h64);
    uint32_t *pos = simlsh__malloc(&s->alloc, (ncap + 1) * sizeof *pos);
    uint32_t *ends = simlsh__malloc(&s->alloc, (ncap + 1) * sizeof *ends);
    if (h32 == NULL || h64 == NULL || pos == NULL || ends == NULL) {
        simlsh__free_sized(&s->alloc, h32, ncap * sizeof *h32);
        simlsh__free_sized(&s->alloc, h64, ncap * sizeof *h64);
        simlsh__free_sized(&s->alloc, pos, (ncap + 1) * sizeof *pos);
        simlsh__free_sized(&s->alloc, ends, (ncap + 1) * sizeof *ends);
        return SIMLSH_ENOMEM;
    }
    simlsh__free_sized(&s->alloc, s->h32, s->h_cap * sizeof *s->h32);
    simlsh__free_sized(&s->alloc, s->h64, s->h_cap * sizeof *s->h64);
    simlsh__free_sized(&s->alloc, s->pos, (s->pos_cap + 1) * sizeof *s->pos);
    simlsh__free_sized(&s->alloc, s->ends, (s->pos_cap + 1) * sizeof *s->ends);
    s->ends = ends;
    s->h32 = h32;
    s->h64 = h64;
    s->pos = pos;
    s->h_cap = ncap;
    s->pos_cap = ncap;
    return 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

int simlsh__shingler_new(simlsh__shingler **out, const struct simlsh_params *p)
{
    simlsh__shingler *s = simlsh__calloc(&p->alloc, 1, sizeof *s);
    if (s == NULL)
        return SIMLSH_ENOMEM;
    s->alloc = p->alloc;
    s->unit = p->unit;
    s->k = p->k;
    s->norm = p->normalize;
    s->policy = p->utf8_policy;
    s->hash_bits = p->hash_bits;
    s->seed = p->seed;
    s->kern = simlsh__kernels_for(p->isa);
    s->ascii_norm = simlsh__ascii_norm_for(s->kern->isa);
    for (int b = 0; b < 256; b++) {
        s->lower[b] = (uint8_t)b;
        if ((s->norm & SIMLSH_NORM_LOWER_ASCII) && b >= 'A' && b <= 'Z')
            s->lower[b] = (uint8_t)(b + 32);
        s->cls[b] = C_KEEP;
        if (b < 0x80 && (s->unit == SIMLSH_UNIT_WORD ? is_sep_cp((uint32_t)b) : 0))
            s->cls[b] = C_SPACE; /* word mode: any separator ends a word */
        else if (b < 0x80 && (s->norm & SIMLSH_NORM_STRIP_PUNCT) && is_punct_cp((uint32_t)b))
            s->cls[b] = C_PUNCT;
        else if (b < 0x80 && (s->norm & SIMLSH_NORM_COLLAPSE_SPACE) && is_space_cp((uint32_t)b))
            s->cls[b] = C_SPACE;
    }
    int rc = nb_reserve(s, 4096);
    if (rc == 0)
        rc = scratch_reserve(s, 1024);
    if (rc < 0) {
        simlsh__shingler_free(s);
        return rc;
    }
    simlsh__shingler_begin(s);
    *out = s;
    return 0;
}

void simlsh__shingler_free(simlsh__shingler *s)
{
    if (s == NULL)
        return;
    simlsh_allocator a = s->alloc;
    simlsh__free_sized(&a, s->nb, s->nb_cap + SIMLSH__PAD);
    simlsh__free_sized(&a, s->pos, (s->pos_cap + 1) * sizeof *s->pos);
    simlsh__free_sized(&a, s->ends, (s->pos_cap + 1) * sizeof *s->ends);
    simlsh__free_sized(&a, s->h32, s->h_cap * sizeof *s->h32);
    simlsh__free_sized(&a, s->h64, s->h_cap * sizeof *s->h64);
    simlsh__vec_free(&a, &s->raw, NULL);
    simlsh__free_sized(&a, s, sizeof *s);
}

void simlsh__shingler_begin(simlsh__shingler *s)
{
    memset(&s->u8, 0, sizeof s->u8);
    s->emitted_any = 0;
    s->pending_space = 0;
    s->in_word = 0;
    s->nb_ascii = 1;
    s->full = 0;
    s->total_units = 0;
    s->nb_len = 0;
    s->raw.n = 0;
}

/* ---- hashing of complete windows ------------------------------------------ */

typedef struct {
    simlsh__sink_fn sink;
    simlsh__sink32_fn sink32;
    void *ctx;
} sinks;

/* Hash byte ranges [pos[i], end[i]) of nb. */
static int hash_ranges(simlsh__shingler *s, const uint32_t *starts, const uint32_t *ends, size_t n,
                       const sinks *k)
{
    if (s->hash_bits == 64) {
        for (size_t i = 0; i < n; i++) {
            uint64_t h[2];
            simlsh__murmur3_128(s->nb + starts[i], ends[i] - starts[i], s->seed, h);
            s->h64[i] = h[0];
        }
        return k->sink(k->ctx, s->h64, n);
    }
    for (size_t i = 0; i < n; i++)
        s->h32[i] = simlsh__murmur3_32(s->nb + starts[i], ends[i] - starts[i], s->seed);
    if (k->sink32)
        return k->sink32(k->ctx, s->h32, n);
    for (size_t i = 0; i < n; i++)
        s->h64[i] = s->h32[i];
    return k->sink(k->ctx, s->h64, n);
}

/* Hash every k-byte window of nb[0..nb_len). */
static int hash_byte_windows(simlsh__shingler *s, size_t n, const sinks *k)
{
    if (s->hash_bits == 64) {
        for (size_t i = 0; i < n; i++) {
            uint64_t h[2];
            simlsh__murmur3_128(s->nb + i, (size_t)s->k, s->seed, h);
            s->h64[i] = h[0];
        }
        return k->sink(k->ctx, s->h64, n);
    }
    s->kern->murmur3_windows(s->h32, s->nb, n, (size_t)s->k, s->seed);
    if (k->sink32)
        return k->sink32(k->ctx, s->h32, n);
    for (size_t i = 0; i < n; i++)
        s->h64[i] = s->h32[i];
    return k->sink(k->ctx, s->h64, n);
}

/* Emit all windows whose k units are complete in nb, then keep only the last
 * k-1 complete units (and a word in progress). */
static int flush(simlsh__shingler *s, const sinks *sk)
{
    size_t k = (size_t)s->k;
    size_t units, keep_from;
    int rc = 0;

    if (s->unit == SIMLSH_UNIT_BYTE || (s->unit == SIMLSH_UNIT_CHAR && s->nb_ascii)) {
        units = s->nb_len;
        if (units >= k) {
            rc = scratch_reserve(s, units - k + 1);
            if (rc == 0)
                rc = hash_byte_windows(s, units - k + 1, sk);
            keep_from = units - (k - 1);
        } else {
            keep_from = 0;
        }
    } else if (s->unit == SIMLSH_UNIT_CHAR) {
        rc = scratch_reserve(s, s->nb_len + 1);
        if (rc < 0)
            return rc;
        units = 0;
        for (size_t i = 0; i < s->nb_len; i++)
            if ((s->nb[i] & 0xc0) != 0x80)
                s->pos[units++] = (uint32_t)i;
        s->pos[units] = (uint32_t)s->nb_len;
        if (units >= k) {
            size_t n = units - k + 1;
            /* starts = pos[0..n), ends = pos[k..k+n) */
            rc = hash_ranges(s, s->pos, s->pos + k, n, sk);
            keep_from = s->pos[units - (k - 1)];
        } else {
            keep_from = 0;
        }
    } else { /* words: "w w w" + maybe a word in progress */
        rc = scratch_reserve(s, s->nb_len + 2);
        if (rc < 0)
            return rc;
        size_t all = 0;
        for (size_t i = 0; i < s->nb_len;) {
            s->pos[all++] = (uint32_t)i;
            while (i < s->nb_len && s->nb[i] != ' ')
                i++;
            i++; /* the single separating space */
        }
        units = s->in_word && all > 0 ? all - 1 : all; /* complete words */
        if (!s->in_word)
            s->pos[units] = (uint32_t)s->nb_len; /* where the next word will start */
        if (units >= k) {
            size_t n = units - k + 1;
            for (size_t w = 0; w < n; w++) {
                size_t next = w + k; /* word after the window's last word */
                s->ends[w] = next < all ? s->pos[next] - 1 : (uint32_t)s->nb_len;
            }
            rc = hash_ranges(s, s->pos, s->ends, n, sk);
            keep_from = s->pos[units - (k - 1)];
        } else {
            keep_from = 0;
        }
    }
    if (rc < 0)
        return rc;
    if (keep_from > 0) {
        memmove(s->nb, s->nb + keep_from, s->nb_len - keep_from);
        s->nb_len -= keep_from;
        if (!s->nb_ascii) {
            s->nb_ascii = 1;
            for (size_t i = 0; i < s->nb_len; i++)
                if (s->nb[i] & 0x80)
                    s->nb_ascii = 0;
        }
    }
    return 0;
}

/* ---- unit emission ---------------------------------------------------------- */

static inline void count_unit(simlsh__shingler *s)
{
    s->total_units++;
    if (s->total_units >= (size_t)s->k)
        s->full = 1;
}

static inline void put_utf8(simlsh__shingler *s, uint32_t cp)
{
    uint8_t *o = s->nb + s->nb_len;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        s->nb_len += 1;
        return;
    }
    s->nb_ascii = 0;
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        s->nb_len += 2;
    } else if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        s->nb_len += 3;
    } else {
        o[0] = (uint8_t)(0xf0 | (cp >> 18));
        o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (uint8_t)(0x80 | (cp & 0x3f));
        s->nb_len += 4;
    }
}

/* One code point (or, in byte mode, one byte value) through normalisation.
 * nb has room for at least 5 more bytes. */
static inline void emit(simlsh__shingler *s, uint32_t cp)
{
    if (cp < 0x80)
        cp = s->lower[cp];
    if (s->unit == SIMLSH_UNIT_WORD) {
        if (is_sep_cp(cp)) {
            if (s->in_word) {
                s->in_word = 0;
                count_unit(s);
            }
            return;
        }
        if (!s->in_word) {
            if (s->nb_len > 0)
                s->nb[s->nb_len++] = ' ';
            s->in_word = 1;
        }
        put_utf8(s, cp);
        return;
    }
    if ((s->norm & SIMLSH_NORM_STRIP_PUNCT) && is_punct_cp(cp))
        return;
    if ((s->norm & SIMLSH_NORM_COLLAPSE_SPACE) && is_space_cp(cp)) {
        if (s->emitted_any)
            s->pending_space = 1;
        return;
    }
    if (s->pending_space) {
        s->nb[s->nb_len++] = ' ';
        s->pending_space = 0;
        count_unit(s);
    }
    s->emitted_any = 1;
    if (s->unit == SIMLSH_UNIT_BYTE)
        s->nb[s->nb_len++] = (uint8_t)cp;
    else
        put_utf8(s, cp);
    count_unit(s);
}

/* Feed one byte to the UTF-8 decoder; returns a code point, or -1 while a
 * sequence is incomplete, or -2 for "U+FFFD, then feed this byte again". */
static inline int32_t u8_step(u8state *st, uint8_t b)
{
    if (st->need == 0) {
        if (b < 0x80)
            return b;
        if (b >= 0xc2 && b <= 0xdf) {
            st->need = 1;
            st->cp = b & 0x1fu;
            st->lo = 0x80;
            st->hi = 0xbf;
        } else if (b >= 0xe0 && b <= 0xef) {
            st->need = 2;
            st->cp = b & 0x0fu;
            st->lo = b == 0xe0 ? 0xa0 : 0x80;
            st->hi = b == 0xed ? 0x9f : 0xbf;
        } else if (b >= 0xf0 && b <= 0xf4) {
            st->need = 3;
            st->cp = b & 0x07u;
            st->lo = b == 0xf0 ? 0x90 : 0x80;
            st->hi = b == 0xf4 ? 0x8f : 0xbf;
        } else {
            return 0xfffd; /* a byte that never starts a sequence */
        }
        return -1;
    }
    if (b < st->lo || b > st->hi) {
        st->need = 0;
        return -2; /* maximal subpart ends before b */
    }
    st->cp = (st->cp << 6) | (b & 0x3fu);
    st->lo = 0x80;
    st->hi = 0xbf;
    if (--st->need == 0)
        return (int32_t)st->cp;
    return -1;
}

/* Would decoding data from state *st meet an invalid sequence? */
static int u8_invalid(u8state st, const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (st.need == 0 && data[i] < 0x80)
            continue;
        int32_t c = u8_step(&st, data[i]);
        if (c == 0xfffd || c == -2)
            return 1;
    }
    return 0;
}

/* Normalise a slice of input into nb (room reserved by the caller). */
/* Normalise bytes d[i..) in one tight loop while they are single-byte units
 * (any byte for the byte unit, ASCII for the char unit), with lowercasing,
 * punctuation stripping and whitespace collapsing done inline from the byte
 * tables; returns the index of the first byte not consumed. nb has room. */
static size_t simple_run(simlsh__shingler *s, const uint8_t *d, size_t i, size_t len,
                         int ascii_only)
{
    uint8_t *o = s->nb + s->nb_len;
    size_t m = 0, units = 0;
    int pending = s->pending_space, emitted = s->emitted_any;
    if (s->norm == 0 || (s->norm & (SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_STRIP_PUNCT |
                                    SIMLSH_NORM_COLLAPSE_SPACE)) == 0) {
        /* nothing to change: copy 8 bytes at a time while they are ASCII */
        size_t j = i;
        if (ascii_only) {
            while (j + 8 <= len) {
                uint64_t w;
                memcpy(&w, d + j, 8);
                if (w & 0x8080808080808080ULL)
                    break;
                memcpy(o + (j - i), &w, 8);
                j += 8;
            }
            while (j < len && d[j] < 0x80) {
                o[j - i] = d[j];
                j++;
            }
        } else {
            memcpy(o, d + i, len - i);
            j = len;
        }
        m = units = j - i;
        emitted |= m > 0;
        i = j;
    } else {
        /* Branch-free: word boundaries make "keep or space" unpredictable.
         * Both candidate bytes are written and the cursor advances by the
         * conditions; nb has room for two bytes per input byte. */
        if (!(s->norm & SIMLSH_NORM_STRIP_PUNCT)) {
            /* Every byte is kept or is whitespace, so "a space is owed" is
             * just "the previous byte was whitespace" once something was
             * emitted: no dependency chain but the output cursor. */
            for (; i < len && !emitted; i++) {
                uint8_t b = d[i];
                if (ascii_only && b >= 0x80)
                    goto done;
                if (s->cls[b] == C_KEEP) {
                    o[m++] = s->lower[b];
                    emitted = 1;
                }
            }
            unsigned prev_space = (unsigned)pending, f = 0;
            if (s->norm & SIMLSH_NORM_LOWER_ASCII)
                f |= SIMLSH__AN_LOWER;
            if (s->norm & SIMLSH_NORM_COLLAPSE_SPACE)
                f |= SIMLSH__AN_COLLAPSE;
            if (ascii_only)
                f |= SIMLSH__AN_ASCII;
            /* Once something is emitted, the kernel takes all but the tail
             * and non-ASCII bytes; this loop takes those (up to a block). */
            while (emitted && i < len) {
                i += s->ascii_norm(o, &m, d + i, len - i, f, &prev_space);
                size_t stop = len - i > SIMLSH__AN_BLOCK ? i + SIMLSH__AN_BLOCK : len;
                for (; i < stop; i++) {
                    uint8_t b = d[i];
                    if (ascii_only && b >= 0x80)
                        goto non_ascii;
                    unsigned space = s->cls[b] == C_SPACE, keep = space ^ 1u;
                    o[m] = ' ';
                    m += keep & prev_space;
                    o[m] = s->lower[b];
                    m += keep;
                    prev_space = space;
                }
            }
        non_ascii:
            pending = (int)(prev_space & (unsigned)emitted);
        } else {
            for (; i < len; i++) {
                uint8_t b = d[i];
                if (ascii_only && b >= 0x80)
                    break;
                unsigned c = s->cls[b];
                unsigned keep = c == C_KEEP, space = c == C_SPACE;
                unsigned sp = keep & (unsigned)pending;
                o[m] = ' ';
                m += sp;
                o[m] = s->lower[b];
                m += keep;
                emitted |= (int)keep;
                pending = (int)((keep ^ 1u) &
                                ((space & (unsigned)emitted) | ((space ^ 1u) & (unsigned)pending)));
            }
        }
    }
done:
    units = m; /* every byte written here is one unit */
    s->nb_len += m;
    s->total_units += units;
    if (s->total_units >= (size_t)s->k)
        s->full = 1;
    s->pending_space = pending;
    s->emitted_any = emitted;
    return i;
}

/* emit() for a run of ASCII bytes d[i..) in word mode, in one loop over
 * locals: a store into nb (bytes) may alias any field of s, so emit()
 * reloads them byte after byte. A byte either continues a word (C_KEEP:
 * the word separators are exactly the C_SPACE bytes in word mode) or ends
 * one; both candidate bytes are written and the cursor advances by the
 * conditions. Returns the index of the first byte not consumed (the first
 * non-ASCII one). nb has room for two bytes per input byte. */
static size_t word_run(simlsh__shingler *s, const uint8_t *d, size_t i, size_t len)
{
    uint8_t *o = s->nb;
    const uint8_t *cls = s->cls, *lower = s->lower;
    size_t m = s->nb_len, words = 0;
    unsigned in_word = s->in_word != 0;
    for (; i < len; i++) {
        uint8_t b = d[i];
        if (b >= 0x80)
            break;
        unsigned keep = cls[b] == C_KEEP;
        o[m] = ' '; /* a new word after an earlier one starts with a space */
        m += keep & (in_word ^ 1u) & (unsigned)(m > 0);
        o[m] = lower[b];
        m += keep;
        words += in_word & (keep ^ 1u); /* a word ended */
        in_word = keep;
    }
    s->nb_len = m;
    s->in_word = (int)in_word;
    s->total_units += words;
    if (s->total_units >= (size_t)s->k)
        s->full = 1;
    return i;
}

static void normalise_slice(simlsh__shingler *s, const uint8_t *d, size_t len)
{
    if (s->unit == SIMLSH_UNIT_BYTE) {
        simple_run(s, d, 0, len, 0);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        uint8_t b = d[i];
        if (s->u8.need == 0 && b < 0x80) {
            if (s->unit == SIMLSH_UNIT_CHAR) {
                i = simple_run(s, d, i, len, 1) - 1;
                continue;
            }
            i = word_run(s, d, i, len) - 1;
            continue;
        }
        int32_t c = u8_step(&s->u8, b);
        if (c == -1)
            continue;
        if (c == -2) {
            emit(s, 0xfffd);
            i--; /* b starts afresh */
            continue;
        }
        emit(s, (uint32_t)c);
    }
}

static int process(simlsh__shingler *s, const uint8_t *data, size_t len, const sinks *sk)
{
    while (len > 0) {
        size_t n = len < SLICE ? len : SLICE;
        /* worst case growth: 3 bytes (U+FFFD) per input byte, plus a space */
        int rc = nb_reserve(s, 3 * n + 8);
        if (rc < 0)
            return rc;
        normalise_slice(s, data, n);
        rc = flush(s, sk);
        if (rc < 0)
            return rc;
        data += n;
        len -= n;
    }
    return 0;
}

int simlsh__shingler_feed(simlsh__shingler *s, const uint8_t *data, size_t len,
                          simlsh__sink_fn sink, simlsh__sink32_fn sink32, void *ctx)
{
    sinks sk = {sink, sink32, ctx};
    if (len == 0)
        return 0;
    if (s->unit != SIMLSH_UNIT_BYTE && s->policy == SIMLSH_UTF8_REJECT &&
        u8_invalid(s->u8, data, len))
        return SIMLSH_EUTF8;
    if (s->norm & SIMLSH__UNICODE_FLAGS) {
        size_t need;
        if (!simlsh__add_ok(s->raw.n, len, &need))
            return SIMLSH_ENOMEM;
        int rc = simlsh__vec_reserve(&s->alloc, &s->raw, need, NULL);
        if (rc < 0)
            return rc;
        memcpy(s->raw.v + s->raw.n, data, len);
        s->raw.n = need;
        /* keep the decoder state current for the reject pre-check */
        for (size_t i = 0; i < len; i++)
            if (!(s->u8.need == 0 && data[i] < 0x80) && u8_step(&s->u8, data[i]) == -2)
                i--;
        return 0;
    }
    return process(s, data, len, &sk);
}

int simlsh__shingler_end_check(const simlsh__shingler *s)
{
    if (s->unit != SIMLSH_UNIT_BYTE && s->policy == SIMLSH_UTF8_REJECT && s->u8.need > 0)
        return SIMLSH_EUTF8;
    return 0;
}

#if SIMLSH_HAVE_UTF8PROC
/* Canonical ordering (Unicode 3.11, D109): in every run of combining marks
 * (canonical combining class > 0) the marks are stably sorted by class, so
 * "a U+0301 U+0323" and "a U+0323 U+0301" normalise alike. Code points are
 * decomposed one at a time, which leaves the order as written; utf8proc's
 * composition then expects it sorted. A stable counting sort by class bounds
 * the cost at O(run + 256) whatever the input. */
static int canonical_order(const simlsh_allocator *a, utf8proc_int32_t *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (utf8proc_get_property(v[i])->combining_class == 0) {
            i++;
            continue;
        }
        size_t b = i;
        int sorted = 1;
        unsigned prev = 0;
        for (; i < n; i++) {
            unsigned c = utf8proc_get_property(v[i])->combining_class;
            if (c == 0)
                break;
            sorted &= c >= prev;
            prev = c;
        }
        if (sorted)
            continue;
        size_t run = i - b, count[257] = {0};
        utf8proc_int32_t *tmp = simlsh__malloc(a, run * sizeof *tmp);
        if (tmp == NULL)
            return SIMLSH_ENOMEM;
        for (size_t k = b; k < i; k++)
            count[utf8proc_get_property(v[k])->combining_class + 1]++;
        for (size_t c = 1; c < 257; c++)
            count[c] += count[c - 1];
        for (size_t k = b; k < i; k++)
            tmp[count[utf8proc_get_property(v[k])->combining_class]++] = v[k];
        memcpy(v + b, tmp, run * sizeof *tmp);
        simlsh__free_sized(a, tmp, run * sizeof *tmp);
    }
    return 0;
}

/* Decode raw (replacing invalid sequences), apply NFKC and/or case folding
 * with utf8proc, and run the result through the ordinary path. */
static int unicode_end(simlsh__shingler *s, const sinks *sk)
{
    size_t n = s->raw.n;
    /* at most one code point per input byte */
    utf8proc_int32_t *cps = simlsh__malloc(&s->alloc, (n + 1) * sizeof *cps);
    if (cps == NULL)
        return SIMLSH_ENOMEM;
    size_t m = 0;
    u8state st = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        uint8_t b = s->raw.v[i];
        if (st.need == 0 && b < 0x80) {
            cps[m++] = b;
            continue;
        }
        int32_t c = u8_step(&st, b);
        if (c == -1)
            continue;
        if (c == -2) {
            cps[m++] = 0xfffd;
            i--;
            continue;
        }
        cps[m++] = c;
    }
    if (st.need > 0)
        cps[m++] = 0xfffd;

    utf8proc_option_t opt = UTF8PROC_STABLE;
    if (s->norm & SIMLSH_NORM_NFKC)
        opt |= UTF8PROC_COMPAT | UTF8PROC_COMPOSE;
    if (s->norm & SIMLSH_NORM_CASEFOLD)
        opt |= UTF8PROC_CASEFOLD;
    if (!(s->norm & SIMLSH_NORM_NFKC))
        opt |= UTF8PROC_COMPOSE; /* case folding alone: keep NFC shape */
    /* Decompose each code point, growing the output as needed. */
    size_t cap = m + 16, len = 0, block = cap * sizeof(utf8proc_int32_t); /* out's bytes */
    utf8proc_int32_t *out = simlsh__malloc(&s->alloc, block);
    int rc = out ? 0 : SIMLSH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < m; i++) {
        int last = 0;
        for (;;) {
            utf8proc_ssize_t r = utf8proc_decompose_char(cps[i], out + len,
                                                         (utf8proc_ssize_t)(cap - len), opt, &last);
            if (r < 0) {
                r = utf8proc_decompose_char(0xfffd, out + len, (utf8proc_ssize_t)(cap - len), opt,
                                            &last);
                if (r < 0) {
                    rc = SIMLSH_EINVAL;
                    break;
                }
            }
            if ((size_t)r <= cap - len) {
                len += (size_t)r;
                break;
            }
            size_t ncap = cap * 2 + (size_t)r;
            utf8proc_int32_t *q = simlsh__realloc_sized(&s->alloc, out, len * sizeof *out, block,
                                                        (ncap + 1) * sizeof *out);
            if (q == NULL) {
                rc = SIMLSH_ENOMEM;
                break;
            }
            out = q;
            cap = ncap;
            block = (ncap + 1) * sizeof *out;
        }
    }
    simlsh__free_sized(&s->alloc, cps, (n + 1) * sizeof *cps);
    if (rc == 0)
        rc = canonical_order(&s->alloc, out, len);
    if (rc == 0) {
        /* reencode needs room for 4 bytes per code point in place */
        utf8proc_int32_t *q = simlsh__realloc_sized(&s->alloc, out, len * sizeof *out, block,
                                                    (len + 1) * sizeof *out + 4);
        if (q == NULL) {
            rc = SIMLSH_ENOMEM;
        } else {
            out = q;
            block = (len + 1) * sizeof *out + 4;
        }
    }
    if (rc == 0) {
        utf8proc_ssize_t bytes = utf8proc_reencode(out, (utf8proc_ssize_t)len, opt);
        if (bytes < 0)
            rc = SIMLSH_EINVAL;
        else {
            u8state save = s->u8;
            memset(&s->u8, 0, sizeof s->u8);
            rc = process(s, (const uint8_t *)out, (size_t)bytes, sk);
            if (rc < 0)
                s->u8 = save;
        }
    }
    simlsh__free_sized(&s->alloc, out, block);
    return rc;
}
#endif

int simlsh__shingler_end(simlsh__shingler *s, simlsh__sink_fn sink, simlsh__sink32_fn sink32,
                         void *ctx)
{
    sinks sk = {sink, sink32, ctx};
    int rc = simlsh__shingler_end_check(s);
    if (rc < 0)
        return rc;
    if (s->norm & SIMLSH__UNICODE_FLAGS) {
#if SIMLSH_HAVE_UTF8PROC
        rc = unicode_end(s, &sk);
        if (rc < 0)
            return rc;
#else
        return SIMLSH_EUNSUPPORTED;
#endif
    } else if (s->unit != SIMLSH_UNIT_BYTE && s->u8.need > 0) {
        /* a truncated sequence at the end is one maximal invalid subpart */
        rc = nb_reserve(s, 8);
        if (rc < 0)
            return rc;
        s->u8.need = 0;
        emit(s, 0xfffd);
    }
    if (s->unit == SIMLSH_UNIT_WORD && s->in_word) {
        s->in_word = 0;
        count_unit(s);
    }
    rc = flush(s, &sk);
    if (rc < 0)
        return rc;
    if (!s->full && s->total_units > 0 && s->nb_len > 0) {
        /* fewer than k units: the whole normalised document is one shingle */
        uint32_t st = 0, en = (uint32_t)s->nb_len;
        rc = hash_ranges(s, &st, &en, 1, &sk);
    }
    return rc;
}
