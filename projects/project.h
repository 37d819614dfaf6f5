// A Kiln project: one SQLite file (.kiln, format in projects/schema.h) holding graph
// versions, an autosave slot, settings, training runs with their per-step and
// per-epoch metrics, checkpoints (as file blobs), an export log, and the tensor bytes of
// graph JSON (blobs(): an imported model's weights are stored once, not per version).
//
// Threads: a Project is used from one thread (the UI). Training threads write
// metrics through their own MetricsWriter connection; SQLite's WAL mode lets the
// UI read while they write (busy_timeout 5 s covers the short write locks).
// Every method throws ProjectError naming the file and the problem.
#pragma once
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/graph/json.h"
#include "projects/sqlite_db.h"

namespace kiln::projects {

// interrupted: the run was "running" but its process is gone (killed or crashed) — see
// Project::run_process_gone(); set when a project is opened, never by end_run callers.
enum class RunStatus { running, finished, stopped, failed, interrupted };
std::string to_string(RunStatus);
RunStatus run_status_from_string(const std::string&);  // ProjectError on an unknown name

struct GraphVersion {
  int64_t id = 0;
  std::string graph_json;  // engine/graph/json.h text, stored as is
  std::string message;
  std::string created_at;  // ISO-8601 UTC, "2026-11-29T19:26:27.123Z"
};
struct RunConfig {
  std::string name;
  std::string config_json;    // training settings (optimizer, lr, epochs, batch size ...)
  std::string device;         // "cpu", "cuda:0" ...
  int64_t graph_version = 0;  // GraphVersion::id the run trains; 0 = none
};
struct RunRecord {
  int64_t id = 0;
  std::string name, config_json, device;
  int64_t graph_version = 0;
  std::string started_at, ended_at;  // ISO-8601 UTC; ended_at "" while running
  RunStatus status = RunStatus::running;
  std::string message;             // why it stopped or failed
  std::string final_metrics_json;  // "" until end_run
  // Liveness of the process writing the run (begin_run, then MetricsWriter): its pid on
  // `host` (gethostname) and the last heartbeat, Unix time in seconds.
  int64_t pid = 0;
  std::string host;
  double heartbeat_at = 0;
  std::vector<std::string> tags;  // trimmed, non-empty, no line breaks (Project::set_run_tags)
  bool deleted = false;           // Project::delete_run; restore_run undoes it until purged
};

double unix_time_now();    // seconds since 1970-01-01 UTC (system clock)
std::string host_name();   // gethostname(), "" when it fails
// The message of a run found interrupted (Project::open).
inline constexpr const char* kInterruptedMessage = "the process ended without closing the run (killed or crashed)";
// Losses are mean cross-entropy (nats), accuracies in [0, 1], lr per optimizer step,
// times in seconds. NaN is stored as SQL NULL and read back as NaN.
struct StepMetric {
  int64_t step = 0;  // global optimizer step, from 1
  int epoch = 0;     // from 1
  double loss = 0, lr = 0, images_per_second = 0;
  double time_s = 0;  // since the run started
};
struct EpochMetric {
  int epoch = 0;
  double train_loss = 0, train_accuracy = 0, val_loss = 0, val_accuracy = 0, lr = 0, seconds = 0;
};
// A run with the figures the Runs view shows, read for all runs in one query
// (Project::run_summaries).
struct RunSummary {
  RunRecord run;
  // The run's highest epoch row; epoch 0 with NaN metrics when it has none.
  EpochMetric last_epoch{0, NAN, NAN, NAN, NAN, NAN, NAN};
  int64_t steps = 0;                   // step metric rows
  double mean_images_per_second = NAN;  // mean of the step rows' images_per_second (NaN: none)
  bool has_evaluation = false;
  double test_accuracy = NAN;  // the stored evaluation's accuracy, NaN without one
};
// A stored checkpoint of a run (Project::checkpoints).
struct CheckpointInfo {
  int epoch = 0;
  double val_accuracy = 0;  // NaN when unknown
  bool latest = false;      // the run's newest stored epoch
  bool best = false;        // the highest val_accuracy (ties: the later epoch)
};
// Where a run can continue from (Project::resume_point): its newest checkpoint, taken after
// `epoch` whole epochs and `batch` batches of the next one (0: at that epoch's end), `step`
// optimizer steps in all (0 when not known: an epoch checkpoint stored before schema 11).
struct ResumePoint {
  int epoch = 0;
  int64_t batch = 0, step = 0;
};
// How a run's model did on the test images (Project::set_evaluation).
struct Evaluation {
  int64_t count = 0;                     // images evaluated
  double loss = 0, accuracy = 0;         // mean cross-entropy (nats); top-1 fraction in [0, 1]
  std::vector<std::string> class_names;  // by label, C names without line breaks
  std::vector<int64_t> confusion;        // [truth * C + predicted] image counts, C * C
  struct Misclassified {
    int64_t index = 0;  // in the test split
    int truth = 0, predicted = 0;
  };
  std::vector<Misclassified> misclassified;  // the first few, in test-split order
  int image_height = 0, image_width = 0;     // of `images`
  std::vector<uint8_t> images;  // misclassified.size() * H * W grey bytes (row-major), or empty
  // Every evaluated sample, in test-split order (empty for evaluations stored before
  // schema 4): its index in the test split, true and predicted label, and the softmax
  // probability of the predicted label in [0, 1] (NaN when the model's output was NaN).
  struct Prediction {
    int32_t index = 0;
    int32_t truth = 0, predicted = 0;
    float probability = 0;
  };
  std::vector<Prediction> predictions;
  // A text dataset's test samples, by test-split index (empty for other datasets and for
  // evaluations stored before schema 6): where each is from (FILE or FILE:LINE), its text
  // shortened to one line, and the first tokens the model saw (space-separated pieces).
  struct Text {
    std::string origin, text, tokens;
  };
  std::vector<Text> texts;
  // A regression run (schema 8; empty for classification and older evaluations): the label
  // column's name and every evaluated test row's actual and predicted value, in test-split
  // order. class_names, confusion and predictions are then empty, loss is the mean squared
  // error and accuracy NaN; the Studio computes MAE, RMSE and R² from the points
  // (engine/train/regression_metrics.h).
  std::string target;
  struct Point {
    double actual = 0, predicted = 0;
  };
  std::vector<Point> regression;
  bool is_regression() const { return !regression.empty(); }
};

// A comparison of one graph across devices and precisions (issue 20; engine/graph/device_compare.h).
// results_json: the JSON document `kiln bench --graph FILE --json` writes ({"model", "batch_size",
// "results": [{"device", "precision", "train_step_ms", ...}, ...]}, docs/compare-devices.md).
struct DeviceComparisonRecord {
  int64_t id = 0;
  int64_t graph_version = 0;  // the graph compared (0: none, or its version was deleted)
  std::string created_at;     // ISO-8601 UTC, set when saved
  int64_t batch_size = 1;
  std::string results_json;
};

// A stored per-layer profile (issue 20; engine/graph/layer_profile.h, Project::add_profile).
// profile_json: the document `kiln bench --graph FILE --profile --json` writes (graph::profile_json:
// {"device", "precision", "batch_size", "steps", "step_ms", "outside_ms", "loss_forward_ms", ...,
// "layers": [{"name", "op", "forward_ms", "backward_ms", "share_percent", ...}, ...]}); graph::
// profile_from_json reads it back. device, precision, batch_size and steps repeat its figures so
// that profiles() lists them without parsing it.
struct ProfileRecord {
  int64_t id = 0;
  std::string created_at;     // ISO-8601 UTC, set when stored
  int64_t graph_version = 0;  // the graph profiled (0: none, or its version was deleted)
  int64_t run = 0;            // the run whose model was profiled (0: none, or the run was purged)
  std::string device;         // as Device::str() writes it: "cpu", "cuda:0"
  std::string precision;      // f32, bf16, f16
  int64_t batch_size = 1;     // samples per step
  int64_t steps = 0;          // timed steps behind the figures (fewer than asked when cancelled)
  std::string profile_json;
};

// A hyper-parameter sweep (Project::create_sweep; app/studio/sweep_runner.h runs it).
// space_json: {"params": ["lr=1e-4:1e-2:log", ...], "search": "grid"|"random", "seed": S,
// "trials": N, "devices": ["cpu", ...], "training": {...}, "dataset": {...}, "test_size": N}
// as the runner wrote it; objective: "val_accuracy" (higher is better) or "val_loss".
struct SweepRecord {
  int64_t id = 0;
  std::string name, space_json, objective;
  int64_t graph_version = 0;         // the graph the trials start from (0: none)
  std::string created_at, ended_at;  // ISO-8601 UTC; ended_at "" while running
  std::string status = "running";    // running | finished | stopped
};
// One trial of a sweep: its parameter values ({"lr": 0.001, "batch-size": 64}) and, once
// started, the run that trains it. status: queued | running | finished | pruned (the median
// rule stopped it) | stopped | failed | interrupted (its process died; resume queues the
// trial again as a new row with the same `trial` index).
struct SweepTrial {
  int64_t id = 0, sweep = 0;
  int trial = 0;  // index in the sweep's plan, from 0
  std::string params_json;
  int64_t run = 0;  // 0 until started (or when the run was purged)
  std::string status = "queued";
  double objective = NAN;  // the run's best validation figure (NaN: none yet)
  std::string message;
};

class Project : private graph::BlobStore {
 public:
  static constexpr int kSchemaVersion = 12;
  // A running run whose heartbeat is older than this is taken as interrupted (seconds);
  // generous against MetricsWriter::kHeartbeatIntervalMs so a slow disk or a paused run
  // is never taken for a dead one.
  static constexpr double kHeartbeatTimeoutS = 300;

  // Makes a new project file (WAL journal). ProjectError if path exists or cannot be written.
  static Project create(const std::string& path);
  // Opens an existing project, migrating an older schema. ProjectError when the file is
  // missing, not SQLite, not a Kiln project, corrupt or truncated, or newer ("made by a
  // newer Kiln: schema 7, this build reads <= 3"); a rejected file is never written to.
  // Then marks the runs whose process is gone as interrupted (mark_interrupted_runs();
  // skipped silently when the file is read-only: runs() still reports them so).
  static Project open(const std::string& path);

  Project(Project&&) noexcept;
  Project& operator=(Project&&) noexcept;
  ~Project();

  const std::string& path() const;

  // Graph versions are append-only; save_graph also clears the autosave slot.
  int64_t save_graph(const std::string& graph_json, const std::string& message = "");  // new version id
  std::optional<GraphVersion> latest_graph() const;
  std::vector<GraphVersion> graph_versions() const;  // oldest first
  void autosave(const std::string& graph_json);       // one slot, overwritten; no new version
  // The autosaved JSON when there is one that differs from the latest version (a crash
  // or close without saving); nullopt otherwise.
  std::optional<std::string> autosave_if_newer() const;

  // ---- tensor bytes of graph JSON (project_blobs.cpp) ----
  // The store to hand graph::to_json / from_json for the JSON of save_graph, autosave and
  // latest_graph: put keeps bytes once under "sha256:<64 lowercase hex digits>" (SHA-256,
  // FIPS 180-4, by OpenSSL); get throws ProjectError "project P: blob K is missing (the
  // file is damaged)". Writes on this Project's connection (its thread).
  graph::BlobStore& blobs() { return *this; }
  const graph::BlobStore& blobs() const { return *this; }
  // Deletes the blobs that no graph version and no autosave refers to (an autosave
  // replaced before it was saved); returns how many. Kiln Studio calls it with
  // purge_deleted_runs when it closes the project.
  int purge_unreferenced_blobs();

  void set_setting(const std::string& key, const std::string& json);  // "dataset", "training"
  std::optional<std::string> setting(const std::string& key) const;

  // Status running, started now, pid/host/heartbeat of this process, named
  // unique_run_name(config.name); ProjectError on an unknown graph_version.
  int64_t begin_run(const RunConfig&);
  // Ends a run; ProjectError for an unknown run id.
  void end_run(int64_t run, RunStatus, const std::string& message, const std::string& final_metrics_json);
  // By id, without the deleted runs unless include_deleted. A "running" run whose process
  // is gone is reported as interrupted with kInterruptedMessage even before
  // mark_interrupted_runs() stored it.
  std::vector<RunRecord> runs(bool include_deleted = false) const;
  // runs() with each run's last epoch, mean images/s and test accuracy, in one SQL query
  // (a project with 1,000 runs reads in milliseconds).
  std::vector<RunSummary> run_summaries(bool include_deleted = false) const;

  // ---- editing runs (project_run_edits.cpp) ----
  // Limits of run names and tags, in UTF-8 bytes (generous: a name is shown elided).
  static constexpr size_t kMaxRunNameBytes = 1000;
  static constexpr size_t kMaxTagBytes = 200;
  static constexpr size_t kMaxTags = 50;
  // Renames a run; the name is trimmed of spaces and tabs. ProjectError naming the run for
  // an unknown run, an empty name, a line break in it or more than kMaxRunNameBytes.
  void rename_run(int64_t run, const std::string& name);
  // Replaces a run's tags: each trimmed, empty ones dropped, duplicates kept once, in the
  // given order. ProjectError naming the run and the tag for an unknown run, a tag with a
  // line break or over kMaxTagBytes, or more than kMaxTags tags.
  void set_run_tags(int64_t run, const std::vector<std::string>& tags);
  // Soft delete: the run (with its metrics, checkpoints and evaluation) is hidden from
  // runs() until restore_run() or purged for good by purge_deleted_runs(). ProjectError
  // for an unknown run or one still running (its process alive).
  void delete_run(int64_t run);
  void restore_run(int64_t run);  // undoes delete_run; ProjectError once purged (unknown run)
  // Deletes the soft-deleted runs for good, with their metrics, checkpoints and
  // evaluations (ON DELETE CASCADE), in one transaction; returns how many. Kiln Studio calls
  // it when it closes the project (another project opened, a new document, quitting), so
  // a delete can be undone for as long as the project stays open in the window.
  int purge_deleted_runs();
  // `base` when no run (deleted ones included) has that name, else "base #N" with the
  // smallest N >= 2 that is free. begin_run names new runs with it, so a run's default
  // name ("adam lr 0.005, 1 epoch(s)") is unique in its project.
  std::string unique_run_name(const std::string& base) const;
  // Whether the process of a running run is gone: on this host its pid does not exist
  // (kill(pid, 0) fails with ESRCH), or (any host) its heartbeat is older than
  // kHeartbeatTimeoutS at Unix time `now`. A live process on this host heartbeats through
  // its MetricsWriter, so a live run is never taken for a dead one.
  static bool run_process_gone(const RunRecord& run, double now);
  // Stores status interrupted + kInterruptedMessage + ended_at for every running run whose
  // process is gone (metrics kept), and marks the sweep trials of those runs interrupted;
  // returns how many runs.
  int mark_interrupted_runs();
  std::vector<StepMetric> step_metrics(int64_t run) const;    // by step
  std::vector<EpochMetric> epoch_metrics(int64_t run) const;  // by epoch

  // Stores every regular file under checkpoint_dir (relative paths, recursively) as blobs;
  // replaces an earlier checkpoint of the same run and epoch. ProjectError when the run is
  // unknown or the directory is missing, empty or unreadable.
  void add_checkpoint(int64_t run, int epoch, const std::string& checkpoint_dir);
  // A checkpoint taken after `epoch` with its validation accuracy (NaN: none; a regression run
  // gives its negated validation loss, so that the lowest loss ranks best): stored,
  // then every checkpoint of the run other than the latest epoch and the best (highest
  // val_accuracy, NaN ranking last, ties to the later epoch) is deleted in the same
  // transaction, so a run keeps at most two and the file does not grow with the epochs
  // (SQLite reuses the freed pages). Errors as add_checkpoint.
  // `step`: the optimizer steps taken (0: not known). Drops the run's mid-epoch checkpoint.
  void add_epoch_checkpoint(int64_t run, int epoch, const std::string& checkpoint_dir, double val_accuracy,
                            int64_t step = 0);
  // The epoch checkpoints (mid-epoch ones are resume_point()'s).
  std::vector<int> checkpoint_epochs(int64_t run) const;
  std::vector<CheckpointInfo> checkpoints(int64_t run) const;  // by epoch
  // Writes the files back byte-identical into into_dir (created); ProjectError when there
  // is no such checkpoint or a file cannot be written.
  void restore_checkpoint(int64_t run, int epoch, const std::string& into_dir) const;
  void add_export(const std::string& kind, const std::string& path);  // kind: "onnx", "csv" ...

  // ---- continuing a stopped, interrupted or failed run (project_resume.cpp, schema 11) ----
  // A checkpoint taken in the middle of an epoch (train::TrainerOptions::checkpoint_every_seconds,
  // or at a Stop), after `epochs` whole epochs and `batch` >= 1 batches of the next one, `step`
  // optimizer steps in all: it replaces the run's earlier mid-epoch checkpoint in one transaction
  // (a run keeps one; the next epoch checkpoint drops it). Errors as add_checkpoint, and
  // ProjectError when batch < 1.
  void add_mid_epoch_checkpoint(int64_t run, int epochs, int64_t batch, int64_t step, const std::string& checkpoint_dir);
  // The run's newest checkpoint, mid-epoch or epoch; nullopt when it has none.
  std::optional<ResumePoint> resume_point(int64_t run) const;
  // Writes the files of resume_point()'s checkpoint into into_dir, as restore_checkpoint does.
  void restore_resume_point(int64_t run, const std::string& into_dir) const;
  // "" when `run` can be continued, else why not in plain words: it must exist, not be deleted,
  // have ended stopped, interrupted or failed (a finished run has nothing left to train, a running
  // one is being written, a run failed with a non-finite loss would fail again: Note [Continuing
  // a failed run] in project_resume.cpp) and have a checkpoint.
  std::string why_not_resumable(int64_t run) const;
  // Reopens the run to continue it from its checkpoint after `step` optimizer steps and `epochs`
  // whole epochs: status running, ended_at, message and final metrics cleared, this process's
  // pid, host and heartbeat; its step metrics after `step`, epoch metrics after `epochs` and its
  // evaluation deleted (those steps are trained again). One transaction. ProjectError naming the
  // run with why_not_resumable's reason.
  void reopen_run(int64_t run, int64_t step, int epochs);

  // Stores (replaces) the run's evaluation. ProjectError for an unknown run, a confusion
  // matrix that is not C * C, a label outside [0, C), a class name with a line break, or
  // an image byte count that is not misclassified.size() * H * W, or a prediction whose
  // label is outside [0, C) or whose probability is neither in [0, 1] nor NaN.
  void set_evaluation(int64_t run, const Evaluation&);
  // nullopt when the run has none; ProjectError when the stored one is damaged.
  std::optional<Evaluation> evaluation(int64_t run) const;

  // Copies the project (VACUUM INTO, replacing new_path and its -wal/-shm if present) and
  // continues on the copy. ProjectError when new_path is this file or cannot be written.
  // MetricsWriters opened on the old path keep writing to the old file.
  void save_as(const std::string& new_path);
  // CSV (RFC 4180) of the runs' metrics, one row per step and per epoch:
  // run_id,run_name,kind,step,epoch,loss,lr,images_per_second,time_s,train_loss,
  // train_accuracy,val_loss,val_accuracy,seconds  (kind "step" or "epoch"; cells that do
  // not apply are empty; NaN as "nan"). ProjectError on an unknown run or unwritable file.
  void export_runs_csv(const std::vector<int64_t>& runs, const std::string& csv_path) const;

  // ---- hyper-parameter sweeps (project_sweeps.cpp, schema 7) ----
  // Stores a sweep (status running, created now) and its planned trials (queued, trial
  // index = position in `trial_params`, each a JSON object) in one transaction; returns its id.
  // ProjectError for an unknown graph_version or params that are not a JSON object.
  int64_t create_sweep(const SweepRecord& sweep, const std::vector<std::string>& trial_params);
  std::vector<SweepRecord> sweeps() const;  // by id
  std::vector<SweepTrial> sweep_trials(int64_t sweep) const;  // by row id; ProjectError: unknown sweep
  // The trial row runs as `run` (status running). ProjectError for an unknown trial or run.
  void start_trial(int64_t trial, int64_t run);
  // Ends a trial: status finished | pruned | stopped | failed, its objective (NaN: none) and
  // why (pruned, failed). ProjectError for an unknown trial or another status.
  void end_trial(int64_t trial, const std::string& status, double objective, const std::string& message);
  // Sweep status finished or stopped, ended now (running again: ended_at cleared).
  void set_sweep_status(int64_t sweep, const std::string& status);
  // Resuming a sweep: every trial row still 'running' whose run is not running (the process
  // died) becomes interrupted, then each interrupted or stopped (Ctrl-C) trial whose index has
  // no later row is queued again as a new row with the same index and params (the old row
  // and its run are kept). Returns the rows queued.
  int requeue_interrupted_trials(int64_t sweep);

  // ---- device comparisons (project_comparisons.cpp, schema 9) ----
  // Stores a comparison (created now); returns its id. ProjectError for an unknown
  // graph_version, batch_size < 1, or results_json that is not a JSON object with a "results" array.
  int64_t save_device_comparison(const DeviceComparisonRecord& comparison);
  std::vector<DeviceComparisonRecord> device_comparisons() const;  // by id

  // ---- per-layer profiles (project_profiles.cpp, schema 12) ----
  // Stores a profile (created now); returns its id. ProjectError naming the problem for an
  // unknown graph_version or run, an empty device or precision, batch_size < 1, steps < 0, or
  // profile_json that is not a JSON object with a "layers" array.
  int64_t add_profile(const ProfileRecord& profile);
  // Every stored profile, oldest first, with its profile_json.
  std::vector<ProfileRecord> profiles() const;
  // nullopt when there is no profile `id`.
  std::optional<ProfileRecord> profile(int64_t id) const;
  // Deletes a profile for good; ProjectError for an unknown id.
  void delete_profile(int64_t id);

  // ---- a run's fitted preprocessing (project_preprocessing.cpp, schema 10) ----
  // Stores the preprocessing fitted on run's data: a JSON object {"images": {...}} (the run
  // description images.json, engine/data/image_source.h run_images_json) or {"table": {...}}
  // (table.json, table_source.h run_table_json). ProjectError for an unknown run or text that is
  // not such an object.
  void set_run_preprocessing(int64_t run, const std::string& json);
  // The stored text, "" when the run has none (trained before schema 10, or on Fashion-MNIST or
  // texts). ProjectError for an unknown run.
  std::string run_preprocessing(int64_t run) const;

  Database& database() const { return *db_; }  // for tests and tools

 private:
  explicit Project(std::unique_ptr<Database> db);
  void require_run(int64_t run) const;
  // In a transaction; batch > 0: a mid-epoch checkpoint.
  void store_checkpoint(int64_t run, int epoch, const std::string& dir, double val_accuracy, int64_t batch = 0,
                        int64_t step = 0);
  void restore_checkpoint_files(int64_t run, int epoch, int64_t batch, const std::string& into_dir) const;
  std::string put(std::string_view bytes) override;
  std::string get(const std::string& key) const override;
  std::unique_ptr<Database> db_;
};

// Writes a run's metrics from the training thread through its own connection; rows are
// buffered and committed in one transaction every ~200 ms or 256 rows (by a background
// thread) and on flush()/destruction, so a crash loses at most the last ~200 ms.
// The writer owns the run's liveness: it stores this process's pid and host in the run
// and refreshes heartbeat_at with each commit, and at least every kHeartbeatIntervalMs
// while no rows come (a paused run); a run it finds "interrupted" becomes running again.
// All methods are thread-safe. A commit that fails (disk full ...) is reported by the
// next flush() or step() as ProjectError; the destructor never throws.
class MetricsWriter {
 public:
  static constexpr int kMaxRows = 256;
  static constexpr int kIntervalMs = 200;
  static constexpr int kHeartbeatIntervalMs = 10000;

  MetricsWriter(const std::string& project_path, int64_t run);  // ProjectError: bad file/unknown run
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void step(const StepMetric&);
  void epoch(const EpochMetric&);
  void flush();                   // commits everything buffered before it returns
  int64_t rows_committed() const;  // step + epoch rows in committed transactions

 private:
  void loop();
  void write_buffered(bool heartbeat_only = false);  // caller holds db_mutex_

  std::unique_ptr<Database> db_;
  int64_t run_;
  std::mutex db_mutex_;         // the connection; held for a whole commit
  mutable std::mutex mutex_;    // buffers and flags below
  std::condition_variable wake_;
  std::vector<StepMetric> steps_;
  std::vector<EpochMetric> epochs_;
  bool stop_ = false;
  std::string error_;           // a failed background commit, reported by the next call
  std::atomic<int64_t> committed_{0};
  int64_t last_heartbeat_ms_ = 0;  // steady clock; guarded by db_mutex_
  std::thread thread_;
};

}  // namespace kiln::projects
