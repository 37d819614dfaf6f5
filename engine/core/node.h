// The recorded autograd graph: a Node per differentiable op application.
// Core ops only record (ops.h); engine/autograd owns the backward rules (one per
// OpKind, in one table) and the backward pass.
#pragma once
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "engine/core/nn_params.h"

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
  matmul, conv2d, conv_transpose2d, max_pool2d, avg_pool2d, softmax, log_softmax,
  gather, scatter_add, index_select, index_add,
  batch_norm,  // the fused training-mode op (ops.h batch_norm_training)
  fake_quantize,  // per tensor and per channel (ops.h); saved: the mask of the straight-through gradient
  count
};
#undef KILN_OPKIND_IF_1
#undef KILN_OPKIND_IF_0
const char* op_kind_name(OpKind k);

// What a backward rule needs to know of an op besides its tensors: one type per family of
// ops, recorded by the front end (engine/core/ops_*.cpp, tensor.cpp) and read by
// engine/autograd/rules.cpp with std::get (a mismatch throws std::bad_variant_access).
namespace op_attrs {
struct None {};
struct Scalars {  // unary ops: Backend::unary's p0, p1 (leaky_relu's slope, clamp's bounds, pow's exponent)
  double p0 = 0, p1 = 0;
};
struct Permute {
  std::vector<int64_t> dims;  // the permutation, non-negative
};
struct Slice {
  int64_t dim, start, end, step;  // normalized: 0 <= start <= end <= size, step >= 1
};
struct Cat {
  int64_t dim;                 // normalized
  std::vector<int64_t> sizes;  // each input's size along dim
};
struct Reduce {
  std::vector<int64_t> dims;  // normalized, the reduced dimensions
  bool keepdim = false;
  double correction = 0;  // var: Bessel's correction
};
struct Dim {  // softmax, log_softmax, gather, scatter_add, index_select, index_add
  int64_t dim;
};
struct BatchNorm {
  bool has_weight, has_bias;
};
}  // namespace op_attrs
using OpAttrs = std::variant<op_attrs::None, op_attrs::Scalars, op_attrs::Permute, op_attrs::Slice, op_attrs::Cat,
                             op_attrs::Reduce, op_attrs::Dim, op_attrs::BatchNorm, Conv2dParams, Pool2dParams>;

struct Node {
  OpKind kind;
  std::vector<std::shared_ptr<TensorImpl>> inputs;  // the op's tensor inputs, in order
  std::vector<std::shared_ptr<TensorImpl>> saved;   // extra tensors the rule needs (detached)
  OpAttrs attrs;                                    // the op's attributes (op_attrs above)
  int64_t sequence = 0;                             // creation order, for a stable backward order
};

}  // namespace kiln
