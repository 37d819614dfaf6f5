// CpuBackend::unary: every UnaryOp on every dtype (see Note [CPU kernel structure]).
// f16/bf16 compute in float; float-only functions (exp, sin ...) on integer or bool
// inputs compute in double and saturate back (the front end promotes those to float).
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"
#include "backends/cpu/vec_math.h"

namespace kiln::cpu {
namespace {

template <class C> inline constexpr bool is_fp_v = std::is_floating_point_v<C>;
template <class C> inline constexpr bool is_sint_v = std::is_signed_v<C> && !is_fp_v<C>;

// torch's hardswish, in its order of operations: x * min(max(x + 3, 0), 6) / 6 (NaN stays NaN).
template <class T>
KILN_INLINE T hardswish_of(T x) {
  T t = x + T(3);
  t = t < T(0) ? T(0) : t;
  t = t > T(6) ? T(6) : t;
  return x * t / T(6);
}

// torch's hardsigmoid: min(max(x + 3, 0), 6) / 6 (NaN stays NaN).
template <class T>
KILN_INLINE T hardsigmoid_of(T x) {
  T t = x + T(3);
  t = t < T(0) ? T(0) : t;
  t = t > T(6) ? T(6) : t;
  return t / T(6);
}

// A float function: f32 (and f16/bf16) run `f32`, f64 runs `f64`; integer and bool
// inputs are computed in an f64 copy (CpuBackend::unary), so only float types instantiate.
#define KILN_FLOAT_OP(Name, cost, f32, f64)                      \
  struct Name {                                                  \
    static constexpr int64_t grain = kGrain / (cost);            \
    static constexpr bool float_only = true;                     \
    KILN_INLINE float operator()(float x) const { return f32; }  \
    KILN_INLINE double operator()(double x) const { return f64; } \
  };
KILN_FLOAT_OP(Exp, 8, exp_f(x), std::exp(x))
KILN_FLOAT_OP(Log, 8, log_f(x), std::log(x))
KILN_FLOAT_OP(Log1p, 16, std::log1p(x), std::log1p(x))
KILN_FLOAT_OP(Expm1, 16, std::expm1(x), std::expm1(x))
KILN_FLOAT_OP(Sqrt, 4, std::sqrt(x), std::sqrt(x))
KILN_FLOAT_OP(Rsqrt, 4, 1.0f / std::sqrt(x), 1.0 / std::sqrt(x))
KILN_FLOAT_OP(Reciprocal, 1, 1.0f / x, 1.0 / x)
KILN_FLOAT_OP(Sin, 16, std::sin(x), std::sin(x))
KILN_FLOAT_OP(Cos, 16, std::cos(x), std::cos(x))
KILN_FLOAT_OP(Tanh, 8, tanh_f(x), std::tanh(x))
KILN_FLOAT_OP(Sigmoid, 8, sigmoid_f(x), 1.0 / (1.0 + std::exp(-x)))
KILN_FLOAT_OP(Silu, 8, silu_f(x), x / (1.0 + std::exp(-x)))
KILN_FLOAT_OP(Gelu, 8, gelu_f(x), 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)))
KILN_FLOAT_OP(Erf, 8, erf_f(x), std::erf(x))
KILN_FLOAT_OP(Hardswish, 1, hardswish_of(x), hardswish_of(x))
KILN_FLOAT_OP(Hardsigmoid, 1, hardsigmoid_of(x), hardsigmoid_of(x))
#undef KILN_FLOAT_OP

// Integer power by squaring (wrapping); negative exponents as torch: 1, +-1 or 0.
template <class C>
KILN_INLINE C int_pow(C base, int64_t e) {
  if (e < 0) {
    if (base == C(1)) return C(1);
    if constexpr (is_sint_v<C>)
      if (base == C(-1)) return (e & 1) ? C(-1) : C(1);
    return C(0);
  }
  using U = std::make_unsigned_t<std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>>;
  U r = 1, b = static_cast<U>(base);
  for (; e; e >>= 1) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<C>(r);
}

// pow(x, p) for a scalar exponent p that is not a special case (0, 0.5, 1, 2, ...).
struct PowScalar {
  static constexpr int64_t grain = kGrain / 16;
  double p;
  KILN_INLINE float operator()(float x) const { return std::pow(x, static_cast<float>(p)); }
  KILN_INLINE double operator()(double x) const { return std::pow(x, p); }
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if (p == std::trunc(p) && std::fabs(p) < 9.2e18) return int_pow(x, static_cast<int64_t>(p));
    return scalar_as<C>(std::pow(static_cast<double>(x), p));
  }
};

struct Neg {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return -x;
    else if constexpr (std::is_same_v<C, bool>) return x;
    else return static_cast<C>(0 - static_cast<std::make_unsigned_t<C>>(x));
  }
};
struct Abs {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return std::fabs(x);
    else if constexpr (is_sint_v<C>) return x < 0 ? Neg{}(x) : x;
    else return x;
  }
};
struct Sign {  // sign(nan) = 0, as torch
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return static_cast<C>(x != C(0));
    else return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
  }
};
struct Relu {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else return x < C(0) ? C(0) : x;  // keeps nan
  }
};
struct Square {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return x * x;
    else return int_pow(x, 2);
  }
};
struct Cube {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return x * x * x;
    else return int_pow(x, 3);
  }
};
// floor and ceil through nearbyint, which vectorizes (floor needs -fno-trapping-math).
struct Floor {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) {
      C r = std::nearbyint(x);
      return sel(r > x, r - C(1), r);
    } else {
      return x;
    }
  }
};
struct Ceil {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) {
      C r = std::nearbyint(x);
      return sel(r < x, r + C(1), r);
    } else {
      return x;
    }
  }
};
struct Round {  // half to even
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return std::nearbyint(x);
    else return x;
  }
};
struct LogicalNot {
  static constexpr int64_t grain = kGrain;
  template <class C>
  KILN_INLINE C operator()(C x) const { return static_cast<C>(x == C(0)); }
};
struct LeakyRelu {
  static constexpr int64_t grain = kGrain;
  double slope;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    if constexpr (is_fp_v<C>) return sel(x > C(0), x, x * static_cast<C>(slope));
    else return x > C(0) ? x : scalar_as<C>(static_cast<double>(x) * slope);
  }
};
struct Clamp {  // min then max, so min > max gives max everywhere (torch); keeps nan
  static constexpr int64_t grain = kGrain;
  double lo, hi;
  template <class C>
  KILN_INLINE C operator()(C x) const {
    C l = scalar_as<C>(lo), h = scalar_as<C>(hi);
    if constexpr (is_fp_v<C>) {
      C r = sel(x < l, l, x);
      return sel(r > h, h, r);
    } else {
      C r = x < l ? l : x;
      return r > h ? h : r;
    }
  }
};

template <class T, class Op>
struct UnaryKernel {
  Op op;
  int64_t so, si;  // inner strides, bytes
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    using C = compute_t<T>;
    if (so == sizeof(T) && si == sizeof(T)) {
      T* __restrict o = reinterpret_cast<T*>(p[0]);  // o == a (in place) is fine elementwise
      const T* __restrict a = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = T(op(C(a[i])));
    } else if (si == 0) {
      T v = T(op(C(*reinterpret_cast<const T*>(p[1]))));
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * so) = v;
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * so) = T(op(C(*reinterpret_cast<const T*>(p[1] + i * si))));
    }
  }
};

template <class In>
struct NotToBoolKernel {
  int64_t so, si;
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<bool*>(p[0] + i * so) = compute_t<In>(*reinterpret_cast<const In*>(p[1] + i * si)) == 0;
  }
};

template <class Op> inline constexpr bool float_only_v = requires { Op::float_only; };

template <class Op>
void run_unary(const Op& op, const TensorArg& out, const TensorArg& in) {
  auto it = make_iter<2>(out.shape, {&out, &in});
  if (it.numel == 0) return;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (float_only_v<Op> && !std::is_floating_point_v<compute_t<T>>) {
      throw DTypeError("unary: float op reached an integer kernel");  // CpuBackend::unary routes these
    } else {
      UnaryKernel<T, Op> k{op, it.inner_stride(0), it.inner_stride(1)};
      launch<multiversion_v<T>>(it, k, Op::grain);
    }
  });
}

// sqrt / rsqrt of contiguous f32 through the intrinsics, one chunk per thread.
bool try_sqrt_contiguous(const TensorArg& out, const TensorArg& in, bool reciprocal) {
  if (out.dtype != DType::f32 || in.dtype != DType::f32 || !out.is_contiguous() || !in.is_contiguous()) return false;
  float* o = static_cast<float*>(out.data) + out.offset;
  const float* a = static_cast<const float*>(in.data) + in.offset;
  parallel_for(out.numel(), kGrain / 4, [&](int64_t b, int64_t e) {
    sqrt_contiguous(o + b, a + b, e - b);
    if (reciprocal)
      for (int64_t i = b; i < e; ++i) o[i] = 1.0f / o[i];
  });
  return true;
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const TensorArg& out, const TensorArg& in_arg, double p0, double p1) {
  const char* name = unary_op_name(op);
  check_shape(name, "input", in_arg, out.shape);
  if (out.numel() == 0) return;
  if (op == UnaryOp::logical_not && out.dtype == DType::bool_ && in_arg.dtype != DType::bool_) {
    auto it = make_iter<2>(out.shape, {&out, &in_arg});
    visit_dtype(in_arg.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch<false>(it, NotToBoolKernel<T>{it.inner_stride(0), it.inner_stride(1)});
    });
    return;
  }
  if (is_floating_only(op) && !is_floating(out.dtype)) {  // exp of ints &c.: through f64, then saturated back
    std::vector<double> buf(static_cast<size_t>(out.numel()));
    TensorArg tmp{buf.data(), 0, DType::f64, out.shape, contiguous_strides(out.shape)};
    copy(tmp, in_arg);
    unary(op, tmp, tmp, p0, p1);
    visit_dtype(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (double& v : buf) v = static_cast<double>(scalar_as<T>(v));
    });
    return copy(out, tmp);
  }
  // Mixed dtypes compute in out's dtype, as torch's unary ops with out=.
  const TensorArg& in = out.dtype == in_arg.dtype ? in_arg : out;
  if (&in == &out) copy(out, in_arg);

  switch (op) {
    case UnaryOp::neg: return run_unary(Neg{}, out, in);
    case UnaryOp::abs: return run_unary(Abs{}, out, in);
    case UnaryOp::sign: return run_unary(Sign{}, out, in);
    case UnaryOp::exp: return run_unary(Exp{}, out, in);
    case UnaryOp::log: return run_unary(Log{}, out, in);
    case UnaryOp::log1p: return run_unary(Log1p{}, out, in);
    case UnaryOp::expm1: return run_unary(Expm1{}, out, in);
    case UnaryOp::sqrt:
      if (try_sqrt_contiguous(out, in, false)) return;
      return run_unary(Sqrt{}, out, in);
    case UnaryOp::rsqrt:
      if (try_sqrt_contiguous(out, in, true)) return;
      return run_unary(Rsqrt{}, out, in);
    case UnaryOp::reciprocal: return run_unary(Reciprocal{}, out, in);
    case UnaryOp::sin: return run_unary(Sin{}, out, in);
    case UnaryOp::cos: return run_unary(Cos{}, out, in);
    case UnaryOp::tanh: return run_unary(Tanh{}, out, in);
    case UnaryOp::sigmoid: return run_unary(Sigmoid{}, out, in);
    case UnaryOp::relu: return run_unary(Relu{}, out, in);
    case UnaryOp::gelu: return run_unary(Gelu{}, out, in);
    case UnaryOp::silu: return run_unary(Silu{}, out, in);
    case UnaryOp::hardswish: return run_unary(Hardswish{}, out, in);
    case UnaryOp::hardsigmoid: return run_unary(Hardsigmoid{}, out, in);
    case UnaryOp::erf: return run_unary(Erf{}, out, in);
    case UnaryOp::floor: return run_unary(Floor{}, out, in);
    case UnaryOp::ceil: return run_unary(Ceil{}, out, in);
    case UnaryOp::round: return run_unary(Round{}, out, in);
    case UnaryOp::logical_not: return run_unary(LogicalNot{}, out, in);
    case UnaryOp::leaky_relu: return run_unary(LeakyRelu{p0}, out, in);
    case UnaryOp::clamp: return run_unary(Clamp{p0, p1}, out, in);
    case UnaryOp::pow_scalar:
      if (p0 == 0.0) return fill(out, 1.0);  // torch: x ** 0 == 1, nan included
      if (p0 == 1.0) return &in == &out ? void() : copy(out, in);
      if (p0 == 2.0) return run_unary(Square{}, out, in);
      if (p0 == 3.0) return run_unary(Cube{}, out, in);
      if (is_floating(out.dtype)) {
        if (p0 == 0.5) return unary(UnaryOp::sqrt, out, in, 0, 0);
        if (p0 == -0.5) return unary(UnaryOp::rsqrt, out, in, 0, 0);
        if (p0 == -1.0) return run_unary(Reciprocal{}, out, in);
      }
      return run_unary(PowScalar{p0}, out, in);
    case UnaryOp::count: break;
  }
  throw ValueError(detail::str_cat("unary: unknown op ", static_cast<int>(op)));
}

}  // namespace kiln::cpu
