// CudaBackend::binary: every BinaryOp on every dtype, the CPU backend's semantics
// (backends/cpu/cpu_binary.cpp): integer arithmetic wraps; integer div truncates toward
// zero and throws ValueError on a zero divisor; maximum/minimum propagate NaN.
#include <cmath>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

template <class C> inline constexpr bool fp_v = std::is_floating_point_v<C>;
template <class C>
using uint_t = std::make_unsigned_t<std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>>;

struct Add {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (fp_v<C>) return a + b;
    else if constexpr (std::is_same_v<C, bool>) return a || b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) + static_cast<uint_t<C>>(b));
  }
};
struct Sub {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (fp_v<C>) return a - b;
    else if constexpr (std::is_same_v<C, bool>) return a != b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) - static_cast<uint_t<C>>(b));
  }
};
struct Mul {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (fp_v<C>) return a * b;
    else if constexpr (std::is_same_v<C, bool>) return a && b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) * static_cast<uint_t<C>>(b));
  }
};
struct Div {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (fp_v<C>) return a / b;
    else if constexpr (std::is_same_v<C, bool> || std::is_unsigned_v<C>) return static_cast<C>(a / (b ? b : C(1)));
    else return b == C(-1) ? static_cast<C>(C(0) - static_cast<uint_t<C>>(a)) : static_cast<C>(a / (b ? b : C(1)));
  }
};
struct Pow {
  template <class C>
  __device__ C operator()(C a, C b) const {
    if constexpr (fp_v<C>) {
      return pow(a, b);
    } else {
      int64_t e = static_cast<int64_t>(b);
      if (e < 0) {
        if (a == C(1)) return C(1);
        if constexpr (std::is_signed_v<C>)
          if (a == C(-1)) return (e & 1) ? C(-1) : C(1);
        return C(0);
      }
      uint_t<C> r = 1, x = static_cast<uint_t<C>>(a);
      for (; e; e >>= 1) {
        if (e & 1) r = static_cast<uint_t<C>>(r * x);
        x = static_cast<uint_t<C>>(x * x);
      }
      return static_cast<C>(r);
    }
  }
};
struct Maximum {
  template <class C>
  __device__ C operator()(C a, C b) const { return (a > b || a != a) ? a : b; }
};
struct Minimum {
  template <class C>
  __device__ C operator()(C a, C b) const { return (a < b || a != a) ? a : b; }
};
#define KILN_CMP(Name, expr)                                             \
  struct Name {                                                          \
    template <class C>                                                   \
    __device__ bool operator()(C a, C b) const { return expr; }          \
  };
KILN_CMP(Eq, a == b)
KILN_CMP(Ne, a != b)
KILN_CMP(Lt, a < b)
KILN_CMP(Le, a <= b)
KILN_CMP(Gt, a > b)
KILN_CMP(Ge, a >= b)
KILN_CMP(LogicalAnd, (a != C(0)) && (b != C(0)))
KILN_CMP(LogicalOr, (a != C(0)) || (b != C(0)))
#undef KILN_CMP

template <class T, class O, class Op>
void launch_binary(cudaStream_t s, const char* name, const TensorArg& out, const TensorArg& a, const TensorArg& b,
                   Op op) {
  O* o = ptr<O>(out);
  const T* x = ptr<const T>(a);
  const T* y = ptr<const T>(b);
  if (launch_vectorized(name, s, out, o,
                        [=] __device__(T p, T q) {
                          using C = acc_t<T>;
                          return convert<O>(op(convert<C>(p), convert<C>(q)));
                        },
                        {&a, &b}, x, y))
    return;
  launch_elementwise<3>(name, s, out.shape, {&out.strides, &a.strides, &b.strides},
                        [=] __device__(const int64_t(&off)[3]) {
                          using C = acc_t<T>;
                          o[off[0]] = convert<O>(op(convert<C>(x[off[1]]), convert<C>(y[off[2]])));
                        });
}

template <class Op, bool to_bool>
void run_binary(cudaStream_t s, const char* name, const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  KILN_CUDA_DISPATCH_ALL(a.dtype, name, {
    using O = std::conditional_t<to_bool, bool, T>;
    launch_binary<T, O>(s, name, out, a, b, Op{});
  });
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  ProfileScope prof_(stream_, binary_op_name(op), a);
  const char* name = binary_op_name(op);
  for (const TensorArg* t : {&a, &b})
    KILN_CHECK(t->shape == out.shape && t->strides.size() == out.shape.size(), ShapeError, name, ": input has shape ",
               shape_str(t->shape), ", expected ", shape_str(out.shape));
  KILN_CHECK(a.dtype == b.dtype, DTypeError, name, ": inputs have dtypes ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  const DType want = is_comparison(op) ? DType::bool_ : a.dtype;
  KILN_CHECK(out.dtype == want, DTypeError, name, ": output dtype ", dtype_name(out.dtype), ", expected ",
             dtype_name(want));
  if (out.numel() == 0) return;
  make_current();
  if (op == BinaryOp::div && !is_floating(a.dtype)) {  // a zero divisor is an error, as on the CPU
    int64_t* flag = check_buffer();
    KILN_CUDA_DISPATCH_ALL(b.dtype, name, {
      const T* y = ptr<const T>(b);
      launch_elementwise<1>(name, stream_, b.shape, {&b.strides}, [=] __device__(const int64_t(&off)[1]) {
        if (y[off[0]] == T(0)) flag[0] = 1;
      });
    });
    KILN_CHECK(read_check()[0] == 0, ValueError, "div: integer division by zero (", dtype_name(a.dtype), " ",
               shape_str(out.shape), ")");
  }
  const cudaStream_t s = stream_;
  switch (op) {
    case BinaryOp::add: return run_binary<Add, false>(s, name, out, a, b);
    case BinaryOp::sub: return run_binary<Sub, false>(s, name, out, a, b);
    case BinaryOp::mul: return run_binary<Mul, false>(s, name, out, a, b);
    case BinaryOp::div: return run_binary<Div, false>(s, name, out, a, b);
    case BinaryOp::pow: return run_binary<Pow, false>(s, name, out, a, b);
    case BinaryOp::maximum: return run_binary<Maximum, false>(s, name, out, a, b);
    case BinaryOp::minimum: return run_binary<Minimum, false>(s, name, out, a, b);
    case BinaryOp::eq: return run_binary<Eq, true>(s, name, out, a, b);
    case BinaryOp::ne: return run_binary<Ne, true>(s, name, out, a, b);
    case BinaryOp::lt: return run_binary<Lt, true>(s, name, out, a, b);
    case BinaryOp::le: return run_binary<Le, true>(s, name, out, a, b);
    case BinaryOp::gt: return run_binary<Gt, true>(s, name, out, a, b);
    case BinaryOp::ge: return run_binary<Ge, true>(s, name, out, a, b);
    case BinaryOp::logical_and: return run_binary<LogicalAnd, true>(s, name, out, a, b);
    case BinaryOp::logical_or: return run_binary<LogicalOr, true>(s, name, out, a, b);
    case BinaryOp::count: break;
  }
  throw ValueError(detail::str_cat("binary: unknown op ", static_cast<int>(op)));
}

}  // namespace kiln::cuda
