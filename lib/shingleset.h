/* The shingle set object (shingleset.c); signature.c reads its hashes.
 * Object layer. */
#ifndef SIMLSH_SHINGLESET_H
#define SIMLSH_SHINGLESET_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"
#include "shingle.h"

struct simlsh_shingleset {
    uint32_t tag; /* SIMLSH__TAG_SHINGLESET (handle.h) */
    struct simlsh_params params;
    uint64_t fingerprint;
    uint64_t *hashes; /* sorted unique in [0, count); pending appended after */
    size_t count;     /* sorted unique prefix */
    size_t len;       /* count + pending (document in progress / features) */
    size_t run;       /* in a document: [count, run) of the pending is sorted
                       * unique already (folded), [run, len) is raw */
    size_t cap;
    int in_doc;
    simlsh__shingler *shingler; /* lazily created */
};

#endif
