// CpuBackend::relu_backward: grad_in = grad_out where out > 0, else 0, in one pass over
// the three tensors (the composed rule, mul(g, gt(y, 0).to(g's dtype)), makes three passes
// and two temporaries). Any strides (Note [CPU kernel structure]); f32 and bf16 compiled
// per ISA level. The comparison is out > 0 in float, so NaN and -0 give 0, as the composed rule.
// Also CpuBackend::bernoulli.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"
#include "engine/core/splitmix.h"

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

// CpuBackend::bernoulli (backend.h): the counter-based draw of engine/core/splitmix.h, filled in
// parallel; the same elements on any number of threads.
namespace kiln::cpu {
namespace {
template <class T>
void fill_bernoulli(T* out, int64_t n, uint64_t key, uint64_t threshold, T value) {
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = bernoulli_keeps(key, static_cast<uint64_t>(i), threshold) ? value : T(0);
}
}  // namespace

void CpuBackend::bernoulli(const TensorArg& out, uint64_t key, uint64_t threshold, double value) {
  KILN_CHECK(out.is_contiguous(), ValueError, "bernoulli: the output must be contiguous");
  const int64_t n = out.numel();
  if (out.dtype == DType::f32)
    return fill_bernoulli(static_cast<float*>(out.data) + out.offset, n, key, threshold, static_cast<float>(value));
  if (out.dtype == DType::f64) return fill_bernoulli(static_cast<double*>(out.data) + out.offset, n, key, threshold, value);
  throw DTypeError(detail::str_cat("bernoulli: no ", dtype_name(out.dtype), " kernel on the CPU (f32 and f64)"));
}

}  // namespace kiln::cpu
