/*
 * MurmurHash3 x86_32 and x64_128 (Austin Appleby's public-domain algorithm;
 * this implementation is ours). Input is read byte by byte as little-endian
 * words, so results do not depend on host endianness or alignment.
 */
#include "le.h"
#include "murmur3.h"

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}
static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

uint32_t simlsh__murmur3_32(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = data;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = seed;
    size_t nblocks = len / 4;
    for (size_t i = 0; i < nblocks; i++) {
        uint32_t k = simlsh__rd32(p + 4 * i);
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = p + 4 * nblocks;
    uint32_t k = 0;
    switch (len & 3) {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)len;
    return simlsh__fmix32(h);
}

void simlsh__murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t out[2])
{
    const uint8_t *p = data;
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t h1 = seed, h2 = seed;
    size_t nblocks = len / 16;
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t k1 = simlsh__rd64(p + 16 * i), k2 = simlsh__rd64(p + 16 * i + 8);
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl64(h1, 27);
        h1 += h2;
        h1 = h1 * 5 + 0x52dce729;
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        h2 = rotl64(h2, 31);
        h2 += h1;
        h2 = h2 * 5 + 0x38495ab5;
    }
    const uint8_t *tail = p + 16 * nblocks;
    uint64_t k1 = 0, k2 = 0;
    switch (len & 15) {
    case 15:
        k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14:
        k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13:
        k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12:
        k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11:
        k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10:
        k2 ^= (uint64_t)tail[9] << 8; /* fall through */
    case 9:
        k2 ^= (uint64_t)tail[8];
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        /* fall through */
    case 8:
        k1 ^= (uint64_t)tail[7] << 56; /* fall through */
    case 7:
        k1 ^= (uint64_t)tail[6] << 48; /* fall through */
    case 6:
        k1 ^= (uint64_t)tail[5] << 40; /* fall through */
    case 5:
        k1 ^= (uint64_t)tail[4] << 32; /* fall through */
    case 4:
        k1 ^= (uint64_t)tail[3] << 24; /* fall through */
    case 3:
        k1 ^= (uint64_t)tail[2] << 16; /* fall through */
    case 2:
        k1 ^= (uint64_t)tail[1] << 8; /* fall through */
    case 1:
        k1 ^= (uint64_t)tail[0];
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
    }
    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = simlsh__fmix64(h1);
    h2 = simlsh__fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}
