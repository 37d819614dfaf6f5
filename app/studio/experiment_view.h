// ExperimentView: the Studio's Experiments dock (Model > Experiments / Sweep…, issue 20 Deliver 4):
// the project's sweeps, and for the one chosen a results table (trial, run, device, status,
// objective, each parameter; sortable) and a parallel-coordinates plot (an axis per parameter
// and the objective, a line per trial coloured by the objective, pruned and failed trials grey).
// "New Sweep…" opens NewSweepDialog; its sweep is planned and stored by plan_sweep (the headless
// path's) and run by a SweepRunner on this thread's event loop: each trial is an ordinary run of
// the project (a TrainingSession on its own thread), one per device lane at a time; the rows
// follow each trial's start and end. Stop ends the running trials after their current batch.
// Resume continues a stopped or interrupted sweep (resume_sweep, as `--sweep --resume` does).
// "Apply Best" asks the window (applyBestRequested) to use the best finished trial's settings.
#pragma once
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/studio/sweep_plan.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace kiln::studio {

class NewSweepDialog;
class ParallelCoordinatesPlot;

class ExperimentView : public QWidget {
  Q_OBJECT
 public:
  enum Column { TrialCol, RunCol, DeviceCol, StatusCol, ObjectiveCol, FirstParamCol };
  static constexpr int kSortRole = Qt::UserRole + 1;  // a cell's sort key (numbers sort as numbers)

  // What the window gives a new sweep.
  struct Hooks {
    std::function<graph::Graph()> graph;        // the edited graph: the form's NODE.ATTRIBUTE names
    std::function<std::string()> device;        // the Training panel's device: checked in the form
    // At Start: the graph stored as a project version, the Training and Dataset panels' settings
    // and the test size (SweepSettings' graph, graphVersion, base, dataset, testSize); nullopt
    // with *error set when no sweep can start now (no project, a training run, a problem).
    std::function<std::optional<SweepSettings>(QString* error)> prepare;
    // At Resume: "" when a stored sweep can run now, else why not (a training run).
    std::function<QString()> blocker;
  };

  explicit ExperimentView(QWidget* parent = nullptr);
  ~ExperimentView() override;  // shutdown()

  void setHooks(Hooks hooks) { hooks_ = std::move(hooks); }
  void setDevices(std::vector<std::string> devices) { devices_ = std::move(devices); }  // the form's checkboxes
  // The open project (null: none): its sweeps listed, the newest shown. Call shutdown() first
  // when a sweep is running (the runner writes through this project).
  void setProject(projects::Project* project);
  // Stops a running sweep at once: its running trials are cancelled and end "stopped" (waits
  // for their threads), the queued ones stay queued. Before the project closes.
  void shutdown();

  // Plans, stores and starts a sweep (what the form's Start calls): "" when it started, else
  // the reason (SweepUsageError's message, no project, a sweep or a training run going on).
  QString startSweep(const SweepRequest& request, const std::vector<std::string>& devices);
  // Continues stored sweep `sweep` (Resume): its queued, stopped and interrupted trials with the
  // settings it was planned with (resume_sweep), on its own lanes. "" when it started, else the
  // reason (finished, a lane this machine lacks, a sweep or a training run going on).
  QString resumeSweep(int64_t sweep);
  NewSweepDialog* openNewSweep();  // the New Sweep form, shown (not modal to the test's event loop)
  void stop();                     // Stop: the running trials end after their batch; finished("stopped")
  bool isRunning() const { return runner_ != nullptr; }
  int64_t runningSweep() const { return running_; }
  int64_t shownSweep() const;      // the sweep chosen in the list (0: none)
  void showSweep(int64_t sweep);   // chooses it in the list
  void reload();                   // the list and the shown sweep again from the project

  QComboBox* sweepList() const { return list_; }
  QTableWidget* table() const { return table_; }
  ParallelCoordinatesPlot* plot() const { return plot_; }
  QPushButton* newButton() const { return new_; }
  QPushButton* stopButton() const { return stop_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* applyButton() const { return apply_; }
  QLabel* statusLabel() const { return status_; }
  NewSweepDialog* dialog() const { return dialog_; }  // the last form opened (null before)

 signals:
  void runningChanged(bool running);
  void trialsChanged();  // a trial started or ended: its run is in the project (Runs view)
  void logMessage(const QString& text);
  void applyBestRequested(qint64 sweep);

 private:
  void render();  // the table and the plot of the shown sweep
  void startRunner(SweepSettings settings, const QString& how);  // how: "started", "resumed (...)"
  void onFinished(const QString& status);
  void updateButtons();

  projects::Project* project_ = nullptr;
  Hooks hooks_;
  std::vector<std::string> devices_;
  class SweepRunner* runner_ = nullptr;
  int64_t running_ = 0;
  bool hasBest_ = false;
  QString shownStatus_;  // the shown sweep's stored status ("" when none is shown)
  QComboBox* list_;
  QPushButton* new_;
  QPushButton* stop_;
  QPushButton* resume_;
  QPushButton* apply_;
  QLabel* status_;
  QTableWidget* table_;
  ParallelCoordinatesPlot* plot_;
  NewSweepDialog* dialog_ = nullptr;
};

}  // namespace kiln::studio
