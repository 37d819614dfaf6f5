// engine/explain: Grad-CAM and saliency maps against PyTorch's (tests/fixtures/gradcam_reference.json,
// written by tests/fixtures/make_gradcam_fixture.py with forward and tensor hooks), for the same
// CNN as a graph model and as a Sequential; and the errors explain.h promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/core/error.h"
#include "engine/explain/explain.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/graph/json_state.h"
#include "engine/nn/nn.h"
#include "tests/common/error_of.h"

using namespace kiln;

namespace {

struct Fixture {
  nlohmann::json root;
  graph::Graph graph;
  std::map<std::string, Tensor> tensors;  // "image", "logits", "map<i>" for the i-th case
};

const Fixture& fixture() {
  static const Fixture f = [] {
    std::ifstream in(std::string(KILN_FIXTURES_DIR) + "/gradcam_reference.json");
    EXPECT_TRUE(in.good()) << "tests/fixtures/gradcam_reference.json is missing";
    Fixture x;
    x.root = nlohmann::json::parse(in);
    x.graph = graph::from_json(x.root["graph"].dump());
    nlohmann::json t = {{"image", x.root["image"]}, {"logits", x.root["logits"]}};
    for (size_t i = 0; i < x.root["cases"].size(); ++i) t["map" + std::to_string(i)] = x.root["cases"][i]["map"];
    x.tensors = graph::detail::state_of_json(t);
    return x;
  }();
  return f;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  float d = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

float max_abs(const Tensor& a) {
  float m = 0;
  for (float v : a.to_vector<float>()) m = std::max(m, std::abs(v));
  return m;
}

// The fixture's CNN as a Sequential (children "0" ... "9", as reference_models.h's models), with
// its weights.
std::shared_ptr<nn::Sequential> sequential_model() {
  auto m = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(3, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(4, 6, 3, 1, 1), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(72, 5));
  const std::vector<std::string> names = {"conv1", "bn1", "relu1", "pool1", "conv2", "relu2", "drop", "pool2",
                                          "flatten", "fc"};
  nn::StateDict state;
  for (const auto& [key, t] : fixture().graph.initial_state) {
    const size_t dot = key.find('.');
    const auto i = std::find(names.begin(), names.end(), key.substr(0, dot)) - names.begin();
    state.push_back({std::to_string(i) + key.substr(dot), t});
  }
  m->load_state_dict(state);
  return m;
}

// Every case of the fixture on `model`, whose layers are named by `layer_name` (the graph's names,
// or the Sequential's indices).
void check_cases(nn::Module& model, const std::function<std::string(const std::string&)>& layer_name) {
  const Fixture& f = fixture();
  const Tensor& image = f.tensors.at("image");
  model.train();  // explain runs in eval mode (batch norm's running statistics, no dropout) and restores this
  float worst_cam = 0, worst_saliency = 0;
  for (size_t i = 0; i < f.root["cases"].size(); ++i) {
    const nlohmann::json& c = f.root["cases"][i];
    SCOPED_TRACE(c["method"].get<std::string>() + " layer '" + c["layer_used"].get<std::string>() + "' class " +
                 std::to_string(c["target_class"].get<int64_t>()));
    const Tensor& want = f.tensors.at("map" + std::to_string(i));
    const std::string layer = c["layer"].get<std::string>();
    const int64_t cls = c["class"].get<int64_t>();
    explain::Explanation e = c["method"] == "gradcam"
                                 ? explain::grad_cam(model, image, cls, layer.empty() ? "" : layer_name(layer))
                                 : explain::saliency(model, image, cls);
    EXPECT_EQ(e.target_class, c["target_class"].get<int64_t>());
    EXPECT_EQ(e.predicted, f.root["predicted"].get<int64_t>());
    ASSERT_EQ(e.map.shape(), (Shape{12, 16}));
    const float d = max_abs_diff(e.map, want);
    if (c["method"] == "gradcam") {
      EXPECT_EQ(e.layer, layer_name(c["layer_used"].get<std::string>()));
      EXPECT_LE(d, 1e-4f);
      worst_cam = std::max(worst_cam, d);
    } else {
      EXPECT_LE(d, 1e-4f * max_abs(want));  // raw gradients, ~1e-2 here: relative
      worst_saliency = std::max(worst_saliency, d / max_abs(want));
    }
    EXPECT_LE(max_abs_diff(Tensor::from_vector(e.logits, {5}), f.tensors.at("logits")), 1e-5f);
    EXPECT_TRUE(model.is_training());
    for (const Tensor& p : model.parameters()) {
      EXPECT_TRUE(p.requires_grad());
      EXPECT_FALSE(p.grad().defined());
    }
  }
  std::printf("largest difference from PyTorch: Grad-CAM %.3g (maps in [0, 1]), saliency %.3g (relative)\n",
              static_cast<double>(worst_cam), static_cast<double>(worst_saliency));
}

}  // namespace

TEST(Explain, GraphModelMatchesPyTorch) {
  graph::GraphModule model(fixture().graph);
  check_cases(model, [](const std::string& name) { return name; });
}

TEST(Explain, SequentialModelMatchesPyTorch) {
  auto model = sequential_model();
  const std::vector<std::string> names = {"conv1", "bn1", "relu1", "pool1", "conv2", "relu2"};
  check_cases(*model, [&](const std::string& name) {
    return std::to_string(std::find(names.begin(), names.end(), name) - names.begin());
  });
}

TEST(Explain, ConvLayersAreTheSpatialConvolutions) {
  graph::GraphModule model(fixture().graph);
  EXPECT_EQ(explain::conv_layers(model, fixture().tensors.at("image")), (std::vector<std::string>{"conv1", "conv2"}));
  // A conv whose output is 1 x 1 is not spatial: Grad-CAM would have nothing to show.
  nn::Sequential tiny(std::make_shared<nn::Conv2d>(1, 2, 3), std::make_shared<nn::Conv2d>(2, 2, 3),
                      std::make_shared<nn::Flatten>());
  EXPECT_EQ(explain::conv_layers(tiny, Tensor::ones({1, 5, 5})), (std::vector<std::string>{"0"}));
  EXPECT_EQ(explain::grad_cam(tiny, Tensor::ones({1, 5, 5}), 0).layer, "0");
}

TEST(Explain, UpsampleBilinearIsPyTorchs) {
  // F.interpolate(torch.tensor([[[[0., 1.], [2., 3.]]]]), size=(3, 4), mode="bilinear", align_corners=False)
  const std::vector<float> got = explain::upsample_bilinear({0, 1, 2, 3}, 2, 2, 3, 4);
  const std::vector<float> want = {0.0f,       0.25f,      0.75f,      1.0f,       1.0f,      1.25f,
                                   1.75f,      2.0f,       2.0f,       2.25f,      2.75f,     3.0f};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
  EXPECT_THROW(explain::upsample_bilinear({0, 1, 2}, 2, 2, 3, 4), ValueError);
}

TEST(Explain, BadInputIsAClearError) {
  graph::GraphModule model(fixture().graph);
  const Tensor& image = fixture().tensors.at("image");
  EXPECT_EQ(test::error_of([&] { explain::grad_cam(model, image, 0, "conv9"); }),
            "no layer named 'conv9'; the model's convolution layers: conv1, conv2");
  EXPECT_EQ(test::error_of([&] { explain::grad_cam(model, image, 5); }),
            "class 5 is out of range: the model has 5 classes (0 to 4)");
  EXPECT_EQ(test::error_of([&] { explain::saliency(model, image, 7); }),
            "class 7 is out of range: the model has 5 classes (0 to 4)");
  EXPECT_NE(test::error_of([&] { explain::grad_cam(model, image, 0, "fc"); })
                .find("layer 'fc' (Linear) gives [1, 5], not [1, C, H, W]"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { explain::grad_cam(model, image.reshape({1, 3, 12, 16}), 0); })
                .find("the image must be [C, H, W], got [1, 3, 12, 16]"),
            std::string::npos);
  // No convolution: Grad-CAM says so and names the alternative; saliency works.
  nn::Sequential mlp(std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(12, 3));
  EXPECT_EQ(test::error_of([&] { explain::grad_cam(mlp, Tensor::ones({3, 2, 2})); }),
            "Grad-CAM needs a convolution layer; the model has none — use --method saliency");
  EXPECT_EQ(explain::saliency(mlp, Tensor::ones({3, 2, 2})).map.shape(), (Shape{2, 2}));
  // A module that is neither a graph nor a Sequential: its layers are unknown.
  nn::Linear linear(4, 2);
  EXPECT_NE(test::error_of([&] { explain::grad_cam(linear, Tensor::ones({1, 1, 4})); })
                .find("Grad-CAM needs the model's layers"),
            std::string::npos);
}
