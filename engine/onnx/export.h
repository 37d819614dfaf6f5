// graph::Graph (engine/graph) + its GraphModule's state_dict -> ONNX ModelProto, the reverse of
// graph_import.h. No protobuf types in this header; export.cpp uses Debian's libonnx.
//
// Studio ops map to ai.onnx opset 17 (onnx.ai Operators.md):
//   Input / Output        graph inputs / outputs (dim 0 is dim_param "N", or Input's "batch" when the
//                         model fixes it; other symbolic dims are dim_params named as Input's
//                         "dim_params" says, "?" dims have neither field; an imported value's dims that
//                         depend on a graph input's contents are "?" or the model's declared ones:
//                         graph_import.h); names as export_names.h says: an imported model keeps its
//                         value, initializer and node names, a Studio node's output that an Output
//                         receives takes the Output's name, and an Output is an Identity node only
//                         where it receives a graph input or a value an earlier Output receives
//   Linear                Gemm(transB=1) on [N, in]; MatMul(x, Transpose(weight)) [+ Add(bias)] on higher ranks
//   Conv2d                Conv (pads [ph, pw, ph, pw], strides, dilations, group)
//   MaxPool2d/AvgPool2d   MaxPool / AveragePool (ceil_mode, count_include_pad)
//   AdaptiveAvgPool2d     GlobalAveragePool for output [1, 1]; AveragePool when H, W divide evenly
//   BatchNorm1d/2d        BatchNormalization (inference form: running statistics; momentum 1 - torch's)
//   LayerNorm             LayerNormalization (axis = -len(normalized_shape))
//   ReLU LeakyReLU Sigmoid Tanh Softmax LogSoftmax  the ONNX op of the same meaning
//   ReLU6                 Clip(x, 0, 6)
//   GELU                  0.5 x (1 + Erf(x / sqrt 2)), or the tanh form (Gelu needs opset 20)
//   SiLU                  x * Sigmoid(x)
//   Add / Mul             chains of binary Add / Mul;   Concat  Concat(axis)
//   Reshape / Flatten     Reshape to [0, *per-sample shape] (0 copies the batch size); Flatten
//                         of every dim from 1 on: Flatten(axis 1)
//   Identity / Dropout    Identity / Dropout (identity at inference)
//   Embedding             Gather(weight, ids, axis 0)
//   SequencePool          ReduceSum / ReduceMax / Gather over the steps, masked by the token ids
//   RNN / LSTM / GRU      one ONNX RNN / LSTM / GRU per layer on [T, N, C] (Transposes around it),
//                         gates reordered (LSTM iofc, GRU zrh with linear_before_reset = 1),
//                         sequence_lens = the count of non-<pad> ids per row
//   MultiheadAttention    MatMul / Softmax with a -inf key padding (and causal) mask
//   TransformerEncoderLayer  the same attention, LayerNormalization, the feed-forward Linears
//   PositionalEmbedding   Add(x, Gather(weight or the sinusoidal table as a constant, Range(0, T)))
// Each op's rule is its schema's onnx_export (engine/graph/ops_onnx.cpp's table); this file's
// loop has no per-op code. The padding mask is recomputed from the graph's token-id input
// (graph::padding_mask_input; id 0 is <pad>).
// Initializers are named like the state_dict keys ("conv1.weight", "bn1.running_mean").
// Imported nodes (onnx.<Op>) become their ONNX node again (attributes from onnx_attributes,
// inputs at onnx_input_slots, names from onnx_names), onnx.Initializer nodes initializers
// (named onnx_name, or "<node>.value" when none was recorded); the model is written at the
// imported opset (all onnx.* nodes must agree; Studio ops next to nodes imported below opset
// 17 are refused, as their mapping needs opset 17) and then, when that is below
// options.opset, converted by libonnx's version converter (onnx::version_conversion::
// ConvertVersion, which knows opsets up to 17 in Debian's 1.12) given the types recorded at
// import (export_convert.h); where the converter has no adapter for an op the model keeps
// its imported opset (no suite model of libonnx-testdata 1.12 that imports does).
#pragma once
#include <cstdint>
#include <string>

#include "engine/graph/graph.h"
#include "engine/nn/module.h"

namespace kiln::onnx {

struct ExportOptions {
  int64_t opset = 17;                // ai.onnx opset written (imported models are converted up to it)
  std::string producer_name = "Kiln";
  std::string graph_name;            // "" = the graph's name, or "kiln_graph"
};

// Serialized ModelProto (IR version 8). Throws ValueError (naming the node) when the graph
// does not analyze cleanly, a parameter is missing from `state` or has the wrong shape, a
// mapping needs what the op's attributes forbid (BatchNorm without running statistics,
// AdaptiveAvgPool2d whose input does not divide into output_size), imported nodes disagree
// on their opset, or Studio ops sit next to nodes imported below opset 17.
std::string export_model(const graph::Graph& g, const nn::StateDict& state, const ExportOptions& options = {});
// export_model written to `path` (IoError when it cannot be written).
void save_exported(const graph::Graph& g, const nn::StateDict& state, const std::string& path,
                   const ExportOptions& options = {});

// onnx::checker::check_model and then strict shape inference (check_type, error_mode 1) of
// Debian's libonnx 1.12, which knows opsets up to 17. ValueError with libonnx's message.
void check_model_bytes(const std::string& bytes);

}  // namespace kiln::onnx
