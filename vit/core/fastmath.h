#ifndef VIT_CORE_FASTMATH_H
#define VIT_CORE_FASTMATH_H

/* exp and erf for the kernels: no libm call, so the loops that use them vectorise. */

#include <stdint.h>
#include <string.h>

/* e^r for |r| <= ln2/2, degree 6 (Horner), for a float or a vector of floats alike. */
#define FAST_EXP_POLY(r)                                                                           \
    (1.0f + (r) * (1.0f + (r) * (0.5f + (r) * (1.0f / 6 +                                          \
                                               (r) * (1.0f / 24 +                                  \
                                                      (r) * (1.0f / 120 + (r) * (1.0f / 720)))))))

/* exp(x) without a libm call so loops over it vectorise: x = n·ln2 + r, |r| <= ln2/2, degree-6
 * polynomial for e^r (relative error < 2e-7, like expf's 1 ulp at float32), 2^n from the bits.
 * Underflows to exactly 0 below -87.3 (masked attention scores are -inf). */
static inline float fast_expf(float x) {
    const float hi = 88.3762626647949f, lo = -87.3365447504f;
    /* min, then max: the forms x86's minps/maxps compute, so the clamp costs two instructions */
    float xc = x < hi ? x : hi;
    xc = xc > lo ? xc : lo;
    /* round to nearest by the 1.5·2^23 trick: a libm round() call would stop vectorisation */
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f; /* ln2 split in two for exactness */
    float p = FAST_EXP_POLY(r);
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    /* NaN stays NaN (the clamp above made it finite): a NaN score must not become a weight */
    return x != x ? x : (x < lo ? 0.0f : p * scale);
}

/* fast_erff's fit: erf(x) = x·P(x²) / Q(x²), the coefficients from the highest power down. */
static const float fast_erf_p[7] = {
    -2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
    -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
static const float fast_erf_q[5] = {-1.45660718464996e-05f, -2.13374055278905e-04f,
                                    -1.68282697438203e-03f, -7.37332916720468e-03f,
                                    -1.42647390514189e-02f};

/* erf as an odd/even rational minimax fit on [-4, 4] (the one XLA and Eigen use; outside, erf is
 * ±1 in float32). Max error ~2 ulp against erf in double; erff itself is a scalar libm call and was
 * a quarter of inference time. */
static inline float fast_erff(float x) {
    x = x > 4.0f ? 4.0f : (x < -4.0f ? -4.0f : x);
    const float x2 = x * x;
    float p = fast_erf_p[0], q = fast_erf_q[0];
    for (int i = 1; i < 7; i++) p = p * x2 + fast_erf_p[i];
    for (int i = 1; i < 5; i++) q = q * x2 + fast_erf_q[i];
    return x * p / q;
}

#endif
