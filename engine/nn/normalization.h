// Normalization layers (torch.nn.BatchNorm1d, BatchNorm2d, LayerNorm).
#pragma once
#include <optional>
#include <vector>

#include "engine/nn/module.h"

namespace kiln::nn {

// Batch normalization (Ioffe & Szegedy 2015; torch's _BatchNorm).
// Parameters weight (ones) and bias (zeros) [C] when affine; buffers running_mean (zeros),
// running_var (ones) [C] and num_batches_tracked (0-d i64) when track_running_stats, in that
// state_dict order. Training normalizes by the batch mean and biased variance and updates
//   running = (1 - momentum) * running + momentum * batch_stat
// with the unbiased batch variance; momentum = nullopt uses the cumulative average
// (factor 1 / num_batches_tracked). Evaluation normalizes by the running stats (by batch
// stats when they are not tracked).
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
            bool track_running_stats);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_running_stats();
  void reset_parameters();

  const int64_t num_features;
  const double eps;
  const std::optional<double> momentum;
  const bool affine, track_running_stats;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless tracked

 protected:
  virtual void check_input(const Tensor& x) const = 0;  // ShapeError naming the expected rank
};

// x [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  std::string type_name() const override { return "BatchNorm1d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

// x [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  std::string type_name() const override { return "BatchNorm2d"; }

 protected:
  void check_input(const Tensor& x) const override;
};

// Layer normalization (Ba et al. 2016; torch.nn.LayerNorm): normalizes x [*, normalized_shape]
// over its last dims with the biased variance; weight (ones) and bias (zeros) of
// normalized_shape when elementwise_affine. Same in training and evaluation.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(std::vector<int64_t>{normalized_size}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;

  const std::vector<int64_t> normalized_shape;
  const double eps;
  const bool elementwise_affine;
  Tensor weight, bias;  // undefined unless elementwise_affine
};

}  // namespace kiln::nn
