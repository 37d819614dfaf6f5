#include "engine/core/random.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/core/splitmix.h"

namespace kiln {

namespace {
std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}

template <class Fill>
Tensor generate(const Shape& shape, DType dtype, Device device, Generator* gen, Fill fill) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  if (gen) {
    fill(gen->engine(), v);
  } else {
    std::lock_guard<std::mutex> lock(default_mutex());
    fill(default_generator().engine(), v);
  }
  return Tensor::from_vector(v, shape, device).to(dtype);
}
}  // namespace

std::string Generator::state() const {
  std::ostringstream os;
  os << seed_ << ' ' << engine_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  uint64_t seed = 0;
  std::mt19937_64 e;
  is >> seed >> e;
  KILN_CHECK(!is.fail(), ValueError, "Generator::set_state: malformed generator state");
  seed_ = seed;
  engine_ = e;
}

Generator& default_generator() {
  static Generator g(67280421310721ull);  // torch's default_rng_seed_val
  return g;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_mutex());
  default_generator().manual_seed(seed);
}

Tensor uniform(const Shape& shape, double low, double high, DType dtype, Device device, Generator* gen) {
  KILN_CHECK(low <= high, ValueError, "uniform: low ", low, " is greater than high ", high);
  return generate(shape, dtype, device, gen, [&](std::mt19937_64& e, std::vector<double>& v) {
    std::uniform_real_distribution<double> d(low, high);
    for (double& x : v) x = d(e);
  });
}

Tensor normal(const Shape& shape, double mean, double std, DType dtype, Device device, Generator* gen) {
  KILN_CHECK(std >= 0, ValueError, "normal: std must be non-negative, got ", std);
  return generate(shape, dtype, device, gen, [&](std::mt19937_64& e, std::vector<double>& v) {
    std::normal_distribution<double> d(mean, std);
    for (double& x : v) x = d(e);
  });
}

uint64_t random_key(Generator* gen) {
  if (gen) return gen->engine()();
  std::lock_guard<std::mutex> lock(default_mutex());
  return default_generator().engine()();
}

Tensor bernoulli_scaled(const Shape& shape, double p, double value, DType dtype, Device device, Generator* gen) {
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "bernoulli: p must be in [0, 1], got ", p);
  const uint64_t key = random_key(gen);
  const uint64_t threshold = bernoulli_threshold(p);
  if (backend_for(device)->supports(OpId::bernoulli, dtype)) {
    Tensor t = Tensor::empty(shape, dtype, device);
    if (t.numel()) t.backend()->bernoulli(t.arg(), key, threshold, value);
    return t;
  }
  // A backend without the draw (Vulkan) or a dtype the CPU lacks: drawn on the CPU, converted there.
  Tensor host = Tensor::empty(shape, DType::f32);
  if (host.numel()) host.backend()->bernoulli(host.arg(), key, threshold, value);
  return host.to(device).to(dtype);
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Device device, Generator* gen) {
  return bernoulli_scaled(shape, p, 1.0, dtype, device, gen);
}

Tensor randperm(int64_t n, Device device, Generator* gen) {
  KILN_CHECK(n >= 0, ValueError, "randperm: n must be non-negative, got ", n);
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  auto shuffle = [&](std::mt19937_64& e) {
    for (size_t i = v.size(); i > 1; --i) {  // Fisher-Yates with our own index draw: same on every libstdc++
      size_t j = static_cast<size_t>(e() % i);
      std::swap(v[i - 1], v[j]);
    }
  };
  if (gen) {
    shuffle(gen->engine());
  } else {
    std::lock_guard<std::mutex> lock(default_mutex());
    shuffle(default_generator().engine());
  }
  return Tensor::from_vector(v, {n}, device);
}

}  // namespace kiln
