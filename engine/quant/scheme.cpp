#include "engine/quant/scheme.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace kiln::quant {

ActivationQParams activation_qparams(const Range& r, const std::string& layer) {
  KILN_CHECK(std::isfinite(r.min) && std::isfinite(r.max), ValueError, "layer '", layer, "': range [", r.min, ", ",
             r.max, "] is not finite");
  KILN_CHECK(r.min <= r.max, ValueError, "layer '", layer, "': range [", r.min, ", ", r.max, "] is inverted");
  const double lo = std::min(r.min, 0.0), hi = std::max(r.max, 0.0);
  const auto scale = static_cast<float>((hi - lo) / (kActivationQMax - kActivationQMin));
  if (!(scale > 0) || !std::isfinite(scale)) return {1.0f, 0};
  const double zp = std::nearbyint(kActivationQMin - lo / static_cast<double>(scale));
  return {scale, static_cast<int32_t>(std::clamp<double>(zp, kActivationQMin, kActivationQMax))};
}

std::vector<float> weight_scales(const Tensor& w, const std::string& layer) {
  KILN_CHECK(w.defined() && w.dim() >= 1, ValueError, "layer '", layer, "': weight must have an output-channel axis");
  KILN_CHECK(is_floating(w.dtype()), DTypeError, "layer '", layer, "': weight must be floating, got ",
             dtype_name(w.dtype()));
  const int64_t c = w.shape()[0], per = c ? w.numel() / c : 0;
  const std::vector<float> v = w.to_vector<float>();
  std::vector<float> scales(static_cast<size_t>(c), 1.0f);
  for (int64_t o = 0; o < c; ++o) {
    const float* row = v.data() + o * per;
    float amax = 0;
    for (int64_t i = 0; i < per; ++i) {
      KILN_CHECK(std::isfinite(row[i]), ValueError, "layer '", layer, "': weight of output channel ", o, " holds ",
                 std::isnan(row[i]) ? "NaN" : "Inf");
      amax = std::max(amax, std::fabs(row[i]));
    }
    const float scale = amax > 0 ? amax / kWeightQMax : 1.0f;
    scales[o] = scale > 0 ? scale : 1.0f;  // amax below ~1e-43 underflows to 0
  }
  return scales;
}

QuantizedWeight quantize_weight(const Tensor& w, const std::string& layer) {
  QuantizedWeight out;
  out.scales = weight_scales(w, layer);
  const int64_t c = w.shape()[0], per = c ? w.numel() / c : 0;
  const std::vector<float> v = w.to_vector<float>();
  std::vector<int8_t> q(v.size());
  for (int64_t o = 0; o < c; ++o)
    for (int64_t i = 0; i < per; ++i)
      q[o * per + i] = static_cast<int8_t>(
          std::clamp<float>(std::nearbyint(v[o * per + i] / out.scales[o]), -kWeightQMax, kWeightQMax));
  out.q = Tensor::from_vector<int8_t>(q, w.shape());
  return out;
}

Tensor quantize_bias(const Tensor& b, float in_scale, const std::vector<float>& w_scales, const std::string& layer) {
  KILN_CHECK(b.numel() == static_cast<int64_t>(w_scales.size()), ValueError, "layer '", layer, "': bias has ",
             b.numel(), " elements but the weight has ", w_scales.size(), " output channels");
  KILN_CHECK(in_scale > 0 && std::isfinite(in_scale), ValueError, "layer '", layer, "': input scale ", in_scale,
             " must be finite and > 0");
  const std::vector<double> v = b.to_vector<double>();
  std::vector<int32_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double scale = static_cast<double>(in_scale) * static_cast<double>(w_scales[i]);
    KILN_CHECK(std::isfinite(v[i]), ValueError, "layer '", layer, "': bias[", i, "] is not finite");
    const double r = std::nearbyint(v[i] / scale);
    KILN_CHECK(std::fabs(r) <= std::numeric_limits<int32_t>::max(), ValueError, "layer '", layer, "': bias[", i,
               "] = ", v[i], " does not fit s32 at scale ", scale);
    q[i] = static_cast<int32_t>(r);
  }
  return Tensor::from_vector<int32_t>(q, {b.numel()});
}

Tensor quantize_activation(const Tensor& x, const ActivationQParams& p) {
  const std::vector<float> v = x.to_vector<float>();
  std::vector<uint8_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float r = std::isnan(v[i]) ? 0.0f : std::nearbyint(v[i] / p.scale);
    q[i] = static_cast<uint8_t>(std::clamp<float>(r + static_cast<float>(p.zero_point), kActivationQMin,
                                                  kActivationQMax));
  }
  return Tensor::from_vector<uint8_t>(q, x.shape());
}

Tensor dequantize_activation(const Tensor& q, const ActivationQParams& p) {
  const std::vector<uint8_t> v = q.to_vector<uint8_t>();
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = p.scale * static_cast<float>(int32_t{v[i]} - p.zero_point);
  return Tensor::from_vector<float>(r, q.shape());
}

Tensor dequantize_weight(const QuantizedWeight& w) {
  const std::vector<int8_t> v = w.q.to_vector<int8_t>();
  const int64_t c = static_cast<int64_t>(w.scales.size()), per = c ? w.q.numel() / c : 0;
  std::vector<float> r(v.size());
  for (int64_t o = 0; o < c; ++o)
    for (int64_t i = 0; i < per; ++i) r[o * per + i] = w.scales[o] * static_cast<float>(v[o * per + i]);
  return Tensor::from_vector<float>(r, w.q.shape());
}

}  // namespace kiln::quant
