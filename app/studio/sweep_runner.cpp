#include "app/studio/sweep_runner.h"

#include <QTimer>
#include <cmath>

#include "app/studio/sweep_space.h"

namespace kiln::studio {

SweepRunner::SweepRunner(projects::Project& project, SweepSettings settings, QObject* parent)
    : QObject(parent), project_(project), s_(std::move(settings)) {
  std::vector<int64_t> queued;
  for (const projects::SweepTrial& t : project_.sweep_trials(s_.sweep)) {
    if (t.status == "queued") {
      queued.push_back(t.id);
      rows_[t.id] = t;
    } else if (t.status == "finished" && t.run > 0) {
      // A trial completed before a resume is a reference for the median rule, too.
      std::vector<double> curve;
      for (const projects::EpochMetric& e : project_.epoch_metrics(t.run))
        curve.push_back(s_.maximize ? e.val_accuracy : e.val_loss);
      completed_.push_back(std::move(curve));
    }
  }
  queue_ = std::make_unique<sweep::LaneQueue>(s_.devices, queued);
  lanes_.resize(queue_->lanes());
}

SweepRunner::~SweepRunner() {
  for (Lane& l : lanes_) delete l.session;  // cancels and waits for a running job
}

void SweepRunner::start() { QTimer::singleShot(0, this, &SweepRunner::fill); }

void SweepRunner::stop() {
  stopping_ = true;
  queue_->drop_queued();
  for (Lane& l : lanes_)
    if (l.session && l.session->isRunning()) l.session->stop();
  if (queue_->idle()) fill();
}

void SweepRunner::record(const std::function<void()>& write) {
  try {
    write();
  } catch (const std::exception& e) {  // a full disk ...: the sweep goes on, the log says what was lost
    emit logMessage(QString("the sweep's rows could not be written to the project: %1").arg(QString::fromStdString(e.what())));
  }
}

double SweepRunner::best(const std::vector<double>& curve) const {
  double b = NAN;
  for (double v : curve)
    if (!std::isnan(v) && (std::isnan(b) || (s_.maximize ? v > b : v < b))) b = v;
  return b;
}

void SweepRunner::fill() {
  if (done_) return;
  bool again = false;
  for (const auto& [lane, row] : queue_->assign()) {
    if (!startTrial(lane, row)) {
      queue_->release(lane);
      again = true;  // the lane takes the next trial
    }
  }
  if (again) {
    QTimer::singleShot(0, this, &SweepRunner::fill);
    return;
  }
  if (queue_->done()) {
    done_ = true;
    const QString status = stopping_ ? "stopped" : "finished";
    record([&] { project_.set_sweep_status(s_.sweep, status.toStdString()); });
    emit finished(status);
  }
}

bool SweepRunner::startTrial(int lane, int64_t row) {
  Lane& l = lanes_[static_cast<size_t>(lane)];
  l = Lane{};
  l.trial = rows_.at(row);
  TrainingConfig config = s_.base;
  config.device = queue_->device(lane);
  graph::Graph g = s_.graph;
  auto failed = [&](const QString& why) {
    record([&] { project_.end_trial(row, "failed", NAN, why.toStdString()); });
    emit trialEnded(l.trial.trial, "failed", NAN, why);
    return false;
  };
  try {
    l.label = QString::fromStdString(sweep::apply_trial(nlohmann::json::parse(l.trial.params_json), config, g));
  } catch (const std::exception& e) {
    return failed(QString::fromStdString(plain_error(e)));
  }
  l.epochs = config.epochs;
  l.session = new TrainingSession(this);
  l.session->setStoreSettings(false);
  TrainingSession* session = l.session;
  connect(session, &TrainingSession::started, this, [this, lane](qint64 run, const QString& device) {
    Lane& x = lanes_[static_cast<size_t>(lane)];
    x.started = true;
    x.trial.run = run;
    record([&] {
      project_.start_trial(x.trial.id, run);
      project_.set_run_tags(run, {"sweep " + std::to_string(s_.sweep), "trial " + std::to_string(x.trial.trial)});
    });
    emit trialStarted(x.trial.trial, run, device, x.label);
  });
  connect(session, &TrainingSession::epochEnded, this,
          [this, lane](int epoch, double, double, double valLoss, double valAccuracy) { onEpoch(lane, epoch, valLoss, valAccuracy); });
  // Problems that do not end the run (metrics or the run's end not saved) go to the sweep's log.
  connect(session, &TrainingSession::errorMessage, this, [this, lane](const QString& m) {
    emit logMessage(QString("trial %1: %2").arg(lanes_[static_cast<size_t>(lane)].trial.trial).arg(m));
  });
  connect(session, &TrainingSession::finished, this,
          [this, lane](qint64 run, const QString& status, const QString& message) { onFinished(lane, run, status, message); });
  // A graph attribute trial trains a changed graph: the session saves it as a new version.
  const int64_t version = g == s_.graph ? s_.graphVersion : 0;
  QString error;
  if (!session->start(project_.path(), version, g, config, s_.dataset, s_.testSize, &error)) {
    delete session;
    l.session = nullptr;
    return failed(error.replace('\n', "; "));
  }
  emit logMessage(QString("trial %1 (%2) queued on lane %3 (%4)")
                      .arg(l.trial.trial)
                      .arg(l.label)
                      .arg(lane)
                      .arg(QString::fromStdString(config.device)));
  return true;
}

void SweepRunner::onEpoch(int lane, int epoch, double valLoss, double valAccuracy) {
  Lane& l = lanes_[static_cast<size_t>(lane)];
  l.curve.push_back(s_.maximize ? valAccuracy : valLoss);
  if (s_.pruneStartup <= 0 || l.pruned || epoch >= l.epochs) return;  // the last epoch ends the trial anyway
  const sweep::MedianDecision d = sweep::median_rule(completed_, l.curve, s_.maximize, s_.pruneStartup);
  if (!d.prune) return;
  l.pruned = true;
  l.pruneMessage = QString("pruned after epoch %1: best %2 %3 is worse than the median %4 of %5 finished trials")
                       .arg(epoch)
                       .arg(s_.maximize ? "val_accuracy" : "val_loss")
                       .arg(d.best, 0, 'g', 4)
                       .arg(d.median, 0, 'g', 4)
                       .arg(d.compared);
  emit logMessage(QString("trial %1: %2").arg(l.trial.trial).arg(l.pruneMessage));
  l.session->stop();
}

void SweepRunner::onFinished(int lane, qint64, const QString& status, const QString& message) {
  Lane& l = lanes_[static_cast<size_t>(lane)];
  QString trialStatus = status, why = message;
  if (status == "stopped" && l.pruned) {
    trialStatus = "pruned";
    why = l.pruneMessage;
  } else if (status == "stopped") {
    why = "stopped by the user";
  } else if (status != "finished") {
    trialStatus = "failed";
  }
  const double objective = best(l.curve);
  if (!l.started) {
    // The job ended before it recorded a run (the dataset could not be read ...).
    trialStatus = status == "stopped" ? "stopped" : "failed";
  }
  record([&] { project_.end_trial(l.trial.id, trialStatus.toStdString(), objective, why.toStdString()); });
  if (trialStatus == "finished") completed_.push_back(l.curve);
  emit trialEnded(l.trial.trial, trialStatus, objective, why);
  l.session->deleteLater();
  l.session = nullptr;
  queue_->release(lane);
  QTimer::singleShot(0, this, &SweepRunner::fill);
}

}  // namespace kiln::studio
