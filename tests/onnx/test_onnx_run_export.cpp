// A run's preprocessing as ONNX ops (engine/onnx/run_export.h) on a small network, and the ops it
// brought to the executor: ai.onnx.ml LabelEncoder and Resize-18's antialias. The whole export
// against `kiln predict` is tests/cli/test_export_run.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/npy.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/onnx/run_export.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;
using kiln::onnx::StringTensor;
using kiln::onnx::Value;

namespace {

Value strings(Shape shape, std::vector<std::string> data) { return Value::of_strings(StringTensor{shape, data}); }

// features [N, F] -> Identity -> logits [N, F]: the network's input is its output.
std::string identity_network(int64_t features) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("features", ::onnx::TensorProto::FLOAT, {-1, features});
  *g.add_output() = value_info("logits", ::onnx::TensorProto::FLOAT, {-1, features});
  add_node(g, "Identity", {"features"}, {"logits"}, "net");
  return model_with(g, 17).SerializeAsString();
}

data::TabularSchema schema() {
  data::TabularSchema s;
  data::ColumnInfo x, c;
  x.name = "x", x.type = data::ColumnType::numeric, x.mean = 2.0, x.scale = 4.0;
  c.name = "colour", c.index = 1, c.type = data::ColumnType::categorical;
  c.categories = {"blue", "green", "red"};
  c.mode = "green";
  s.columns = {x, c};
  s.label = "label";
  s.classes = {"cat", "dog", "owl", "yak"};
  return s;
}

}  // namespace

// Numbers standardized (NaN filled with the mean, so 0), categories one-hot in sorted order, a
// missing marker the mode, an unseen value zeros: tabular_prepare.cpp's encoding.
TEST(OnnxRunExport, TableColumnsEncodedAsTheRunEncodes) {
  const data::TabularSchema s = schema();
  kiln::onnx::RunPreprocessing p;
  p.table = &s;
  p.classes = s.classes;
  kiln::onnx::Model m = kiln::onnx::parse_model(kiln::onnx::with_preprocessing(identity_network(4), p), "");
  ASSERT_EQ(m.graph.inputs.size(), 2u);
  EXPECT_EQ(m.graph.inputs[0].name, "x");
  EXPECT_EQ(m.graph.inputs[1].name, "colour");
  EXPECT_EQ(m.graph.inputs[1].elem_type, ::onnx::TensorProto::STRING);
  EXPECT_EQ(m.opsets.at("ai.onnx.ml"), 2);
  kiln::onnx::Session session(std::move(m));
  std::vector<Value> out = session.run_values(
      {{"x", Value(Tensor::from_vector(std::vector<float>{6.f, NAN, -2.f, 2.f}, {4, 1}))},
       {"colour", strings({4, 1}, {"red", "NA", "", "purple"})}});
  ASSERT_EQ(out.size(), 2u);  // logits, probabilities
  EXPECT_EQ(out[0].tensor.to_vector<float>(),
            (std::vector<float>{1, 0, 0, 1, 0, 0, 1, 0, -1, 0, 1, 0, 0, 0, 0, 0}));
  std::vector<float> prob = out[1].tensor.to_vector<float>();
  EXPECT_NEAR(prob[0], std::exp(1.f) / (2 * std::exp(1.f) + 2), 1e-6);  // softmax of row 0: 1, 0, 0, 1
}

// A column named as a value of the export is refused by name (the checker's SSA message named none).
TEST(OnnxRunExport, ColumnNamedAsAnOutputIsRefused) {
  for (const char* name : {"logits", "probabilities"}) {
    data::TabularSchema s = schema();
    s.columns[0].name = name;
    kiln::onnx::RunPreprocessing p;
    p.table = &s;
    p.classes = s.classes;
    try {
      kiln::onnx::with_preprocessing(identity_network(4), p);
      ADD_FAILURE() << "a column named '" << name << "' was exported";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("input '") + name + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxRunExport, MetadataAndNoPreprocessing) {
  const data::TabularSchema s = schema();
  kiln::onnx::RunPreprocessing p;
  p.table = &s;
  p.classes = s.classes;
  p.include = false;
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(kiln::onnx::with_preprocessing(identity_network(4), p)));
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "features");
  std::map<std::string, std::string> meta;
  for (const auto& kv : m.metadata_props()) meta[kv.key()] = kv.value();
  EXPECT_EQ(meta["kiln.classes"], R"(["cat","dog","owl","yak"])");
  EXPECT_EQ(meta["kiln.task"], "classification");
  EXPECT_EQ(meta["kiln.label"], "label");
  EXPECT_EQ(meta["kiln.preprocessing"], "none");
  EXPECT_NE(m.doc_string().find("probabilities over kiln.classes"), std::string::npos) << m.doc_string();
}

// An image already the run's size: only x / 255 and Normalize act; any other size is resized.
TEST(OnnxRunExport, ImageOfTheRunsSizeIsNormalized) {
  data::ImageRun run;
  run.channels = 1, run.height = 2, run.width = 2;
  run.mean = {0.5}, run.stddev = {0.25};
  kiln::onnx::RunPreprocessing p;
  p.image = &run;
  p.classes = {"a", "b", "c", "d"};
  ::onnx::ModelProto net;
  ASSERT_TRUE(net.ParseFromString(identity_network(4)));
  ::onnx::GraphProto& g = *net.mutable_graph();  // features [N, 1, 2, 2] -> Flatten -> logits [N, 4]
  *g.mutable_input(0) = value_info("features", ::onnx::TensorProto::FLOAT, {-1, 1, 2, 2});
  g.mutable_node(0)->set_op_type("Flatten");
  kiln::onnx::Session session(kiln::onnx::parse_model(kiln::onnx::with_preprocessing(net.SerializeAsString(), p), ""));
  std::vector<uint8_t> px = {0, 51, 255, 102};
  std::vector<Tensor> out = session.run({{"image", Tensor::from_host(px.data(), 4, DType::u8, {1, 2, 2, 1})}});
  std::vector<float> y = out[0].to_vector<float>(), want = {-2.f, -1.2f, 2.f, -0.4f};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  // 4 x 4 of one value resizes to 2 x 2 of that value.
  std::vector<uint8_t> flat(16, 51);
  y = session.run({{"image", Tensor::from_host(flat.data(), 16, DType::u8, {1, 4, 4, 1})}})[0].to_vector<float>();
  for (float v : y) EXPECT_NEAR(v, -1.2f, 1e-6);
  data::ImageRun four = run;
  four.channels = 4;
  p.image = &four;
  EXPECT_THROW(kiln::onnx::with_preprocessing(net.SerializeAsString(), p), ValueError);
}

TEST(OnnxMl, LabelEncoderStringsToInts) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::STRING, {3});
  g.add_output()->set_name("y");
  auto* n = add_node(g, "LabelEncoder", {"x"}, {"y"}, "enc");
  n->set_domain("ai.onnx.ml");
  auto* keys = n->add_attribute();
  keys->set_name("keys_strings");
  keys->set_type(::onnx::AttributeProto::STRINGS);
  keys->add_strings("a"), keys->add_strings("b");
  set_ints(n, "values_int64s", {7, 9});
  set_int(n, "default_int64", 42);
  ::onnx::OperatorSetIdProto ml;
  ml.set_domain("ai.onnx.ml");
  ml.set_version(2);
  ::onnx::ModelProto mp = model_with(g, 17);
  *mp.add_opset_import() = ml;
  kiln::onnx::Session s(kiln::onnx::parse_model(mp.SerializeAsString(), ""));
  std::vector<Value> y = s.run_values({{"x", strings({3}, {"b", "zz", "a"})}});
  EXPECT_EQ(y[0].tensor.to_vector<int64_t>(), (std::vector<int64_t>{9, 42, 7}));
  // Numeric keys are refused, naming the node.
  keys->set_name("keys_int64s");
  keys->set_type(::onnx::AttributeProto::INTS);
  mp = model_with(g, 17);
  *mp.add_opset_import() = ml;
  kiln::onnx::Session bad(kiln::onnx::parse_model(mp.SerializeAsString(), ""));
  try {
    bad.run_values({{"x", strings({3}, {"b", "zz", "a"})}});
    ADD_FAILURE() << "numeric keys ran";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("enc"), std::string::npos) << e.what();
  }
}

// ONNX's backend test resize_downsample_scales_linear_antialias (Operators.md, Resize): 4 x 4 of
// 1 .. 16, scales 0.6, linear with antialias -> [[2.875, 4.5], [9.375, 11]].
TEST(OnnxResize, LinearAntialiasAsOnnxReference) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {1, 1, 4, 4});
  g.add_output()->set_name("y");
  add_float_initializer(g, "scales", {4}, {1.f, 1.f, 0.6f, 0.6f});
  auto* n = add_node(g, "Resize", {"x", "", "scales"}, {"y"}, "resize");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(::onnx::AttributeProto::STRING);
  mode->set_s("linear");
  set_int(n, "antialias", 1);
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 18).SerializeAsString(), ""));
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = static_cast<float>(i + 1);
  std::vector<float> y = s.run({{"x", Tensor::from_vector(x, {1, 1, 4, 4})}})[0].to_vector<float>();
  std::vector<float> want = {2.875f, 4.5f, 9.375f, 11.f};
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
}

// numpy's '<U<n>' arrays (UTF-32LE, NUL-padded to n code points) read as UTF-8 strings, for the
// STRING inputs of `kiln run`; numeric files are not strings, strings are not load_npy's.
TEST(OnnxNpy, UnicodeStringsReadAsUtf8) {
  auto utf32 = [](const std::u32string& s, size_t width) {
    std::string b;
    for (size_t i = 0; i < width; ++i) {
      const uint32_t c = i < s.size() ? static_cast<uint32_t>(s[i]) : 0;
      for (int k = 0; k < 4; ++k) b += static_cast<char>((c >> (8 * k)) & 0xff);
    }
    return b;
  };
  const std::string p = (std::filesystem::temp_directory_path() / ("kiln_npy_strings_" + std::to_string(::getpid()) + ".npy")).string();
  auto write = [&](std::string header, const std::string& data) {  // version 1.0
    header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
    std::ofstream out(p, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(header.size() & 0xff)).put(static_cast<char>(header.size() >> 8));
    out << header << data;
  };
  write("{'descr': '<U3', 'fortran_order': False, 'shape': (3, 1), }",
        utf32(U"red", 3) + utf32(U"", 3) + utf32(U"\u00e9\u20ac\U0001F600", 3));
  EXPECT_TRUE(kiln::onnx::npy_holds_strings(p));
  StringTensor s = kiln::onnx::load_npy_strings(p);
  EXPECT_EQ(s.shape, (Shape{3, 1}));
  EXPECT_EQ(s.data, (std::vector<std::string>{"red", "", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}));
  EXPECT_THROW(kiln::onnx::load_npy(p), DTypeError);
  write("{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", utf32(U"ab", 2));  // one of two
  try {
    kiln::onnx::load_npy_strings(p);
    ADD_FAILURE() << "a truncated string file was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated .npy data"), std::string::npos) << e.what();
  }
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  EXPECT_FALSE(kiln::onnx::npy_holds_strings(p));
  EXPECT_THROW(kiln::onnx::load_npy_strings(p), DTypeError);
  std::filesystem::remove(p);
}
