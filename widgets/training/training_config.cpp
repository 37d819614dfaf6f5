#include "widgets/training/training_config.h"

#include <algorithm>
#include <numeric>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/data/dataset.h"

namespace kiln::studio {

namespace {

using nlohmann::json;

json parse(const std::string& text, const char* what) {
  try {
    json j = json::parse(text);
    KILN_CHECK(j.is_object(), ValueError, what, ": expected a JSON object, got ", text.substr(0, 80));
    return j;
  } catch (const json::exception& e) {
    throw ValueError(std::string(what) + ": not valid JSON (" + e.what() + ")");
  }
}

template <class T>
void read(const json& j, const char* what, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    throw ValueError(std::string(what) + ": '" + key + "' has the wrong type: " + it->dump());
  }
}

bool one_of(const std::string& s, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void TrainingConfig::validate() const {
  const char* w = "training settings";
  KILN_CHECK(one_of(optimizer, optim::optimizer_names()), ValueError, w, ": 'optimizer' must be one of ",
             joined(optim::optimizer_names()), ", got '", optimizer, "'");
  KILN_CHECK(one_of(scheduler, optim::scheduler_names()), ValueError, w, ": 'scheduler' must be one of ",
             joined(optim::scheduler_names()), ", got '", scheduler, "'");
  KILN_CHECK(lr > 0 && lr <= 10, ValueError, w, ": 'lr' must be in (0, 10], got ", lr);
  KILN_CHECK(momentum >= 0 && momentum < 1, ValueError, w, ": 'momentum' must be in [0, 1), got ", momentum);
  KILN_CHECK(weight_decay >= 0, ValueError, w, ": 'weight_decay' must be >= 0, got ", weight_decay);
  KILN_CHECK(epochs >= 1 && epochs <= 100000, ValueError, w, ": 'epochs' must be an integer in [1, 100000], got ", epochs);
  KILN_CHECK(batch_size >= 1 && batch_size <= 65536, ValueError, w, ": 'batch_size' must be an integer in [1, 65536], got ", batch_size);
  KILN_CHECK(!device.empty(), ValueError, w, ": 'device' is empty (use \"auto\" or a device such as \"cpu\")");
  KILN_CHECK(checkpoint_minutes >= 0 && checkpoint_minutes <= 1e6, ValueError, w,
             ": 'checkpoint_minutes' must be in [0, 1000000] (0: at epoch ends only), got ", checkpoint_minutes);
  KILN_CHECK(checkpoint_steps >= 0, ValueError, w, ": 'checkpoint_steps' must be >= 0, got ", checkpoint_steps);
}

optim::OptimizerConfig TrainingConfig::optimizer_config() const {
  return {.name = optimizer, .lr = lr, .momentum = momentum, .weight_decay = weight_decay};
}

// The Studio has no step size or gamma setting: the engine's defaults (StepLR x0.1 after
// each third of the epochs).
optim::SchedulerConfig TrainingConfig::scheduler_config(int64_t batches_per_epoch) const {
  return {.name = scheduler, .epochs = epochs, .steps_per_epoch = batches_per_epoch};
}

std::string TrainingConfig::to_json() const {
  json j = {{"optimizer", optimizer}, {"lr", lr}, {"momentum", momentum}, {"weight_decay", weight_decay},
            {"scheduler", scheduler}, {"epochs", epochs}, {"batch_size", batch_size}, {"seed", seed},
            {"device", device}, {"checkpoint_minutes", checkpoint_minutes}, {"checkpoint_steps", checkpoint_steps}};
  return j.dump();
}

TrainingConfig TrainingConfig::from_json(const std::string& text) {
  const char* w = "training settings";
  json j = parse(text, w);
  TrainingConfig c;
  read(j, w, "optimizer", c.optimizer);
  read(j, w, "lr", c.lr);
  read(j, w, "momentum", c.momentum);
  read(j, w, "weight_decay", c.weight_decay);
  read(j, w, "scheduler", c.scheduler);
  read(j, w, "epochs", c.epochs);
  read(j, w, "batch_size", c.batch_size);
  read(j, w, "seed", c.seed);
  read(j, w, "device", c.device);
  read(j, w, "checkpoint_minutes", c.checkpoint_minutes);
  read(j, w, "checkpoint_steps", c.checkpoint_steps);
  c.validate();
  return c;
}

std::vector<int64_t> test_subset_indices(int64_t available, int64_t n, uint64_t seed) {
  std::vector<int64_t> out;
  if (n <= 0 || n >= available) {
    out.resize(static_cast<size_t>(std::max<int64_t>(available, 0)));
    std::iota(out.begin(), out.end(), int64_t{0});
    return out;
  }
  const std::vector<int64_t> perm = data::seeded_permutation(available, seed);
  out.assign(perm.begin(), perm.begin() + n);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln::studio
