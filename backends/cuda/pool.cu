// CudaBackend::max_pool2d_* and avg_pool2d_*: PyTorch's window bounds, divisors, NaN
// propagation and index of the maximum (as backends/cpu/cpu_pool.cpp). Tensors are
// [N, C, H, W] or [C, H, W] with any strides; f32, f64, f16, bf16, accumulating in float
// (double for f64). Forward: one thread per output; backward: grad_in is zeroed, then
// each output adds into its window (max: its argmax) atomically; an argmax outside the
// plane is skipped and reported as IndexError at the next wait for the device.
#include <cmath>

#include "backends/cuda/atomic.cuh"
#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

struct Geom {
  int64_t planes, C, H, W, Ho, Wo;
};

Geom geometry(const char* op, const TensorArg& in, const TensorArg& out, const Pool2dParams* p) {
  const size_t r = in.shape.size();
  KILN_CHECK((r == 3 || r == 4) && out.shape.size() == r, ShapeError, op, ": input ", shape_str(in.shape),
             " and output ", shape_str(out.shape), " must both be [N, C, H, W] or [C, H, W]");
  Geom g{1, in.shape[r - 3], in.shape[r - 2], in.shape[r - 1], out.shape[r - 2], out.shape[r - 1]};
  for (size_t d = 0; d + 2 < r; ++d) {
    KILN_CHECK(in.shape[d] == out.shape[d], ShapeError, op, ": input ", shape_str(in.shape), " and output ",
               shape_str(out.shape), " differ in batch or channels");
    g.planes *= in.shape[d];
  }
  if (p) {
    for (int i = 0; i < 2; ++i) {
      KILN_CHECK(p->kernel[i] >= 1 && p->stride[i] >= 1 && p->dilation[i] >= 1 && p->padding[i] >= 0 &&
                     2 * p->padding[i] <= (p->kernel[i] - 1) * p->dilation[i] + 1,
                 ValueError, op, ": bad kernel, stride, padding or dilation (padding is at most half the kernel)");
      const int64_t want = pooled_size(i ? g.W : g.H, p->kernel[i], p->stride[i], p->padding[i], p->dilation[i],
                                       p->ceil_mode);
      KILN_CHECK((i ? g.Wo : g.Ho) == want, ShapeError, op, ": output ", shape_str(out.shape), " of input ",
                 shape_str(in.shape), " should have size ", want, " in dim ", r - 2 + i);
    }
  }
  return g;
}

// A strided [N?, C, H, W] view: element (plane, h, w).
template <class T>
struct View {
  T* p;
  int64_t C, sn, sc, sh, sw;
  __device__ __forceinline__ T& at(int64_t plane, int64_t h, int64_t w) const {
    return p[plane / C * sn + plane % C * sc + h * sh + w * sw];
  }
};
template <class T>
View<T> view(const TensorArg& t) {
  const size_t r = t.shape.size();
  return {ptr<T>(t), t.shape[r - 3], r == 4 ? t.strides[0] : 0, t.strides[r - 3], t.strides[r - 2], t.strides[r - 1]};
}

struct Win {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool include_pad;
};
Win win(const Pool2dParams& p) {
  return {p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.padding[0], p.padding[1],
          p.dilation[0], p.dilation[1], p.count_include_pad};
}

template <class T>
__global__ void max_fwd(Geom g, Win k, View<const T> x, View<T> y, View<int64_t> ix) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = g.planes * g.Ho * g.Wo;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.Wo, oh = i / g.Wo % g.Ho, pl = i / (g.Wo * g.Ho);
    int64_t h0 = oh * k.sh - k.ph;
    const int64_t h1 = min(h0 + (k.kh - 1) * k.dh + 1, g.H);
    while (h0 < 0) h0 += k.dh;
    int64_t w0 = ow * k.sw - k.pw;
    const int64_t w1 = min(w0 + (k.kw - 1) * k.dw + 1, g.W);
    while (w0 < 0) w0 += k.dw;
    int64_t best_i = h0 * g.W + w0;
    A best = -INFINITY;
    for (int64_t h = h0; h < h1; h += k.dh)
      for (int64_t w = w0; w < w1; w += k.dw) {
        const A v = static_cast<A>(x.at(pl, h, w));
        if (v > best || v != v) {
          best = v;
          best_i = h * g.W + w;
        }
      }
    y.at(pl, oh, ow) = convert<T>(best);
    ix.at(pl, oh, ow) = best_i;
  }
}

template <class T>
__global__ void max_bwd(Geom g, View<T> gx, View<const T> gy, View<const int64_t> ix, int64_t* bad, int64_t id) {
  const int64_t n = g.planes * g.Ho * g.Wo;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.Wo, oh = i / g.Wo % g.Ho, pl = i / (g.Wo * g.Ho);
    const int64_t k = ix.at(pl, oh, ow);
    if (k < 0 || k >= g.H * g.W) {  // reported by the next wait (CudaBackend::deferred_check)
      if (atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, static_cast<unsigned long long>(id)) == 0ull)
        bad[1] = k;
      continue;
    }
    atomic_add(&gx.at(pl, k / g.W, k % g.W), gy.at(pl, oh, ow));
  }
}

struct AvgWin {
  int64_t h0, h1, w0, w1, divisor;
};
__device__ __forceinline__ AvgWin avg_window(const Geom& g, const Win& k, int64_t oh, int64_t ow) {
  int64_t h0 = oh * k.sh - k.ph, w0 = ow * k.sw - k.pw;
  int64_t h1 = min(h0 + k.kh, g.H + k.ph), w1 = min(w0 + k.kw, g.W + k.pw);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t{0});
  w0 = max(w0, int64_t{0});
  h1 = min(h1, g.H);
  w1 = min(w1, g.W);
  return {h0, h1, w0, w1, k.include_pad ? pool_size : (h1 - h0) * (w1 - w0)};
}

template <class T>
__global__ void avg_fwd(Geom g, Win k, View<const T> x, View<T> y) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = g.planes * g.Ho * g.Wo;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.Wo, oh = i / g.Wo % g.Ho, pl = i / (g.Wo * g.Ho);
    const AvgWin a = avg_window(g, k, oh, ow);
    A sum = 0;
    for (int64_t h = a.h0; h < a.h1; ++h)
      for (int64_t w = a.w0; w < a.w1; ++w) sum += static_cast<A>(x.at(pl, h, w));
    y.at(pl, oh, ow) = convert<T>(a.h0 < a.h1 && a.w0 < a.w1 ? sum / static_cast<A>(a.divisor) : A(0));
  }
}

template <class T>
__global__ void avg_bwd(Geom g, Win k, View<T> gx, View<const T> gy) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = g.planes * g.Ho * g.Wo;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.Wo, oh = i / g.Wo % g.Ho, pl = i / (g.Wo * g.Ho);
    const AvgWin a = avg_window(g, k, oh, ow);
    if (a.h0 >= a.h1 || a.w0 >= a.w1) continue;
    const T v = convert<T>(static_cast<A>(gy.at(pl, oh, ow)) / static_cast<A>(a.divisor));
    for (int64_t h = a.h0; h < a.h1; ++h)
      for (int64_t w = a.w0; w < a.w1; ++w) atomic_add(&gx.at(pl, h, w), v);
  }
}

void check_dtypes(const char* op, const TensorArg& a, const TensorArg& b) {
  KILN_CHECK(a.dtype == b.dtype, DTypeError, op, ": dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype),
             " differ");
}
void check_index_shape(const char* op, const TensorArg& indices, const TensorArg& out) {
  KILN_CHECK(indices.dtype == DType::i64 && indices.shape == out.shape, ShapeError, op, ": indices ",
             shape_str(indices.shape), " ", dtype_name(indices.dtype), " must be i64 of shape ", shape_str(out.shape));
}

}  // namespace

void CudaBackend::max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                                     const Pool2dParams& p) {
  ProfileScope prof_(stream_, "max_pool2d_forward", in);
  const char* op = "max_pool2d_forward";
  check_dtypes(op, out, in);
  check_index_shape(op, indices, out);
  const Geom g = geometry(op, in, out, &p);
  if (out.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_FLOAT(in.dtype, op, {
    max_fwd<T><<<grid_for(out.numel()), kThreads, 0, stream_>>>(g, win(p), view<const T>(in), view<T>(out),
                                                                 view<int64_t>(indices));
  });
  check_launch(op, in.shape);
}

void CudaBackend::max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) {
  ProfileScope prof_(stream_, "max_pool2d_backward", grad_out);
  const char* op = "max_pool2d_backward";
  check_dtypes(op, grad_in, grad_out);
  check_index_shape(op, indices, grad_out);
  const Geom g = geometry(op, grad_in, grad_out, nullptr);
  if (grad_in.numel() == 0) return;
  make_current();
  fill(grad_in, 0.0);
  if (grad_out.numel() == 0) return;
  int64_t id = 0;
  int64_t* bad = deferred_check(op, -1, g.H * g.W, &id);
  KILN_CUDA_DISPATCH_FLOAT(grad_in.dtype, op, {
    max_bwd<T><<<grid_for(grad_out.numel()), kThreads, 0, stream_>>>(g, view<T>(grad_in), view<const T>(grad_out),
                                                                      view<const int64_t>(indices), bad, id);
  });
  check_launch(op, grad_in.shape);
}

void CudaBackend::avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) {
  ProfileScope prof_(stream_, "avg_pool2d_forward", in);
  const char* op = "avg_pool2d_forward";
  check_dtypes(op, out, in);
  Pool2dParams q = p;
  q.dilation[0] = q.dilation[1] = 1;
  const Geom g = geometry(op, in, out, &q);
  if (out.numel() == 0) return;
  make_current();
  KILN_CUDA_DISPATCH_FLOAT(in.dtype, op, {
    avg_fwd<T><<<grid_for(out.numel()), kThreads, 0, stream_>>>(g, win(q), view<const T>(in), view<T>(out));
  });
  check_launch(op, in.shape);
}

void CudaBackend::avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) {
  ProfileScope prof_(stream_, "avg_pool2d_backward", grad_out);
  const char* op = "avg_pool2d_backward";
  check_dtypes(op, grad_in, grad_out);
  Pool2dParams q = p;
  q.dilation[0] = q.dilation[1] = 1;
  const Geom g = geometry(op, grad_in, grad_out, &q);
  if (grad_in.numel() == 0) return;
  make_current();
  fill(grad_in, 0.0);
  if (grad_out.numel() == 0) return;
  KILN_CUDA_DISPATCH_FLOAT(grad_in.dtype, op, {
    avg_bwd<T><<<grid_for(grad_out.numel()), kThreads, 0, stream_>>>(g, win(q), view<T>(grad_in),
                                                                      view<const T>(grad_out));
  });
  check_launch(op, grad_in.shape);
}

}  // namespace kiln::cuda
