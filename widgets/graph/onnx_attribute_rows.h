// The attributes of an imported ONNX node that Kiln keeps as onnx.<op_type> (its
// "onnx_attributes" JSON, engine/onnx/graph_import.cpp) as readable name / value rows for
// the property editor: ints and floats as numbers, lists as "1, 2, 3", strings as text,
// tensors as "int64[2]: 1, 2" (dtype, shape and, up to 8 elements, the values).
#pragma once
#include <QList>
#include <QPair>
#include <QString>

#include "engine/graph/graph.h"

namespace kiln::studio {

// Whether the node is a fallback onnx.<op_type> node (not onnx.Initializer).
bool isOnnxFallback(const graph::Node&);
// The attributes the property editor shows as rows instead of editors for such a node:
// the bookkeeping of the import (onnx_attributes, onnx_names, onnx_types, ...).
bool isOnnxBookkeeping(const std::string& attribute);
// Rows in name order: first "ONNX node" (the model's node name) and "opset", then one per
// ONNX attribute. A malformed JSON text gives one row "onnx_attributes" with the parse error.
QList<QPair<QString, QString>> onnxAttributeRows(const graph::Node&);

}  // namespace kiln::studio
