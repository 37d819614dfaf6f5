#include "engine/nn/normalization.h"

#include <sstream>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/nn/functional.h"

namespace kiln::nn {

namespace {
const char* py_bool(bool b) { return b ? "True" : "False"; }
}  // namespace

// ---------------------------------------------------------------- BatchNorm

BatchNorm::BatchNorm(int64_t n, double eps_, std::optional<double> momentum_, bool affine_, bool track)
    : num_features(n), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  KILN_CHECK(n > 0, ValueError, "BatchNorm: num_features must be positive, got ", n);
  if (affine) {
    weight = register_parameter("weight", Tensor::ones({n}));
    bias = register_parameter("bias", Tensor::zeros({n}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", Tensor::zeros({n}));
    running_var = register_buffer("running_var", Tensor::ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor::zeros({}, DType::i64));
  }
}

void BatchNorm::reset_running_stats() {
  if (!track_running_stats) return;
  running_mean.fill_(0);
  running_var.fill_(1);
  num_batches_tracked.fill_(0);
}

void BatchNorm::reset_parameters() {
  reset_running_stats();
  if (affine) {
    weight.fill_(1);
    bias.fill_(0);
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  KILN_CHECK(x.size(1) == num_features, ShapeError, type_name(), ": input of shape ", shape_str(x.shape()), " has ",
             x.size(1), " channels, expected num_features=", num_features);
  double factor = momentum.value_or(0.0);
  if (training_ && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.copy_(add(num_batches_tracked, scalar_like(1.0, num_batches_tracked)));
    // Reading the count back synchronizes, so only the cumulative average does it.
    if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  bool use_running = !training_ || track_running_stats;
  return functional::batch_norm(x, use_running ? running_mean : Tensor(), use_running ? running_var : Tensor(),
                                weight, bias, training_ || !track_running_stats, factor, eps);
}

std::string BatchNorm::extra_repr() const {
  std::ostringstream os;
  os << num_features << ", eps=" << eps << ", momentum=";
  if (momentum)
    os << *momentum;
  else
    os << "None";
  os << ", affine=" << py_bool(affine) << ", track_running_stats=" << py_bool(track_running_stats);
  return os.str();
}

void BatchNorm1d::check_input(const Tensor& x) const {
  KILN_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "BatchNorm1d: expected 2D or 3D input [N, C] or [N, C, L], ",
             "got ", x.dim(), "D input of shape ", shape_str(x.shape()));
}

void BatchNorm2d::check_input(const Tensor& x) const {
  KILN_CHECK(x.dim() == 4, ShapeError, "BatchNorm2d: expected 4D input [N, C, H, W], got ", x.dim(),
             "D input of shape ", shape_str(x.shape()));
}

// ---------------------------------------------------------------- LayerNorm

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine)
    : normalized_shape(std::move(shape)), eps(eps_), elementwise_affine(affine) {
  KILN_CHECK(!normalized_shape.empty(), ValueError, "LayerNorm: normalized_shape cannot be empty");
  if (affine) {
    weight = register_parameter("weight", Tensor::ones(normalized_shape));
    bias = register_parameter("bias", Tensor::zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) { return functional::layer_norm(x, normalized_shape, weight, bias, eps); }

std::string LayerNorm::extra_repr() const {
  std::string dims;  // a Python tuple: "(10,)" or "(3, 4)"
  for (size_t i = 0; i < normalized_shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  if (normalized_shape.size() == 1) dims += ",";
  std::ostringstream os;
  os << "(" << dims << "), eps=" << eps << ", elementwise_affine=" << py_bool(elementwise_affine);
  return os.str();
}

}  // namespace kiln::nn
