/* ocean_math.h: the C library's math functions that the Ocean envs and puffernet.h call and whose last
 * bit differs between C libraries (glibc's x86-64 code against the musl that emscripten builds into
 * WebAssembly: erff, sinf, cosf, tanhf and exp; expf, logf, sqrtf, fabsf and ceil agree), written out
 * in plain double arithmetic. ocean.h includes it, so the training build, the native build and the
 * browser build of an env compute the same bits: a seed and a policy's actions give one game wherever
 * it runs (tests/test_web.py plays every env in all three).
 *
 * The macros at the end send every later call of those names here. Every operation is a basic IEEE-754
 * one (+ - * /, comparisons, ldexp, floor), which every target rounds the same way; the builds pass
 * -ffp-contract=off so that no compiler fuses a multiply and an add on one side only. The double results
 * are within 1e-15 of the true value, so the float results are the correctly rounded ones except where
 * the true value lies that close to a rounding boundary (tests/test_ocean_math.py checks a large sample).
 */
#ifndef OCEAN_MATH_H
#define OCEAN_MATH_H

#include <math.h>

/* e^x in double: x = k ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to the 14th power (the next
 * term is below 1e-19), summed in Horner's form, scaled by 2^k exactly. */
static double ocean_exp(double x) {
    if (x != x) return x;
    if (x > 709.78) return HUGE_VAL;
    if (x < -745.2) return 0.0;
    static const double inv_factorial[] = {5.00000000000000000e-01, 1.66666666666666657e-01, 4.16666666666666644e-02,
                                           8.33333333333333322e-03, 1.38888888888888894e-03, 1.98412698412698413e-04,
                                           2.48015873015873016e-05, 2.75573192239858925e-06, 2.75573192239858883e-07,
                                           2.50521083854417202e-08, 2.08767569878681002e-09, 1.60590438368216133e-10,
                                           1.14707455977297245e-11}; /* 1/2! .. 1/14! */
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double k = floor(x * 1.44269504088896338700 + 0.5);
    double r = (x - k * ln2_hi) - k * ln2_lo;
    double sum = inv_factorial[12];
    for (int n = 11; n >= 0; n--) sum = sum * r + inv_factorial[n];
    sum = 1.0 + r * (1.0 + r * sum);
    return ldexp(sum, (int)k);
}

/* erf of a float, in double: its Taylor series below 2.5 (the largest term is about 16, so the sum keeps
 * more than 12 digits), a continued fraction for erfc above, and +-1 from 4 on, where erfc is below half
 * a float ulp of 1. */
static float ocean_erff(float xf) {
    double x = xf, a = fabs(x);
    if (xf != xf) return xf;
    if (a >= 4.0) return x > 0 ? 1.0f : -1.0f;
    double result;
    if (a < 2.5) {
        double x2 = a * a, term = a, sum = a;
        for (int n = 1; n < 60; n++) {
            term *= -x2 / n;
            double add = term / (2 * n + 1);
            sum += add;
            if (fabs(add) < 1e-17 * fabs(sum)) break;
        }
        result = sum * 1.12837916709551257390; /* 2 / sqrt(pi) */
    } else {
        /* erfc(a) = exp(-a^2) / sqrt(pi) * 1 / (a + 1/2 / (a + 1 / (a + 3/2 / (a + 2 / (a + ...))))) */
        double tail = a;
        for (int n = 60; n >= 1; n--) tail = a + (n * 0.5) / tail;
        result = 1.0 - ocean_exp(-a * a) * 0.56418958354775628695 / tail; /* 1 / sqrt(pi) */
    }
    return (float)(x < 0 ? -result : result);
}

static float ocean_tanhf(float xf) {
    double x = xf, a = fabs(x);
    if (xf != xf) return xf;
    if (a > 20.0) return x > 0 ? 1.0f : -1.0f;
    double e = ocean_exp(-2.0 * a);
    double t = (1.0 - e) / (1.0 + e);
    return (float)(x < 0 ? -t : t);
}

/* sin and cos of a float: the argument reduced by pi/2 in three parts (exact for the angles a game uses,
 * |x| below a million), then Taylor polynomials on [-pi/4, pi/4]. */
static void ocean_sincos(float xf, double *s, double *c) {
    double x = xf;
    double k = floor(x * 0.63661977236758134308 + 0.5); /* 2 / pi */
    double r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050650619224932e-11) - k * 2.02226624879595063154e-21;
    /* Taylor coefficients (-1)^n / (2n+1)! and (-1)^n / (2n)!: on |r| <= pi/4 the first terms left out
     * are below 1e-16 and 1e-18. */
    static const double sin_c[] = {-1.66666666666666657e-01, 8.33333333333333322e-03,  -1.98412698412698413e-04,
                                   2.75573192239858925e-06,  -2.50521083854417202e-08, 1.60590438368216133e-10,
                                   -7.64716373181981641e-13, 2.81145725434552060e-15};
    static const double cos_c[] = {-5.00000000000000000e-01, 4.16666666666666644e-02,  -1.38888888888888894e-03,
                                   2.48015873015873016e-05,  -2.75573192239858883e-07, 2.08767569878681002e-09,
                                   -1.14707455977297245e-11, 4.77947733238738525e-14};
    double r2 = r * r, sin_p = sin_c[7], cos_p = cos_c[7];
    for (int n = 6; n >= 0; n--) {
        sin_p = sin_p * r2 + sin_c[n];
        cos_p = cos_p * r2 + cos_c[n];
    }
    double sin_r = r + r * r2 * sin_p, cos_r = 1.0 + r2 * cos_p;
    long q = (long)k & 3; /* the quadrant: two's complement keeps k mod 4 right for negative k too */
    switch (q) {
    case 0:
        *s = sin_r, *c = cos_r;
        break;
    case 1:
        *s = cos_r, *c = -sin_r;
        break;
    case 2:
        *s = -sin_r, *c = -cos_r;
        break;
    default:
        *s = -cos_r, *c = sin_r;
    }
}

static float ocean_sinf(float x) {
    if (x != x || x - x != 0.0f) return x - x; /* NaN for NaN and infinities */
    double s, c;
    ocean_sincos(x, &s, &c);
    return (float)s;
}

static float ocean_cosf(float x) {
    if (x != x || x - x != 0.0f) return x - x;
    double s, c;
    ocean_sincos(x, &s, &c);
    return (float)c;
}

#define erff(x) ocean_erff(x)
#define tanhf(x) ocean_tanhf(x)
#define sinf(x) ocean_sinf(x)
#define cosf(x) ocean_cosf(x)
#define exp(x) ocean_exp(x)

#endif
