// Note [Int8 without VNNI]: oneDNN's int8 convolution and matmul kernels for CPUs without VNNI
// (AVX2; AVX-512 before Cascade Lake: ONEDNN_VERBOSE shows jit_uni_int8:avx2 or gemm:jit) multiply
// u8 by s8 with vpmaddubsw, which adds each pair of products into a saturating int16. A pair of
// 255 * 127 products is 64,770 > 32,767, so a layer whose inputs and weights use their whole
// ranges gets wrong sums (oneDNN's developer guide, "Nuances of int8 computations"; seen here as
// errors of 0.1 in outputs of magnitude 1). On such CPUs the int8 layers compute the same
// QuantizedParams arithmetic in f32: x - zero_point, the weight and the bias as f32 (exact),
// oneDNN's f32 convolution / matmul (integer products and sums, exact while below 2^24, else
// within f32 rounding), then the scale, the ReLU and the u8 requantization (nearest even,
// saturated) as oneDNN's int8 kernels do them. Activations stay u8 and weights i8 between layers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_qcommon.h"

namespace kiln::cpu {

bool int8_dot_exact() {
  static const bool exact = [] {
    const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());  // ONEDNN_MAX_CPU_ISA caps it
    auto has = [isa](unsigned bits) { return (isa & bits) == bits; };
    return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }();
  return exact;
}

namespace {

TensorArg f32_arg(std::vector<float>& v, const Shape& shape) {
  TensorArg a;
  a.data = v.data();
  a.dtype = DType::f32;
  a.shape = shape;
  a.strides = contiguous_strides(shape);
  return a;
}

// x u8 -> x - zero_point, w i8 and bias i32 -> f32.
struct FloatOperands {
  std::vector<float> x, w, b;
  FloatOperands(const TensorArg& in, const TensorArg& weight, const TensorArg& bias, int32_t zero_point) {
    const auto* xs = reinterpret_cast<const uint8_t*>(first_element(in));
    const auto* ws = reinterpret_cast<const int8_t*>(first_element(weight));
    x.resize(static_cast<size_t>(in.numel()));
    w.resize(static_cast<size_t>(weight.numel()));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(int32_t{xs[i]} - zero_point);
    for (size_t i = 0; i < w.size(); ++i) w[i] = ws[i];
    if (bias.data) {
      const auto* bs = reinterpret_cast<const int32_t*>(first_element(bias));
      b.assign(bs, bs + bias.numel());
    }
  }
};

// out = relu?(scale[c] * (acc + bias[c])) [+ zero point, rounded, saturated for u8], where element
// i of acc belongs to channel (i / inner) % channels.
void requantize(const TensorArg& out, const std::vector<float>& acc, const std::vector<float>& bias,
                const QuantizedParams& q, int64_t channels, int64_t inner) {
  const bool u8_out = out.dtype == DType::u8;
  std::vector<float> scale(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) scale[c] = q.in_scale * q.weight_scales[c] / (u8_out ? q.out_scale : 1.0f);
  auto* f = reinterpret_cast<float*>(first_element(out));
  auto* u = reinterpret_cast<uint8_t*>(first_element(out));
  for (size_t i = 0; i < acc.size(); ++i) {
    const auto c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    float v = scale[c] * (acc[i] + (bias.empty() ? 0.0f : bias[c]));
    if (q.relu) v = std::max(v, 0.0f);
    if (u8_out) u[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(v) + static_cast<float>(q.out_zero_point), 0.0f, 255.0f));
    else f[i] = v;
  }
}

}  // namespace

void qconv2d_in_float(CpuBackend& cpu, const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                      const TensorArg& bias, const Conv2dParams& p, const QuantizedParams& q) {
  FloatOperands f(in, weight, bias, q.in_zero_point);
  std::vector<float> acc(static_cast<size_t>(out.numel()));
  cpu.conv2d_forward(f32_arg(acc, out.shape), f32_arg(f.x, in.shape), f32_arg(f.w, weight.shape), TensorArg{}, p);
  requantize(out, acc, f.b, q, out.shape[1], out.shape[2] * out.shape[3]);
}

void qlinear_in_float(CpuBackend& cpu, const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                      const TensorArg& bias, const QuantizedParams& q) {
  FloatOperands f(in, weight, bias, q.in_zero_point);
  std::vector<float> acc(static_cast<size_t>(out.numel()));
  TensorArg wt = f32_arg(f.w, {weight.shape[1], weight.shape[0]});  // [N, K] read as [K, N]
  wt.strides = {1, weight.shape[1]};
  cpu.matmul(f32_arg(acc, out.shape), f32_arg(f.x, in.shape), wt);
  requantize(out, acc, f.b, q, out.shape[1], 1);
}

}  // namespace kiln::cpu
