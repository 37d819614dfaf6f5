// CudaBackend::softmax_forward / softmax_backward (log_softmax too) along one dim of a
// contiguous tensor. Rows are [outer, inner] pairs with the dim's D elements `inner` apart;
// a group of G threads takes a row: a warp (or a block when D is long) for inner == 1,
// one thread otherwise (neighbouring threads take neighbouring inner positions). f16/bf16
// compute in float, f64 in double. Forward: max, then sum of exp(x - max) (the stable
// form); backward: softmax  dx = y (dy - sum(dy y)),  log_softmax  dx = dy - exp(y) sum(dy).
#include <cmath>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

template <int G, class A, class F>
__device__ __forceinline__ A group_all(A v, A* shared, F f) {
  if constexpr (G == 1) {
    return v;
  } else {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, m));
    if constexpr (G == 32) {
      return v;
    } else {
      __syncthreads();
      if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
      __syncthreads();
      A t = shared[0];
      for (int w = 1; w < G / 32; ++w) t = f(t, shared[w]);
      return t;
    }
  }
}

struct MaxF {
  template <class A>
  __device__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};
struct SumF {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

template <class T, int G>
__global__ void softmax_fwd(int64_t rows, int64_t D, int64_t inner, const T* __restrict__ in, T* __restrict__ out,
                            bool log) {
  using A = acc_t<T>;
  __shared__ A shared[G >= 32 ? G / 32 : 1];
  const int64_t groups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  const int lane = threadIdx.x % G;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G; o < rows; o += groups) {
    const int64_t base = (o / inner) * D * inner + o % inner;
    const T* x = in + base;
    T* y = out + base;
    A mx = -INFINITY;
    for (int64_t d = lane; d < D; d += G) mx = MaxF{}(mx, static_cast<A>(x[d * inner]));
    mx = group_all<G>(mx, shared, MaxF{});
    if (isinf(mx) && mx < 0) mx = 0;  // a row of -inf: exp(-inf - 0) = 0, as torch gives nan below
    A sum = 0;
    for (int64_t d = lane; d < D; d += G) sum += exp(static_cast<A>(x[d * inner]) - mx);
    sum = group_all<G>(sum, shared, SumF{});
    if (log) {
      const A lse = mx + ::log(sum);
      for (int64_t d = lane; d < D; d += G) y[d * inner] = convert<T>(static_cast<A>(x[d * inner]) - lse);
    } else {
      const A inv = A(1) / sum;
      for (int64_t d = lane; d < D; d += G) y[d * inner] = convert<T>(exp(static_cast<A>(x[d * inner]) - mx) * inv);
    }
  }
}

template <class T, int G>
__global__ void softmax_bwd(int64_t rows, int64_t D, int64_t inner, const T* __restrict__ gout,
                            const T* __restrict__ out, T* __restrict__ gin, bool log) {
  using A = acc_t<T>;
  __shared__ A shared[G >= 32 ? G / 32 : 1];
  const int64_t groups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  const int lane = threadIdx.x % G;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G; o < rows; o += groups) {
    const int64_t base = (o / inner) * D * inner + o % inner;
    const T* g = gout + base;
    const T* y = out + base;
    T* dx = gin + base;
    A s = 0;
    for (int64_t d = lane; d < D; d += G)
      s += log ? static_cast<A>(g[d * inner]) : static_cast<A>(g[d * inner]) * static_cast<A>(y[d * inner]);
    s = group_all<G>(s, shared, SumF{});
    for (int64_t d = lane; d < D; d += G) {
      const A gv = static_cast<A>(g[d * inner]), yv = static_cast<A>(y[d * inner]);
      dx[d * inner] = convert<T>(log ? gv - exp(yv) * s : yv * (gv - s));
    }
  }
}

struct Geometry {
  int64_t rows, D, inner;
};

Geometry geometry(const char* op, const TensorArg& t, int64_t dim) {
  const int64_t rank = static_cast<int64_t>(t.shape.size());
  if (dim < 0) dim += std::max<int64_t>(rank, 1);  // -1 is the last dim
  KILN_CHECK(dim >= 0 && dim < std::max<int64_t>(rank, 1), IndexError, op, ": dim ", dim, " is out of range for shape ",
             shape_str(t.shape));
  KILN_CHECK(t.is_contiguous(), ValueError, op, ": tensor must be contiguous (shape ", shape_str(t.shape), ")");
  Geometry g{1, rank ? t.shape[dim] : 1, 1};
  for (int64_t d = 0; d < rank; ++d) {
    if (d < dim) g.rows *= t.shape[d];
    if (d > dim) g.inner *= t.shape[d];
  }
  g.rows *= g.inner;
  return g;
}

}  // namespace

void CudaBackend::softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) {
  ProfileScope prof_(stream_, "softmax_forward", in);
  const char* op = log ? "log_softmax" : "softmax";
  KILN_CHECK(in.shape == out.shape && in.dtype == out.dtype, ShapeError, op, ": output ", args_str({&out}),
             " does not match input ", args_str({&in}));
  const Geometry g = geometry(op, in, dim);
  if (out.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_FLOAT(in.dtype, op, {
    const T* x = ptr<const T>(in);
    T* y = ptr<T>(out);
    if (g.inner > 1) softmax_fwd<T, 1><<<grid_for(g.rows), kThreads, 0, stream_>>>(g.rows, g.D, g.inner, x, y, log);
    else if (g.D > 1024 && g.rows < 8 * prop_.multiProcessorCount)
      softmax_fwd<T, 256><<<static_cast<unsigned>(g.rows), 256, 0, stream_>>>(g.rows, g.D, g.inner, x, y, log);
    else softmax_fwd<T, 32><<<grid_for(g.rows * 32), kThreads, 0, stream_>>>(g.rows, g.D, g.inner, x, y, log);
  });
  check_launch(op, in.shape);
}

void CudaBackend::softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out,
                                   int64_t dim, bool log) {
  ProfileScope prof_(stream_, "softmax_backward", grad_out);
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  for (const TensorArg* t : {&grad_out, &out})
    KILN_CHECK(t->shape == grad_in.shape && t->dtype == grad_in.dtype, ShapeError, op, ": ", args_str({t}),
               " does not match the input gradient ", args_str({&grad_in}));
  const Geometry g = geometry(op, grad_in, dim);
  geometry(op, grad_out, dim);
  geometry(op, out, dim);
  if (grad_in.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_FLOAT(grad_in.dtype, op, {
    const T* go = ptr<const T>(grad_out);
    const T* y = ptr<const T>(out);
    T* gi = ptr<T>(grad_in);
    if (g.inner > 1)
      softmax_bwd<T, 1><<<grid_for(g.rows), kThreads, 0, stream_>>>(g.rows, g.D, g.inner, go, y, gi, log);
    else if (g.D > 1024 && g.rows < 8 * prop_.multiProcessorCount)
      softmax_bwd<T, 256><<<static_cast<unsigned>(g.rows), 256, 0, stream_>>>(g.rows, g.D, g.inner, go, y, gi, log);
    else softmax_bwd<T, 32><<<grid_for(g.rows * 32), kThreads, 0, stream_>>>(g.rows, g.D, g.inner, go, y, gi, log);
  });
  check_launch(op, grad_in.shape);
}

}  // namespace kiln::cuda
