/*
 * Statistical accuracy of both schemes on every instruction set the host
 * has (the SIMD kernels must be bit-identical to scalar, but a broken scalar
 * kernel is only visible statistically on an AVX host if scalar is run).
 * Fixed seeds; every bound comes from a variance, on both sides.
 *
 * 1. Estimates: for J in {0.1, 0.3, 0.5, 0.8, 0.95} and |A u B| = u in
 *    {10, 100, 1000, 10000}, T = 400 constructed pairs with known exact
 *    Jaccard Jx.
 *    - Mean: within 4 standard errors of Jx, the SE from the sample variance.
 *    - MSE, two-sided. Each trial gives a squared error e_t; the MSE is
 *      their mean over T independent trials, so by the central limit theorem
 *      it is normal around its expectation E[e] with standard deviation
 *      sd(e) / sqrt(T), sd(e) estimated from the e_t themselves. The test is
 *      |MSE - E[e]| <= 4.5 sd(e) / sqrt(T) (a false alarm rate of about
 *      1e-5 per case; 40 cases per ISA). For scale: classic rows are
 *      independent Bernoulli(J), so X = matches ~ Binomial(P, J), E[e] =
 *      J(1-J)/P, and from the binomial fourth central moment
 *      Var(e) = J(1-J)(1 + (2P-6)J(1-J)) / P^3, which makes the relative
 *      width sqrt(Var(e)/T)/E[e] ~ sqrt(2/T) = 0.071 for P = 128: the band
 *      is about +-32 %.
 *      E[e] for classic is J(1-J)/P at every u. For OPH with every bin
 *      occupied, each bin's minimum is a uniform draw from a disjoint part
 *      of the union, which is sampling P of u elements without replacement:
 *      E[e] = J(1-J)/P * (u-P)/(u-1) (hypergeometric). That needs u >> P so
 *      that no bin is empty (u = 1000: 128 e^(-1000/128) = 0.05 empty bins
 *      expected); for u = 10 and 100 densification copies bins and the
 *      variance has no closed form, so OPH is checked there by the mean only.
 * 2. S-curve: the fraction of pairs agreeing on all r rows of some band is
 *    within 4 binomial standard deviations of the library's own
 *    simlsh_lsh_probability(b, r, Jx) (its formula is tested in test-lsh).
 */
#include "testutil.h"

#define P 128

static simlsh_params *mk(int scheme, int isa)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_ISA, isa));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, P));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 7));
    return p;
}

/* A pair with |A u B| = u and |A n B| = c: random distinct features. */
static void make_pair(tu_rng *r, simlsh_signature *a, simlsh_signature *b, uint64_t *buf, size_t u,
                      size_t c)
{
    for (size_t i = 0; i < u; i++)
        buf[i] = tu_next(r); /* 64-bit random: collisions have probability ~u^2/2^65 */
    size_t only = u - c, a_only = only / 2;
    /* A = common + a_only; B = common + the rest */
    CHECK_OK(simlsh_signature_clear(a));
    CHECK_OK(simlsh_signature_clear(b));
    CHECK_OK(simlsh_signature_add_features(a, buf, c + a_only));
    CHECK_OK(simlsh_signature_add_features(b, buf, c));
    CHECK_OK(simlsh_signature_add_features(b, buf + c + a_only, only - a_only));
}

static const int all_isas[] = {SIMLSH_ISA_SCALAR, SIMLSH_ISA_AVX2, SIMLSH_ISA_AVX512};
static const char *const isa_names[] = {"auto", "scalar", "avx2", "avx512"};

static void test_estimates(int isa)
{
    tu_rng r = {0x5eed5eedULL};
    const double Js[] = {0.1, 0.3, 0.5, 0.8, 0.95};
    const size_t Us[] = {10, 100, 1000, 10000};
    enum {
        T = 400
    };
    static double err2[T];
    uint64_t *buf = malloc(10000 * sizeof *buf);

    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(scheme, isa);
        simlsh_signature *a, *b;
        CHECK_OK(simlsh_signature_new(&a, p));
        CHECK_OK(simlsh_signature_new(&b, p));
        for (size_t ui = 0; ui < 4; ui++)
            for (size_t ji = 0; ji < 5; ji++) {
                size_t u = Us[ui];
                size_t c = (size_t)floor(Js[ji] * (double)u + 0.5);
                if (c == u)
                    c = u - 1; /* keep J < 1 so the variance is not zero */
                double jx = (double)c / (double)u;
                double sum = 0, sum2 = 0, mse = 0;
                for (int t = 0; t < T; t++) {
                    make_pair(&r, a, b, buf, u, c);
                    double e;
                    CHECK_OK(simlsh_signature_jaccard(&e, a, b));
                    sum += e;
                    sum2 += e * e;
                    err2[t] = (e - jx) * (e - jx);
                    mse += err2[t] / T;
                }
                double mean = sum / T;
                double var = (sum2 - sum * sum / T) / (T - 1);
                double se = sqrt(var / T);
                double var_e = 0;
                for (int t = 0; t < T; t++)
                    var_e += (err2[t] - mse) * (err2[t] - mse) / (T - 1);
                double mse_se = sqrt(var_e / T);
                int oph = scheme == SIMLSH_SCHEME_OPH;
                int check_mse = !oph || u >= 1000;
                double theory = jx * (1 - jx) / P;
                if (oph)
                    theory *= check_mse ? (double)(u - P) / (double)(u - 1) : NAN;
                int ok_mean = fabs(mean - jx) <= 4 * se + 1e-12;
                int ok_mse = !check_mse || fabs(mse - theory) <= 4.5 * mse_se;
                printf(
                    "%-6s %-7s U=%-5zu J=%.3f mean=%.4f (%.1f SE) mse/theory=%.3f (%.1f SE) %s\n",
                    isa_names[isa], oph ? "oph" : "classic", u, jx, mean,
                    se > 0 ? (mean - jx) / se : 0.0, mse / theory,
                    check_mse ? (mse - theory) / mse_se : 0.0, ok_mean && ok_mse ? "ok" : "FAIL");
                CHECK(ok_mean);
                CHECK(ok_mse);
            }
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_params_free(p);
    }
    free(buf);
}

/* S-curve: banding probability of real signature pairs. */
static void test_scurve(int isa)
{
    tu_rng r = {0xb0a7ULL};
    const struct {
        uint32_t b, r;
    } br[] = {{20, 5}, {16, 8}};
    const double sJ[] = {0.3, 0.5, 0.7, 0.85};
    const int T2 = 1500;
    const size_t U = 1000;
    uint64_t *buf = malloc(U * sizeof *buf);
    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(scheme, isa);
        simlsh_signature *a, *b;
        CHECK_OK(simlsh_signature_new(&a, p));
        CHECK_OK(simlsh_signature_new(&b, p));
        for (int q = 0; q < 2; q++)
            for (int ji = 0; ji < 4; ji++) {
                size_t c = (size_t)(sJ[ji] * U);
                double jx = (double)c / U;
                int hits = 0;
                for (int t = 0; t < T2; t++) {
                    make_pair(&r, a, b, buf, U, c);
                    uint32_t va[P], vb[P];
                    size_t n;
                    CHECK_OK(simlsh_signature_values(va, P, &n, a));
                    CHECK_OK(simlsh_signature_values(vb, P, &n, b));
                    int hit = 0;
                    for (uint32_t band = 0; band < br[q].b && !hit; band++)
                        hit = memcmp(va + band * br[q].r, vb + band * br[q].r,
                                     br[q].r * sizeof *va) == 0;
                    hits += hit;
                }
                double pr = -1;
                CHECK_OK(simlsh_lsh_probability(&pr, br[q].b, br[q].r, jx));
                double obs = (double)hits / T2;
                double sd = sqrt(pr * (1 - pr) / T2);
                int ok = fabs(obs - pr) <= 4 * sd + 2.0 / T2;
                printf("%-6s %-7s b=%u r=%u J=%.2f P=%.4f observed=%.4f %s\n", isa_names[isa],
                       scheme ? "classic" : "oph", br[q].b, br[q].r, jx, pr, obs,
                       ok ? "ok" : "FAIL");
                CHECK(ok);
            }
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_params_free(p);
    }
    free(buf);
}

int main(void)
{
    for (int i = 0; i < 3; i++) {
        if (!simlsh_isa_supported(all_isas[i])) {
            printf("%s: not supported by this host\n", isa_names[all_isas[i]]);
            continue;
        }
        test_estimates(all_isas[i]);
        test_scurve(all_isas[i]);
    }
    return tu_finish("minhash-accuracy");
}
