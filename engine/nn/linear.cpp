#include "engine/nn/linear.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/init.h"

namespace kiln::nn {

Linear::Linear(int64_t in, int64_t out, bool has_bias) : in_features(in), out_features(out) {
  KILN_CHECK(in >= 0 && out >= 0, ValueError, "Linear: feature counts must be non-negative, got in_features=", in,
             ", out_features=", out);
  weight = register_parameter("weight", Tensor::empty({out, in}));
  if (has_bias) bias = register_parameter("bias", Tensor::empty({out}));
  reset_parameters();
}

void Linear::reset_parameters() { init::reset_linear_like(weight, bias); }

Tensor Linear::forward(const Tensor& x) {
  KILN_CHECK(x.dim() >= 1 && x.size(-1) == in_features, ShapeError, "Linear: input of shape ", shape_str(x.shape()),
             " does not end with in_features=", in_features);
  return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return detail::str_cat("in_features=", in_features, ", out_features=", out_features,
                         ", bias=", bias.defined() ? "True" : "False");
}

}  // namespace kiln::nn
