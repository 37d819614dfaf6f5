// A sweep's results as the terminal shows them: its trial rows (Project::sweep_trials) with
// the best finished trial, as a text table or one JSON object.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "projects/project.h"

namespace kiln::studio {

struct SweepReport {
  projects::SweepRecord sweep;
  std::vector<projects::SweepTrial> trials;  // every row, interrupted ones included
  bool maximize = true;                      // objective val_accuracy (else val_loss)
  std::optional<size_t> best;                // index in trials of the best finished trial
};

// ProjectError for an unknown sweep.
SweepReport sweep_report(const projects::Project& project, int64_t sweep);
// "trial  run  status  objective  parameters" rows, then
// "best: trial 2 (run 7) val_accuracy 0.8125: lr 0.001, batch-size 64" (or "best: none ...").
std::string sweep_report_table(const SweepReport& r);
// {"sweep": id, "objective": name, "status": ..., "trials": [{"trial", "run", "status",
// "objective" (null when none), "params", "message"}], "best": the best trial's entry or null}.
nlohmann::json sweep_report_json(const SweepReport& r);

}  // namespace kiln::studio
