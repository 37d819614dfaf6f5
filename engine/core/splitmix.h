// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA
// 2014): the one 64-bit mixer behind Kiln's counter-based draws and its per-(seed, epoch, index)
// seeds, so neighbouring inputs give unrelated outputs.
#pragma once
#include <cstdint>

namespace kiln {

// SplitMix64's output for state x: x advanced by the golden gamma, then finalized.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace kiln
