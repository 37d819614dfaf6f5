// CpuBackend::relu_backward: grad_in = grad_out where out > 0, else 0, in one pass over
// the three tensors (the composed rule, mul(g, gt(y, 0).to(g's dtype)), makes three passes
// and two temporaries). Any strides (Note [CPU kernel structure]); f32 and bf16 compiled
// per ISA level. The comparison is out > 0 in float, so NaN and -0 give 0, as the composed rule.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

template <class T>
struct ReluBackwardKernel {
  int64_t so, sg, sy;  // inner strides, bytes
  KILN_INLINE void operator()(char* const* p, int64_t n) const {
    using C = compute_t<T>;
    constexpr int64_t es = sizeof(T);
    if (so == es && sg == es && sy == es) {
      T* __restrict o = reinterpret_cast<T*>(p[0]);  // o may equal g (in place)
      const T* __restrict g = reinterpret_cast<const T*>(p[1]);
      const T* __restrict y = reinterpret_cast<const T*>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = T(sel(C(y[i]) > C(0), C(g[i]), C(0)));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const C y = C(*reinterpret_cast<const T*>(p[2] + i * sy));
      *reinterpret_cast<T*>(p[0] + i * so) = T(y > C(0) ? C(*reinterpret_cast<const T*>(p[1] + i * sg)) : C(0));
    }
  }
};

}  // namespace

void CpuBackend::relu_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out) {
  check_shape("relu_backward", "grad_out", grad_out, grad_in.shape);
  check_shape("relu_backward", "out", out, grad_in.shape);
  KILN_CHECK(grad_out.dtype == grad_in.dtype && out.dtype == grad_in.dtype, DTypeError, "relu_backward: dtypes ",
             dtype_name(grad_in.dtype), ", ", dtype_name(grad_out.dtype), " and ", dtype_name(out.dtype), " differ");
  auto it = make_iter<3>(grad_in.shape, {&grad_in, &grad_out, &out});
  if (it.numel == 0) return;
  switch (grad_in.dtype) {
    case DType::f32:
      return launch<true>(it, ReluBackwardKernel<float>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2)});
    case DType::bf16:
      return launch<true>(it, ReluBackwardKernel<bfloat16>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2)});
    case DType::f16:
      return launch<false>(it, ReluBackwardKernel<half>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2)});
    case DType::f64:
      return launch<false>(it, ReluBackwardKernel<double>{it.inner_stride(0), it.inner_stride(1), it.inner_stride(2)});
    default:
      break;
  }
  throw DTypeError(detail::str_cat("relu_backward: no ", dtype_name(grad_in.dtype),
                                   " kernel on the CPU (floating types only)"));
}

}  // namespace kiln::cpu
