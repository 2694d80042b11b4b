#include "vit/base/rng.h"

#include <math.h>

uint64_t rng_next(uint64_t *state) {
    return rng_mix(*state += RNG_GAMMA);
}

double rng_uniform(uint64_t *state) {
    return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

double rng_normal(uint64_t *state) {
    const double u1 = rng_uniform(state), u2 = rng_uniform(state);
    return sqrt(-2.0 * log(u1 + 1e-300)) * cos(2.0 * M_PI * u2);
}

double rng_gamma(uint64_t *state, double shape) {
    if (shape < 1.0) {
        const double u = rng_uniform(state);
        return rng_gamma(state, shape + 1.0) * pow(u + 1e-300, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = rng_normal(state);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = rng_uniform(state);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (log(u + 1e-300) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

double rng_beta(uint64_t *state, double a, double b) {
    const double x = rng_gamma(state, a), y = rng_gamma(state, b);
    return x + y > 0.0 ? x / (x + y) : 0.5;
}

uint64_t rng_derive(uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t s = seed;
    uint64_t h = rng_next(&s);
    s = h ^ (a * 0xD1B54A32D192ED03ull);
    h = rng_next(&s);
    s = h ^ (b * 0xABC98388FB8FAC03ull);
    return rng_next(&s);
}

int rng_int(uint64_t *state, int lo, int hi) {
    return lo + (int)(rng_uniform(state) * (double)(hi - lo + 1));
}

void rng_shuffle(int *perm, int n, uint64_t *state) {
    for (int i = n - 1; i > 0; i--) {
        const int j = rng_int(state, 0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
