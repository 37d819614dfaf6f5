// Project: a run's fitted preprocessing (schema 10, projects/schema.cpp).
#include <nlohmann/json.hpp>

#include "projects/project.h"

namespace kiln::projects {

void Project::set_run_preprocessing(int64_t run, const std::string& json) {
  require_run(run);
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object() || j.size() != 1 || !(j.contains("images") || j.contains("table")) || !j.begin()->is_object())
    throw ProjectError("project " + path() + ": run " + std::to_string(run) +
                       "'s preprocessing is not a JSON object {\"images\": {...}} or {\"table\": {...}}");
  db_->prepare("UPDATE runs SET preprocessing_json = ? WHERE id = ?").bind(1, json).bind(2, run).run();
}

std::string Project::run_preprocessing(int64_t run) const {
  Statement s = db_->prepare("SELECT preprocessing_json FROM runs WHERE id = ?");
  s.bind(1, run);
  if (!s.step()) throw ProjectError("project " + path() + ": no run with id " + std::to_string(run));
  return s.text(0);
}

}  // namespace kiln::projects
