// QOperator models on the int8 kernels: FuseQLinear (rewrite_qlinear.cpp) puts QLinearConv and
// QLinearMatMul with constant weights onto kiln.fused ops (ops_fused_qlinear.cpp) when the
// session optimizes (as `kiln run` does). Checked: the ONNX node tests' expected outputs (with
// their weights made constants), a chain with per-channel weights, a bias, a depthwise conv,
// INT8 and UINT8 activations and weights against the float executor; bad input (a zero point of
// the wrong type, per-channel scales of the wrong length, a weight fed at run time) stays float
// with the reason logged, naming the node. Also FuseQdq's depthwise (group > 1) conv.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/core/random.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/rewrite.h"
#include "engine/onnx/tensor_proto.h"
#include "tests/common/error_of.h"
#include "tests/onnx/model_builder.h"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::test::error_of;
namespace ko = kiln::onnx;
namespace mb = kiln::onnx::test;

ko::Session session(ko::Model m, bool optimize) {
  ko::SessionOptions o;
  o.optimize = optimize;  // `kiln run` on the CPU: the load-time rewrites
  return ko::Session(std::move(m), kiln::Device(), o);
}

ko::Model parse(const onnx::ModelProto& m) { return ko::parse_model(m.SerializeAsString(), "", "qlinear"); }

std::string log_of(const ko::Session& s) {
  std::string l;
  for (const std::string& line : s.rewrite_log()) l += line + "\n";
  return l;
}

bool logged(const ko::Session& s, const std::string& line) {
  const auto& log = s.rewrite_log();
  return std::find(log.begin(), log.end(), line) != log.end();
}

// Runs s on the one input x; `ran` gets "domain.op" of every node run.
Tensor run(const ko::Session& s, const Tensor& x, std::vector<std::string>* ran = nullptr) {
  return s
      .run({{s.input_names().at(0), x}},
           [&](const ko::Node& n, const std::vector<Tensor>&, const std::vector<Tensor>&) {
             if (ran) ran->push_back(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
           })
      .at(0);
}

int count(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<int>(std::count(v.begin(), v.end(), s));
}

// ---- the ONNX node tests (Debian's libonnx-testdata) ----

struct NodeCase {
  ko::Model model;
  std::vector<Tensor> inputs;
  Tensor expected;
};

NodeCase node_case(const std::string& name) {
  const std::string dir = std::string(KILN_ONNX_TESTDATA_DIR) + "/node/" + name;
  NodeCase c{ko::load_model(dir + "/model.onnx"), {}, ko::load_tensor_file(dir + "/test_data_set_0/output_0.pb")};
  for (size_t i = 0; i < c.model.graph.inputs.size(); ++i)
    c.inputs.push_back(ko::load_tensor_file(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"));
  return c;
}

// Inputs 1.. (scales, zero points, weight) become initializers, as a deployed model has them.
ko::Model frozen(NodeCase c) {
  for (size_t i = 1; i < c.model.graph.inputs.size(); ++i) c.model.graph.initializers[c.model.graph.inputs[i].name] = c.inputs[i];
  c.model.graph.inputs.resize(1);
  return c.model;
}

TEST(QLinearImport, NodeTestsRunOnTheInt8KernelsToTheExpectedOutputs) {
  for (const auto& [name, op] : std::vector<std::pair<std::string, std::string>>{
           {"test_qlinearconv", "QLinearConv"}, {"test_qlinearmatmul_2D", "QLinearMatMul"}, {"test_qlinearmatmul_3D", "QLinearMatMul"}}) {
    SCOPED_TRACE(name);
    NodeCase c = node_case(name);
    const std::string node = c.model.graph.nodes.at(0).name;
    ko::Session s = session(frozen(c), true);
    // their u8 weights minus zero point leave [-128, 127]: two int8 halves (Note [Wide weights])
    EXPECT_TRUE(logged(s, "FuseQLinear: '" + node + "' -> " + op + " (int8 kernels, w - zero point in two int8 halves)"))
        << log_of(s);
    std::vector<std::string> ran;
    const Tensor y = run(s, c.inputs[0], &ran);
    EXPECT_EQ(count(ran, "kiln.fused." + op), 1);
    EXPECT_EQ(count(ran, op), 0);
    ASSERT_EQ(y.dtype(), c.expected.dtype());
    ASSERT_EQ(y.shape(), c.expected.shape());
    EXPECT_EQ(y.to_vector<int>(), c.expected.to_vector<int>());
  }
}

TEST(QLinearImport, NodeTestsWithWeightsFedAtRunTimeStayFloat) {
  NodeCase c = node_case("test_qlinearconv");
  const std::string node = c.model.graph.nodes.at(0).name;
  ko::Session s = session(c.model, true);
  EXPECT_TRUE(logged(s, "FuseQLinear: left '" + node + "' in float: its w 'w' is not a constant (an initializer or "
                        "Constant node): the int8 kernels take prepared weights"))
      << log_of(s);
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < c.inputs.size(); ++i) feed[c.model.graph.inputs[i].name] = c.inputs[i];
  EXPECT_EQ(s.run(feed).at(0).to_vector<int>(), c.expected.to_vector<int>());
}

// ---- a chain built here ----

void add_tensor(onnx::GraphProto& g, const std::string& name, const Tensor& v) {
  auto* t = g.add_initializer();
  ko::tensor_to_proto(v, *t);
  t->set_name(name);
}

void set_tensor(onnx::ModelProto& m, const std::string& name, const Tensor& v) {
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == name) {
      ko::tensor_to_proto(v, t);
      t.set_name(name);
      return;
    }
  FAIL() << "no initializer " << name;
}

// Deterministic integers in [lo, hi].
std::vector<int> ints(size_t n, int lo, int hi, uint32_t seed) {
  std::vector<int> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = lo + static_cast<int>((seed >> 8) % static_cast<uint32_t>(hi - lo + 1));
  }
  return v;
}

Tensor q8(const std::vector<int>& v, const kiln::Shape& shape, DType t) {
  return Tensor::from_vector(std::vector<double>(v.begin(), v.end()), shape).to(t);
}

std::vector<float> scales(size_t n, float base) {
  std::vector<float> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = base * (0.61f + 0.173f * static_cast<float>(i % 7));
  return s;
}

// x u8 [2, 4, 9, 9]
//  -> conv1 QLinearConv 3x3 pad 1, w s8 [8, 4, 3, 3] per-channel, B, y u8 zero point 0 (ReLU by saturation)
//  -> dw    QLinearConv 3x3 stride 2 pad 1 group 8 (depthwise), w s8 [8, 1, 3, 3] per-channel, y s8 zero point -3
//  -> pw    QLinearConv 1x1 of the s8 input, w u8 [6, 8, 1, 1] zero point 20 per tensor (wide), y u8 zero point 100
//  -> mm    QLinearMatMul of [2, 6, 5, 5] by b s8 [5, 7] per-column scales, y u8 zero point 128 -> y [2, 6, 5, 7]
onnx::ModelProto chain() {
  onnx::GraphProto g;
  g.set_name("qlinear_chain");
  *g.add_input() = mb::value_info("x", onnx::TensorProto::UINT8, {-1, 4, 9, 9});
  *g.add_output() = mb::value_info("y", onnx::TensorProto::UINT8, {-1, 6, 5, 7});
  auto scalar = [&](const std::string& name, double v, DType t) { add_tensor(g, name, Tensor::scalar(v, t)); };
  scalar("x_s", 0.0213, DType::f32);
  scalar("x_z", 128, DType::u8);
  add_tensor(g, "w1", q8(ints(8 * 4 * 9, -127, 127, 1), {8, 4, 3, 3}, DType::i8));
  add_tensor(g, "w1_s", Tensor::from_vector(scales(8, 0.004f), {8}));
  add_tensor(g, "w1_z", Tensor::zeros({8}, DType::i8));
  scalar("y1_s", 0.0517, DType::f32);
  scalar("y1_z", 0, DType::u8);
  add_tensor(g, "b1", q8(ints(8, -2000, 2000, 2), {8}, DType::i32));
  auto* n = mb::add_node(g, "QLinearConv", {"x", "x_s", "x_z", "w1", "w1_s", "w1_z", "y1_s", "y1_z", "b1"}, {"y1"}, "conv1");
  mb::set_ints(n, "pads", {1, 1, 1, 1});
  add_tensor(g, "w2", q8(ints(8 * 9, -127, 127, 3), {8, 1, 3, 3}, DType::i8));
  add_tensor(g, "w2_s", Tensor::from_vector(scales(8, 0.01f), {8}));
  add_tensor(g, "w2_z", Tensor::zeros({8}, DType::i8));
  scalar("y2_s", 0.0433, DType::f32);
  scalar("y2_z", -3, DType::i8);
  n = mb::add_node(g, "QLinearConv", {"y1", "y1_s", "y1_z", "w2", "w2_s", "w2_z", "y2_s", "y2_z"}, {"y2"}, "dw");
  mb::set_ints(n, "pads", {1, 1, 1, 1});
  mb::set_ints(n, "strides", {2, 2});
  mb::set_int(n, "group", 8);
  add_tensor(g, "w3", q8(ints(6 * 8, 0, 255, 4), {6, 8, 1, 1}, DType::u8));
  scalar("w3_s", 0.00291, DType::f32);
  scalar("w3_z", 20, DType::u8);
  scalar("y3_s", 0.1071, DType::f32);
  scalar("y3_z", 100, DType::u8);
  mb::add_node(g, "QLinearConv", {"y2", "y2_s", "y2_z", "w3", "w3_s", "w3_z", "y3_s", "y3_z"}, {"y3"}, "pw");
  add_tensor(g, "b", q8(ints(5 * 7, -127, 127, 5), {5, 7}, DType::i8));
  add_tensor(g, "b_s", Tensor::from_vector(scales(7, 0.02f), {7}));
  add_tensor(g, "b_z", Tensor::zeros({7}, DType::i8));
  scalar("y_s", 0.2093, DType::f32);
  scalar("y_z", 128, DType::u8);
  mb::add_node(g, "QLinearMatMul", {"y3", "y3_s", "y3_z", "b", "b_s", "b_z", "y_s", "y_z"}, {"y"}, "mm");
  return mb::model_with(g, 13);
}

Tensor chain_input() { return q8(ints(2 * 4 * 81, 0, 255, 9), {2, 4, 9, 9}, DType::u8); }

TEST(QLinearImport, ChainRunsOnTheInt8KernelsAsTheFloatExecutor) {
  const onnx::ModelProto m = chain();
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  for (const char* line : {"FuseQLinear: 'conv1' -> QLinearConv (int8 kernels)", "FuseQLinear: 'dw' -> QLinearConv (int8 kernels)",
                           "FuseQLinear: 'pw' -> QLinearConv (int8 kernels, w - zero point in two int8 halves)",
                           "FuseQLinear: 'mm' -> QLinearMatMul (int8 kernels)"})
    EXPECT_TRUE(logged(fused, line)) << line << "\n" << log_of(fused);
  std::vector<std::string> ran;
  const Tensor x = chain_input();
  const std::vector<int> got = run(fused, x, &ran).to_vector<int>(), want = run(plain, x).to_vector<int>();
  EXPECT_EQ(count(ran, "kiln.fused.QLinearConv"), 3);
  EXPECT_EQ(count(ran, "kiln.fused.QLinearMatMul"), 1);
  EXPECT_EQ(count(ran, "QLinearConv") + count(ran, "QLinearMatMul"), 0);
  ASSERT_EQ(got.size(), want.size());
  // Equal: the kernel requantizes in f32 (the multiplier x_scale w_scale / y_scale in f32, as the
  // ONNX reference computes it, then one f32 product), the float executor in f64, so only a value
  // within f32 rounding of a .5 tie could round the other way. Scales like 0.05 / 0.04 make such
  // ties (one of 420 outputs differed by 1 with them); the scales here do not.
  EXPECT_EQ(got, want);
  // not a degenerate output: the values spread over the u8 range
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  EXPECT_GT(*hi - *lo, 100) << *lo << " to " << *hi;
}

TEST(QLinearImport, BadQuantizationParametersStayFloatNamingTheNode) {
  const Tensor x = chain_input();
  {  // a zero point of a wider type than x's UINT8, out of its range
    onnx::ModelProto m = chain();
    set_tensor(m, "x_z", Tensor::scalar(300, DType::i32));
    ko::Session s = session(parse(m), true);
    EXPECT_TRUE(logged(s, "FuseQLinear: left 'conv1' in float: its x_zero_point is INT32, not UINT8 or INT8 (the type "
                          "of the tensor it belongs to)"))
        << log_of(s);
    EXPECT_TRUE(logged(s, "FuseQLinear: 'dw' -> QLinearConv (int8 kernels)")) << log_of(s);
    // said once, though the runner ran the passes again after that change
    EXPECT_EQ(std::count_if(s.rewrite_log().begin(), s.rewrite_log().end(),
                            [](const std::string& l) { return l.rfind("FuseQLinear: left 'conv1'", 0) == 0; }),
              1)
        << log_of(s);
    const std::string e = error_of([&] { run(s, x); });
    EXPECT_NE(e.find("node 'conv1' (QLinearConv)"), std::string::npos) << e;
    EXPECT_NE(e.find("zero point 300 is out of the range of the u8 input [0, 255]"), std::string::npos) << e;
  }
  {  // per-channel scales of the wrong length
    onnx::ModelProto m = chain();
    set_tensor(m, "w2_s", Tensor::from_vector(scales(7, 0.01f), {7}));
    ko::Session s = session(parse(m), true);
    EXPECT_TRUE(logged(s, "FuseQLinear: left 'dw' in float: its w_scale has 7 entries: one or one per output channel "
                          "(8 output channels) expected"))
        << log_of(s);
    const std::string e = error_of([&] { run(s, x); });
    EXPECT_NE(e.find("node 'dw' (QLinearConv)"), std::string::npos) << e;
    EXPECT_NE(e.find("has 7 entries"), std::string::npos) << e;
  }
  {  // per-column b scales of the wrong length
    onnx::ModelProto m = chain();
    set_tensor(m, "b_s", Tensor::from_vector(scales(5, 0.02f), {5}));
    ko::Session s = session(parse(m), true);
    EXPECT_TRUE(logged(s, "FuseQLinear: left 'mm' in float: its b_scale has 5 entries: one or one per output channel "
                          "(7 output channels) expected"))
        << log_of(s);
  }
}

TEST(QLinearImport, WeightFedAtRunTimeStaysFloatWithTheSameOutputs) {
  onnx::ModelProto m = chain();
  // w1 becomes a graph input: not a constant of the session
  auto* init = m.mutable_graph()->mutable_initializer();
  Tensor w1;
  for (int i = 0; i < init->size(); ++i)
    if (init->Get(i).name() == "w1") {
      w1 = ko::tensor_from_proto(init->Get(i), "");
      init->DeleteSubrange(i, 1);
      break;
    }
  ASSERT_TRUE(w1.defined());
  *m.mutable_graph()->add_input() = mb::value_info("w1", onnx::TensorProto::INT8, {8, 4, 3, 3});
  ko::Session s = session(parse(m), true);
  EXPECT_TRUE(logged(s, "FuseQLinear: left 'conv1' in float: its w 'w1' is not a constant (an initializer or Constant "
                        "node): the int8 kernels take prepared weights"))
      << log_of(s);
  EXPECT_TRUE(logged(s, "FuseQLinear: 'mm' -> QLinearMatMul (int8 kernels)")) << log_of(s);
  const Tensor x = chain_input();
  const auto got = s.run({{"x", x}, {"w1", w1}}).at(0).to_vector<int>();
  const auto want = run(session(parse(chain()), false), x).to_vector<int>();
  ASSERT_EQ(got.size(), want.size());
  int worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LE(worst, 1);
}

// ---- FuseQdq with a depthwise conv (group = channels) ----

TEST(QdqImport, DepthwiseConvRunsOnTheInt8Kernels) {
  onnx::GraphProto g;
  g.set_name("qdq_depthwise");
  *g.add_input() = mb::value_info("x", onnx::TensorProto::FLOAT, {-1, 6, 8, 8});
  *g.add_output() = mb::value_info("y", onnx::TensorProto::FLOAT, {-1, 6, 8, 8});
  const float xs = 0.03f;
  const std::vector<float> ws = scales(6, 0.01f);
  std::vector<int> bias = ints(6, -500, 500, 7);
  std::vector<float> bs(6);
  for (size_t c = 0; c < 6; ++c) bs[c] = xs * ws[c];
  add_tensor(g, "xs", Tensor::scalar(xs));
  add_tensor(g, "xz", Tensor::scalar(120, DType::u8));
  add_tensor(g, "w", q8(ints(6 * 9, -127, 127, 8), {6, 1, 3, 3}, DType::i8));
  add_tensor(g, "ws", Tensor::from_vector(ws, {6}));
  add_tensor(g, "wz", Tensor::zeros({6}, DType::i8));
  add_tensor(g, "b", q8(bias, {6}, DType::i32));
  add_tensor(g, "bs", Tensor::from_vector(bs, {6}));
  mb::add_node(g, "QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, "q");
  mb::add_node(g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}, "dq");
  mb::set_int(mb::add_node(g, "DequantizeLinear", {"w", "ws", "wz"}, {"wd"}, "wdq"), "axis", 0);
  mb::set_int(mb::add_node(g, "DequantizeLinear", {"b", "bs"}, {"bd"}, "bdq"), "axis", 0);
  auto* conv = mb::add_node(g, "Conv", {"xd", "wd", "bd"}, {"c"}, "dw");
  mb::set_int(conv, "group", 6);
  mb::set_ints(conv, "pads", {1, 1, 1, 1});
  mb::add_node(g, "Relu", {"c"}, {"y"}, "relu");
  const onnx::ModelProto m = mb::model_with(g, 13);
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "FuseQdq: 'dw' + 'relu' -> QConv (int8 kernels)")) << log_of(fused);
  std::vector<std::string> ran;
  const Tensor x = kiln::normal({3, 6, 8, 8}, 0, 1);
  const auto got = run(fused, x, &ran).to_vector<float>(), want = run(plain, x).to_vector<float>();
  EXPECT_EQ(count(ran, "kiln.fused.QConv"), 1);
  EXPECT_EQ(count(ran, "Conv"), 0);
  ASSERT_EQ(got.size(), want.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  EXPECT_GT(ref, 0);
  EXPECT_LT(std::sqrt(err / ref), 1e-5);
}

// ---- FuseQdq taking in the QuantizeLinear after the layer (Note [Requantized output]) ----

struct RequantCase {
  std::vector<float> y_scales{0.05f};  // more than one: per channel (axis 1), which the kernel cannot take
  bool second_reader = false;          // the Relu's output is also a graph output
};

// x (FLOAT) -> QuantizeLinear -> DequantizeLinear -> Conv 3x3 (INT8 weight, INT32 bias, per-channel
// scales) -> Relu -> QuantizeLinear(y_scales, zero point 7) -> yq (UINT8), ONNX's QDQ arithmetic.
onnx::ModelProto requant_model(const RequantCase& rc) {
  onnx::GraphProto g;
  g.set_name("qdq_requant");
  *g.add_input() = mb::value_info("x", onnx::TensorProto::FLOAT, {-1, 4, 7, 7});
  *g.add_output() = mb::value_info("yq", onnx::TensorProto::UINT8, {-1, 8, 7, 7});
  if (rc.second_reader) *g.add_output() = mb::value_info("r", onnx::TensorProto::FLOAT, {-1, 8, 7, 7});
  const float xs = 0.02f;
  const std::vector<float> ws = scales(8, 0.004f);
  std::vector<float> bs(8);
  for (size_t c = 0; c < 8; ++c) bs[c] = xs * ws[c];
  add_tensor(g, "xs", Tensor::scalar(xs));
  add_tensor(g, "xz", Tensor::scalar(128, DType::u8));
  add_tensor(g, "w", q8(ints(8 * 4 * 9, -127, 127, 11), {8, 4, 3, 3}, DType::i8));
  add_tensor(g, "ws", Tensor::from_vector(ws, {8}));
  add_tensor(g, "wz", Tensor::zeros({8}, DType::i8));
  add_tensor(g, "b", q8(ints(8, -2000, 2000, 12), {8}, DType::i32));
  add_tensor(g, "bs", Tensor::from_vector(bs, {8}));
  const auto ny = static_cast<int64_t>(rc.y_scales.size());
  add_tensor(g, "ys", ny == 1 ? Tensor::scalar(rc.y_scales[0]) : Tensor::from_vector(rc.y_scales, {ny}));
  add_tensor(g, "yz", ny == 1 ? Tensor::scalar(7, DType::u8) : Tensor::full({ny}, 7, DType::u8));
  mb::add_node(g, "QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, "q");
  mb::add_node(g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xd"}, "dq");
  mb::set_int(mb::add_node(g, "DequantizeLinear", {"w", "ws", "wz"}, {"wd"}, "wdq"), "axis", 0);
  mb::set_int(mb::add_node(g, "DequantizeLinear", {"b", "bs"}, {"bd"}, "bdq"), "axis", 0);
  mb::set_ints(mb::add_node(g, "Conv", {"xd", "wd", "bd"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  mb::add_node(g, "Relu", {"c"}, {"r"}, "relu");
  auto* q = mb::add_node(g, "QuantizeLinear", {"r", "ys", "yz"}, {"yq"}, "yq_q");
  if (ny > 1) mb::set_int(q, "axis", 1);
  return mb::model_with(g, 13);
}

// The u8 outputs of the fused and the float path: the largest difference in steps and how many differ.
std::pair<int, size_t> u8_difference(const ko::Session& fused, const ko::Session& plain, const Tensor& x) {
  const auto got = run(fused, x).to(DType::i32).to_vector<int>(), want = run(plain, x).to(DType::i32).to_vector<int>();
  EXPECT_EQ(got.size(), want.size());
  int worst = 0;
  size_t differ = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    differ += got[i] != want[i];
  }
  return {worst, differ};
}

TEST(QdqImport, QuantizeLinearAfterTheLayerIsTheKernelsRequantization) {
  const onnx::ModelProto m = requant_model({});
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "FuseQdq: 'conv' + 'relu' + 'yq_q' -> QConv (int8 kernels, u8 out)")) << log_of(fused);
  std::vector<std::string> ran;
  const Tensor x = kiln::normal({4, 4, 7, 7}, 0, 1);
  const Tensor y = run(fused, x, &ran);
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(count(ran, "kiln.fused.QConv"), 1);
  EXPECT_EQ(count(ran, "QuantizeLinear"), 1);  // the input's only
  EXPECT_EQ(count(ran, "Relu"), 0);
  // The kernel scales the s32 sum in f32 where the float path rounds y / scale: at most one step
  // apart, and only for values within an f32 rounding error of a half step.
  const auto [worst, differ] = u8_difference(fused, plain, x);
  EXPECT_LE(worst, 1);
  EXPECT_LE(differ, y.numel() / 100) << differ << " of " << y.numel();
  // Saturation: a scale this small puts most outputs at 255, as the spec's QuantizeLinear does.
  RequantCase tiny;
  tiny.y_scales = {1e-4f};
  const onnx::ModelProto t = requant_model(tiny);
  ko::Session tf = session(parse(t), true), tp = session(parse(t), false);
  const auto saturated = run(tf, x).to(DType::i32).to_vector<int>();
  EXPECT_GT(std::count(saturated.begin(), saturated.end(), 255), static_cast<long>(saturated.size() / 4));
  EXPECT_LE(u8_difference(tf, tp, x).first, 1);
}

TEST(QdqImport, QuantizeLinearTheKernelCannotTakeStaysAfterAnF32Layer) {
  RequantCase per_channel;
  per_channel.y_scales = scales(8, 0.05f);
  onnx::ModelProto m = requant_model(per_channel);
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "FuseQdq: 'conv' writes f32: its QuantizeLinear has no one-value FLOAT scale initializer"))
      << log_of(fused);
  EXPECT_TRUE(logged(fused, "FuseQdq: 'conv' + 'relu' -> QConv (int8 kernels)")) << log_of(fused);
  const Tensor x = kiln::normal({2, 4, 7, 7}, 0, 1);
  EXPECT_LE(u8_difference(fused, plain, x).first, 1);

  // The Relu's output read by a second node (here: a graph output): the f32 value must exist.
  RequantCase two;
  two.second_reader = true;
  m = requant_model(two);
  ko::Session f2 = session(parse(m), true), p2 = session(parse(m), false);
  EXPECT_TRUE(logged(f2, "FuseQdq: 'conv' + 'relu' -> QConv (int8 kernels)")) << log_of(f2);
  EXPECT_EQ(run(f2, x).dtype(), DType::u8);
  EXPECT_LE(u8_difference(f2, p2, x).first, 1);
}

// ---- FuseAddQuantize: a residual Add [-> Relu] -> QuantizeLinear in one pass ----

struct AddCase {
  bool relu = true;
  bool sum_read_elsewhere = false;    // v is a graph output too: the node keeps it
  bool per_channel_scale = false;     // QuantizeLinear with [C] scales: not fused
  std::vector<int64_t> b_shape{-1, 8, 5, 5};
};

// a, b (FLOAT) -> Add [-> Relu] -> v -> QuantizeLinear(0.25, 3) -> q (UINT8)
onnx::ModelProto add_model(const AddCase& ac) {
  onnx::GraphProto g;
  g.set_name("qdq_add");
  *g.add_input() = mb::value_info("a", onnx::TensorProto::FLOAT, {-1, 8, 5, 5});
  *g.add_input() = mb::value_info("b", onnx::TensorProto::FLOAT, ac.b_shape);
  *g.add_output() = mb::value_info("q", onnx::TensorProto::UINT8, {-1, 8, 5, 5});
  if (ac.sum_read_elsewhere) *g.add_output() = mb::value_info("v", onnx::TensorProto::FLOAT, {-1, 8, 5, 5});
  add_tensor(g, "ys", ac.per_channel_scale ? Tensor::full({8}, 0.25) : Tensor::scalar(0.25f));
  add_tensor(g, "yz", ac.per_channel_scale ? Tensor::full({8}, 3, DType::u8) : Tensor::scalar(3, DType::u8));
  mb::add_node(g, "Add", {"a", "b"}, {ac.relu ? "s" : "v"}, "add");
  if (ac.relu) mb::add_node(g, "Relu", {"s"}, {"v"}, "relu");
  auto* q = mb::add_node(g, "QuantizeLinear", {"v", "ys", "yz"}, {"q"}, "quant");
  if (ac.per_channel_scale) mb::set_int(q, "axis", 1);
  return mb::model_with(g, 13);
}

// Both sessions' outputs on a, b; every output must be the same, element for element.
void expect_same_outputs(const ko::Session& fused, const ko::Session& plain, const Tensor& a, const Tensor& b,
                         std::vector<std::string>* ran = nullptr) {
  const auto got = fused.run({{"a", a}, {"b", b}}, [&](const ko::Node& n, const std::vector<Tensor>&, const std::vector<Tensor>&) {
    if (ran) ran->push_back(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
  });
  const auto want = plain.run({{"a", a}, {"b", b}});
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].dtype(), want[k].dtype());
    const auto x = got[k].to(DType::f64).to_vector<double>(), y = want[k].to(DType::f64).to_vector<double>();
    ASSERT_EQ(x.size(), y.size());
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += x[i] != y[i];
    EXPECT_EQ(differ, 0u) << "output " << k;
  }
}

// Values of every kind for the 0.25 scale: ties a + b = (k + 1/2) 0.25 (half to even), negatives
// (the Relu; below the zero point), and sums beyond 255 steps (saturation).
std::pair<Tensor, Tensor> add_inputs(const kiln::Shape& b_shape) {
  Tensor a = kiln::normal({3, 8, 5, 5}, 0, 20);
  std::vector<float> av = a.to_vector<float>();
  for (size_t i = 0; i < 40; ++i) av[i] = 0.125f * static_cast<float>(2 * i + 1) - 5.0f;  // b = 0 there
  av[41] = 500.0f;
  a = Tensor::from_vector(av, a.shape());
  Tensor b = kiln::normal(b_shape, 0, 5);
  if (b_shape == kiln::Shape{3, 8, 5, 5}) {
    std::vector<float> bv = b.to_vector<float>();
    for (size_t i = 0; i < 40; ++i) bv[i] = 0;
    b = Tensor::from_vector(bv, b.shape());
  }
  return {a, b};
}

TEST(QdqImport, ResidualAddReluQuantizeRunsInOnePassToTheSameValues) {
  for (const bool relu : {true, false})
    for (const bool elsewhere : {false, true}) {
      AddCase ac;
      ac.relu = relu;
      ac.sum_read_elsewhere = elsewhere;
      const onnx::ModelProto m = add_model(ac);
      ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
      const std::string line = std::string("FuseAddQuantize: 'add'") + (relu ? " + 'relu'" : "") + " + 'quant' -> AddQuantize (one pass" +
                               (elsewhere ? ", f32 sum kept for its other readers)" : ")");
      EXPECT_TRUE(logged(fused, line)) << log_of(fused);
      std::vector<std::string> ran;
      const auto [a, b] = add_inputs({3, 8, 5, 5});
      expect_same_outputs(fused, plain, a, b, &ran);
      EXPECT_EQ(ran, std::vector<std::string>{"kiln.fused.AddQuantize"});
    }
}

TEST(QdqImport, BroadcastingResidualAddTakesTheComposedPathToTheSameValues) {
  AddCase ac;
  ac.b_shape = {1, 8, 1, 1};
  const onnx::ModelProto m = add_model(ac);
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "FuseAddQuantize: 'add' + 'relu' + 'quant' -> AddQuantize (one pass)")) << log_of(fused);
  const auto [a, b] = add_inputs({1, 8, 1, 1});
  expect_same_outputs(fused, plain, a, b);
}

TEST(QdqImport, ResidualAddWithPerChannelQuantizationStaysFloatWithAReason) {
  AddCase ac;
  ac.per_channel_scale = true;
  const onnx::ModelProto m = add_model(ac);
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "FuseAddQuantize: left 'add' in float: its QuantizeLinear 'quant' has no one-value FLOAT "
                            "scale initializer"))
      << log_of(fused);
  std::vector<std::string> ran;
  const auto [a, b] = add_inputs({3, 8, 5, 5});
  expect_same_outputs(fused, plain, a, b, &ran);
  EXPECT_EQ(count(ran, "Add"), 1);
}

// onnxruntime's QDQ form of a residual: a_q, b_q (UINT8) -> DequantizeLinear each -> Add -> Relu ->
// QuantizeLinear. b's DequantizeLinear per channel (b_per_channel) cannot come in as u8.
onnx::ModelProto dq_add_model(bool b_per_channel) {
  onnx::GraphProto g;
  g.set_name("qdq_add_u8");
  *g.add_input() = mb::value_info("a", onnx::TensorProto::UINT8, {-1, 8, 5, 5});
  *g.add_input() = mb::value_info("b", onnx::TensorProto::UINT8, {-1, 8, 5, 5});
  *g.add_output() = mb::value_info("q", onnx::TensorProto::UINT8, {-1, 8, 5, 5});
  add_tensor(g, "as", Tensor::scalar(0.037f));
  add_tensor(g, "az", Tensor::scalar(131, DType::u8));
  add_tensor(g, "bs", b_per_channel ? Tensor::from_vector(scales(8, 0.02f), {8}) : Tensor::scalar(0.021f));
  add_tensor(g, "bz", b_per_channel ? Tensor::full({8}, 9, DType::u8) : Tensor::scalar(9, DType::u8));
  add_tensor(g, "ys", Tensor::scalar(0.043f));
  add_tensor(g, "yz", Tensor::scalar(0, DType::u8));
  mb::add_node(g, "DequantizeLinear", {"a", "as", "az"}, {"ad"}, "a_dq");
  auto* bdq = mb::add_node(g, "DequantizeLinear", {"b", "bs", "bz"}, {"bd"}, "b_dq");
  if (b_per_channel) mb::set_int(bdq, "axis", 1);
  mb::add_node(g, "Add", {"ad", "bd"}, {"s"}, "add");
  mb::add_node(g, "Relu", {"s"}, {"v"}, "relu");
  mb::add_node(g, "QuantizeLinear", {"v", "ys", "yz"}, {"q"}, "quant");
  return mb::model_with(g, 13);
}

TEST(QdqImport, DequantizedResidualAddTakesTheU8InputsToTheSameValues) {
  const Tensor a = kiln::uniform({3, 8, 5, 5}, 0, 256).to(DType::u8), b = kiln::uniform({3, 8, 5, 5}, 0, 256).to(DType::u8);
  for (const bool per_channel : {false, true}) {
    const onnx::ModelProto m = dq_add_model(per_channel);
    ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
    const std::string inputs = per_channel ? "1 u8 input(s)" : "2 u8 input(s)";
    EXPECT_TRUE(logged(fused, "FuseAddQuantize: 'add' + 'relu' + 'quant' -> AddQuantize (one pass, " + inputs + ")"))
        << log_of(fused);
    std::vector<std::string> ran;
    expect_same_outputs(fused, plain, a, b, &ran);
    EXPECT_EQ(count(ran, "DequantizeLinear"), per_channel ? 1 : 0);  // b's per-channel one stays
    EXPECT_EQ(count(ran, "kiln.fused.AddQuantize"), 1);
  }
}

// QuantizeLinear of an f32 tensor on the CPU runs in one pass (quantize_cpu.h): ties go to even,
// values far beyond the range saturate, as the spec's saturate(round(x / scale) + zero_point).
TEST(QdqImport, QuantizeLinearOnePassRoundsHalfToEvenAndSaturates) {
  onnx::GraphProto g;
  g.set_name("quantize");
  *g.add_input() = mb::value_info("x", onnx::TensorProto::FLOAT, {-1});
  *g.add_output() = mb::value_info("q", onnx::TensorProto::UINT8, {-1});
  add_tensor(g, "s", Tensor::scalar(0.5f));
  add_tensor(g, "z", Tensor::scalar(3, DType::u8));
  mb::add_node(g, "QuantizeLinear", {"x", "s", "z"}, {"q"}, "quant");
  std::vector<float> x;
  for (int k = -20; k < 20; ++k) x.push_back(0.5f * (static_cast<float>(k) + 0.5f));  // ties
  for (float v : {1e30f, -1e30f, 3e6f, -3e6f, 126.0f, 126.25f, 126.75f, 127.0f, -1.5f, -1.75f, 0.0f, -0.0f}) x.push_back(v);
  const std::vector<float> r = kiln::normal({2000}, 0, 40).to_vector<float>();
  x.insert(x.end(), r.begin(), r.end());
  const auto got = run(session(parse(mb::model_with(g, 13)), false), Tensor::from_vector(x, {static_cast<int64_t>(x.size())}))
                       .to(DType::i32)
                       .to_vector<int>();
  ASSERT_EQ(got.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::clamp(std::nearbyint(static_cast<double>(x[i] / 0.5f)) + 3, 0.0, 255.0);
    EXPECT_EQ(got[i], static_cast<int>(want)) << "x = " << x[i];
  }
}

// ShareQuantizeLinear: x -> QuantizeLinear twice with equal parameters (other initializers), each
// read by its own DequantizeLinear -> Add; a third with another scale, and a fourth whose output is
// a graph output, stay.
TEST(QdqImport, QuantizeLinearOfOneValueWithTheSameParametersRunsOnce) {
  onnx::GraphProto g;
  g.set_name("qshare");
  *g.add_input() = mb::value_info("x", onnx::TensorProto::FLOAT, {-1, 4});
  *g.add_output() = mb::value_info("y", onnx::TensorProto::FLOAT, {-1, 4});
  *g.add_output() = mb::value_info("q4", onnx::TensorProto::UINT8, {-1, 4});
  for (const char* n : {"s1", "s2", "s4"}) add_tensor(g, n, Tensor::scalar(0.05f));
  add_tensor(g, "s3", Tensor::scalar(0.07f));
  for (const char* n : {"z1", "z2", "z3", "z4"}) add_tensor(g, n, Tensor::scalar(100, DType::u8));
  for (int k = 1; k <= 4; ++k) {
    const std::string i = std::to_string(k);
    mb::add_node(g, "QuantizeLinear", {"x", "s" + i, "z" + i}, {"q" + i}, "quant" + i);
    if (k < 4) mb::add_node(g, "DequantizeLinear", {"q" + i, "s" + i, "z" + i}, {"d" + i}, "dq" + i);
  }
  mb::add_node(g, "Add", {"d1", "d2"}, {"e"}, "add1");
  mb::add_node(g, "Add", {"e", "d3"}, {"y"}, "add2");
  const onnx::ModelProto m = mb::model_with(g, 13);
  ko::Session fused = session(parse(m), true), plain = session(parse(m), false);
  EXPECT_TRUE(logged(fused, "ShareQuantizeLinear: 'quant2' is 'quant1' (same input, scale and zero point)")) << log_of(fused);
  EXPECT_EQ(log_of(fused).find("'quant3' is"), std::string::npos) << log_of(fused);
  EXPECT_EQ(log_of(fused).find("'quant4' is"), std::string::npos) << log_of(fused);
  const Tensor x = kiln::normal({6, 4}, 0, 3);
  std::vector<std::string> ran;
  run(fused, x, &ran);
  EXPECT_EQ(count(ran, "QuantizeLinear"), 3);
  const auto got = fused.run({{"x", x}}), want = plain.run({{"x", x}});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());
  EXPECT_EQ(got[1].to(DType::i32).to_vector<int>(), want[1].to(DType::i32).to_vector<int>());
}

}  // namespace
