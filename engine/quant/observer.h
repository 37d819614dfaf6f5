// Calibration observers: they watch the float tensors that flow out of a layer during
// calibration batches and give the range [min, max] that its int8 scheme (scheme.h) maps onto
// the integer grid. All keep O(1) memory however many batches they see.
//   MinMaxObserver               exact running min and max (torch.ao.quantization.MinMaxObserver)
//   MovingAverageMinMaxObserver  min += c (batch_min - min), the same for max, c = averaging
//                                constant (torch.ao.quantization.MovingAverageMinMaxObserver,
//                                default c = 0.01; the first batch sets both)
//   HistogramObserver            a streaming histogram of a fixed bin count whose range grows by
//                                merging neighbouring bins (histogram.h), calibrated by percentile
//                                or by entropy (KL divergence, TensorRT's method).
// Every observer is named after its layer; errors name it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/tensor.h"
#include "engine/quant/histogram.h"

namespace kiln::quant {

// How a HistogramObserver turns its histogram into a range.
enum class Calibration { minmax, percentile, entropy };
// "minmax", "percentile", "entropy"; parse_calibration: ValueError listing them for another text.
const char* calibration_name(Calibration c);
Calibration parse_calibration(const std::string& text);

class Observer {
 public:
  explicit Observer(std::string layer) : layer_(std::move(layer)) {}
  virtual ~Observer() = default;
  // Watches one batch (any shape, floating dtype, any device; read back to the host).
  // ValueError "layer 'conv1': activation holds NaN (calibration batch 3)" for NaN or ±Inf
  // (the observer is unchanged then); DTypeError for a non-floating tensor. An empty tensor
  // counts as a batch without values.
  void observe(const Tensor& x);
  // The calibrated range. ValueError "layer 'conv1': no calibration data observed (empty
  // calibration set?)" before any value was seen.
  Range range() const;
  int64_t batches() const { return batches_; }
  int64_t values() const { return values_; }
  const std::string& layer() const { return layer_; }

 protected:
  // One batch's finite values (count >= 1).
  virtual void update(const float* data, int64_t count) = 0;
  virtual Range compute_range() const = 0;

 private:
  std::string layer_;
  int64_t batches_ = 0, values_ = 0;
};

class MinMaxObserver : public Observer {
 public:
  using Observer::Observer;

 protected:
  void update(const float* data, int64_t count) override;
  Range compute_range() const override { return r_; }

 private:
  Range r_;
  bool seen_ = false;
};

class MovingAverageMinMaxObserver : public Observer {
 public:
  // averaging_constant in (0, 1]; ValueError otherwise.
  MovingAverageMinMaxObserver(std::string layer, double averaging_constant = 0.01);

 protected:
  void update(const float* data, int64_t count) override;
  Range compute_range() const override { return r_; }

 private:
  double c_;
  Range r_;
  bool seen_ = false;
};

class HistogramObserver : public Observer {
 public:
  // bins >= 256 (kDefaultBins 2048, TensorRT's); percentile in (50, 100] (default 99.99, as
  // NVIDIA's pytorch-quantization calibrator's common setting). ValueError otherwise.
  HistogramObserver(std::string layer, Calibration method, int64_t bins = Histogram::kDefaultBins,
                    double percentile = 99.99);
  const Histogram& histogram() const { return h_; }
  Calibration method() const { return method_; }

 protected:
  void update(const float* data, int64_t count) override { h_.add(data, count); }
  Range compute_range() const override;

 private:
  Calibration method_;
  double percentile_;
  Histogram h_;
};

// The observer for a calibration method: minmax -> MinMaxObserver, percentile and entropy ->
// HistogramObserver.
std::unique_ptr<Observer> make_observer(const std::string& layer, Calibration method);

}  // namespace kiln::quant
