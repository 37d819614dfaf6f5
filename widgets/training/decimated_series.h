// DecimatedSeries: a curve of increasing keys (steps) with min/max levels of detail, so
// that a plot of 1,000,000 points draws a few thousand. Level k keeps, for each bucket of
// 8^k consecutive points, the point with the smallest and the one with the largest value
// (in key order): at one bucket per pixel column or less it draws exactly the envelope of
// the raw points (the "min-max" decimation of time-series plotting). The last, incomplete
// bucket of a level is not shown at that level (less than one pixel wide when it is used).
#pragma once
#include <qcustomplot.h>

#include <array>
#include <cstdint>

namespace kiln::studio {

class DecimatedSeries {
 public:
  static constexpr int kLevels = 5;        // buckets of 8, 64, 512, 4096, 32768 points
  static constexpr int kBucketFactor = 8;
  DecimatedSeries();
  void clear();
  // Keys must increase (also across calls); n points from keys/values.
  void append(const double* keys, const double* values, qsizetype n);
  int64_t size() const { return raw_->size(); }
  QSharedPointer<QCPGraphDataContainer> raw() const { return raw_; }
  // What to draw for a view of keys [lower, upper] that is `pixels` wide: the raw points
  // when there are at most 8 per pixel in view, else the coarsest level that still has
  // at least one bucket per pixel.
  QSharedPointer<QCPGraphDataContainer> forView(double lower, double upper, double pixels) const;

 private:
  struct Level {
    int64_t bucket = 0;
    QSharedPointer<QCPGraphDataContainer> data;
    int64_t filled = 0;  // points in the current bucket
    QCPGraphData lo, hi;
  };
  QSharedPointer<QCPGraphDataContainer> raw_;
  std::array<Level, kLevels> levels_;
};

}  // namespace kiln::studio
