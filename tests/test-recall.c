/* simlsh_lsh_optimal_params_recall(): literal cases computed by hand and
 * with exact rational arithmetic, and an exhaustive search over every
 * (b, r) with its own arithmetic (long double, Simpson's rule). */
#include "testutil.h"

static long double ref_p(unsigned b, unsigned r, long double s)
{
    return 1.0L - powl(1.0L - powl(s, (long double)r), (long double)b);
}

/* Composite Simpson on [lo, hi]; P is a polynomial of degree b*r <= 256
 * here, whose fourth derivative is below b^4 r^4-ish only near the rise:
 * 4096 panels keep the error below 1e-9 for num_perm <= 128. */
static long double ref_integral(unsigned b, unsigned r, long double lo, long double hi)
{
    const int n = 4096;
    long double h = (hi - lo) / n, sum = ref_p(b, r, lo) + ref_p(b, r, hi);
    for (int i = 1; i < n; i++)
        sum += ref_p(b, r, lo + i * h) * (i & 1 ? 4.0L : 2.0L);
    return sum * h / 3.0L;
}

static long double ref_constrained(unsigned b, unsigned r, double t, double width)
{
    long double hi = t + width < 1.0 ? (long double)t + width : 1.0L;
    if (!(hi > t))
        return ref_p(b, r, t);
    return ref_integral(b, r, t, hi) / (hi - t);
}

/* The library's choice must be feasible by our arithmetic and have the
 * smallest false-positive area; when the best is clear (no other
 * feasible banding within 1e-7) it must be exactly that one. */
static void check_exhaustive(uint32_t num_perm, double t, double recall, double width)
{
    uint32_t b = 0, r = 0;
    double ach = -1.0;
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, num_perm, t, recall, width));
    long double best = 1e30L, second = 1e30L;
    unsigned bb = 0, br = 0;
    long double top = -1.0L;
    unsigned tb = 0, tr = 0;
    for (unsigned rr = 1; rr <= num_perm; rr++) {
        for (unsigned b2 = 1; b2 <= num_perm / rr; b2++) {
            long double q = ref_constrained(b2, rr, t, width);
            if (q > top) {
                top = q;
                tb = b2;
                tr = rr;
            }
            if (q < recall)
                continue;
            long double area = ref_integral(b2, rr, 0.0L, t);
            if (area < best) {
                second = best;
                best = area;
                bb = b2;
                br = rr;
            } else if (area < second) {
                second = area;
            }
        }
    }
    CHECK(b >= 1 && r >= 1 && (uint64_t)b * r <= num_perm);
    if (bb == 0) {
        /* Infeasible: the largest constrained quantity. */
        CHECK(b == tb && r == tr);
        CHECK(ach < recall);
        CHECK_NEAR(ach, (double)top, 1e-9);
        return;
    }
    long double mine = ref_constrained(b, r, t, width);
    CHECK(mine >= recall - 1e-12L);
    CHECK(ach >= recall);
    CHECK_NEAR(ach, (double)mine, 1e-9);
    CHECK(ref_integral(b, r, 0.0L, t) <= best + 1e-9L);
    if (second - best > 1e-7L) {
        CHECK(b == bb && r == br);
        if (b != bb || r != br)
            fprintf(stderr, "  num_perm %u t %g R %g w %g: got %ux%u, reference %ux%u\n",
                    num_perm, t, recall, width, b, r, bb, br);
    }
}

static void test_literals(void)
{
    /* num_perm 128, t 0.8, R 0.99: 0.8^6 = 0.262144 and
     * 1 - 0.737856^16 = 0.99228 >= 0.99, while 15 bands give 0.98954;
     * no other banding that reaches 0.99 has a smaller area (exact
     * rational search: 12x5 0.2471, 9x4 0.2857, 7x3 0.3474). */
    struct {
        uint32_t n;
        double t, recall, width;
        uint32_t b, r;
        double p, fp;
    } lit[] = {
        {128, 0.8, 0.99, 0.0, 16, 6, 0.9922812706923393, 0.21921790692426588},
        {128, 0.5, 0.99, 0.0, 35, 3, 0.9906613982345208, 0.22899348799029592},
        {128, 0.8, 0.9, 0.0, 13, 8, 0.9081352032546532, 0.12283253672455724},
        {64, 0.9, 0.95, 0.0, 7, 9, 0.96763040484037, 0.1442262689559002},
        {256, 0.8, 0.99, 0.0, 26, 8, 0.9915608591189361, 0.17511412203459847},
        /* Windows: the mean of P over [t, t + w]. */
        {128, 0.8, 0.99, 0.05, 16, 7, 0.9904265156866094, 0.17416556700757566},
        {128, 0.8, 0.99, 0.2, 15, 8, 0.991875490126276, 0.13341461876354468},
        {64, 0.7, 0.95, 0.1, 12, 5, 0.9543510748700554, 0.1516305492660866},
    };
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) {
        uint32_t b = 0, r = 0;
        double ach = -1.0, fp = -1.0;
        CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, lit[i].n, lit[i].t,
                                                  lit[i].recall, lit[i].width));
        CHECK(b == lit[i].b && r == lit[i].r);
        if (b != lit[i].b || r != lit[i].r)
            fprintf(stderr, "  case %zu: got %ux%u\n", i, b, r);
        CHECK_NEAR(ach, lit[i].p, 1e-12);
        CHECK_OK(simlsh_lsh_false_positive_area(&fp, b, r, lit[i].t));
        CHECK_NEAR(fp, lit[i].fp, 1e-12);
    }
    /* The FN area of 16x6 at 0.8 (exact rational value). */
    double fn = -1.0;
    CHECK_OK(simlsh_lsh_false_negative_area(&fn, 16, 6, 0.8));
    CHECK_NEAR(fn, 0.0001526006474813483, 1e-13);

    /* achieved may be NULL. */
    uint32_t b = 0, r = 0;
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, NULL, 128, 0.8, 0.99, 0.0));
    CHECK(b == 16 && r == 6);

    /* Infeasible: 4 values at t = 0.5 reach at most 1 - 0.5^4 = 0.9375
     * (4 bands of 1 row); the call still succeeds and says so. */
    double ach = 0.0;
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 4, 0.5, 0.99, 0.0));
    CHECK(b == 4 && r == 1);
    CHECK_NEAR(ach, 0.9375, 1e-15);
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 1, 0.3, 0.5, 0.0));
    CHECK(b == 1 && r == 1);
    CHECK_NEAR(ach, 0.3, 1e-15);

    /* t = 1: P(1) = 1 for every banding, so the smallest area wins:
     * one band of all rows, area 1 / (num_perm + 1). */
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, 1.0, 0.99, 0.0));
    CHECK(b == 1 && r == 128);
    CHECK_NEAR(ach, 1.0, 0.0);
    CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, 1.0, 0.99, 0.5));
    CHECK(b == 1 && r == 128);

    /* Higher targets never lower P(t), and cost area. */
    double prev_fp = 0.0;
    double targets[] = {0.5, 0.8, 0.9, 0.95, 0.99, 0.999};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        double fp = 0.0;
        CHECK_OK(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, 0.8, targets[i], 0.0));
        CHECK(ach >= targets[i]);
        CHECK_OK(simlsh_lsh_false_positive_area(&fp, b, r, 0.8));
        CHECK(fp >= prev_fp);
        prev_fp = fp;
    }
}

static void test_exhaustive(void)
{
    check_exhaustive(128, 0.8, 0.99, 0.0);
    check_exhaustive(128, 0.5, 0.95, 0.0);
    check_exhaustive(100, 0.7, 0.999, 0.0);
    check_exhaustive(64, 0.9, 0.9, 0.1);
    check_exhaustive(48, 0.6, 0.99, 0.3);
    check_exhaustive(37, 0.95, 0.8, 0.0);
    check_exhaustive(16, 0.3, 0.99, 0.0); /* infeasible */
    check_exhaustive(1, 0.8, 0.5, 0.0);
}

static void test_errors(void)
{
    uint32_t b = 77, r = 78;
    double ach = 79.0;
    CHECK_RC(simlsh_lsh_optimal_params_recall(NULL, &r, &ach, 128, 0.8, 0.99, 0.0),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params_recall(&b, NULL, &ach, 128, 0.8, 0.99, 0.0),
             SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 0, 0.8, 0.99, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 1025, 0.8, 0.99, 0.0),
             SIMLSH_EINVAL);
    double bad_t[] = {0.0, -0.1, 1.0000001, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_t / sizeof bad_t[0]; i++)
        CHECK_RC(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, bad_t[i], 0.99, 0.0),
                 SIMLSH_EINVAL);
    double bad_recall[] = {0.0, 1.0, -0.5, 1.5, NAN};
    for (size_t i = 0; i < sizeof bad_recall / sizeof bad_recall[0]; i++)
        CHECK_RC(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, 0.8, bad_recall[i], 0.0),
                 SIMLSH_EINVAL);
    double bad_w[] = {-0.01, 1.01, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_w / sizeof bad_w[0]; i++)
        CHECK_RC(simlsh_lsh_optimal_params_recall(&b, &r, &ach, 128, 0.8, 0.99, bad_w[i]),
                 SIMLSH_EINVAL);
    /* A failed call writes nothing. */
    CHECK(b == 77 && r == 78 && ach == 79.0);
}

int main(void)
{
    test_literals();
    test_exhaustive();
    test_errors();
    return tu_finish("recall");
}
