/*
 * Statistical accuracy of both schemes, fixed seeds, bounds from the variance.
 *
 * 1. Estimates: for J in {0.1, 0.3, 0.5, 0.8, 0.95} and |A u B| in
 *    {10, 100, 1000, 10000}, T constructed pairs with known exact Jaccard Jx:
 *    the mean estimate is within 4 standard errors of Jx (SE from the sample
 *    variance), and the MSE is within 1.3x of Jx(1-Jx)/P for classic (both
 *    sides), and <= 1.6x for OPH when the union has >= 200 elements.
 *    The sample MSE has relative standard deviation about sqrt(2/T); with
 *    T = 400 that is 0.071, so 1.3x is more than 4 of them away.
 * 2. S-curve: the fraction of pairs agreeing on all r rows of some band
 *    matches 1-(1-J^r)^b within 4 binomial standard deviations.
 */
#include "testutil.h"

#define P 128

static simlsh_params *mk(int scheme)
{
    simlsh_params *p;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SCHEME, scheme));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, P));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 7));
    return p;
}

/* A pair with |A u B| = u and |A n B| = c: random distinct features. */
static void make_pair(tu_rng *r, simlsh_signature *a, simlsh_signature *b, uint64_t *buf,
                      size_t u, size_t c)
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

int main(void)
{
    tu_rng r = {0x5eed5eedULL};
    const double Js[] = {0.1, 0.3, 0.5, 0.8, 0.95};
    const size_t Us[] = {10, 100, 1000, 10000};
    const int T = 400;
    uint64_t *buf = malloc(10000 * sizeof *buf);

    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(scheme);
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
                double sum = 0, sum2 = 0, se2 = 0;
                for (int t = 0; t < T; t++) {
                    make_pair(&r, a, b, buf, u, c);
                    double e;
                    CHECK_OK(simlsh_signature_jaccard(&e, a, b));
                    sum += e;
                    sum2 += e * e;
                    se2 += (e - jx) * (e - jx);
                }
                double mean = sum / T;
                double var = (sum2 - sum * sum / T) / (T - 1);
                double se = sqrt(var / T);
                double mse = se2 / T, theory = jx * (1 - jx) / P;
                int ok_mean = fabs(mean - jx) <= 4 * se + 1e-12;
                int ok_mse = scheme == SIMLSH_SCHEME_CLASSIC
                                 ? (mse <= 1.3 * theory && mse >= theory / 1.3)
                                 : (u < 200 || mse <= 1.6 * theory);
                printf("%-7s U=%-5zu J=%.3f mean=%.4f (%.1f SE) mse/theory=%.3f %s\n",
                       scheme ? "classic" : "oph", u, jx, mean, se > 0 ? (mean - jx) / se : 0.0,
                       mse / theory, ok_mean && ok_mse ? "ok" : "FAIL");
                CHECK(ok_mean);
                CHECK(ok_mse);
            }
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_params_free(p);
    }

    /* S-curve: banding probability of real signature pairs. */
    const struct { uint32_t b, r; } br[] = {{20, 5}, {16, 8}};
    const double sJ[] = {0.3, 0.5, 0.7, 0.85};
    const int T2 = 1500;
    const size_t U = 1000;
    for (int scheme = 0; scheme <= 1; scheme++) {
        simlsh_params *p = mk(scheme);
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
                double pr = 1 - pow(1 - pow(jx, br[q].r), br[q].b);
                double obs = (double)hits / T2;
                double sd = sqrt(pr * (1 - pr) / T2);
                int ok = fabs(obs - pr) <= 4 * sd + 2.0 / T2;
                printf("%-7s b=%u r=%u J=%.2f P=%.4f observed=%.4f %s\n", scheme ? "classic" : "oph",
                       br[q].b, br[q].r, jx, pr, obs, ok ? "ok" : "FAIL");
                CHECK(ok);
            }
        simlsh_signature_free(a);
        simlsh_signature_free(b);
        simlsh_params_free(p);
    }
    free(buf);
    return tu_finish("minhash-accuracy");
}
