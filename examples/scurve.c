/*
 * S-curves: how the LSH banding (b bands of r rows) turns similarity into
 * the probability of becoming a candidate, P(s) = 1 - (1 - s^r)^b, and which
 * (b, r) the optimiser picks for a threshold and for weights that favour
 * recall (simlsh-dedup uses 0.1 / 0.9). docs/tuning.md shows its output.
 *
 * Usage: scurve [NUM_PERM]   (default: tables for 64, 128 and 256)
 */
#include <simlsh.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                   \
    do {                                                              \
        int rc_ = (call);                                             \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "%s: %s\n", #call, simlsh_strerror(rc_)); \
            exit(1);                                                  \
        }                                                             \
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
        printf("| %.2f | %u | %u | %u | %.3f | %.3f | %.4f | %.4f |\n", thresholds[i], b, r, unused,
               approx, exact, fp, fn);
    }
    printf("\n");
}

struct choice {
    uint32_t b, r;
    char label[48];
};

static void print_curves(const char *title, const struct choice *c, size_t n)
{
    printf("%s\n\n| s |", title);
    for (size_t i = 0; i < n; i++)
        printf(" %s |", c[i].label);
    printf("\n|---|");
    for (size_t i = 0; i < n; i++)
        printf("---|");
    printf("\n");
    for (int step = 1; step <= 20; step++) {
        double s = step * 0.05;
        printf("| %.2f |", s);
        for (size_t i = 0; i < n; i++) {
            double p;
            CHECK(simlsh_lsh_probability(&p, c[i].b, c[i].r, s));
            printf(" %.4f |", p);
        }
        printf("\n");
    }
    printf("\n");
}

/* P(s) for the (b, r) the optimiser picks at each threshold. */
static void curve_table(uint32_t num_perm)
{
    struct choice c[NT];
    char title[96];
    for (size_t i = 0; i < NT; i++) {
        CHECK(simlsh_lsh_optimal_params(&c[i].b, &c[i].r, NULL, num_perm, thresholds[i], 0.5, 0.5));
        snprintf(c[i].label, sizeof c[i].label, "b=%u r=%u (t=%.2f)", c[i].b, c[i].r,
                 thresholds[i]);
    }
    snprintf(title, sizeof title, "P(candidate) by true similarity s, num_perm = %u", num_perm);
    print_curves(title, c, NT);
}

/* Threshold 0.8 as the weights move towards recall. */
static void weights_table(uint32_t num_perm, double t)
{
    static const double w_fn[] = {0.5, 0.7, 0.8, 0.9, 0.95};
    struct choice c[5];
    char title[96];
    printf("num_perm = %u, threshold %.2f, by weights\n\n", num_perm, t);
    printf("| FP / FN weight | b | r | P(t - 0.2) | P(t - 0.1) | P(t) | P(t + 0.05) |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < 5; i++) {
        double p[4];
        double s[4] = {t - 0.2, t - 0.1, t, t + 0.05 > 1 ? 1 : t + 0.05};
        CHECK(simlsh_lsh_optimal_params(&c[i].b, &c[i].r, NULL, num_perm, t, 1 - w_fn[i], w_fn[i]));
        for (int k = 0; k < 4; k++)
            CHECK(simlsh_lsh_probability(&p[k], c[i].b, c[i].r, s[k]));
        printf("| %.2f / %.2f | %u | %u | %.4f | %.4f | %.4f | %.4f |\n", 1 - w_fn[i], w_fn[i],
               c[i].b, c[i].r, p[0], p[1], p[2], p[3]);
        snprintf(c[i].label, sizeof c[i].label, "b=%u r=%u (%.2f/%.2f)", c[i].b, c[i].r,
                 1 - w_fn[i], w_fn[i]);
    }
    printf("\n");
    snprintf(title, sizeof title, "P(candidate) by true similarity s, num_perm = %u, t = %.2f",
             num_perm, t);
    print_curves(title, c, 5);
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
        weights_table((uint32_t)np, 0.8);
        return 0;
    }
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        optimal_table(defaults[i]);
    curve_table(128);
    weights_table(128, 0.8);
    return 0;
}
