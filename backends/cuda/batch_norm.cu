// CudaBackend::batch_norm_forward / batch_norm_backward: training-mode batch norm over a
// contiguous [N, C, *] input (S = prod(*), M = N * S values per channel) in three launches
// each way, with f32 statistics whatever the input's dtype (bf16 and f16 read and write
// their own type, as cuDNN's and PyTorch's batch norm under autocast):
//   1. partial sums: C x P blocks, block (c, p) sums a run of rows n of channel c
//      (forward: x - K and (x - K)^2 with the shift K = the channel's first value, so the
//      variance does not cancel; backward: dy and dy * (x - mean)), 4 values per load
//      where S allows it;
//   2. per channel: the P partials in double -> mean, invstd, running stats (forward) or
//      grad_weight, grad_bias (backward), and the 2 or 3 coefficients of step 3;
//   3. elementwise: y = x * scale + shift, or grad_x = a * dy + b * x + c.
// Formulas: backend.h (PyTorch's batch_norm / batch_norm_backward).
#include <algorithm>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

// Sums a and b over the block (256 threads); thread 0 gets the totals.
__device__ __forceinline__ void block_sum2(float& a, float& b) {
  __shared__ float sh[2][kThreads / 32];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, m);
    b += __shfl_xor_sync(0xffffffffu, b, m);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[0][warp] = a, sh[1][warp] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    a = 0, b = 0;
    for (int w = 0; w < kThreads / 32; ++w) a += sh[0][w], b += sh[1][w];
  }
}

// Step 1. part[(c * P + p) * 2 + {0, 1}].
template <class T, int V, bool BWD>
__global__ void __launch_bounds__(kThreads) bn_partial(const T* __restrict__ x, const T* __restrict__ dy,
                                                        const float* __restrict__ mean, int64_t C, int64_t S,
                                                        int64_t N, int64_t rows, int P, float* __restrict__ part) {
  const int64_t c = blockIdx.x / P, p = blockIdx.x % P;
  const int64_t n0 = p * rows, n1 = n0 + rows < N ? n0 + rows : N;
  const float k = BWD ? mean[c] : convert<float>(x[c * S]);
  float a = 0, b = 0;
  const int64_t packs = (n1 - n0) * S / V;
  for (int64_t q = threadIdx.x; q < packs; q += kThreads) {
    const int64_t j = q * V, n = n0 + j / S, s = j % S;
    const int64_t i = (n * C + c) * S + s;
    const Pack<T, V> px = *reinterpret_cast<const Pack<T, V>*>(x + i);
    if constexpr (BWD) {
      const Pack<T, V> pg = *reinterpret_cast<const Pack<T, V>*>(dy + i);
#pragma unroll
      for (int u = 0; u < V; ++u) {
        const float g = convert<float>(pg.v[u]);
        a += g;
        b += g * (convert<float>(px.v[u]) - k);
      }
    } else {
#pragma unroll
      for (int u = 0; u < V; ++u) {
        const float d = convert<float>(px.v[u]) - k;
        a += d;
        b += d * d;
      }
    }
  }
  block_sum2(a, b);
  if (threadIdx.x == 0) part[blockIdx.x * 2] = a, part[blockIdx.x * 2 + 1] = b;
}

// Step 2 of the forward. coef[c] = scale, coef[C + c] = shift.
template <class T>
__global__ void bn_forward_stats(const T* __restrict__ x, const float* __restrict__ part, int64_t C, int64_t S,
                                 int P, double M, double eps, double momentum, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ rm, float* __restrict__ rv,
                                 float* __restrict__ save_mean, float* __restrict__ save_invstd,
                                 float* __restrict__ coef) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  double s1 = 0, s2 = 0;
  for (int p = 0; p < P; ++p) s1 += part[(c * P + p) * 2], s2 += part[(c * P + p) * 2 + 1];
  const double k = convert<float>(x[c * S]);
  const double mean = k + s1 / M;
  const double var = fmax(0.0, (s2 - s1 * s1 / M) / M);
  const double invstd = 1.0 / sqrt(var + eps);
  save_mean[c] = static_cast<float>(mean);
  save_invstd[c] = static_cast<float>(invstd);
  const double scale = (w ? w[c] : 1.0) * invstd;
  coef[c] = static_cast<float>(scale);
  coef[C + c] = static_cast<float>((b ? b[c] : 0.0) - mean * scale);
  if (rm) rm[c] = static_cast<float>((1 - momentum) * rm[c] + momentum * mean);
  if (rv) rv[c] = static_cast<float>((1 - momentum) * rv[c] + momentum * var * M / (M - 1));
}

// Step 2 of the backward. coef[c], coef[C + c], coef[2C + c]: grad_x = a * dy + b * x + c.
__global__ void bn_backward_stats(const float* __restrict__ part, int64_t C, int P, double M,
                                  const float* __restrict__ w, const float* __restrict__ mean,
                                  const float* __restrict__ invstd, float* __restrict__ gw, float* __restrict__ gb,
                                  float* __restrict__ coef) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  double sg = 0, sgx = 0;  // sum(dy), sum(dy * (x - mean))
  for (int p = 0; p < P; ++p) sg += part[(c * P + p) * 2], sgx += part[(c * P + p) * 2 + 1];
  const double is = invstd[c], mu = mean[c];
  if (gw) gw[c] = static_cast<float>(sgx * is);
  if (gb) gb[c] = static_cast<float>(sg);
  const double a = (w ? w[c] : 1.0) * is;
  const double t = is * is * sgx / M;
  coef[c] = static_cast<float>(a);
  coef[C + c] = static_cast<float>(-a * t);
  coef[2 * C + c] = static_cast<float>(a * (t * mu - sg / M));
}

// Step 3: out = coef[c] * (BWD ? dy : x) + (BWD ? coef[C + c] * x : 0) + coef[(BWD ? 2 : 1) * C + c].
template <class T, int V, bool BWD>
__global__ void __launch_bounds__(kThreads) bn_apply(const T* __restrict__ x, const T* __restrict__ dy,
                                                      T* __restrict__ out, const float* __restrict__ coef,
                                                      int64_t C, int64_t S, int64_t packs) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < packs; q += step) {
    const int64_t i = q * V, c = (i / S) % C;
    const Pack<T, V> px = *reinterpret_cast<const Pack<T, V>*>(x + i);
    Pack<T, V> po;
    if constexpr (BWD) {
      const Pack<T, V> pg = *reinterpret_cast<const Pack<T, V>*>(dy + i);
      const float a = coef[c], b = coef[C + c], k = coef[2 * C + c];
#pragma unroll
      for (int u = 0; u < V; ++u)
        po.v[u] = convert<T>(a * convert<float>(pg.v[u]) + b * convert<float>(px.v[u]) + k);
    } else {
      const float a = coef[c], k = coef[C + c];
#pragma unroll
      for (int u = 0; u < V; ++u) po.v[u] = convert<T>(a * convert<float>(px.v[u]) + k);
    }
    *reinterpret_cast<Pack<T, V>*>(out + i) = po;
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

const float* fptr(const TensorArg& t) { return t.data ? ptr<const float>(t) : nullptr; }
float* fptr_mut(const TensorArg& t) { return t.data ? ptr<float>(t) : nullptr; }

struct Geometry {
  int64_t N, C, S, M, rows;
  int P;
};

Geometry geometry(const TensorArg& x, int sms, const char* op) {
  KILN_CHECK(x.shape.size() >= 2 && x.is_contiguous(), ShapeError, op, ": expected a contiguous [N, C, *] input, got ",
             shape_str(x.shape));
  Geometry g;
  g.N = x.shape[0], g.C = x.shape[1], g.S = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) g.S *= x.shape[d];
  g.M = g.N * g.S;
  // About 8 blocks per SM in all, each at least ~4096 values of its channel.
  const int64_t want = (8 * static_cast<int64_t>(sms) + g.C - 1) / g.C;
  const int64_t by_size = std::max<int64_t>(1, g.M / 4096);
  g.P = static_cast<int>(std::clamp<int64_t>(std::min(want, by_size), 1, g.N));
  g.rows = (g.N + g.P - 1) / g.P;
  g.P = static_cast<int>((g.N + g.rows - 1) / g.rows);
  return g;
}

void check_stat(const TensorArg& t, int64_t C, const char* op, const char* what) {
  if (!t.data) return;
  KILN_CHECK(t.dtype == DType::f32 && t.numel() == C && t.is_contiguous(), DTypeError, op, ": ", what,
             " must be a contiguous f32 [", C, "], got ", shape_str(t.shape), " ", dtype_name(t.dtype));
}

// f(T{}) with T the device type of f32, f16 or bf16; DTypeError for other dtypes.
template <class F>
void low_float_dispatch(DType t, const char* op, const std::string& dev, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f16: return f(f16_t{});
    case DType::bf16: return f(bf16_t{});
    default: break;
  }
  throw DTypeError(detail::str_cat(op, ": dtype ", dtype_name(t), " is not supported on ", dev,
                                   " (f32, f16 and bf16 are)"));
}

}  // namespace

void CudaBackend::batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                     const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                                     const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                                     double eps) {
  ProfileScope prof_(stream_, "batch_norm_forward", x);
  const char* op = "batch_norm_forward";
  const Geometry g = geometry(x, prop_.multiProcessorCount, op);
  KILN_CHECK(y.dtype == x.dtype && y.shape == x.shape && y.is_contiguous(), DTypeError, op, ": output ",
             args_str({&y}), " does not match input ", args_str({&x}));
  for (const TensorArg* t : {&save_mean, &save_invstd, &weight, &bias, &running_mean, &running_var})
    check_stat(*t, g.C, op, "a per-channel tensor");
  KILN_CHECK(save_mean.data && save_invstd.data, ValueError, op, ": save_mean and save_invstd are required");
  if (x.numel() == 0) return;
  make_current();
  Scratch part(*this, static_cast<size_t>(g.C) * g.P * 2 * sizeof(float));
  Scratch coef(*this, static_cast<size_t>(g.C) * 2 * sizeof(float));
  float* pp = static_cast<float*>(part.get());
  float* cp = static_cast<float*>(coef.get());
  const unsigned cblocks = static_cast<unsigned>((g.C + kThreads - 1) / kThreads);
  low_float_dispatch(x.dtype, op, name(), [&](auto tag) {
    using T = decltype(tag);
    {
      const T* xp = ptr<const T>(x);
      T* yp = ptr<T>(y);
      const bool vec = g.S % 4 == 0 && aligned(xp, 4 * sizeof(T)) && aligned(yp, 4 * sizeof(T));
      const unsigned blocks = static_cast<unsigned>(g.C * g.P);
      if (vec) bn_partial<T, 4, false><<<blocks, kThreads, 0, stream_>>>(xp, nullptr, nullptr, g.C, g.S, g.N, g.rows, g.P, pp);
      else bn_partial<T, 1, false><<<blocks, kThreads, 0, stream_>>>(xp, nullptr, nullptr, g.C, g.S, g.N, g.rows, g.P, pp);
      bn_forward_stats<T><<<cblocks, kThreads, 0, stream_>>>(
          xp, pp, g.C, g.S, g.P, static_cast<double>(g.M), eps, momentum, fptr(weight), fptr(bias),
          fptr_mut(running_mean), fptr_mut(running_var), fptr_mut(save_mean), fptr_mut(save_invstd), cp);
      const int64_t packs = x.numel() / (vec ? 4 : 1);
      if (vec) bn_apply<T, 4, false><<<grid_for(packs), kThreads, 0, stream_>>>(xp, nullptr, yp, cp, g.C, g.S, packs);
      else bn_apply<T, 1, false><<<grid_for(packs), kThreads, 0, stream_>>>(xp, nullptr, yp, cp, g.C, g.S, packs);
    }
  });
  check_launch(op, x.shape);
}

void CudaBackend::batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight,
                                      const TensorArg& grad_bias, const TensorArg& grad_y, const TensorArg& x,
                                      const TensorArg& weight, const TensorArg& save_mean,
                                      const TensorArg& save_invstd) {
  ProfileScope prof_(stream_, "batch_norm_backward", x);
  const char* op = "batch_norm_backward";
  const Geometry g = geometry(x, prop_.multiProcessorCount, op);
  KILN_CHECK(grad_y.dtype == x.dtype && grad_y.shape == x.shape && grad_y.is_contiguous(), DTypeError, op,
             ": grad_y ", args_str({&grad_y}), " does not match input ", args_str({&x}));
  KILN_CHECK(!grad_x.data || (grad_x.dtype == x.dtype && grad_x.shape == x.shape && grad_x.is_contiguous()),
             DTypeError, op, ": grad_x ", args_str({&grad_x}), " does not match input ", args_str({&x}));
  for (const TensorArg* t : {&grad_weight, &grad_bias, &weight, &save_mean, &save_invstd})
    check_stat(*t, g.C, op, "a per-channel tensor");
  KILN_CHECK(save_mean.data && save_invstd.data, ValueError, op, ": save_mean and save_invstd are required");
  if (x.numel() == 0) return;
  make_current();
  Scratch part(*this, static_cast<size_t>(g.C) * g.P * 2 * sizeof(float));
  Scratch coef(*this, static_cast<size_t>(g.C) * 3 * sizeof(float));
  float* pp = static_cast<float*>(part.get());
  float* cp = static_cast<float*>(coef.get());
  const unsigned cblocks = static_cast<unsigned>((g.C + kThreads - 1) / kThreads);
  low_float_dispatch(x.dtype, op, name(), [&](auto tag) {
    using T = decltype(tag);
    {
      const T* xp = ptr<const T>(x);
      const T* gyp = ptr<const T>(grad_y);
      T* gxp = grad_x.data ? ptr<T>(grad_x) : nullptr;
      const size_t al = 4 * sizeof(T);
      const bool vec = g.S % 4 == 0 && aligned(xp, al) && aligned(gyp, al) && (!gxp || aligned(gxp, al));
      const unsigned blocks = static_cast<unsigned>(g.C * g.P);
      const float* mp = fptr(save_mean);
      if (vec) bn_partial<T, 4, true><<<blocks, kThreads, 0, stream_>>>(xp, gyp, mp, g.C, g.S, g.N, g.rows, g.P, pp);
      else bn_partial<T, 1, true><<<blocks, kThreads, 0, stream_>>>(xp, gyp, mp, g.C, g.S, g.N, g.rows, g.P, pp);
      bn_backward_stats<<<cblocks, kThreads, 0, stream_>>>(pp, g.C, g.P, static_cast<double>(g.M), fptr(weight), mp,
                                                           fptr(save_invstd), fptr_mut(grad_weight),
                                                           fptr_mut(grad_bias), cp);
      if (gxp) {
        const int64_t packs = x.numel() / (vec ? 4 : 1);
        if (vec) bn_apply<T, 4, true><<<grid_for(packs), kThreads, 0, stream_>>>(xp, gyp, gxp, cp, g.C, g.S, packs);
        else bn_apply<T, 1, true><<<grid_for(packs), kThreads, 0, stream_>>>(xp, gyp, gxp, cp, g.C, g.S, packs);
      }
    }
  });
  check_launch(op, x.shape);
}

}  // namespace kiln::cuda
