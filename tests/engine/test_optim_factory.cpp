// engine/optim/factory.h: the optimizer and scheduler by name that `kiln train` and Kiln
// Studio share: names, defaults, hyper-parameters passed through, per-batch stepping, and
// the errors for unknown names (tests/gui/test_shared_optim.cpp compares the two callers).
#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"
#include "engine/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

std::vector<Tensor> params() { return {Tensor::zeros({3}).requires_grad_(true)}; }

// The message of the ValueError that f throws ("" when it throws none).
template <class F>
std::string value_error(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OptimFactory, Names) {
  EXPECT_EQ(optimizer_names(), (std::vector<std::string>{"sgd", "adam", "adamw", "rmsprop"}));
  EXPECT_EQ(scheduler_names(), (std::vector<std::string>{"none", "step", "cosine", "onecycle"}));
  for (const std::string& name : optimizer_names()) EXPECT_NO_THROW(make_optimizer({.name = name}, params())) << name;
}

TEST(OptimFactory, DefaultsAreAdamAtTorchsLr) {
  const OptimizerConfig c;
  EXPECT_EQ(c.name, "adam");
  EXPECT_EQ(c.lr, 1e-3);
  EXPECT_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.weight_decay, 0);
  auto opt = make_optimizer(c, params());
  auto* adam = dynamic_cast<Adam*>(opt.get());
  ASSERT_NE(adam, nullptr);
  EXPECT_EQ(dynamic_cast<AdamW*>(opt.get()), nullptr);
  EXPECT_EQ(adam->options().beta1, 0.9);  // torch.optim.Adam's betas and eps
  EXPECT_EQ(adam->options().beta2, 0.999);
  EXPECT_EQ(adam->options().eps, 1e-8);
  EXPECT_FALSE(adam->options().amsgrad);
}

TEST(OptimFactory, HyperParametersReachEachOptimizer) {
  const OptimizerConfig base{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.01};
  OptimizerConfig c = base;
  c.name = "sgd";
  auto sgd = std::dynamic_pointer_cast<SGD>(make_optimizer(c, params()));
  ASSERT_TRUE(sgd);
  EXPECT_EQ(sgd->lr(), 0.05);
  EXPECT_EQ(sgd->options().momentum, 0.8);
  EXPECT_EQ(sgd->options().weight_decay, 0.01);
  EXPECT_EQ(sgd->options().dampening, 0);
  EXPECT_FALSE(sgd->options().nesterov);

  c.name = "adamw";
  auto adamw = std::dynamic_pointer_cast<AdamW>(make_optimizer(c, params()));
  ASSERT_TRUE(adamw);
  EXPECT_EQ(adamw->lr(), 0.05);
  EXPECT_EQ(adamw->options().weight_decay, 0.01);  // the config's, not AdamW's default 1e-2 by accident
  c.weight_decay = 0;
  adamw = std::dynamic_pointer_cast<AdamW>(make_optimizer(c, params()));
  EXPECT_EQ(adamw->options().weight_decay, 0);

  c = base;
  c.name = "rmsprop";
  auto rms = std::dynamic_pointer_cast<RMSprop>(make_optimizer(c, params()));
  ASSERT_TRUE(rms);
  EXPECT_EQ(rms->lr(), 0.05);
  EXPECT_EQ(rms->options().momentum, 0.8);
  EXPECT_EQ(rms->options().weight_decay, 0.01);
  EXPECT_EQ(rms->options().alpha, 0.99);  // torch.optim.RMSprop's
  EXPECT_EQ(rms->options().eps, 1e-8);
  EXPECT_FALSE(rms->options().centered);
}

TEST(OptimFactory, UnknownOptimizerNamesTheValueAndTheKnownOnes) {
  for (const char* bad : {"lion", "", "Adam", "rms"}) {
    const std::string m = value_error([&] { make_optimizer({.name = bad}, params()); });
    EXPECT_NE(m.find("unknown optimizer '" + std::string(bad) + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("sgd, adam, adamw, rmsprop"), std::string::npos) << m;
  }
  // Out-of-range values are the optimizers' own errors.
  EXPECT_THROW(make_optimizer({.name = "sgd", .lr = -1}, params()), ValueError);
  EXPECT_THROW(make_optimizer({.name = "rmsprop", .momentum = -0.5}, params()), ValueError);
}

TEST(OptimFactory, SchedulersAndWhenTheyStep) {
  auto opt = make_optimizer({.name = "sgd", .lr = 0.1}, params());
  Scheduler none = make_scheduler({.name = "none", .epochs = 9, .steps_per_epoch = 7}, *opt);
  EXPECT_EQ(none.scheduler, nullptr);
  EXPECT_FALSE(none.per_batch);
  EXPECT_EQ(opt->lr(), 0.1);

  Scheduler step = make_scheduler({.name = "step", .epochs = 9, .steps_per_epoch = 7}, *opt);
  auto* step_lr = dynamic_cast<StepLR*>(step.scheduler.get());
  ASSERT_NE(step_lr, nullptr);
  EXPECT_FALSE(step.per_batch);
  EXPECT_EQ(step_lr->step_size, 3);  // default_step_size(9): a decay after each third of the run
  EXPECT_EQ(step_lr->gamma, 0.1);
  step = make_scheduler({.name = "step", .epochs = 9, .step_size = 2, .gamma = 0.5}, *opt);
  EXPECT_EQ(dynamic_cast<StepLR&>(*step.scheduler).step_size, 2);
  EXPECT_EQ(dynamic_cast<StepLR&>(*step.scheduler).gamma, 0.5);

  Scheduler cosine = make_scheduler({.name = "cosine", .epochs = 9, .steps_per_epoch = 7}, *opt);
  ASSERT_NE(dynamic_cast<CosineAnnealingLR*>(cosine.scheduler.get()), nullptr);
  EXPECT_EQ(dynamic_cast<CosineAnnealingLR&>(*cosine.scheduler).T_max, 9);
  EXPECT_EQ(dynamic_cast<CosineAnnealingLR&>(*cosine.scheduler).eta_min, 0);
  EXPECT_FALSE(cosine.per_batch);

  auto opt2 = make_optimizer({.name = "adam", .lr = 0.02}, params());
  Scheduler one = make_scheduler({.name = "onecycle", .epochs = 9, .steps_per_epoch = 7}, *opt2);
  auto* oc = dynamic_cast<OneCycleLR*>(one.scheduler.get());
  ASSERT_NE(oc, nullptr);
  EXPECT_TRUE(one.per_batch);
  EXPECT_EQ(oc->max_lr, 0.02);  // the optimizer's lr is the peak
  EXPECT_EQ(oc->total_steps, 63);
  EXPECT_EQ(oc->pct_start, 0.3);  // torch's defaults
  EXPECT_EQ(oc->div_factor, 25.0);
  EXPECT_EQ(oc->final_div_factor, 1e4);
  EXPECT_NEAR(opt2->lr(), 0.02 / 25, 1e-15);  // constructing it sets the first lr
}

TEST(OptimFactory, DefaultStepSize) {
  EXPECT_EQ(default_step_size(1), 1);
  EXPECT_EQ(default_step_size(5), 1);
  EXPECT_EQ(default_step_size(6), 2);
  EXPECT_EQ(default_step_size(100), 33);
}

TEST(OptimFactory, UnknownSchedulerAndBadCounts) {
  auto opt = make_optimizer({}, params());
  const std::string m = value_error([&] { make_scheduler({.name = "plateau"}, *opt); });
  EXPECT_NE(m.find("unknown scheduler 'plateau'"), std::string::npos) << m;
  EXPECT_NE(m.find("none, step, cosine, onecycle"), std::string::npos) << m;
  EXPECT_THROW(make_scheduler({.name = "cosine", .epochs = 0}, *opt), ValueError);
  EXPECT_THROW(make_scheduler({.name = "onecycle", .epochs = 2, .steps_per_epoch = 0}, *opt), ValueError);
  EXPECT_THROW(make_scheduler({.name = "step", .epochs = 3, .step_size = -1}, *opt), ValueError);
}
