/* simlsh-dedup: memory that exits on failure, the bottom of the core:
 * every other file may call it, it calls none of them. */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>

void die_oom(void)
{
    fputs("simlsh-dedup: out of memory\n", stderr);
    exit(EXIT_DEDUP_INTERNAL);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die_oom();
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}
