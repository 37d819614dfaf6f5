#include "app/studio/sweep_plan.h"

#include <optional>

#include "app/studio/sweep_space.h"
#include "engine/graph/json.h"

namespace kiln::studio {

using sweep::SweepUsageError;

SweepSettings plan_sweep(const SweepRequest& r, projects::Project& project, SweepSettings s, nlohmann::json* spaceOut) {
  if (r.params.empty()) throw SweepUsageError("a sweep needs at least one --param NAME=VALUES (lr=1e-4:1e-2:log, batch-size=64,128)");
  if (r.search != "grid" && r.search != "random") throw SweepUsageError("--search " + r.search + ": expected grid or random");
  if (r.search == "random" && r.trials < 1) throw SweepUsageError("--search random needs --trials N (N >= 1)");
  if (r.objective != "val_accuracy" && r.objective != "val_loss")
    throw SweepUsageError("--objective " + r.objective + ": expected val_accuracy or val_loss");
  if (s.devices.empty()) throw SweepUsageError("--devices: a sweep needs at least one device");
  std::vector<sweep::ParamSpec> params;
  for (const std::string& text : r.params) {
    params.push_back(sweep::parse_param(text));
    for (size_t i = 0; i + 1 < params.size(); ++i)
      if (params[i].name == params.back().name)
        throw SweepUsageError("--param " + text + ": '" + params.back().name + "' is given twice");
  }
  for (sweep::ParamSpec& p : params) sweep::check_against_graph(p, s.graph);
  s.maximize = r.objective == "val_accuracy";
  s.pruneStartup = r.pruneStartup;
  const std::vector<nlohmann::json> trials =
      r.search == "grid" ? sweep::grid_trials(params, r.trials) : sweep::random_trials(params, r.trials, r.seed);
  std::vector<std::string> rows;
  for (const nlohmann::json& t : trials) {
    TrainingConfig c = s.base;
    graph::Graph g = s.graph;
    try {
      sweep::apply_trial(t, c, g);
    } catch (const std::exception& e) {
      throw SweepUsageError(std::string("a planned trial does not fit: ") + e.what());
    }
    rows.push_back(t.dump());
  }
  nlohmann::json space = {{"search", r.search},
                          {"seed", r.seed},
                          {"trials", static_cast<int64_t>(trials.size())},
                          {"devices", s.devices},
                          {"prune_startup", s.pruneStartup},
                          {"training", nlohmann::json::parse(s.base.to_json())},
                          {"dataset", nlohmann::json::parse(s.dataset.to_json())},
                          {"test_size", s.testSize}};
  space["params"] = nlohmann::json::array();
  for (const sweep::ParamSpec& p : params) space["params"].push_back(p.text);
  projects::SweepRecord record;
  record.name = r.search + " search, " + std::to_string(trials.size()) + " trials";
  record.space_json = space.dump();
  record.objective = r.objective;
  record.graph_version = s.graphVersion;
  s.sweep = project.create_sweep(record, rows);
  if (spaceOut) *spaceOut = std::move(space);
  return s;
}

SweepSettings resume_sweep(projects::Project& project, int64_t sweep, int* requeued) {
  std::optional<projects::SweepRecord> record;
  for (const projects::SweepRecord& r : project.sweeps())
    if (r.id == sweep) record = r;
  if (!record) throw SweepUsageError("sweep " + std::to_string(sweep) + " is not in " + project.path());
  if (record->status == "finished") throw SweepUsageError("sweep " + std::to_string(sweep) + " finished: it has no trial left to run");
  SweepSettings s;
  s.sweep = sweep;
  s.graphVersion = record->graph_version;
  bool found = false;
  for (const projects::GraphVersion& v : project.graph_versions())
    if (v.id == record->graph_version) {
      s.graph = graph::from_json(v.graph_json, &project.blobs());
      found = true;
    }
  if (!found)
    throw SweepUsageError("sweep " + std::to_string(sweep) + " started from graph version " +
                          std::to_string(record->graph_version) + ", which is no longer in the project");
  const nlohmann::json space = nlohmann::json::parse(record->space_json);
  s.base = TrainingConfig::from_json(space.at("training").dump());
  s.dataset = DatasetSettings::from_json(space.at("dataset").dump());
  s.testSize = space.at("test_size").get<int64_t>();
  s.devices = space.at("devices").get<std::vector<std::string>>();
  s.maximize = record->objective != "val_loss";
  s.pruneStartup = space.value("prune_startup", 2);
  const int queued = project.requeue_interrupted_trials(sweep);
  if (requeued) *requeued = queued;
  project.set_sweep_status(sweep, "running");
  return s;
}

}  // namespace kiln::studio
