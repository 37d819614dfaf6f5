// VulkanBackend: copy, fill, unary, binary, where (shaders/elementwise.comp) and adam_step
// (shaders/adam.comp).
#include <cmath>
#include <cstring>

#include "backends/vulkan/vk_backend.h"
#include "engine/core/error.h"
#include "vk_op_numbers.h"  // generated: the shaders' UNARY_/BINARY_ numbers checked against the enums

namespace kiln::vk {

namespace {
enum Kind { kCopy = 0, kFill = 1, kUnary = 2, kBinary = 3, kWhere = 4 };

void check_same_shape(const char* op, const char* what, const TensorArg& t, const Shape& shape) {
  KILN_CHECK(t.shape == shape, ShapeError, op, ": ", what, " has shape ", shape_str(t.shape), ", expected ",
             shape_str(shape));
}

// One elementwise dispatch over out's shape; ins are out-shaped (strides may be 0).
void run(Context& ctx, const char* name, Kind kind, int op, const TensorArg& out,
         std::initializer_list<const TensorArg*> ins, float f0 = 0, float f1 = 0, int64_t ifill = 0) {
  ctx.set_op(name, out.shape);
  check_index_range(ctx, name, out);
  std::vector<const Strides*> strides{&out.strides};
  for (const TensorArg* t : ins) {
    check_same_shape(name, "an input", *t, out.shape);
    check_index_range(ctx, name, *t);
    strides.push_back(&t->strides);
  }
  Collapsed c;
  switch (strides.size()) {
    case 1: c = collapse(name, out.shape, {strides[0]}); break;
    case 2: c = collapse(name, out.shape, {strides[0], strides[1]}); break;
    case 3: c = collapse(name, out.shape, {strides[0], strides[1], strides[2]}); break;
    default: c = collapse(name, out.shape, {strides[0], strides[1], strides[2], strides[3]}); break;
  }
  Params p;
  p.ptr[0] = address(out);
  int dts[3] = {0, 0, 0}, k = 0;
  for (const TensorArg* t : ins) {
    p.ptr[1 + k] = address(*t);
    dts[k++] = static_cast<int>(t->dtype);
  }
  p.i[0] = static_cast<int32_t>(out.numel());
  p.i[1] = c.ndim;
  for (int d = 0; d < c.ndim; ++d) {
    p.i[2 + d] = static_cast<int32_t>(c.size[d]);
    for (size_t o = 0; o < strides.size(); ++o) p.i[10 + 8 * o + d] = static_cast<int32_t>(c.stride[o][d]);
  }
  p.i[42] = static_cast<int32_t>(static_cast<uint64_t>(ifill) & 0xffffffffu);
  p.i[43] = static_cast<int32_t>(static_cast<uint64_t>(ifill) >> 32);
  p.f[0] = f0;
  p.f[1] = f1;
  ctx.dispatch_1d(ShaderId::elementwise, {256, kind, op, static_cast<int>(out.dtype), dts[0], dts[1], dts[2]}, p,
                  static_cast<uint64_t>(out.numel()));
}
}  // namespace

void VulkanBackend::copy(const TensorArg& out, const TensorArg& in) {
  require(OpId::copy, out.dtype, "copy");
  require(OpId::copy, in.dtype, "copy");
  if (out.numel() == 0) return;
  run(*ctx_, "copy", kCopy, 0, out, {&in});
}

void VulkanBackend::fill(const TensorArg& out, double value) {
  require(OpId::fill, out.dtype, "fill");
  if (out.numel() == 0) return;
  int64_t iv = 0;
  if (out.dtype == DType::f64) {
    std::memcpy(&iv, &value, 8);
  } else if (is_integral(out.dtype) || out.dtype == DType::bool_) {
    KILN_CHECK(std::isfinite(value), ValueError, "fill: cannot fill ", dtype_name(out.dtype), " with ", value);
    iv = out.dtype == DType::bool_ ? (value != 0) : static_cast<int64_t>(value);
  }
  run(*ctx_, "fill", kFill, 0, out, {}, static_cast<float>(value), 0, iv);
}

void VulkanBackend::unary(UnaryOp op, const TensorArg& out, const TensorArg& in, double p0, double p1) {
  const char* name = unary_op_name(op);
  if (out.numel() == 0) return check_same_shape(name, "input", in, out.shape);
  const bool not_to_bool = op == UnaryOp::logical_not && out.dtype == DType::bool_;
  if (!not_to_bool) {
    require(OpId::unary, out.dtype, name);
    require(OpId::unary, in.dtype, name);
  }
  run(*ctx_, name, kUnary, static_cast<int>(op), out, {&in}, static_cast<float>(p0), static_cast<float>(p1));
}

void VulkanBackend::binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  const char* name = binary_op_name(op);
  require(OpId::binary, a.dtype, name);
  KILN_CHECK(a.dtype == b.dtype, DTypeError, name, ": inputs are ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  KILN_CHECK(is_comparison(op) ? out.dtype == DType::bool_ : out.dtype == a.dtype, DTypeError, name, ": output is ",
             dtype_name(out.dtype), " for ", dtype_name(a.dtype), " inputs");
  if (out.numel() == 0) return;
  run(*ctx_, name, kBinary, static_cast<int>(op), out, {&a, &b});
}

void VulkanBackend::where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) {
  require(OpId::where, out.dtype, "where");
  require(OpId::where, cond.dtype, "where");
  KILN_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, DTypeError, "where: values are ", dtype_name(a.dtype),
             " and ", dtype_name(b.dtype), ", output ", dtype_name(out.dtype));
  if (out.numel() == 0) return;
  run(*ctx_, "where", kWhere, 0, out, {&cond, &a, &b});
}

void VulkanBackend::adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                              const TensorArg& exp_avg_sq, const AdamParams& ap) {
  require(OpId::adam_step, param.dtype, "adam_step");
  for (const TensorArg* t : {&grad, &exp_avg, &exp_avg_sq}) {
    check_same_shape("adam_step", "state", *t, param.shape);
    KILN_CHECK(t->dtype == param.dtype, DTypeError, "adam_step: param is ", dtype_name(param.dtype), ", state is ",
               dtype_name(t->dtype));
  }
  for (const TensorArg* t : {&param, &grad, &exp_avg, &exp_avg_sq})
    KILN_CHECK(t->is_contiguous(), ValueError, "adam_step: tensors must be contiguous (shape ", shape_str(param.shape),
               ")");
  KILN_CHECK(ap.step >= 1, ValueError, "adam_step: step must be >= 1, got ", ap.step);
  if (param.numel() == 0) return;
  ctx_->set_op("adam_step", param.shape);
  check_index_range(*ctx_, "adam_step", param);
  const double bc1 = 1 - std::pow(ap.beta1, static_cast<double>(ap.step));
  const double bc2 = 1 - std::pow(ap.beta2, static_cast<double>(ap.step));
  Params p;
  p.ptr[0] = address(param);
  p.ptr[1] = address(grad);
  p.ptr[2] = address(exp_avg);
  p.ptr[3] = address(exp_avg_sq);
  p.i[0] = static_cast<int32_t>(param.numel());
  p.i[1] = ap.decoupled ? 1 : 0;
  const double f[8] = {1 - ap.lr * ap.weight_decay, ap.weight_decay, 1 - ap.beta1, ap.beta2,
                       1 - ap.beta2, -(ap.lr / bc1), std::sqrt(bc2), ap.eps};
  for (int i = 0; i < 8; ++i) p.f[i] = static_cast<float>(f[i]);
  ctx_->dispatch_1d(ShaderId::adam, {256}, p, static_cast<uint64_t>(param.numel()));
}

}  // namespace kiln::vk
