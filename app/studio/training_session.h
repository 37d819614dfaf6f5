// TrainingSession: one training run of the Studio (GUI or headless). start() records
// the run in the project (Project::begin_run) and runs a TrainingJob on a QThread; a
// QTimer on the caller's thread polls the job ~30 times a second, feeds the metrics to
// a MetricsWriter (committed every ~200 ms by its own thread) and emits the batch of
// new points as a few coalesced signals. The UI thread never waits on training.
// When the job ends the run gets status finished | stopped | failed with the message.
#pragma once
#include <QElapsedTimer>
#include <QFuture>
#include <QObject>
#include <QStringList>
#include <QThread>
#include <QTimer>
#include <QVector>
#include <atomic>
#include <memory>

#include "app/studio/run_progress.h"
#include "app/studio/training_job.h"
#include "projects/project.h"
#include "widgets/training/evaluation_view.h"

namespace kiln::studio {

class TrainingSession : public QObject {
  Q_OBJECT
 public:
  static constexpr int kPollIntervalMs = 33;  // ~30 Hz
  struct Progress {
    int64_t step = 0, totalSteps = 0;
    int epoch = 0, epochs = 0;  // epoch 1-based
    double loss = 0, lr = 0, imagesPerSecond = 0;
    // The phase (RunProgress), how far it is in [0, 1] and its ETA in seconds (NaN: unknown);
    // while validating or testing it is emitted ~4 times a second, the ETA counting down.
    RunProgress::Phase phase = RunProgress::Phase::Starting;
    double phaseFraction = 0, etaSeconds = 0;
  };

  explicit TrainingSession(QObject* parent = nullptr);
  ~TrainingSession() override;  // cancels and waits for a running job

  // Starts a run of `graph` recorded in the project at `projectPath` unless
  // training_blockers() finds problems or the settings are invalid: then returns false
  // with the reasons in `error` (one per line) and nothing is recorded; so does a dataset whose
  // folder or file is gone (DatasetSettings::unavailable). graphVersion: the
  // project's version of `graph`, or 0 to save it as a new version. The settings are
  // stored as the project's "training" and "dataset" settings. Every SQLite write happens
  // on the training thread; started() follows once the run is recorded.
  // testSize: test images evaluated at the end (0 = none), at most dataset.test_size when set;
  // the run's config JSON records the number asked for as "test_size" (and the class
  // filter in its "dataset"), its name ends with ", classes 5-9" / ", test 500" when set.
  bool start(const std::string& projectPath, int64_t graphVersion, const graph::Graph& graph,
             const TrainingConfig& config, const DatasetSettings& dataset, int64_t testSize, QString* error);
  // Continues run `run` of `project` (stopped, interrupted or failed, with a checkpoint:
  // Project::why_not_resumable) from its newest checkpoint, with the run's own graph version,
  // settings and device: the same sample order and draws, so on the CPU the same losses as a run
  // never stopped. Returns false with the reason in `error` when it cannot (the run, a dataset
  // that is gone, a graph version that is missing); the run is unchanged until the job has loaded
  // the checkpoint (TrainingJob, JobSpec::resume_run). Emits the run's stored curves up to the
  // checkpoint (stepsAdded, epochEnded) before it returns, then goes on as start() does.
  bool resume(const projects::Project& project, int64_t run, QString* error);
  void setPaused(bool paused);
  void stop();  // stops after the current batch; the run ends as "stopped"
  bool isRunning() const { return job_ != nullptr || finishing_; }
  bool isPaused() const { return paused_; }
  int64_t runId() const { return run_; }
  int64_t rowsCommitted() const;  // metric rows of this run committed to the project so far
  void setThreads(int threads) { threads_ = threads; }
  // Whether start() stores its settings in the project (headless overrides are not stored).
  void setStoreSettings(bool on) { storeSettings_ = on; }
  // Whether the next runs read an image folder again instead of the project's stored file index
  // (JobSpec::rescan; headless --rescan).
  void setRescan(bool on) { rescan_ = on; }

 signals:
  void started(qint64 run, QString device);
  // times: seconds since the run started (as stored in StepMetric::time_s); epochs: 1-based.
  void stepsAdded(const QVector<double>& steps, const QVector<double>& losses, const QVector<double>& lrs,
                  const QVector<double>& times, const QVector<double>& epochs);
  void epochEnded(int epoch, double trainLoss, double trainAccuracy, double valLoss, double valAccuracy);
  void progressChanged(const kiln::studio::TrainingSession::Progress&);
  void logMessage(const QString& text);
  void errorMessage(const QString& text);  // plain words
  void evaluated(const kiln::studio::EvaluationResult&);
  // status "finished", "stopped" or "failed"; message empty unless failed.
  void finished(qint64 run, const QString& status, const QString& message);

 private:
  void poll();
  void finish();
  // Starts `spec`'s job on the training thread and the polling (start() and resume()).
  void launch(JobSpec spec, const std::string& projectPath, int64_t tests);

  std::string projectPath_;
  QFuture<QString> pending_;  // the run's last writes (finish())
  bool finishing_ = false;
  std::unique_ptr<TrainingJob> job_;
  std::shared_ptr<projects::MetricsWriter> writer_;
  std::shared_ptr<std::atomic<int64_t>> finalRows_ = std::make_shared<std::atomic<int64_t>>(0);  // after the run
  QThread* thread_ = nullptr;
  QTimer timer_;
  QElapsedTimer clock_;
  int64_t run_ = 0;
  int epochs_ = 0;
  int threads_ = 0;
  bool storeSettings_ = true;
  bool rescan_ = false;
  bool paused_ = false, stopRequested_ = false;
  QString workDir_, device_;
  QString datasetDir_;  // the running job's Fashion-MNIST directory (EvaluationResult::imageDir)
  Progress progress_;
  std::unique_ptr<RunProgress> phases_;
  double lastEmit_ = 0;  // seconds (clock_) of the last progressChanged
  int64_t testSeen_ = 0;  // the job's testBatchStarted() at the last poll
  static constexpr double kEvaluatingEmitSeconds = 0.25;
  projects::EpochMetric lastEpoch_;
  bool haveEpoch_ = false;
  QString writerError_;
};

}  // namespace kiln::studio

Q_DECLARE_METATYPE(kiln::studio::TrainingSession::Progress)
