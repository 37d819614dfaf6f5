// SweepRunner: runs the queued trials of a sweep stored in a project (Project::create_sweep),
// each as an ordinary run of the project through a TrainingSession (the Studio's runs: curves,
// checkpoints, evaluation), one trial per device lane at a time (sweep::LaneQueue), and stops
// clearly bad trials by the median rule (sweep::median_rule) after each epoch. Every trial row
// is written as it starts and ends (Project::start_trial, end_trial), so a sweep killed midway
// keeps its finished trials and the interrupted one is marked when the project is reopened
// (Project::requeue_interrupted_trials queues it again). Runs on the caller's thread (an event loop).
#pragma once
#include <QObject>
#include <QString>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/studio/sweep_schedule.h"
#include "app/studio/training_session.h"
#include "projects/project.h"

namespace kiln::studio {

struct SweepSettings {
  int64_t sweep = 0;                  // the stored sweep
  graph::Graph graph;                 // the graph every trial starts from
  int64_t graphVersion = 0;           // its project version
  TrainingConfig base;                // settings a trial's parameters override
  DatasetSettings dataset;
  int64_t testSize = 10000;           // as TrainingSession::start
  std::vector<std::string> devices;   // one lane each ("cpu", "cuda:0"; a device may repeat)
  bool maximize = true;               // objective val_accuracy (true) or val_loss (false)
  int pruneStartup = 2;               // median rule: completed trials needed before it prunes (0: never prune)
};

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  // `project` must outlive the runner (its connection writes the trial rows).
  SweepRunner(projects::Project& project, SweepSettings settings, QObject* parent = nullptr);
  ~SweepRunner() override;
  // Starts the sweep's queued trials on the free lanes; finished() follows when none is left
  // (at once when none was queued).
  void start();
  // Stops the running trials after their current batch (their trials end "stopped") and
  // starts no more; the queued trials stay queued for a resume. finished("stopped") follows.
  void stop();

 signals:
  void trialStarted(int trial, qint64 run, const QString& device, const QString& label);
  // status finished | pruned | stopped | failed; objective NaN when the run has none.
  void trialEnded(int trial, const QString& status, double objective, const QString& message);
  void logMessage(const QString& text);
  void finished(const QString& status);  // "finished" or "stopped"

 private:
  struct Lane {
    TrainingSession* session = nullptr;
    projects::SweepTrial trial;
    QString label;
    std::vector<double> curve;  // the objective per epoch
    int epochs = 0;
    bool started = false, pruned = false;
    QString pruneMessage;
  };
  void fill();  // starts trials on the free lanes
  bool startTrial(int lane, int64_t row);
  void onEpoch(int lane, int epoch, double valLoss, double valAccuracy);
  void onFinished(int lane, qint64 run, const QString& status, const QString& message);
  double best(const std::vector<double>& curve) const;
  // Runs a write of the trial rows; a ProjectError becomes a log line (never thrown into Qt).
  void record(const std::function<void()>& write);

  projects::Project& project_;
  SweepSettings s_;
  std::unique_ptr<sweep::LaneQueue> queue_;
  std::map<int64_t, projects::SweepTrial> rows_;  // the queued trials, by row id
  std::vector<Lane> lanes_;
  std::vector<std::vector<double>> completed_;  // curves of finished trials (the median rule's reference)
  bool stopping_ = false, done_ = false;
};

}  // namespace kiln::studio
