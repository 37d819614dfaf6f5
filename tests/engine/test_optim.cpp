// Optimizers: trajectories on a small quadratic against reference loops written here
// in doubles from torch.optim's update rules; state_dict round trips; clip_grad_norm.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/nn.h"
#include "engine/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

using Vec = std::vector<double>;

// f(p) = sum(0.5 * a * p^2 - b * p); grad = a * p - b.
const Vec kA{1.0, 3.0, 0.5, 2.0}, kB{0.2, -0.4, 1.0, 0.0}, kP0{1.0, -2.0, 0.5, 0.3};

Vec grad_of(const Vec& p) {
  Vec g(p.size());
  for (size_t i = 0; i < p.size(); ++i) g[i] = kA[i] * p[i] - kB[i];
  return g;
}

Tensor quadratic(const Tensor& p) {
  Tensor a = Tensor::from_vector(kA, {4}).to(p.dtype()), b = Tensor::from_vector(kB, {4}).to(p.dtype());
  return sum(a * p * p * 0.5 - b * p);
}

using MakeOpt = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// Runs `steps` optimizer steps on the quadratic; returns the parameter after each.
std::vector<Vec> run(const MakeOpt& make, DType dtype, int steps) {
  Tensor p = Tensor::from_vector(kP0, {4}).to(dtype).requires_grad_(true);
  auto opt = make({p});
  std::vector<Vec> out;
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    quadratic(p).backward();
    opt->step();
    out.push_back(p.to(DType::f64).to_vector<double>());
  }
  return out;
}

void expect_trajectory(const std::vector<Vec>& got, const std::vector<Vec>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < want.size(); ++s)
    for (size_t i = 0; i < want[s].size(); ++i)
      EXPECT_NEAR(got[s][i], want[s][i], tol * (1 + std::abs(want[s][i]))) << "step " << s + 1 << " element " << i;
}

// torch.optim.SGD's rule.
std::vector<Vec> sgd_ref(const SGDOptions& o, int steps) {
  Vec p = kP0, buf;
  std::vector<Vec> out;
  for (int s = 0; s < steps; ++s) {
    Vec g = grad_of(p);
    for (size_t i = 0; i < p.size(); ++i) g[i] += o.weight_decay * p[i];
    if (o.momentum != 0) {
      if (buf.empty()) {
        buf = g;
      } else {
        for (size_t i = 0; i < p.size(); ++i) buf[i] = o.momentum * buf[i] + (1 - o.dampening) * g[i];
      }
      for (size_t i = 0; i < p.size(); ++i) g[i] = o.nesterov ? g[i] + o.momentum * buf[i] : buf[i];
    }
    for (size_t i = 0; i < p.size(); ++i) p[i] -= o.lr * g[i];
    out.push_back(p);
  }
  return out;
}

// torch.optim.Adam / AdamW's rule.
std::vector<Vec> adam_ref(const AdamOptions& o, bool decoupled, int steps) {
  Vec p = kP0, m(4, 0), v(4, 0), vmax(4, 0);
  std::vector<Vec> out;
  for (int t = 1; t <= steps; ++t) {
    Vec g = grad_of(p);
    for (size_t i = 0; i < p.size(); ++i) {
      if (decoupled)
        p[i] *= 1 - o.lr * o.weight_decay;
      else
        g[i] += o.weight_decay * p[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      vmax[i] = std::max(vmax[i], v[i]);
      double denom = std::sqrt(o.amsgrad ? vmax[i] : v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
      p[i] -= o.lr / (1 - std::pow(o.beta1, t)) * m[i] / denom;
    }
    out.push_back(p);
  }
  return out;
}

// torch.optim.RMSprop's rule.
std::vector<Vec> rmsprop_ref(const RMSpropOptions& o, int steps) {
  Vec p = kP0, sq(4, 0), ga(4, 0), buf(4, 0);
  std::vector<Vec> out;
  for (int s = 0; s < steps; ++s) {
    Vec g = grad_of(p);
    for (size_t i = 0; i < p.size(); ++i) {
      g[i] += o.weight_decay * p[i];
      sq[i] = o.alpha * sq[i] + (1 - o.alpha) * g[i] * g[i];
      double avg;
      if (o.centered) {
        ga[i] = o.alpha * ga[i] + (1 - o.alpha) * g[i];
        avg = std::sqrt(sq[i] - ga[i] * ga[i]) + o.eps;
      } else {
        avg = std::sqrt(sq[i]) + o.eps;
      }
      if (o.momentum > 0) {
        buf[i] = o.momentum * buf[i] + g[i] / avg;
        p[i] -= o.lr * buf[i];
      } else {
        p[i] -= o.lr * g[i] / avg;
      }
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST(OptimSgd, TrajectoriesMatchTorchRule) {
  for (SGDOptions o : {SGDOptions{.lr = 0.1}, SGDOptions{.lr = 0.05, .momentum = 0.9},
                       SGDOptions{.lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.1},
                       SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true}}) {
    MakeOpt make = [&](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), o); };
    expect_trajectory(run(make, DType::f64, 6), sgd_ref(o, 6), 1e-12);
    expect_trajectory(run(make, DType::f32, 6), sgd_ref(o, 6), 1e-5);
  }
  // The first momentum step is plain SGD (the buffer starts as the gradient).
  auto first = sgd_ref({.lr = 0.1, .momentum = 0.9, .dampening = 0.5}, 1)[0];
  EXPECT_NEAR(first[0], 1.0 - 0.1 * (1.0 - 0.2), 1e-12);
}

TEST(OptimAdam, TrajectoriesMatchTorchRule) {
  for (AdamOptions o : {AdamOptions{.lr = 0.1}, AdamOptions{.lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6},
                        AdamOptions{.lr = 0.1, .weight_decay = 0.1}, AdamOptions{.lr = 0.1, .amsgrad = true},
                        AdamOptions{.lr = 0.2, .beta2 = 0.5, .weight_decay = 0.05, .amsgrad = true}}) {
    MakeOpt make = [&](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), o); };
    expect_trajectory(run(make, DType::f64, 8), adam_ref(o, false, 8), 1e-12);  // composed ops
    expect_trajectory(run(make, DType::f32, 8), adam_ref(o, false, 8), 2e-5);   // fused kernel (no amsgrad)
  }
  // The first Adam step moves every coordinate by about lr (m / sqrt(v) = sign(g)).
  auto first = adam_ref({.lr = 0.1}, false, 1)[0];
  EXPECT_NEAR(first[0], 1.0 - 0.1, 1e-6);
}

TEST(OptimAdamW, DecouplesWeightDecay) {
  for (AdamWOptions o : {AdamWOptions{.lr = 0.1}, AdamWOptions{.lr = 0.05, .weight_decay = 0.5},
                         AdamWOptions{.lr = 0.1, .weight_decay = 0.2, .amsgrad = true}}) {
    AdamOptions ao{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.amsgrad};
    MakeOpt make = [&](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p), o); };
    expect_trajectory(run(make, DType::f64, 8), adam_ref(ao, true, 8), 1e-12);
    expect_trajectory(run(make, DType::f32, 8), adam_ref(ao, true, 8), 2e-5);
  }
  EXPECT_EQ(AdamWOptions{}.weight_decay, 1e-2);  // torch.optim.AdamW's default
}

TEST(OptimRmsprop, TrajectoriesMatchTorchRule) {
  for (RMSpropOptions o : {RMSpropOptions{}, RMSpropOptions{.lr = 0.01, .alpha = 0.9, .momentum = 0.5},
                           RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .momentum = 0.9, .centered = true},
                           RMSpropOptions{.lr = 0.02, .alpha = 0.8, .eps = 1e-6, .centered = true}}) {
    MakeOpt make = [&](std::vector<Tensor> p) { return std::make_unique<RMSprop>(std::move(p), o); };
    expect_trajectory(run(make, DType::f64, 8), rmsprop_ref(o, 8), 1e-12);
    expect_trajectory(run(make, DType::f32, 8), rmsprop_ref(o, 8), 2e-5);
  }
}

TEST(OptimBase, StateDictRoundTripContinuesTheSameTrajectory) {
  auto make_param = [] { return Tensor::from_vector(kP0, {4}).requires_grad_(true); };
  auto step = [](Optimizer& opt, Tensor& p) {
    opt.zero_grad();
    quadratic(p).backward();
    opt.step();
  };
  Tensor p1 = make_param();
  Adam a1({p1}, {.lr = 0.1, .amsgrad = true});
  for (int i = 0; i < 3; ++i) step(a1, p1);
  OptimizerState s = a1.state_dict();
  std::vector<std::string> names;
  for (auto& [k, t] : s.tensors) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq"}));
  EXPECT_EQ(s.scalars.at("lr"), 0.1);
  EXPECT_EQ(s.scalars.at("state.0.step"), 3);
  EXPECT_EQ(s.scalars.at("beta1"), 0.9);
  EXPECT_EQ(s.scalars.at("amsgrad"), 1);

  Tensor p2 = make_param();
  p2.copy_(p1.detach());
  Adam a2({p2}, {.lr = 0.5});
  a2.load_state_dict(s);
  EXPECT_EQ(a2.lr(), 0.1);
  EXPECT_TRUE(a2.options().amsgrad);
  for (int i = 0; i < 2; ++i) step(a1, p1), step(a2, p2);
  EXPECT_EQ(p1.to_vector<double>(), p2.to_vector<double>());

  // SGD momentum buffers too.
  Tensor q1 = make_param(), q2 = make_param();
  SGD s1({q1}, {.lr = 0.05, .momentum = 0.9});
  step(s1, q1);
  q2.copy_(q1.detach());
  SGD s2({q2}, {.lr = 0.05, .momentum = 0.9});
  s2.load_state_dict(s1.state_dict());
  step(s1, q1), step(s2, q2);
  EXPECT_EQ(q1.to_vector<double>(), q2.to_vector<double>());

  // A state for another parameter shape is rejected.
  Tensor other = Tensor::zeros({3}, DType::f64).requires_grad_(true);
  Adam a3({other}, {});
  EXPECT_THROW(a3.load_state_dict(s), ValueError);
}

TEST(OptimBase, UpdatesModuleParametersInPlaceAndSkipsThoseWithoutGrad) {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  auto unused = std::make_shared<nn::Linear>(3, 2);
  std::vector<Tensor> params = lin->parameters();
  for (auto& p : unused->parameters()) params.push_back(p);
  SGD opt(params, {.lr = 0.1});
  std::vector<float> w0 = lin->weight.to_vector<float>(), u0 = unused->weight.to_vector<float>();
  sum(lin->forward(Tensor::ones({4, 3}))).backward();
  std::vector<float> g = lin->weight.grad().to_vector<float>();
  opt.step();
  std::vector<float> w1 = lin->weight.to_vector<float>();
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_FLOAT_EQ(w1[i], w0[i] - 0.1f * g[i]);
  EXPECT_EQ(unused->weight.to_vector<float>(), u0);
  EXPECT_TRUE(lin->weight.is_leaf());
  opt.zero_grad();
  EXPECT_FALSE(lin->weight.grad().defined());
}

TEST(OptimBase, InvalidArgumentsThrow) {
  Tensor p = Tensor::zeros({2}).requires_grad_(true);
  EXPECT_THROW(SGD({}, {}), ValueError);
  EXPECT_THROW(SGD({p}, {.lr = -1}), ValueError);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .nesterov = true}), ValueError);
  EXPECT_THROW(Adam({p}, {.beta1 = 1.0}), ValueError);
  EXPECT_THROW(Adam({p}, {.eps = -1}), ValueError);
  EXPECT_THROW(RMSprop({p}, {.alpha = -0.1}), ValueError);
  SGD ok({p}, {.lr = 0.1});
  EXPECT_THROW(ok.set_lr(-0.1), ValueError);
}

TEST(OptimClipGradNorm, ScalesOnlyWhenAboveMax) {
  Tensor a = Tensor::zeros({2}).requires_grad_(true), b = Tensor::zeros({1}).requires_grad_(true);
  Tensor c = Tensor::zeros({1}).requires_grad_(true);  // no gradient: skipped
  a.set_grad(Tensor::from_vector(std::vector<float>{3, 0}, {2}));
  b.set_grad(Tensor::from_vector(std::vector<float>{4}, {1}));
  double total = clip_grad_norm({a, b, c}, 1.0);
  EXPECT_NEAR(total, 5.0, 1e-6);
  double scale = 1.0 / (5.0 + 1e-6);
  EXPECT_NEAR(a.grad().to_vector<float>()[0], 3 * scale, 1e-6);
  EXPECT_NEAR(b.grad().to_vector<float>()[0], 4 * scale, 1e-6);
  // Below the max: unchanged.
  EXPECT_NEAR(clip_grad_norm({a, b}, 10.0), 1.0, 1e-5);
  EXPECT_NEAR(b.grad().to_vector<float>()[0], 4 * scale, 1e-6);
  // Other norms.
  a.set_grad(Tensor::from_vector(std::vector<float>{-3, 1}, {2}));
  b.set_grad(Tensor::from_vector(std::vector<float>{2}, {1}));
  EXPECT_NEAR(clip_grad_norm({a, b}, 100.0, INFINITY), 3.0, 1e-6);
  EXPECT_NEAR(clip_grad_norm({a, b}, 100.0, 1.0), 6.0, 1e-6);
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.5, INFINITY), 3.0, 1e-6);
  EXPECT_NEAR(a.grad().to_vector<float>()[0], -3 * 1.5 / (3 + 1e-6), 1e-6);
  EXPECT_EQ(clip_grad_norm({c}, 1.0), 0.0);
  EXPECT_THROW(clip_grad_norm({a}, 1.0, 0.0), ValueError);
}
