// Planning a new sweep, and continuing a stored one, shared by `kiln-studio --headless --sweep` (headless_sweep.cpp) and the
// Studio's Experiments dock (experiment_view.h): the parameters parsed (sweep_space.h's parser,
// the only one), checked against the graph, expanded into trials, each trial applied to a copy
// of the settings (so a value that does not fit is refused before anything is stored), then the
// sweep and its queued trials stored in the project (Project::create_sweep).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/studio/sweep_runner.h"

namespace kiln::studio {

// A new sweep as asked for: the CLI's flags or the New Sweep form.
struct SweepRequest {
  std::vector<std::string> params;   // "NAME=SPEC" each (sweep_space.h), in order
  std::string search = "grid";       // grid | random
  int64_t trials = 0;                // random: draws (>= 1); grid: at most this many (0 = all)
  uint64_t seed = 0;                 // random search
  std::string objective = "val_accuracy";  // val_accuracy (maximized) | val_loss (minimized)
  int pruneStartup = 2;              // median rule (SweepSettings::pruneStartup)
};

// `start` gives what every trial starts from: graph, graphVersion (a version stored in
// `project`), base, dataset, testSize and devices (one lane each, names already checked).
// Returns it completed (sweep id, maximize, pruneStartup) for a SweepRunner; `space` (when
// given) receives the stored space_json. Throws sweep::SweepUsageError naming the flag as the
// CLI spells it ("--param lr=abc: 'abc' is not a number", "--search random needs --trials N")
// for a wrong request, including a planned trial that does not fit the settings or the graph;
// ProjectError when the project cannot be written. Nothing is stored when it throws.
SweepSettings plan_sweep(const SweepRequest& request, projects::Project& project, SweepSettings start,
                         nlohmann::json* space = nullptr);

// Continuing stored sweep `sweep` (`kiln-studio --headless --sweep --resume` and the Experiments
// dock's Resume) with the settings it was planned with (its space_json: training, dataset,
// test_size, devices, prune_startup) and its graph version: its interrupted and stopped trials
// queued again (Project::requeue_interrupted_trials, their count in *requeued) and its status
// "running". Throws SweepUsageError for an unknown or finished sweep, or one whose graph version
// is gone; ProjectError when the project cannot be read or written.
SweepSettings resume_sweep(projects::Project& project, int64_t sweep, int* requeued = nullptr);

}  // namespace kiln::studio
