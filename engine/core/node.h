// The recorded autograd graph: a Node per differentiable op application.
// Core ops only record (ops.h); engine/autograd owns the backward rules (one per
// OpKind, in one table) and the backward pass.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace kiln {

class Tensor;
struct TensorImpl;

// The elementwise kinds are the differentiable rows of engine/core/elementwise_ops.def.
#define KILN_OPKIND_IF_1(name) name,
#define KILN_OPKIND_IF_0(name)
enum class OpKind : uint16_t {
  // views and copies
  reshape, permute, expand, slice, cast, contiguous, cat,
  // elementwise
#define KILN_BINARY_OP(name, compare, grad) KILN_OPKIND_IF_##grad(name)
#include "engine/core/elementwise_ops.def"
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_OPKIND_IF_##grad(name)
#include "engine/core/elementwise_ops.def"
  where,
  // reductions
  sum, mean, prod, amax, amin, var,
  // linear algebra and nn
  matmul, conv2d, max_pool2d, avg_pool2d, softmax, log_softmax,
  gather, scatter_add, index_select, index_add,
  batch_norm,  // the fused training-mode op (ops.h batch_norm_training)
  count
};
#undef KILN_OPKIND_IF_1
#undef KILN_OPKIND_IF_0
const char* op_kind_name(OpKind k);

struct Node {
  OpKind kind;
  std::vector<std::shared_ptr<TensorImpl>> inputs;  // the op's tensor inputs, in order
  std::vector<std::shared_ptr<TensorImpl>> saved;   // extra tensors the rule needs (detached)
  std::vector<int64_t> ints;                        // integer attributes, per op (see ops.cpp)
  std::vector<double> reals;                        // real attributes, per op
  int64_t sequence = 0;                             // creation order, for a stable backward order
};

}  // namespace kiln
