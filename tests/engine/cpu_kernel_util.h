// Helpers for the CpuKernel* tests: TensorArgs over std::vector buffers, a tolerance
// check that treats NaN and infinities exactly, and a loop over the ISA levels the
// machine has (each float kernel is compiled for baseline x86-64, AVX2 and AVX-512).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "engine/core/error.h"

namespace kiln::testing_cpu {

inline TensorArg targ(void* data, DType dt, Shape shape, Strides strides = {}, int64_t offset = 0) {
  if (strides.empty()) strides = contiguous_strides(shape);
  return TensorArg{data, offset, dt, std::move(shape), std::move(strides)};
}
template <class T>
TensorArg targ(std::vector<T>& v, Shape shape, Strides strides = {}, int64_t offset = 0) {
  return targ(v.data(), dtype_of<T>::value, std::move(shape), std::move(strides), offset);
}

// |got - want| <= atol + rtol |want|; NaN only matches NaN, infinities match exactly.
inline ::testing::AssertionResult close(double got, double want, double rtol = 5e-7, double atol = 1e-37) {
  bool ok = std::isnan(want) ? std::isnan(got)
            : std::isinf(want) ? got == want
                               : std::fabs(got - want) <= atol + rtol * std::fabs(want);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (diff " << got - want << ")";
}

inline const char* isa_name(cpu::Isa isa) {
  return isa == cpu::Isa::avx512 ? "avx512" : isa == cpu::Isa::avx2 ? "avx2" : "base";
}

// Runs f once per ISA level this CPU supports, then restores the best one.
inline void for_each_isa(const std::function<void(cpu::Isa)>& f) {
  for (cpu::Isa want : {cpu::Isa::base, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (cpu::set_cpu_isa(want) != want) continue;
    SCOPED_TRACE(isa_name(want));
    f(want);
  }
  cpu::set_cpu_isa(cpu::Isa::avx512);
}

inline std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Linear index -> element offset of a strided view.
inline int64_t offset_of(int64_t linear, const Shape& shape, const Strides& strides) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += linear % shape[d] * strides[d];
    linear /= shape[d];
  }
  return off;
}

}  // namespace kiln::testing_cpu
