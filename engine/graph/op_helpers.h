// Internal to engine/graph: helpers shared by the op definitions (ops_*.cpp) and the
// registration entry points OpRegistry::global() calls.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph::detail {

void register_io_tensor_ops(OpRegistry& r);    // ops_tensor.cpp: Input, Output, Add, Mul, Concat, Reshape, Flatten, Identity
void register_layer_ops(OpRegistry& r);        // ops_layers.cpp: Linear, Conv2d, ConvTranspose2d, Embedding
void register_norm_pool_ops(OpRegistry& r);    // ops_norm_pool.cpp: pooling, normalization, Dropout
void register_activation_ops(OpRegistry& r);   // ops_activation.cpp: ReLU ... Softmax, LogSoftmax
void register_sequence_ops(OpRegistry& r);     // ops_sequence.cpp: SequencePool
void register_recurrent_attention_ops(OpRegistry& r);  // ops_recurrent.cpp: RNN, LSTM, GRU, MultiheadAttention,
                                                      // TransformerEncoderLayer, PositionalEmbedding
void register_onnx_rules(OpRegistry& r);        // ops_onnx.cpp: each schema's onnx_import and onnx_export (after the above)

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// Sizes attributes may take: large enough for any real layer, small enough that one
// product of two of them fits in int64 (parameter counts of three can overflow).
inline constexpr double kMaxSize = 1LL << 40;

// a * b, or INT64_MAX when it does not fit (operands >= 0).
inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kInt64Max : r;
}
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kInt64Max : r;
}
// Product of the per-sample dims (every symbolic dim skipped, i.e. counted as 1), saturating.
int64_t sample_numel(const SymShape& s);
// Product of dims (kBatch skipped), ShapeError "<op>: size of <shape> overflows int64" when it
// does not fit, ShapeError naming the dim when another symbolic dim ("sequence", "?") is in it.
int64_t checked_numel(const std::string& op, const SymShape& s);

// ShapeError "<op> expects input <layout>, got <shape>" unless the rank is `rank`.
void expect_rank(const std::string& op, const TensorType& t, size_t rank, const char* layout);
// DTypeError "<op> expects a floating-point input, got i64[N, 10]".
void expect_floating(const std::string& op, const TensorType& t);
// ShapeError unless the shape starts with the batch dimension.
void expect_batched(const std::string& op, const TensorType& t);
// PyTorch's pooling_output_shape (torch/nn/modules/utils; ATen Pool.h), floor division;
// kUnknownDim for a symbolic `in` (no symbol names the result).
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode);
// Wraps a possibly negative dim of a rank-`rank` shape; ShapeError naming op and shape.
int64_t wrap_dim(const std::string& op, int64_t dim, const TensorType& t);

// Attribute builders.
AttrSpec int_attr(std::string name, int64_t def, double min, double max, std::string unit, std::string desc);
AttrSpec float_attr(std::string name, double def, double min, double max, std::string unit, std::string desc);
AttrSpec bool_attr(std::string name, bool def, std::string desc);
AttrSpec choice_attr(std::string name, std::string def, std::vector<std::string> choices, std::string desc);
AttrSpec ints_attr(std::string name, std::vector<int64_t> def, int min_items, int max_items, double min, double max,
                   std::string unit, std::string desc);

// forward of ops whose module does all the work: {module->forward(inputs[0])}.
std::vector<Tensor> module_forward(nn::Module* m, const std::vector<Tensor>& inputs, const Attributes&);
// infer of shape-preserving ops on floating input.
std::vector<TensorType> same_type(const std::string& op, const std::vector<TensorType>& in);

}  // namespace kiln::graph::detail
