// LR schedulers against PyTorch's closed forms and documented values.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

struct Fixture {
  Tensor p = Tensor::zeros({1}).requires_grad_(true);
  SGD opt;
  explicit Fixture(double lr) : opt({p}, {.lr = lr}) {}
};

// The lr at epochs 0..n-1 (the constructor sets epoch 0; each step() advances one).
std::vector<double> lrs(LRScheduler& s, Optimizer& opt, int n) {
  std::vector<double> out{s.get_last_lr()};
  EXPECT_EQ(opt.lr(), s.get_last_lr());
  for (int i = 1; i < n; ++i) {
    s.step();
    EXPECT_EQ(opt.lr(), s.get_last_lr());
    out.push_back(s.get_last_lr());
  }
  return out;
}

void expect_lrs(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 + 1e-9 * want[i]) << "epoch " << i;
}

}  // namespace

TEST(SchedStepLR, DecaysEveryStepSize) {
  Fixture f(0.05);
  StepLR s(f.opt, 30, 0.1);  // torch docs: 0.05 for epochs < 30, 0.005 for < 60, 0.0005 for < 90
  std::vector<double> got = lrs(s, f.opt, 91);
  EXPECT_NEAR(got[0], 0.05, 1e-15);
  EXPECT_NEAR(got[29], 0.05, 1e-15);
  EXPECT_NEAR(got[30], 0.005, 1e-15);
  EXPECT_NEAR(got[59], 0.005, 1e-15);
  EXPECT_NEAR(got[60], 0.0005, 1e-15);
  EXPECT_NEAR(got[90], 0.00005, 1e-15);
  EXPECT_THROW(StepLR(f.opt, 0), ValueError);
}

TEST(SchedExponentialLR, MultipliesByGamma) {
  Fixture f(0.1);
  ExponentialLR s(f.opt, 0.9);
  std::vector<double> want;
  for (int e = 0; e < 6; ++e) want.push_back(0.1 * std::pow(0.9, e));
  expect_lrs(lrs(s, f.opt, 6), want);
}

TEST(SchedCosineAnnealingLR, FollowsHalfCosine) {
  Fixture f(0.1);
  CosineAnnealingLR s(f.opt, 10, 0.001);
  std::vector<double> got = lrs(s, f.opt, 11);
  for (int e = 0; e <= 10; ++e) EXPECT_NEAR(got[e], 0.001 + 0.099 * (1 + std::cos(M_PI * e / 10)) / 2, 1e-15);
  EXPECT_NEAR(got[5], 0.0505, 1e-15);
  EXPECT_NEAR(got[10], 0.001, 1e-15);
}

TEST(SchedLinearLR, WarmsUpLinearly) {
  // torch docs: LinearLR(start_factor=0.5, total_iters=4) with lr 0.05 gives
  // 0.025, 0.03125, 0.0375, 0.04375, then 0.05.
  Fixture f(0.05);
  LinearLR s(f.opt, 0.5, 1.0, 4);
  expect_lrs(lrs(s, f.opt, 7), {0.025, 0.03125, 0.0375, 0.04375, 0.05, 0.05, 0.05});
  Fixture g(0.3);
  LinearWarmup w(g.opt, 5);  // torch's LinearLR defaults: start_factor 1/3 over 5 steps
  expect_lrs(lrs(w, g.opt, 7), {0.1, 0.14, 0.18, 0.22, 0.26, 0.3, 0.3});
  EXPECT_THROW(LinearLR(f.opt, 0.0), ValueError);
}

TEST(SchedOneCycleLR, FirstPeakAndLastMatchPyTorch) {
  Fixture f(123.0);  // the optimizer's lr is ignored
  OneCycleLR s(f.opt, 0.1, 100);
  std::vector<double> got = lrs(s, f.opt, 100);
  EXPECT_NEAR(got[0], 0.004, 1e-15);  // max_lr / div_factor
  EXPECT_NEAR(got[29], 0.1, 1e-12);   // peak at pct_start * total_steps - 1
  EXPECT_NEAR(got[99], 4e-7, 1e-15);  // initial / final_div_factor
  EXPECT_NEAR(got[64], (0.1 + 4e-7) / 2, 1e-9);  // halfway down the cosine
  EXPECT_NEAR(got[15], 0.004 + (0.1 - 0.004) * (1 - std::cos(M_PI * 15 / 29.000000000000004)) / 2, 1e-12);
  for (int i = 1; i < 29; ++i) EXPECT_GT(got[i], got[i - 1]);
  for (int i = 30; i < 100; ++i) EXPECT_LT(got[i], got[i - 1]);
  s.step();  // step 100 is still allowed (as torch)
  EXPECT_THROW(s.step(), ValueError);
}

TEST(SchedOneCycleLR, ThreePhase) {
  Fixture f(1.0);
  OneCycleLR s(f.opt, 0.01, 100, 0.25, 10.0, 100.0, true);
  std::vector<double> got = lrs(s, f.opt, 100);
  EXPECT_NEAR(got[0], 0.001, 1e-15);
  EXPECT_NEAR(got[24], 0.01, 1e-12);
  EXPECT_NEAR(got[48], 0.001, 1e-12);
  EXPECT_NEAR(got[99], 0.00001, 1e-15);
}

TEST(SchedState, RoundTripRestoresEpochAndLr) {
  Fixture f(0.1);
  CosineAnnealingLR s(f.opt, 20);
  for (int i = 0; i < 7; ++i) s.step();
  auto state = s.state_dict();
  EXPECT_EQ(state.at("last_epoch"), 7);
  EXPECT_EQ(state.at("base_lr"), 0.1);
  Fixture g(0.1);
  CosineAnnealingLR t(g.opt, 20);
  t.load_state_dict(state);
  EXPECT_EQ(t.last_epoch(), 7);
  EXPECT_DOUBLE_EQ(g.opt.lr(), f.opt.lr());
  s.step(), t.step();
  EXPECT_DOUBLE_EQ(g.opt.lr(), f.opt.lr());
}
