// Internal to engine/onnx export (export.cpp): an exported imported model taken up to a newer
// opset by libonnx's version converter, and the graph value types it writes.
#pragma once
#include <cstdint>
#include <string>

#include "engine/graph/graph.h"
#include "engine/graph/types.h"
#include "engine/onnx/export_names.h"

namespace onnx {
class ModelProto;
class ValueInfoProto;
}  // namespace onnx

namespace kiln::onnx::detail {

// `name` of type `t`: kBatch as dim_param "N", a named symbolic dim as dim_param with its name
// ("sequence"), "?" as a dim with neither dim_value nor dim_param (Note [Symbolic dimensions]).
void set_value_info(::onnx::ValueInfoProto* v, const std::string& name, const graph::TensorType& t);

// Converts `model` (exported from `g`, named by `names`) to `opset` with
// onnx::version_conversion::ConvertVersion (Debian's libonnx 1.12: opsets up to 17), then
// passes onnx::checker::check_model; leaves `model` as it was when either throws (an op with
// no adapter: the model stays valid at its own opset).
//  - The adapters of ops whose meaning changed need their inputs' shapes (Softmax 12 -> 13
//    reshapes around the old 2-D coercion; Add / Gemm 6 -> 7 check the old broadcast): the
//    types recorded at import (onnx_types) go in as value_info, removed again afterwards.
//  - Attributes that became inputs (Pad's pads at 11, Clip's min / max at 11, Unsqueeze's
//    axes at 13, ...) come back as Constant nodes or numbered initializers: they become
//    initializers named "<consumer node>/<input>" (the input's name in the new opset's
//    schema: "Pad_0/pads"), so the node count does not grow.
//  - A node the converter replaced (Upsample -> Resize, Scatter -> ScatterElements) gets the
//    replaced node's name back.
void convert_opset(::onnx::ModelProto& model, const graph::Graph& g, const ExportNames& names, int64_t opset);

}  // namespace kiln::onnx::detail
