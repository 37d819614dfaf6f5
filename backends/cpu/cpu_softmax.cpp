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

// Task layouts. inner == 1 with n > kSmallN: a task is a row. inner == 1 with short rows
// (10 classes): a task is kLanes rows, transposed into a buffer so that the math runs
// across rows, kLanes wide. inner > 1: a task is up to kCols columns of one outer index,
// the softmax dim indexing rows and the columns vectorized.
constexpr int64_t kCols = 256, kLanes = 16, kSmallN = 32;

KILN_INLINE float vlog(float x) { return log_f(x); }
KILN_INLINE double vlog(double x) { return std::log(x); }

// Lengths padded to whole vectors, so short rows run exp as full vectors rather than
// the scalar epilogue of the vectorized loop.
constexpr int64_t round_up(int64_t len) { return (len + 15) & ~int64_t{15}; }

// e[j] = exp(x[j] - m) for j < len, and 0 up to round_up(len).
template <class T>
KILN_INLINE void exp_block(const T* __restrict x, T m, int64_t len, T* __restrict e) {
  const int64_t padded = round_up(len);
  for (int64_t j = 0; j < len; ++j) e[j] = x[j] - m;
  for (int64_t j = len; j < padded; ++j) e[j] = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < padded; ++j) e[j] = vexp(e[j]);
}

struct Geometry {
  int64_t outer = 1, n = 1, inner = 1, blocks = 1, tasks = 0, grain = 1;
  bool small = false;  // inner == 1 and n <= kSmallN
  // First element and width (columns or rows) of task t.
  KILN_INLINE int64_t start(int64_t t) const {
    return inner > 1 ? t / blocks * n * inner + t % blocks * kCols : small ? t * kLanes * n : t * n;
  }
  KILN_INLINE int64_t width(int64_t t) const {
    return inner > 1 ? std::min(kCols, inner - t % blocks * kCols) : small ? std::min(kLanes, outer - t * kLanes) : 1;
  }
};

// Gathers rows [0, nr) of n elements into b[i][r] (rows past nr are 0) and back.
template <class T>
KILN_INLINE void to_lanes(const T* x, int64_t n, int64_t nr, T (*b)[kLanes]) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < kLanes; ++r) b[i][r] = 0;
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t i = 0; i < n; ++i) b[i][r] = x[r * n + i];
}
template <class T>
KILN_INLINE void from_lanes(T (*b)[kLanes], int64_t n, int64_t nr, T* y) {
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = b[i][r];
}

template <class T>
struct ForwardJob {
  const T* in;
  T* out;
  Geometry g;
  bool log;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    for (int64_t t = b; t < e; ++t) {
      const int64_t off = g.start(t), w = g.width(t);
      if (g.inner > 1) {
        cols(in + off, out + off, w, g.inner);
      } else if (g.small) {
        T buf[kSmallN][kLanes];
        to_lanes(in + off, g.n, w, buf);
        cols(&buf[0][0], &buf[0][0], kLanes, kLanes);
        from_lanes(buf, g.n, w, out + off);
      } else {
        row(in + off, out + off);
      }
    }
  }
  KILN_INLINE void row(const T* x, T* y) const {  // y may equal x
    const int64_t n = g.n;
    const T m = row_max(x, n);
    double s = 0;
    for (int64_t c = 0; c < n; c += kCols) {
      const int64_t len = std::min(kCols, n - c);
      T e[kCols];
      exp_block(x + c, m, len, e);
      s += sum_contiguous(e, round_up(len));
      if (!log) for (int64_t j = 0; j < len; ++j) y[c + j] = e[j];
    }
    if (!log) {
      const T inv = static_cast<T>(1.0 / s);
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    } else {
      const T lse = static_cast<T>(std::log(s));
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - lse;
    }
  }
  // k columns of n rows `stride` apart; y may equal x.
  KILN_INLINE void cols(const T* x, T* y, int64_t k, int64_t stride) const {
    const int64_t n = g.n;
    T m[kCols], s[kCols];
    for (int64_t j = 0; j < k; ++j) m[j] = -std::numeric_limits<T>::infinity(), s[j] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* __restrict xr = x + i * stride;
      for (int64_t j = 0; j < k; ++j) m[j] = xr[j] > m[j] ? xr[j] : m[j];
    }
    for (int64_t i = 0; i < n; ++i) {
      const T* xr = x + i * stride;
      T* yr = y + i * stride;
      if (log) {
        for (int64_t j = 0; j < k; ++j) s[j] += vexp(xr[j] - m[j]);
      } else {
        for (int64_t j = 0; j < k; ++j) {
          T v = vexp(xr[j] - m[j]);
          yr[j] = v;
          s[j] += v;
        }
      }
    }
    if (log) {
      for (int64_t j = 0; j < k; ++j) s[j] = vlog(s[j]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) y[i * stride + j] = (x[i * stride + j] - m[j]) - s[j];
    } else {
      for (int64_t j = 0; j < k; ++j) s[j] = T(1) / s[j];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) y[i * stride + j] *= s[j];
    }
  }
};

template <class T>
struct BackwardJob {
  T* gin;
  const T* gout;
  const T* y;
  Geometry g;
  bool log;
  KILN_INLINE void operator()(int64_t b, int64_t e) const {
    for (int64_t t = b; t < e; ++t) {
      const int64_t off = g.start(t), w = g.width(t);
      if (g.inner > 1) {
        cols(gin + off, gout + off, y + off, w, g.inner);
      } else if (g.small) {
        T gb[kSmallN][kLanes], yb[kSmallN][kLanes];
        to_lanes(gout + off, g.n, w, gb);
        to_lanes(y + off, g.n, w, yb);
        cols(&gb[0][0], &gb[0][0], &yb[0][0], kLanes, kLanes);
        from_lanes(gb, g.n, w, gin + off);
      } else {
        row(gin + off, gout + off, y + off);
      }
    }
  }
  KILN_INLINE void row(T* gi, const T* gr, const T* yr) const {  // gi may equal gr
    const int64_t n = g.n;
    if (!log) {
      const T dot = static_cast<T>(row_dot(gr, yr, n));
      for (int64_t i = 0; i < n; ++i) gi[i] = yr[i] * (gr[i] - dot);
      return;
    }
    const T s = static_cast<T>(sum_contiguous(gr, n));
    for (int64_t c = 0; c < n; c += kCols) {
      const int64_t len = std::min(kCols, n - c);
      T e[kCols];
      exp_block(yr + c, T(0), len, e);
      for (int64_t j = 0; j < len; ++j) gi[c + j] = gr[c + j] - e[j] * s;
    }
  }
  KILN_INLINE void cols(T* gi, const T* gr, const T* yr, int64_t k, int64_t stride) const {
    const int64_t n = g.n;
    T s[kCols];
    for (int64_t j = 0; j < k; ++j) s[j] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* __restrict gg = gr + i * stride;
      const T* __restrict ys = yr + i * stride;
      if (log) for (int64_t j = 0; j < k; ++j) s[j] += gg[j];
      else for (int64_t j = 0; j < k; ++j) s[j] += gg[j] * ys[j];
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = i * stride;
      if (log) for (int64_t j = 0; j < k; ++j) gi[r + j] = gr[r + j] - vexp(yr[r + j]) * s[j];
      else for (int64_t j = 0; j < k; ++j) gi[r + j] = yr[r + j] * (gr[r + j] - s[j]);
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

Geometry geometry(const Shape& shape, int64_t dim) {
  Geometry g;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < dim ? g.outer : d == dim ? g.n : g.inner) *= shape[d];
  g.small = g.inner == 1 && g.n <= kSmallN;
  g.blocks = (g.inner + kCols - 1) / kCols;
  g.tasks = g.inner > 1 ? g.outer * g.blocks : g.small ? (g.outer + kLanes - 1) / kLanes : g.outer;
  const int64_t per_task = g.n * (g.inner > 1 ? std::min(g.inner, kCols) : g.small ? kLanes : 1);
  g.grain = std::max<int64_t>(1, kGrain / 4 / per_task);
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
    launch_tasks<true>(g.tasks, g.grain, ForwardJob<float>{ptr<float>(x.arg), ptr<float>(y.arg), g, log});
  else
    launch_tasks<false>(g.tasks, g.grain, ForwardJob<double>{ptr<double>(x.arg), ptr<double>(y.arg), g, log});
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
                       BackwardJob<float>{ptr<float>(gi.arg), ptr<float>(g.arg), ptr<float>(y.arg), geo, log});
  else
    launch_tasks<false>(geo.tasks, geo.grain,
                        BackwardJob<double>{ptr<double>(gi.arg), ptr<double>(g.arg), ptr<double>(y.arg), geo, log});
  if (gi.arg.data != grad_in.data || gi.arg.offset != grad_in.offset || gi.arg.dtype != grad_in.dtype)
    copy(grad_in, gi.arg);
}

}  // namespace kiln::cpu
