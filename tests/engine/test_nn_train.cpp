// End-to-end: a small MLP trained with Adam on a synthetic problem, and a small
// CNN's loss going down with SGD.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/nn/nn.h"
#include "engine/optim/optim.h"

using namespace kiln;
using namespace kiln::nn;

namespace {

// Points in [-2, 2]^2 labelled by the quadrant's sign of x0 * x1 (XOR: not linearly
// separable), keeping a margin of 0.1 around the axes.
void make_xor(int64_t n, uint64_t seed, Tensor& x, Tensor& y) {
  Generator g(seed);
  std::vector<float> xs;
  std::vector<int64_t> ys;
  std::vector<double> u = uniform({4 * n}, -2, 2, DType::f64, Device(), &g).to_vector<double>();
  for (size_t i = 0; i + 1 < u.size() && static_cast<int64_t>(ys.size()) < n; i += 2) {
    if (std::abs(u[i]) < 0.1 || std::abs(u[i + 1]) < 0.1) continue;
    xs.push_back(static_cast<float>(u[i]));
    xs.push_back(static_cast<float>(u[i + 1]));
    ys.push_back(u[i] * u[i + 1] > 0 ? 1 : 0);
  }
  int64_t m = static_cast<int64_t>(ys.size());
  x = Tensor::from_vector(xs, {m, 2});
  y = Tensor::from_vector(ys, {m});
}

double accuracy(Module& net, const Tensor& x, const Tensor& y) {
  NoGradGuard no_grad;
  std::vector<int64_t> pred = argmax(net(x), 1).to_vector<int64_t>(), truth = y.to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < pred.size(); ++i) right += pred[i] == truth[i];
  return static_cast<double>(right) / static_cast<double>(pred.size());
}

}  // namespace

TEST(NnTrain, MlpWithAdamLearnsXor) {
  manual_seed(0);
  Tensor x, y, xt, yt;
  make_xor(256, 1, x, y);
  make_xor(256, 2, xt, yt);
  Sequential net{std::make_shared<Linear>(2, 32), std::make_shared<ReLU>(), std::make_shared<Linear>(32, 32),
                 std::make_shared<ReLU>(), std::make_shared<Linear>(32, 2)};
  optim::Adam opt(net.parameters(), {.lr = 2e-2});
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = functional::cross_entropy(net(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first_loss : last_loss) = loss.item<float>();
  }
  EXPECT_LT(last_loss, 0.25 * first_loss);
  EXPECT_GT(accuracy(net, x, y), 0.95);
  EXPECT_GT(accuracy(net, xt, yt), 0.95);  // held-out points
}

TEST(NnTrain, SmallCnnLossDecreasesWithSgd) {
  manual_seed(3);
  // Two classes of 8x8 images: a bright top half or a bright bottom half, plus noise.
  int64_t n = 32;
  Tensor x = normal({n, 1, 8, 8}, 0, 0.3);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    labels.push_back(i % 2);
    x.select(0, i).slice(1, i % 2 ? 4 : 0, i % 2 ? 8 : 4).copy_(
        add(x.select(0, i).slice(1, i % 2 ? 4 : 0, i % 2 ? 8 : 4), Tensor::scalar(1.0)));
  }
  Tensor y = Tensor::from_vector(labels, {n});
  Sequential net{std::make_shared<Conv2d>(1, 4, 3, 1, 1), std::make_shared<BatchNorm2d>(4), std::make_shared<ReLU>(),
                 std::make_shared<MaxPool2d>(2), std::make_shared<Dropout>(0.1), std::make_shared<Flatten>(),
                 std::make_shared<Linear>(4 * 4 * 4, 2)};
  optim::SGD opt(net.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::StepLR sched(opt, 20, 0.5);
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    Tensor loss = functional::cross_entropy(net(x), y, Tensor(), -100, functional::Reduction::mean, 0.05);
    loss.backward();
    optim::clip_grad_norm(net.parameters(), 5.0);
    opt.step();
    sched.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, 0.5 * first);
  net.eval();
  EXPECT_GT(accuracy(net, x, y), 0.9);
}
