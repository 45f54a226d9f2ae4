/* Operating-system hints that are never needed for correctness, behind
 * one inline each so a port changes only this header. */
#ifndef SIMLSH_OS_H
#define SIMLSH_OS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Ask for transparent huge pages on a block before it is first touched.
 * Only the 2 MiB-aligned interior is advised, so the hint never reaches
 * memory outside the block; it is only a hint (an allocator's memory may
 * refuse it), and blocks under 8 MiB are left alone. */
static inline void simlsh__os_advise_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (bytes < 4 * huge)
        return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

#endif
