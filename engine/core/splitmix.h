// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA
// 2014): the one 64-bit mixer behind Kiln's counter-based draws and its per-(seed, epoch, index)
// seeds, so neighbouring inputs give unrelated outputs.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KILN_SPLITMIX_HD __host__ __device__
#else
#define KILN_SPLITMIX_HD
#endif

namespace kiln {

// SplitMix64's output for state x: x advanced by the golden gamma, then finalized.
KILN_SPLITMIX_HD inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The counter-based Bernoulli draw of random.h's bernoulli, one definition for every backend:
// element i of a call with `key` is kept when the top 53 bits of SplitMix64's output i + 1 of
// key, as a fraction of 2^53, are below p, i.e. below bernoulli_threshold(p) (p >= 1 keeps all).
inline uint64_t bernoulli_threshold(double p) {
  return p >= 1 ? UINT64_MAX : static_cast<uint64_t>(std::ldexp(p, 53));
}
KILN_SPLITMIX_HD inline bool bernoulli_keeps(uint64_t key, uint64_t i, uint64_t threshold) {
  return (mix64(key + i * 0x9E3779B97F4A7C15ull) >> 11) < threshold;
}

}  // namespace kiln
