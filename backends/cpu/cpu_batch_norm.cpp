// CpuBackend::batch_norm_forward / batch_norm_backward: batch normalization in training
// mode in two passes over the data per channel (engine/core/backend.h states the
// formulas), instead of the ~25 elementwise and reduction ops of the front end's
// decomposition, each a pass over [N, C, H, W] with broadcast strides and an OpenMP
// barrier. Channels are split over the threads (kGrain elements a chunk), compiled for each ISA
// level (launch_tasks); sums accumulate in double, in lanes (Note [Lane sums]). f32 only: the
// interface saves mean and invstd as f32, too coarse for f64 gradients (gradcheck), so
// f64 and the 16-bit types keep the decomposition.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided.h"

namespace kiln::cpu {
namespace {

template <class T>
T* at(const TensorArg& t) {
  return t.data ? static_cast<T*>(t.data) + t.offset : nullptr;
}

// x viewed as [N, C, S]: S = prod(*) elements per sample and channel.
struct Layout {
  int64_t n, c, s;
  explicit Layout(const TensorArg& x) : n(x.shape[0]), c(x.shape[1]), s(x.numel() / std::max<int64_t>(1, x.shape[0] * x.shape[1])) {}
};

// Note [Lane sums]: a sum of doubles in one accumulator waits for each add in turn (the compiler
// may not reorder floating-point adds), ~4 cycles per element. kLanes independent partial sums,
// combined at the end, run as one vector register of doubles. The executor's LayerNormalization
// runs here (ops_nn.cpp): on a transformer's [32, 64] rows this kernel with one accumulator took
// 6 us a call on one thread and 22 us on two; with lanes and launch_tasks' grain, 4 us on either
// (the whole op, its scale and shift included). f(j) gives element j's term; each lane adds its
// terms in order, so a result does not depend on the thread count.
constexpr int64_t kLanes = 8;

template <class F>
KILN_INLINE double lane_sum(int64_t s, const F& f) {
  double acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= s; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += f(j + k);
  double tail = 0;
  for (; j < s; ++j) tail += f(j);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// Channels [b, e) of the forward pass; every tensor as in Backend::batch_norm_forward.
template <class T>
struct ForwardJob {
  Layout l;
  const T* xp;
  T* yp;
  const float *w, *b;
  float *mean_out, *invstd_out, *rm, *rv;
  double momentum, eps;
  KILN_INLINE void operator()(int64_t c0, int64_t c1) const {
    const double m = static_cast<double>(l.n * l.s);
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const T* p = xp + (i * l.c + c) * l.s;
        sum += lane_sum(l.s, [p](int64_t j) { return static_cast<double>(p[j]); });
      }
      const double mean = sum / m;
      double sq = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const T* p = xp + (i * l.c + c) * l.s;
        sq += lane_sum(l.s, [p, mean](int64_t j) {
          const double d = static_cast<double>(p[j]) - mean;
          return d * d;
        });
      }
      const double var = sq / m, invstd = 1.0 / std::sqrt(var + eps);
      const double scale = invstd * (w ? w[c] : 1.0f), shift = (b ? b[c] : 0.0f) - mean * scale;
      const T ts = static_cast<T>(scale), tb = static_cast<T>(shift);
      for (int64_t i = 0; i < l.n; ++i) {
        const T* p = xp + (i * l.c + c) * l.s;
        T* q = yp + (i * l.c + c) * l.s;
        for (int64_t j = 0; j < l.s; ++j) q[j] = p[j] * ts + tb;
      }
      if (mean_out) mean_out[c] = static_cast<float>(mean);
      if (invstd_out) invstd_out[c] = static_cast<float>(invstd);
      if (rm) rm[c] = static_cast<float>((1 - momentum) * rm[c] + momentum * mean);
      if (rv) rv[c] = static_cast<float>((1 - momentum) * rv[c] + momentum * var * m / std::max(m - 1, 1.0));
    }
  }
};

// Channels [b, e) of the backward pass; every tensor as in Backend::batch_norm_backward.
template <class T>
struct BackwardJob {
  Layout l;
  const T *xp, *gy;
  T* gx;
  const float *w, *mean_in, *invstd_in;
  float *gw, *gb;
  KILN_INLINE void operator()(int64_t c0, int64_t c1) const {
    const double m = static_cast<double>(l.n * l.s);
    for (int64_t c = c0; c < c1; ++c) {
      const double mean = mean_in[c], invstd = invstd_in[c];
      double sum_gy = 0, sum_gy_xhat = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const T *g = gy + (i * l.c + c) * l.s, *p = xp + (i * l.c + c) * l.s;
        sum_gy += lane_sum(l.s, [g](int64_t j) { return static_cast<double>(g[j]); });
        sum_gy_xhat += lane_sum(l.s, [g, p, mean](int64_t j) {
          return static_cast<double>(g[j]) * (static_cast<double>(p[j]) - mean);
        });
      }
      sum_gy_xhat *= invstd;
      if (gw) gw[c] = static_cast<float>(sum_gy_xhat);
      if (gb) gb[c] = static_cast<float>(sum_gy);
      if (!gx) continue;
      // grad_x = k * (gy - sum_gy / M - xhat * sum_gy_xhat / M), xhat = (x - mean) * invstd,
      // written as gy * k + x * a + d.
      const double k = invstd * (w ? w[c] : 1.0f);
      const double a = -k * invstd * sum_gy_xhat / m;
      const double d = -k * sum_gy / m - a * mean;
      const T tk = static_cast<T>(k), ta = static_cast<T>(a), td = static_cast<T>(d);
      for (int64_t i = 0; i < l.n; ++i) {
        const int64_t base = (i * l.c + c) * l.s;
        for (int64_t j = 0; j < l.s; ++j) gx[base + j] = gy[base + j] * tk + xp[base + j] * ta + td;
      }
    }
  }
};

// Channels per chunk: kGrain elements (strided.h), at least one channel.
int64_t channel_grain(const Layout& l) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, l.n * l.s)); }

}  // namespace

void CpuBackend::batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                    const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                                    const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                                    double eps) {
  KILN_CHECK(x.dtype == DType::f32, DTypeError, "batch_norm_forward on the CPU takes f32, got ", dtype_name(x.dtype));
  const Layout l(x);
  launch_tasks<true>(l.c, channel_grain(l),
                     ForwardJob<float>{l, at<float>(x), at<float>(y), at<float>(weight), at<float>(bias),
                                       at<float>(save_mean), at<float>(save_invstd), at<float>(running_mean),
                                       at<float>(running_var), momentum, eps});
}

void CpuBackend::batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
                                     const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight,
                                     const TensorArg& save_mean, const TensorArg& save_invstd) {
  KILN_CHECK(x.dtype == DType::f32, DTypeError, "batch_norm_backward on the CPU takes f32, got ", dtype_name(x.dtype));
  const Layout l(x);
  launch_tasks<true>(l.c, channel_grain(l),
                     BackwardJob<float>{l, at<float>(x), at<float>(grad_y), at<float>(grad_x), at<float>(weight),
                                        at<float>(save_mean), at<float>(save_invstd), at<float>(grad_weight),
                                        at<float>(grad_bias)});
}

}  // namespace kiln::cpu
