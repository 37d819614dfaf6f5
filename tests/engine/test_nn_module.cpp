// Module: names and order of parameters/buffers (as PyTorch), state_dict loading,
// modes, device/dtype moves, repr.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/nn.h"

using namespace kiln;
using namespace kiln::nn;

// EXPECT that text contains part (prints text when not).
#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

namespace {

std::vector<std::string> keys(const StateDict& sd) {
  std::vector<std::string> out;
  for (auto& [k, t] : sd) out.push_back(k);
  return out;
}

// The classic small CNN: conv-bn-relu-pool, flatten, linear (input [N, 1, 28, 28]).
std::shared_ptr<Sequential> small_cnn(int64_t hidden = 8) {
  return std::make_shared<Sequential>(std::make_shared<Conv2d>(1, hidden, 3), std::make_shared<BatchNorm2d>(hidden),
                                      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
                                      std::make_shared<Flatten>(), std::make_shared<Linear>(hidden * 13 * 13, 10));
}

// A model with named submodules, as torchvision's "features" / "classifier".
class Net : public Module {
 public:
  Net() {
    features = register_module("features", std::make_shared<Sequential>(
                                               std::make_shared<Conv2d>(3, 4, 3, 1, 1), std::make_shared<ReLU>(),
                                               std::make_shared<MaxPool2d>(2), std::make_shared<Conv2d>(4, 4, 3)));
    classifier = register_module("classifier", std::make_shared<Linear>(4, 2));
    register_buffer("scale", Tensor::ones({1}));
  }
  Tensor forward(const Tensor& x) override { return classifier->forward(features->forward(x).mean({2, 3})); }
  std::shared_ptr<Sequential> features;
  std::shared_ptr<Linear> classifier;
};

}  // namespace

TEST(NnModule, StateDictKeysOfSequentialCnnMatchPyTorch) {
  auto net = small_cnn();
  EXPECT_EQ(keys(net->state_dict()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                      "1.num_batches_tracked", "5.weight", "5.bias"}));
  EXPECT_EQ(keys(net->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"}));
  EXPECT_EQ(keys(net->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  auto sd = net->state_dict();
  EXPECT_EQ(sd[6].second.dtype(), DType::i64);
  EXPECT_EQ(sd[6].second.dim(), 0);
  EXPECT_EQ(sd[0].second.shape(), (Shape{8, 1, 3, 3}));
  EXPECT_EQ(sd[7].second.shape(), (Shape{10, 8 * 13 * 13}));
  EXPECT_EQ(net->num_parameters(), 8 * 9 + 8 + 8 + 8 + 10 * 8 * 13 * 13 + 10);
  Tensor y = net->forward(Tensor::zeros({2, 1, 28, 28}));
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
}

TEST(NnModule, NestedNamesJoinWithDots) {
  Net net;
  EXPECT_EQ(keys(net.state_dict()),
            (std::vector<std::string>{"scale", "features.0.weight", "features.0.bias", "features.3.weight",
                                      "features.3.bias", "classifier.weight", "classifier.bias"}));
  std::vector<std::string> mods;
  for (auto& [name, m] : net.named_modules()) mods.push_back(name);
  EXPECT_EQ(mods, (std::vector<std::string>{"", "features", "features.0", "features.1", "features.2", "features.3",
                                            "classifier"}));
  EXPECT_EQ(net.forward(Tensor::zeros({1, 3, 8, 8})).shape(), (Shape{1, 2}));
}

TEST(NnModule, ParametersAreTheLayersOwnLeaves) {
  auto lin = std::make_shared<Linear>(4, 3);
  auto params = lin->parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].impl(), lin->weight.impl());
  EXPECT_EQ(params[1].impl(), lin->bias.impl());
  EXPECT_TRUE(lin->weight.requires_grad());
  EXPECT_TRUE(lin->weight.is_leaf());
  EXPECT_EQ(lin->num_parameters(), 15);
  EXPECT_EQ(Linear(4, 3, false).named_parameters().size(), 1u);
  // A layer used twice contributes its parameters once (as torch's remove_duplicate).
  Sequential twice{lin, lin};
  EXPECT_EQ(twice.parameters().size(), 2u);
  EXPECT_EQ(twice.state_dict().size(), 4u);
}

TEST(NnModule, LoadStateDictCopiesValuesIntoTheSameTensors) {
  auto a = small_cnn(), b = small_cnn();
  Tensor w_before = b->named_parameters()[0].second;
  b->load_state_dict(a->state_dict());
  auto sa = a->state_dict(), sb = b->state_dict();
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].second.dtype() == DType::i64)
      EXPECT_EQ(sa[i].second.item<int64_t>(), sb[i].second.item<int64_t>());
    else
      EXPECT_EQ(sa[i].second.to_vector<float>(), sb[i].second.to_vector<float>()) << sa[i].first;
  }
  EXPECT_EQ(b->named_parameters()[0].second.impl(), w_before.impl());
  EXPECT_TRUE(w_before.requires_grad());
}

TEST(NnModule, LoadStateDictRejectsCheckpointOfAnotherModel) {
  auto big = std::make_shared<Sequential>(std::make_shared<Linear>(784, 256), std::make_shared<ReLU>(),
                                          std::make_shared<Linear>(256, 10));
  auto small = std::make_shared<Sequential>(std::make_shared<Linear>(784, 128), std::make_shared<ReLU>(),
                                            std::make_shared<Linear>(128, 10));
  std::vector<float> before = small->state_dict()[0].second.to_vector<float>();
  try {
    small->load_state_dict(big->state_dict());
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_CONTAINS(e.what(), ("load_state_dict: size mismatch for 0.weight: checkpoint [256, 784], model "
                                    "[128, 784]"));
    EXPECT_CONTAINS(e.what(), ("size mismatch for 2.weight: checkpoint [10, 256], model [10, 128]"));
  }
  // Nothing was copied, not even the tensors whose shapes fit (2.bias).
  EXPECT_EQ(small->state_dict()[0].second.to_vector<float>(), before);
  // Size mismatches are errors even when not strict (as torch).
  EXPECT_THROW(small->load_state_dict(big->state_dict(), false), ValueError);
}

TEST(NnModule, LoadStateDictStrictNamesMissingAndUnexpectedKeys) {
  auto net = std::make_shared<Sequential>(std::make_shared<Linear>(2, 3));
  StateDict sd = net->state_dict();
  StateDict partial{sd[0]};
  partial.emplace_back("1.weight", Tensor::zeros({3}));
  try {
    net->load_state_dict(partial);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_CONTAINS(e.what(), ("missing keys: 0.bias"));
    EXPECT_CONTAINS(e.what(), ("unexpected keys: 1.weight"));
  }
  StateDict ones{{"0.weight", Tensor::ones({3, 2})}, {"extra", Tensor::ones({1})}};
  LoadStateDictResult r = net->load_state_dict(ones, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"0.bias"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra"});
  EXPECT_EQ(net->state_dict()[0].second.to_vector<float>(), std::vector<float>(6, 1.0f));
  // Values convert dtype: an f64 checkpoint loads into f32 parameters.
  net->load_state_dict({{"0.weight", Tensor::full({3, 2}, 2.0, DType::f64)}, {"0.bias", Tensor::zeros({3})}});
  EXPECT_EQ(net->state_dict()[0].second.to_vector<float>(), std::vector<float>(6, 2.0f));
  EXPECT_EQ(net->state_dict()[0].second.dtype(), DType::f32);
}

TEST(NnModule, TrainEvalIsRecursive) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  for (auto& [name, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  net.train();
  for (auto& [name, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << name;
}

TEST(NnModule, ToDtypeCastsInPlaceKeepingLeaves) {
  auto net = small_cnn();
  Tensor w = net->named_parameters()[0].second;
  std::vector<float> values = w.to_vector<float>();
  net->to(DType::f64);
  EXPECT_EQ(w.dtype(), DType::f64);  // the same handle sees the cast
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  std::vector<double> after = w.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(after[i], static_cast<double>(values[i]));
  EXPECT_EQ(net->state_dict()[6].second.dtype(), DType::i64);  // num_batches_tracked keeps i64
  net->to(Device());  // already on the CPU: no-op
  EXPECT_EQ(net->forward(Tensor::zeros({1, 1, 28, 28}, DType::f64)).dtype(), DType::f64);
}

TEST(NnModule, ZeroGradDropsGradients) {
  auto lin = std::make_shared<Linear>(3, 2);
  sum(lin->forward(Tensor::ones({4, 3}))).backward();
  ASSERT_TRUE(lin->weight.grad().defined());
  lin->zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_FALSE(lin->bias.grad().defined());
}

TEST(NnModule, ReprMatchesPyTorch) {
  Sequential net{std::make_shared<Linear>(2, 3), std::make_shared<ReLU>(), std::make_shared<Dropout>(0.5)};
  EXPECT_EQ(net.repr(),
            "Sequential(\n"
            "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
            "  (1): ReLU()\n"
            "  (2): Dropout(p=0.5, inplace=False)\n"
            ")");
  EXPECT_EQ(Conv2d(3, 16, 3, 2, 1).repr(), "Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
  EXPECT_EQ(BatchNorm2d(8).repr(), "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(LayerNorm(10).repr(), "LayerNorm((10,), eps=1e-05, elementwise_affine=True)");
}

TEST(NnModule, SequentialIndexingAndErrors) {
  Sequential net{std::make_shared<Linear>(2, 3), std::make_shared<ReLU>()};
  EXPECT_EQ(net.size(), 2u);
  EXPECT_EQ(net[1]->type_name(), "ReLU");
  EXPECT_THROW(net[2], IndexError);
  EXPECT_THROW(net.push_back(nullptr), ValueError);
}
