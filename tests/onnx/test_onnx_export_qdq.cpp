// QDQ export of an int8 model (engine/quant/onnx/export_qdq.h): the file passes libonnx's checker, holds
// the int8 weights, int32 biases and u8 activation parameters of the int8 model, and Kiln's ONNX
// executor runs it to the int8 model's outputs, with FuseQdq (rewrite_qdq.cpp) on the int8 kernels;
// a layer outside FuseQdq's pattern stays float with the reason logged; a QDQ model with
// per-channel scales of the wrong length or a zero point out of range fails naming the node.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/onnx/executor.h"
#include "engine/quant/onnx/export_qdq.h"
#include "engine/onnx/tensor_proto.h"
#include "tests/common/quant_cnn.h"
#include "tests/common/error_of.h"

namespace {

using kiln::Tensor;
using kiln::graph::Graph;
using kiln::graph::NodeId;
using kiln::test::error_of;

Graph small_cnn() { return kiln::test::small_quant_cnn(47); }

std::shared_ptr<kiln::quant::Int8Model> quantized(const std::vector<std::string>& keep_float = {}) {
  kiln::quant::Calibrator cal(small_cnn(), {kiln::quant::Calibration::minmax, keep_float});
  for (int b = 0; b < 4; ++b) cal.observe(kiln::normal({64, 1, 12, 12}, 0, 1));
  return cal.convert();
}

std::vector<float> run_onnx(const std::string& bytes, const Tensor& x) {
  kiln::onnx::Session s(kiln::onnx::parse_model(bytes, "", "qdq"));
  return s.run({{s.input_names().at(0), x}}).at(0).to_vector<float>();
}

const onnx::TensorProto* initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::map<std::string, int> op_counts(const onnx::ModelProto& m) {
  std::map<std::string, int> n;
  for (const auto& node : m.graph().node()) ++n[node.op_type()];
  return n;
}

TEST(QdqExport, HoldsTheInt8ModelAndRunsToItsOutputs) {
  auto q = quantized();
  const std::string bytes = kiln::quant::export_qdq(*q);
  ASSERT_NO_THROW(kiln::onnx::check_model_bytes(bytes));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.opset_import(0).version(), 17);
  // Weights and biases of the three layers; Q -> DQ pairs on conv1's input (the graph input), on the
  // u8 outputs of conv1 (-> pool, flatten -> fc1, whose input gets the same pair again) and of fc1
  // (read by fc2 as it is).
  auto counts = op_counts(m);
  EXPECT_EQ(counts["DequantizeLinear"], 3 + 3 + 4);
  EXPECT_EQ(counts["QuantizeLinear"], 4);
  EXPECT_EQ(counts["Conv"], 1);
  EXPECT_EQ(counts["Gemm"], 2);
  EXPECT_EQ(counts["BatchNormalization"], 0);  // folded
  for (const auto& layer : q->layers()) {
    SCOPED_TRACE(layer->name());
    EXPECT_EQ(initializer(m, layer->name() + ".weight"), nullptr);  // no float weight left
    const onnx::TensorProto* w = initializer(m, layer->name() + ".weight_quantized");
    const onnx::TensorProto* b = initializer(m, layer->name() + ".bias_quantized");
    const onnx::TensorProto* s = initializer(m, layer->name() + ".bias_scale");
    ASSERT_TRUE(w && b && s);
    EXPECT_EQ(w->data_type(), onnx::TensorProto::INT8);
    EXPECT_EQ(b->data_type(), onnx::TensorProto::INT32);
    EXPECT_EQ(kiln::onnx::tensor_from_proto(*w, "").to_vector<int8_t>(), layer->int8_weight().to_vector<int8_t>());
    const auto q_params = layer->kernel_params();
    const auto bias_scale = kiln::onnx::tensor_from_proto(*s, "").to_vector<float>();
    ASSERT_EQ(bias_scale.size(), q_params.weight_scales.size());
    for (size_t c = 0; c < bias_scale.size(); ++c)
      EXPECT_FLOAT_EQ(bias_scale[c], q_params.in_scale * q_params.weight_scales[c]);
  }
  for (const auto& node : m.graph().node()) {
    if (node.op_type() != "DequantizeLinear" || node.input(0).find(".weight_quantized") == std::string::npos) continue;
    ASSERT_EQ(node.attribute_size(), 1) << node.name();
    EXPECT_EQ(node.attribute(0).name(), "axis");
    EXPECT_EQ(node.attribute(0).i(), 0);
  }
  const auto* zp = initializer(m, "conv1.input_zero_point");
  ASSERT_TRUE(zp);
  EXPECT_EQ(zp->data_type(), onnx::TensorProto::UINT8);
  EXPECT_EQ(kiln::onnx::tensor_from_proto(*zp, "").to_vector<uint8_t>().at(0), q->layers()[0]->input_qparams().zero_point);

  // Kiln's executor on the QDQ file follows the int8 model: the same rounding and saturation,
  // the accumulation in f32 instead of s32 (a value on a rounding boundary can move one step).
  const Tensor x = kiln::normal({256, 1, 12, 12}, 0, 1);
  const auto want = q->forward(x).to_vector<float>(), got = run_onnx(bytes, x);
  ASSERT_EQ(want.size(), got.size());
  double err = 0, ref = 0;
  int agree = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (want[i] - got[i]) * (want[i] - got[i]);
    ref += want[i] * want[i];
  }
  for (size_t r = 0; r < want.size() / 4; ++r) {
    auto row = [&](const std::vector<float>& v) { return std::max_element(v.begin() + 4 * r, v.begin() + 4 * r + 4) - v.begin(); };
    agree += row(want) == row(got);
  }
  EXPECT_LT(std::sqrt(err / ref), 1e-3);
  EXPECT_GE(agree, 254);
}

TEST(QdqExport, LayersKeptInFloatStayFloat) {
  auto q = quantized({"fc2"});
  const std::string bytes = kiln::quant::export_qdq(*q);
  ASSERT_NO_THROW(kiln::onnx::check_model_bytes(bytes));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  const onnx::TensorProto* w = initializer(m, "fc2.weight");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(initializer(m, "fc2.weight_quantized"), nullptr);
  // conv1's input and output, fc1's input; fc1's output goes to the float fc2 through relu2 in f32
  EXPECT_EQ(op_counts(m)["DequantizeLinear"], 2 + 2 + 3);
  EXPECT_EQ(op_counts(m)["QuantizeLinear"], 3);
  const Tensor x = kiln::normal({32, 1, 12, 12}, 0, 1);
  const auto want = q->forward(x).to_vector<float>(), got = run_onnx(bytes, x);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(want[i], got[i], 1e-3 * (1 + std::abs(want[i])));
  kiln::onnx::ExportOptions opset12;
  opset12.opset = 12;
  EXPECT_NE(error_of([&] { kiln::quant::export_qdq(*q, opset12); }).find("opset 13 or later"), std::string::npos);
}

TEST(QdqExport, LinearOnSequencesIsMatMulOfTheDequantizedWeight) {
  // tokens [N, 5, 6] -> fc [N, 5, 3]: export_model writes MatMul(x, Transpose(weight)) + Add(bias).
  Graph g;
  const NodeId in = g.add_node("Input", "x", {{"shape", std::vector<int64_t>{5, 6}}});
  const NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{6}}, {"out_features", int64_t{3}}});
  const NodeId out = g.add_node("Output", "y");
  g.connect({in, 0}, {fc, 0});
  g.connect({fc, 0}, {out, 0});
  kiln::manual_seed(5);
  kiln::graph::GraphModule m(g);
  kiln::graph::store_state(g, m.state_dict());
  kiln::quant::Calibrator cal(g, {kiln::quant::Calibration::minmax, {}});
  cal.observe(kiln::normal({16, 5, 6}, 0, 1));
  auto q = cal.convert();
  const std::string bytes = kiln::quant::export_qdq(*q);
  ASSERT_NO_THROW(kiln::onnx::check_model_bytes(bytes));
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  auto counts = op_counts(proto);
  EXPECT_EQ(counts["MatMul"], 1);
  EXPECT_EQ(counts["Transpose"], 1);
  EXPECT_EQ(counts["DequantizeLinear"], 3);  // weight, bias, input
  const Tensor x = kiln::normal({4, 5, 6}, 0, 1);
  const auto want = q->forward(x).to_vector<float>(), got = run_onnx(bytes, x);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(want[i], got[i], 1e-4 * (1 + std::abs(want[i])));
}

// Replaces initializer `name`'s value.
void set_initializer(onnx::ModelProto& m, const std::string& name, const Tensor& value) {
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == name) {
      kiln::onnx::tensor_to_proto(value, t);
      t.set_name(name);
      return;
    }
  FAIL() << "no initializer " << name;
}

TEST(QdqImport, BadScalesAndZeroPointsNameTheNode) {
  auto q = quantized();
  onnx::ModelProto good;
  ASSERT_TRUE(good.ParseFromString(kiln::quant::export_qdq(*q)));
  const Tensor x = kiln::normal({2, 1, 12, 12}, 0, 1);
  auto run = [&](const onnx::ModelProto& m) {
    return error_of([&] { run_onnx(m.SerializeAsString(), x); });
  };
  onnx::ModelProto m = good;
  set_initializer(m, "conv1.weight_scale", Tensor::ones({7}));  // conv1 has 8 output channels
  std::string e = run(m);
  EXPECT_NE(e.find("node 'conv1.weight_DequantizeLinear'"), std::string::npos) << e;
  EXPECT_NE(e.find("has 7 entries, but axis 0 of the input [8, 1, 3, 3] has 8"), std::string::npos) << e;

  m = good;
  set_initializer(m, "fc1.bias_scale", Tensor::ones({3}));
  e = run(m);
  EXPECT_NE(e.find("node 'fc1.bias_DequantizeLinear'"), std::string::npos) << e;

  // A zero point of a wider type than the u8 it dequantizes, out of u8's range (the checker
  // refuses such a model; Kiln's import reads it and says what is wrong).
  m = good;
  for (auto& node : *m.mutable_graph()->mutable_node())
    if (node.name() == "conv1.input_DequantizeLinear") node.set_input(2, "bad_zero_point");
  auto* zp = m.mutable_graph()->add_initializer();
  kiln::onnx::tensor_to_proto(Tensor::scalar(300, kiln::DType::i32), *zp);
  zp->set_name("bad_zero_point");
  e = run(m);
  EXPECT_NE(e.find("node 'conv1.input_DequantizeLinear'"), std::string::npos) << e;
  EXPECT_NE(e.find("zero point 300 is out of the range of the u8 input [0, 255]"), std::string::npos) << e;
  EXPECT_EQ(run(good), "(no error)");
}

}  // namespace

namespace {

kiln::onnx::Session optimized_session(const std::string& bytes) {
  kiln::onnx::SessionOptions o;
  o.optimize = true;  // what `kiln run` does on the CPU: the load-time rewrites, FuseQdq among them
  return kiln::onnx::Session(kiln::onnx::parse_model(bytes, "", "qdq"), kiln::Device(), o);
}

bool logged(const kiln::onnx::Session& s, const std::string& line) {
  const auto& log = s.rewrite_log();
  return std::find(log.begin(), log.end(), line) != log.end();
}

TEST(QdqImport, QuantizedLayersRunOnTheInt8Kernels) {
  auto q = quantized();
  const std::string bytes = kiln::quant::export_qdq(*q);
  kiln::onnx::Session s = optimized_session(bytes);
  std::string log;
  for (const std::string& l : s.rewrite_log()) log += l + "\n";
  // conv1 and fc1 feed int8 layers (Note [u8 chain]): their QuantizeLinear is the kernel's.
  EXPECT_TRUE(logged(s, "FuseQdq: 'conv1' + 'relu1' + 'conv1.output_QuantizeLinear' -> QConv (int8 kernels, u8 out)"))
      << log;
  EXPECT_TRUE(logged(s, "FuseQdq: 'fc1' + 'relu2' + 'fc1.output_QuantizeLinear' -> QGemm (int8 kernels, u8 out)")) << log;
  EXPECT_TRUE(logged(s, "FuseQdq: 'fc2' -> QGemm (int8 kernels)")) << log;
  // The int8 kernels' s32 accumulation is the int8 model's own: the outputs agree more closely
  // than the float path's (rounding of the u8 requantization may still differ by one step).
  const Tensor x = kiln::normal({64, 1, 12, 12}, 0, 1);
  const auto want = q->forward(x).to_vector<float>();
  const auto got = s.run({{s.input_names().at(0), x}}).at(0).to_vector<float>();
  ASSERT_EQ(want.size(), got.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (want[i] - got[i]) * (want[i] - got[i]);
    ref += want[i] * want[i];
  }
  EXPECT_LT(std::sqrt(err / ref), 1e-4);
}

TEST(QdqImport, LayersOutsideThePatternStayFloatWithAReason) {
  auto q = quantized();
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(kiln::quant::export_qdq(*q)));
  // An asymmetric weight (zero point 1): the int8 kernels take symmetric s8 weights only.
  set_initializer(m, "conv1.weight_zero_point", Tensor::ones({8}, kiln::DType::i8));
  const std::string bytes = m.SerializeAsString();
  kiln::onnx::Session s = optimized_session(bytes);
  EXPECT_TRUE(logged(s, "FuseQdq: left 'conv1' in float: its weight zero point is not 0 (the int8 kernels take "
                        "symmetric weights)"));
  EXPECT_TRUE(logged(s, "FuseQdq: 'fc1' + 'relu2' + 'fc1.output_QuantizeLinear' -> QGemm (int8 kernels, u8 out)"));
  const Tensor x = kiln::normal({8, 1, 12, 12}, 0, 1);
  const auto plain = run_onnx(bytes, x);
  const auto got = s.run({{s.input_names().at(0), x}}).at(0).to_vector<float>();
  ASSERT_EQ(plain.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(plain[i], got[i], 1e-3 * (1 + std::abs(plain[i])));
}

}  // namespace
