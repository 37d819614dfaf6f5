// CpuBackend::max_pool2d_* and avg_pool2d_*: our own loops, one OpenMP task per
// [H, W] plane, following PyTorch's CPU kernels (aten/src/ATen/native/cpu/
// MaxPoolKernel.cpp, AvgPoolKernel.cpp): the same window bounds, divisors, NaN
// propagation and index of the maximum. Tensors are [N, C, H, W] or [C, H, W]
// with any strides; f32, f64, f16 and bf16, accumulating in float (double for f64); max
// pooling also u8 without indices (int8 inference).
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dnnl_context.h"
#include "backends/cpu/max_pool_2x2.h"
#include "backends/cpu/strided.h"
#include "engine/core/error.h"

namespace kiln::cpu {
namespace {

// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// The planes of a pooling: in [..., H, W] -> out [..., Ho, Wo].
struct PoolGeom {
  int64_t planes, H, W, Ho, Wo;
};

PoolGeom geometry(const char* op, const TensorArg& in, const TensorArg& out, const Pool2dParams* p) {
  const size_t r = in.shape.size();
  KILN_CHECK((r == 3 || r == 4) && out.shape.size() == r, ShapeError, op, ": input ", shape_str(in.shape),
             " and output ", shape_str(out.shape), " must both be [N, C, H, W] or [C, H, W]");
  PoolGeom g{1, in.shape[r - 2], in.shape[r - 1], out.shape[r - 2], out.shape[r - 1]};
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

// The element offset of plane `plane` (row-major over the leading dims) of t.
int64_t plane_offset(const TensorArg& t, int64_t plane) {
  int64_t off = t.offset;
  for (size_t d = t.shape.size() - 2; d-- > 0;) {
    off += plane % t.shape[d] * t.strides[d];
    plane /= t.shape[d];
  }
  return off;
}

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A strided [H, W] plane of t.
template <class T>
struct Plane {
  T* p;
  int64_t sh, sw;
  T& operator()(int64_t h, int64_t w) const { return p[h * sh + w * sw]; }
};
template <class T>
Plane<T> plane(const TensorArg& t, int64_t i) {
  const size_t r = t.shape.size();
  return {static_cast<T*>(t.data) + plane_offset(t, i), t.strides[r - 2], t.strides[r - 1]};
}

// The common 2x2 window of stride 2 without padding or dilation over unit-stride rows, whole
// windows only (MaxPool2x2Job below runs it).
bool window_2x2(const Pool2dParams& p, int64_t x_sw, int64_t y_sw, int64_t i_sw, const PoolGeom& g) {
  return p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 2 && p.stride[1] == 2 && p.padding[0] == 0 &&
         p.padding[1] == 0 && p.dilation[0] == 1 && p.dilation[1] == 1 && x_sw == 1 && y_sw == 1 && i_sw == 1 &&
         2 * g.Wo <= g.W;
}

// The 2x2 stride-2 window over whole planes (window_2x2, and 2 * Ho <= H): the same
// comparisons in the same order as max_forward's general loop (so the same maximum, NaN
// propagation and index), written branch-free so that the compiler vectorizes it (the
// branches mispredicted on half the windows of real activations), compiled per ISA level
// (launch_tasks); with AVX-512, max_pool_2x2_row's intrinsics instead (rows of 7 or 14
// outputs are too short for the vectorizer). One task per plane.
template <class T>
struct MaxPool2x2Job {
  const PoolGeom* g;
  const TensorArg *out, *indices, *in;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    const int64_t W = g->W, Wo = g->Wo;
    for (int64_t i = b; i < e; ++i) {
      const Plane<T> x = plane<T>(*in, i), y = plane<T>(*out, i);
      const Plane<int64_t> ix = plane<int64_t>(*indices, i);
      for (int64_t oh = 0; oh < g->Ho; ++oh) {
        const T* __restrict r0 = &x(2 * oh, 0);
        const T* __restrict r1 = &x(2 * oh + 1, 0);
        T* __restrict yr = &y(oh, 0);
        int64_t* __restrict ir = &ix(oh, 0);
        const int64_t index0 = 2 * oh * W;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>)
          if (max_pool_2x2_row(r0, r1, yr, ir, Wo, index0, W)) continue;  // AVX-512: max_pool_2x2.h
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const Acc<T> v0 = static_cast<Acc<T>>(r0[2 * ow]), v1 = static_cast<Acc<T>>(r0[2 * ow + 1]);
          const Acc<T> v2 = static_cast<Acc<T>>(r1[2 * ow]), v3 = static_cast<Acc<T>>(r1[2 * ow + 1]);
          // best starts at -inf; v0 > -inf or NaN takes v0, and -inf kept is v0 too. The
          // index goes as an offset 0..3 in the window, selected with masks.
          Acc<T> best = v0;
          int32_t at = 0;
          bool take = (v1 > best) | (v1 != v1);
          best = sel(take, v1, best);
          at = (at & ~(0 - int32_t{take})) | (1 & (0 - int32_t{take}));
          take = (v2 > best) | (v2 != v2);
          best = sel(take, v2, best);
          at = (at & ~(0 - int32_t{take})) | (2 & (0 - int32_t{take}));
          take = (v3 > best) | (v3 != v3);
          best = sel(take, v3, best);
          at = (at & ~(0 - int32_t{take})) | (3 & (0 - int32_t{take}));
          ir[ow] = index0 + 2 * ow + (at & 1) + (at >> 1) * W;
          yr[ow] = static_cast<T>(best);
        }
      }
    }
  }
};

template <class T>
void max_forward(const PoolGeom& g, const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                 const Pool2dParams& p) {
  const size_t r = in.shape.size();
  if (window_2x2(p, in.strides[r - 1], out.strides[r - 1], indices.strides[r - 1], g) && 2 * g.Ho <= g.H) {
    constexpr bool mv = std::is_same_v<T, float> || std::is_same_v<T, bfloat16>;
    launch_tasks<mv>(g.planes, std::max<int64_t>(1, kGrain / (4 * g.Ho * g.Wo)), MaxPool2x2Job<T>{&g, &out, &indices, &in});
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < g.planes; ++i) {
    const Plane<T> x = plane<T>(in, i), y = plane<T>(out, i);
    const Plane<int64_t> ix = plane<int64_t>(indices, i);
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      int64_t h0 = oh * p.stride[0] - p.padding[0];
      const int64_t h1 = std::min(h0 + (p.kernel[0] - 1) * p.dilation[0] + 1, g.H);
      while (h0 < 0) h0 += p.dilation[0];
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        int64_t w0 = ow * p.stride[1] - p.padding[1];
        const int64_t w1 = std::min(w0 + (p.kernel[1] - 1) * p.dilation[1] + 1, g.W);
        while (w0 < 0) w0 += p.dilation[1];
        int64_t best_index = h0 * g.W + w0;
        Acc<T> best = -std::numeric_limits<Acc<T>>::infinity();
        for (int64_t h = h0; h < h1; h += p.dilation[0])
          for (int64_t w = w0; w < w1; w += p.dilation[1]) {
            const Acc<T> v = static_cast<Acc<T>>(x(h, w));
            if (v > best || std::isnan(v)) {
              best = v;
              best_index = h * g.W + w;
            }
          }
        y(oh, ow) = static_cast<T>(best);
        ix(oh, ow) = best_index;
      }
    }
  }
}

// u8 max pooling for int8 inference (no indices, no NaN): the window maximum over its valid
// elements, as max_forward with -inf padding.
void max_forward_u8(const PoolGeom& g, const TensorArg& out, const TensorArg& in, const Pool2dParams& p) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < g.planes; ++i) {
    const Plane<const uint8_t> x = plane<const uint8_t>(in, i);
    const Plane<uint8_t> y = plane<uint8_t>(out, i);
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      int64_t h0 = oh * p.stride[0] - p.padding[0];
      const int64_t h1 = std::min(h0 + (p.kernel[0] - 1) * p.dilation[0] + 1, g.H);
      while (h0 < 0) h0 += p.dilation[0];
      if (p.kernel[1] == 2 && p.stride[1] == 2 && p.padding[1] == 0 && p.dilation[1] == 1 && x.sw == 1 &&
          y.sw == 1 && 2 * g.Wo <= g.W) {  // the common 2-wide window: a loop the compiler vectorizes
        uint8_t* yr = &y(oh, 0);
        for (int64_t ow = 0; ow < g.Wo; ++ow) yr[ow] = 0;
        for (int64_t h = h0; h < h1; h += p.dilation[0]) {
          const uint8_t* xr = &x(h, 0);
          for (int64_t ow = 0; ow < g.Wo; ++ow)
            yr[ow] = std::max(yr[ow], std::max(xr[2 * ow], xr[2 * ow + 1]));
        }
        continue;
      }
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        int64_t w0 = ow * p.stride[1] - p.padding[1];
        const int64_t w1 = std::min(w0 + (p.kernel[1] - 1) * p.dilation[1] + 1, g.W);
        while (w0 < 0) w0 += p.dilation[1];
        uint8_t best = 0;
        for (int64_t h = h0; h < h1; h += p.dilation[0])
          for (int64_t w = w0; w < w1; w += p.dilation[1]) best = std::max(best, x(h, w));
        y(oh, ow) = best;
      }
    }
  }
}

// One task per plane: the gradients summed at their maxima's positions in float, then
// written (every element of grad_in). Compiled per ISA level for f32 and bf16 (the
// conversions dominate at bf16).
template <class T>
struct MaxBackwardJob {
  const PoolGeom* g;
  const TensorArg *grad_in, *grad_out, *indices;
  std::atomic<bool>* bad_index;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    const int64_t HW = g->H * g->W;
    std::vector<Acc<T>> acc(static_cast<size_t>(HW));
    for (int64_t i = b; i < e; ++i) {
      const Plane<T> gx = plane<T>(*grad_in, i), gy = plane<T>(*grad_out, i);
      const Plane<int64_t> ix = plane<int64_t>(*indices, i);
      std::fill(acc.begin(), acc.end(), Acc<T>(0));
      for (int64_t oh = 0; oh < g->Ho; ++oh)
        for (int64_t ow = 0; ow < g->Wo; ++ow) {
          const int64_t k = ix(oh, ow);
          if (k < 0 || k >= HW) {
            *bad_index = true;
            continue;
          }
          acc[static_cast<size_t>(k)] += static_cast<Acc<T>>(gy(oh, ow));
        }
      for (int64_t h = 0; h < g->H; ++h) {
        T* __restrict row = &gx(h, 0);
        const Acc<T>* __restrict a = acc.data() + h * g->W;
        if (gx.sw == 1)
          for (int64_t w = 0; w < g->W; ++w) row[w] = static_cast<T>(a[w]);
        else
          for (int64_t w = 0; w < g->W; ++w) gx(h, w) = static_cast<T>(a[w]);
      }
    }
  }
};

template <class T>
void max_backward(const PoolGeom& g, const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) {
  std::atomic<bool> bad_index{false};
  constexpr bool mv = std::is_same_v<T, float> || std::is_same_v<T, bfloat16>;
  launch_tasks<mv>(g.planes, std::max<int64_t>(1, kGrain / (2 * g.H * g.W)),
                   MaxBackwardJob<T>{&g, &grad_in, &grad_out, &indices, &bad_index});
  KILN_CHECK(!bad_index, IndexError, "max_pool2d_backward: an index lies outside the ", g.H, "x", g.W, " plane");
}

// The window of an average pooling output and its divisor (PyTorch's rules).
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};
AvgWindow avg_window(const PoolGeom& g, const Pool2dParams& p, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
  int64_t h1 = std::min(h0 + p.kernel[0], g.H + p.padding[0]), w1 = std::min(w0 + p.kernel[1], g.W + p.padding[1]);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.H);
  w1 = std::min(w1, g.W);
  return {h0, h1, w0, w1, p.count_include_pad ? pool_size : (h1 - h0) * (w1 - w0)};
}

template <class T>
void avg_forward(const PoolGeom& g, const TensorArg& out, const TensorArg& in, const Pool2dParams& p) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < g.planes; ++i) {
    const Plane<T> x = plane<T>(in, i), y = plane<T>(out, i);
    for (int64_t oh = 0; oh < g.Ho; ++oh)
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        const AvgWindow win = avg_window(g, p, oh, ow);
        Acc<T> sum = 0;
        for (int64_t h = win.h0; h < win.h1; ++h)
          for (int64_t w = win.w0; w < win.w1; ++w) sum += static_cast<Acc<T>>(x(h, w));
        y(oh, ow) = static_cast<T>(win.h0 < win.h1 && win.w0 < win.w1 ? sum / static_cast<Acc<T>>(win.divisor) : 0);
      }
  }
}

template <class T>
void avg_backward(const PoolGeom& g, const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) {
#pragma omp parallel
  {
    std::vector<Acc<T>> acc(static_cast<size_t>(g.H * g.W));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < g.planes; ++i) {
      const Plane<T> gx = plane<T>(grad_in, i), gy = plane<T>(grad_out, i);
      std::fill(acc.begin(), acc.end(), Acc<T>(0));
      for (int64_t oh = 0; oh < g.Ho; ++oh)
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
          const AvgWindow win = avg_window(g, p, oh, ow);
          if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
          const Acc<T> v = static_cast<Acc<T>>(gy(oh, ow)) / static_cast<Acc<T>>(win.divisor);
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) acc[static_cast<size_t>(h * g.W + w)] += v;
        }
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t w = 0; w < g.W; ++w) gx(h, w) = static_cast<T>(acc[static_cast<size_t>(h * g.W + w)]);
    }
  }
}

void check_dtypes(const char* op, const TensorArg& a, const TensorArg& b) {
  KILN_CHECK(a.dtype == b.dtype, DTypeError, op, ": dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype),
             " differ");
}

void check_indices(const char* op, const TensorArg& indices, const TensorArg& out) {
  KILN_CHECK(indices.dtype == DType::i64 && indices.shape == out.shape, ShapeError, op, ": indices ",
             shape_str(indices.shape), " ", dtype_name(indices.dtype), " must be i64 of shape ", shape_str(out.shape));
}

// Note [Max pool inference]: without indices (engine/core/ops_nn.cpp max_pool2d asks for none on
// the CPU when no gradient is wanted), f32 max pooling of a 4-d tensor laid out NCHW or NHWC
// (input and output alike), without dilation or ceil_mode, runs as oneDNN's pooling_max
// forward_inference on that layout, one cached plan per shape. Our loops, which also find each
// maximum's index, took 3.3 ms a call for resnet18's 3x3 stride-2 pool of [1, 64, 112, 112] on
// 2 threads (KILN_ONNX_PROFILE on the GPU machine's host). oneDNN's maximum skips a NaN where
// PyTorch's (and ours) is NaN, so an input holding one is left to our loops (one scan first).
// False when it does not apply.
struct MaxPoolPlan {
  dnnl::pooling_forward prim;
  dnnl::memory::desc src, dst;
};

bool onednn_max_pool(const TensorArg& out, const TensorArg& in, const PoolGeom& g, const Pool2dParams& p) {
  if (in.dtype != DType::f32 || in.shape.size() != 4 || p.ceil_mode || p.dilation[0] != 1 || p.dilation[1] != 1)
    return false;
  const bool nhwc = !in.is_contiguous();
  if (nhwc ? !is_nhwc(in) || out.is_contiguous() || !is_nhwc(out) : !out.is_contiguous()) return false;
  const int64_t pad_r[2] = {(g.Ho - 1) * p.stride[0] + p.kernel[0] - g.H - p.padding[0],
                            (g.Wo - 1) * p.stride[1] + p.kernel[1] - g.W - p.padding[1]};
  if (pad_r[0] < 0 || pad_r[1] < 0) return false;
  const float* x = reinterpret_cast<const float*>(first_element(in));
  const int64_t n = in.numel();
  bool nan = false;
#pragma omp parallel for reduction(|| : nan) if (n > (int64_t{1} << 18))
  for (int64_t i = 0; i < n; ++i) nan = nan | (x[i] != x[i]);
  if (nan) return false;
  PlanKey key("max_pool2d_inference");
  key.add(in.shape).add({p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.padding[0], p.padding[1], nhwc});
  auto plan = cached_plan<MaxPoolPlan>(key, [&] {
    using dnnl::memory;
    const auto tag = nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw;
    auto pl = std::make_shared<MaxPoolPlan>();
    pl->src = memory::desc(in.shape, memory::data_type::f32, tag);
    pl->dst = memory::desc(out.shape, memory::data_type::f32, tag);
    const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, pl->src,
                                        pl->dst, {p.stride[0], p.stride[1]}, {p.kernel[0], p.kernel[1]},
                                        {p.padding[0], p.padding[1]}, {pad_r[0], pad_r[1]});
    pl->prim = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(d, dnnl_engine()));
    return pl;
  });
  dnnl::engine& eng = dnnl_engine();
  plan->prim.execute(dnnl_stream(), {{DNNL_ARG_SRC, dnnl::memory(plan->src, eng, first_element(in))},
                                     {DNNL_ARG_DST, dnnl::memory(plan->dst, eng, first_element(out))}});
  return true;
}

}  // namespace

void CpuBackend::max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                                    const Pool2dParams& p) {
  const char* op = "max_pool2d_forward";
  check_dtypes(op, out, in);
  if (in.dtype == DType::u8 && !indices.data) {
    const PoolGeom g = geometry(op, in, out, &p);
    if (out.numel()) max_forward_u8(g, out, in, p);
    return;
  }
  const PoolGeom g = geometry(op, in, out, &p);
  if (!indices.data && out.numel() && onednn_max_pool(out, in, g, p)) return;  // Note [Max pool inference]
  TensorArg idx = indices;
  if (!indices.data) {  // none asked for: our loops write them aside
    idx.dtype = DType::i64;
    idx.shape = out.shape;
    idx.strides = contiguous_strides(out.shape);
    idx.offset = 0;
    idx.data = scratch(Scratch::dense0, static_cast<size_t>(out.numel()) * sizeof(int64_t));
  }
  check_indices(op, idx, out);
  if (out.numel() == 0) return;
  dispatch_floating(op, in.dtype, [&](auto t) { max_forward<decltype(t)>(g, out, idx, in, p); });
}

void CpuBackend::max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) {
  const char* op = "max_pool2d_backward";
  check_dtypes(op, grad_in, grad_out);
  check_indices(op, indices, grad_out);
  const PoolGeom g = geometry(op, grad_in, grad_out, nullptr);
  if (grad_in.numel() == 0) return;
  dispatch_floating(op, grad_in.dtype, [&](auto t) { max_backward<decltype(t)>(g, grad_in, grad_out, indices); });
}

void CpuBackend::avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) {
  const char* op = "avg_pool2d_forward";
  check_dtypes(op, out, in);
  Pool2dParams q = p;
  q.dilation[0] = q.dilation[1] = 1;  // average pooling has none
  const PoolGeom g = geometry(op, in, out, &q);
  if (out.numel() == 0) return;
  dispatch_floating(op, in.dtype, [&](auto t) { avg_forward<decltype(t)>(g, out, in, q); });
}

void CpuBackend::avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) {
  const char* op = "avg_pool2d_backward";
  check_dtypes(op, grad_in, grad_out);
  Pool2dParams q = p;
  q.dilation[0] = q.dilation[1] = 1;
  const PoolGeom g = geometry(op, grad_in, grad_out, &q);
  if (grad_in.numel() == 0) return;
  dispatch_floating(op, grad_in.dtype, [&](auto t) { avg_backward<decltype(t)>(g, grad_in, grad_out, q); });
}

}  // namespace kiln::cpu
