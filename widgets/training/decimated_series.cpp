#include "widgets/training/decimated_series.h"

namespace kiln::studio {

DecimatedSeries::DecimatedSeries() : raw_(new QCPGraphDataContainer) {
  int64_t b = 1;
  for (Level& l : levels_) {
    b *= kBucketFactor;
    l.bucket = b;
    l.data.reset(new QCPGraphDataContainer);
  }
}

void DecimatedSeries::clear() {
  raw_->clear();
  for (Level& l : levels_) {
    l.data->clear();
    l.filled = 0;
  }
}

void DecimatedSeries::append(const double* keys, const double* values, qsizetype n) {
  if (n <= 0) return;
  QVector<QCPGraphData> points(n);
  for (qsizetype i = 0; i < n; ++i) points[i] = QCPGraphData(keys[i], values[i]);
  raw_->add(points, true);
  for (Level& l : levels_) {
    QVector<QCPGraphData> out;
    for (qsizetype i = 0; i < n; ++i) {
      const QCPGraphData& p = points[i];
      if (l.filled == 0) {
        l.lo = l.hi = p;
      } else {
        if (p.value < l.lo.value) l.lo = p;
        if (p.value > l.hi.value) l.hi = p;
      }
      if (++l.filled == l.bucket) {
        if (l.lo.key <= l.hi.key) out << l.lo << l.hi;
        else out << l.hi << l.lo;
        l.filled = 0;
      }
    }
    if (!out.isEmpty()) l.data->add(out, true);
  }
}

QSharedPointer<QCPGraphDataContainer> DecimatedSeries::forView(double lower, double upper, double pixels) const {
  const double visible = static_cast<double>(raw_->findEnd(upper, false) - raw_->findBegin(lower, false));
  pixels = std::max(pixels, 1.0);
  if (visible <= 8 * pixels) return raw_;
  QSharedPointer<QCPGraphDataContainer> best = raw_;
  for (const Level& l : levels_)
    if (visible / static_cast<double>(l.bucket) >= pixels && !l.data->isEmpty()) best = l.data;
  return best;
}

}  // namespace kiln::studio
