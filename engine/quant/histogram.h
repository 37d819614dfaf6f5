// A streaming histogram with a fixed number of bins (bounded memory however many values it
// sees): the first values set the range [lo, hi); a value outside it grows the range by an
// integer factor k >= 2, merging each k neighbouring bins into one, with the new edges on old
// edges so that no count moves between bins (a value's bin only ever gets coarser). Counts are
// exact integers. Used by HistogramObserver (observer.h) for percentile and entropy calibration.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::quant {

// A real-valued range, min <= max (units of the observed tensor).
struct Range {
  double min = 0, max = 0;
  bool operator==(const Range&) const = default;
};

class Histogram {
 public:
  static constexpr int64_t kDefaultBins = 2048;  // TensorRT's entropy calibrator's bin count
  // bins >= 2; ValueError otherwise.
  explicit Histogram(int64_t bins = kDefaultBins);
  // Adds finite values (the caller checks for NaN/Inf); count 0 is a no-op.
  void add(const float* data, int64_t count);
  int64_t bins() const { return static_cast<int64_t>(counts_.size()); }
  double lo() const { return lo_; }
  double hi() const { return lo_ + width_ * static_cast<double>(counts_.size()); }
  double width() const { return width_; }  // of one bin
  const std::vector<int64_t>& counts() const { return counts_; }
  int64_t total() const { return total_; }
  bool empty() const { return total_ == 0; }
  double min_seen() const { return min_; }  // exact extremes of the values added
  double max_seen() const { return max_; }
  // The value below which a fraction q in [0, 1] of the values lie, interpolated linearly
  // within a bin and clamped to [min_seen, max_seen]. ValueError when empty.
  double quantile(double q) const;

 private:
  void grow(double new_min, double new_max);
  std::vector<int64_t> counts_;
  double lo_ = 0, width_ = 0, min_ = 0, max_ = 0;
  int64_t total_ = 0;
};

// Percentile calibration: [quantile(1 - p/100), quantile(p/100)], p in (50, 100].
// ValueError when empty or p out of range.
Range percentile_range(const Histogram& h, double percentile);

// Entropy calibration (TensorRT; Migacz, "8-bit Inference with TensorRT", GTC 2017, slides
// 29-37; the open-source version followed here is MXNet's _get_optimal_threshold in
// python/mxnet/contrib/quantization.py, with its smoothing of counts by eps 1e-4): among clipping
// windows that shrink the observed extent [min_seen, max_seen] toward 0 (both ends in proportion,
// so 0 keeps its place; for data >= 0 this is TensorRT's search over thresholds [0, t]), pick the
// one whose distribution P (the window's counts, with the counts outside added to its end bins)
// loses the least information when quantized to `levels` levels: minimal KL(P || Q), where Q
// merges the window's counts into `levels` groups and spreads each group's sum evenly over the
// bins where P is not empty. levels = 256 for an 8-bit grid; data occupying at most `levels`
// bins is not clipped. ValueError when empty, levels < 2 or levels > bins.
Range entropy_range(const Histogram& h, int64_t levels = 256);

}  // namespace kiln::quant
