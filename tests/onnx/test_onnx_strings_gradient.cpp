// STRING tensors (StringNormalizer, Cast to and from STRING) and Gradient of
// ai.onnx.preview.training, beyond the backend test data: bad inputs give errors naming the
// node, and a gradient through a host op without a Kiln gradient is refused.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/tensor_proto.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;
using kiln::onnx::StringTensor;
using kiln::onnx::Value;

namespace {

void set_string(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void set_strings(::onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

kiln::onnx::Session one_node(const std::string& op, int32_t in_type, std::vector<int64_t> dims,
                             const std::function<void(::onnx::NodeProto*)>& attrs) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", in_type, dims);
  g.add_output()->set_name("y");
  attrs(add_node(g, op, {"x"}, {"y"}, "n"));
  return kiln::onnx::Session(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
}

Value strings(Shape shape, std::vector<std::string> data) { return Value::of_strings(StringTensor{shape, data}); }

}  // namespace

TEST(OnnxStrings, StringNormalizerStopwordsAndCase) {
  auto s = one_node("StringNormalizer", ::onnx::TensorProto::STRING, {1, 3}, [](auto* n) {
    set_string(n, "case_change_action", "LOWER");
    set_strings(n, "stopwords", {"the"});
  });
  std::vector<Value> y = s.run_values({{"x", strings({1, 3}, {"The", "Cat", "SAT"})}});
  ASSERT_TRUE(y[0].is_strings());
  EXPECT_EQ(y[0].strings->shape, (Shape{1, 2}));
  EXPECT_EQ(y[0].strings->data, (std::vector<std::string>{"cat", "sat"}));
  // case-sensitive: "The" is kept; everything removed gives [""]
  auto all = one_node("StringNormalizer", ::onnx::TensorProto::STRING, {2}, [](auto* n) {
    set_int(n, "is_case_sensitive", 1);
    set_strings(n, "stopwords", {"a", "b"});
  });
  y = all.run_values({{"x", strings({2}, {"a", "b"})}});
  EXPECT_EQ(y[0].strings->shape, (Shape{1}));
  EXPECT_EQ(y[0].strings->data, (std::vector<std::string>{""}));
}

TEST(OnnxStrings, StringNormalizerBadInputNamesNode) {
  auto s = one_node("StringNormalizer", ::onnx::TensorProto::STRING, {2, 2}, [](auto* n) {
    set_string(n, "case_change_action", "TITLE");
  });
  try {
    s.run_values({{"x", strings({2, 2}, {"a", "b", "c", "d"})}});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (StringNormalizer)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
  }
  // a numeric tensor where a STRING tensor is expected
  auto f = one_node("StringNormalizer", ::onnx::TensorProto::FLOAT, {2}, [](auto*) {});
  EXPECT_THROW(f.run_values({{"x", Value(Tensor::from_vector(std::vector<float>{1, 2}, {2}))}}), ValueError);
}

TEST(OnnxStrings, CastToAndFromString) {
  auto to_s = one_node("Cast", ::onnx::TensorProto::FLOAT, {4}, [](auto* n) { set_int(n, "to", ::onnx::TensorProto::STRING); });
  std::vector<Value> y = to_s.run_values({{"x", Value(Tensor::from_vector(std::vector<float>{0.1f, -2.5f, 1e-5f, 3}, {4}))}});
  ASSERT_TRUE(y[0].is_strings());
  EXPECT_EQ(y[0].strings->data, (std::vector<std::string>{"0.1", "-2.5", "1e-05", "3"}));
  auto from_s = one_node("Cast", ::onnx::TensorProto::STRING, {4}, [](auto* n) { set_int(n, "to", ::onnx::TensorProto::INT64); });
  y = from_s.run_values({{"x", strings({4}, {"7", "-3", "1e2", "+INF"})}});
  EXPECT_EQ(y[0].tensor.dtype(), DType::i64);
  EXPECT_EQ(y[0].tensor.to_vector<int64_t>().at(2), 100);
  try {
    from_s.run_values({{"x", strings({4}, {"1", "two", "3", "4"})}});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n' (Cast): element 1 'two' is not a number"), std::string::npos) << e.what();
  }
  // a STRING output through Session::run (tensors only) is refused with a clear message
  EXPECT_THROW(to_s.run({{"x", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4})}}), ValueError);
}

TEST(OnnxStrings, StringTensorProtoCountMismatch) {
  ::onnx::TensorProto p;
  p.set_name("s");
  p.set_data_type(::onnx::TensorProto::STRING);
  p.add_dims(3);
  p.add_string_data("a");
  EXPECT_THROW(kiln::onnx::strings_from_proto(p), ValueError);
}

namespace {
// y = (a + b) * a, then Gradient(xs=[a, b], y) as in ONNX's test_gradient_of_add_and_mul,
// with `op` in place of Add.
kiln::onnx::Session gradient_model(const std::string& op) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("a", ::onnx::TensorProto::FLOAT, {2});
  *g.add_input() = value_info("b", ::onnx::TensorProto::FLOAT, {2});
  add_node(g, op, {"a", "b"}, {"c"}, "first");
  add_node(g, "Mul", {"c", "a"}, {"d"}, "mul");
  auto* n = add_node(g, "Gradient", {"a", "b"}, {"da", "db"}, "grad");
  n->set_domain("ai.onnx.preview.training");
  set_strings(n, "xs", {"a", "b"});
  set_string(n, "y", "d");
  for (const char* o : {"d", "da", "db"}) g.add_output()->set_name(o);
  ::onnx::ModelProto m = model_with(g, 17);
  auto* o = m.add_opset_import();
  o->set_domain("ai.onnx.preview.training");
  o->set_version(1);
  return kiln::onnx::Session(kiln::onnx::parse_model(m.SerializeAsString(), ""));
}
}  // namespace

TEST(OnnxGradient, AddMulMatchesHandDerivative) {
  // d = (a + b) * a: dd/da = 2a + b, dd/db = a (per element; y is summed when not a scalar)
  auto s = gradient_model("Add");
  std::vector<Tensor> out = s.run({{"a", Tensor::from_vector(std::vector<float>{1, 3}, {2})},
                                   {"b", Tensor::from_vector(std::vector<float>{2, -1}, {2})}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{1, 3}));
  EXPECT_FALSE(out[1].requires_grad());
}

TEST(OnnxGradient, MissingYAttributeNamesNode) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("a", ::onnx::TensorProto::FLOAT, {1});
  auto* n = add_node(g, "Gradient", {"a"}, {"da"}, "grad");
  n->set_domain("ai.onnx.preview.training");
  set_strings(n, "xs", {"a"});
  g.add_output()->set_name("da");
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""));
  try {
    s.run({{"a", Tensor::from_vector(std::vector<float>{1}, {1})}});
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'grad' (Gradient): attribute 'y'"), std::string::npos) << e.what();
  }
}
