/* Shared by the simlsh-bench subcommands. */
#ifndef SIMLSH_BENCH_H
#define SIMLSH_BENCH_H
#include <stdint.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_sign(int argc, char **argv);
int bench_index(int argc, char **argv);
int bench_forest(int argc, char **argv);
int bench_ensemble(int argc, char **argv);
#endif
