// Parameter initializers (torch.nn.init). Each fills `t` in place (no autograd)
// and returns it; random ones draw from `gen`, or kiln::default_generator() when
// null, so kiln::manual_seed(s) gives identical weights on every run and device.
#pragma once
#include <string>
#include <utility>

#include "engine/core/random.h"
#include "engine/core/tensor.h"

namespace kiln::nn::init {

// (fan_in, fan_out) of a weight [out, in, *kernel]: in * prod(kernel), out * prod(kernel)
// (torch.nn.init._calculate_fan_in_and_fan_out). ValueError for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// Recommended gain of a nonlinearity (torch.nn.init.calculate_gain): "linear", "conv2d",
// "sigmoid" -> 1, "tanh" -> 5/3, "relu" -> sqrt(2), "leaky_relu" -> sqrt(2 / (1 + param^2))
// (param = negative slope, 0.01 when negative), "selu" -> 3/4. ValueError otherwise.
double calculate_gain(const std::string& nonlinearity, double param = -1);

enum class FanMode { fan_in, fan_out };

Tensor& uniform_(Tensor& t, double low = 0, double high = 1, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1, Generator* gen = nullptr);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010).
Tensor& xavier_uniform_(Tensor& t, double gain = 1, Generator* gen = nullptr);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1, Generator* gen = nullptr);
// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a) (He et al. 2015).
// nn.Linear / nn.Conv2d use a = sqrt(5), which gives b = 1 / sqrt(fan_in).
Tensor& kaiming_uniform_(Tensor& t, double a = 0, FanMode mode = FanMode::fan_in,
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
// N(0, std^2) with std = gain / sqrt(fan).
Tensor& kaiming_normal_(Tensor& t, double a = 0, FanMode mode = FanMode::fan_in,
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);

// torch.nn.Linear / Conv2d reset_parameters(): weight by kaiming_uniform_(a = sqrt(5)),
// bias (when defined) by U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in of the weight.
void reset_linear_like(Tensor& weight, Tensor& bias, Generator* gen = nullptr);

}  // namespace kiln::nn::init
