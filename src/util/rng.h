/* rng: a fast deterministic pseudo-random generator and a fast normal sampler.
 *
 * Generator: xoshiro256** (Blackman & Vigna), state seeded from one 64-bit seed
 * through splitmix64, so nearby seeds (seed, seed+1, ...) give unrelated streams.
 * Same seed -> same sequence on every machine (pure integer arithmetic).
 *
 * Normal sampler: an inverse-CDF table of 65536 floats, table[i] =
 * Phi^-1((i + 0.5) / 65536), indexed by 16 random bits; one 64-bit draw gives four
 * samples. The distribution is a 65536-level discretisation of N(0, 1), exactly
 * symmetric (mean 0), variance 1 - 3e-4, clipped at |x| <= 4.17: good for random
 * weights, not for statistics that need the far tails. The table is built once
 * per process (thread-safe) and never changes afterwards. */
#ifndef TM_RNG_H
#define TM_RNG_H

#include <stddef.h>
#include <stdint.h>

struct tm_rng {
  uint64_t s[4];
};

/* splitmix64 step: advances *state and returns a well-mixed 64-bit value. */
static inline uint64_t tm_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void tm_rng_seed(struct tm_rng *r, uint64_t seed);

static inline uint64_t tm_rng_rotl_(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256**: the next 64 random bits. */
static inline uint64_t tm_rng_next(struct tm_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = tm_rng_rotl_(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = tm_rng_rotl_(s[3], 45);
  return result;
}

/* A uniform double in [0, 1) with 53 random bits. */
static inline double tm_rng_uniform(struct tm_rng *r) {
  return (double)(tm_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* The 65536-entry inverse-CDF table described above. */
const float *tm_normal_table(void);

/* Fills out[0..n) with mean + std * N(0,1) samples from the table. */
void tm_rng_fill_normal(struct tm_rng *r, float *out, size_t n, float mean, float std);

/* Phi^-1(p) for p in (0, 1), accurate to ~1e-15 (Acklam's rational approximation
 * refined by one Halley step with erfc). Exposed for tests. */
double tm_normal_quantile(double p);

#endif
