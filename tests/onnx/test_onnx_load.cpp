// Reading ONNX models and tensors: dtype conversions, symbolic dims, external data and
// every kind of bad input (a clear error naming the problem, never a crash).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/model.h"
#include "engine/onnx/suite.h"
#include "engine/onnx/tensor_proto.h"
#include "model_builder.h"

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::onnx::test;
using ::onnx::TensorProto;

namespace {

// A fresh folder under the temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("kiln_onnx_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// y = x + b with x [N, 3] symbolic in N.
::onnx::ModelProto add_model() {
  ::onnx::GraphProto g;
  g.set_name("add");
  *g.add_input() = value_info("x", TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value_info("y", TensorProto::FLOAT, {-1, 3});
  add_float_initializer(g, "b", {3}, {1, 2, 3});
  add_node(g, "Add", {"x", "b"}, {"y"}, "add1");
  return model_with(g, 17);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxTensor, RoundTripsEveryDtype) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i8, DType::u8,
                   DType::bool_}) {
    Tensor t = Tensor::from_vector(std::vector<double>{0, 1, -2, 3, 1, 0}, {2, 3}).to(dt);
    TensorProto p;
    kiln::onnx::tensor_to_proto(t, p);
    Tensor back = kiln::onnx::tensor_from_proto(p, "");
    ASSERT_EQ(back.dtype(), dt) << dtype_name(dt);
    ASSERT_EQ(back.shape(), (Shape{2, 3}));
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>()) << dtype_name(dt);
  }
}

TEST(OnnxTensor, ReadsTypedFields) {
  TensorProto p;
  p.set_data_type(TensorProto::FLOAT16);
  p.add_dims(2);
  p.add_int32_data(0x3C00);  // 1.0
  p.add_int32_data(0xC000);  // -2.0
  EXPECT_EQ(kiln::onnx::tensor_from_proto(p, "").to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  TensorProto b;
  b.set_data_type(TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 1}) b.add_int32_data(v);
  EXPECT_EQ(kiln::onnx::tensor_from_proto(b, "").to_vector<bool>(), (std::vector<bool>{true, false, true}));
  TensorProto d;
  d.set_data_type(TensorProto::DOUBLE);
  d.add_double_data(2.5);  // 0-d
  Tensor td = kiln::onnx::tensor_from_proto(d, "");
  EXPECT_EQ(td.dim(), 0);
  EXPECT_EQ(td.item<double>(), 2.5);
}

TEST(OnnxTensor, RejectsMismatchedSizesAndUnknownTypes) {
  TensorProto p;
  p.set_name("w");
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(4);
  p.add_float_data(1);
  EXPECT_NE(error_of([&] { kiln::onnx::tensor_from_proto(p, ""); }).find("float_data holds 1 values for 4 elements"), std::string::npos);
  p.clear_float_data();
  p.set_raw_data(std::string(3, '\0'));
  EXPECT_NE(error_of([&] { kiln::onnx::tensor_from_proto(p, ""); }).find("raw_data has 3 bytes, expected 16"), std::string::npos);
  TensorProto u;
  u.set_name("u");
  u.set_data_type(TensorProto::COMPLEX64);
  EXPECT_THROW(kiln::onnx::tensor_from_proto(u, ""), DTypeError);
}

TEST(OnnxModel, ReadsInputsOutputsOpsetAndSymbolicDims) {
  TempDir dir;
  write_file(dir.path / "m.onnx", add_model().SerializeAsString());
  kiln::onnx::Model m = kiln::onnx::load_model((dir.path / "m.onnx").string());
  EXPECT_EQ(m.opset(), 17);
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  EXPECT_EQ(m.graph.inputs[0].type_str(), "FLOAT[N, 3]");
  EXPECT_EQ(m.graph.inputs[0].shape[0].param, "N");
  EXPECT_EQ(m.parameter_count(), 3);
  kiln::onnx::Session s(m);
  for (int64_t n : {1, 4}) {  // the symbolic batch takes any size
    std::vector<Tensor> y = s.run({{"x", Tensor::ones({n, 3})}});
    EXPECT_EQ(y[0].shape(), (Shape{n, 3}));
    EXPECT_EQ(y[0].to_vector<float>()[2], 4.0f);
  }
}

TEST(OnnxModel, TruncatedFileIsAnIoError) {
  TempDir dir;
  std::string bytes = add_model().SerializeAsString();
  fs::path p = dir.path / "cut.onnx";
  write_file(p, bytes.substr(0, bytes.size() / 2));
  std::string msg = error_of([&] { kiln::onnx::load_model(p.string()); });
  EXPECT_NE(msg.find("truncated or corrupt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cut.onnx"), std::string::npos) << msg;
  EXPECT_THROW(kiln::onnx::load_model(p.string()), IoError);
}

TEST(OnnxModel, RandomBytesAreAnError) {
  TempDir dir;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    fs::path p = dir.path / "noise.onnx";
    write_file(p, bytes);
    EXPECT_THROW(kiln::onnx::load_model(p.string()), Error) << "trial " << trial;
  }
  EXPECT_THROW(kiln::onnx::load_model((dir.path / "missing.onnx").string()), IoError);
}

TEST(OnnxModel, MissingInitializerNamesTheNode) {
  ::onnx::ModelProto m = add_model();
  m.mutable_graph()->clear_initializer();
  kiln::onnx::Model model = kiln::onnx::parse_model(m.SerializeAsString(), "");
  std::string msg = error_of([&] { kiln::onnx::Session s(model); });
  EXPECT_NE(msg.find("node 'add1' (Add)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
}

TEST(OnnxModel, CycleNamesTheNode) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", TensorProto::FLOAT, {2});
  *g.add_output() = value_info("b", TensorProto::FLOAT, {2});
  add_node(g, "Add", {"x", "b"}, {"a"}, "first");  // reads b, which the next node makes from a
  add_node(g, "Relu", {"a"}, {"b"}, "second");
  std::string msg = error_of([&] { kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "")); });
  EXPECT_NE(msg.find("node 'first' (Add): input 1 'b' is not a graph input, an initializer or the output of an earlier node"),
            std::string::npos) << msg;
}

TEST(OnnxModel, InputNameMismatchListsTheInputs) {
  kiln::onnx::Session s(kiln::onnx::parse_model(add_model().SerializeAsString(), ""));
  std::string msg = error_of([&] { s.run({{"input", Tensor::ones({1, 3})}}); });
  EXPECT_NE(msg.find("'input' is not an input of the model (inputs: x)"), std::string::npos) << msg;
  msg = error_of([&] { s.run({}); });
  EXPECT_NE(msg.find("model input 'x' (FLOAT[N, 3]) is not given"), std::string::npos) << msg;
  msg = error_of([&] { s.run({{"x", Tensor::ones({2, 4})}}); });
  EXPECT_NE(msg.find("expects FLOAT[N, 3], got [2, 4]"), std::string::npos) << msg;
}

TEST(OnnxModel, WrongAttributeTypeNamesNodeAndAttribute) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", TensorProto::FLOAT, {2, 3});
  *g.add_output() = value_info("y", TensorProto::FLOAT, {3, 2});
  auto* n = add_node(g, "Transpose", {"x"}, {"y"}, "t1");
  set_float(n, "perm", 1.0f);
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 13).SerializeAsString(), ""));
  std::string msg = error_of([&] { s.run({{"x", Tensor::ones({2, 3})}}); });
  EXPECT_NE(msg.find("node 't1' (Transpose): attribute 'perm' must be INTS, got FLOAT"), std::string::npos) << msg;
}

TEST(OnnxModel, UnsupportedOpsAreListedAllAtOnce) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", TensorProto::FLOAT, {2});
  *g.add_output() = value_info("z", TensorProto::FLOAT, {2});
  add_node(g, "FancyOp", {"x"}, {"y"}, "first");
  add_node(g, "OtherOp", {"y"}, {"z"}, "second");
  kiln::onnx::Model m = kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
  try {
    kiln::onnx::Session s(m);
    FAIL() << "no error";
  } catch (const kiln::onnx::UnsupportedError& e) {
    ASSERT_EQ(e.ops.size(), 2u);
    std::string msg = e.what();
    EXPECT_NE(msg.find("FancyOp (node 'first', opset 17)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("OtherOp (node 'second', opset 17)"), std::string::npos) << msg;
  }
}

TEST(OnnxModel, ExternalDataLoadsFromTheModelFolderOnly) {
  TempDir dir;
  std::vector<float> w{1.5f, -2.0f, 3.0f};
  write_file(dir.path / "weights.bin", std::string(8, 'x') + std::string(reinterpret_cast<const char*>(w.data()), 12));
  auto make = [&](const std::string& location) {
    ::onnx::ModelProto m = add_model();
    TensorProto* t = m.mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->set_data_location(TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value("8");
    kv = t->add_external_data();
    kv->set_key("length");
    kv->set_value("12");
    fs::path p = dir.path / "ext.onnx";
    write_file(p, m.SerializeAsString());
    return p.string();
  };
  kiln::onnx::Model ok = kiln::onnx::load_model(make("weights.bin"));
  EXPECT_EQ(ok.graph.initializers.at("b").to_vector<float>(), w);
  for (std::string bad : {"../../etc/passwd", "/etc/passwd", "sub/../../weights.bin"}) {
    std::string msg = error_of([&] { kiln::onnx::load_model(make(bad)); });
    EXPECT_TRUE(msg.find("escapes the model's folder") != std::string::npos ||
                msg.find("is absolute") != std::string::npos)
        << bad << ": " << msg;
    EXPECT_NE(msg.find("tensor 'b'"), std::string::npos) << msg;
  }
  std::string msg = error_of([&] { kiln::onnx::load_model(make("nothere.bin")); });
  EXPECT_NE(msg.find("nothere.bin"), std::string::npos) << msg;
}

TEST(OnnxSuite, CompareUsesOnnxTolerances) {
  double err = 0;
  Tensor e = Tensor::from_vector(std::vector<float>{1.0f, NAN, 100.0f}, {3});
  EXPECT_EQ(kiln::onnx::compare_tensors(e, Tensor::from_vector(std::vector<float>{1.0f, NAN, 100.05f}, {3}), 1e-3, 1e-7, err), "");
  err = 0;  // compare_tensors keeps the running maximum
  std::string why = kiln::onnx::compare_tensors(e, Tensor::from_vector(std::vector<float>{1.01f, NAN, 100.0f}, {3}), 1e-3, 1e-7, err);
  EXPECT_NE(why.find("at [0]"), std::string::npos) << why;
  EXPECT_NEAR(err, 0.01, 1e-5);
  EXPECT_NE(kiln::onnx::compare_tensors(e, Tensor::ones({1, 3}), 1e-3, 1e-7, err).find("shape"), std::string::npos);
  EXPECT_NE(kiln::onnx::compare_tensors(e, Tensor::ones({3}, DType::f64), 1e-3, 1e-7, err).find("dtype"), std::string::npos);
}
