// Project: hyper-parameter sweeps and their trials (schema 7, projects/schema.cpp).
#include <nlohmann/json.hpp>

#include "projects/project.h"

namespace kiln::projects {

namespace {

SweepTrial read_trial(const Statement& s) {
  SweepTrial t;
  t.id = s.int64(0);
  t.sweep = s.int64(1);
  t.trial = static_cast<int>(s.int64(2));
  t.params_json = s.text(3);
  t.run = s.is_null(4) ? 0 : s.int64(4);
  t.status = s.text(5);
  t.objective = s.real(6);
  t.message = s.text(7);
  return t;
}

constexpr const char* kTrialColumns = "id, sweep, trial, params_json, run, status, objective, message";

}  // namespace

int64_t Project::create_sweep(const SweepRecord& sweep, const std::vector<std::string>& trial_params) {
  for (size_t i = 0; i < trial_params.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(trial_params[i], nullptr, false);
    if (!j.is_object())
      throw ProjectError("project " + path() + ": sweep trial " + std::to_string(i) + " parameters are not a JSON object: " +
                         trial_params[i]);
  }
  Transaction tx(*db_);
  Statement s = db_->prepare(
      "INSERT INTO sweeps(name, space_json, objective, graph_version, created_at, status) VALUES(?, ?, ?, ?, ?, 'running')");
  s.bind(1, sweep.name).bind(2, sweep.space_json).bind(3, sweep.objective);
  if (sweep.graph_version > 0) {
    Statement g = db_->prepare("SELECT 1 FROM graph_versions WHERE id = ?");
    g.bind(1, sweep.graph_version);
    if (!g.step())
      throw ProjectError("project " + path() + ": no graph version " + std::to_string(sweep.graph_version) + " for the sweep");
    s.bind(4, sweep.graph_version);
  } else {
    s.bind_null(4);
  }
  s.bind(5, utc_now()).run();
  const int64_t id = db_->last_insert_rowid();
  Statement t = db_->prepare("INSERT INTO sweep_trials(sweep, trial, params_json, status) VALUES(?, ?, ?, 'queued')");
  for (size_t i = 0; i < trial_params.size(); ++i) {
    t.reset();
    t.bind(1, id).bind(2, static_cast<int64_t>(i)).bind(3, trial_params[i]).run();
  }
  tx.commit();
  return id;
}

std::vector<SweepRecord> Project::sweeps() const {
  std::vector<SweepRecord> out;
  Statement s = db_->prepare(
      "SELECT id, name, space_json, objective, graph_version, created_at, ended_at, status FROM sweeps ORDER BY id");
  while (s.step()) {
    SweepRecord r;
    r.id = s.int64(0);
    r.name = s.text(1);
    r.space_json = s.text(2);
    r.objective = s.text(3);
    r.graph_version = s.is_null(4) ? 0 : s.int64(4);
    r.created_at = s.text(5);
    r.ended_at = s.text(6);
    r.status = s.text(7);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<SweepTrial> Project::sweep_trials(int64_t sweep) const {
  Statement k = db_->prepare("SELECT 1 FROM sweeps WHERE id = ?");
  k.bind(1, sweep);
  if (!k.step()) throw ProjectError("project " + path() + ": no sweep " + std::to_string(sweep));
  Statement s = db_->prepare(std::string("SELECT ") + kTrialColumns + " FROM sweep_trials WHERE sweep = ? ORDER BY id");
  s.bind(1, sweep);
  std::vector<SweepTrial> out;
  while (s.step()) out.push_back(read_trial(s));
  return out;
}

void Project::start_trial(int64_t trial, int64_t run) {
  require_run(run);
  db_->prepare("UPDATE sweep_trials SET status = 'running', run = ?, message = '' WHERE id = ?").bind(1, run).bind(2, trial).run();
  if (db_->changes() == 0) throw ProjectError("project " + path() + ": no sweep trial " + std::to_string(trial));
}

void Project::end_trial(int64_t trial, const std::string& status, double objective, const std::string& message) {
  if (status != "finished" && status != "pruned" && status != "stopped" && status != "failed")
    throw ProjectError("project " + path() + ": a sweep trial cannot end as '" + status + "'");
  db_->prepare("UPDATE sweep_trials SET status = ?, objective = ?, message = ? WHERE id = ?")
      .bind(1, status)
      .bind(2, objective)
      .bind(3, message)
      .bind(4, trial)
      .run();
  if (db_->changes() == 0) throw ProjectError("project " + path() + ": no sweep trial " + std::to_string(trial));
}

void Project::set_sweep_status(int64_t sweep, const std::string& status) {
  if (status != "running" && status != "finished" && status != "stopped")
    throw ProjectError("project " + path() + ": a sweep cannot be '" + status + "'");
  db_->prepare("UPDATE sweeps SET status = ?, ended_at = ? WHERE id = ?")
      .bind(1, status)
      .bind(2, status == "running" ? std::string() : utc_now())
      .bind(3, sweep)
      .run();
  if (db_->changes() == 0) throw ProjectError("project " + path() + ": no sweep " + std::to_string(sweep));
}

int Project::requeue_interrupted_trials(int64_t sweep) {
  sweep_trials(sweep);  // ProjectError for an unknown sweep
  Transaction tx(*db_);
  db_->prepare(
         "UPDATE sweep_trials SET status = 'interrupted', message = ? WHERE sweep = ? AND status = 'running' AND "
         "(run IS NULL OR run NOT IN (SELECT id FROM runs WHERE status = 'running'))")
      .bind(1, kInterruptedMessage)
      .bind(2, sweep)
      .run();
  db_->prepare(
         "INSERT INTO sweep_trials(sweep, trial, params_json, status) "
         "SELECT t.sweep, t.trial, t.params_json, 'queued' FROM sweep_trials t WHERE t.sweep = ? AND "
         "t.status IN ('interrupted', 'stopped') AND NOT EXISTS (SELECT 1 FROM sweep_trials l WHERE l.sweep = t.sweep AND "
         "l.trial = t.trial AND l.id > t.id) ORDER BY t.trial")
      .bind(1, sweep)
      .run();
  const int queued = db_->changes();
  tx.commit();
  return queued;
}

}  // namespace kiln::projects
