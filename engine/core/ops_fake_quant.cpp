// Fake quantization (ops.h): checks, Backend::fake_quantize where the device has it, else the
// same arithmetic composed of elementwise ops (every backend has those), and one autograd node
// whose rule passes the gradient through where the saved mask is true (engine/autograd/rules.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/ops_internal.h"

namespace kiln {

namespace {

void check_range(int64_t quant_min, int64_t quant_max, const char* op) {
  KILN_CHECK(quant_min <= quant_max, ValueError, op, ": quant_min ", quant_min, " must be <= quant_max ", quant_max);
}

// x [outer, C, inner] with scale f32 [C] and zero_point i32 [C] on x's device.
Tensor fake_quantize(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis, int64_t quant_min,
                     int64_t quant_max) {
  Tensor xc = x.contiguous();
  Tensor out, mask;
  if (x.backend()->supports(OpId::fake_quantize, x.dtype())) {
    const int64_t c = scale.numel();
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
    if (axis < 0) inner = x.numel() / std::max<int64_t>(c, 1);  // per tensor
    out = detail::empty(x.shape(), x.dtype(), x.device());
    mask = detail::empty(x.shape(), DType::bool_, x.device());
    if (x.numel())
      x.backend()->fake_quantize(out.arg(), mask.arg(), xc.arg(), scale.arg(), zero_point.arg(), inner, quant_min,
                                 quant_max);
  } else {  // composed: the backend's round is half to even, as std::nearbyint
    NoGradGuard no_grad;
    Shape b(static_cast<size_t>(x.dim()), 1);
    if (axis >= 0) b[static_cast<size_t>(axis)] = scale.numel();
    else b.clear();  // per tensor: 0-d operands
    const Tensor s = scale.reshape(b), zp = zero_point.to(x.dtype()).reshape(b);
    const Tensor q = add(round(mul(xc, reciprocal(s).to(x.dtype()))), zp);
    const Tensor lo = Tensor::scalar(static_cast<double>(quant_min), x.dtype(), x.device());
    const Tensor hi = Tensor::scalar(static_cast<double>(quant_max), x.dtype(), x.device());
    mask = logical_and(ge(q, lo), le(q, hi));
    out = mul(sub(clamp(q, static_cast<double>(quant_min), static_cast<double>(quant_max)), zp), s.to(x.dtype()));
  }
  if (detail::needs_grad({&x})) detail::record(out, OpKind::fake_quantize, {xc}, op_attrs::None{}, {mask});
  return out;
}

}  // namespace

Tensor fake_quantize_per_tensor_affine(const Tensor& x, float scale, int64_t zero_point, int64_t quant_min,
                                       int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  KILN_CHECK(x.defined() && is_floating(x.dtype()), DTypeError, op, ": x must be floating, got ",
             x.defined() ? dtype_name(x.dtype()) : "an undefined tensor");
  check_range(quant_min, quant_max, op);
  KILN_CHECK(quant_min <= zero_point && zero_point <= quant_max, ValueError, op, ": zero_point ", zero_point,
             " is outside [", quant_min, ", ", quant_max, "]");
  KILN_CHECK(std::isfinite(scale) && scale > 0 && std::isfinite(1.0f / scale), ValueError, op, ": scale ", scale,
             " must be finite and > 0");
  const Tensor s = Tensor::full({1}, scale, DType::f32, x.device());
  const Tensor zp = Tensor::full({1}, static_cast<double>(zero_point), DType::i32, x.device());
  return fake_quantize(x, s, zp, -1, quant_min, quant_max);
}

Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                                        int64_t quant_min, int64_t quant_max) {
  const char* op = "fake_quantize_per_channel_affine";
  KILN_CHECK(x.defined() && is_floating(x.dtype()), DTypeError, op, ": x must be floating, got ",
             x.defined() ? dtype_name(x.dtype()) : "an undefined tensor");
  KILN_CHECK(x.dim() >= 1 && axis >= -x.dim() && axis < x.dim(), IndexError, op, ": axis ", axis,
             " is outside the dimensions of x ", shape_str(x.shape()));
  if (axis < 0) axis += x.dim();
  const Shape want{x.size(axis)};
  KILN_CHECK(scale.defined() && zero_point.defined() && scale.shape() == want && zero_point.shape() == want,
             ShapeError, op, ": scale ", scale.defined() ? shape_str(scale.shape()) : "undefined", " and zero_point ",
             zero_point.defined() ? shape_str(zero_point.shape()) : "undefined", " must be ", shape_str(want),
             " (x ", shape_str(x.shape()), ", axis ", axis, ")");
  KILN_CHECK(is_floating(scale.dtype()) && !is_floating(zero_point.dtype()) && zero_point.dtype() != DType::bool_,
             DTypeError, op, ": scale must be floating and zero_point integer, got ", dtype_name(scale.dtype()),
             " and ", dtype_name(zero_point.dtype()));
  check_range(quant_min, quant_max, op);
  const std::vector<float> s = scale.to(DType::f32).to_vector<float>();
  const std::vector<int64_t> zp = zero_point.to(DType::i64).to_vector<int64_t>();
  for (size_t c = 0; c < s.size(); ++c) {
    KILN_CHECK(std::isfinite(s[c]) && s[c] > 0 && std::isfinite(1.0f / s[c]), ValueError, op, ": scale[", c, "] = ",
               s[c], " must be finite and > 0");
    KILN_CHECK(quant_min <= zp[c] && zp[c] <= quant_max, ValueError, op, ": zero_point[", c, "] = ", zp[c],
               " is outside [", quant_min, ", ", quant_max, "]");
  }
  return fake_quantize(x, scale.to(DType::f32).to(x.device()).contiguous(),
                       zero_point.to(DType::i32).to(x.device()).contiguous(), axis, quant_min, quant_max);
}

}  // namespace kiln
