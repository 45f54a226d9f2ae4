/*
 * ASCII lowercasing and whitespace collapsing a block at a time, for the
 * shingler's single-byte units (shingle.c, simple_run). Byte by byte the
 * two cost as much as hashing and MinHash together; here a block costs a
 * few word or vector operations.
 *
 * A block is loaded, mapped (A-Z -> a-z, whitespace -> ' ') and stored
 * whole. What makes that enough is that in text whitespace runs are mostly
 * one byte long: then collapsing changes no length. When a run is longer
 * (CRLF, indentation, a blank line) the step keeps the bytes before its
 * second byte and the next block starts where the run ends, so the kernels
 * never compact bytes within a vector.
 */
#include "shingle-norm.h"

#include <simlsh.h>

#include "simd.h"
#include "le.h"

#ifdef SIMLSH__HAVE_X86
#include <immintrin.h>
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

static inline unsigned ctz(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

/*
 * One step of both kernels, on masks with one bit per byte (bit `unit * b`
 * for byte b, unit 8 in a word and 1 in a vector): the block's bytes are
 * already mapped and stored at out + *m (after an owed ' ' if byte 0 is
 * not whitespace), `lim` bytes of it count, `ws` marks its whitespace.
 * Advances *m over the bytes kept and returns the bytes consumed, which
 * stop after the first whitespace run that holds more than one byte, at
 * the next non-whitespace byte (so the next block starts there), or at the
 * block's end if the run goes on. A whitespace byte that ends what was
 * kept is owed: *prev = 1.
 */
static AN_INLINE size_t collapse_step(uint64_t ws, uint64_t unit, size_t lim, size_t *m,
                                      unsigned *prev)
{
    uint64_t in_lim = ((uint64_t)1 << (unit * (lim - 1)) << unit) - 1;
    uint64_t bytes = unit == 1 ? ~(uint64_t)0 : REP(0x01); /* the bit of every byte */
    ws &= in_lim;
    uint64_t drop = ws & ((ws << unit) | *prev); /* whitespace after whitespace */
    if (drop == 0) {
        unsigned last = (unsigned)(ws >> (unit * (lim - 1))) & 1;
        *m += lim - last;
        *prev = last;
        return lim;
    }
    size_t j = ctz(drop) / unit; /* bytes before j are kept; j - 1 is whitespace */
    *m += j ? j - 1 : 0;
    *prev = 1;
    uint64_t rest = ~ws & (bytes << (unit * j)) & in_lim; /* where the run ends */
    return rest ? ctz(rest) / unit : lim;
}

static AN_INLINE size_t swar_body(uint8_t *out, size_t *mp, const uint8_t *in, size_t len,
                                  unsigned f, unsigned *pp)
{
    size_t i = 0, m = *mp;
    unsigned prev = *pp;
    while (i + 8 <= len) {
        uint64_t w = simlsh__rd64(in + i);
        size_t lim = 8;
        if ((f & SIMLSH__AN_ASCII) && (w & REP(0x80))) {
            lim = ctz(w & REP(0x80)) / 8; /* the ASCII bytes before it */
            if (lim == 0)
                break;
        }
        if (f & SIMLSH__AN_LOWER)
            w += in_range(w, 'A', 'Z') >> 2; /* bit 7 -> 0x20 */
        if (f & SIMLSH__AN_COLLAPSE) {
            uint64_t sp = in_range(w, 0x09, 0x0d) | in_range(w, ' ', ' ');
            uint64_t all = (sp >> 7) * 0xff;
            w = (w & ~all) | (all & REP(' '));
            out[m] = ' '; /* owed from before; kept if byte 0 is kept */
            m += prev & (unsigned)(~sp >> 7) & 1;
            simlsh__wr64(out + m, w);
            if (lim == 8 && !(sp & ((sp << 8) | ((uint64_t)prev << 7)))) {
                prev = (unsigned)(sp >> 63); /* the common block, in short */
                m += 8 - prev;
                i += 8;
            } else {
                i += collapse_step(sp >> 7, 8, lim, &m, &prev);
            }
        } else {
            simlsh__wr64(out + m, w);
            m += lim;
            i += lim;
        }
    }
    *mp = m;
    *pp = prev;
    return i;
}

#ifdef SIMLSH__HAVE_X86
static SIMLSH__AVX2 AN_INLINE size_t avx2_body(uint8_t *out, size_t *mp, const uint8_t *in,
                                               size_t len, unsigned f, unsigned *pp)
{
    /* Ranges by one signed compare: x + (0x80 - lo) puts [lo, hi] at the
     * bottom of the signed range, for every byte value. */
    const __m256i up_off = _mm256_set1_epi8((char)(0x80 - 'A'));
    const __m256i up_lim = _mm256_set1_epi8((char)(-128 + 26));
    const __m256i ws_off = _mm256_set1_epi8((char)(0x80 - 0x09));
    const __m256i ws_lim = _mm256_set1_epi8((char)(-128 + 5));
    const __m256i space = _mm256_set1_epi8(' ');
    size_t i = 0, m = *mp;
    unsigned prev = *pp;
    while (i + 32 <= len) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
        size_t lim = 32;
        if (f & SIMLSH__AN_ASCII) {
            unsigned high = (unsigned)_mm256_movemask_epi8(x);
            if (high) {
                lim = ctz(high); /* the ASCII bytes before it */
                if (lim == 0)
                    break;
            }
        }
        if (f & SIMLSH__AN_LOWER) {
            __m256i up = _mm256_cmpgt_epi8(up_lim, _mm256_add_epi8(x, up_off));
            x = _mm256_add_epi8(x, _mm256_and_si256(up, space));
        }
        if (f & SIMLSH__AN_COLLAPSE) {
            __m256i ws = _mm256_or_si256(_mm256_cmpeq_epi8(x, space),
                                         _mm256_cmpgt_epi8(ws_lim, _mm256_add_epi8(x, ws_off)));
            unsigned mask = (unsigned)_mm256_movemask_epi8(ws);
            x = _mm256_or_si256(_mm256_andnot_si256(ws, x), _mm256_and_si256(ws, space));
            out[m] = ' ';
            m += prev & ~mask & 1;
            _mm256_storeu_si256((__m256i *)(void *)(out + m), x);
            if (lim == 32 && !(mask & ((mask << 1) | prev))) {
                prev = mask >> 31; /* the common block, in short */
                m += 32 - prev;
                i += 32;
            } else {
                i += collapse_step(mask, 1, lim, &m, &prev);
            }
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(out + m), x);
            m += lim;
            i += lim;
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
    AN_DISPATCH(swar_body);
}

#ifdef SIMLSH__HAVE_X86
static SIMLSH__AVX2 size_t ascii_norm_avx2(uint8_t *out, size_t *m, const uint8_t *in, size_t len,
                                           unsigned flags, unsigned *prev_space)
{
    AN_DISPATCH(avx2_body);
}
#endif

simlsh__ascii_norm_fn simlsh__ascii_norm_for(int isa)
{
#ifdef SIMLSH__HAVE_X86
    if (isa == SIMLSH_ISA_AVX2 || isa == SIMLSH_ISA_AVX512)
        return ascii_norm_avx2;
#else
    (void)isa;
#endif
    return simlsh__ascii_norm_swar;
}
