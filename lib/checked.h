/* Overflow-checked size arithmetic: every size computed from a count that
 * a caller or an input controls goes through these. */
#ifndef SIMLSH_CHECKED_H
#define SIMLSH_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *out = a * b and true, or false (and *out untouched) if it overflows. */
static inline bool simlsh__mul_ok(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > SIZE_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/* *out = a + b and true, or false (and *out untouched) if it overflows. */
static inline bool simlsh__add_ok(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b)
        return false;
    *out = a + b;
    return true;
}

#endif
