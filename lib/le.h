/* Little-endian loads and stores, byte by byte: the byte formats and the
 * hashes do not depend on host endianness or alignment. Util layer.
 * (Not named endian.h: lib/ is on the include path, and system headers
 * include <endian.h>.) */
#ifndef SIMLSH_LE_H
#define SIMLSH_LE_H

#include <stdint.h>

static inline uint16_t simlsh__rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t simlsh__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t simlsh__rd64(const uint8_t *p)
{
    return (uint64_t)simlsh__rd32(p) | ((uint64_t)simlsh__rd32(p + 4) << 32);
}
static inline void simlsh__wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void simlsh__wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void simlsh__wr64(uint8_t *p, uint64_t v)
{
    simlsh__wr32(p, (uint32_t)v);
    simlsh__wr32(p + 4, (uint32_t)(v >> 32));
}

#endif
