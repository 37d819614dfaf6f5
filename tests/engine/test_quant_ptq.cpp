// Post-training quantization (engine/quant/int8_model.h): a small CNN with batch norm is folded,
// calibrated and converted; the int8 model follows the float one, saves and loads to the same
// outputs, keeps chosen layers in float, and bad input is a clear error naming the layer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/graph/graph_module.h"
#include "engine/io/safetensors.h"
#include "engine/quant/int8_model.h"
#include "tests/common/quant_cnn.h"
#include "tests/common/error_of.h"

namespace kiln::quant {
namespace {

using graph::Graph;
using graph::NodeId;

Graph small_cnn() { return kiln::test::small_quant_cnn(31); }

std::vector<float> float_outputs(const Graph& g, const Tensor& x) {
  graph::GraphModule m(g);
  m.eval();
  return m.forward(x).to_vector<float>();
}

using kiln::test::error_of;

TEST(QuantPtq, Int8ModelFollowsTheFloatModel) {
  const Graph g = small_cnn();
  for (Calibration method : {Calibration::minmax, Calibration::percentile, Calibration::entropy}) {
    Calibrator cal(g, {method, {}});
    for (int b = 0; b < 8; ++b) cal.observe(normal({64, 1, 12, 12}, 0, 1));
    auto m = cal.convert();
    ASSERT_EQ(m->layers().size(), 3u) << calibration_name(method);
    EXPECT_TRUE(m->layers()[0]->relu());   // conv1 + relu1 once bn1 is folded
    EXPECT_TRUE(m->layers()[1]->relu());   // fc1 + relu2
    EXPECT_FALSE(m->layers()[2]->relu());
    const Tensor x = normal({32, 1, 12, 12}, 0, 1);
    const auto a = float_outputs(g, x), q = m->forward(x).to_vector<float>();
    ASSERT_EQ(a.size(), q.size());
    double err = 0, ref = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err += (a[i] - q[i]) * (a[i] - q[i]);
      ref += a[i] * a[i];
    }
    // Relative RMS error (measured: 0.019 for minmax and percentile). Entropy calibration clips by
    // design, and on these few thousand values per layer (a sparse histogram) it clips fc2's input
    // at about half its maximum (measured 0.23).
    const double rms = std::sqrt(err / ref);
    if (method != Calibration::entropy) EXPECT_LT(rms, 0.05) << calibration_name(method);
    else EXPECT_LT(rms, 0.5);

    EXPECT_TRUE(m->fallback_notes().empty());
  }
}

TEST(QuantPtq, SaveLoadAndPayload) {
  const Graph g = small_cnn();
  Calibrator cal(g, {Calibration::minmax, {}});
  cal.observe(normal({16, 1, 12, 12}, 0, 1));
  auto m = cal.convert();
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_ptq_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.safetensors").string();
  m->save(path);
  auto back = Int8Model::load(path);
  const Tensor x = normal({8, 1, 12, 12}, 0, 1);
  EXPECT_EQ(m->forward(x).to_vector<float>(), back->forward(x).to_vector<float>());
  // f32 parameters of the float graph: conv1 8*9+8, bn1 8+8, fc1 288*16+16, fc2 16*4+4.
  const int64_t float_bytes = 4 * (8 * 9 + 8 + 16 + 288 * 16 + 16 + 16 * 4 + 4);
  // int8: weights 1 byte, biases 4, weight scales 4 per channel, input scale and zero point 8 per layer.
  const int64_t int8_bytes = (8 * 9 + 288 * 16 + 16 * 4) + 4 * (8 + 16 + 4) * 2 + 8 * 3;
  EXPECT_EQ(back->weight_payload_bytes(), int8_bytes);
  EXPECT_GT(static_cast<double>(float_bytes) / static_cast<double>(int8_bytes), 3.5);
  const std::string not_int8 = (dir / "plain.safetensors").string();
  io::save_safetensors(not_int8, {{"w", Tensor::zeros({2})}});
  EXPECT_NE(error_of([&] { Int8Model::load(not_int8); }).find("is not an int8 model"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(QuantPtq, KeepFloatAndAllZeroWeights) {
  Graph g = small_cnn();
  g.initial_state["fc2.weight"] = Tensor::zeros({4, 16});  // a dead layer: scale 0 handled
  Calibrator cal(g, {Calibration::percentile, {"fc1"}});
  cal.observe(normal({16, 1, 12, 12}, 0, 1));
  auto m = cal.convert();
  ASSERT_EQ(m->layers().size(), 2u);
  EXPECT_EQ(m->layers()[0]->name(), "conv1");
  EXPECT_EQ(m->layers()[1]->name(), "fc2");
  const auto report = cal.report();
  EXPECT_FALSE(report[1].int8);
  EXPECT_TRUE(report[1].fused_relu.empty());
  const Tensor x = normal({4, 1, 12, 12}, 0, 1);
  const auto a = float_outputs(g, x), q = m->forward(x).to_vector<float>();
  // Only fc2's bias survives, quantized with scale in_scale * 1 (the zero channels' weight scale).
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(q[i], a[i], report[2].input.scale * 0.5 + 1e-6);
  EXPECT_NE(error_of([&] { Calibrator(g, {Calibration::minmax, {"pool"}}); }).find("'pool' is no Conv2d or Linear"),
            std::string::npos);
}

TEST(QuantPtq, BadCalibrationIsAClearError) {
  const Graph g = small_cnn();
  Calibrator empty(g, {});
  EXPECT_NE(error_of([&] { empty.convert(); }).find("no calibration batches were observed"), std::string::npos);
  Calibrator cal(g, {});
  Tensor x = normal({2, 1, 12, 12}, 0, 1);
  std::vector<float> v = x.to_vector<float>();
  v[5] = NAN;
  const std::string e = error_of([&] { cal.observe(Tensor::from_vector<float>(v, x.shape())); });
  EXPECT_NE(e.find("layer 'conv1': activation holds NaN"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { cal.observe(normal({2, 1, 10, 10}, 0, 1)); }).find("input 'image' expects"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::quant
