// Project: runs, their metrics, and the CSV export of metrics.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/io/atomic_file.h"
#include "projects/project.h"

namespace kiln::projects {

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

bool Project::run_process_gone(const RunRecord& run, double now) {
  if (run.status != RunStatus::running) return false;
  if (now - run.heartbeat_at > kHeartbeatTimeoutS) return true;
  if (run.pid > 0 && run.host == host_name()) return ::kill(static_cast<pid_t>(run.pid), 0) != 0 && errno == ESRCH;
  return false;
}

int Project::mark_interrupted_runs() {
  std::vector<std::pair<int64_t, double>> gone;  // run, its last sign of life (s since the epoch)
  {
    Statement s = db_->prepare("SELECT id, pid, host, heartbeat_at FROM runs WHERE status = 'running'");
    const double now = unix_time_now();
    while (s.step()) {
      RunRecord r;
      r.pid = s.int64(1);
      r.host = s.text(2);
      r.heartbeat_at = s.real(3);
      if (run_process_gone(r, now)) gone.emplace_back(s.int64(0), r.heartbeat_at);
    }
  }
  if (gone.empty()) return 0;
  int marked = 0;
  Transaction tx(*db_);
  // A sweep trial running as one of these runs was interrupted with it (schema 7).
  Statement trials = db_->prepare(
      "UPDATE sweep_trials SET status = 'interrupted', message = ? WHERE run = ? AND status = 'running'");
  Statement u = db_->prepare(
      "UPDATE runs SET status = 'interrupted', message = ?, ended_at = ? WHERE id = ? AND status = 'running'");
  for (const auto& [id, heartbeat] : gone) {
    u.reset();  // it ended at its last heartbeat, not now
    u.bind(1, kInterruptedMessage).bind(2, heartbeat > 0 ? utc_from_unix(heartbeat) : utc_now()).bind(3, id).run();
    marked += db_->changes();
    trials.reset();
    trials.bind(1, kInterruptedMessage).bind(2, id).run();
  }
  tx.commit();
  return marked;
}

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
      "INSERT INTO runs(name, config_json, device, graph_version, started_at, status, pid, host, heartbeat_at) "
      "VALUES(?, ?, ?, ?, ?, 'running', ?, ?, ?)");
  s.bind(1, unique_run_name(config.name)).bind(2, config.config_json).bind(3, config.device).bind(5, utc_now());
  s.bind(6, static_cast<int64_t>(getpid())).bind(7, host_name()).bind(8, unix_time_now());
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

namespace {

constexpr const char* kRunColumns =
    "r.id, r.name, r.config_json, r.device, r.graph_version, r.started_at, r.ended_at, r.status, r.message, "
    "r.final_metrics_json, r.pid, r.host, r.heartbeat_at, r.tags, r.deleted_at";
constexpr int kRunColumnCount = 15;

// A row of kRunColumns; a "running" run whose process is gone reads as interrupted.
RunRecord read_run(const Statement& s, double now) {
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
  r.pid = s.int64(10);
  r.host = s.text(11);
  r.heartbeat_at = s.real(12);
  std::istringstream tags(s.text(13));
  for (std::string tag; std::getline(tags, tag);)
    if (!tag.empty()) r.tags.push_back(tag);
  r.deleted = !s.text(14).empty();
  if (Project::run_process_gone(r, now)) {
    r.status = RunStatus::interrupted;
    r.message = kInterruptedMessage;
  }
  return r;
}

}  // namespace

std::vector<RunRecord> Project::runs(bool include_deleted) const {
  Statement s = db_->prepare(std::string("SELECT ") + kRunColumns + " FROM runs r WHERE ? OR r.deleted_at = '' ORDER BY r.id");
  s.bind(1, include_deleted ? 1 : 0);
  std::vector<RunRecord> out;
  const double now = unix_time_now();
  while (s.step()) out.push_back(read_run(s, now));
  return out;
}

std::vector<RunSummary> Project::run_summaries(bool include_deleted) const {
  // The last epoch row by the (run, epoch) primary key; the step aggregates by (run, step).
  Statement s = db_->prepare(
      std::string("SELECT ") + kRunColumns +
      ", e.epoch, e.train_loss, e.train_accuracy, e.val_loss, e.val_accuracy, e.lr, e.seconds, "
      "(SELECT COUNT(*) FROM step_metrics m WHERE m.run = r.id), "
      "(SELECT AVG(m.images_per_second) FROM step_metrics m WHERE m.run = r.id), "
      "v.run IS NOT NULL, v.accuracy "
      "FROM runs r "
      "LEFT JOIN epoch_metrics e ON e.run = r.id AND e.epoch = (SELECT MAX(epoch) FROM epoch_metrics x WHERE x.run = r.id) "
      "LEFT JOIN evaluations v ON v.run = r.id "
      "WHERE ? OR r.deleted_at = '' ORDER BY r.id");
  s.bind(1, include_deleted ? 1 : 0);
  std::vector<RunSummary> out;
  const double now = unix_time_now();
  const int c = kRunColumnCount;
  while (s.step()) {
    RunSummary m;
    m.run = read_run(s, now);
    if (!s.is_null(c))
      m.last_epoch = {static_cast<int>(s.int64(c)), s.real(c + 1), s.real(c + 2), s.real(c + 3),
                      s.real(c + 4),                s.real(c + 5), s.real(c + 6)};
    m.steps = s.int64(c + 7);
    m.mean_images_per_second = s.real(c + 8);
    m.has_evaluation = s.int64(c + 9) != 0;
    m.test_accuracy = m.has_evaluation ? s.real(c + 10) : NAN;
    out.push_back(std::move(m));
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
