// CpuBackend::batch_norm_forward / batch_norm_backward: batch normalization in training
// mode in two passes over the data per channel (engine/core/backend.h states the
// formulas), instead of the ~25 elementwise and reduction ops of the front end's
// decomposition, each a pass over [N, C, H, W] with broadcast strides and an OpenMP
// barrier. Channels are split over the threads; sums accumulate in double. f32 only: the
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

template <class T>
void forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg& x,
             const TensorArg& weight, const TensorArg& bias, const TensorArg& running_mean,
             const TensorArg& running_var, double momentum, double eps) {
  const Layout l(x);
  const T* xp = at<T>(x);
  T* yp = at<T>(y);
  const float *w = at<float>(weight), *b = at<float>(bias);
  float *mean_out = at<float>(save_mean), *invstd_out = at<float>(save_invstd);
  float *rm = at<float>(running_mean), *rv = at<float>(running_var);
  const double m = static_cast<double>(l.n * l.s);
  parallel_for(l.c, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const T* p = xp + (i * l.c + c) * l.s;
        for (int64_t j = 0; j < l.s; ++j) sum += static_cast<double>(p[j]);
      }
      const double mean = sum / m;
      double sq = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const T* p = xp + (i * l.c + c) * l.s;
        for (int64_t j = 0; j < l.s; ++j) {
          const double d = static_cast<double>(p[j]) - mean;
          sq += d * d;
        }
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
  });
}

template <class T>
void backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
              const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight, const TensorArg& save_mean,
              const TensorArg& save_invstd) {
  const Layout l(x);
  const T *xp = at<T>(x), *gy = at<T>(grad_y);
  T* gx = at<T>(grad_x);
  const float *w = at<float>(weight), *mean_in = at<float>(save_mean), *invstd_in = at<float>(save_invstd);
  float *gw = at<float>(grad_weight), *gb = at<float>(grad_bias);
  const double m = static_cast<double>(l.n * l.s);
  parallel_for(l.c, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double mean = mean_in[c], invstd = invstd_in[c];
      double sum_gy = 0, sum_gy_xhat = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const int64_t base = (i * l.c + c) * l.s;
        for (int64_t j = 0; j < l.s; ++j) {
          const double g = static_cast<double>(gy[base + j]);
          sum_gy += g;
          sum_gy_xhat += g * (static_cast<double>(xp[base + j]) - mean);
        }
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
  });
}

}  // namespace

void CpuBackend::batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                    const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                                    const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                                    double eps) {
  KILN_CHECK(x.dtype == DType::f32, DTypeError, "batch_norm_forward on the CPU takes f32, got ", dtype_name(x.dtype));
  forward<float>(y, save_mean, save_invstd, x, weight, bias, running_mean, running_var, momentum, eps);
}

void CpuBackend::batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
                                     const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight,
                                     const TensorArg& save_mean, const TensorArg& save_invstd) {
  KILN_CHECK(x.dtype == DType::f32, DTypeError, "batch_norm_backward on the CPU takes f32, got ", dtype_name(x.dtype));
  backward<float>(grad_x, grad_weight, grad_bias, grad_y, x, weight, save_mean, save_invstd);
}

}  // namespace kiln::cpu
