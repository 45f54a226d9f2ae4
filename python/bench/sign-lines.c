/* The C baseline of bench_python.py: sign every line of a file with one
 * signature object, as sign_batch(threads=1) does through ctypes, and print
 * the signing time as JSON. Usage: sign-lines FILE [NUM_PERM] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simlsh.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: sign-lines FILE [NUM_PERM]\n", stderr);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fputs("sign-lines: cannot read the file\n", stderr);
        return 1;
    }
    fclose(f);
    /* the options simlsh-dedup and simlsh.dedup use */
    simlsh_params *p;
    simlsh_signature *sig;
    int num_perm = argc > 2 ? atoi(argv[2]) : 128;
    if (simlsh_params_new(&p, NULL) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NORMALIZE,
                              SIMLSH_NORM_LOWER_ASCII | SIMLSH_NORM_COLLAPSE_SPACE) != 0 ||
        simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, num_perm) != 0 ||
        simlsh_signature_new(&sig, p) != 0) {
        fputs("sign-lines: library error\n", stderr);
        return 1;
    }
    size_t docs = 0, lines = 0;
    for (char *s = data; s < data + size; s++)
        lines += *s == '\n';
    uint32_t *out = malloc((lines + 1) * (size_t)num_perm * sizeof *out);
    size_t cnt;
    double t0 = now();
    for (char *s = data, *end = data + size; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
        simlsh_signature_clear(sig);
        if (simlsh_signature_add_text(sig, s, len) != 0 ||
            simlsh_signature_values(out + docs * (size_t)num_perm, (size_t)num_perm, &cnt, sig) !=
                0) {
            fputs("sign-lines: signing failed\n", stderr);
            return 1;
        }
        docs++;
        s += len + 1;
    }
    double dt = now() - t0;
    printf("{\"docs\": %zu, \"seconds\": %.6f, \"docs_per_s\": %.1f}\n", docs, dt,
           (double)docs / dt);
    free(out);
    free(data);
    simlsh_signature_free(sig);
    simlsh_params_free(p);
    return 0;
}
