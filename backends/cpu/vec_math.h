// Internal to the CPU backend: branch-free float versions of exp, log, tanh, erf and the
// activations built on them, written so the auto-vectorizer turns a loop over them into
// SIMD code (libm's expf & co. are scalar calls). Accuracy is within a few ulp of the
// correctly rounded result over the whole float range, with IEEE special values
// (NaN in -> NaN out, +-inf, overflow to inf, underflow to 0 through the subnormals).
// Polynomials: Cephes (S. Moshier) expf/logf/tanhf; erfc: Numerical Recipes' erfcc
// (fractional error < 1.2e-7); erf near 0: its Taylor series.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/cpu/strided.h"

namespace kiln::cpu {

KILN_INLINE float exp_f(float x) {
  float xs = sel(x == x, x, 0.0f);
  xs = sel(xs > 88.8f, 88.8f, xs);    // exp(88.8) overflows: n = 128 gives inf below
  xs = sel(xs < -104.0f, -104.0f, xs);  // exp(-104) rounds to 0
  float n = (xs * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
  float r = xs - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  // 2^n in two factors so that both are normal floats for n in [-150, 128].
  int32_t ni = static_cast<int32_t>(n);
  int32_t a = ni >> 1, b = ni - a;
  float s1 = std::bit_cast<float>((a + 127) << 23);
  float s2 = std::bit_cast<float>((b + 127) << 23);
  return sel(x == x, p * s1 * s2, x);
}

KILN_INLINE float log_f(float x) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool sub = x < 1.17549435e-38f;  // subnormal (or <= 0, handled at the end)
  float xs = sel(sub, x * 8388608.0f, x);
  int32_t bits = std::bit_cast<int32_t>(xs);
  int32_t e = ((bits >> 23) & 0xff) - 126 - (23 & -static_cast<int32_t>(sub));
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  bool low = m < 0.707106781186547524f;
  e -= static_cast<int32_t>(low);
  float f = sel(low, m + m - 1.0f, m - 1.0f);
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  float fe = static_cast<float>(e);
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + fe * 0.693359375f;
  r = sel(x == kInf, kInf, r);
  r = sel(x == 0.0f, -kInf, r);
  r = sel(x < 0.0f, std::numeric_limits<float>::quiet_NaN(), r);
  return sel(x != x, x, r);
}

KILN_INLINE float tanh_f(float x) {
  float ax = std::fabs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  float big = std::copysign(1.0f - 2.0f / (exp_f(ax + ax) + 1.0f), x);
  return sel(ax < 0.625f, small, big);
}

KILN_INLINE float sigmoid_f(float x) { return 1.0f / (1.0f + exp_f(-x)); }
KILN_INLINE float silu_f(float x) { return x / (1.0f + exp_f(-x)); }  // as torch: silu(-inf) = nan

namespace vmath {
// Taylor coefficient n of erf in powers of x^2: 2/sqrt(pi) (-1)^n / (n! (2n+1)).
constexpr float erf_taylor(int n) {
  double c = 1.1283791670955126;
  for (int k = 1; k <= n; ++k) c = -c / k;
  return static_cast<float>(c / (2 * n + 1));
}
}  // namespace vmath

KILN_INLINE float erf_f(float x) {
  float ax = std::fabs(x);
  float z = x * x;
  // |x| < 1: Taylor series to x^21 (the next term is < 2e-9).
  float p = vmath::erf_taylor(10);
  p = p * z + vmath::erf_taylor(9);
  p = p * z + vmath::erf_taylor(8);
  p = p * z + vmath::erf_taylor(7);
  p = p * z + vmath::erf_taylor(6);
  p = p * z + vmath::erf_taylor(5);
  p = p * z + vmath::erf_taylor(4);
  p = p * z + vmath::erf_taylor(3);
  p = p * z + vmath::erf_taylor(2);
  p = p * z + vmath::erf_taylor(1);
  p = p * z + vmath::erf_taylor(0);
  float small = x * p;
  // |x| >= 1: 1 - erfc(|x|).
  float t = 1.0f / (1.0f + 0.5f * ax);
  float q = 0.17087277f;
  q = q * t - 0.82215223f;
  q = q * t + 1.48851587f;
  q = q * t - 1.13520398f;
  q = q * t + 0.27886807f;
  q = q * t - 0.18628806f;
  q = q * t + 0.09678418f;
  q = q * t + 0.37409196f;
  q = q * t + 1.00002368f;
  float erfc = t * exp_f(q * t - z - 1.26551223f);
  float big = std::copysign(1.0f - erfc, x);
  return sel(ax < 1.0f, small, big);
}

// Exact GELU, as torch's gelu(approximate='none').
KILN_INLINE float gelu_f(float x) { return 0.5f * x * (1.0f + erf_f(x * 0.707106781186547524f)); }

}  // namespace kiln::cpu
