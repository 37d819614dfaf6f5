// An int8 model (engine/quant/int8_model.h) -> ONNX in QDQ form (onnx.ai Operators.md:
// QuantizeLinear / DequantizeLinear, opset >= 13 for per-axis scales), the form onnxruntime's
// quantizer writes and its graph transformers fuse into QLinearConv / QLinearMatMul:
//   weight       the layer's s8 weight as an INT8 initializer "<layer>.weight_quantized", then
//                DequantizeLinear(scale [Cout] FLOAT, zero point [Cout] INT8 zeros, axis 0) -> "<layer>.weight"
//   bias         INT32 initializer "<layer>.bias_quantized", DequantizeLinear(scale [Cout] = input scale x
//                weight scale[c], axis 0; no zero point: INT32's is 0) -> "<layer>.bias"
//   input        QuantizeLinear -> DequantizeLinear with the layer's calibrated u8 parameters (scalar
//                FLOAT scale, UINT8 zero point) in front of the Conv / Gemm / MatMul
//   output       where the int8 model keeps the layer's output in u8 for the next int8 layer (Note [u8
//                chain]), QuantizeLinear -> DequantizeLinear with that layer's input parameters after
//                the fused ReLU (or the layer), as the kernel requantizes there
// Everything else (layers kept in float, pooling, the graph's other nodes) is export_model's plain
// float ONNX of the prepared graph (batch norm folded), so Kiln's executor or any ONNX runtime
// computes the int8 model's function: the QDQ pairs round and saturate as the int8 kernels do, and
// only the accumulation order differs (f32 instead of s32).
#pragma once
#include <string>

#include "engine/onnx/export.h"
#include "engine/quant/int8_model.h"

namespace kiln::quant {

// Serialized ModelProto (opset options.opset, at least 13). ValueError naming the layer when an
// int8 layer's weight is not an initializer of the float export or its output is not read as
// the int8 model's graph says; export_model's errors otherwise.
std::string export_qdq(const Int8Model& model, const onnx::ExportOptions& options = {});

}  // namespace kiln::quant
