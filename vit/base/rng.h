#ifndef VIT_BASE_RNG_H
#define VIT_BASE_RNG_H

/* splitmix64: the one generator behind every random draw (weights, shuffles, augmentation,
 * dropout). A state advances by a constant and each output is a hash of it, so draw i of a state
 * can also be computed directly (rng_mix(state + i·RNG_GAMMA)): masks are drawn in parallel and
 * still depend only on the state. */

#include <stdint.h>

#define RNG_GAMMA 0x9E3779B97F4A7C15ull

/* splitmix64's output function. */
static inline uint64_t rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The next 64 random bits; *state advances. */
uint64_t rng_next(uint64_t *state);
/* Uniform in [0, 1) with 53 bits. */
double rng_uniform(uint64_t *state);
/* Uniform integer in [lo, hi]. */
int rng_int(uint64_t *state, int lo, int hi);
/* A standard normal draw (Box-Muller, one per two uniforms). */
double rng_normal(uint64_t *state);
/* A Gamma(shape, 1) draw, shape > 0 (Marsaglia and Tsang; shape < 1 through Gamma(shape + 1)
 * times U^(1/shape)). */
double rng_gamma(uint64_t *state, double shape);
/* A Beta(a, b) draw, a, b > 0: Gamma(a) / (Gamma(a) + Gamma(b)). */
double rng_beta(uint64_t *state, double a, double b);
/* A generator state derived from a seed and up to two stream numbers. */
uint64_t rng_derive(uint64_t seed, uint64_t a, uint64_t b);
/* Fisher-Yates shuffle of perm[0..n) with draws from *state. */
void rng_shuffle(int *perm, int n, uint64_t *state);

#endif
