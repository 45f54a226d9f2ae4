/*
 * ASCII lowercasing and whitespace collapsing a block at a time, for the
 * shingler's single-byte units (shingle.c, simple_run). Byte by byte the
 * two cost as much as hashing and MinHash together; here a block costs a
 * few word or vector operations.
 *
 * What makes a block cheap is that, in text, whitespace runs are almost
 * always one byte long: then collapsing changes no length, only the bytes
 * (a tab becomes ' '), and the block is written whole. A block with two
 * whitespace bytes in a row (CRLF, indentation, a blank line) is refused
 * and the caller's byte loop does it, so the kernels never compact.
 */
#include "shingle-norm.h"

#include <simlsh.h>

#include "le.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
/* The flags are constant in each specialisation only when inlined. */
#define AN_INLINE inline __attribute__((always_inline))
#else
#define AN_INLINE inline
#endif

#define REP(b) (0x0101010101010101ULL * (uint64_t)(b))

/* Bit 7 of each byte: that byte of w lies in [lo, hi] (hi < 0x7f). The
 * high bit is tested apart, so that the sums of the low seven bits never
 * carry into the next byte. */
static inline uint64_t in_range(uint64_t w, unsigned lo, unsigned hi)
{
    uint64_t t = w & REP(0x7f);
    return (t + REP(0x80 - lo)) & ~(t + REP(0x7f - hi)) & ~w & REP(0x80);
}

static AN_INLINE size_t swar_body(uint8_t *out, size_t *mp, const uint8_t *in, size_t len,
                                  unsigned f, unsigned *pp)
{
    size_t i = 0, m = *mp;
    uint64_t prev = *pp;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = simlsh__rd64(in + i);
        if ((f & SIMLSH__AN_ASCII) && (w & REP(0x80)))
            break;
        if (f & SIMLSH__AN_LOWER)
            w += in_range(w, 'A', 'Z') >> 2; /* bit 7 -> 0x20 */
        if (f & SIMLSH__AN_COLLAPSE) {
            uint64_t sp = in_range(w, 0x09, 0x0d) | in_range(w, ' ', ' ');
            if (sp & ((sp << 8) | (prev << 7)))
                break;
            uint64_t all = (sp >> 7) * 0xff;
            w = (w & ~all) | (all & REP(' '));
            out[m] = ' '; /* owed from the block before; kept only if so */
            m += prev;
            simlsh__wr64(out + m, w);
            prev = sp >> 63;
            m += 8 - prev; /* a trailing whitespace byte stays owed */
        } else {
            simlsh__wr64(out + m, w);
            m += 8;
        }
    }
    *mp = m;
    *pp = (unsigned)prev;
    return i;
}

#if defined(__SSE2__)
static AN_INLINE size_t sse2_body(uint8_t *out, size_t *mp, const uint8_t *in, size_t len,
                                  unsigned f, unsigned *pp)
{
    /* Ranges by one signed compare: x + (0x80 - lo) puts [lo, hi] at the
     * bottom of the signed range, for every byte value. */
    const __m128i up_off = _mm_set1_epi8((char)(0x80 - 'A'));
    const __m128i up_lim = _mm_set1_epi8((char)(-128 + 26));
    const __m128i ws_off = _mm_set1_epi8((char)(0x80 - 0x09));
    const __m128i ws_lim = _mm_set1_epi8((char)(-128 + 5));
    const __m128i space = _mm_set1_epi8(' ');
    size_t i = 0, m = *mp;
    unsigned prev = *pp;
    for (; i + 16 <= len; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
        if ((f & SIMLSH__AN_ASCII) && _mm_movemask_epi8(x))
            break;
        if (f & SIMLSH__AN_LOWER) {
            __m128i up = _mm_cmplt_epi8(_mm_add_epi8(x, up_off), up_lim);
            x = _mm_add_epi8(x, _mm_and_si128(up, space));
        }
        if (f & SIMLSH__AN_COLLAPSE) {
            __m128i ws = _mm_or_si128(_mm_cmpeq_epi8(x, space),
                                      _mm_cmplt_epi8(_mm_add_epi8(x, ws_off), ws_lim));
            unsigned mask = (unsigned)_mm_movemask_epi8(ws);
            if (mask & ((mask << 1) | prev))
                break;
            x = _mm_or_si128(_mm_andnot_si128(ws, x), _mm_and_si128(ws, space));
            out[m] = ' ';
            m += prev;
            _mm_storeu_si128((__m128i *)(void *)(out + m), x);
            prev = mask >> 15;
            m += 16 - prev;
        } else {
            _mm_storeu_si128((__m128i *)(void *)(out + m), x);
            m += 16;
        }
    }
    *mp = m;
    *pp = prev;
    return i;
}
#endif

/* One specialisation per flag set; the shingler passes one set per object. */
#define AN_DISPATCH(body)                                                                       \
    switch (flags) {                                                                            \
    case SIMLSH__AN_LOWER:                                                                      \
        return body(out, m, in, len, SIMLSH__AN_LOWER, prev_space);                             \
    case SIMLSH__AN_COLLAPSE:                                                                   \
        return body(out, m, in, len, SIMLSH__AN_COLLAPSE, prev_space);                          \
    case SIMLSH__AN_LOWER | SIMLSH__AN_COLLAPSE:                                                \
        return body(out, m, in, len, SIMLSH__AN_LOWER | SIMLSH__AN_COLLAPSE, prev_space);       \
    case SIMLSH__AN_LOWER | SIMLSH__AN_ASCII:                                                   \
        return body(out, m, in, len, SIMLSH__AN_LOWER | SIMLSH__AN_ASCII, prev_space);          \
    case SIMLSH__AN_COLLAPSE | SIMLSH__AN_ASCII:                                                \
        return body(out, m, in, len, SIMLSH__AN_COLLAPSE | SIMLSH__AN_ASCII, prev_space);       \
    case SIMLSH__AN_LOWER | SIMLSH__AN_COLLAPSE | SIMLSH__AN_ASCII:                             \
        return body(out, m, in, len, SIMLSH__AN_LOWER | SIMLSH__AN_COLLAPSE | SIMLSH__AN_ASCII, \
                    prev_space);                                                                \
    default:                                                                                    \
        return body(out, m, in, len, flags, prev_space);                                        \
    }

size_t simlsh__ascii_norm_swar(uint8_t *out, size_t *m, const uint8_t *in, size_t len,
                               unsigned flags, unsigned *prev_space)
{
    AN_DISPATCH(swar_body)
}

#if defined(__SSE2__)
static size_t ascii_norm_sse2(uint8_t *out, size_t *m, const uint8_t *in, size_t len,
                              unsigned flags, unsigned *prev_space){AN_DISPATCH(sse2_body)}
#endif

simlsh__ascii_norm_fn simlsh__ascii_norm_for(int isa)
{
#if defined(__SSE2__)
    if (isa != SIMLSH_ISA_SCALAR)
        return ascii_norm_sse2;
#else
    (void)isa;
#endif
    return simlsh__ascii_norm_swar;
}
