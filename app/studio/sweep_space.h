// The search space of a hyper-parameter sweep (`kiln sweep`, `kiln-studio --headless --sweep`):
// each `--param NAME=SPEC` parsed into a ParamSpec, checked against the project's graph,
// expanded into trials by grid or random search, and one trial applied to a run's settings
// and graph. No Qt; the runner (sweep_runner.h) drives TrainingSessions with the result.
//
// NAME: lr | batch-size | optimizer | scheduler | epochs | weight-decay | NODE.ATTRIBUTE
// (a numeric attribute of a graph node: conv1.out_channels, fc1.out_features, drop.p).
// SPEC: a list "64,128" (names for optimizer and scheduler: "sgd,adam"), or a range
// "LO:HI[:log][:POINTS]" (LO < HI; log needs LO > 0): random search draws uniformly (in log
// space with :log, as Bergstra & Bengio 2012 sample learning rates); grid search takes POINTS
// values (default 3) evenly spaced (geometrically with :log), LO and HI included. Integer
// parameters (batch-size, epochs, Int attributes) round to whole numbers.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "widgets/training/training_config.h"

namespace kiln::studio::sweep {

// A command-line mistake in a sweep (bad --param, unknown parameter, missing graph
// attribute): its message names the flag as given ("--param lr=abc: ..."); exit status 2.
class SweepUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParamSpec {
  std::string name;  // "lr", "batch-size", ..., "conv1.out_channels"
  std::string text;  // the whole "--param" value as given, for messages and the stored space
  bool range = false;
  double lo = 0, hi = 0;  // range: inclusive bounds
  bool log = false;       // range: log scale
  int points = 3;         // range: values a grid search takes (>= 2)
  std::vector<nlohmann::json> values;  // list: numbers, or strings for optimizer/scheduler
  bool integer = false;   // whole-number values (batch-size, epochs, Int attributes)
  bool names = false;     // optimizer or scheduler: values are names
};

// Parses "NAME=SPEC". Throws SweepUsageError "--param TEXT: ..." for a missing '=' or name,
// an empty SPEC, an unknown NAME (neither a training setting nor NODE.ATTRIBUTE), a
// number that does not parse, a reversed or empty range (LO >= HI), log with LO <= 0,
// POINTS < 2, an unknown optimizer/scheduler (optim::optimizer_names / scheduler_names),
// a value out of its setting's range (lr > 0, batch-size >= 1, epochs >= 1,
// weight-decay >= 0) or a repeated list value.
ParamSpec parse_param(const std::string& text);

// Checks a NODE.ATTRIBUTE parameter against `g` before anything runs: the node exists (by
// name), its op has the attribute, the attribute is Int or Float, and every value the
// parameter can take (a list's values, a range's bounds) passes Graph::check_attr (the
// schema's min/max). SweepUsageError "--param TEXT: ..." naming the node and listing its
// numeric attributes. An Int attribute's parameter becomes `integer` (its list values whole
// numbers, a range rounding). Other parameters pass unchecked.
void check_against_graph(ParamSpec& p, const graph::Graph& g);

// Trials as JSON objects {"NAME": value, ...} (numbers or names), in a fixed order.
// grid: the Cartesian product, the first parameter varying slowest; max_trials > 0 keeps
// the first max_trials. SweepUsageError when `params` is empty.
std::vector<nlohmann::json> grid_trials(const std::vector<ParamSpec>& params, int64_t max_trials = 0);
// random: `trials` (>= 1) independent draws from a std::mt19937_64 seeded with `seed`
// (its output is fixed by the C++ standard, so a seed gives the same trials everywhere):
// a list's value uniformly, a range uniformly or log-uniformly. SweepUsageError when
// `params` is empty or trials < 1.
std::vector<nlohmann::json> random_trials(const std::vector<ParamSpec>& params, int64_t trials, uint64_t seed);

// Applies a trial to a run's settings and graph: the training settings to `config`, a
// NODE.ATTRIBUTE with Graph::set_attr, then the input-dimension attributes downstream follow
// (graph::follow_input_dims: fc2.in_features after fc1.out_features). Returns a short label
// "lr 0.001, batch-size 64, conv1.out_channels 16". ValueError naming the parameter when
// the value does not fit (config.validate(), set_attr).
std::string apply_trial(const nlohmann::json& trial, TrainingConfig& config, graph::Graph& g);

// Text of a value as shown in tables: names as they are, numbers in %g with 4 digits.
std::string value_text(const nlohmann::json& v);

}  // namespace kiln::studio::sweep
