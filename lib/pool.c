/* Fork-join over numbered work units (pool.h). */
#include <assert.h>
#include <stdint.h>
#include <unistd.h>

#include "alloc.h"
#include "pool.h"

struct simlsh__par {
    simlsh__unit_fn fn;
    void *ctx;
    size_t nunits;
#if SIMLSH_THREADS
    atomic_size_t next;
    atomic_int failed;
    pthread_mutex_t mu; /* guards first_bad, first_rc */
#else
    size_t next;
    int failed;
#endif
    size_t first_bad;
    int first_rc;
};

uint32_t simlsh__par_workers(uint32_t nthreads, size_t nunits)
{
#if SIMLSH_THREADS
    if (nthreads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (uint32_t)(c < (long)SIMLSH__MAX_THREADS ? c : SIMLSH__MAX_THREADS) : 1;
    }
    if (nthreads > SIMLSH__MAX_THREADS)
        nthreads = SIMLSH__MAX_THREADS;
    if (nunits < nthreads)
        nthreads = nunits > 0 ? (uint32_t)nunits : 1;
    return nthreads;
#else
    (void)nthreads;
    (void)nunits;
    return 1;
#endif
}

static void record(simlsh__par *p, size_t unit, int rc)
{
#if SIMLSH_THREADS
    pthread_mutex_lock(&p->mu);
    if (unit < p->first_bad) {
        p->first_bad = unit;
        p->first_rc = rc;
    }
    pthread_mutex_unlock(&p->mu);
    atomic_store_explicit(&p->failed, 1, memory_order_relaxed);
#else
    if (unit < p->first_bad) {
        p->first_bad = unit;
        p->first_rc = rc;
    }
    p->failed = 1;
#endif
}

int simlsh__par_failed(const simlsh__par *par)
{
#if SIMLSH_THREADS
    return atomic_load_explicit(&par->failed, memory_order_relaxed);
#else
    return par->failed;
#endif
}

typedef struct {
    simlsh__par *par;
    uint32_t worker;
} worker_arg;

static void work(simlsh__par *p, uint32_t worker)
{
    for (;;) {
        if (simlsh__par_failed(p))
            return;
#if SIMLSH_THREADS
        size_t u = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
#else
        size_t u = p->next++;
#endif
        if (u >= p->nunits)
            return;
        int rc = p->fn(p->ctx, p, worker, u);
        if (rc < 0)
            record(p, u, rc);
    }
}

#if SIMLSH_THREADS
static void *thread_main(void *arg)
{
    worker_arg *w = arg;
    work(w->par, w->worker);
    return NULL;
}
#endif

int simlsh__par_run(uint32_t workers, size_t nunits, simlsh__unit_fn fn, void *ctx, size_t *failed)
{
    simlsh__par p;
    p.fn = fn;
    p.ctx = ctx;
    p.nunits = nunits;
    p.first_bad = SIZE_MAX;
    p.first_rc = 0;
#if SIMLSH_THREADS
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, 0);
    pthread_mutex_init(&p.mu, NULL);
    if (workers > SIMLSH__MAX_THREADS)
        workers = SIMLSH__MAX_THREADS;
    pthread_t tid[SIMLSH__MAX_THREADS];
    worker_arg args[SIMLSH__MAX_THREADS];
    uint32_t started = 0;
    /* With two or more workers the caller only waits: units are claimed
     * by whichever thread runs, and a caller that is already running
     * would otherwise claim more than its share while the others start,
     * so its CPU time would hide the call's real serial part. Worker
     * numbers stay dense when a thread fails to start: the caller then
     * works as the next number, so per-worker scratch below `workers`
     * covers every running thread. */
    if (workers > 1) {
        for (uint32_t w = 0; w < workers; w++) {
            args[started].par = &p;
            args[started].worker = started;
            if (pthread_create(&tid[started], NULL, thread_main, &args[started]) != 0)
                break;
            started++;
        }
    }
    if (started < workers)
        work(&p, started);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.mu);
#else
    (void)workers;
    p.next = 0;
    p.failed = 0;
    work(&p, 0);
#endif
    if (failed != NULL)
        *failed = p.first_bad;
    return p.first_rc;
}

/* ---- an allocator that serialises the caller's hooks -------------------------- */

static void *locked_alloc(void *user, size_t size)
{
    simlsh__lockal *la = user;
#if SIMLSH_THREADS
    pthread_mutex_lock(la->mu);
#endif
    void *p = la->inner->alloc(la->inner->user, size);
#if SIMLSH_THREADS
    pthread_mutex_unlock(la->mu);
#endif
    return p;
}

static void locked_free(void *user, void *ptr, size_t size)
{
    simlsh__lockal *la = user;
#if SIMLSH_THREADS
    pthread_mutex_lock(la->mu);
#endif
    simlsh__free_sized(la->inner, ptr, size);
#if SIMLSH_THREADS
    pthread_mutex_unlock(la->mu);
#endif
}

void simlsh__lockal_init(simlsh__lockal *la, const simlsh_allocator *inner)
{
    la->inner = inner;
    /* A v2 struct: a block may be freed through inner later (a worker's
     * result columns), so the lock passes on the size it is given. */
    la->v2 = (simlsh_allocator_v2)SIMLSH_ALLOCATOR_V2_INIT;
    la->v2.alloc = locked_alloc;
    la->v2.free = locked_free;
    la->v2.user = la;
    int rc = simlsh__alloc_fill_v2(&la->al, &la->v2);
    assert(rc == 0);
    (void)rc;
#if SIMLSH_THREADS
    pthread_mutex_init(&la->own, NULL);
    la->mu = &la->own;
#endif
}

void simlsh__lockal_share(simlsh__lockal *la, const simlsh_allocator *inner, simlsh__lockal *with)
{
    simlsh__lockal_init(la, inner);
#if SIMLSH_THREADS
    la->mu = with->mu;
#else
    (void)with;
#endif
}

void simlsh__lockal_done(simlsh__lockal *la)
{
#if SIMLSH_THREADS
    pthread_mutex_destroy(&la->own);
#else
    (void)la;
#endif
}

int simlsh_has_threads(void)
{
    return SIMLSH_THREADS;
}
