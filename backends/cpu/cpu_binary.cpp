// CpuBackend::binary: every BinaryOp on every dtype (see Note [CPU kernel structure]).
// Integer arithmetic wraps; integer div truncates toward zero and throws ValueError on a
// zero divisor; maximum/minimum propagate NaN (torch.maximum).
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

template <class C> inline constexpr bool is_fp_v = std::is_floating_point_v<C>;
template <class C>
using uint_t = std::make_unsigned_t<std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>>;

template <class C>
KILN_INLINE C pick(bool c, C a, C b) {
  if constexpr (is_fp_v<C>) return sel(c, a, b);
  else return c ? a : b;
}

struct Add {
  template <class C>
  KILN_INLINE C operator()(C a, C b) const {
    if constexpr (is_fp_v<C>) return a + b;
    else if constexpr (std::is_same_v<C, bool>) return a || b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) + static_cast<uint_t<C>>(b));
  }
};
struct Sub {
  template <class C>
  KILN_INLINE C operator()(C a, C b) const {
    if constexpr (is_fp_v<C>) return a - b;
    else if constexpr (std::is_same_v<C, bool>) return a != b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) - static_cast<uint_t<C>>(b));
  }
};
struct Mul {
  template <class C>
  KILN_INLINE C operator()(C a, C b) const {
    if constexpr (is_fp_v<C>) return a * b;
    else if constexpr (std::is_same_v<C, bool>) return a && b;
    else return static_cast<C>(static_cast<uint_t<C>>(a) * static_cast<uint_t<C>>(b));
  }
};
struct Div {  // integer divisors were checked for zero before
  template <class C>
  KILN_INLINE C operator()(C a, C b) const {
    if constexpr (is_fp_v<C>) {
      return a / b;
    } else if constexpr (std::is_same_v<C, bool> || std::is_unsigned_v<C>) {
      return static_cast<C>(a / (b ? b : C(1)));
    } else {  // b == -1 negates (INT_MIN / -1 would trap)
      return b == C(-1) ? static_cast<C>(C(0) - static_cast<uint_t<C>>(a)) : static_cast<C>(a / (b ? b : C(1)));
    }
  }
};
struct Pow {
  template <class C>
  KILN_INLINE C operator()(C a, C b) const {
    if constexpr (is_fp_v<C>) {
      return std::pow(a, b);
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
  KILN_INLINE C operator()(C a, C b) const { return pick((a > b) | (a != a), a, b); }
};
struct Minimum {
  template <class C>
  KILN_INLINE C operator()(C a, C b) const { return pick((a < b) | (a != a), a, b); }
};
#define KILN_CMP_OP(Name, expr)                                      \
  struct Name {                                                      \
    template <class C>                                               \
    KILN_INLINE bool operator()(C a, C b) const { return expr; }     \
  };
KILN_CMP_OP(Eq, a == b)
KILN_CMP_OP(Ne, a != b)
KILN_CMP_OP(Lt, a < b)
KILN_CMP_OP(Le, a <= b)
KILN_CMP_OP(Gt, a > b)
KILN_CMP_OP(Ge, a >= b)
KILN_CMP_OP(LogicalAnd, (a != C(0)) & (b != C(0)))
KILN_CMP_OP(LogicalOr, (a != C(0)) | (b != C(0)))
#undef KILN_CMP_OP

// out (O) = op(a, b) with a, b of type T; the common broadcasts get their own loops.
template <class T, class O, class Op>
struct BinaryKernel {
  int64_t so, sa, sb;  // inner strides, bytes
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    using C = compute_t<T>;
    Op op;
    constexpr int64_t es = sizeof(T), eo = sizeof(O);
    if (so == eo) {
      O* __restrict o = reinterpret_cast<O*>(p[0]);  // o may equal a or b (in place)
      const T* __restrict a = reinterpret_cast<const T*>(p[1]);
      const T* __restrict b = reinterpret_cast<const T*>(p[2]);
      if (sa == es && sb == es) {
        for (int64_t i = 0; i < n; ++i) o[i] = O(op(C(a[i]), C(b[i])));
        return;
      }
      if (sa == es && sb == 0) {
        C bv = C(b[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = O(op(C(a[i]), bv));
        return;
      }
      if (sa == 0 && sb == es) {
        C av = C(a[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = O(op(av, C(b[i])));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(p[0] + i * so) =
          O(op(C(*reinterpret_cast<const T*>(p[1] + i * sa)), C(*reinterpret_cast<const T*>(p[2] + i * sb))));
  }
};

template <class T>
struct AnyZero {
  int64_t s;
  bool found = false;
  KILN_INLINE void operator()(char* const* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) found |= *reinterpret_cast<const T*>(p[0] + i * s) == T(0);
  }
};

template <class Op, bool to_bool>
void run_binary(const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  auto it = make_iter<3>(out.shape, {&out, &a, &b});
  if (it.numel == 0) return;
  visit_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<to_bool, bool, T>;
    if constexpr (std::is_same_v<Op, Div> && !is_fp_v<compute_t<T>>) {
      auto bit = make_iter<1>(out.shape, {&b});
      AnyZero<T> z{bit.inner_stride(0)};
      bit.run(0, bit.numel, z);
      KILN_CHECK(!z.found, ValueError, "div: integer division by zero (", dtype_name(a.dtype), " ",
                 shape_str(out.shape), ")");
    }
    BinaryKernel<T, O, Op> k{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2)};
    launch<multiversion_v<T>>(it, k, std::is_same_v<Op, Pow> ? kGrain / 16 : kGrain);
  });
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  const char* name = binary_op_name(op);
  check_shape(name, "a", a, out.shape);
  check_shape(name, "b", b, out.shape);
  KILN_CHECK(a.dtype == b.dtype, DTypeError, name, ": operands have dtypes ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype));
  DType want = is_comparison(op) ? DType::bool_ : a.dtype;
  KILN_CHECK(out.dtype == want, DTypeError, name, ": output is ", dtype_name(out.dtype), ", expected ",
             dtype_name(want));
  switch (op) {
    case BinaryOp::add: return run_binary<Add, false>(out, a, b);
    case BinaryOp::sub: return run_binary<Sub, false>(out, a, b);
    case BinaryOp::mul: return run_binary<Mul, false>(out, a, b);
    case BinaryOp::div: return run_binary<Div, false>(out, a, b);
    case BinaryOp::pow: return run_binary<Pow, false>(out, a, b);
    case BinaryOp::maximum: return run_binary<Maximum, false>(out, a, b);
    case BinaryOp::minimum: return run_binary<Minimum, false>(out, a, b);
    case BinaryOp::eq: return run_binary<Eq, true>(out, a, b);
    case BinaryOp::ne: return run_binary<Ne, true>(out, a, b);
    case BinaryOp::lt: return run_binary<Lt, true>(out, a, b);
    case BinaryOp::le: return run_binary<Le, true>(out, a, b);
    case BinaryOp::gt: return run_binary<Gt, true>(out, a, b);
    case BinaryOp::ge: return run_binary<Ge, true>(out, a, b);
    case BinaryOp::logical_and: return run_binary<LogicalAnd, true>(out, a, b);
    case BinaryOp::logical_or: return run_binary<LogicalOr, true>(out, a, b);
    case BinaryOp::count: break;
  }
  throw ValueError(detail::str_cat("binary: unknown op ", static_cast<int>(op)));
}

}  // namespace kiln::cpu
