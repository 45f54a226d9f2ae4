/* Banding math: the S-curve P(s) = 1 - (1 - s^r)^b, its thresholds and
 * error areas, the (b, r) optimiser, and the band key hash. */
#include <math.h>

#include "bandkey.h"
#include "params.h"

#define LN2 0.693147180559945309417232121458176568

/* (1 - s^r)^b through log1p so that s^r far below one ulp of 1.0 still
 * counts (1 - tiny rounds to 1, log1p(-tiny) does not). */
static double miss_prob(double b, double r, double s)
{
    double sr = pow(s, r);
    if (sr >= 1.0)
        return 0.0;
    return exp(b * log1p(-sr));
}

static double hit_prob(double b, double r, double s)
{
    double sr = pow(s, r);
    if (sr >= 1.0)
        return 1.0;
    return -expm1(b * log1p(-sr));
}

int simlsh_lsh_probability(double *out, uint32_t bands, uint32_t rows, double s)
{
    if (out == NULL || bands == 0 || rows == 0 || !(s >= 0.0 && s <= 1.0))
        return SIMLSH_EINVAL;
    *out = hit_prob(bands, rows, s);
    return 0;
}

int simlsh_lsh_threshold(double *out, uint32_t bands, uint32_t rows)
{
    if (out == NULL || bands == 0 || rows == 0)
        return SIMLSH_EINVAL;
    *out = pow(1.0 / bands, 1.0 / rows);
    return 0;
}

int simlsh_lsh_threshold_exact(double *out, uint32_t bands, uint32_t rows)
{
    if (out == NULL || bands == 0 || rows == 0)
        return SIMLSH_EINVAL;
    /* 1 - 2^(-1/b) loses every digit to cancellation for large b; expm1 keeps them. */
    *out = pow(-expm1(-LN2 / bands), 1.0 / rows);
    return 0;
}

/* ---- adaptive Gauss-Kronrod (7, 15) quadrature --------------------------- */

/* Nodes and weights as in QUADPACK's qk15. */
static const double gk_x[8] = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.000000000000000000000000000000000,
};
static const double gk_wk[8] = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714,
};
static const double gk_wg[4] = {
    0.129484966168869693270611432679082,
    0.279705391489276667901467771423780,
    0.381830050505118944950369775488975,
    0.417959183673469387755102040816327,
};

typedef double (*integrand_fn)(double b, double r, double s);

typedef struct {
    integrand_fn f;
    double b, r;
} integrand;

/* K15 estimate of the integral over [a, c]; *err = |K15 - G7|. */
static double gk15(const integrand *in, double a, double c, double *err)
{
    double mid = 0.5 * (a + c), half = 0.5 * (c - a);
    double fc = in->f(in->b, in->r, mid);
    double k = fc * gk_wk[7], g = fc * gk_wg[3];
    for (int j = 0; j < 7; j++) {
        double dx = half * gk_x[j];
        double f1 = in->f(in->b, in->r, mid - dx), f2 = in->f(in->b, in->r, mid + dx);
        k += gk_wk[j] * (f1 + f2);
        if (j & 1)
            g += gk_wg[j / 2] * (f1 + f2);
    }
    *err = fabs((k - g) * half);
    return k * half;
}

/* The integrands are polynomials of degree b*r (up to 1024) whose whole
 * rise can sit in a sliver of [0, 1]; bisection puts the nodes there. The
 * G7/K15 difference overestimates K15's error by orders of magnitude for
 * smooth functions, so accepting on it gives far better than tol. */
static double integrate(const integrand *in, double a, double c, double tol, int depth)
{
    double err;
    double whole = gk15(in, a, c, &err);
    if (err <= tol || depth >= 40)
        return whole;
    double mid = 0.5 * (a + c);
    return integrate(in, a, mid, 0.5 * tol, depth + 1) +
           integrate(in, mid, c, 0.5 * tol, depth + 1);
}

#define AREA_TOL 1e-13

static double fp_area(double b, double r, double t)
{
    integrand in = {hit_prob, b, r};
    return t > 0.0 ? integrate(&in, 0.0, t, AREA_TOL, 0) : 0.0;
}

static double fn_area(double b, double r, double t)
{
    integrand in = {miss_prob, b, r};
    return t < 1.0 ? integrate(&in, t, 1.0, AREA_TOL, 0) : 0.0;
}

int simlsh_lsh_false_positive_area(double *out, uint32_t bands, uint32_t rows, double t)
{
    if (out == NULL || bands == 0 || rows == 0 || !(t >= 0.0 && t <= 1.0))
        return SIMLSH_EINVAL;
    *out = fp_area(bands, rows, t);
    return 0;
}

int simlsh_lsh_false_negative_area(double *out, uint32_t bands, uint32_t rows, double t)
{
    if (out == NULL || bands == 0 || rows == 0 || !(t >= 0.0 && t <= 1.0))
        return SIMLSH_EINVAL;
    *out = fn_area(bands, rows, t);
    return 0;
}

/* Objectives closer than this are ties: it is well above the quadrature
 * error, so the tie-break, not rounding noise, decides between them. */
#define TIE_EPS 1e-12

int simlsh_lsh_optimal_params(uint32_t *bands, uint32_t *rows, uint32_t *unused, uint32_t num_perm,
                              double t, double w_fp, double w_fn)
{
    if (bands == NULL || rows == NULL || num_perm == 0 || num_perm > SIMLSH__MAX_PERM)
        return SIMLSH_EINVAL;
    if (!(t > 0.0 && t <= 1.0) || !(w_fp >= 0.0) || isinf(w_fp) || !(w_fn >= 0.0) || isinf(w_fn) ||
        (w_fp == 0.0 && w_fn == 0.0))
        return SIMLSH_EINVAL;

    /* Exhaustive: at most ~7,000 (b, r) pairs for num_perm = 1024, and the
     * objective is not unimodal in b for fixed r in general. */
    double best = HUGE_VAL;
    uint32_t best_b = 0, best_r = 0, best_unused = 0;
    for (uint32_t r = 1; r <= num_perm; r++) {
        for (uint32_t b = 1; b <= num_perm / r; b++) {
            double obj = 0.0;
            if (w_fp > 0.0)
                obj += w_fp * fp_area(b, r, t);
            if (w_fn > 0.0)
                obj += w_fn * fn_area(b, r, t);
            uint32_t un = num_perm - b * r;
            /* Ties prefer fewer unused rows (the signature is paid for),
             * then fewer bands (less memory and faster queries). */
            int better =
                best_b == 0 || obj < best - TIE_EPS ||
                (obj <= best + TIE_EPS && (un < best_unused || (un == best_unused && b < best_b)));
            if (better) {
                if (obj < best || best_b == 0)
                    best = obj;
                best_b = b;
                best_r = r;
                best_unused = un;
            }
        }
    }
    *bands = best_b;
    *rows = best_r;
    if (unused != NULL)
        *unused = best_unused;
    return 0;
}

/* ---- band keys (docs/format-index.md, "Band key") ----------------------- */

uint64_t simlsh__band_key(const uint32_t *values, uint32_t rows, uint32_t band, uint32_t seed)
{
    return simlsh__band_key_inline(values, rows, band, seed);
}

/* ---- banding that targets recall ---------------------------------------- */

/* The constrained quantity: P(t) itself, or the mean of P over [t, hi]. */
static double recall_of(double b, double r, double t, double hi)
{
    if (!(hi > t))
        return hit_prob(b, r, t);
    integrand in = {hit_prob, b, r};
    return integrate(&in, t, hi, AREA_TOL, 0) / (hi - t);
}

int simlsh_lsh_optimal_params_recall(uint32_t *bands, uint32_t *rows, double *achieved,
                                     uint32_t num_perm, double t, double recall, double width)
{
    if (bands == NULL || rows == NULL || num_perm == 0 || num_perm > SIMLSH__MAX_PERM)
        return SIMLSH_EINVAL;
    if (!(t > 0.0 && t <= 1.0) || !(recall > 0.0 && recall < 1.0) ||
        !(width >= 0.0 && width <= 1.0))
        return SIMLSH_EINVAL;
    double hi = t + width < 1.0 ? t + width : 1.0;

    /* For a fixed r, P(s) rises with b at every s > 0, so both the
     * constrained quantity and the false-positive area rise with b: the
     * smallest b that meets the target is the only candidate of its r
     * (larger ones are ties at best when the areas are within TIE_EPS,
     * which the loop still visits). */
    double best = HUGE_VAL;
    uint32_t best_b = 0, best_r = 0, best_unused = 0;
    /* When no banding meets the target: the one that comes closest. */
    double top = -1.0;
    uint32_t top_b = 0, top_r = 0;
    for (uint32_t r = 1; r <= num_perm; r++) {
        uint32_t bmax = num_perm / r;
        /* Binary search for the smallest feasible b (monotone in b). */
        uint32_t lo = 1, up = bmax + 1;
        while (lo < up) {
            uint32_t mid = lo + (up - lo) / 2;
            if (recall_of(mid, r, t, hi) >= recall)
                up = mid;
            else
                lo = mid + 1;
        }
        if (lo > bmax) {
            double q = recall_of(bmax, r, t, hi);
            if (q > top) {
                top = q;
                top_b = bmax;
                top_r = r;
            }
            continue;
        }
        for (uint32_t b = lo; b <= bmax; b++) {
            double obj = fp_area(b, r, t);
            if (obj > best + TIE_EPS)
                break;
            uint32_t un = num_perm - b * r;
            /* Ties as in simlsh_lsh_optimal_params(). */
            int better = best_b == 0 || obj < best - TIE_EPS || un < best_unused ||
                         (un == best_unused && b < best_b);
            if (better) {
                if (obj < best || best_b == 0)
                    best = obj;
                best_b = b;
                best_r = r;
                best_unused = un;
            }
        }
    }
    if (best_b == 0) {
        best_b = top_b;
        best_r = top_r;
    }
    *bands = best_b;
    *rows = best_r;
    if (achieved != NULL)
        *achieved = recall_of(best_b, best_r, t, hi);
    return 0;
}
