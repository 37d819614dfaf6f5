// Project: runs, their metrics, and the CSV export of metrics.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/io/atomic_file.h"
#include "projects/project.h"

namespace kiln::projects {

void Project::require_run(int64_t run) const {
  Statement s = db_->prepare("SELECT 1 FROM runs WHERE id = ?");
  s.bind(1, run);
  if (!s.step()) throw ProjectError("project " + path() + ": no run with id " + std::to_string(run));
}

int64_t Project::begin_run(const RunConfig& config) {
  if (config.graph_version != 0) {
    Statement s = db_->prepare("SELECT 1 FROM graph_versions WHERE id = ?");
    s.bind(1, config.graph_version);
    if (!s.step())
      throw ProjectError("project " + path() + ": run '" + config.name + "' names graph version " +
                         std::to_string(config.graph_version) + ", which does not exist");
  }
  Statement s = db_->prepare(
      "INSERT INTO runs(name, config_json, device, graph_version, started_at, status) VALUES(?, ?, ?, ?, ?, 'running')");
  s.bind(1, config.name).bind(2, config.config_json).bind(3, config.device).bind(5, utc_now());
  if (config.graph_version != 0) s.bind(4, config.graph_version);
  s.run();
  return db_->last_insert_rowid();
}

void Project::end_run(int64_t run, RunStatus status, const std::string& message, const std::string& final_metrics_json) {
  Statement s = db_->prepare("UPDATE runs SET status = ?, message = ?, final_metrics_json = ?, ended_at = ? WHERE id = ?");
  s.bind(1, to_string(status)).bind(2, message).bind(3, final_metrics_json).bind(4, utc_now()).bind(5, run);
  s.run();
  if (db_->changes() == 0) throw ProjectError("project " + path() + ": end_run: no run with id " + std::to_string(run));
}

std::vector<RunRecord> Project::runs() const {
  Statement s = db_->prepare(
      "SELECT id, name, config_json, device, graph_version, started_at, ended_at, status, message, final_metrics_json "
      "FROM runs ORDER BY id");
  std::vector<RunRecord> out;
  while (s.step()) {
    RunRecord r;
    r.id = s.int64(0);
    r.name = s.text(1);
    r.config_json = s.text(2);
    r.device = s.text(3);
    r.graph_version = s.is_null(4) ? 0 : s.int64(4);
    r.started_at = s.text(5);
    r.ended_at = s.text(6);
    r.status = run_status_from_string(s.text(7));
    r.message = s.text(8);
    r.final_metrics_json = s.text(9);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<StepMetric> Project::step_metrics(int64_t run) const {
  Statement s = db_->prepare(
      "SELECT step, epoch, loss, lr, images_per_second, time_s FROM step_metrics WHERE run = ? ORDER BY step");
  s.bind(1, run);
  std::vector<StepMetric> out;
  while (s.step())
    out.push_back({s.int64(0), static_cast<int>(s.int64(1)), s.real(2), s.real(3), s.real(4), s.real(5)});
  return out;
}

std::vector<EpochMetric> Project::epoch_metrics(int64_t run) const {
  Statement s = db_->prepare(
      "SELECT epoch, train_loss, train_accuracy, val_loss, val_accuracy, lr, seconds FROM epoch_metrics "
      "WHERE run = ? ORDER BY epoch");
  s.bind(1, run);
  std::vector<EpochMetric> out;
  while (s.step())
    out.push_back({static_cast<int>(s.int64(0)), s.real(1), s.real(2), s.real(3), s.real(4), s.real(5), s.real(6)});
  return out;
}

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Shortest text that reads back to the same double (17 significant digits at most).
std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

void Project::export_runs_csv(const std::vector<int64_t>& run_ids, const std::string& csv_path) const {
  std::vector<RunRecord> all = runs();
  std::ostringstream os;
  os << "run_id,run_name,kind,step,epoch,loss,lr,images_per_second,time_s,train_loss,train_accuracy,val_loss,"
        "val_accuracy,seconds\r\n";
  for (int64_t id : run_ids) {
    const RunRecord* run = nullptr;
    for (const auto& r : all)
      if (r.id == id) run = &r;
    if (!run)
      throw ProjectError("project " + path() + ": cannot export run " + std::to_string(id) + " to " + csv_path +
                         ": no such run");
    const std::string prefix = std::to_string(id) + "," + csv_field(run->name);
    for (const StepMetric& m : step_metrics(id))
      os << prefix << ",step," << m.step << "," << m.epoch << "," << num(m.loss) << "," << num(m.lr) << ","
         << num(m.images_per_second) << "," << num(m.time_s) << ",,,,,\r\n";
    for (const EpochMetric& m : epoch_metrics(id))
      os << prefix << ",epoch,," << m.epoch << ",," << num(m.lr) << ",,," << num(m.train_loss) << ","
         << num(m.train_accuracy) << "," << num(m.val_loss) << "," << num(m.val_accuracy) << "," << num(m.seconds)
         << "\r\n";
  }
  const std::string text = os.str();
  try {
    io::AtomicFile file(csv_path);
    file.write(text.data(), text.size());
    file.commit();
  } catch (const kiln::Error& e) {
    throw ProjectError("project " + path() + ": cannot write CSV " + csv_path + ": " + e.what());
  }
}

}  // namespace kiln::projects
