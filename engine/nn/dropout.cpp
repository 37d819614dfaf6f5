#include "engine/nn/dropout.h"

#include <sstream>

#include "engine/core/error.h"
#include "engine/nn/functional.h"

namespace kiln::nn {

Dropout::Dropout(double p_) : p(p_) {
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "Dropout: probability has to be between 0 and 1, but got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return functional::dropout(x, p, training_); }

std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p << ", inplace=False";
  return os.str();
}

}  // namespace kiln::nn
