#include "engine/nn/init.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"

namespace kiln::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  KILN_CHECK(t.dim() >= 2, ValueError, "init: fan in and fan out cannot be computed for a tensor of shape ",
             shape_str(t.shape()), " (fewer than 2 dimensions)");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "sigmoid" ||
      nl == "conv_transpose1d" || nl == "conv_transpose2d" || nl == "conv_transpose3d")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    double slope = param < 0 ? 0.01 : param;
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nl == "selu") return 0.75;
  throw ValueError("calculate_gain: unsupported nonlinearity \"" + nl + "\"");
}

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard no_grad;
  t.copy_(uniform(t.shape(), low, high, t.dtype(), t.device(), gen));
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;
  t.copy_(normal(t.shape(), mean, std, t.dtype(), t.device(), gen));
  return t;
}

Tensor& constant_(Tensor& t, double value) {
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  double bound = std::sqrt(3.0) * std;
  return uniform_(t, -bound, bound, gen);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

namespace {
double kaiming_std(const Tensor& t, double a, FanMode mode, const std::string& nonlinearity) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  int64_t fan = mode == FanMode::fan_in ? fan_in : fan_out;
  KILN_CHECK(fan > 0, ValueError, "init: cannot initialize a tensor of shape ", shape_str(t.shape()),
             " with zero fan");
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a, FanMode mode, const std::string& nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;  // a no-op, as PyTorch (which warns)
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(t, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& t, double a, FanMode mode, const std::string& nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

void reset_linear_like(Tensor& weight, Tensor& bias, Generator* gen) {
  kaiming_uniform_(weight, std::sqrt(5.0), FanMode::fan_in, "leaky_relu", gen);
  if (bias.defined()) {
    int64_t fan_in = calculate_fan_in_and_fan_out(weight).first;
    double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    uniform_(bias, -bound, bound, gen);
  }
}

}  // namespace kiln::nn::init
