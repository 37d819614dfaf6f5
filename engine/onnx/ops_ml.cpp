// Ops of the ai.onnx.ml domain, on the host: LabelEncoder-2 (onnx/defs/traditionalml/defs.cc)
// with string keys. Kiln's run export uses it to map a table's category strings to their
// one-hot position (engine/onnx/run_export.h).
#include <map>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

// LabelEncoder-2 of a STRING tensor X: each element is looked up among keys_strings and replaced
// by the value at the same position of values_int64s / values_floats / values_strings; an
// element among no key becomes default_int64 (-1) / default_float (-0.0) / default_string
// ("_Unused"). The first of equal keys wins. Numeric keys (keys_int64s, keys_floats) are refused.
std::vector<Value> label_encoder(OpContext& c) {
  if (!c.has_attr("keys_strings")) c.fail("only keys_strings is supported (not keys_int64s or keys_floats)");
  if (!c.is_strings(0)) c.fail("keys_strings needs a STRING input");
  const int kinds = c.has_attr("values_strings") + c.has_attr("values_int64s") + c.has_attr("values_floats");
  if (kinds != 1) c.fail("needs exactly one of values_strings, values_int64s, values_floats");
  const std::vector<std::string> keys = c.attr_strings("keys_strings");
  const StringTensor& x = c.strings_input(0);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < keys.size(); ++i) position.emplace(keys[i], i);
  auto find = [&](const std::string& s) { return position.find(s); };
  if (c.has_attr("values_strings")) {
    const std::vector<std::string> values = c.attr_strings("values_strings");
    if (values.size() != keys.size()) c.fail("keys_strings and values_strings differ in length");
    const std::string fallback = c.attr_string("default_string", "_Unused");
    StringTensor y{x.shape, {}};
    for (const std::string& s : x.data) y.data.push_back(find(s) == position.end() ? fallback : values[find(s)->second]);
    return {Value::of_strings(std::move(y))};
  }
  const bool ints = c.has_attr("values_int64s");
  std::vector<double> values;
  if (ints)
    for (int64_t v : c.attr_ints("values_int64s")) values.push_back(static_cast<double>(v));
  else
    values = c.attr_floats("values_floats");
  if (values.size() != keys.size()) c.fail("keys_strings and values differ in length");
  const double fallback = ints ? static_cast<double>(c.attr_int("default_int64", -1)) : c.attr_float("default_float", -0.0);
  std::vector<double> y;
  y.reserve(x.data.size());
  for (const std::string& s : x.data) y.push_back(find(s) == position.end() ? fallback : values[find(s)->second]);
  return {Value(from_doubles(y, x.shape, ints ? DType::i64 : DType::f32, c.device()))};
}

}  // namespace

void register_ml_ops(SequenceOpTable& t) { t["ai.onnx.ml.LabelEncoder"] = label_encoder; }

}  // namespace kiln::onnx
