// The test row of every unary elementwise op (engine/core/elementwise_ops.def): its value in
// double, the tolerance of an f32 kernel against it, and the input range for gradient
// checks. The CPU kernel test, gradcheck and backend-ops --mode=grad all read this table, and
// TEST(UnaryOpCases, CoverEveryOp) fails for an op without a row.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <limits>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/ops.h"

namespace kiln::op_cases {

struct UnaryOpCase {
  UnaryOp op;
  double p0, p1;                                  // Backend::unary's scalar parameters
  double (*ref)(double x, double p0, double p1);  // the exact value
  double rtol, atol;                              // f32 kernel vs ref (rounded to f32)
  double low = -2, high = 2;                      // gradient-check inputs: uniform in [low, high]
};

inline const std::vector<UnaryOpCase>& unary_op_cases() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  using U = UnaryOp;
  static const std::vector<UnaryOpCase> cases = {
      {U::neg, 0, 0, [](double x, double, double) { return -x; }, 0, 0},
      {U::abs, 0, 0, [](double x, double, double) { return std::fabs(x); }, 0, 0},
      {U::sign, 0, 0, [](double x, double, double) { return double((0 < x) - (x < 0)); }, 0, 0},
      {U::exp, 0, 0, [](double x, double, double) { return std::exp(x); }, 3e-7, 1e-45},
      {U::log, 0, 0, [](double x, double, double) { return std::log(x); }, 3e-7, 1e-45, 0.5, 3},
      {U::log1p, 0, 0, [](double x, double, double) { return std::log1p(x); }, 3e-7, 1e-45, 0, 3},
      {U::expm1, 0, 0, [](double x, double, double) { return std::expm1(x); }, 3e-7, 1e-45},
      {U::sqrt, 0, 0, [](double x, double, double) { return std::sqrt(x); }, 1e-7, 0, 0.5, 3},
      {U::rsqrt, 0, 0, [](double x, double, double) { return 1 / std::sqrt(x); }, 2e-7, 0, 0.5, 3},
      {U::reciprocal, 0, 0, [](double x, double, double) { return 1 / x; }, 1e-7, 0, 0.5, 3},
      {U::sin, 0, 0, [](double x, double, double) { return std::sin(x); }, 3e-7, 1e-45},
      {U::cos, 0, 0, [](double x, double, double) { return std::cos(x); }, 3e-7, 1e-45},
      {U::tanh, 0, 0, [](double x, double, double) { return std::tanh(x); }, 4e-7, 1e-45},
      // 1 / (1 + exp(-x)) flushes to 0 below x = -88.7 (as torch's): absolute tolerance there.
      {U::sigmoid, 0, 0, [](double x, double, double) { return 1 / (1 + std::exp(-x)); }, 4e-7, 4e-38},
      {U::relu, 0, 0, [](double x, double, double) { return x < 0 ? 0.0 : x; }, 0, 0},
      // float gelu = 0.5x(1+erf) cancels for x << 0 (as torch's): absolute tolerance.
      {U::gelu, 0, 0, [](double x, double, double) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 4e-7, 2e-7},
      {U::silu, 0, 0, [](double x, double, double) { return x / (1 + std::exp(-x)); }, 4e-7, 4e-36},
      {U::erf, 0, 0, [](double x, double, double) { return std::erf(x); }, 4e-7, 1e-45},
      {U::floor, 0, 0, [](double x, double, double) { return std::floor(x); }, 0, 0},
      {U::ceil, 0, 0, [](double x, double, double) { return std::ceil(x); }, 0, 0},
      {U::round, 0, 0, [](double x, double, double) { return std::nearbyint(x); }, 0, 0},
      {U::logical_not, 0, 0, [](double x, double, double) { return x == 0 ? 1.0 : 0.0; }, 0, 0},
      // torch rounds scalar parameters to the tensor's dtype first (0.1f, 1.7f).
      {U::leaky_relu, 0.1, 0, [](double x, double s, double) { return x > 0 ? x : x * float(s); }, 1e-7, 1e-45},
      {U::clamp, -1, 2, [](double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }, 0, 0, -3, 3},
      {U::clamp, -kInf, 0.5, [](double x, double, double hi) { return x > hi ? hi : x; }, 0, 0},
      {U::pow_scalar, 2, 0, [](double x, double, double) { return x * x; }, 1e-7, 1e-45},
      {U::pow_scalar, 3, 0, [](double x, double, double) { return x * x * x; }, 3e-7, 1e-45},
      {U::pow_scalar, 0.5, 0, [](double x, double, double) { return std::sqrt(x); }, 1e-7, 0, 0.5, 3},
      {U::pow_scalar, -1, 0, [](double x, double, double) { return 1 / x; }, 1e-7, 0, 0.5, 3},
      {U::pow_scalar, 0, 0, [](double, double, double) { return 1.0; }, 0, 0},
      {U::pow_scalar, 1.7, 0, [](double x, double p, double) { return std::pow(x, double(float(p))); }, 3e-7, 1e-45, 0.5, 3},
      {U::hardswish, 0, 0, [](double x, double, double) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }, 3e-7, 1e-45, -5, 5},
      {U::hardsigmoid, 0, 0, [](double x, double, double) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }, 3e-7, 1e-45, -5, 5},
  };
  return cases;
}

// Whether the op records an autograd node (the def's `grad`).
inline bool unary_op_differentiable(UnaryOp op) {
  static const bool grad[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) grad != 0,
#include "engine/core/elementwise_ops.def"
  };
  return grad[static_cast<int>(op)];
}

// "exp"; with the parameters of ops that take them, as an identifier (GoogleTest parameter
// names): "clamp_m1_2", "pow_scalar_0p5", "clamp_minf_0p5".
inline std::string case_name(const UnaryOpCase& c) {
  std::string n = unary_op_name(c.op);
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    std::string t;
    for (const char* p = b; *p; ++p) t += *p == '-' ? 'm' : *p == '.' ? 'p' : *p;
    return t;
  };
  // append(): GCC 12's -Wrestrict misfires on "_" + std::string
  if (c.op == UnaryOp::leaky_relu || c.op == UnaryOp::pow_scalar || c.op == UnaryOp::clamp) n.append("_").append(num(c.p0));
  if (c.op == UnaryOp::clamp) n.append("_").append(num(c.p1));
  return n;
}

// The front-end function of a case: kiln::exp(x), kiln::clamp(x, p0, p1), ...
inline Tensor apply_unary(const UnaryOpCase& c, const Tensor& x) {
  using Fn = Tensor (*)(const Tensor&);
#define KILN_PLAIN_1(name) static_cast<Fn>(&kiln::name),
#define KILN_PLAIN_0(name) nullptr,
  static const Fn plain[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_PLAIN_##plain(name)
#include "engine/core/elementwise_ops.def"
  };
#undef KILN_PLAIN_1
#undef KILN_PLAIN_0
  switch (c.op) {
    case UnaryOp::gelu: return gelu(x);
    case UnaryOp::leaky_relu: return leaky_relu(x, c.p0);
    case UnaryOp::clamp: return clamp(x, c.p0, c.p1);
    case UnaryOp::pow_scalar: return pow(x, c.p0);
    default: return plain[static_cast<int>(c.op)](x);
  }
}

}  // namespace kiln::op_cases
