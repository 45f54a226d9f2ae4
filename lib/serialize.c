/*
 * Common framing of every serialised object (docs/format.md):
 *   header   16 bytes: magic u32, format version u16, flags u16 (0), payload length u64
 *   contract 32 bytes: the hash contract (see contract_write)
 *   payload  object-specific
 *   trailer   8 bytes: low 64 bits of MurmurHash3 x64_128 (seed 0x5eedc0de) of all
 *                      bytes before it
 * Readers check everything before allocating anything sized by the input.
 */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "frame.h"
#include "le.h"
#include "murmur3.h"

#define CHECKSUM_SEED 0x5eedc0deu

static void contract_write(uint8_t *c, const struct simlsh_params *p)
{
    memset(c, 0, SIMLSH__CONTRACT_SIZE);
    c[0] = (uint8_t)p->unit;
    c[1] = (uint8_t)p->k;
    c[2] = (uint8_t)p->normalize;
    c[3] = (uint8_t)p->utf8_policy;
    simlsh__wr32(c + 4, p->seed);
    c[8] = (uint8_t)p->hash_bits;
    c[9] = (uint8_t)p->scheme;
    simlsh__wr16(c + 10, (uint16_t)p->num_perm);
    simlsh__wr16(c + 12, (uint16_t)p->bands);
    simlsh__wr16(c + 14, (uint16_t)p->rows);
    c[16] = (uint8_t)p->store_signatures;
    /* c[17..23] reserved, zero */
    uint64_t bits;
    memcpy(&bits, &p->threshold, sizeof bits);
    simlsh__wr64(c + 24, bits);
}

static int contract_read(struct simlsh_params *p, const uint8_t *c, const simlsh_allocator *alloc)
{
    simlsh__params_defaults(p, alloc);
    for (int i = 17; i < 24; i++)
        if (c[i] != 0)
            return SIMLSH_ECORRUPT;
    uint64_t bits = simlsh__rd64(c + 24);
    double t;
    memcpy(&t, &bits, sizeof t);
    struct {
        int key;
        int64_t v;
    } ints[] = {
        {SIMLSH_PARAM_UNIT, c[0]},
        {SIMLSH_PARAM_K, c[1]},
        {SIMLSH_PARAM_NORMALIZE, c[2]},
        {SIMLSH_PARAM_UTF8_POLICY, c[3]},
        {SIMLSH_PARAM_SEED, simlsh__rd32(c + 4)},
        {SIMLSH_PARAM_HASH_BITS, c[8]},
        {SIMLSH_PARAM_SCHEME, c[9]},
        {SIMLSH_PARAM_NUM_PERM, simlsh__rd16(c + 10)},
        {SIMLSH_PARAM_BANDS, simlsh__rd16(c + 12)},
        {SIMLSH_PARAM_ROWS, simlsh__rd16(c + 14)},
        {SIMLSH_PARAM_STORE_SIGNATURES, c[16]},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int rc = simlsh_params_set_int(p, ints[i].key, ints[i].v);
        if (rc == SIMLSH_EUNSUPPORTED)
            return rc;
        if (rc < 0)
            return SIMLSH_ECORRUPT;
    }
    if (simlsh_params_set_double(p, SIMLSH_PARAM_THRESHOLD, t) < 0)
        return SIMLSH_ECORRUPT;
    return 0;
}

static void write_head(uint8_t *buf, uint32_t magic, uint64_t payload_len,
                       const struct simlsh_params *p)
{
    simlsh__wr32(buf, magic);
    simlsh__wr16(buf + 4, SIMLSH__FORMAT_VERSION);
    simlsh__wr16(buf + 6, 0);
    simlsh__wr64(buf + 8, payload_len);
    contract_write(buf + SIMLSH__HEADER_SIZE, p);
}

static uint64_t checksum(const uint8_t *buf, size_t len)
{
    uint64_t h[2];
    simlsh__murmur3_128(buf, len, CHECKSUM_SEED, h);
    return h[0];
}

void simlsh__frame_write_tail(uint8_t *buf, size_t total)
{
    simlsh__wr64(buf + total - SIMLSH__TRAILER_SIZE, checksum(buf, total - SIMLSH__TRAILER_SIZE));
}

int simlsh__frame_begin(void *buf, size_t cap, size_t *size, uint64_t payload_len, uint32_t magic,
                        const struct simlsh_params *p, uint8_t **payload)
{
    if (payload_len > (uint64_t)(SIZE_MAX - SIMLSH__FRAME_OVERHEAD))
        return SIMLSH_EINVAL;
    *size = SIMLSH__FRAME_OVERHEAD + (size_t)payload_len;
    if (buf == NULL)
        return 0;
    if (cap < *size)
        return SIMLSH_EBUFSIZE;
    write_head(buf, magic, payload_len, p);
    *payload = (uint8_t *)buf + SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    return 1;
}

int simlsh__frame_open(const void *buffer, size_t len, const simlsh_allocator *alloc,
                       uint32_t magic, struct simlsh_params *params, const uint8_t **payload,
                       uint64_t *payload_len)
{
    const uint8_t *buf = buffer;
    if (buf == NULL || !simlsh__alloc_valid(alloc))
        return SIMLSH_EINVAL;
    if (len < SIMLSH__FRAME_OVERHEAD)
        return SIMLSH_ECORRUPT;
    if (simlsh__rd32(buf) != magic)
        return SIMLSH_ECORRUPT;
    uint16_t version = simlsh__rd16(buf + 4);
    if (version == 0)
        return SIMLSH_ECORRUPT;
    if (version > SIMLSH__FORMAT_VERSION)
        return SIMLSH_EUNSUPPORTED;
    if (simlsh__rd16(buf + 6) != 0)
        return SIMLSH_ECORRUPT;
    uint64_t plen = simlsh__rd64(buf + 8);
    if (plen != (uint64_t)(len - SIMLSH__FRAME_OVERHEAD))
        return SIMLSH_ECORRUPT;
    if (simlsh__rd64(buf + len - SIMLSH__TRAILER_SIZE) != checksum(buf, len - SIMLSH__TRAILER_SIZE))
        return SIMLSH_ECORRUPT;
    int rc = contract_read(params, buf + SIMLSH__HEADER_SIZE, alloc);
    if (rc < 0)
        return rc;
    *payload = buf + SIMLSH__HEADER_SIZE + SIMLSH__CONTRACT_SIZE;
    *payload_len = plen;
    return 0;
}
