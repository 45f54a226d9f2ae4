/* First use from several threads at once: each thread's first library call
 * creates objects, so they race to detect the CPU (lib/cpu.c caches it) and
 * to resolve their kernels. Every thread must get the signatures a single
 * thread computes afterwards. Under ThreadSanitizer
 * (meson setup -Db_sanitize=thread) a data race in that first use fails the
 * test. */
#include <pthread.h>

#include "testutil.h"

#define NTHREADS 8
#define TEXT_LEN 3000
#define NUM_PERM 128

static pthread_barrier_t start;

typedef struct {
    int scheme;
    uint8_t text[TEXT_LEN];
    uint32_t values[NUM_PERM];
    int rc; /* first failing return code, 0 if none */
} job;

static void make_text(uint8_t *t, int id)
{
    tu_rng r = {0x5eed + (uint64_t)id};
    for (size_t i = 0; i < TEXT_LEN; i++)
        t[i] = (uint8_t)(32 + tu_below(&r, 95));
}

/* params + signature + one text; isa as given, every other key default */
static int sign(uint32_t *values, const uint8_t *text, int scheme, int isa)
{
    simlsh_params *p = NULL;
    simlsh_signature *s = NULL;
    size_t n;
    int rc = simlsh_params_new(&p, NULL);
    if (rc == 0)
        rc = simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme);
    if (rc == 0)
        rc = simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa);
    if (rc == 0)
        rc = simlsh_signature_new(&s, p);
    if (rc == 0)
        rc = simlsh_signature_add_text(s, text, TEXT_LEN);
    if (rc == 0)
        rc = simlsh_signature_values(values, NUM_PERM, &n, s);
    if (rc == 0 && n != NUM_PERM)
        rc = SIMLSH_EINVAL;
    simlsh_signature_free(s);
    simlsh_params_free(p);
    return rc;
}

static void *run(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(&start);
    j->rc = sign(j->values, j->text, j->scheme, SIMLSH_ISA_AUTO);
    return NULL;
}

int main(void)
{
    /* Nothing before the threads calls into the library: the CPU cache is
     * still cold when they start. */
    static job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    if (pthread_barrier_init(&start, NULL, NTHREADS) != 0) {
        perror("pthread_barrier_init");
        return 1;
    }
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i].scheme = i % 2 ? SIMLSH_SCHEME_CLASSIC : SIMLSH_SCHEME_OPH;
        make_text(jobs[i].text, i);
        if (pthread_create(&th[i], NULL, run, &jobs[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < NTHREADS; i++) {
        CHECK_OK(jobs[i].rc);
        uint32_t want[NUM_PERM];
        CHECK_OK(sign(want, jobs[i].text, jobs[i].scheme, SIMLSH_ISA_SCALAR));
        CHECK(memcmp(want, jobs[i].values, sizeof want) == 0);
    }
    return tu_finish("cpu-threads");
}
