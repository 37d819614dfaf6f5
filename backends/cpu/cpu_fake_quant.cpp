// CpuBackend::fake_quantize: PyTorch's CPU fake quantization (fake_quantize_tensor_cachemask_kernel,
// fake_quant_per_channel_cachemask_cpu) in one pass that writes the output and the mask, per
// tensor and per channel, f32 and f64. The products follow PyTorch's: inv_scale = 1.0f / scale
// in f32, x * inv_scale in x's dtype, std::nearbyint (ties to even under the default rounding
// mode). PyTorch casts the rounded value to int64 before clamping, which for NaN is undefined
// behaviour in C++; here NaN stays NaN (mask false), and values beyond int64 clamp as any other.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

template <class T>
void fake_quantize_kernel(T* out, bool* mask, const T* in, const float* scale, const int32_t* zero_point,
                          int64_t channels, int64_t inner, int64_t numel, double qmin, double qmax) {
  parallel_for(numel, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t c = (i / inner) % channels;
      const float inv_scale = 1.0f / scale[c];
      const double zp = zero_point[c];
      const double q = zp + static_cast<double>(std::nearbyint(in[i] * static_cast<T>(inv_scale)));
      mask[i] = qmin <= q && q <= qmax;  // false for NaN
      out[i] = std::isnan(q) ? static_cast<T>(q)
                             : static_cast<T>((std::fmin(std::fmax(q, qmin), qmax) - zp) * static_cast<double>(scale[c]));
    }
  });
}

}  // namespace

void CpuBackend::fake_quantize(const TensorArg& out, const TensorArg& mask, const TensorArg& in, const TensorArg& scale,
                               const TensorArg& zero_point, int64_t inner, int64_t quant_min, int64_t quant_max) {
  check_shape("fake_quantize", "in", in, out.shape);
  check_shape("fake_quantize", "mask", mask, out.shape);
  const int64_t channels = scale.numel(), numel = out.numel();
  KILN_CHECK(out.is_contiguous() && mask.is_contiguous() && in.is_contiguous() && scale.is_contiguous() &&
                 zero_point.is_contiguous(),
             ValueError, "fake_quantize: tensors must be contiguous");
  KILN_CHECK(in.dtype == out.dtype && mask.dtype == DType::bool_ && scale.dtype == DType::f32 &&
                 zero_point.dtype == DType::i32,
             DTypeError, "fake_quantize: dtypes ", dtype_name(out.dtype), " (out), ", dtype_name(mask.dtype), " (mask), ",
             dtype_name(in.dtype), " (in), ", dtype_name(scale.dtype), " (scale), ", dtype_name(zero_point.dtype),
             " (zero_point); want one floating dtype for in and out, bool, f32 and i32");
  KILN_CHECK(channels >= 1 && zero_point.numel() == channels && inner >= 1 && numel % (channels * inner) == 0,
             ShapeError, "fake_quantize: ", channels, " scales, ", zero_point.numel(), " zero points and inner size ",
             inner, " do not tile ", shape_str(out.shape));
  if (numel == 0) return;
  const auto* s = static_cast<const float*>(scale.data) + scale.offset;
  const auto* z = static_cast<const int32_t*>(zero_point.data) + zero_point.offset;
  bool* m = static_cast<bool*>(mask.data) + mask.offset;
  const auto lo = static_cast<double>(quant_min), hi = static_cast<double>(quant_max);
  switch (out.dtype) {
    case DType::f32:
      return fake_quantize_kernel(static_cast<float*>(out.data) + out.offset, m,
                                  static_cast<const float*>(in.data) + in.offset, s, z, channels, inner, numel, lo, hi);
    case DType::f64:
      return fake_quantize_kernel(static_cast<double*>(out.data) + out.offset, m,
                                  static_cast<const double*>(in.data) + in.offset, s, z, channels, inner, numel, lo, hi);
    default:
      break;
  }
  throw DTypeError(detail::str_cat("fake_quantize: no ", dtype_name(out.dtype), " kernel on the CPU (f32, f64)"));
}

}  // namespace kiln::cpu
