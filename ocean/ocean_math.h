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

/* erf of a float, in double: its Taylor series below 0.5 (12 terms; the next is below 1e-17), the table
 * above up to 4, and +-1 from 4 on, where erfc is below half a float ulp of 1. A fixed number of
 * multiply-adds per call: GELU calls it for every unit of every layer. */
static float ocean_erff(float xf) {
    /* 2 / sqrt(pi) * (-1)^n / (n! (2n + 1)) */
    static const double taylor[] = {1.12837916709551256e+00,  -3.76126389031837538e-01, 1.12837916709551275e-01,
                                    -2.68661706451312522e-02, 5.22397762544218793e-03,  -8.54832702345085333e-04,
                                    1.20553329817896650e-04,  -1.49256503584062520e-05, 1.64621143658892485e-06,
                                    -1.63658446912349245e-07, 1.48071928158792192e-08,  -1.22905553017179284e-09};
    /* erf on [0.5, 4): seven degree-12 polynomials, one per half unit, in t = (|x| - centre) / 0.25; relative
     * error about 1e-15. Printed by scripts/ocean_math_tables.py (a Chebyshev fit of Python's math.erf). */
    static const double pieces[7][13] = {
        {7.11155633653515196e-01, 1.60732767298805396e-01, -3.01373938685233489e-02, 4.18574914745430398e-04,
         5.88620973990246188e-04, -5.19948519377215582e-05, -6.56067132024754948e-06, 1.12519480871331445e-06,
         3.51227343567371215e-08, -1.51332501163199253e-08, 1.77017046906621682e-10, 1.45162972358149717e-10,
         -6.03228160487341166e-12},
        {9.22900128256458063e-01, 5.91302806118201921e-02, -1.84782126911933013e-02, 2.61774679799113823e-03,
         -2.40601727856364863e-05, -4.60752314382621996e-05, 5.20050613706142782e-06, 2.21314384127001879e-07,
         -8.69397558363410564e-08, 3.34462283801694141e-09, 7.56847973799931540e-10, -7.45823068525094928e-11,
         -3.19565805178627091e-12},
        {9.86671671219182422e-01, 1.31937489825382746e-02, -5.77226517986073606e-03, 1.40870757363644773e-03,
         -1.87899257148099172e-04, 6.46910316069571396e-06, 2.18824338829622512e-06, -3.69797422125271840e-07,
         1.11397847289344189e-08, 3.41202622581406390e-09, -4.22300465630834904e-10, -2.11831693966963220e-12,
         4.08569891238592625e-12},
        {9.98537283413318932e-01, 1.78557975550449081e-03, -1.00438861247182623e-03, 3.39446151436645751e-04,
         -7.45444673240984283e-05, 1.04078898170534771e-05, -7.09071590694241101e-07, -4.09214181572286914e-08,
         1.52511605855183078e-08, -1.40900631051280253e-09, -1.10509088496834818e-11, 1.54674716785600540e-11,
         -1.28797427951463370e-12},
        {9.99899378077880430e-01, 1.46569311773297269e-04, -1.00766401844832126e-04, 4.31310735206558965e-05,
         -1.27270064767446238e-05, 2.69121912098992070e-06, -4.04620975163681040e-07, 3.94313254954851030e-08,
         -1.35815453382360498e-09, -2.71880182962795954e-10, 5.24012616315580448e-11, -3.63698353028698803e-12,
         -5.20468540493362143e-14},
        {9.99995697220536495e-01, 7.29725634587954115e-06, -5.92902078181800873e-06, 3.05952675024756988e-06,
         -1.11941146533844409e-06, 3.06442596356243135e-07, -6.43380620066065030e-08, 1.03754658134367168e-08,
         -1.24574179144312576e-09, 9.88488308364099802e-11, -2.32016114462194826e-12, -6.93897816302845586e-13,
         1.49429951800154481e-13},
        {9.99999886272743610e-01, 2.20358047658609309e-07, -2.06585671088570019e-07, 1.24525254291190267e-07,
         -5.40673272001456388e-08, 1.79403847966424349e-08, -4.70532873739788717e-09, 9.93417020308893259e-10,
         -1.69648102629487270e-10, 2.32480736124292934e-11, -2.63119404537850611e-12, 2.05525128795267872e-13,
         4.79049134437628178e-14},
    };
    double x = xf, a = fabs(x);
    if (xf != xf) return xf;
    if (a >= 4.0) return x > 0 ? 1.0f : -1.0f;
    double result;
    if (a < 0.5) {
        double x2 = a * a, sum = taylor[11];
        for (int n = 10; n >= 0; n--) sum = sum * x2 + taylor[n];
        result = a * sum;
    } else {
        int piece = (int)((a - 0.5) * 2.0);
        if (piece > 6) piece = 6;
        const double *c = pieces[piece];
        double t = (a - (0.75 + 0.5 * piece)) * 4.0;
        result = c[12];
        for (int n = 11; n >= 0; n--) result = result * t + c[n];
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
