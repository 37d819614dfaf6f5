#include "engine/core/node.h"

namespace kiln {

const char* op_kind_name(OpKind k) {
  static const char* names[] = {
      "reshape", "permute", "expand", "slice", "cast", "contiguous", "cat",
      "add", "sub", "mul", "div", "neg", "pow", "pow_scalar", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt",
      "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "abs", "leaky_relu", "clamp",
      "maximum", "minimum", "where",
      "sum", "mean", "prod", "amax", "amin", "var",
      "matmul", "conv2d", "max_pool2d", "avg_pool2d", "softmax", "log_softmax",
      "gather", "scatter_add", "index_select", "index_add", "batch_norm"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(OpKind::count));
  return names[static_cast<int>(k)];
}

}  // namespace kiln
