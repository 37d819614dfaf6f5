// Internal to engine/onnx codegen (codegen.cpp): one ONNX node -> one C++ statement.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/graph/types.h"
#include "engine/onnx/model.h"

namespace kiln::onnx::detail {

struct CodegenValues {
  std::map<std::string, std::string> ident;          // ONNX value -> C++ expression (local or member)
  std::map<std::string, graph::TensorType> type;     // ONNX value -> recorded type (N = batch)
  std::map<std::string, Tensor> constants;           // initializers, for shapes known when generating
};

// Whether codegen translates the op (codegen.h lists them).
bool codegen_supports(const std::string& op_type);
// The right-hand side for node `n` (its output 0), e.g. "kiln::relu(conv1)"; ValueError naming
// the node for attributes it cannot translate.
std::string codegen_expression(const Node& n, int64_t opset, const CodegenValues& v);

}  // namespace kiln::onnx::detail
