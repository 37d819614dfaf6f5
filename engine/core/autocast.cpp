#include "engine/core/autocast.h"

#include <atomic>

#include "engine/core/error.h"

namespace kiln {

namespace {
// -1: off; otherwise the DType's value.
std::atomic<int> g_autocast{-1};
}  // namespace

void set_autocast(std::optional<DType> dtype) {
  KILN_CHECK(!dtype || *dtype == DType::bf16 || *dtype == DType::f16, DTypeError,
             "autocast: the low-precision type must be bf16 or f16, got ", dtype_name(*dtype));
  g_autocast.store(dtype ? static_cast<int>(*dtype) : -1, std::memory_order_relaxed);
}

std::optional<DType> autocast_dtype() {
  const int v = g_autocast.load(std::memory_order_relaxed);
  if (v < 0) return std::nullopt;
  return static_cast<DType>(v);
}

bool autocast_wants(const Tensor& t) {
  return t.defined() && t.dtype() == DType::f32 && g_autocast.load(std::memory_order_relaxed) >= 0;
}

Tensor autocast(const Tensor& t) {
  if (!autocast_wants(t)) return t;
  return t.to(*autocast_dtype());
}

}  // namespace kiln
