// Project: per-layer profiles (schema 12, projects/schema.cpp).
#include <nlohmann/json.hpp>

#include "projects/profile_record.h"

namespace kiln::projects {

namespace {

constexpr const char* kColumns =
    "SELECT id, created_at, graph_version, run, device, precision, batch_size, steps, profile_json FROM profiles";

ProfileRecord read_profile(Statement& s) {
  ProfileRecord r;
  r.id = s.int64(0);
  r.created_at = s.text(1);
  r.graph_version = s.is_null(2) ? 0 : s.int64(2);
  r.run = s.is_null(3) ? 0 : s.int64(3);
  r.device = s.text(4);
  r.precision = s.text(5);
  r.batch_size = s.int64(6);
  r.steps = s.int64(7);
  r.profile_json = s.text(8);
  return r;
}

}  // namespace

ProfileRecord profile_record(const graph::LayerProfile& profile, int64_t graph_version) {
  ProfileRecord r;
  r.graph_version = graph_version;
  r.device = profile.device;
  r.precision = profile.precision;
  r.batch_size = profile.batch;
  r.steps = profile.steps;
  r.profile_json = graph::profile_json(profile);
  return r;
}

int64_t Project::add_profile(const ProfileRecord& p) {
  auto refuse = [this](const std::string& why) { throw ProjectError("project " + path() + ": a per-layer profile " + why); };
  if (p.device.empty()) refuse("needs its device");
  if (p.precision.empty()) refuse("needs its precision");
  if (p.batch_size < 1) refuse("needs a batch size of at least 1, got " + std::to_string(p.batch_size));
  if (p.steps < 0) refuse("cannot have " + std::to_string(p.steps) + " steps");
  const nlohmann::json j = nlohmann::json::parse(p.profile_json, nullptr, false);
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array())
    refuse("is not a JSON object with a \"layers\" array");
  Transaction tx(*db_);
  Statement s = db_->prepare(
      "INSERT INTO profiles(created_at, graph_version, run, device, precision, batch_size, steps, profile_json) "
      "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, utc_now());
  if (p.graph_version != 0) {
    Statement g = db_->prepare("SELECT 1 FROM graph_versions WHERE id = ?");
    g.bind(1, p.graph_version);
    if (!g.step()) refuse("refers to graph version " + std::to_string(p.graph_version) + ", which it does not have");
    s.bind(2, p.graph_version);
  } else {
    s.bind_null(2);
  }
  if (p.run != 0) {
    Statement r = db_->prepare("SELECT 1 FROM runs WHERE id = ?");
    r.bind(1, p.run);
    if (!r.step()) refuse("refers to run " + std::to_string(p.run) + ", which it does not have");
    s.bind(3, p.run);
  } else {
    s.bind_null(3);
  }
  s.bind(4, p.device).bind(5, p.precision).bind(6, p.batch_size).bind(7, p.steps).bind(8, p.profile_json).run();
  const int64_t id = db_->last_insert_rowid();
  tx.commit();
  return id;
}

std::vector<ProfileRecord> Project::profiles() const {
  std::vector<ProfileRecord> out;
  Statement s = db_->prepare(std::string(kColumns) + " ORDER BY id");
  while (s.step()) out.push_back(read_profile(s));
  return out;
}

std::optional<ProfileRecord> Project::profile(int64_t id) const {
  Statement s = db_->prepare(std::string(kColumns) + " WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_profile(s);
}

void Project::delete_profile(int64_t id) {
  Statement s = db_->prepare("DELETE FROM profiles WHERE id = ?");
  s.bind(1, id).run();
  if (db_->changes() == 0) throw ProjectError("project " + path() + ": no per-layer profile " + std::to_string(id) + " to delete");
}

}  // namespace kiln::projects
