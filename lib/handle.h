/* Type tags for the public handles. Util layer.
 *
 * Every object behind a public handle starts with a uint32_t tag naming its
 * type. FFIs (ctypes' c_void_p, koffi, cgo's unsafe.Pointer) pass handles
 * untyped, so a signature handed to simlsh_params_set_double() must be
 * refused before anything is written: each public function checks the tag
 * of every handle it takes on entry and answers SIMLSH_EINVAL (or does
 * nothing, for the void _free functions) when it is not the expected one.
 *
 * The tag is read with memcpy so that a handle of an untagged type, or of a
 * type whose first member is not the tag, is read without aliasing trouble;
 * objects are at least 4 bytes long. Freed objects get SIMLSH__TAG_DEAD, so
 * a double free or a use after free is often (not always: the memory may
 * be reused) refused instead of corrupting the heap.
 *
 * Objects that keep a copy of their params (index, forest, ensemble) put
 * their own tag before it: the copy carries SIMLSH__TAG_PARAMS, and an
 * object that began with it would pass for params.
 */
#ifndef SIMLSH_HANDLE_H
#define SIMLSH_HANDLE_H

#include <stdint.h>
#include <string.h>

/* "SLPa", "SLSs", ... in memory on a little-endian host. */
enum {
    SIMLSH__TAG_PARAMS = 0x61504c53u,
    SIMLSH__TAG_SHINGLESET = 0x73534c53u,
    SIMLSH__TAG_SIGNATURE = 0x67534c53u,
    SIMLSH__TAG_RESULTS = 0x72524c53u,
    SIMLSH__TAG_INDEX = 0x78494c53u,
    SIMLSH__TAG_FOREST = 0x66464c53u,
    SIMLSH__TAG_ENSEMBLE = 0x65454c53u,
    SIMLSH__TAG_DEDUP = 0x64454c53u,
    SIMLSH__TAG_DEAD = 0x64444c53u
};

/* 1 if h is non-NULL and its object carries tag, else 0. */
static inline int simlsh__handle_is(const void *h, uint32_t tag)
{
    uint32_t t;
    if (h == NULL)
        return 0;
    memcpy(&t, h, sizeof t);
    return t == tag;
}

/* Return SIMLSH_EINVAL from the calling function unless h is a live object
 * of the type of tag (NULL included). */
#define SIMLSH__CHECK_HANDLE(h, tag)        \
    do {                                    \
        if (!simlsh__handle_is((h), (tag))) \
            return SIMLSH_EINVAL;           \
    } while (0)

#define SIMLSH__CHECK_PARAMS(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_PARAMS)
#define SIMLSH__CHECK_SHINGLESET(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_SHINGLESET)
#define SIMLSH__CHECK_SIGNATURE(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_SIGNATURE)
#define SIMLSH__CHECK_RESULTS(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_RESULTS)
#define SIMLSH__CHECK_INDEX(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_INDEX)
#define SIMLSH__CHECK_FOREST(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_FOREST)
#define SIMLSH__CHECK_ENSEMBLE(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_ENSEMBLE)
#define SIMLSH__CHECK_DEDUP(h) SIMLSH__CHECK_HANDLE(h, SIMLSH__TAG_DEDUP)

#endif
