// Ops on ONNX STRING tensors, on the host (strings have no Kiln dtype; see StringTensor in
// op_context.h): StringNormalizer-10, and Cast-6..21 / CastLike-15..21 to and from STRING.
// Cast between numeric types stays with the numeric Cast of ops_math.cpp.
#include <onnx/onnx_pb.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

constexpr int32_t kOnnxString = ::onnx::TensorProto::STRING;

// ASCII case mapping: Kiln does not apply a locale's rules, so letters outside ASCII keep
// their case (the ONNX spec leaves the mapping to the `locale` attribute).
std::string map_case(std::string s, int (*f)(int)) {
  for (char& ch : s)
    if (static_cast<unsigned char>(ch) < 0x80) ch = static_cast<char>(f(static_cast<unsigned char>(ch)));
  return s;
}

// StringNormalizer-10 (ONNX spec, ai.onnx): X is [C] or [1, C]; removes the stopwords
// (compared case-insensitively unless is_case_sensitive = 1), then changes case (LOWER,
// UPPER or NONE). When every element is removed, Y is [""] ([1] or [1, 1]).
std::vector<Value> string_normalizer(OpContext& c) {
  const StringTensor& x = c.strings_input(0);
  bool two_d = x.shape.size() == 2;
  if (!(x.shape.size() == 1 || (two_d && x.shape[0] == 1)))
    c.fail("input must be [C] or [1, C], got " + shape_str(x.shape));
  std::string action = c.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    c.fail("case_change_action must be LOWER, UPPER or NONE, got '" + action + "'");
  bool sensitive = c.attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stop;
  if (c.has_attr("stopwords"))
    for (const std::string& w : c.attr_strings("stopwords")) stop.insert(sensitive ? w : map_case(w, ::tolower));
  StringTensor y;
  for (const std::string& s : x.data) {
    if (stop.count(sensitive ? s : map_case(s, ::tolower))) continue;
    y.data.push_back(action == "LOWER" ? map_case(s, ::tolower) : action == "UPPER" ? map_case(s, ::toupper) : s);
  }
  if (y.data.empty()) y.data.emplace_back();
  int64_t n = static_cast<int64_t>(y.data.size());
  y.shape = two_d ? Shape{1, n} : Shape{n};
  return {Value::of_strings(std::move(y))};
}

// A number as Cast-to-STRING writes it: the shortest text that reads back to the same value
// of the source type (std::to_chars, as numpy's str), "NaN", "INF" and "-INF" as the ONNX
// Cast spec names them.
std::string number_text(double v, DType from) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  std::to_chars_result r{};
  if (from == DType::f64) r = std::to_chars(buf, buf + sizeof buf, v);
  else if (is_floating(from)) r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  else if (from == DType::bool_) return v != 0 ? "1" : "0";
  else r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  return std::string(buf, r.ptr);
}

Value to_strings(const Tensor& x) {
  StringTensor y;
  y.shape = x.shape();
  for (double v : host_doubles(x)) y.data.push_back(number_text(v, x.dtype()));
  return Value::of_strings(std::move(y));
}

// STRING -> numeric: each element parsed as a decimal number ("1e-5", "NaN", "INF", "+INF",
// "-INF"; strtod's syntax), then converted as static_cast would.
Tensor from_strings(const OpContext& c, const StringTensor& x, DType to) {
  std::vector<double> v;
  v.reserve(x.data.size());
  for (size_t i = 0; i < x.data.size(); ++i) {
    const std::string& s = x.data[i];
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      c.fail("element " + std::to_string(i) + " '" + s + "' is not a number");
    v.push_back(d);
  }
  return from_doubles(v, x.shape, to, c.device());
}

std::vector<Value> cast_common(OpContext& c, bool to_string, DType to) {
  if (c.is_strings(0)) {
    if (to_string) return {c.values()[0]};
    return {from_strings(c, c.strings_input(0), to)};
  }
  if (to_string) return {to_strings(c.input(0))};
  return {c.input(0).to(to)};
}

std::vector<Value> cast_op(OpContext& c) {
  auto to = static_cast<int32_t>(c.attr_int("to"));
  bool to_string = to == kOnnxString;
  return cast_common(c, to_string, to_string ? DType::f32 : dtype_of_onnx(to, c.where() + " attribute 'to'"));
}

std::vector<Value> castlike_op(OpContext& c) {
  bool to_string = c.is_strings(1);
  return cast_common(c, to_string, to_string ? DType::f32 : c.input(1).dtype());
}

}  // namespace

void register_string_ops(SequenceOpTable& t) {
  t["StringNormalizer"] = string_normalizer;
  t["Cast"] = cast_op;
  t["CastLike"] = castlike_op;
}

}  // namespace kiln::onnx
