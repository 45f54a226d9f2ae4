/* Banding math and band keys, checked against independent computations:
 * binomial expansions, fine composite Simpson rules, an exhaustive search,
 * a second implementation of the band key written from the format doc, and
 * literal values computed with exact rational arithmetic in Python
 * (fractions.Fraction). */
#include "bandkey.h"
#include "testutil.h"

/* ---- independent references --------------------------------------------- */

/* P(s) by the binomial expansion sum_{k=1..b} C(b,k) (-1)^(k+1) s^(rk), in
 * long double: fine for small b, a different formula from the library's. */
static long double ref_p_binomial(unsigned b, unsigned r, long double s)
{
    long double sum = 0, c = 1; /* c = C(b, k) */
    long double sr = powl(s, (long double)r), term = 1;
    for (unsigned k = 1; k <= b; k++) {
        c = c * (b - k + 1) / k;
        term *= sr;
        sum += ((k & 1) ? 1 : -1) * c * term;
    }
    return sum;
}

/* Integral of P over [lo, hi] by the binomial expansion. */
static long double ref_area_binomial(unsigned b, unsigned r, long double lo, long double hi)
{
    long double sum = 0, c = 1;
    for (unsigned k = 1; k <= b; k++) {
        c = c * (b - k + 1) / k;
        long double e = (long double)r * k + 1;
        sum += ((k & 1) ? 1 : -1) * c * (powl(hi, e) - powl(lo, e)) / e;
    }
    return sum;
}

static double ipow(double x, unsigned n)
{
    double y = 1;
    while (n) {
        if (n & 1)
            y *= x;
        x *= x;
        n >>= 1;
    }
    return y;
}

/* (1 - s^r)^b by repeated squaring (no pow, log1p or expm1). */
static double ref_miss_naive(unsigned b, unsigned r, double s)
{
    return ipow(1 - ipow(s, r), b);
}

/* Composite Simpson on [lo, hi] with n (even) intervals, of P (want_hit) or
 * of 1 - P. */
static double ref_simpson(unsigned b, unsigned r, double lo, double hi, int want_hit, unsigned n)
{
    if (hi <= lo)
        return 0;
    double h = (hi - lo) / n, sum = 0;
    for (unsigned i = 0; i <= n; i++) {
        double s = lo + h * i;
        double m = ref_miss_naive(b, r, s);
        double f = want_hit ? 1 - m : m;
        double w = (i == 0 || i == n) ? 1 : (i & 1) ? 4 : 2;
        sum += w * f;
    }
    return sum * h / 3;
}

/* ---- P(s), thresholds ---------------------------------------------------- */

static void test_probability(void)
{
    /* b = 20, r = 5 at s = 0.2 .. 0.8: exact rationals from Python. */
    static const double lit[7] = {
        0.0063805813047684741, 0.047494259124970323, 0.1860495521491437,  0.47005071531687653,
        0.8019024538382219,    0.9747805441880405,   0.99964394210947927,
    };
    for (int i = 0; i < 7; i++) {
        double s = (i + 2) / 10.0, p;
        CHECK_OK(simlsh_lsh_probability(&p, 20, 5, s));
        CHECK_NEAR(p, lit[i], 1e-15);
        CHECK_NEAR(p, (double)ref_p_binomial(20, 5, s), 1e-13);
        CHECK_NEAR(p, 1 - ref_miss_naive(20, 5, s), 1e-14);
    }
    double p;
    CHECK_OK(simlsh_lsh_probability(&p, 20, 5, 0.0));
    CHECK(p == 0.0);
    CHECK_OK(simlsh_lsh_probability(&p, 20, 5, 1.0));
    CHECK(p == 1.0);
    CHECK_OK(simlsh_lsh_probability(&p, 1, 1, 0.37));
    CHECK_NEAR(p, 0.37, 1e-16);
    /* Stability: s^r far below one ulp of 1 still gives b * s^r. */
    CHECK_OK(simlsh_lsh_probability(&p, 1000, 1, 1e-20));
    CHECK_NEAR(p / 1e-17, 1.0, 1e-9);
    CHECK_OK(simlsh_lsh_probability(&p, 4, 2, 1e-9));
    CHECK_NEAR(p / 4e-18, 1.0, 1e-9);
    /* Monotone in s. */
    double prev = -1;
    for (int i = 0; i <= 1000; i++) {
        CHECK_OK(simlsh_lsh_probability(&p, 16, 8, i / 1000.0));
        CHECK(p >= prev);
        prev = p;
    }
    /* Large b*r stays in [0, 1]. */
    CHECK_OK(simlsh_lsh_probability(&p, 1024, 1024, 0.999));
    CHECK(p >= 0 && p <= 1);
    CHECK_OK(simlsh_lsh_probability(&p, UINT32_MAX, UINT32_MAX, 0.5));
    CHECK(p >= 0 && p <= 1);

    CHECK_RC(simlsh_lsh_probability(NULL, 20, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 0, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 20, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 20, 5, -0.01), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 20, 5, 1.01), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 20, 5, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_probability(&p, 20, 5, INFINITY), SIMLSH_EINVAL);
}

static void test_thresholds(void)
{
    double t;
    CHECK_OK(simlsh_lsh_threshold(&t, 20, 5));
    CHECK_NEAR(t, 0.5492802716530588, 1e-15); /* (1/20)^(1/5) */
    CHECK_OK(simlsh_lsh_threshold(&t, 1, 7));
    CHECK(t == 1.0);
    CHECK_OK(simlsh_lsh_threshold(&t, 16, 8));
    CHECK_NEAR(pow(t, 8) * 16, 1.0, 1e-14);

    /* The exact threshold is where P = 1/2, for small and huge b. */
    static const uint32_t br[][2] = {{1, 1},   {20, 5},   {16, 8},   {9, 13},    {1, 128},
                                     {128, 1}, {1024, 1}, {1, 1024}, {100000, 3}};
    for (size_t i = 0; i < sizeof br / sizeof br[0]; i++) {
        double x, p;
        CHECK_OK(simlsh_lsh_threshold_exact(&x, br[i][0], br[i][1]));
        CHECK(x > 0 && x < 1);
        CHECK_OK(simlsh_lsh_probability(&p, br[i][0], br[i][1], x));
        CHECK_NEAR(p, 0.5, 1e-12);
        /* Independent: bisection on the naive formula. */
        double lo = 0, hi = 1;
        for (int it = 0; it < 200; it++) {
            double mid = 0.5 * (lo + hi);
            double q = 1 - (double)powl(1 - powl(mid, br[i][1]), br[i][0]);
            if (q < 0.5)
                lo = mid;
            else
                hi = mid;
        }
        CHECK_NEAR(x, 0.5 * (lo + hi), 1e-9);
    }
    CHECK_OK(simlsh_lsh_threshold_exact(&t, 20, 5));
    CHECK_NEAR(t, 0.5086959618338943, 1e-15); /* (1 - 2^(-1/20))^(1/5) */

    CHECK_RC(simlsh_lsh_threshold(NULL, 20, 5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_threshold(&t, 0, 5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_threshold(&t, 20, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_threshold_exact(NULL, 20, 5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_threshold_exact(&t, 0, 5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_threshold_exact(&t, 20, 0), SIMLSH_EINVAL);
}

/* ---- areas --------------------------------------------------------------- */

static void test_areas(void)
{
    /* Exact rationals from Python (binomial expansion in fractions). */
    static const struct {
        uint32_t b, r;
        double t, fp, fn;
    } lit[] = {
        {20, 5, 0.5, 0.044634893484525713, 0.045984727820050281},
        {20, 5, 0.8, 0.29865537081260463, 5.20514812917086e-06},
        {9, 13, 0.8, 0.025311863203366359, 0.033282136012204123},
        {16, 8, 0.8, 0.13825356774161465, 0.0012839262767589705},
        {1, 1, 0.5, 0.125, 0.125},
        {32, 4, 0.3, 0.014525443174695946, 0.093778831613247043},
    };
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) {
        double fp, fn;
        CHECK_OK(simlsh_lsh_false_positive_area(&fp, lit[i].b, lit[i].r, lit[i].t));
        CHECK_OK(simlsh_lsh_false_negative_area(&fn, lit[i].b, lit[i].r, lit[i].t));
        CHECK_NEAR(fp, lit[i].fp, 1e-12);
        CHECK_NEAR(fn, lit[i].fn, 1e-12);
    }

    /* Small b: binomial expansion, over a grid of t. */
    for (uint32_t b = 1; b <= 12; b += 1) {
        for (uint32_t r = 1; r <= 9; r += 2) {
            for (int ti = 0; ti <= 10; ti++) {
                double t = ti / 10.0, fp, fn;
                CHECK_OK(simlsh_lsh_false_positive_area(&fp, b, r, t));
                CHECK_OK(simlsh_lsh_false_negative_area(&fn, b, r, t));
                CHECK_NEAR(fp, (double)ref_area_binomial(b, r, 0, t), 1e-11);
                /* integral of 1 - P over [t, 1] = (1 - t) - integral of P. */
                CHECK_NEAR(fn, (double)((1 - (long double)t) - ref_area_binomial(b, r, t, 1)),
                           1e-11);
            }
        }
    }

    /* Large b*r, where the expansion cancels catastrophically: a fine
     * Simpson rule on the naive formula. */
    static const uint32_t big[][2] = {{16, 8}, {64, 16}, {1024, 1}, {1, 1024}, {32, 32}};
    static const double ts[] = {0.1, 0.5, 0.8, 0.95};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++) {
            double fp, fn;
            uint32_t b = big[i][0], r = big[i][1];
            CHECK_OK(simlsh_lsh_false_positive_area(&fp, b, r, ts[j]));
            CHECK_OK(simlsh_lsh_false_negative_area(&fn, b, r, ts[j]));
            CHECK_NEAR(fp, ref_simpson(b, r, 0, ts[j], 1, 200000), 1e-10);
            CHECK_NEAR(fn, ref_simpson(b, r, ts[j], 1, 0, 200000), 1e-10);
        }
    }

    /* Identities: FP(1) + FN(0) = 1; FP(0) = FN(1) = 0. */
    double a, c;
    CHECK_OK(simlsh_lsh_false_positive_area(&a, 9, 13, 1.0));
    CHECK_OK(simlsh_lsh_false_negative_area(&c, 9, 13, 0.0));
    CHECK_NEAR(a + c, 1.0, 1e-13);
    CHECK_OK(simlsh_lsh_false_positive_area(&a, 9, 13, 0.0));
    CHECK(a == 0.0);
    CHECK_OK(simlsh_lsh_false_negative_area(&a, 9, 13, 1.0));
    CHECK(a == 0.0);

    double x;
    CHECK_RC(simlsh_lsh_false_positive_area(NULL, 20, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_positive_area(&x, 0, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_positive_area(&x, 20, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_positive_area(&x, 20, 5, -0.1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_positive_area(&x, 20, 5, 1.1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_positive_area(&x, 20, 5, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(NULL, 20, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(&x, 0, 5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(&x, 20, 0, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(&x, 20, 5, -0.1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(&x, 20, 5, 1.1), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_false_negative_area(&x, 20, 5, NAN), SIMLSH_EINVAL);
}

/* ---- optimiser ------------------------------------------------------------ */

/* Exhaustive search with Simpson areas; compares the objective the library
 * reached with the true minimum, and the argument whenever the runner-up is
 * clearly worse (closer than that, either answer is right). */
static void check_optimum(uint32_t n, double t, double wfp, double wfn)
{
    uint32_t b, r, un;
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, n, t, wfp, wfn));
    CHECK(b >= 1 && r >= 1 && (uint64_t)b * r <= n);
    CHECK(un == n - b * r);

    double best = HUGE_VAL, second = HUGE_VAL, got = HUGE_VAL;
    uint32_t bb = 0, br = 0;
    unsigned steps = n <= 32 ? 4096 : 2048;
    for (uint32_t rr = 1; rr <= n; rr++) {
        for (uint32_t bnd = 1; bnd <= n / rr; bnd++) {
            double obj = wfp * ref_simpson(bnd, rr, 0, t, 1, steps) +
                         wfn * ref_simpson(bnd, rr, t, 1, 0, steps);
            if (bnd == b && rr == r)
                got = obj;
            if (obj < best) {
                second = best;
                best = obj;
                bb = bnd;
                br = rr;
            } else if (obj < second) {
                second = obj;
            }
        }
    }
    CHECK_NEAR(got, best, 1e-8);
    if (second - best > 1e-7) {
        CHECK(b == bb);
        CHECK(r == br);
        if (b != bb || r != br)
            fprintf(stderr, "  n=%u t=%g w=%g/%g: got (%u,%u), exhaustive (%u,%u)\n", n, t, wfp,
                    wfn, b, r, bb, br);
    }
}

static void test_optimal(void)
{
    uint32_t b, r, un;
    /* The well-known answer for 128 permutations at 0.8 (exact rationals
     * in Python agree): 9 bands of 13 rows, 11 rows unused. */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, 0.5, 0.5));
    CHECK(b == 9 && r == 13 && un == 11);
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 64, 0.5, 0.5, 0.5));
    CHECK(b == 14 && r == 4 && un == 8);
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, NULL, 128, 0.8, 0.5, 0.5));
    CHECK(b == 9 && r == 13);

    /* Only false negatives matter: as many single-row bands as possible
     * (t low enough that the areas stay far above the tie tolerance). */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 10, 0.1, 0.0, 1.0));
    CHECK(b == 10 && r == 1 && un == 0);
    /* Only false positives matter: one band of every row. */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 10, 0.9, 1.0, 0.0));
    CHECK(b == 1 && r == 10 && un == 0);
    /* Objectives closer than 1e-12 are ties, settled by fewer unused rows. */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 100, 0.7, 0.0, 1.0));
    CHECK(un == 0);
    /* Everything ties (t = 1 has no false negatives, FP weight 0): fewest
     * unused rows, then fewest bands. */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 12, 1.0, 0.0, 1.0));
    CHECK(b == 1 && r == 12 && un == 0);
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 1, 0.5, 0.5, 0.5));
    CHECK(b == 1 && r == 1 && un == 0);

    /* Deterministic. */
    uint32_t b2, r2, un2;
    CHECK_OK(simlsh_lsh_optimal_params(&b2, &r2, &un2, 128, 0.8, 0.5, 0.5));
    CHECK(b2 == 9 && r2 == 13 && un2 == 11);

    check_optimum(16, 0.5, 0.5, 0.5);
    check_optimum(24, 0.9, 0.5, 0.5);
    check_optimum(32, 0.7, 0.3, 0.7);
    check_optimum(48, 0.6, 0.9, 0.1);
    check_optimum(64, 0.8, 0.5, 0.5);
    check_optimum(128, 0.8, 0.5, 0.5);
    check_optimum(128, 0.5, 2.0, 1.0);

    /* The largest num_perm must stay fast enough for index creation. */
    CHECK_OK(simlsh_lsh_optimal_params(&b, &r, &un, 1024, 0.8, 0.5, 0.5));
    CHECK((uint64_t)b * r + un == 1024);

    CHECK_RC(simlsh_lsh_optimal_params(NULL, &r, &un, 128, 0.8, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, NULL, &un, 128, 0.8, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 0, 0.8, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 1025, 0.8, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.0, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, -0.5, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 1.01, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, NAN, 0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, -0.5, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, 0.5, -0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, 0.0, 0.0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, NAN, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, 0.5, NAN), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, INFINITY, 0.5), SIMLSH_EINVAL);
    CHECK_RC(simlsh_lsh_optimal_params(&b, &r, &un, 128, 0.8, 0.5, INFINITY), SIMLSH_EINVAL);
}

/* ---- band keys -------------------------------------------------------------- */

/* A second implementation, written from docs/format-index.md. */
static uint64_t spec_fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static uint64_t spec_band_key(const uint32_t *v, uint32_t rows, uint32_t band, uint32_t seed)
{
    uint64_t h = ((((uint64_t)seed) << 32) | band) * 0x9E3779B97F4A7C15ULL;
    h ^= rows;
    for (uint32_t j = 0; j < (rows + 1) / 2; j++) {
        uint64_t lo = v[2 * j];
        uint64_t hi = 2 * j + 1 < rows ? v[2 * j + 1] : 0;
        uint64_t w = lo | (hi << 32);
        h ^= w * 0xC2B2AE3D27D4EB4FULL;
        h = (h << 31) | (h >> 33);
        h *= 0x165667B19E3779F9ULL;
    }
    return spec_fmix64(h);
}

static void test_band_key_function(void)
{
    /* Golden values from a Python implementation of the spec. */
    static const uint32_t v8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const uint32_t v3[3] = {0xdeadbeefu, 0x12345678u, 0xffffffffu};
    static const uint32_t v0[1] = {0};
    uint32_t vff[13];
    for (int i = 0; i < 13; i++)
        vff[i] = 0xffffffffu;
    CHECK(simlsh__band_key(v8, 8, 0, 0) == 0xf5ba72e5620ac2bfULL);
    CHECK(simlsh__band_key(v8, 8, 3, 0) == 0xe3e7e5ccefacd624ULL);
    CHECK(simlsh__band_key(v3, 3, 7, 42) == 0xd3e8a65c63ef0913ULL);
    CHECK(simlsh__band_key(v0, 1, 0, 0) == 0x73727a35b4da55e9ULL);
    CHECK(simlsh__band_key(vff, 13, 1023, 0xffffffffu) == 0x1720a4a1663f8069ULL);

    tu_rng rng = {12345};
    uint32_t v[64], w[64];
    for (int trial = 0; trial < 2000; trial++) {
        uint32_t rows = 1 + (uint32_t)tu_below(&rng, 64);
        uint32_t band = (uint32_t)tu_below(&rng, 1024);
        uint32_t seed = (uint32_t)tu_next(&rng);
        for (uint32_t i = 0; i < rows; i++)
            v[i] = (uint32_t)tu_next(&rng);
        uint64_t k = simlsh__band_key(v, rows, band, seed);
        CHECK(k == spec_band_key(v, rows, band, seed));
        CHECK(k == simlsh__band_key(v, rows, band, seed)); /* deterministic */
        /* Different band, seed or row count: different key. */
        CHECK(k != simlsh__band_key(v, rows, band + 1, seed));
        CHECK(k != simlsh__band_key(v, rows, band, seed + 1));
        if (rows > 1)
            CHECK(k != simlsh__band_key(v, rows - 1, band, seed));
        /* Any one value changed: different key (each step is a bijection). */
        memcpy(w, v, sizeof v);
        uint32_t at = (uint32_t)tu_below(&rng, rows);
        w[at] ^= 1u << tu_below(&rng, 32);
        CHECK(k != simlsh__band_key(w, rows, band, seed));
    }

    /* The high 32 bits (the index's fingerprint) are spread evenly: 2^16
     * sequential bands into 256 bins by the top byte. */
    unsigned bins[256] = {0};
    for (uint32_t i = 0; i < 65536; i++) {
        uint32_t one[2] = {i, 0};
        bins[simlsh__band_key(one, 2, 0, 0) >> 56]++;
    }
    double chi = 0;
    for (int i = 0; i < 256; i++)
        chi += (bins[i] - 256.0) * (bins[i] - 256.0) / 256.0;
    CHECK(chi < 350); /* 255 dof: p < 1e-4 above 350 */
}

static void test_signature_band_keys(void)
{
    simlsh_params *p = NULL;
    CHECK_OK(simlsh_params_new(&p, NULL));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_NUM_PERM, 64));
    CHECK_OK(simlsh_params_set_int(p, SIMLSH_PARAM_SEED, 77));
    simlsh_signature *a = NULL, *b = NULL, *e = NULL;
    CHECK_OK(simlsh_signature_new(&a, p));
    CHECK_OK(simlsh_signature_new(&b, p));
    CHECK_OK(simlsh_signature_new(&e, p));
    static const char text[] = "the quick brown fox jumps over the lazy dog, again and again";
    CHECK_OK(simlsh_signature_add_text(a, text, sizeof text - 1));
    CHECK_OK(simlsh_signature_add_text(b, text, sizeof text - 1));

    uint64_t ka[16], kb[16];
    uint32_t v[64];
    size_t n;
    CHECK_OK(simlsh_signature_values(v, 64, &n, a));
    CHECK_OK(simlsh_signature_band_keys(ka, 16, a, 16, 4));
    CHECK_OK(simlsh_signature_band_keys(kb, 16, b, 16, 4));
    for (uint32_t i = 0; i < 16; i++) {
        /* Equal rows give equal keys; the key is the documented function
         * of the band's values, the band number and the contract's seed. */
        CHECK(ka[i] == kb[i]);
        CHECK(ka[i] == spec_band_key(v + 4 * i, 4, i, 77));
        for (uint32_t j = 0; j < i; j++)
            CHECK(ka[i] != ka[j]); /* differ by band */
    }
    /* Fewer bands or rows than num_perm allows: a prefix of the values. */
    CHECK_OK(simlsh_signature_band_keys(kb, 16, a, 3, 5));
    CHECK(kb[2] == spec_band_key(v + 10, 5, 2, 77));
    /* Deterministic. */
    CHECK_OK(simlsh_signature_band_keys(kb, 16, a, 16, 4));
    CHECK(memcmp(ka, kb, sizeof ka) == 0);
    /* A different text gives different keys in (almost) every band. */
    CHECK_OK(simlsh_signature_clear(b));
    CHECK_OK(simlsh_signature_add_text(b, "something else entirely", 23));
    CHECK_OK(simlsh_signature_band_keys(kb, 16, b, 16, 4));
    int same = 0;
    for (int i = 0; i < 16; i++)
        same += ka[i] == kb[i];
    CHECK(same <= 1);

    CHECK_RC(simlsh_signature_band_keys(NULL, 16, a, 16, 4), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(ka, 16, NULL, 16, 4), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(ka, 16, a, 0, 4), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(ka, 16, a, 16, 0), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(ka, 16, a, 16, 5), SIMLSH_EINVAL); /* 80 > 64 */
    CHECK_RC(simlsh_signature_band_keys(ka, 16, a, 0x80000000u, 2), SIMLSH_EINVAL);
    CHECK_RC(simlsh_signature_band_keys(ka, 15, a, 16, 4), SIMLSH_EBUFSIZE);
    CHECK_RC(simlsh_signature_band_keys(ka, 16, e, 16, 4), SIMLSH_EEMPTY);
    CHECK_OK(simlsh_signature_begin(a));
    CHECK_RC(simlsh_signature_band_keys(ka, 16, a, 16, 4), SIMLSH_ESTATE);
    CHECK_OK(simlsh_signature_abort(a));
    CHECK_OK(simlsh_signature_band_keys(kb, 16, a, 16, 4)); /* abort restored it */
    CHECK(memcmp(ka, kb, sizeof ka) == 0);

    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_signature_free(e);
    simlsh_params_free(p);
}

int main(void)
{
    test_probability();
    test_thresholds();
    test_areas();
    test_optimal();
    test_band_key_function();
    test_signature_band_keys();
    return tu_finish("lsh");
}
