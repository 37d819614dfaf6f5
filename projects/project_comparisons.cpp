// Project: device comparisons (schema 9, projects/schema.cpp).
#include <nlohmann/json.hpp>

#include "projects/project.h"

namespace kiln::projects {

int64_t Project::save_device_comparison(const DeviceComparisonRecord& c) {
  if (c.batch_size < 1)
    throw ProjectError("project " + path() + ": a device comparison's batch size must be at least 1, got " +
                       std::to_string(c.batch_size));
  const nlohmann::json j = nlohmann::json::parse(c.results_json, nullptr, false);
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw ProjectError("project " + path() + ": a device comparison's results are not a JSON object with a \"results\" array");
  Transaction tx(*db_);
  Statement s = db_->prepare(
      "INSERT INTO device_comparisons(graph_version, created_at, batch_size, results_json) VALUES(?, ?, ?, ?)");
  if (c.graph_version > 0) {
    Statement g = db_->prepare("SELECT 1 FROM graph_versions WHERE id = ?");
    g.bind(1, c.graph_version);
    if (!g.step())
      throw ProjectError("project " + path() + ": no graph version " + std::to_string(c.graph_version) +
                         " for the device comparison");
    s.bind(1, c.graph_version);
  } else {
    s.bind_null(1);
  }
  s.bind(2, utc_now()).bind(3, c.batch_size).bind(4, c.results_json).run();
  const int64_t id = db_->last_insert_rowid();
  tx.commit();
  return id;
}

std::vector<DeviceComparisonRecord> Project::device_comparisons() const {
  std::vector<DeviceComparisonRecord> out;
  Statement s = db_->prepare(
      "SELECT id, graph_version, created_at, batch_size, results_json FROM device_comparisons ORDER BY id");
  while (s.step()) {
    DeviceComparisonRecord r;
    r.id = s.int64(0);
    r.graph_version = s.is_null(1) ? 0 : s.int64(1);
    r.created_at = s.text(2);
    r.batch_size = s.int64(3);
    r.results_json = s.text(4);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kiln::projects
