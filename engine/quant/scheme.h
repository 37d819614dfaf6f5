// Int8 quantization schemes (affine: real = scale * (q - zero_point)):
//   activations  per tensor, asymmetric, u8 in [0, 255]; the range is first widened to contain
//                0, so that 0 is exactly representable (zero_point is an integer in [0, 255]),
//                as torch.ao.quantization's _calculate_qparams (quint8, quant_min 0, quant_max 255);
//   weights      per output channel (axis 0), symmetric, s8 in [-127, 127], zero_point 0
//                (the restricted range of TensorRT and oneDNN's int8 guidance, so that -128 never
//                meets the u8 x s8 pair sums of VNNI);
//   bias         s32, zero_point 0, scale[c] = input scale * weight scale[c], so that it adds
//                straight into the s32 accumulator of sum(q_x - zp_x) * q_w.
// Rounding is to nearest, ties to even (std::nearbyint, as torch.quantize_per_tensor).
// Errors name the layer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/quant/histogram.h"

namespace kiln::quant {

inline constexpr int32_t kActivationQMin = 0, kActivationQMax = 255;  // u8
inline constexpr int32_t kWeightQMax = 127;                            // s8, symmetric [-127, 127]

// Per-tensor u8 parameters of an activation.
struct ActivationQParams {
  float scale = 1;         // real units per integer step, > 0
  int32_t zero_point = 0;  // in [0, 255]: the integer that represents real 0
  bool operator==(const ActivationQParams&) const = default;
};

// From a calibrated range: min' = min(r.min, 0), max' = max(r.max, 0), scale = (max' - min') / 255,
// zero_point = clamp(round(-min' / scale), 0, 255). A range of width 0 ([0, 0], a dead layer)
// gives scale 1, zero_point 0 (any scale represents the only value, 0, exactly).
// ValueError naming `layer` for a non-finite or inverted range.
ActivationQParams activation_qparams(const Range& r, const std::string& layer);

// A weight quantized per output channel: q is s8 with w's shape, scales has w.shape()[0] entries.
struct QuantizedWeight {
  Tensor q;                   // i8, contiguous, on the CPU
  std::vector<float> scales;  // > 0; per output channel
};

// Per output channel (axis 0): scale[c] = max|w[c, ...]| / 127, in f32; 1 for a channel whose
// weights are all 0. ValueError naming `layer` for NaN/Inf weights or a weight of rank 0; any
// floating dtype. quantize_weight's scales, and quantization-aware training's (qat.h).
std::vector<float> weight_scales(const Tensor& w, const std::string& layer);

// scale[c] = max|w[c, ...]| / 127, q = clamp(round(w / scale[c]), -127, 127). A channel whose
// weights are all 0 gets scale 1 (no division by zero; its q is all 0 and dequantizes to exact 0).
// ValueError naming `layer` for NaN/Inf weights or a weight of rank 0; any floating dtype.
QuantizedWeight quantize_weight(const Tensor& w, const std::string& layer);

// b [C] (floating) as s32 with scale in_scale * w_scales[c]. ValueError naming `layer` when the
// lengths differ, a value is not finite, or |b / scale| exceeds the s32 range.
Tensor quantize_bias(const Tensor& b, float in_scale, const std::vector<float>& w_scales, const std::string& layer);

// x (floating, any shape) -> u8: clamp(round(x / scale) + zero_point, 0, 255). NaN becomes zero_point.
Tensor quantize_activation(const Tensor& x, const ActivationQParams& p);
// q (u8) -> f32: scale * (q - zero_point).
Tensor dequantize_activation(const Tensor& q, const ActivationQParams& p);
// QuantizedWeight -> f32 with the weight's shape: scale[c] * q.
Tensor dequantize_weight(const QuantizedWeight& w);

}  // namespace kiln::quant
