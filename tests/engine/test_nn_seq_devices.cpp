// The sequence layers are composed of ordinary ops, so they train on every backend: on each
// non-CPU device found (Vulkan's lavapipe on CI; CUDA/HIP where built), LSTM, GRU,
// TransformerEncoderLayer and the pooling give the CPU's outputs and gradients in f32.
// Skipped without a Vulkan device though the plugin is built, unless KILN_REQUIRE_TEST_DEPS=1.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/nn/attention.h"
#include "engine/nn/rnn.h"
#include "engine/nn/sequence.h"
#include "tests/common/test_deps.h"
#include "tests/engine/seq_fixture.h"

using namespace kiln;
using namespace kiln::test;

namespace {

std::vector<Device> other_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& d : list_devices())
    if (d.device.type != DeviceType::cpu) out.push_back(d.device);
  return out;
}

// A padding mask for [N, T, C]: the first sequence is full, the others lose one more step each.
Tensor lengths_to_padding_mask_for(const Shape& s) {
  std::vector<int64_t> len;
  for (int64_t n = 0; n < s[0]; ++n) len.push_back(std::max<int64_t>(1, s[1] - n));
  return nn::lengths_to_padding_mask(Tensor::from_vector(len, {s[0]}), s[1]);
}

// Builds the model twice from one seed, runs `run` on the CPU and on `dev`, and compares the
// outputs and every parameter's and the input's gradient.
void compare(const char* what, Device dev, const std::function<std::shared_ptr<nn::Module>()>& make,
             const std::function<Tensor(nn::Module&, const Tensor&, const Tensor&)>& run, const Shape& input_shape) {
  SCOPED_TRACE(std::string(what) + " on " + dev.str());
  manual_seed(11);
  auto cpu = make();
  manual_seed(11);
  auto gpu = make();
  gpu->to(dev);
  Generator g(3);
  Tensor x = normal(input_shape, 0, 1, DType::f32, Device(), &g);
  Tensor mask = lengths_to_padding_mask_for(input_shape);
  Tensor xc = x.clone().requires_grad_(true), xg = x.to(dev).requires_grad_(true);
  Tensor yc = run(*cpu, xc, mask), yg = run(*gpu, xg, mask.to(dev));
  expect_close(yg.to(Device()), yc, "output", 1e-4);
  sum(yc).backward();
  sum(yg).backward();
  expect_close(xg.grad().to(Device()), xc.grad(), "grad of the input", 1e-4);
  auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
  for (size_t i = 0; i < pc.size(); ++i)
    expect_close(pg[i].second.grad().to(Device()), pc[i].second.grad(), "grad of " + pc[i].first, 1e-4);
}

}  // namespace

TEST(SeqLayersOnDevices, MatchTheCpu) {
  const std::vector<Device> devices = other_devices();
  if (devices.empty()) {
    if (!KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "no GPU backend is built";
    KILN_SKIP_UNLESS_DEP(false, "mesa-vulkan-drivers", "no Vulkan device though the Vulkan plugin is built");
  }
  for (const Device& dev : devices) {
    compare("LSTM", dev,
            [] {
              return std::make_shared<nn::LSTM>(nn::RNNOptions{
                  .input_size = 3, .hidden_size = 4, .num_layers = 2, .batch_first = true, .bidirectional = true});
            },
            [](nn::Module& m, const Tensor& x, const Tensor& mask) {
              nn::RNNResult r = static_cast<nn::LSTM&>(m).forward_with_state(x, {}, {}, mask);
              return cat({r.output.flatten(), r.h_n.flatten(), r.c_n.flatten()}, 0);
            },
            {3, 5, 3});
    compare("GRU", dev,
            [] { return std::make_shared<nn::GRU>(nn::RNNOptions{.input_size = 3, .hidden_size = 4, .batch_first = true}); },
            [](nn::Module& m, const Tensor& x, const Tensor& mask) {
              return nn::last_step_pool(static_cast<nn::GRU&>(m).forward_with_state(x, {}, {}, mask).output, mask);
            },
            {3, 5, 3});
    compare("TransformerEncoderLayer", dev,
            [] {
              return std::make_shared<nn::TransformerEncoderLayer>(nn::TransformerEncoderLayerOptions{
                  .d_model = 4, .nhead = 2, .dim_feedforward = 8, .dropout = 0.0, .activation = "gelu",
                  .batch_first = true});
            },
            [](nn::Module& m, const Tensor& x, const Tensor& mask) {
              Tensor y = static_cast<nn::TransformerEncoderLayer&>(m).forward_masked(x, {}, mask, true);
              return cat({nn::masked_mean_pool(y, mask), nn::masked_max_pool(y, mask)}, 1);
            },
            {3, 5, 4});
  }
}
