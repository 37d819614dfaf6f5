// Internal to engine/graph: the ONNX export rules (OpSchema::onnx_export) that
// register_onnx_import_rules (ops_onnx.cpp) puts beside each op's import rule. Each adds the
// ONNX nodes of one node through the emitter (onnx_export.h); ValueError names the node for a
// form ONNX cannot express. Semantics: onnx.ai Operators.md, opset 17.
#pragma once
#include "engine/graph/onnx_export.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph::detail {

// ops_onnx_export.cpp: the image, tensor and activation layers.
void export_linear(OnnxEmitter& e, const OnnxExportNode& n);        // Gemm, or Transpose + MatMul (+ Add)
void export_conv(OnnxEmitter& e, const OnnxExportNode& n);          // Conv, ConvTranspose
void export_pool(OnnxEmitter& e, const OnnxExportNode& n);          // MaxPool / AveragePool
void export_adaptive_pool(OnnxEmitter& e, const OnnxExportNode& n); // GlobalAveragePool or AveragePool
void export_batch_norm(OnnxEmitter& e, const OnnxExportNode& n);    // BatchNormalization (inference form)
void export_layer_norm(OnnxEmitter& e, const OnnxExportNode& n);    // LayerNormalization
void export_same(OnnxEmitter& e, const OnnxExportNode& n);          // the ONNX op of the same name, no attributes
void export_relu6(OnnxEmitter& e, const OnnxExportNode& n);         // Clip(0, 6)
void export_leaky_relu(OnnxEmitter& e, const OnnxExportNode& n);    // LeakyRelu
void export_softmax(OnnxEmitter& e, const OnnxExportNode& n);       // Softmax / LogSoftmax over dim
void export_gelu(OnnxEmitter& e, const OnnxExportNode& n);          // Erf or Tanh form (Gelu needs opset 20)
void export_silu(OnnxEmitter& e, const OnnxExportNode& n);          // x * Sigmoid(x)
void export_elementwise(OnnxEmitter& e, const OnnxExportNode& n);   // a chain of binary Add / Mul
void export_concat(OnnxEmitter& e, const OnnxExportNode& n);        // Concat
void export_flatten(OnnxEmitter& e, const OnnxExportNode& n);       // Flatten (axis 1) or Reshape
void export_reshape(OnnxEmitter& e, const OnnxExportNode& n);       // Reshape to the inferred type
void export_embedding(OnnxEmitter& e, const OnnxExportNode& n);     // Gather on the weight

// ops_onnx_sequence.cpp: the sequence layers over [N, T, C] with the padding mask from the ids.
void export_sequence_pool(OnnxEmitter& e, const OnnxExportNode& n);
void export_recurrent(OnnxEmitter& e, const OnnxExportNode& n);     // RNN / LSTM / GRU, one node per layer
void export_attention(OnnxEmitter& e, const OnnxExportNode& n);     // MultiheadAttention, decomposed
void export_encoder_layer(OnnxEmitter& e, const OnnxExportNode& n); // TransformerEncoderLayer, decomposed
void export_positional(OnnxEmitter& e, const OnnxExportNode& n);    // PositionalEmbedding: Add of Gather / constant

// ops_onnx_sequence.cpp: import of an ONNX RNN / GRU / LSTM node (OnnxNodeView's batch-first form).
OnnxMapResult map_recurrent(const OnnxNodeView& v);

}  // namespace kiln::graph::detail
