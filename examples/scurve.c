/*
 * S-curves: how the LSH banding (b bands of r rows) turns similarity into
 * the probability of becoming a candidate, P(s) = 1 - (1 - s^r)^b, and which
 * (b, r) the optimiser picks for a threshold. docs/tuning.md shows its output.
 *
 * Usage: scurve [NUM_PERM]   (default: tables for 64, 128 and 256)
 */
#include <simlsh.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != 0) {                                                       \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_));         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const double thresholds[] = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95};
#define NT (sizeof thresholds / sizeof thresholds[0])

static void optimal_table(uint32_t num_perm)
{
    printf("num_perm = %u, weights FP 0.5 / FN 0.5\n\n", num_perm);
    printf("| threshold t | b | r | unused | (1/b)^(1/r) | P = 1/2 at | FP area | FN area |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < NT; i++) {
        uint32_t b, r, unused;
        double approx, exact, fp, fn;
        CHECK(simlsh_lsh_optimal_params(&b, &r, &unused, num_perm, thresholds[i], 0.5, 0.5));
        CHECK(simlsh_lsh_threshold(&approx, b, r));
        CHECK(simlsh_lsh_threshold_exact(&exact, b, r));
        CHECK(simlsh_lsh_false_positive_area(&fp, b, r, thresholds[i]));
        CHECK(simlsh_lsh_false_negative_area(&fn, b, r, thresholds[i]));
        printf("| %.2f | %u | %u | %u | %.3f | %.3f | %.4f | %.4f |\n", thresholds[i], b, r,
               unused, approx, exact, fp, fn);
    }
    printf("\n");
}

/* P(s) for the (b, r) the optimiser picks at each threshold. */
static void curve_table(uint32_t num_perm)
{
    uint32_t b[NT], r[NT];
    printf("P(candidate) by true similarity s, num_perm = %u\n\n| s |", num_perm);
    for (size_t i = 0; i < NT; i++) {
        CHECK(simlsh_lsh_optimal_params(&b[i], &r[i], NULL, num_perm, thresholds[i], 0.5, 0.5));
        printf(" b=%u r=%u (t=%.2f) |", b[i], r[i], thresholds[i]);
    }
    printf("\n|---|");
    for (size_t i = 0; i < NT; i++)
        printf("---|");
    printf("\n");
    for (int step = 1; step <= 20; step++) {
        double s = step * 0.05;
        printf("| %.2f |", s);
        for (size_t i = 0; i < NT; i++) {
            double p;
            CHECK(simlsh_lsh_probability(&p, b[i], r[i], s));
            printf(" %.4f |", p);
        }
        printf("\n");
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    static const uint32_t defaults[] = {64, 128, 256};
    if (argc > 1) {
        long np = strtol(argv[1], NULL, 10);
        if (np < 1 || np > 1024) {
            fprintf(stderr, "usage: scurve [NUM_PERM 1..1024]\n");
            return 2;
        }
        optimal_table((uint32_t)np);
        curve_table((uint32_t)np);
        return 0;
    }
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        optimal_table(defaults[i]);
    curve_table(128);
    return 0;
}
