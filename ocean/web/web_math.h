/* web_math.h: the libm functions the Ocean envs and puffernet.h call whose last bit differs between C
 * libraries (glibc's x86-64 code against the musl that emscripten builds into WebAssembly: erff, sinf,
 * cosf, tanhf and exp; expf, logf, sqrtf, fabsf and ceil agree), written out in plain double arithmetic
 * so the browser build and the native build of a page compute the same bits.
 *
 * pufferlib/web.py includes it before the env, after <math.h>, so the macros at the end send the env's
 * and puffernet.h's calls here. Every operation is a basic IEEE-754 one (+ - * /, comparisons, ldexp,
 * floor), which both targets round the same way; both builds pass -ffp-contract=off so no compiler fuses
 * a multiply and an add on one side only. The results are within an ulp of the true float value.
 */
#ifndef OCEAN_WEB_MATH_H
#define OCEAN_WEB_MATH_H

#include <math.h>

/* e^x in double: x = k ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series (the 14th term is below
 * 1e-17 of the sum), scaled by 2^k exactly. */
static double web_exp(double x) {
    if (x != x) return x;
    if (x > 709.78) return HUGE_VAL;
    if (x < -745.2) return 0.0;
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double k = floor(x * 1.44269504088896338700 + 0.5);
    double r = (x - k * ln2_hi) - k * ln2_lo;
    double term = 1.0, sum = 1.0;
    for (int n = 1; n <= 14; n++) {
        term = term * r / n;
        sum += term;
    }
    return ldexp(sum, (int)k);
}

/* erf of a float, in double: its Taylor series below 2.5 (the largest term is about 16, so the sum keeps
 * more than 12 digits), a continued fraction for erfc above, and +-1 from 4 on, where erfc is below half
 * a float ulp of 1. */
static float web_erff(float xf) {
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
        result = 1.0 - web_exp(-a * a) * 0.56418958354775628695 / tail; /* 1 / sqrt(pi) */
    }
    return (float)(x < 0 ? -result : result);
}

static float web_tanhf(float xf) {
    double x = xf, a = fabs(x);
    if (xf != xf) return xf;
    if (a > 20.0) return x > 0 ? 1.0f : -1.0f;
    double e = web_exp(-2.0 * a);
    double t = (1.0 - e) / (1.0 + e);
    return (float)(x < 0 ? -t : t);
}

/* sin and cos of a float: the argument reduced by pi/2 in three parts (exact for the angles a game uses,
 * |x| below a million), then the Taylor series on [-pi/4, pi/4]. */
static void web_sincos(float xf, double *s, double *c) {
    double x = xf;
    double k = floor(x * 0.63661977236758134308 + 0.5); /* 2 / pi */
    double r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050650619224932e-11) - k * 2.02226624879595063154e-21;
    double r2 = r * r, ts = r, tc = 1.0, sin_r = r, cos_r = 1.0;
    for (int n = 1; n <= 11; n++) {
        ts *= -r2 / ((2 * n) * (2 * n + 1));
        tc *= -r2 / ((2 * n - 1) * (2 * n));
        sin_r += ts;
        cos_r += tc;
    }
    long q = (long)fmod(k, 4.0);
    if (q < 0) q += 4;
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

static float web_sinf(float x) {
    if (x != x || x - x != 0.0f) return x - x; /* NaN for NaN and infinities */
    double s, c;
    web_sincos(x, &s, &c);
    return (float)s;
}

static float web_cosf(float x) {
    if (x != x || x - x != 0.0f) return x - x;
    double s, c;
    web_sincos(x, &s, &c);
    return (float)c;
}

#define erff(x) web_erff(x)
#define tanhf(x) web_tanhf(x)
#define sinf(x) web_sinf(x)
#define cosf(x) web_cosf(x)
#define exp(x) web_exp(x)

#endif
