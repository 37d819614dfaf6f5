// Quantization-aware training (engine/quant/qat.h): the converted int8 model computes what the
// fake-quantized model computes; QAT recovers accuracy that post-training quantization loses on a
// model built to lose it; observers follow training batches only; bad input names the layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/nn/functional.h"
#include "engine/optim/factory.h"
#include "engine/quant/int8_model.h"
#include "engine/quant/qat.h"
#include "tests/common/error_of.h"
#include "tests/common/quant_cnn.h"

namespace kiln::quant {
namespace {

using graph::Graph;
using kiln::test::error_of;

// Trains `model` (QatModel or GraphModule) for `steps` Adam steps on (x, y) batches of 64.
void fit(nn::Module& model, const Tensor& x, const Tensor& y, int steps, double lr) {
  model.train();
  auto opt = optim::make_optimizer({.name = "adam", .lr = lr}, model.parameters());
  const int64_t n = x.size(0), batch = 64;
  for (int s = 0; s < steps; ++s) {
    const int64_t b = (s * batch) % n;
    const Tensor xb = x.slice(0, b, b + batch), yb = y.slice(0, b, b + batch);
    opt->zero_grad();
    Tensor loss = nn::F::cross_entropy(model.forward(xb), yb);
    loss.backward();
    opt->step();
  }
  model.eval();
}

double accuracy(nn::Module& model, const Tensor& x, const Tensor& y) {
  const Tensor pred = argmax(model.forward(x), 1);
  return sum(eq(pred, y).to(DType::f32)).to_vector<float>()[0] / static_cast<double>(x.size(0));
}

TEST(QuantQat, ConvertedModelComputesTheFakeQuantizedModel) {
  const Graph g = kiln::test::small_quant_cnn(7);
  manual_seed(3);
  const Tensor x = uniform({256, 1, 12, 12}, 0, 1), y = uniform({256}, 0, 3.999).to(DType::i64);
  QatModel qat(g, {});
  fit(qat, x, y, 12, 1e-3);
  ASSERT_EQ(qat.training_batches(), 12);
  const Tensor test = uniform({128, 1, 12, 12}, 0, 1);
  const std::vector<float> fq = qat.forward(test).to_vector<float>();
  std::shared_ptr<Int8Model> m = qat.convert();
  ASSERT_EQ(m->layers().size(), 3u);
  EXPECT_TRUE(m->layers()[0]->relu());  // conv1 (bn1 folded) + relu1, as PTQ
  for (bool chain : {false, true}) {
    m->set_u8_chain(chain);
    const std::vector<float> q = m->forward(test).to_vector<float>();
    ASSERT_EQ(q.size(), fq.size());
    // The int8 kernels accumulate exactly where the float layers round (relative ~1e-6), and the
    // bias is rounded to s32; a value on a rounding boundary of fc1's or fc2's input can move one
    // step of that input (0.3% of its range), which moves a logit by at most that step times
    // the row's sum |w|. Measured: 1.8e-6 with logits up to 0.23 (8e-6 of the range),
    // with the u8 chain and without; 1e-3 of the range bounds both with room.
    float range = 0, worst = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      range = std::max(range, std::fabs(fq[i]));
      worst = std::max(worst, std::fabs(fq[i] - q[i]));
    }
    std::printf("u8 chain %d: max |int8 - fake-quantized| %.3g of logits up to %.3g\n", chain, worst, range);
    EXPECT_LT(worst, 1e-3 * range) << "u8 chain " << chain;
  }
  // Evaluating does not move the ranges; training does.
  const Range before = qat.report()[1].input_range;
  qat.forward(test);
  EXPECT_EQ(qat.report()[1].input_range.max, before.max);
  qat.train();
  qat.forward(uniform({64, 1, 12, 12}, 0, 3));
  EXPECT_NE(qat.report()[1].input_range.max, before.max);
  qat.freeze_observers();
  const Range frozen = qat.report()[1].input_range;
  qat.forward(uniform({64, 1, 12, 12}, 0, 9));
  EXPECT_EQ(qat.report()[1].input_range.max, frozen.max);
}

// 16 features -> fc1 (32) -> relu -> fc2 (4 classes), classes by the argmax of a random linear map.
Graph mlp() {
  Graph g;
  std::vector<graph::NodeId> ids{g.add_node("Input", "x", {{"shape", std::vector<int64_t>{16}}}),
                                 g.add_node("Linear", "fc1", {{"in_features", int64_t{16}}, {"out_features", int64_t{32}}}),
                                 g.add_node("ReLU", "relu"),
                                 g.add_node("Linear", "fc2", {{"in_features", int64_t{32}}, {"out_features", int64_t{4}}}),
                                 g.add_node("Output", "logits")};
  for (size_t i = 0; i + 1 < ids.size(); ++i) g.connect({ids[i], 0}, {ids[i + 1], 0});
  return g;
}

TEST(QuantQat, RecoversWhatPostTrainingQuantizationLoses) {
  manual_seed(11);
  const Tensor teacher = normal({16, 4}, 0, 1);
  const Tensor x = normal({2048, 16}, 0, 1), y = argmax(matmul(x, teacher), 1);
  const Tensor xt = normal({1024, 16}, 0, 1), yt = argmax(matmul(xt, teacher), 1);
  Graph g = mlp();
  graph::GraphModule net(g);
  fit(net, x, y, 800, 1e-2);
  graph::store_state(g, net.state_dict());
  // Built to lose under PTQ without changing the float function: hidden unit 0 is dead (weights 0,
  // bias -1: relu gives 0 for every input), and fc2 reads it with a weight 150 times the largest
  // other one, so each fc2 row's s8 scale is set by a weight that never matters and the row's
  // real weights keep only a few levels.
  std::vector<float> w1 = g.initial_state.at("fc1.weight").to_vector<float>(), b1 = g.initial_state.at("fc1.bias").to_vector<float>();
  std::fill(w1.begin(), w1.begin() + 16, 0.0f);
  b1[0] = -1;
  std::vector<float> w2 = g.initial_state.at("fc2.weight").to_vector<float>();
  float amax = 0;
  for (float v : w2) amax = std::max(amax, std::fabs(v));
  for (int r = 0; r < 4; ++r) w2[r * 32] = 150 * amax;
  g.initial_state["fc1.weight"] = Tensor::from_vector(w1, {32, 16});
  g.initial_state["fc1.bias"] = Tensor::from_vector(b1, {32});
  g.initial_state["fc2.weight"] = Tensor::from_vector(w2, {4, 32});

  graph::GraphModule float_model(g);
  float_model.eval();
  const double acc_float = accuracy(float_model, xt, yt);
  Calibrator cal(g, {});
  for (int b = 0; b < 4; ++b) cal.observe(x.slice(0, b * 64, b * 64 + 64));
  const double acc_ptq = accuracy(*cal.convert(), xt, yt);
  QatModel qat(g, {});
  fit(qat, x, y, 600, 1e-3);
  const double acc_qat = accuracy(*qat.convert(), xt, yt);
  // Measured: float 0.960, PTQ int8 0.916, QAT int8 0.950-0.954 (the issue asks for a PTQ drop over 1
  // point, of which QAT recovers at least half). 600 QAT steps: after 300 the recovery was 44-100 %
  // depending on the CPU's kernels (AVX2 or baseline), as QAT's rounding follows the last bits;
  // after 600 it was over half for seeds 11-16 on both.
  std::printf("float %.4f, PTQ int8 %.4f, QAT int8 %.4f\n", acc_float, acc_ptq, acc_qat);
  ASSERT_GT(acc_float, 0.9);
  ASSERT_LT(acc_ptq, acc_float - 0.02) << "the model built to lose under PTQ does not";
  EXPECT_GT(acc_qat - acc_ptq, 0.5 * (acc_float - acc_ptq)) << "QAT recovers less than half of PTQ's drop";
}

TEST(QuantQat, BadInputIsAClearErrorNamingTheLayer) {
  const Graph g = kiln::test::small_quant_cnn(5);
  {
    QatModel qat(g, {});
    EXPECT_NE(error_of([&] { qat.convert(); }).find("no training batch was observed"), std::string::npos);
    qat.eval();
    EXPECT_NE(error_of([&] { qat.forward(uniform({2, 1, 12, 12}, 0, 1)); }).find("layer 'conv1': no calibration data"),
              std::string::npos);
    qat.train();
    std::vector<float> v(2 * 144, 0.5f);
    v[7] = NAN;
    const std::string e = error_of([&] { qat.forward(Tensor::from_vector(v, {2, 1, 12, 12})); });
    EXPECT_NE(e.find("layer 'conv1': activation holds NaN"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { (void)QatModel(g, {.keep_float = {"relu1"}}); }).find("keep-float: 'relu1' is no Conv2d"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)QatModel(g, {.keep_float = {}, .averaging_constant = 0}); }).find("averaging_constant"), std::string::npos);
  // keep_float trains fc2 in float, and the int8 model keeps it in float.
  QatModel qat(g, {.keep_float = {"fc2"}});
  qat.forward(uniform({4, 1, 12, 12}, 0, 1));
  auto m = qat.convert();
  EXPECT_EQ(m->layers().size(), 2u);
  EXPECT_FALSE(qat.report()[2].int8);
}

}  // namespace
}  // namespace kiln::quant
