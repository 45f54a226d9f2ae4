/* Transitional umbrella over the per-module private headers (see
 * lib/README.md for who may include whom). New code includes the headers it
 * needs; this file goes away once nothing includes it. Never installed. */
#ifndef SIMLSH_INTERNAL_H
#define SIMLSH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "simlsh.h"
#include "simlsh_config.h"

#include "alloc.h"
#include "cpu.h"
#include "frame.h"
#include "le.h"
#include "minhash.h"
#include "murmur3.h"
#include "params.h"
#include "shingle.h"
#include "shingleset.h"
#include "signature.h"

/* Band key of values[0..rows) for band number band (docs/format.md). */
uint64_t simlsh__band_key(const uint32_t *values, uint32_t rows, uint32_t band, uint32_t seed);

#endif
