#include "app/studio/training_session.h"

#include <QDir>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <QFutureWatcher>
#include <QTemporaryDir>
#include <cmath>
#include <nlohmann/json.hpp>
#include <variant>

#include "engine/core/registry.h"
#include "engine/data/fashion_mnist.h"
#include "app/studio/run_restore.h"
#include "engine/graph/json.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kiln::studio {

namespace {
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The training thread (and the kernel and data-loader threads it starts, which inherit
// it) runs at nice +10 so that the UI thread wins the CPU whenever it has work.
void lowerThisThreadsPriority() {
#ifdef __linux__
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
}
}  // namespace

TrainingSession::TrainingSession(QObject* parent) : QObject(parent) {
  qRegisterMetaType<Progress>();
  qRegisterMetaType<EvaluationResult>();
  timer_.setInterval(kPollIntervalMs);
  connect(&timer_, &QTimer::timeout, this, &TrainingSession::poll);
}

TrainingSession::~TrainingSession() {
  if (job_) {
    job_->cancel();
    thread_->wait();
    finish();
  }
  pending_.waitForFinished();  // the run's end is on disk before the session goes
}

bool TrainingSession::start(const std::string& projectPath, int64_t graphVersion, const graph::Graph& graph,
                            const TrainingConfig& config, const DatasetSettings& dataset, int64_t testSize,
                            QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (isRunning()) return fail(tr("a training run is already in progress"));
  std::vector<std::string> settingsProblems;
  int64_t classes = kFashionMnistClasses;
  const bool fashion = dataset.is_fashion_mnist();
  try {
    config.validate();
    dataset.validate();
    if (fashion) classes = dataset.num_classes();
  } catch (const std::exception& e) {
    settingsProblems.push_back(e.what());
  }
  // Another dataset's shape and classes are known once the job has read it: it checks them then.
  std::vector<std::string> blockers =
      fashion ? training_blockers(graph, graph::analyze(graph), config.batch_size, classes)
              : training_blockers(graph, graph::analyze(graph), config.batch_size, 0, graph::SymShape{}, dataset.spec());
  blockers.insert(blockers.end(), settingsProblems.begin(), settingsProblems.end());
  // A dataset folder or file that is gone is refused here, not recorded as a failed run.
  if (settingsProblems.empty())
    if (const std::string why = dataset.unavailable(); !why.empty()) blockers.push_back(why);
  // So is a Fashion-MNIST run too large for this machine's memory (other datasets' sizes are
  // known once the job has read them: it checks them then).
  if (settingsProblems.empty() && fashion) try {
      if (const std::string why = cpu_memory_problem(graph, graph::analyze(graph), config, resolve_device(config.device),
                                                     dataset.train_size);
          !why.empty())
        blockers.push_back("the graph cannot be trained on the CPU: " + why);
    } catch (const std::exception&) {  // an unknown device: the job names the devices found
    }
  if (!blockers.empty()) {
    QStringList lines;
    for (auto& b : blockers) lines << QString::fromStdString(b);
    return fail(lines.join('\n'));
  }
  // The test images asked for (Evaluation::count is how many were evaluated): a run tested
  // on a subset is told apart from full-test runs.
  const int64_t available = fashion ? classes * DatasetSettings::kTestPerClass : testSize;
  const int64_t tests =
      fashion ? std::min(testSize, dataset.test_size > 0 ? std::min(dataset.test_size, available) : available) : testSize;
  JobSpec spec;
  try {
    nlohmann::json cj = nlohmann::json::parse(config.to_json());
    cj["dataset"] = nlohmann::json::parse(dataset.to_json());
    cj["test_size"] = tests;
    if (tests < available) cj["test_seed"] = dataset.test_seed;  // which images: test_subset_indices
    spec.run_config.config_json = cj.dump();
    spec.run_config.device = config.device;
    QString name = QString("%1 lr %2, %3 epoch(s)").arg(QString::fromStdString(config.optimizer)).arg(config.lr).arg(config.epochs);
    if (!fashion) name += QString(", %1").arg(QFileInfo(QString::fromStdString(dataset.path)).fileName());
    if (fashion && !dataset.classes.empty()) name += QString(", classes %1").arg(QString::fromStdString(dataset.classes));
    if (tests < available) name += QString(", test %1").arg(tests);
    spec.run_config.name = name.toStdString();
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(plain_error(e)));
  }
  spec.graph = graph;
  spec.config = config;
  spec.dataset = dataset;
  spec.test_size = testSize;
  spec.graph_version = graphVersion;
  if (storeSettings_) spec.settings = {{"training", config.to_json()}, {"dataset", dataset.to_json()}};
  launch(std::move(spec), projectPath, tests);
  return true;
}

void TrainingSession::launch(JobSpec spec, const std::string& projectPath, int64_t tests) {
  const TrainingConfig config = spec.config;
  const bool fashion = spec.dataset.is_fashion_mnist();
  const int64_t validation = spec.dataset.validation_size;
  projectPath_ = projectPath;
  auto dir = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/kiln-studio-run-XXXXXX");
  dir->setAutoRemove(false);
  workDir_ = dir->path();

  datasetDir_ = fashion ? QString::fromStdString(spec.dataset.dir) : QString();
  spec.project_path = projectPath;
  spec.work_dir = workDir_.toStdString();
  spec.threads = threads_;
  spec.rescan = rescan_;
  job_ = std::make_unique<TrainingJob>(std::move(spec));
  TrainingJob* job = job_.get();
  thread_ = QThread::create([job] {
    lowerThisThreadsPriority();
    job->run();
  });
  thread_->setObjectName("kiln-training");
  paused_ = stopRequested_ = haveEpoch_ = false;
  run_ = 0;
  writer_.reset();
  device_ = QString::fromStdString(config.device);
  epochs_ = config.epochs;
  progress_ = Progress{};
  progress_.epochs = config.epochs;
  phases_ = std::make_unique<RunProgress>(config.epochs, fashion ? validation : 0, fashion ? tests : 0);
  lastEmit_ = 0;
  testSeen_ = 0;
  writerError_.clear();
  clock_.start();
  thread_->start();
  timer_.start();
}

bool TrainingSession::resume(const projects::Project& project, int64_t run, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (isRunning()) return fail(tr("a training run is already in progress"));
  JobSpec spec;
  std::optional<projects::ResumePoint> point;
  int64_t tests = 0;
  projects::RunRecord record;
  try {
    if (const std::string why = project.why_not_resumable(run); !why.empty()) return fail(QString::fromStdString(why));
    for (const projects::RunRecord& r : project.runs())
      if (r.id == run) record = r;
    point = project.resume_point(run);
    // The run's own settings (its config JSON is TrainingConfig's with "dataset" and "test_size"),
    // graph version and device, so that it continues with the same order and draws.
    const nlohmann::json cj = nlohmann::json::parse(record.config_json);
    spec.config = TrainingConfig::from_json(record.config_json);
    if (!record.device.empty()) spec.config.device = record.device;
    if (cj.contains("dataset")) spec.dataset = DatasetSettings::from_json(cj["dataset"].dump());
    tests = cj.value("test_size", int64_t{10000});
    spec.test_size = tests;
    std::optional<projects::GraphVersion> version;
    for (projects::GraphVersion& v : project.graph_versions())
      if (v.id == record.graph_version) version = std::move(v);
    KILN_CHECK(version, ValueError, "run ", run, "'s graph version ", record.graph_version, " is not in the project");
    spec.graph = graph::from_json(version->graph_json, &project.blobs());
    spec.graph_version = version->id;
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(plain_error(e)));
  }
  if (const std::string why = spec.dataset.unavailable(); !why.empty())  // its own data, at the same place
    return fail(tr("run %1 trains on %2; put it back there to continue the run")
                    .arg(run)
                    .arg(QString::fromStdString(why.substr(0, why.find("; restore it")))));
  spec.resume_run = run;
  launch(std::move(spec), project.path(), tests);
  if (record.status == projects::RunStatus::failed)  // Note [Continuing a failed run]
    emit logMessage(tr("run %1 failed earlier (%2); continuing it from its checkpoint")
                        .arg(run)
                        .arg(QString::fromStdString(record.message)));
  // The curves up to the checkpoint, before the steps trained again after it.
  progress_.step = point->step;
  progress_.epoch = point->epoch + (point->batch > 0 ? 1 : 0);
  QVector<double> steps, losses, lrs, times, epochs;
  try {
    for (const projects::StepMetric& m : project.step_metrics(run)) {
      if (point->step > 0 ? m.step > point->step : m.epoch > point->epoch) continue;
      steps << static_cast<double>(m.step);
      losses << m.loss;
      lrs << m.lr;
      progress_.loss = m.loss;  // the progress line shows the last step's until a new one ends
      progress_.lr = m.lr;
      times << m.time_s;
      epochs << m.epoch;
    }
    if (!steps.isEmpty()) emit stepsAdded(steps, losses, lrs, times, epochs);
    for (const projects::EpochMetric& m : project.epoch_metrics(run)) {
      if (m.epoch > point->epoch) continue;
      emit epochEnded(m.epoch, m.train_loss, m.train_accuracy, m.val_loss, m.val_accuracy);
      lastEpoch_ = m;
      haveEpoch_ = true;
    }
  } catch (const std::exception& e) {
    emit errorMessage(tr("the run's earlier metrics could not be read: %1").arg(QString::fromStdString(e.what())));
  }
  return true;
}

void TrainingSession::setPaused(bool paused) {
  if (!job_ || paused == paused_) return;
  paused_ = paused;
  job_->pause(paused);
  if (phases_) {
    phases_->setPaused(paused, static_cast<double>(clock_.elapsed()) / 1000.0);
    progress_.etaSeconds = phases_->etaSeconds(static_cast<double>(clock_.elapsed()) / 1000.0);
  }
  emit logMessage(paused ? tr("paused (after the current batch)") : tr("resumed"));
}

void TrainingSession::stop() {
  if (!job_ || stopRequested_) return;
  stopRequested_ = true;
  job_->cancel();
  emit logMessage(tr("stopping after the current batch"));
}

int64_t TrainingSession::rowsCommitted() const { return writer_ ? writer_->rows_committed() : finalRows_->load(); }

void TrainingSession::poll() {
  if (!job_) return;
  const bool done = job_->done();  // read first: every event pushed before the end is drained below
  if (progress_.totalSteps == 0) progress_.totalSteps = job_->totalSteps();  // before the first batch (a resumed test pass)
  if (run_ == 0 && job_->runId() != 0) {
    run_ = job_->runId();
    writer_ = job_->metricsWriter();
    emit started(run_, device_);
  }
  for (const std::string& m : job_->drainMessages()) emit logMessage(QString::fromStdString(m));
  std::string writeError;  // the job writes the events' metrics as it hands them over
  std::vector<train::Event> events = job_->drainEvents(&writeError);
  QVector<double> steps, losses, lrs, times, epochs;
  steps.reserve(static_cast<qsizetype>(events.size()));
  losses.reserve(static_cast<qsizetype>(events.size()));
  lrs.reserve(static_cast<qsizetype>(events.size()));
  bool progressed = false;
  const double now = static_cast<double>(clock_.elapsed()) / 1000.0;
  if (!writeError.empty() && writerError_.isEmpty()) {  // disk full, project deleted...: training goes on, the user is told once
    writerError_ = QString::fromStdString(writeError);
    emit errorMessage(tr("metrics could not be saved to the project: %1").arg(writerError_));
  }
  for (const train::Event& event : events) {
    std::visit(Overloaded{
                   [&](const train::BatchEnd& e) {
                     steps << static_cast<double>(e.step);
                     losses << e.loss;
                     lrs << e.lr;
                     times << now + job_->resumedSeconds();  // a continued run's clock goes on
                     epochs << e.epoch + 1;
                     progress_.step = e.step;
                     progress_.totalSteps = e.batches_per_epoch * epochs_;
                     progress_.epoch = e.epoch + 1;
                     progress_.loss = e.loss;
                     progress_.lr = e.lr;
                     progress_.imagesPerSecond = e.samples_per_second;
                     phases_->batchEnded(e.epoch, e.step, e.batch, e.batches_per_epoch, e.samples_per_second, now);
                     progressed = true;
                   },
                   [&](const train::EpochEnd& e) {
                     if (!steps.isEmpty()) emit stepsAdded(steps, losses, lrs, times, epochs);  // keep the order of the curves
                     for (QVector<double>* v : {&steps, &losses, &lrs, &times, &epochs}) v->clear();
                     lastEpoch_ = {e.epoch + 1, e.train_loss, e.train_accuracy, e.val_loss, e.val_accuracy, e.lr, e.seconds};
                     haveEpoch_ = true;
                     phases_->epochEnded(e.epoch, now);
                     progressed = true;
                     emit epochEnded(e.epoch + 1, e.train_loss, e.train_accuracy, e.val_loss, e.val_accuracy);
                     if (std::isnan(e.train_accuracy))  // regression (mse_loss): losses only
                       emit logMessage(tr("epoch %1/%2: train loss %3; validation loss %4 (%5 s)")
                                           .arg(e.epoch + 1)
                                           .arg(epochs_)
                                           .arg(e.train_loss, 0, 'f', 4)
                                           .arg(e.val_loss, 0, 'f', 4)
                                           .arg(e.seconds, 0, 'f', 1));
                     else
                       emit logMessage(tr("epoch %1/%2: train loss %3, accuracy %4 %; validation loss %5, accuracy %6 % (%7 s)")
                                           .arg(e.epoch + 1)
                                           .arg(epochs_)
                                           .arg(e.train_loss, 0, 'f', 4)
                                           .arg(100 * e.train_accuracy, 0, 'f', 2)
                                           .arg(e.val_loss, 0, 'f', 4)
                                           .arg(100 * e.val_accuracy, 0, 'f', 2)
                                           .arg(e.seconds, 0, 'f', 1));
                   },
                   [&](const train::CheckpointSaved&) {},
                   [&](const train::Finished& f) {
                     // Whether the step ran as a recorded CUDA graph, or why not (on the GPUs that record).
                     const std::string& dev = job_->result().device;
                     if (!f.cuda_graph.empty() && (dev.rfind("cuda", 0) == 0 || dev.rfind("hip", 0) == 0))
                       emit logMessage(tr("CUDA graph: %1").arg(QString::fromStdString(f.cuda_graph)));
                   },
               },
               event);
  }
  if (!steps.isEmpty()) emit stepsAdded(steps, losses, lrs, times, epochs);
  if (job_->testBatchStarted() > 0 && job_->testBatchStarted() != testSeen_) {
    testSeen_ = job_->testBatchStarted();
    phases_->testBatch(testSeen_, job_->testBatches(), now);
    progressed = true;
  }
  // Validation and testing send no events per batch: their ETA counts down on the clock.
  const bool evaluating = phases_->phase() == RunProgress::Phase::Validating || phases_->phase() == RunProgress::Phase::Testing;
  if (progressed || (evaluating && !paused_ && now - lastEmit_ >= kEvaluatingEmitSeconds)) {
    progress_.phase = phases_->phase();
    progress_.phaseFraction = phases_->fraction(now);
    progress_.etaSeconds = phases_->etaSeconds(now);
    lastEmit_ = now;
    emit progressChanged(progress_);
  }
  if (done) finish();
}

void TrainingSession::finish() {
  timer_.stop();
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
  std::unique_ptr<TrainingJob> job = std::move(job_);
  const JobResult& r = job->result();
  const QString status = !r.error.empty() ? "failed" : r.cancelled ? "stopped" : "finished";
  nlohmann::json m;
  m["steps"] = progress_.step;
  m["device"] = r.device;
  if (haveEpoch_) {
    m["epochs"] = lastEpoch_.epoch;
    m["train_loss"] = number(lastEpoch_.train_loss);
    m["train_accuracy"] = number(lastEpoch_.train_accuracy);
    m["val_loss"] = number(lastEpoch_.val_loss);
    m["val_accuracy"] = number(lastEpoch_.val_accuracy);
  }
  if (r.evaluated) {
    m["test_loss"] = number(r.evaluation.loss);
    m["test_accuracy"] = number(r.evaluation.accuracy);
    if (r.regression) {
      m["test_mae"] = number(r.regression->mae);
      m["test_rmse"] = number(r.regression->rmse);
      m["test_r2"] = number(r.regression->r2);
    }
    m["test_images"] = r.evaluation.count;
  }
  m["seconds"] = r.resumed_seconds + static_cast<double>(clock_.elapsed()) / 1000.0;  // a continued run's whole time
  const auto runStatus = !r.error.empty() ? projects::RunStatus::failed
                         : r.cancelled    ? projects::RunStatus::stopped
                                          : projects::RunStatus::finished;
  if (!r.error.empty()) emit errorMessage(QString::fromStdString(r.error));
  if (r.evaluated) {
    EvaluationResult shown = toEvaluationResult(r.evaluation);
    shown.imageDir = datasetDir_;  // the run's own copy of the test images
    for (const std::string& f : r.test_files) shown.imageFiles << QString::fromStdString(f);
    emit evaluated(shown);
    if (r.regression)
      emit logMessage(tr("test regression of '%1' on %2 rows: MAE %3, RMSE %4, R² %5")
                          .arg(QString::fromStdString(r.evaluation.target))
                          .arg(r.regression->count)
                          .arg(r.regression->mae, 0, 'g', 4)
                          .arg(r.regression->rmse, 0, 'g', 4)
                          .arg(r.regression->r2, 0, 'f', 3));
    else
      emit logMessage(tr("test accuracy %1 % on %2 %3")
                          .arg(100 * r.evaluation.accuracy, 0, 'f', 2)
                          .arg(r.evaluation.count)
                          .arg(!r.evaluation.texts.empty()                   ? tr("test texts")
                               : datasetDir_.isEmpty() && r.test_files.empty() ? tr("test rows")
                                                                                : tr("images")));
  }
  // The last commit of the metrics and the run's end are written off the UI thread
  // (through their own connections); finished() follows when they are on disk.
  std::shared_ptr<projects::MetricsWriter> writer(std::move(writer_));
  const std::string path = projectPath_, error = r.error, metrics = m.dump();
  const int64_t run = run_;
  const QString dir = workDir_;
  finishing_ = true;
  auto finalRows = finalRows_;
  finalRows->store(writer ? writer->rows_committed() : 0);
  pending_ = QtConcurrent::run([writer, finalRows, path, run, runStatus, error, metrics, dir]() mutable -> QString {
    QString problem;
    if (run == 0) {  // failed before the run was recorded
      QDir(dir).removeRecursively();
      return problem;
    }
    try {
      if (writer) {
        writer->flush();
        finalRows->store(writer->rows_committed());
      }
    } catch (const std::exception& e) {
      problem = QObject::tr("metrics could not be saved to the project: %1").arg(QString::fromStdString(e.what()));
    }
    writer.reset();
    try {
      projects::Project::open(path).end_run(run, runStatus, error, metrics);
    } catch (const std::exception& e) {
      problem = QObject::tr("the run's end could not be recorded: %1").arg(QString::fromStdString(e.what()));
    }
    QDir(dir).removeRecursively();
    return problem;
  });
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, run, status, error = r.error] {
    watcher->deleteLater();
    const QString problem = watcher->result();
    if (!problem.isEmpty()) emit errorMessage(problem);
    finishing_ = false;
    paused_ = false;
    if (run > 0) emit logMessage(tr("run %1 %2").arg(run).arg(status));
    emit finished(run, status, QString::fromStdString(error));
  });
  watcher->setFuture(pending_);
}

}  // namespace kiln::studio
