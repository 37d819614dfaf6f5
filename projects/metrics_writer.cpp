// MetricsWriter: buffered metric rows, committed by a background thread.
#include <unistd.h>

#include <chrono>

#include "projects/project.h"
#include "projects/schema.h"

namespace kiln::projects {

MetricsWriter::MetricsWriter(const std::string& project_path, int64_t run) : run_(run) {
  db_ = std::make_unique<Database>(project_path, Database::Mode::read_write);
  configure_connection(*db_);
  if (db_->pragma_int("application_id") != kApplicationId || db_->pragma_int("user_version") != kCurrentSchema)
    throw ProjectError("project " + project_path + ": metrics writer: not a Kiln project of schema " +
                       std::to_string(kCurrentSchema) + " (open it with Project::open first)");
  {  // finished before the UPDATE: a statement left open keeps its read snapshot, and
     // upgrading that to a write after another connection committed fails at once with
     // SQLITE_BUSY (no busy timeout applies: https://sqlite.org/wal.html#sometimes_queries_return_sqlite_busy_in_wal_mode)
    Statement s = db_->prepare("SELECT 1 FROM runs WHERE id = ?");
    s.bind(1, run);
    if (!s.step())
      throw ProjectError("project " + project_path + ": metrics writer: no run with id " + std::to_string(run));
  }
  db_->prepare("UPDATE runs SET pid = ?, host = ? WHERE id = ?")
      .bind(1, static_cast<int64_t>(getpid()))
      .bind(2, host_name())
      .bind(3, run)
      .run();
  write_buffered(true);
  thread_ = std::thread([this] { loop(); });
}

MetricsWriter::~MetricsWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  try {
    std::lock_guard db_lock(db_mutex_);
    write_buffered();
  } catch (const std::exception&) {
    // Nothing to report to from a destructor; the rows that could not be written are lost.
  }
}

void MetricsWriter::step(const StepMetric& m) {
  std::unique_lock lock(mutex_);
  if (!error_.empty()) {
    std::string e = std::move(error_);
    error_.clear();
    throw ProjectError(e);
  }
  steps_.push_back(m);
  if (steps_.size() + epochs_.size() >= static_cast<size_t>(kMaxRows)) wake_.notify_one();
}

void MetricsWriter::epoch(const EpochMetric& m) {
  std::unique_lock lock(mutex_);
  if (!error_.empty()) {
    std::string e = std::move(error_);
    error_.clear();
    throw ProjectError(e);
  }
  epochs_.push_back(m);
  if (steps_.size() + epochs_.size() >= static_cast<size_t>(kMaxRows)) wake_.notify_one();
}

void MetricsWriter::flush() {
  std::lock_guard db_lock(db_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) {
      std::string e = std::move(error_);
      error_.clear();
      throw ProjectError(e);
    }
  }
  write_buffered();
}

int64_t MetricsWriter::rows_committed() const { return committed_.load(); }

// Takes the buffered rows and commits them in one transaction; on failure puts them
// back in front of rows added meanwhile and throws. Caller holds db_mutex_, so rows
// taken here are committed (or restored) before anyone else can flush.
// heartbeat_only: commits only the heartbeat (rows stay buffered).
void MetricsWriter::write_buffered(bool heartbeat_only) {
  std::vector<StepMetric> steps;
  std::vector<EpochMetric> epochs;
  if (!heartbeat_only) {
    std::lock_guard lock(mutex_);
    steps.swap(steps_);
    epochs.swap(epochs_);
  }
  if (steps.empty() && epochs.empty() && !heartbeat_only) return;
  try {
    Transaction tx(*db_);
    // A run taken for interrupted while this process was alive (a suspended machine)
    // is running again.
    db_->prepare(
           "UPDATE runs SET heartbeat_at = ?, status = 'running', message = '', ended_at = '' "
           "WHERE id = ? AND status IN ('running', 'interrupted')")
        .bind(1, unix_time_now())
        .bind(2, run_)
        .run();
    Statement s = db_->prepare(
        "INSERT OR REPLACE INTO step_metrics(run, step, epoch, loss, lr, images_per_second, time_s) "
        "VALUES(?, ?, ?, ?, ?, ?, ?)");
    for (const StepMetric& m : steps) {
      s.reset();
      s.bind(1, run_).bind(2, m.step).bind(3, m.epoch).bind(4, m.loss).bind(5, m.lr).bind(6, m.images_per_second);
      s.bind(7, m.time_s).run();
    }
    Statement e = db_->prepare(
        "INSERT OR REPLACE INTO epoch_metrics(run, epoch, train_loss, train_accuracy, val_loss, val_accuracy, lr, "
        "seconds) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    for (const EpochMetric& m : epochs) {
      e.reset();
      e.bind(1, run_).bind(2, m.epoch).bind(3, m.train_loss).bind(4, m.train_accuracy).bind(5, m.val_loss);
      e.bind(6, m.val_accuracy).bind(7, m.lr).bind(8, m.seconds).run();
    }
    tx.commit();
  } catch (...) {
    std::lock_guard lock(mutex_);
    steps.insert(steps.end(), steps_.begin(), steps_.end());
    epochs.insert(epochs.end(), epochs_.begin(), epochs_.end());
    steps_.swap(steps);
    epochs_.swap(epochs);
    throw;
  }
  committed_ += static_cast<int64_t>(steps.size() + epochs.size());
  last_heartbeat_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
}

void MetricsWriter::loop() {
  using clock = std::chrono::steady_clock;
  auto next = clock::now() + std::chrono::milliseconds(kIntervalMs);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next, [&] {
        return stop_ || steps_.size() + epochs_.size() >= static_cast<size_t>(kMaxRows);
      });
      if (stop_) return;  // the destructor writes what is left
    }
    next = clock::now() + std::chrono::milliseconds(kIntervalMs);
    try {
      std::lock_guard db_lock(db_mutex_);
      const int64_t now_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock::now().time_since_epoch()).count();
      bool idle;
      {
        std::lock_guard lock(mutex_);
        idle = steps_.empty() && epochs_.empty();
      }
      write_buffered(idle && now_ms - last_heartbeat_ms_ >= kHeartbeatIntervalMs);
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      error_ = e.what();
    }
  }
}

}  // namespace kiln::projects
