// CudaBackend::unary: every UnaryOp on every dtype, the CPU backend's semantics
// (backends/cpu/cpu_unary.cpp): f16/bf16 compute in float; float-only functions on
// integer or bool outputs compute in an f64 copy and convert back (saturating).
#include <cmath>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

template <class C> inline constexpr bool fp_v = std::is_floating_point_v<C>;
template <class C>
using uint_t = std::make_unsigned_t<std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>>;

#define KILN_FLOAT_FN(Name, expr)                                         \
  struct Name {                                                           \
    template <class C>                                                    \
    __device__ __forceinline__ C operator()(C x) const { return expr; }   \
  };
KILN_FLOAT_FN(Exp, exp(x))
KILN_FLOAT_FN(Log, log(x))
KILN_FLOAT_FN(Log1p, log1p(x))
KILN_FLOAT_FN(Expm1, expm1(x))
KILN_FLOAT_FN(Sqrt, sqrt(x))
KILN_FLOAT_FN(Rsqrt, C(1) / sqrt(x))
KILN_FLOAT_FN(Reciprocal, C(1) / x)
KILN_FLOAT_FN(Sin, sin(x))
KILN_FLOAT_FN(Cos, cos(x))
KILN_FLOAT_FN(Tanh, tanh(x))
KILN_FLOAT_FN(Sigmoid, C(1) / (C(1) + exp(-x)))
KILN_FLOAT_FN(Silu, x / (C(1) + exp(-x)))
KILN_FLOAT_FN(Gelu, C(0.5) * x * (C(1) + erf(x * C(0.70710678118654752440))))
KILN_FLOAT_FN(Erf, erf(x))
// torch's order of operations: x * min(max(x + 3, 0), 6) / 6, NaN kept.
KILN_FLOAT_FN(Hardswish, x * (x + C(3) < C(0) ? C(0) : (x + C(3) > C(6) ? C(6) : x + C(3))) / C(6))
KILN_FLOAT_FN(Hardsigmoid, (x + C(3) < C(0) ? C(0) : (x + C(3) > C(6) ? C(6) : x + C(3))) / C(6))
#undef KILN_FLOAT_FN

template <class C>
__device__ __forceinline__ C int_pow(C base, int64_t e) {
  if (e < 0) {
    if (base == C(1)) return C(1);
    if constexpr (std::is_signed_v<C>)
      if (base == C(-1)) return (e & 1) ? C(-1) : C(1);
    return C(0);
  }
  uint_t<C> r = 1, b = static_cast<uint_t<C>>(base);
  for (; e; e >>= 1) {
    if (e & 1) r = static_cast<uint_t<C>>(r * b);
    b = static_cast<uint_t<C>>(b * b);
  }
  return static_cast<C>(r);
}

struct Neg {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return -x;
    else if constexpr (std::is_same_v<C, bool>) return x;
    else return static_cast<C>(0 - static_cast<uint_t<C>>(x));
  }
};
struct Abs {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return fabs(x);
    else if constexpr (std::is_signed_v<C>) return x < 0 ? Neg{}(x) : x;
    else return x;
  }
};
struct Sign {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return static_cast<C>(x != C(0));
    else return static_cast<C>(static_cast<int>(C(0) < x) - static_cast<int>(x < C(0)));
  }
};
struct Relu {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else return x < C(0) ? C(0) : x;
  }
};
struct Floor {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return floor(x);
    else return x;
  }
};
struct Ceil {
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return ceil(x);
    else return x;
  }
};
struct Round {  // half to even
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return rint(x);
    else return x;
  }
};
struct LogicalNot {
  template <class C>
  __device__ C operator()(C x) const { return static_cast<C>(x == C(0)); }
};
struct LeakyRelu {
  double slope;
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) return x > C(0) ? x : x * static_cast<C>(slope);
    else return x > C(0) ? x : convert<C>(static_cast<double>(x) * slope);
  }
};
struct Clamp {
  double lo, hi;
  template <class C>
  __device__ C operator()(C x) const {
    const C l = convert<C>(lo), h = convert<C>(hi);
    C r = x < l ? l : x;
    return r > h ? h : r;
  }
};
struct PowScalar {
  double p;
  template <class C>
  __device__ C operator()(C x) const {
    if constexpr (fp_v<C>) {
      if (p == 2.0) return x * x;
      if (p == 3.0) return x * x * x;
      return pow(x, static_cast<C>(p));
    } else {
      if (p == trunc(p) && fabs(p) < 9.2e18) return int_pow(x, static_cast<int64_t>(p));
      return convert<C>(pow(static_cast<double>(x), p));
    }
  }
};

template <class Op> struct float_only : std::false_type {};
#define KILN_FLOAT_ONLY(Name) template <> struct float_only<Name> : std::true_type {};
KILN_FLOAT_ONLY(Exp) KILN_FLOAT_ONLY(Log) KILN_FLOAT_ONLY(Log1p) KILN_FLOAT_ONLY(Expm1) KILN_FLOAT_ONLY(Sqrt)
KILN_FLOAT_ONLY(Rsqrt) KILN_FLOAT_ONLY(Reciprocal) KILN_FLOAT_ONLY(Sin) KILN_FLOAT_ONLY(Cos) KILN_FLOAT_ONLY(Tanh)
KILN_FLOAT_ONLY(Sigmoid) KILN_FLOAT_ONLY(Silu) KILN_FLOAT_ONLY(Gelu) KILN_FLOAT_ONLY(Erf) KILN_FLOAT_ONLY(Hardswish) KILN_FLOAT_ONLY(Hardsigmoid)
#undef KILN_FLOAT_ONLY

template <class T, class Op>
void launch_unary(cudaStream_t s, const char* name, const TensorArg& out, const TensorArg& in, Op op) {
  T* o = ptr<T>(out);
  const T* a = ptr<const T>(in);
  if (launch_vectorized(name, s, out, o, [=] __device__(T x) { return convert<T>(op(convert<acc_t<T>>(x))); }, {&in},
                        a))
    return;
  launch_elementwise<2>(name, s, out.shape, {&out.strides, &in.strides}, [=] __device__(const int64_t(&off)[2]) {
    o[off[0]] = convert<T>(op(convert<acc_t<T>>(a[off[1]])));
  });
}

template <class Op>
void run_unary(cudaStream_t s, const char* name, const TensorArg& out, const TensorArg& in, Op op) {
  if constexpr (float_only<Op>::value) {
    KILN_CUDA_DISPATCH_FLOAT(out.dtype, name, launch_unary<T>(s, name, out, in, op));
  } else {
    KILN_CUDA_DISPATCH_ALL(out.dtype, name, launch_unary<T>(s, name, out, in, op));
  }
}

}  // namespace

void CudaBackend::unary(UnaryOp op, const TensorArg& out, const TensorArg& in_arg, double p0, double p1) {
  ProfileScope prof_(stream_, unary_op_name(op), in_arg);
  const char* name = unary_op_name(op);
  KILN_CHECK(in_arg.shape == out.shape && in_arg.strides.size() == out.shape.size(), ShapeError, name, ": input has shape ",
             shape_str(in_arg.shape), ", expected ", shape_str(out.shape));
  if (out.numel() == 0) return;
  make_current();
  if (op == UnaryOp::logical_not && out.dtype == DType::bool_ && in_arg.dtype != DType::bool_) {
    bool* o = ptr<bool>(out);
    KILN_CUDA_DISPATCH_ALL(in_arg.dtype, name, {
      const T* a = ptr<const T>(in_arg);
      launch_elementwise<2>(name, stream_, out.shape, {&out.strides, &in_arg.strides},
                            [=] __device__(const int64_t(&off)[2]) { o[off[0]] = !convert<bool>(a[off[1]]); });
    });
    return;
  }
  if (is_floating_only(op) && !is_floating(out.dtype)) {  // exp of ints &c.: through f64
    Scratch buf(*this, static_cast<size_t>(out.numel()) * sizeof(double));
    TensorArg tmp = scratch_arg(buf, DType::f64, out.shape);
    copy(tmp, in_arg);
    unary(op, tmp, tmp, p0, p1);
    return copy(out, tmp);
  }
  const TensorArg& in = out.dtype == in_arg.dtype ? in_arg : out;  // mixed dtypes compute in out's
  if (&in == &out) copy(out, in_arg);
  const cudaStream_t s = stream_;
  switch (op) {
    case UnaryOp::neg: return run_unary(s, name, out, in, Neg{});
    case UnaryOp::abs: return run_unary(s, name, out, in, Abs{});
    case UnaryOp::sign: return run_unary(s, name, out, in, Sign{});
    case UnaryOp::exp: return run_unary(s, name, out, in, Exp{});
    case UnaryOp::log: return run_unary(s, name, out, in, Log{});
    case UnaryOp::log1p: return run_unary(s, name, out, in, Log1p{});
    case UnaryOp::expm1: return run_unary(s, name, out, in, Expm1{});
    case UnaryOp::sqrt: return run_unary(s, name, out, in, Sqrt{});
    case UnaryOp::rsqrt: return run_unary(s, name, out, in, Rsqrt{});
    case UnaryOp::reciprocal: return run_unary(s, name, out, in, Reciprocal{});
    case UnaryOp::sin: return run_unary(s, name, out, in, Sin{});
    case UnaryOp::cos: return run_unary(s, name, out, in, Cos{});
    case UnaryOp::tanh: return run_unary(s, name, out, in, Tanh{});
    case UnaryOp::sigmoid: return run_unary(s, name, out, in, Sigmoid{});
    case UnaryOp::relu: return run_unary(s, name, out, in, Relu{});
    case UnaryOp::gelu: return run_unary(s, name, out, in, Gelu{});
    case UnaryOp::silu: return run_unary(s, name, out, in, Silu{});
    case UnaryOp::hardswish: return run_unary(s, name, out, in, Hardswish{});
    case UnaryOp::hardsigmoid: return run_unary(s, name, out, in, Hardsigmoid{});
    case UnaryOp::erf: return run_unary(s, name, out, in, Erf{});
    case UnaryOp::floor: return run_unary(s, name, out, in, Floor{});
    case UnaryOp::ceil: return run_unary(s, name, out, in, Ceil{});
    case UnaryOp::round: return run_unary(s, name, out, in, Round{});
    case UnaryOp::logical_not: return run_unary(s, name, out, in, LogicalNot{});
    case UnaryOp::leaky_relu: return run_unary(s, name, out, in, LeakyRelu{p0});
    case UnaryOp::clamp: return run_unary(s, name, out, in, Clamp{p0, p1});
    case UnaryOp::pow_scalar:
      if (p0 == 0.0) return fill(out, 1.0);  // torch: x ** 0 == 1, nan included
      if (p0 == 1.0) return &in == &out ? void() : copy(out, in);
      return run_unary(s, name, out, in, PowScalar{p0});
    case UnaryOp::count: break;
  }
  throw ValueError(detail::str_cat("unary: unknown op ", static_cast<int>(op)));
}

}  // namespace kiln::cuda
