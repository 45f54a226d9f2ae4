/*
 * Union-find over 32-bit indices, safe to share between the threads of
 * one call (index/cluster.c) and used alone as well (group.c). Util
 * layer, header only.
 *
 * Roots are linked larger under smaller by compare-and-swap, so parent[x]
 * <= x and no cycle can form; a lost race retries from the new roots. Path
 * halving stores an ancestor with a plain (relaxed) store: a concurrent
 * halving of the same node stores another ancestor, and either is correct.
 * The components do not depend on the order of unions; callers that need
 * labels take them from the members (the smallest id), never the root.
 */
#ifndef SIMLSH_UNIONFIND_H
#define SIMLSH_UNIONFIND_H

#include <stddef.h>
#include <stdint.h>

#if SIMLSH_THREADS
#include <stdatomic.h>
typedef _Atomic uint32_t simlsh__uf_node;
static inline uint32_t simlsh__uf_get(simlsh__uf_node *p, uint32_t x)
{
    return atomic_load_explicit(&p[x], memory_order_relaxed);
}
static inline void simlsh__uf_set(simlsh__uf_node *p, uint32_t x, uint32_t v)
{
    atomic_store_explicit(&p[x], v, memory_order_relaxed);
}
static inline int simlsh__uf_link(simlsh__uf_node *p, uint32_t root, uint32_t to)
{
    return atomic_compare_exchange_strong_explicit(&p[root], &root, to, memory_order_relaxed,
                                                   memory_order_relaxed);
}
#else
typedef uint32_t simlsh__uf_node;
static inline uint32_t simlsh__uf_get(simlsh__uf_node *p, uint32_t x)
{
    return p[x];
}
static inline void simlsh__uf_set(simlsh__uf_node *p, uint32_t x, uint32_t v)
{
    p[x] = v;
}
static inline int simlsh__uf_link(simlsh__uf_node *p, uint32_t root, uint32_t to)
{
    p[root] = to;
    return 1;
}
#endif

/* Every index its own set. */
static inline void simlsh__uf_init(simlsh__uf_node *parent, size_t n)
{
    for (size_t x = 0; x < n; x++)
        simlsh__uf_set(parent, (uint32_t)x, (uint32_t)x);
}

static inline uint32_t simlsh__uf_find(simlsh__uf_node *parent, uint32_t x)
{
    for (;;) {
        uint32_t p = simlsh__uf_get(parent, x);
        if (p == x)
            return x;
        uint32_t g = simlsh__uf_get(parent, p);
        if (g != p)
            simlsh__uf_set(parent, x, g); /* path halving */
        x = g;
    }
}

static inline void simlsh__uf_union(simlsh__uf_node *parent, uint32_t a, uint32_t b)
{
    for (;;) {
        a = simlsh__uf_find(parent, a);
        b = simlsh__uf_find(parent, b);
        if (a == b)
            return;
        if (a < b) {
            uint32_t t = a;
            a = b;
            b = t;
        }
        if (simlsh__uf_link(parent, a, b))
            return;
    }
}

#endif
