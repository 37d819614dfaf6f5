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

// Every name from the model that reaches the generated source goes through one of these.
// A C++ string literal, quotes included: backslash and quote escaped, control characters and
// bytes >= 0x80 as 3-digit octal escapes: a"b<newline> -> "a\"b\012" (quotes included).
std::string cpp_string_literal(const std::string& s);
// Text safe inside a `//` or `/* */` comment: \r, \n and other control characters become spaces,
// "*/" becomes "* /", and a trailing backslash (which would splice the next line in) becomes '/'.
std::string cpp_comment_text(const std::string& s);
// Whether `s` is a C++ identifier that is not a keyword (or alternative token such as "and").
bool is_cpp_identifier(const std::string& s);
// The C++20 keywords and alternative tokens.
bool is_cpp_keyword(const std::string& s);

// predict.cpp of `kiln codegen --run` (codegen_predict.cpp): class `cls` of "<stem>.h" on raw
// images (`image`) or a CSV table, with the run's images.json / table.json beside it.
std::string predict_program(const std::string& cls, const std::string& stem, bool image,
                            const std::vector<std::string>& classes, bool regression);

}  // namespace kiln::onnx::detail
