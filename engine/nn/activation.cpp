#include "engine/nn/activation.h"

#include <sstream>

#include "engine/core/error.h"
#include "engine/core/ops.h"

namespace kiln::nn {

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope); }
GELU::GELU(std::string a) : approximate(std::move(a)) {
  KILN_CHECK(approximate == "none" || approximate == "tanh", ValueError,
             "GELU: approximate must be 'none' or 'tanh', got '", approximate, "'");
}

Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim); }
Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, dim); }

std::string LeakyReLU::extra_repr() const {
  std::ostringstream os;
  os << "negative_slope=" << negative_slope;
  return os.str();
}

}  // namespace kiln::nn
