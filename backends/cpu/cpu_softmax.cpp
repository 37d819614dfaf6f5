// CpuBackend::softmax_forward / softmax_backward along one dim, numerically stable
// (x - max). f32 and f64 run directly (f32 vectorized, see vec_math.h); f16/bf16 and
// non-contiguous tensors go through contiguous f32 copies.
// Backward: softmax gin = y * (g - sum(g * y)); log_softmax gin = g - exp(y) * sum(g).
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"
#include "backends/cpu/vec_math.h"

namespace kiln::cpu {
namespace {

KILN_INLINE float vexp(float x) { return exp_f(x); }
KILN_INLINE double vexp(double x) { return std::exp(x); }

template <class T>
KILN_INLINE T row_max(const T* __restrict x, int64_t n) {
  constexpr int L = 16;
  T lane[L];
  for (int j = 0; j < L; ++j) lane[j] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  T m = lane[0];
  for (int j = 1; j < L; ++j) m = lane[j] > m ? lane[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

template <class T>
KILN_INLINE double row_dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  constexpr int64_t kBlock = 256;
  T buf[kBlock];
  double s = 0;
  for (int64_t c = 0; c < n; c += kBlock) {
    int64_t len = std::min(kBlock, n - c);
    for (int64_t j = 0; j < len; ++j) buf[j] = a[c + j] * b[c + j];
    s += sum_contiguous(buf, len);
  }
  return s;
}

// Rows (inner == 1) are tasks; otherwise a task is a block of up to kCols columns of
// one outer index, with the softmax dim as the row index and the columns vectorized.
constexpr int64_t kCols = 256;

template <class T>
struct ForwardJob {
  const T* in;
  T* out;
  int64_t n, inner, blocks;
  bool log;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    for (int64_t t = b; t < e; ++t) {
      if (inner == 1) {
        row(in + t * n, out + t * n);
      } else {
        int64_t o = t / blocks, c0 = t % blocks * kCols;
        cols(in + o * n * inner + c0, out + o * n * inner + c0, std::min(kCols, inner - c0));
      }
    }
  }
  KILN_INLINE void row(const T* x, T* y) const {  // y may equal x
    const T m = row_max(x, n);
    if (!log) {
      for (int64_t i = 0; i < n; ++i) y[i] = vexp(x[i] - m);
      const T inv = static_cast<T>(1.0 / sum_contiguous(y, n));
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
      return;
    }
    T buf[kCols];
    double s = 0;
    for (int64_t c = 0; c < n; c += kCols) {
      int64_t len = std::min(kCols, n - c);
      for (int64_t j = 0; j < len; ++j) buf[j] = vexp(x[c + j] - m);
      s += sum_contiguous(buf, len);
    }
    const T lse = static_cast<T>(std::log(s));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - lse;
  }
  KILN_INLINE void cols(const T* x, T* y, int64_t k) const {
    T m[kCols], s[kCols];
    for (int64_t j = 0; j < k; ++j) m[j] = -std::numeric_limits<T>::infinity(), s[j] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* __restrict xr = x + i * inner;
      for (int64_t j = 0; j < k; ++j) m[j] = xr[j] > m[j] ? xr[j] : m[j];
    }
    if (log) {
      for (int64_t i = 0; i < n; ++i) {
        const T* __restrict xr = x + i * inner;
        for (int64_t j = 0; j < k; ++j) s[j] += vexp(xr[j] - m[j]);
      }
      for (int64_t j = 0; j < k; ++j) s[j] = std::log(s[j]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) y[i * inner + j] = (x[i * inner + j] - m[j]) - s[j];
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const T* xr = x + i * inner;
      T* yr = y + i * inner;
      for (int64_t j = 0; j < k; ++j) {
        T v = vexp(xr[j] - m[j]);
        yr[j] = v;
        s[j] += v;
      }
    }
    for (int64_t j = 0; j < k; ++j) s[j] = T(1) / s[j];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) y[i * inner + j] *= s[j];
  }
};

template <class T>
struct BackwardJob {
  T* gin;
  const T* gout;
  const T* y;
  int64_t n, inner, blocks;
  bool log;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    for (int64_t t = b; t < e; ++t) {
      int64_t off = inner == 1 ? t * n : t / blocks * n * inner + t % blocks * kCols;
      int64_t k = inner == 1 ? 1 : std::min(kCols, inner - t % blocks * kCols);
      if (inner == 1) row(gin + off, gout + off, y + off);
      else cols(gin + off, gout + off, y + off, k);
    }
  }
  KILN_INLINE void row(T* gi, const T* g, const T* yr) const {  // gi may equal g
    if (!log) {
      const T dot = static_cast<T>(row_dot(g, yr, n));
      for (int64_t i = 0; i < n; ++i) gi[i] = yr[i] * (g[i] - dot);
    } else {
      const T s = static_cast<T>(sum_contiguous(g, n));
      for (int64_t i = 0; i < n; ++i) gi[i] = g[i] - vexp(yr[i]) * s;
    }
  }
  KILN_INLINE void cols(T* gi, const T* g, const T* yr, int64_t k) const {
    T s[kCols];
    for (int64_t j = 0; j < k; ++j) s[j] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* __restrict gr = g + i * inner;
      const T* __restrict ys = yr + i * inner;
      if (log) for (int64_t j = 0; j < k; ++j) s[j] += gr[j];
      else for (int64_t j = 0; j < k; ++j) s[j] += gr[j] * ys[j];
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = i * inner;
      if (log) for (int64_t j = 0; j < k; ++j) gi[r + j] = g[r + j] - vexp(yr[r + j]) * s[j];
      else for (int64_t j = 0; j < k; ++j) gi[r + j] = yr[r + j] * (g[r + j] - s[j]);
    }
  }
};

// A contiguous tensor of dtype dt with t's values: t itself when it already is one.
struct Staged {
  std::vector<double> storage;  // 8-byte aligned
  TensorArg arg;
};
Staged stage(CpuBackend& be, const TensorArg& t, DType dt, bool load) {
  Staged s;
  if (t.dtype == dt && t.is_contiguous()) {
    s.arg = t;
    return s;
  }
  s.storage.resize((static_cast<size_t>(t.numel()) * dtype_size(dt) + 7) / 8);
  s.arg = TensorArg{s.storage.data(), 0, dt, t.shape, contiguous_strides(t.shape)};
  if (load) be.copy(s.arg, t);
  return s;
}

struct Geometry {
  int64_t outer = 1, n = 1, inner = 1, blocks = 1, tasks = 0, grain = 1;
};
Geometry geometry(const Shape& shape, int64_t dim) {
  Geometry g;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? g.outer : d == dim ? g.n : g.inner) *= shape[d];
  g.blocks = (g.inner + kCols - 1) / kCols;
  g.tasks = g.inner == 1 ? g.outer : g.outer * g.blocks;
  g.grain = std::max<int64_t>(1, kGrain / 4 / std::max<int64_t>(1, g.n * std::min(g.inner, kCols)));
  return g;
}

template <class T>
T* ptr(const TensorArg& t) { return static_cast<T*>(t.data) + t.offset; }

}  // namespace

void CpuBackend::softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_shape(name, "output", out, in.shape);
  KILN_CHECK(is_floating(in.dtype) && out.dtype == in.dtype, DTypeError, name, ": expected a floating dtype, got ",
             dtype_name(in.dtype), " -> ", dtype_name(out.dtype));
  dim = wrap_dim(dim, static_cast<int64_t>(in.shape.size()), name);
  if (in.numel() == 0) return;
  const DType work = in.dtype == DType::f64 ? DType::f64 : DType::f32;
  Staged x = stage(*this, in, work, true), y = stage(*this, out, work, false);
  Geometry g = geometry(in.shape, dim);
  if (work == DType::f32)
    launch_tasks<true>(g.tasks, g.grain, ForwardJob<float>{ptr<float>(x.arg), ptr<float>(y.arg), g.n, g.inner, g.blocks, log});
  else
    launch_tasks<false>(g.tasks, g.grain, ForwardJob<double>{ptr<double>(x.arg), ptr<double>(y.arg), g.n, g.inner, g.blocks, log});
  if (y.arg.data != out.data || y.arg.offset != out.offset || y.arg.dtype != out.dtype) copy(out, y.arg);
}

void CpuBackend::softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out,
                                  int64_t dim, bool log) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  check_shape(name, "grad_out", grad_out, out.shape);
  check_shape(name, "grad_in", grad_in, out.shape);
  KILN_CHECK(is_floating(out.dtype) && grad_out.dtype == out.dtype && grad_in.dtype == out.dtype, DTypeError, name,
             ": expected one floating dtype, got ", dtype_name(grad_in.dtype), ", ", dtype_name(grad_out.dtype), ", ",
             dtype_name(out.dtype));
  dim = wrap_dim(dim, static_cast<int64_t>(out.shape.size()), name);
  if (out.numel() == 0) return;
  const DType work = out.dtype == DType::f64 ? DType::f64 : DType::f32;
  Staged g = stage(*this, grad_out, work, true), y = stage(*this, out, work, true);
  Staged gi = stage(*this, grad_in, work, false);
  Geometry geo = geometry(out.shape, dim);
  if (work == DType::f32)
    launch_tasks<true>(geo.tasks, geo.grain,
                       BackwardJob<float>{ptr<float>(gi.arg), ptr<float>(g.arg), ptr<float>(y.arg), geo.n, geo.inner,
                                          geo.blocks, log});
  else
    launch_tasks<false>(geo.tasks, geo.grain,
                        BackwardJob<double>{ptr<double>(gi.arg), ptr<double>(g.arg), ptr<double>(y.arg), geo.n,
                                            geo.inner, geo.blocks, log});
  if (gi.arg.data != grad_in.data || gi.arg.offset != grad_in.offset || gi.arg.dtype != grad_in.dtype)
    copy(grad_in, gi.arg);
}

}  // namespace kiln::cpu
