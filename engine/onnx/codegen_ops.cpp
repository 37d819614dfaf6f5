#include "engine/onnx/codegen_ops.h"

#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/op_schema.h"

namespace kiln::onnx::detail {

namespace {

using Ints = std::vector<int64_t>;

std::string list(const Ints& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}
std::string num(double d) {
  std::ostringstream ss;
  ss.precision(9);
  ss << d;
  std::string s = ss.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

const Attribute* find(const Node& n, const std::string& name) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? nullptr : &it->second;
}
int64_t get_int(const Node& n, const std::string& name, int64_t def) {
  const Attribute* a = find(n, name);
  return a ? a->i : def;
}
double get_float(const Node& n, const std::string& name, double def) {
  const Attribute* a = find(n, name);
  return a ? a->f : def;
}
Ints get_ints(const Node& n, const std::string& name, Ints def) {
  const Attribute* a = find(n, name);
  return a ? a->ints : def;
}

std::string in(const Node& n, size_t i, const CodegenValues& v) {
  if (i >= n.inputs.size() || n.inputs[i].empty()) return "kiln::Tensor()";
  return v.ident.at(n.inputs[i]);
}

// The pair of a 2-d spatial attribute (pads must be symmetric: begin == end).
std::string pair_of(const Node& n, const std::string& name, Ints def) {
  Ints v = get_ints(n, name, def);
  if (name == "pads") {
    KILN_CHECK(v.size() == 4 && v[0] == v[2] && v[1] == v[3], ValueError, "codegen: node '", n.name, "' (", n.op_type,
               "): pads ", list(v), " are not symmetric; Kiln's 2-d ops pad both sides alike");
    v.resize(2);
  }
  KILN_CHECK(v.size() == 2, ValueError, "codegen: node '", n.name, "' (", n.op_type, "): ", name, " ", list(v),
             " is not 2-d; codegen translates 2-d convolution and pooling");
  return list(v);
}

void expect_no_auto_pad(const Node& n) {
  const Attribute* a = find(n, "auto_pad");
  KILN_CHECK(!a || a->s == "NOTSET" || a->s == "VALID" || a->s.empty(), ValueError, "codegen: node '", n.name, "' (",
             n.op_type, "): auto_pad ", a ? a->s : "", " is not translated; export with explicit pads");
}

// A shape for Tensor::reshape from the recorded type: the batch dimension N becomes -1.
std::string reshape_shape(const Node& n, const graph::TensorType& t) {
  Ints s;
  int batch = 0;
  for (int64_t d : t.shape) {
    s.push_back(d == graph::kBatch ? -1 : d);
    batch += d == graph::kBatch;
  }
  KILN_CHECK(batch <= 1, ValueError, "codegen: node '", n.name, "' (", n.op_type, "): output ", t.str(),
             " has several symbolic dimensions; codegen needs at most one");
  return list(s);
}

}  // namespace

std::string cpp_string_literal(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '\\' || ch == '"') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      // Octal, always 3 digits: unlike \x it cannot swallow a following digit.
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string cpp_comment_text(const std::string& s) {
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    out += c < 0x20 || c == 0x7f ? ' ' : ch;
  }
  for (size_t p = out.find("*/"); p != std::string::npos; p = out.find("*/", p + 3)) out.insert(p + 1, 1, ' ');
  // GCC splices backslash-space-newline too: the last non-blank character must not be a backslash.
  size_t last = out.find_last_not_of(' ');
  if (last != std::string::npos && out[last] == '\\') out[last] = '/';
  return out;
}

bool is_cpp_keyword(const std::string& s) {
  static const std::set<std::string> keywords{
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return keywords.count(s) > 0;
}

bool is_cpp_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return !is_cpp_keyword(s);
}

namespace {
// The unary layer (graph OpSchema::unary_layer) whose ONNX operator is `op`, or nullptr.
const graph::OpSchema* unary_layer_of(const std::string& op) {
  const graph::OpSchema* s = graph::OpRegistry::global().onnx_claimant(op);
  return s && s->unary_layer ? s : nullptr;
}
}  // namespace

bool codegen_supports(const std::string& op) {
  if (unary_layer_of(op)) return true;  // Relu, Sigmoid, Tanh, HardSwish ...: kiln::<op>(x)
  static const std::set<std::string> ops{"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul",
                                         "Add", "Sub", "Mul", "Div", "LeakyRelu", "Erf",
                                         "Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization", "Concat",
                                         "Reshape", "Flatten", "Transpose", "Identity", "Dropout", "Gather",
                                         "Clip", "Constant"};
  return ops.count(op) > 0;
}

std::string codegen_expression(const Node& n, int64_t opset, const CodegenValues& v) {
  const std::string& op = n.op_type;
  const std::string x = in(n, 0, v);
  if (op == "Conv") {
    expect_no_auto_pad(n);
    return "kiln::conv2d(" + x + ", " + in(n, 1, v) + ", " + in(n, 2, v) + ", conv_params(" +
           pair_of(n, "strides", {1, 1}) + ", " + pair_of(n, "pads", {0, 0, 0, 0}) + ", " +
           pair_of(n, "dilations", {1, 1}) + ", " + std::to_string(get_int(n, "group", 1)) + "))";
  }
  if (op == "ConvTranspose") {
    expect_no_auto_pad(n);
    KILN_CHECK(get_ints(n, "output_shape", {}).empty(), ValueError, "codegen: node '", n.name,
               "' (ConvTranspose): output_shape is not translated; the form with output_padding is");
    return "kiln::conv_transpose2d(" + x + ", " + in(n, 1, v) + ", " + in(n, 2, v) + ", conv_transpose_params(" +
           pair_of(n, "strides", {1, 1}) + ", " + pair_of(n, "pads", {0, 0, 0, 0}) + ", " +
           pair_of(n, "dilations", {1, 1}) + ", " + std::to_string(get_int(n, "group", 1)) + ", " +
           pair_of(n, "output_padding", {0, 0}) + "))";
  }
  if (op == "MaxPool" || op == "AveragePool") {
    expect_no_auto_pad(n);
    KILN_CHECK(n.outputs.size() < 2 || n.outputs[1].empty(), ValueError, "codegen: node '", n.name,
               "' (MaxPool): the Indices output is not translated");
    Ints k = get_ints(n, "kernel_shape", {});
    std::string extra = op == "MaxPool" ? pair_of(n, "dilations", {1, 1}) : "{1, 1}";
    return std::string(op == "MaxPool" ? "kiln::max_pool2d(" : "kiln::avg_pool2d(") + x + ", pool_params(" +
           pair_of(n, "kernel_shape", {}) + ", " + pair_of(n, "strides", {1, 1}) + ", " +
           pair_of(n, "pads", {0, 0, 0, 0}) + ", " + extra + ", " + (get_int(n, "ceil_mode", 0) ? "true" : "false") +
           ", " + (get_int(n, "count_include_pad", 0) ? "true" : "false") + "))";
  }
  if (op == "GlobalAveragePool") return "kiln::adaptive_avg_pool2d(" + x + ", {1, 1})";
  if (op == "Gemm") {
    KILN_CHECK(get_int(n, "transA", 0) == 0 && get_float(n, "alpha", 1) == 1 && get_float(n, "beta", 1) == 1,
               ValueError, "codegen: node '", n.name, "' (Gemm): only transA = 0, alpha = beta = 1 are translated");
    if (get_int(n, "transB", 0)) return "kiln::linear(" + x + ", " + in(n, 1, v) + ", " + in(n, 2, v) + ")";
    std::string mm = "kiln::matmul(" + x + ", " + in(n, 1, v) + ")";
    return n.inputs.size() > 2 && !n.inputs[2].empty() ? "kiln::add(" + mm + ", " + in(n, 2, v) + ")" : mm;
  }
  if (op == "MatMul") return "kiln::matmul(" + x + ", " + in(n, 1, v) + ")";
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    std::string f = op == "Add" ? "add" : op == "Sub" ? "sub" : op == "Mul" ? "mul" : "div";
    return "kiln::" + f + "(" + x + ", " + in(n, 1, v) + ")";
  }
  if (const graph::OpSchema* s = unary_layer_of(op)) {
    auto why = s->unary_layer->onnx_mismatch([&](const std::string& a, double d) { return get_float(n, a, d); });
    KILN_CHECK(!why, ValueError, "codegen: node '", n.name, "' (", op, "): ", why.value_or(""),
               "; codegen translates the form torch.nn.", s->name, " exports");
    return std::string("kiln::") + unary_op_name(s->unary_layer->op) + "(" + x + ")";
  }
  if (op == "LeakyRelu") return "kiln::leaky_relu(" + x + ", " + num(get_float(n, "alpha", 0.01)) + ")";
  if (op == "Erf") return "kiln::erf(" + x + ")";
  if (op == "Softmax" || op == "LogSoftmax") {
    KILN_CHECK(opset >= 13, ValueError, "codegen: node '", n.name, "' (", op,
               "): opset ", opset, " flattens before the softmax; codegen translates opset 13 and later");
    return std::string(op == "Softmax" ? "kiln::softmax(" : "kiln::log_softmax(") + x + ", " +
           std::to_string(get_int(n, "axis", -1)) + ")";
  }
  if (op == "BatchNormalization") {
    return "kiln::nn::functional::batch_norm(" + x + ", " + in(n, 3, v) + ", " + in(n, 4, v) + ", " + in(n, 1, v) +
           ", " + in(n, 2, v) + ", false, 0.1, " + num(get_float(n, "epsilon", 1e-5)) + ")";
  }
  if (op == "LayerNormalization") {
    const graph::TensorType& t = v.type.at(n.inputs[0]);
    int64_t axis = get_int(n, "axis", -1), rank = static_cast<int64_t>(t.shape.size());
    if (axis < 0) axis += rank;
    Ints shape(t.shape.begin() + axis, t.shape.end());
    return "kiln::nn::functional::layer_norm(" + x + ", " + list(shape) + ", " + in(n, 1, v) + ", " + in(n, 2, v) +
           ", " + num(get_float(n, "epsilon", 1e-5)) + ")";
  }
  if (op == "Concat") {
    std::string s = "kiln::cat({";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + in(n, i, v);
    return s + "}, " + std::to_string(get_int(n, "axis", 0)) + ")";
  }
  if (op == "Reshape" || op == "Flatten") return x + ".reshape(" + reshape_shape(n, v.type.at(n.outputs[0])) + ")";
  if (op == "Transpose") {
    Ints perm = get_ints(n, "perm", {});
    if (perm.empty())
      for (int64_t d = static_cast<int64_t>(v.type.at(n.inputs[0]).shape.size()) - 1; d >= 0; --d) perm.push_back(d);
    return x + ".permute(" + list(perm) + ").contiguous()";
  }
  if (op == "Identity" || op == "Dropout") return x;
  if (op == "Clip") {
    // Bounds: attributes min/max before opset 11, constant inputs 1 and 2 from then on.
    auto bound = [&](size_t i, const std::string& attr, const char* none) -> std::string {
      if (opset < 11) return find(n, attr) ? num(get_float(n, attr, 0)) : std::string(none);
      if (i >= n.inputs.size() || n.inputs[i].empty()) return none;
      auto it = v.constants.find(n.inputs[i]);
      KILN_CHECK(it != v.constants.end() && it->second.numel() == 1, ValueError, "codegen: node '", n.name,
                 "' (Clip): bound '", n.inputs[i], "' is not a constant scalar");
      return num(it->second.to_vector<double>()[0]);
    };
    return "kiln::clamp(" + x + ", " + bound(1, "min", "-INFINITY") + ", " + bound(2, "max", "INFINITY") + ")";
  }
  if (op == "Gather") {
    KILN_CHECK(get_int(n, "axis", 0) == 0, ValueError, "codegen: node '", n.name, "' (Gather): only axis 0 is translated");
    return "kiln::index_select(" + x + ", 0, " + in(n, 1, v) + ".reshape({-1})).reshape(" +
           reshape_shape(n, v.type.at(n.outputs[0])) + ")";
  }
  throw ValueError("codegen: node '" + n.name + "': op " + op + " is not translated");
}

}  // namespace kiln::onnx::detail
