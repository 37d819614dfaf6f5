// Elementwise ops: broadcasting, PyTorch type promotion, autograd recording.
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops_internal.h"

namespace kiln {

using detail::broadcast_arg;
using detail::needs_grad;
using detail::record;

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  KILN_CHECK(a.defined() && b.defined(), ValueError, op, ": undefined tensor argument");
  KILN_CHECK(a.device() == b.device(), DeviceError, op, ": expected all tensors on one device, got ",
             a.device().str(), " and ", b.device().str());
}

namespace {

int category(DType t) { return t == DType::bool_ ? 0 : is_floating(t) ? 2 : 1; }

// torch.result_type for two tensors: a 0-d tensor only changes the type of a
// dimensioned one when it is of a higher category (bool < integer < floating).
DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dimmed = a0 ? b : a;
  const Tensor& zero = a0 ? a : b;
  if (category(zero.dtype()) > category(dimmed.dtype())) return zero.dtype();
  return dimmed.dtype();
}

// The autograd kind an op records (OpKind::count: none) and whether its rule reads the output,
// from engine/core/elementwise_ops.def.
OpKind grad_kind(BinaryOp op) {
  static const OpKind kinds[] = {
#define KILN_KIND_1(name) OpKind::name,
#define KILN_KIND_0(name) OpKind::count,
#define KILN_BINARY_OP(name, compare, grad) KILN_KIND_##grad(name)
#include "engine/core/elementwise_ops.def"
  };
  return kinds[static_cast<int>(op)];
}
OpKind grad_kind(UnaryOp op) {
  static const OpKind kinds[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_KIND_##grad(name)
#include "engine/core/elementwise_ops.def"
#undef KILN_KIND_1
#undef KILN_KIND_0
  };
  return kinds[static_cast<int>(op)];
}
bool saves_output(UnaryOp op) {
  static const bool saves[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) saves != 0,
#include "engine/core/elementwise_ops.def"
  };
  return saves[static_cast<int>(op)];
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  check_same_device(a, b, name);
  DType t = result_type(a, b);
  if (op == BinaryOp::div && !is_floating(t)) t = DType::f32;  // true division
  if (op == BinaryOp::logical_and || op == BinaryOp::logical_or) t = DType::bool_;
  KILN_CHECK(!(t == DType::bool_ && (op == BinaryOp::sub || op == BinaryOp::pow)), DTypeError, name,
             ": not defined for bool tensors");
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor ac = a.to(t), bc = b.to(t);
  Tensor out = detail::empty_elementwise(shape, is_comparison(op) ? DType::bool_ : t, a.device(), {&a, &b});
  if (out.numel()) {
    detail::require_supported(a, op, t, name);
    a.backend()->binary(op, out.arg(), broadcast_arg(ac, shape), broadcast_arg(bc, shape));
  }
  const OpKind kind = grad_kind(op);
  if (kind != OpKind::count && is_floating(t) && needs_grad({&a, &b})) record(out, kind, {ac, bc});
  return out;
}

Tensor unary(UnaryOp op, const Tensor& x, double p0 = 0, double p1 = 0) {
  const char* name = unary_op_name(op);
  KILN_CHECK(x.defined(), ValueError, name, ": undefined tensor argument");
  DType t = x.dtype();
  if (is_floating_only(op) && !is_floating(t)) t = DType::f32;
  if (op == UnaryOp::logical_not) t = DType::bool_;
  KILN_CHECK(!(x.dtype() == DType::bool_ && (op == UnaryOp::neg || op == UnaryOp::pow_scalar)), DTypeError, name,
             ": not defined for bool tensors");
  Tensor xc = op == UnaryOp::logical_not ? x : x.to(t);
  Tensor out = detail::empty_elementwise(x.shape(), t, x.device(), {&x});
  if (out.numel()) {
    detail::require_supported(x, op, xc.dtype(), name);
    x.backend()->unary(op, out.arg(), xc.arg(), p0, p1);
  }
  const OpKind kind = grad_kind(op);
  if (kind != OpKind::count && is_floating(t) && needs_grad({&x})) {
    std::vector<Tensor> saved;
    if (saves_output(op)) saved.push_back(out);
    record(out, kind, {xc}, op_attrs::Scalars{p0, p1}, saved);
  }
  return out;
}

}  // namespace

Tensor scalar_like(double value, const Tensor& like) {
  DType t = like.dtype();
  if (!is_floating(t)) {
    bool integral = std::isfinite(value) && value == std::floor(value);
    t = integral ? (t == DType::bool_ ? DType::i64 : t) : DType::f32;
  }
  return Tensor::scalar(value, t, like.device());
}

#define KILN_BINARY_OP(name, compare, grad) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(BinaryOp::name, a, b); }
#include "engine/core/elementwise_ops.def"
#define KILN_UNARY_DEF_1(name) \
  Tensor name(const Tensor& x) { return unary(UnaryOp::name, x); }
#define KILN_UNARY_DEF_0(name)
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_UNARY_DEF_##plain(name)
#include "engine/core/elementwise_ops.def"
#undef KILN_UNARY_DEF_1
#undef KILN_UNARY_DEF_0

Tensor apply_unary(UnaryOp op, const Tensor& x) {
  static const bool plain[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) plain != 0,
#include "engine/core/elementwise_ops.def"
  };
  KILN_CHECK(op < UnaryOp::count && plain[static_cast<int>(op)], ValueError, "apply_unary: ",
             op < UnaryOp::count ? unary_op_name(op) : "an unknown op", " takes parameters; call its own function");
  return unary(op, x);
}

Tensor pow(const Tensor& x, double e) {
  if (!is_floating(x.dtype()) && (e != std::floor(e) || e < 0)) return unary(UnaryOp::pow_scalar, x.to(DType::f32), e);
  return unary(UnaryOp::pow_scalar, x, e);
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (approximate == "none") return unary(UnaryOp::gelu, x);
  KILN_CHECK(approximate == "tanh", ValueError, "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::f32);
  Tensor inner = mul(add(xf, mul(pow(xf, 3.0), scalar_like(0.044715, xf))), scalar_like(std::sqrt(M_2_PI), xf));
  return mul(mul(xf, scalar_like(0.5, xf)), add(tanh(inner), scalar_like(1.0, xf)));
}
Tensor leaky_relu(const Tensor& x, double slope) { return unary(UnaryOp::leaky_relu, x, slope); }
Tensor clamp(const Tensor& x, double lo, double hi) {
  KILN_CHECK(!(lo > hi), ValueError, "clamp: min ", lo, " is greater than max ", hi);
  return unary(UnaryOp::clamp, x, lo, hi);
}
Tensor square(const Tensor& x) { return mul(x, x); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  KILN_CHECK(cond.dtype() == DType::bool_, DTypeError, "where: condition must be bool, got ", dtype_name(cond.dtype()));
  DType t = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor ac = a.to(t), bc = b.to(t);
  Tensor out = detail::empty(shape, t, a.device());
  if (out.numel())
    a.backend()->where(out.arg(), broadcast_arg(cond, shape), broadcast_arg(ac, shape), broadcast_arg(bc, shape));
  if (is_floating(t) && needs_grad({&a, &b})) record(out, OpKind::where, {ac, bc}, {}, {cond});
  return out;
}

}  // namespace kiln
