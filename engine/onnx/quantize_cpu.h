// One-pass u8 quantization on the CPU (ops_fused_qadd.cpp, built with OpenMP), for QuantizeLinear
// (ops_quant.cpp) and kiln.fused.AddQuantize: the spec's saturate(round_half_even(v / scale) +
// zero_point) in f32, the value the composed engine ops give, bit for bit.
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace kiln::onnx {

// v / scale rounded half to even, plus zero_point, saturated to [0, 255]. |v / scale| beyond 512
// saturates either way, so it is clamped there first; below 2^22 adding and subtracting
// 1.5 * 2^23 rounds to an integer in the default rounding mode (a form the compiler vectorizes,
// where std::nearbyint is a call without SSE4.1); NaN gives 0.
inline uint8_t quantize_u8(float v, float scale, float zero_point) {
  float t = v / scale;
  t = t < -512.0f ? -512.0f : (t > 512.0f ? 512.0f : t);
  const float r = ((t + 12582912.0f) - 12582912.0f) + zero_point;
  return static_cast<uint8_t>(r > 255.0f ? 255.0f : (r >= 0.0f ? r : 0.0f));
}

// QuantizeLinear of a CPU f32 x with one scale and a UINT8 zero point -> u8 of x's shape, in one
// pass on the OpenMP threads.
Tensor quantize_u8_cpu(const Tensor& x, float scale, float zero_point);

}  // namespace kiln::onnx
