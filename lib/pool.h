/* Fork-join over numbered work units, for the calls that take a thread
 * count (pool.c). Util layer.
 *
 * A call splits its work into units whose results do not depend on which
 * thread runs them or when (a band of the index, a range of documents), so
 * its output is the same for any number of threads. Threads are started per
 * call and joined before it returns: nothing outlives a call, there is no
 * global state, and a library built without threads (meson option
 * `threads`) runs every unit in the calling thread. */
#ifndef SIMLSH_POOL_H
#define SIMLSH_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "simlsh.h"

#if SIMLSH_THREADS
#include <pthread.h>
#include <stdatomic.h>
#endif

/* More threads than this are never started: beyond it the serial parts of
 * every call dominate, and a typo (nthreads = -1 as uint32_t) must not
 * start four billion threads. */
#define SIMLSH__MAX_THREADS 256u

typedef struct simlsh__par simlsh__par;

/* A unit's work; worker is in [0, workers) and tells which per-worker
 * scratch to use. 0 or a negative code. */
typedef int (*simlsh__unit_fn)(void *ctx, simlsh__par *par, uint32_t worker, size_t unit);

/* Workers for a call asking for nthreads (0: one per online CPU) over
 * nunits units: at least 1, at most nunits and SIMLSH__MAX_THREADS; 1
 * without threads. */
uint32_t simlsh__par_workers(uint32_t nthreads, size_t nunits);

/* Run fn on units 0 .. nunits-1, claimed in increasing order by up to
 * `workers` threads (the caller runs units only when it is the one worker, or
 * a thread could not be started). Once a unit fails no further
 * unit is claimed; claimed units finish. Returns 0 or the code of the
 * lowest-numbered failed unit (every unit below it ran, so the code does
 * not depend on timing for failures that depend on the data alone), and
 * *failed receives that unit (SIZE_MAX if none; failed may be NULL). A
 * thread that cannot be started is no error: the others run its units. */
int simlsh__par_run(uint32_t workers, size_t nunits, simlsh__unit_fn fn, void *ctx, size_t *failed);

/* 1 once some unit of this run has failed: long units poll it to stop early. */
int simlsh__par_failed(const simlsh__par *par);

/* An allocator for workers: its hooks call those of `inner` one at a time,
 * so a call never makes the caller's hooks run concurrently with each
 * other. Initialise with simlsh__lockal_init, release with _done. A call
 * that allocates through two hook sets (an index's and a results') makes
 * the second with _share, so that both take the same lock: the caller may
 * have given both objects the same hooks. */
typedef struct simlsh__lockal {
    simlsh_allocator al;    /* what workers pass to simlsh__malloc: refers to v2 */
    simlsh_allocator_v2 v2; /* sized hooks, so that frees keep their sizes */
    const simlsh_allocator *inner;
#if SIMLSH_THREADS
    pthread_mutex_t own;
    pthread_mutex_t *mu;
#endif
} simlsh__lockal;

void simlsh__lockal_init(simlsh__lockal *la, const simlsh_allocator *inner);
void simlsh__lockal_share(simlsh__lockal *la, const simlsh_allocator *inner, simlsh__lockal *with);
void simlsh__lockal_done(simlsh__lockal *la);

#endif
