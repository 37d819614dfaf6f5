#include "engine/quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace kiln::quant {

Histogram::Histogram(int64_t bins) {
  KILN_CHECK(bins >= 2, ValueError, "Histogram: bins must be >= 2, got ", bins);
  counts_.assign(static_cast<size_t>(bins), 0);
}

void Histogram::grow(double new_min, double new_max) {
  const double B = static_cast<double>(bins());
  const double L = std::min(lo_, new_min), H = std::max(hi(), new_max);
  // j old bins prepended on the left; the new width is k old widths.
  const double j = std::ceil((lo_ - L) / width_);
  const double need = (H - (lo_ - j * width_)) / width_;  // old bins the new range must span
  double k = std::max(2.0, std::ceil(need / B));
  while (lo_ - j * width_ + k * width_ * B < H) k += 1;  // rounding guard
  std::vector<int64_t> merged(counts_.size(), 0);
  for (size_t i = 0; i < counts_.size(); ++i) {
    const auto m = static_cast<size_t>(std::floor((static_cast<double>(i) + j) / k));
    merged[std::min(m, merged.size() - 1)] += counts_[i];
  }
  counts_ = std::move(merged);
  lo_ -= j * width_;
  width_ *= k;
}

void Histogram::add(const float* data, int64_t count) {
  if (count <= 0) return;
  float mn = data[0], mx = data[0];
  for (int64_t i = 1; i < count; ++i) {
    mn = std::min(mn, data[i]);
    mx = std::max(mx, data[i]);
  }
  if (total_ == 0) {
    min_ = mn;
    max_ = mx;
    lo_ = mn;
    // A single value still gets a range of positive width: its magnitude's 1e-6, or 1e-6.
    const double span = std::max<double>(mx - mn, 1e-6 * std::max(1.0, std::fabs(double(mn))));
    width_ = span / static_cast<double>(bins());
    if (lo_ + width_ * static_cast<double>(bins()) <= mx) width_ = std::nextafter(width_, INFINITY);
  } else {
    min_ = std::min<double>(min_, mn);
    max_ = std::max<double>(max_, mx);
    if (mn < lo_ || mx >= hi()) grow(mn, mx);
  }
  const double inv = 1.0 / width_;
  const int64_t last = bins() - 1;
  for (int64_t i = 0; i < count; ++i) {
    const auto b = static_cast<int64_t>(std::floor((double(data[i]) - lo_) * inv));
    ++counts_[static_cast<size_t>(std::clamp<int64_t>(b, 0, last))];
  }
  total_ += count;
}

double Histogram::quantile(double q) const {
  KILN_CHECK(total_ > 0, ValueError, "Histogram::quantile: no values");
  KILN_CHECK(q >= 0 && q <= 1, ValueError, "Histogram::quantile: q must be in [0, 1], got ", q);
  const double target = q * static_cast<double>(total_);
  double below = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    const double c = static_cast<double>(counts_[i]);
    if (c > 0 && below + c >= target) {
      const double v = lo_ + width_ * (static_cast<double>(i) + (target - below) / c);
      return std::clamp(v, min_, max_);
    }
    below += c;
  }
  return max_;
}

Range percentile_range(const Histogram& h, double percentile) {
  KILN_CHECK(percentile > 50 && percentile <= 100, ValueError, "percentile must be in (50, 100], got ", percentile);
  KILN_CHECK(!h.empty(), ValueError, "percentile calibration: no values observed");
  return {h.quantile(1 - percentile / 100), h.quantile(percentile / 100)};
}

namespace {

// MXNet's _smooth_distribution, on counts: moves eps onto each empty bin, taken evenly from the
// others, so that KL(P || Q) stays finite. Returns false when p has no mass.
bool smooth(std::vector<double>& p, double eps = 1e-4) {
  size_t zeros = 0;
  for (double v : p) zeros += v == 0;
  const size_t nonzeros = p.size() - zeros;
  if (nonzeros == 0) return false;
  const double take = eps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& v : p) v += v == 0 ? eps : -take;
  return true;
}

// scipy.stats.entropy(p, q): both normalized, sum p log(p / q).
double kl_divergence(std::vector<double>& p, std::vector<double>& q) {
  if (!smooth(p) || !smooth(q)) return INFINITY;
  double sp = 0, sq = 0;
  for (double v : p) sp += v;
  for (double v : q) sq += v;
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double a = p[i] / sp, b = q[i] / sq;
    if (a > 0) kl += b > 0 ? a * std::log(a / b) : INFINITY;
  }
  return kl;
}

// KL(P || Q) of keeping bins [a, b) of the counts c quantized to `levels` groups (MXNet's loop
// body): P is the window with the counts outside added to its end bins; Q merges the window's own
// counts into `levels` groups (the last takes the remainder) and spreads each group's sum over
// the bins where P is not empty.
double window_kl(const std::vector<int64_t>& c, int64_t a, int64_t b, int64_t levels) {
  const int64_t n = b - a;
  std::vector<double> plain(static_cast<size_t>(n)), q(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) plain[i] = static_cast<double>(c[a + i]);
  std::vector<double> p = plain;
  for (int64_t i = 0; i < a; ++i) p[0] += static_cast<double>(c[i]);
  for (size_t i = static_cast<size_t>(b); i < c.size(); ++i) p[n - 1] += static_cast<double>(c[i]);
  const int64_t merged = n / levels;
  for (int64_t g = 0; g < levels; ++g) {
    const int64_t s = g * merged, e = g == levels - 1 ? n : s + merged;
    double sum = 0;
    int64_t nonempty = 0;
    for (int64_t i = s; i < e; ++i) {
      sum += plain[i];
      nonempty += p[i] != 0;
    }
    if (nonempty == 0) continue;
    for (int64_t i = s; i < e; ++i) q[i] = p[i] != 0 ? sum / static_cast<double>(nonempty) : 0;
  }
  return kl_divergence(p, q);
}

}  // namespace

Range entropy_range(const Histogram& h, int64_t levels) {
  KILN_CHECK(!h.empty(), ValueError, "entropy calibration: no values observed");
  KILN_CHECK(levels >= 2 && levels <= h.bins(), ValueError, "entropy calibration: levels must be in [2, ", h.bins(),
             "], got ", levels);
  const int64_t B = h.bins();
  // The bins the values occupy, [first, last), and the bin position of 0 clamped into them.
  const auto bin_of = [&](double v) {
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor((v - h.lo()) / h.width())), 0, B - 1);
  };
  const int64_t first = bin_of(h.min_seen()), last = bin_of(h.max_seen()) + 1, span = last - first;
  const double z = std::clamp((0.0 - h.lo()) / h.width(), static_cast<double>(first), static_cast<double>(last));
  if (span <= levels) return {h.min_seen(), h.max_seen()};  // the grid resolves every occupied bin
  double best = INFINITY;
  int64_t best_a = first, best_b = last;
  for (int64_t i = levels; i <= span; ++i) {
    const double f = static_cast<double>(i) / static_cast<double>(span);
    const auto a = static_cast<int64_t>(std::llround(z - (z - static_cast<double>(first)) * f));
    const auto b = static_cast<int64_t>(std::llround(z + (static_cast<double>(last) - z) * f));
    if (b - a < levels) continue;
    const double kl = window_kl(h.counts(), a, b, levels);
    if (kl < best) {
      best = kl;
      best_a = a;
      best_b = b;
    }
  }
  const double lo = h.lo() + h.width() * static_cast<double>(best_a);
  const double hi = h.lo() + h.width() * static_cast<double>(best_b);
  return {std::clamp(lo, h.min_seen(), h.max_seen()), std::clamp(hi, h.min_seen(), h.max_seen())};
}

}  // namespace kiln::quant
