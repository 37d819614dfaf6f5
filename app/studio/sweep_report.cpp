#include "app/studio/sweep_report.h"

#include <cmath>
#include <cstdio>

#include "app/studio/sweep_space.h"

namespace kiln::studio {

namespace {

std::string params_text(const std::string& json) {
  std::string s;
  const nlohmann::json params = nlohmann::json::parse(json);  // alive through the loop (items() is a view)
  for (const auto& [name, v] : params.items()) s += (s.empty() ? "" : ", ") + name + " " + sweep::value_text(v);
  return s;
}

nlohmann::json trial_json(const projects::SweepTrial& t) {
  return {{"trial", t.trial},
          {"run", t.run > 0 ? nlohmann::json(t.run) : nlohmann::json(nullptr)},
          {"status", t.status},
          {"objective", std::isnan(t.objective) ? nlohmann::json(nullptr) : nlohmann::json(t.objective)},
          {"params", nlohmann::json::parse(t.params_json)},
          {"message", t.message}};
}

}  // namespace

SweepReport sweep_report(const projects::Project& project, int64_t sweep) {
  SweepReport r;
  for (const projects::SweepRecord& s : project.sweeps())
    if (s.id == sweep) r.sweep = s;
  r.trials = project.sweep_trials(sweep);
  r.maximize = r.sweep.objective != "val_loss";
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const projects::SweepTrial& t = r.trials[i];
    if (t.status != "finished" || std::isnan(t.objective)) continue;
    const double b = r.best ? r.trials[*r.best].objective : NAN;
    if (!r.best || (r.maximize ? t.objective > b : t.objective < b)) r.best = i;
  }
  return r;
}

std::string sweep_report_table(const SweepReport& r) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-6s %-5s %-12s %-12s %s\n", "trial", "run", "status", r.sweep.objective.c_str(), "parameters");
  out += line;
  for (const projects::SweepTrial& t : r.trials) {
    const std::string run = t.run > 0 ? std::to_string(t.run) : "-";
    char objective[32] = "-";
    if (!std::isnan(t.objective)) std::snprintf(objective, sizeof objective, "%.4f", t.objective);
    std::snprintf(line, sizeof line, "%-6d %-5s %-12s %-12s ", t.trial, run.c_str(), t.status.c_str(), objective);
    out += line + params_text(t.params_json) + "\n";
  }
  if (!r.best) return out + "best: none (no trial finished)\n";
  const projects::SweepTrial& b = r.trials[*r.best];
  std::snprintf(line, sizeof line, "best: trial %d (run %lld) %s %.4f: ", b.trial, static_cast<long long>(b.run),
                r.sweep.objective.c_str(), b.objective);
  return out + line + params_text(b.params_json) + "\n";
}

nlohmann::json sweep_report_json(const SweepReport& r) {
  nlohmann::json j = {{"sweep", r.sweep.id}, {"objective", r.sweep.objective}, {"status", r.sweep.status}};
  j["trials"] = nlohmann::json::array();
  for (const projects::SweepTrial& t : r.trials) j["trials"].push_back(trial_json(t));
  j["best"] = r.best ? trial_json(r.trials[*r.best]) : nlohmann::json(nullptr);
  return j;
}

}  // namespace kiln::studio
