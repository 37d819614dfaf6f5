// Hyper-parameter sweeps (issue 20, part 4) without training: --param parsing and its
// errors, the checks against a graph, grid and random trials, applying a trial, the median
// rule and the device lanes of the queue.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "app/studio/sweep_schedule.h"
#include "app/studio/sweep_space.h"
#include "engine/core/error.h"
#include "engine/graph/json.h"

using namespace kiln::studio;
using namespace kiln::studio::sweep;

namespace {

kiln::graph::Graph mlp() {
  std::ifstream in(KILN_SOURCE_DIR "/projects/templates/fashion_mnist_mlp.json");
  std::stringstream text;
  text << in.rdbuf();
  return kiln::graph::from_json(text.str());
}

// The message of the SweepUsageError `f` throws ("" when it throws none).
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const SweepUsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SweepParam, ParsesRangesListsAndNames) {
  const ParamSpec lr = parse_param("lr=1e-4:1e-2:log");
  EXPECT_EQ(lr.name, "lr");
  EXPECT_TRUE(lr.range);
  EXPECT_TRUE(lr.log);
  EXPECT_DOUBLE_EQ(lr.lo, 1e-4);
  EXPECT_DOUBLE_EQ(lr.hi, 1e-2);
  EXPECT_EQ(lr.points, 3);
  EXPECT_EQ(parse_param("weight-decay=0:0.1:5").points, 5);
  EXPECT_FALSE(parse_param("weight-decay=0:0.1:5").log);
  const ParamSpec bs = parse_param("batch-size=64,128");
  EXPECT_FALSE(bs.range);
  ASSERT_EQ(bs.values.size(), 2u);
  EXPECT_TRUE(bs.values[0].is_number_integer());
  EXPECT_EQ(bs.values[1].get<int64_t>(), 128);
  const ParamSpec opt = parse_param("optimizer=sgd,adam");
  EXPECT_TRUE(opt.names);
  EXPECT_EQ(opt.values[0], "sgd");
  EXPECT_EQ(parse_param("conv1.out_channels=8,16").name, "conv1.out_channels");
}

TEST(SweepParam, BadInputNamesTheFlagAndTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"lr=1e-2:1e-4:log", "reversed"},
      {"lr=1e-2:1e-2", "empty range"},
      {"lr=abc", "'abc' is not a number"},
      {"lr=1e-3:abc", "'abc' is not a number"},
      {"batch-size=", "no values"},
      {"batch-size=64,", "an empty value"},
      {"batch-size=0,64", "batch-size must be a whole number >= 1"},
      {"batch-size=64.5", "whole number"},
      {"lr=0:1e-2:log", "log range needs LO > 0"},
      {"lr=-1,0.1", "lr must be > 0"},
      {"weight-decay=-0.1", "weight-decay must be >= 0"},
      {"lr=1e-4:1e-2:log:1", "POINTS must be a whole number in [2, 1000]"},
      {"lr=1:2:3:4:5", "a range is LO:HI"},
      {"momentum=0.9", "unknown parameter 'momentum'"},
      {"=0.1", "no parameter name"},
      {"lr", "expected NAME=VALUES"},
      {"optimizer=sgd,nope", "unknown optimizer 'nope'"},
      {"scheduler=", "no values"},
      {"batch-size=64,64", "listed twice"},
      {"epochs=1.2:1.8", "no whole number"},
  };
  for (const auto& [text, why] : cases) {
    const std::string e = usage_error([&] { parse_param(text); });
    EXPECT_NE(e.find("--param " + text + ": "), std::string::npos) << text << " -> " << e;
    EXPECT_NE(e.find(why), std::string::npos) << text << " -> " << e;
  }
}

TEST(SweepParam, GraphAttributesAreCheckedBeforeAnythingRuns) {
  const kiln::graph::Graph g = mlp();
  ParamSpec ok = parse_param("fc1.out_features=8,16");
  check_against_graph(ok, g);
  EXPECT_TRUE(ok.integer);
  EXPECT_TRUE(ok.values[0].is_number_integer());
  ParamSpec settings = parse_param("lr=1e-3,1e-2");
  check_against_graph(settings, g);  // not a graph attribute: nothing to check

  auto error = [&](const std::string& text) {
    ParamSpec p = parse_param(text);
    return usage_error([&] { check_against_graph(p, g); });
  };
  std::string e = error("nope.out_features=8");
  EXPECT_NE(e.find("--param nope.out_features=8: the graph has no node 'nope'; its nodes: image, flatten, fc1"), std::string::npos) << e;
  e = error("fc1.kernel_size=3");
  EXPECT_NE(e.find("node 'fc1' (Linear) has no attribute 'kernel_size'; its numeric attributes: in_features, out_features"),
            std::string::npos)
      << e;
  e = error("fc1.bias=1");
  EXPECT_NE(e.find("attribute 'bias' of node 'fc1' is Bool, not a number"), std::string::npos) << e;
  e = error("fc1.out_features=0,8");
  EXPECT_NE(e.find("--param fc1.out_features=0,8: node 'fc1': "), std::string::npos) << e;
  e = error("fc1.out_features=8.5,16");
  EXPECT_NE(e.find("takes whole numbers"), std::string::npos) << e;
}

TEST(SweepTrials, GridIsTheProductFirstParameterSlowest) {
  const std::vector<ParamSpec> params = {parse_param("lr=1e-4:1e-2:log"), parse_param("batch-size=64,128")};
  const auto trials = grid_trials(params);
  ASSERT_EQ(trials.size(), 6u);
  const double lrs[] = {1e-4, 1e-4, 1e-3, 1e-3, 1e-2, 1e-2};
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_NEAR(trials[i]["lr"].get<double>(), lrs[i], lrs[i] * 1e-12) << i;
    EXPECT_EQ(trials[i]["batch-size"].get<int64_t>(), i % 2 ? 128 : 64) << i;
  }
  EXPECT_EQ(grid_trials(params, 4).size(), 4u);
  EXPECT_EQ(grid_trials({parse_param("epochs=1:3:3")}).size(), 3u);
  EXPECT_EQ(grid_trials({parse_param("epochs=1:2:5")}).size(), 2u);  // rounding repeats a value once
  EXPECT_FALSE(usage_error([] { grid_trials({}); }).empty());
}

TEST(SweepTrials, RandomIsSeededAndStaysInItsRanges) {
  const std::vector<ParamSpec> params = {parse_param("lr=1e-4:1e-2:log"), parse_param("batch-size=16:256"),
                                         parse_param("optimizer=sgd,adam,adamw")};
  const auto a = random_trials(params, 2000, 7), b = random_trials(params, 2000, 7), c = random_trials(params, 2000, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int below = 0, adam = 0;
  for (const auto& t : a) {
    const double lr = t["lr"].get<double>();
    ASSERT_GE(lr, 1e-4);
    ASSERT_LE(lr, 1e-2);
    below += lr < 1e-3;
    const int64_t bs = t["batch-size"].get<int64_t>();
    ASSERT_GE(bs, 16);
    ASSERT_LE(bs, 256);
    adam += t["optimizer"] == "adam";
  }
  // Log-uniform: half the draws below the geometric middle 1e-3 (a uniform draw puts ~9% there).
  EXPECT_NEAR(below / 2000.0, 0.5, 0.05);
  EXPECT_NEAR(adam / 2000.0, 1.0 / 3, 0.05);
  EXPECT_FALSE(usage_error([&] { random_trials(params, 0, 1); }).empty());
}

TEST(SweepTrials, ApplyingATrialSetsSettingsAndGraphAttributes) {
  kiln::graph::Graph g = mlp();
  TrainingConfig config;
  const nlohmann::json trial = {{"lr", 0.02}, {"batch-size", 64}, {"optimizer", "sgd"}, {"scheduler", "none"},
                                {"epochs", 2}, {"weight-decay", 1e-4}, {"fc1.out_features", 16}};
  const std::string label = apply_trial(trial, config, g);
  EXPECT_DOUBLE_EQ(config.lr, 0.02);
  EXPECT_EQ(config.batch_size, 64);
  EXPECT_EQ(config.optimizer, "sgd");
  EXPECT_EQ(config.scheduler, "none");
  EXPECT_EQ(config.epochs, 2);
  EXPECT_DOUBLE_EQ(config.weight_decay, 1e-4);
  EXPECT_EQ(std::get<int64_t>(g.find_by_name("fc1")->attrs.at("out_features")), 16);
  EXPECT_EQ(std::get<int64_t>(g.find_by_name("fc2")->attrs.at("in_features")), 16);  // followed
  EXPECT_NE(label.find("fc1.out_features 16"), std::string::npos) << label;
  EXPECT_NE(label.find("lr 0.02"), std::string::npos) << label;
  kiln::graph::Graph h = mlp();
  EXPECT_THROW(apply_trial({{"fc1.out_features", 0}}, config, h), kiln::ValueError);
}

TEST(SweepMedianRule, StopsATrialWorseThanTheMedianOfFinishedOnes) {
  const std::vector<std::vector<double>> finished = {{0.5, 0.6, 0.7}, {0.6, 0.7, 0.8}, {0.4, 0.5, 0.9}};
  // Epoch 1: bests 0.5, 0.6, 0.4 -> median 0.5.
  MedianDecision d = median_rule(finished, {0.45}, true);
  EXPECT_TRUE(d.prune);
  EXPECT_DOUBLE_EQ(d.median, 0.5);
  EXPECT_EQ(d.compared, 3);
  EXPECT_FALSE(median_rule(finished, {0.5}, true).prune);  // equal to the median: kept
  // Epoch 2 uses the best so far: max(0.8, 0.1) = 0.8 beats the median 0.6.
  EXPECT_FALSE(median_rule(finished, {0.8, 0.1}, true).prune);
  // Minimizing (val_loss): lower is better.
  EXPECT_TRUE(median_rule({{1.0}, {0.8}, {0.6}}, {0.9}, false).prune);
  EXPECT_FALSE(median_rule({{1.0}, {0.8}, {0.6}}, {0.7}, false).prune);
  // Even count: the mean of the middle two (0.55 here).
  EXPECT_DOUBLE_EQ(median_rule({{0.5}, {0.6}}, {0.52}, true).median, 0.55);
  // Too few finished trials reached epoch k, or nothing to judge yet: never prunes.
  EXPECT_FALSE(median_rule({{0.9}}, {0.1}, true).prune);
  EXPECT_FALSE(median_rule(finished, {0.1, 0.1, 0.1, 0.1}, true).prune);  // none reached epoch 4
  EXPECT_FALSE(median_rule(finished, {}, true).prune);
  // NaN counts as worst.
  EXPECT_TRUE(median_rule(finished, {NAN}, true).prune);
  EXPECT_TRUE(median_rule({{1.0}, {0.8}}, {NAN}, false).prune);
}

TEST(SweepLanes, EachLaneWorksThroughTheQueueOneTrialAtATime) {
  LaneQueue q({"cpu", "cpu"}, {10, 11, 12, 13, 14});
  EXPECT_EQ(q.lanes(), 2u);
  auto a = q.assign();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], (std::pair<int, int64_t>{0, 10}));
  EXPECT_EQ(a[1], (std::pair<int, int64_t>{1, 11}));
  EXPECT_TRUE(q.assign().empty());  // both busy
  q.release(1);                     // lane 1 finished first: it takes the next trial
  a = q.assign();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], (std::pair<int, int64_t>{1, 12}));
  EXPECT_EQ(q.running(0), std::optional<int64_t>(10));
  q.release(0);
  q.release(1);
  a = q.assign();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].second, 13);
  EXPECT_EQ(a[1].second, 14);
  EXPECT_FALSE(q.done());
  q.release(0);
  EXPECT_TRUE(q.assign().empty());
  EXPECT_FALSE(q.idle());
  q.release(1);
  EXPECT_TRUE(q.done());
  EXPECT_THROW(q.release(1), std::logic_error);
  EXPECT_THROW(LaneQueue({}, {1}), std::invalid_argument);

  LaneQueue stop({"cpu", "cuda:0"}, {1, 2, 3});
  EXPECT_EQ(stop.device(1), "cuda:0");
  stop.assign();
  stop.drop_queued();  // a stop: the running trials keep their lanes, nothing more starts
  EXPECT_EQ(stop.queued(), 0u);
  stop.release(0);
  EXPECT_TRUE(stop.assign().empty());
  stop.release(1);
  EXPECT_TRUE(stop.done());
}
