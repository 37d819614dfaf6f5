// Project: opening and creating files, graph versions, autosave, settings.
#include "projects/project.h"

#include <filesystem>

#include "projects/schema.h"

namespace kiln::projects {

static_assert(Project::kSchemaVersion == kCurrentSchema);

std::string to_string(RunStatus s) {
  switch (s) {
    case RunStatus::running: return "running";
    case RunStatus::finished: return "finished";
    case RunStatus::stopped: return "stopped";
    case RunStatus::failed: return "failed";
    case RunStatus::interrupted: return "interrupted";
  }
  return "failed";
}

RunStatus run_status_from_string(const std::string& s) {
  if (s == "running") return RunStatus::running;
  if (s == "finished") return RunStatus::finished;
  if (s == "stopped") return RunStatus::stopped;
  if (s == "failed") return RunStatus::failed;
  if (s == "interrupted") return RunStatus::interrupted;
  throw ProjectError("unknown run status '" + s + "'; known: running, finished, stopped, failed, interrupted");
}

Project::Project(std::unique_ptr<Database> db) : db_(std::move(db)) {}
Project::Project(Project&&) noexcept = default;
Project& Project::operator=(Project&&) noexcept = default;
Project::~Project() = default;

Project Project::create(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) || fs::is_symlink(path, ec))
    throw ProjectError("cannot create project " + path + ": the file already exists");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw ProjectError("cannot create project " + path + ": the folder " + parent.string() + " does not exist");
  try {
    auto db = std::make_unique<Database>(path, Database::Mode::create);
    // The application_id goes into the main file before WAL is switched on, so the
    // header check of open() sees it even when the WAL was never checkpointed.
    db->exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    db->exec("PRAGMA user_version = 0");
    migrate(*db, 0, kSchemaVersion, migrations());
    db->prepare("INSERT INTO meta(key, value) VALUES('created_at', ?)").bind(1, utc_now()).run();
    configure_connection(*db);
    return Project(std::move(db));
  } catch (const ProjectError& e) {
    fs::remove(path, ec);
    fs::remove(path + "-wal", ec);
    fs::remove(path + "-shm", ec);
    fs::remove(path + "-journal", ec);
    throw ProjectError("cannot create project " + path + ": " + e.what());
  }
}

Project Project::open(const std::string& path) {
  const int version = check_project_file(path, kSchemaVersion);
  auto db = std::make_unique<Database>(path, Database::Mode::read_write);
  configure_connection(*db);
  if (version < kSchemaVersion) migrate(*db, version, kSchemaVersion, migrations());
  Project project(std::move(db));
  try {
    project.mark_interrupted_runs();
  } catch (const ProjectError&) {
    // A read-only file: runs() still reports such runs as interrupted.
  }
  return project;
}

const std::string& Project::path() const { return db_->path(); }

int64_t Project::save_graph(const std::string& graph_json, const std::string& message) {
  Transaction tx(*db_);
  db_->prepare("INSERT INTO graph_versions(graph_json, message, created_at) VALUES(?, ?, ?)")
      .bind(1, graph_json)
      .bind(2, message)
      .bind(3, utc_now())
      .run();
  const int64_t id = db_->last_insert_rowid();
  db_->exec("DELETE FROM autosave");
  tx.commit();
  return id;
}

namespace {
GraphVersion read_version(const Statement& s) { return {s.int64(0), s.text(1), s.text(2), s.text(3)}; }
}  // namespace

std::optional<GraphVersion> Project::latest_graph() const {
  Statement s = db_->prepare("SELECT id, graph_json, message, created_at FROM graph_versions ORDER BY id DESC LIMIT 1");
  if (!s.step()) return std::nullopt;
  return read_version(s);
}

std::vector<GraphVersion> Project::graph_versions() const {
  Statement s = db_->prepare("SELECT id, graph_json, message, created_at FROM graph_versions ORDER BY id");
  std::vector<GraphVersion> out;
  while (s.step()) out.push_back(read_version(s));
  return out;
}

void Project::autosave(const std::string& graph_json) {
  db_->prepare("INSERT OR REPLACE INTO autosave(slot, graph_json, saved_at) VALUES(1, ?, ?)")
      .bind(1, graph_json)
      .bind(2, utc_now())
      .run();
}

std::optional<std::string> Project::autosave_if_newer() const {
  Statement s = db_->prepare("SELECT graph_json FROM autosave WHERE slot = 1");
  if (!s.step()) return std::nullopt;
  std::string json = s.text(0);
  auto latest = latest_graph();
  if (latest && latest->graph_json == json) return std::nullopt;
  return json;
}

void Project::set_setting(const std::string& key, const std::string& json) {
  if (key.empty()) throw ProjectError("project " + path() + ": set_setting needs a non-empty key");
  db_->prepare("INSERT OR REPLACE INTO settings(key, json, updated_at) VALUES(?, ?, ?)")
      .bind(1, key)
      .bind(2, json)
      .bind(3, utc_now())
      .run();
}

std::optional<std::string> Project::setting(const std::string& key) const {
  Statement s = db_->prepare("SELECT json FROM settings WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

}  // namespace kiln::projects
