#include "engine/quant/observer.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace kiln::quant {

const char* calibration_name(Calibration c) {
  switch (c) {
    case Calibration::minmax: return "minmax";
    case Calibration::percentile: return "percentile";
    case Calibration::entropy: return "entropy";
  }
  return "?";
}

Calibration parse_calibration(const std::string& text) {
  for (Calibration c : {Calibration::minmax, Calibration::percentile, Calibration::entropy})
    if (text == calibration_name(c)) return c;
  throw ValueError("unknown calibration method '" + text + "'; known: minmax, percentile, entropy");
}

void Observer::observe(const Tensor& x) {
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "layer '", layer_, "': observers take floating tensors, got ",
             dtype_name(x.dtype()));
  const std::vector<float> v = x.numel() ? x.to_vector<float>() : std::vector<float>{};
  for (size_t i = 0; i < v.size(); ++i)
    KILN_CHECK(std::isfinite(v[i]), ValueError, "layer '", layer_, "': activation holds ",
               std::isnan(v[i]) ? "NaN" : "Inf", " (calibration batch ", batches_ + 1, ", element ", i, ")");
  ++batches_;
  if (v.empty()) return;
  values_ += static_cast<int64_t>(v.size());
  update(v.data(), static_cast<int64_t>(v.size()));
}

Range Observer::range() const {
  KILN_CHECK(values_ > 0, ValueError, "layer '", layer_, "': no calibration data observed (", batches_,
             " batches; empty calibration set?)");
  return compute_range();
}

namespace {
Range batch_range(const float* data, int64_t count) {
  const auto [mn, mx] = std::minmax_element(data, data + count);
  return {*mn, *mx};
}
}  // namespace

void MinMaxObserver::update(const float* data, int64_t count) {
  const Range b = batch_range(data, count);
  r_ = seen_ ? Range{std::min(r_.min, b.min), std::max(r_.max, b.max)} : b;
  seen_ = true;
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(std::string layer, double averaging_constant)
    : Observer(std::move(layer)), c_(averaging_constant) {
  KILN_CHECK(c_ > 0 && c_ <= 1, ValueError, "layer '", this->layer(), "': averaging_constant must be in (0, 1], got ",
             c_);
}

void MovingAverageMinMaxObserver::update(const float* data, int64_t count) {
  const Range b = batch_range(data, count);
  if (!seen_) r_ = b;
  else r_ = {r_.min + c_ * (b.min - r_.min), r_.max + c_ * (b.max - r_.max)};
  seen_ = true;
}

HistogramObserver::HistogramObserver(std::string layer, Calibration method, int64_t bins, double percentile)
    : Observer(std::move(layer)), method_(method), percentile_(percentile), h_(std::max<int64_t>(bins, 2)) {
  KILN_CHECK(bins >= 256, ValueError, "layer '", this->layer(), "': a histogram needs >= 256 bins, got ", bins);
  KILN_CHECK(percentile > 50 && percentile <= 100, ValueError, "layer '", this->layer(),
             "': percentile must be in (50, 100], got ", percentile);
}

Range HistogramObserver::compute_range() const {
  switch (method_) {
    case Calibration::minmax: return {h_.min_seen(), h_.max_seen()};
    case Calibration::percentile: return percentile_range(h_, percentile_);
    case Calibration::entropy: return entropy_range(h_, 256);
  }
  return {};
}

std::unique_ptr<Observer> make_observer(const std::string& layer, Calibration method) {
  if (method == Calibration::minmax) return std::make_unique<MinMaxObserver>(layer);
  return std::make_unique<HistogramObserver>(layer, method);
}

}  // namespace kiln::quant
