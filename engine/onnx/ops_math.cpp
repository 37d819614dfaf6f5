// Elementwise ONNX ops: arithmetic with NumPy broadcasting, comparisons, logic,
// unary math and activation functions (ONNX Operators.md; defaults quoted there).
#include <cmath>
#include <limits>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

Tensor scalar(double v, const Tensor& like) { return Tensor::scalar(v, like.dtype(), like.device()); }
Tensor as(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

// ONNX binary ops keep their inputs' type (both inputs share it); the engine promotes
// as PyTorch, so the result is cast back.
template <Tensor (*F)(const Tensor&, const Tensor&)>
std::vector<Tensor> binary_same(OpContext& c) {
  const Tensor& a = c.input(0);
  return {as(F(a, c.input(1)), a.dtype())};
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
std::vector<Tensor> compare(OpContext& c) {
  return {F(c.input(0), c.input(1))};
}

template <Tensor (*F)(const Tensor&)>
std::vector<Tensor> unary_same(OpContext& c) {
  const Tensor& x = c.input(0);
  return {as(F(x), x.dtype())};
}

// Integer division truncates toward zero (C semantics, as ONNX's reference implementation
// of Div on integers); floating division is IEEE.
std::vector<Tensor> div_op(OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (is_floating(a.dtype())) return {as(div(a, b), a.dtype())};
  return {div(a.to(DType::f64), b.to(DType::f64)).to(a.dtype())};
}

// Pow: the result has the base's type (ONNX Pow-12+); integer bases compute in f64.
std::vector<Tensor> pow_op(OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  if (is_floating(a.dtype())) return {as(pow(a, as(b, a.dtype())), a.dtype())};
  return {pow(a.to(DType::f64), b.to(DType::f64)).to(a.dtype())};
}

// Integer Mod, exact for every integer type (an f64 detour would round int64/uint64 values
// above 2^53): fmod = 1 truncates (C %, the dividend's sign), fmod = 0 floors (Python %, the
// divisor's sign). A zero divisor is a ValueError naming the node.
template <class T>
Tensor int_mod_host(OpContext& c, const Tensor& a, const Tensor& b, bool fmod) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "Mod");
  std::vector<T> x = a.expand(shape).contiguous().to_vector<T>(), y = b.expand(shape).contiguous().to_vector<T>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == T(0)) c.fail("integer division by zero (divisor element " + std::to_string(i) + ")");
    T r;
    if constexpr (std::is_signed_v<T>) {
      r = y[i] == T(-1) ? T(0) : static_cast<T>(x[i] % y[i]);  // INT_MIN % -1 would trap
      if (!fmod && r != T(0) && ((r < T(0)) != (y[i] < T(0)))) r = static_cast<T>(r + y[i]);
    } else {
      r = static_cast<T>(x[i] % y[i]);
    }
    x[i] = r;
  }
  return Tensor::from_host(x.data(), x.size(), a.dtype(), shape, a.device());
}

// Mod: fmod = 1 takes the dividend's sign (C fmod); fmod = 0 the divisor's (Python %),
// integers only.
std::vector<Tensor> mod_op(OpContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  int64_t fmod = c.attr_int("fmod", 0);
  if (fmod == 0 && is_floating(a.dtype())) c.fail("fmod = 0 is only defined for integer inputs");
  if (!is_floating(a.dtype())) {
    Tensor bb = as(b, a.dtype());
    switch (a.dtype()) {
      case DType::i8: return {int_mod_host<int8_t>(c, a, bb, fmod != 0)};
      case DType::i16: return {int_mod_host<int16_t>(c, a, bb, fmod != 0)};
      case DType::i32: return {int_mod_host<int32_t>(c, a, bb, fmod != 0)};
      case DType::i64: return {int_mod_host<int64_t>(c, a, bb, fmod != 0)};
      case DType::u8: return {int_mod_host<uint8_t>(c, a, bb, fmod != 0)};
      case DType::u16: return {int_mod_host<uint16_t>(c, a, bb, fmod != 0)};
      case DType::u32: return {int_mod_host<uint32_t>(c, a, bb, fmod != 0)};
      case DType::u64: return {int_mod_host<uint64_t>(c, a, bb, fmod != 0)};
      default: c.fail(std::string("not defined for ") + dtype_name(a.dtype()) + " inputs");
    }
  }
  Tensor x = a.to(DType::f64), y = b.to(DType::f64);
  Tensor q = div(x, y);
  Tensor t = mul(sign(q), floor(abs(q)));
  return {sub(x, mul(t, y)).to(a.dtype())};
}

std::vector<Tensor> variadic(OpContext& c, Tensor (*f)(const Tensor&, const Tensor&), bool mean_of) {
  if (c.num_inputs() == 0) c.fail("needs at least one input");
  Tensor acc = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = f(acc, c.input(i));
  if (mean_of) acc = div(acc, scalar(static_cast<double>(c.num_inputs()), acc));
  return {as(acc, c.input(0).dtype())};
}

std::vector<Tensor> clip_op(OpContext& c) {
  Tensor x = c.input(0);
  if (c.opset() < 11) {
    double lo = c.attr_float("min", -std::numeric_limits<double>::infinity());
    double hi = c.attr_float("max", std::numeric_limits<double>::infinity());
    return {clamp(x, lo, hi)};
  }
  if (c.has_input(1)) x = maximum(x, as(c.input(1), x.dtype()).reshape({}));
  if (c.has_input(2)) x = minimum(x, as(c.input(2), x.dtype()).reshape({}));
  return {as(x, c.input(0).dtype())};
}

std::vector<Tensor> cast_op(OpContext& c) {
  DType to = dtype_of_onnx(static_cast<int32_t>(c.attr_int("to")), c.where() + " attribute 'to'");
  return {c.input(0).to(to)};
}

// Elementwise math the engine does not have, on the host (a clearly named fallback).
template <double (*F)(double)>
std::vector<Tensor> host_unary(OpContext& c) {
  const Tensor& x = c.input(0);
  std::vector<double> v = host_doubles(x);
  for (double& e : v) e = F(e);
  return {from_doubles(v, x.shape(), x.dtype(), x.device())};
}
double d_asin(double x) { return std::asin(x); }
double d_acos(double x) { return std::acos(x); }
double d_atan(double x) { return std::atan(x); }
double d_sinh(double x) { return std::sinh(x); }
double d_cosh(double x) { return std::cosh(x); }
double d_asinh(double x) { return std::asinh(x); }
double d_acosh(double x) { return std::acosh(x); }
double d_atanh(double x) { return std::atanh(x); }
double d_tan(double x) { return std::tan(x); }

Tensor elu(const Tensor& x, double alpha) {
  return where(gt(x, scalar(0, x)), x, mul(scalar(alpha, x), expm1(x)));
}
Tensor softplus(const Tensor& x) {  // log(1 + exp(x)) without overflow
  return add(log1p(exp(neg(abs(x)))), maximum(x, scalar(0, x)));
}
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  return clamp(add(mul(x, scalar(alpha, x)), scalar(beta, x)), 0.0, 1.0);
}

void add_activations(OpTable& t) {
  t["Relu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {is_floating(x.dtype()) ? relu(x) : maximum(x, scalar(0, x))};
  };
  t["LeakyRelu"] = [](OpContext& c) -> std::vector<Tensor> {
    return {leaky_relu(c.input(0), c.attr_float("alpha", 0.01))};
  };
  t["Elu"] = [](OpContext& c) -> std::vector<Tensor> { return {elu(c.input(0), c.attr_float("alpha", 1.0))}; };
  t["Selu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    double alpha = c.attr_float("alpha", 1.67326319217681884765625);
    double gamma = c.attr_float("gamma", 1.05070102214813232421875);
    return {mul(elu(x, alpha), scalar(gamma, x))};
  };
  t["Celu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    double alpha = c.attr_float("alpha", 1.0);
    Tensor neg_part = mul(scalar(alpha, x), expm1(div(x, scalar(alpha, x))));
    return {add(maximum(x, scalar(0, x)), minimum(neg_part, scalar(0, x)))};
  };
  t["Sigmoid"] = unary_same<sigmoid>;
  t["Tanh"] = unary_same<tanh>;
  t["HardSigmoid"] = [](OpContext& c) -> std::vector<Tensor> {
    return {hard_sigmoid(c.input(0), c.attr_float("alpha", 0.2), c.attr_float("beta", 0.5))};
  };
  // x * max(0, min(1, x / 6 + 1 / 2)) (ONNX HardSwish-14) = x * min(max(x + 3, 0), 6) / 6: the
  // engine's one-pass hardswish (torch.nn.functional.hardswish)
  t["HardSwish"] = unary_same<hardswish>;
  t["Softplus"] = [](OpContext& c) -> std::vector<Tensor> { return {softplus(c.input(0))}; };
  t["Softsign"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {div(x, add(abs(x), scalar(1, x)))};
  };
  t["Mish"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {mul(x, tanh(softplus(x)))};
  };
  t["ThresholdedRelu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    return {where(gt(x, scalar(c.attr_float("alpha", 1.0), x)), x, scalar(0, x))};
  };
  t["PRelu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    Tensor slope = as(c.input(1), x.dtype());
    // PRelu-1..6 exports (PyTorch's older converter) give one slope per channel, [C], for
    // [N, C, ...]; shape it to broadcast along dim 1 when NumPy broadcasting would not fit.
    if (slope.dim() == 1 && x.dim() >= 2 && slope.size(0) == x.size(1) && slope.size(0) != x.size(-1)) {
      Shape s(static_cast<size_t>(x.dim() - 1), 1);
      s[0] = slope.size(0);
      slope = slope.reshape(s);
    }
    return {where(lt(x, scalar(0, x)), mul(x, slope), x)};
  };
  t["Gelu"] = [](OpContext& c) -> std::vector<Tensor> {
    return {gelu(c.input(0), c.attr_string("approximate", "none"))};
  };
  t["Shrink"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    double lambd = c.attr_float("lambd", 0.5), bias = c.attr_float("bias", 0.0);
    Tensor xf = x.to(DType::f64);
    Tensor lo = where(lt(xf, scalar(-lambd, xf)), add(xf, scalar(bias, xf)), scalar(0, xf));
    return {where(gt(xf, scalar(lambd, xf)), sub(xf, scalar(bias, xf)), lo).to(x.dtype())};
  };
}

}  // namespace

void register_math_ops(OpTable& t) {
  t["Add"] = binary_same<add>;
  t["Sub"] = binary_same<sub>;
  t["Mul"] = binary_same<mul>;
  t["Div"] = div_op;
  t["Pow"] = pow_op;
  t["Mod"] = mod_op;
  t["Max"] = [](OpContext& c) { return variadic(c, maximum, false); };
  t["Min"] = [](OpContext& c) { return variadic(c, minimum, false); };
  t["Sum"] = [](OpContext& c) { return variadic(c, add, false); };
  t["Mean"] = [](OpContext& c) { return variadic(c, add, true); };
  t["Equal"] = compare<eq>;
  t["Greater"] = compare<gt>;
  t["Less"] = compare<lt>;
  t["GreaterOrEqual"] = compare<ge>;
  t["LessOrEqual"] = compare<le>;
  t["And"] = compare<logical_and>;
  t["Or"] = compare<logical_or>;
  t["Xor"] = [](OpContext& c) -> std::vector<Tensor> { return {ne(c.input(0), c.input(1))}; };
  t["Not"] = [](OpContext& c) -> std::vector<Tensor> { return {logical_not(c.input(0))}; };
  t["Abs"] = unary_same<abs>;
  t["Neg"] = unary_same<neg>;
  t["Sign"] = unary_same<sign>;
  t["Exp"] = unary_same<exp>;
  t["Log"] = unary_same<log>;
  t["Sqrt"] = unary_same<sqrt>;
  t["Reciprocal"] = unary_same<reciprocal>;
  t["Floor"] = unary_same<floor>;
  t["Ceil"] = unary_same<ceil>;
  t["Round"] = unary_same<round>;
  t["Sin"] = unary_same<sin>;
  t["Cos"] = unary_same<cos>;
  t["Erf"] = unary_same<erf>;
  t["Tan"] = host_unary<d_tan>;
  t["Asin"] = host_unary<d_asin>;
  t["Acos"] = host_unary<d_acos>;
  t["Atan"] = host_unary<d_atan>;
  t["Sinh"] = host_unary<d_sinh>;
  t["Cosh"] = host_unary<d_cosh>;
  t["Asinh"] = host_unary<d_asinh>;
  t["Acosh"] = host_unary<d_acosh>;
  t["Atanh"] = host_unary<d_atanh>;
  t["IsNaN"] = [](OpContext& c) -> std::vector<Tensor> { return {ne(c.input(0), c.input(0))}; };
  t["IsInf"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    bool pos = c.attr_int("detect_positive", 1) != 0, negative = c.attr_int("detect_negative", 1) != 0;
    Tensor inf = scalar(std::numeric_limits<double>::infinity(), x);
    Tensor p = eq(x, inf), n = eq(x, neg(inf));
    if (pos && negative) return {logical_or(p, n)};
    if (pos) return {p};
    if (negative) return {n};
    return {logical_and(p, n)};
  };
  t["Clip"] = clip_op;
  t["Cast"] = cast_op;
  t["CastLike"] = [](OpContext& c) -> std::vector<Tensor> { return {c.input(0).to(c.input(1).dtype())}; };
  t["Where"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& a = c.input(1);
    return {as(where(c.input(0), a, c.input(2)), a.dtype())};
  };
  add_activations(t);
}

}  // namespace kiln::onnx
