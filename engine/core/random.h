// Seeded random number generation (torch.Generator, torch.manual_seed).
// Values are drawn on the host from a 64-bit Mersenne Twister and copied to the
// device, so a seed gives the same numbers on every backend.
#pragma once
#include <cstdint>
#include <random>
#include <string>

#include "engine/core/tensor.h"

namespace kiln {

class Generator {
 public:
  explicit Generator(uint64_t seed = 5489u) : engine_(seed), seed_(seed) {}
  void manual_seed(uint64_t seed) { engine_.seed(seed); seed_ = seed; }
  uint64_t initial_seed() const { return seed_; }
  std::mt19937_64& engine() { return engine_; }
  // State as text (std::mt19937_64's stream format), for checkpoints.
  std::string state() const;
  void set_state(const std::string& state);  // ValueError when malformed

 private:
  std::mt19937_64 engine_;
  uint64_t seed_;
};

// The process-wide default generator (torch.default_generator), used when gen is null
// (the functions below lock it).
Generator& default_generator();
void manual_seed(uint64_t seed);

// Uniform in [low, high) (torch.rand / Tensor.uniform_).
Tensor uniform(const Shape& shape, double low, double high, DType dtype = DType::f32, Device device = {},
               Generator* gen = nullptr);
// Normal with mean and std (torch.randn * std + mean).
Tensor normal(const Shape& shape, double mean, double std, DType dtype = DType::f32, Device device = {},
              Generator* gen = nullptr);
// 1 with probability p, else 0 (torch.bernoulli), in dtype. Counter-based, as PyTorch's CUDA
// Philox draws are: a call takes one 64-bit draw of the generator as its key, and element i is
// SplitMix64's output i of that key (Steele, Lea & Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014) compared with p in 53 bits. So a call advances the generator by one
// draw whatever its size, and the CPU fills the elements in parallel with the same result on any
// number of threads.
Tensor bernoulli(const Shape& shape, double p, DType dtype = DType::f32, Device device = {},
                 Generator* gen = nullptr);
// Dropout's scaled mask in one pass: `value` with probability p, else 0 (the elements bernoulli
// gives for the same generator state, times value).
Tensor bernoulli_scaled(const Shape& shape, double p, double value, DType dtype = DType::f32, Device device = {},
                        Generator* gen = nullptr);
// One 64-bit draw of gen (the default generator when null): the key of a counter-based draw.
uint64_t random_key(Generator* gen = nullptr);
// A random permutation of 0..n-1 as i64 (torch.randperm).
Tensor randperm(int64_t n, Device device = {}, Generator* gen = nullptr);

}  // namespace kiln
