#include "engine/core/node.h"

namespace kiln {

const char* op_kind_name(OpKind k) {
  static const char* names[] = {
      "reshape", "permute", "expand", "slice", "cast", "contiguous", "cat",
#define KILN_OPKIND_NAME_IF_1(name) #name,
#define KILN_OPKIND_NAME_IF_0(name)
#define KILN_BINARY_OP(name, compare, grad) KILN_OPKIND_NAME_IF_##grad(name)
#include "engine/core/elementwise_ops.def"
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_OPKIND_NAME_IF_##grad(name)
#include "engine/core/elementwise_ops.def"
#undef KILN_OPKIND_NAME_IF_1
#undef KILN_OPKIND_NAME_IF_0
      "where",
      "sum", "mean", "prod", "amax", "amin", "var",
      "matmul", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "softmax", "log_softmax",
      "gather", "scatter_add", "index_select", "index_add", "batch_norm",
      "fake_quantize"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(OpKind::count));
  return names[static_cast<int>(k)];
}

}  // namespace kiln
