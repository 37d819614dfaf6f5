// MainWindow: the Experiments dock (ExperimentView, issue 20 Deliver 4) — what a new sweep starts
// from, Apply Best, and the window's state while a sweep runs (Train refused, the Runs view
// following each trial's run).
#include <QDockWidget>
#include <QScrollArea>
#include <QStatusBar>
#include <cmath>

#include "app/studio/experiment_view.h"
#include "app/studio/main_window.h"
#include "app/studio/sweep_report.h"
#include "app/studio/sweep_space.h"
#include "engine/core/registry.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

void MainWindow::createExperimentDock() {
  experiment_ = new ExperimentView(this);
  std::vector<std::string> devices;
  for (const DeviceInfo& d : list_devices()) devices.push_back(d.device.str());
  experiment_->setDevices(devices);
  ExperimentView::Hooks hooks;
  hooks.graph = [this] { return document_->graph(); };
  hooks.device = [this] { return trainingPanel_->config().device; };
  hooks.prepare = [this](QString* error) -> std::optional<SweepSettings> {
    auto fail = [&](const QString& why) -> std::optional<SweepSettings> {
      *error = why;
      return std::nullopt;
    };
    if (!project_) return fail(tr("open or save a project first: a sweep's trials are runs stored in it"));
    if (session_->isRunning()) return fail(tr("a training run is in progress: stop it or wait until it ends"));
    if (const QStringList reasons = trainBlockers(); !reasons.isEmpty())
      return fail(tr("Cannot train yet:\n\u2022 ") + reasons.join("\n\u2022 "));
    try {
      SweepSettings s;
      s.graph = document_->graph();
      // The trials start from the edited graph: a version of the project (as Train stores it).
      const std::string json = graph::to_json(s.graph, &project_->blobs());
      const std::optional<projects::GraphVersion> latest = project_->latest_graph();
      s.graphVersion = latest && latest->graph_json == json ? latest->id : project_->save_graph(json, "swept");
      s.base = trainingPanel_->config();
      s.dataset = datasetSettings();
      s.testSize = testImages_;
      storeSettings();
      document_->setClean();
      updateTitle();
      return s;
    } catch (const std::exception& e) {
      return fail(QString::fromStdString(plain_error(e)));
    }
  };
  hooks.blocker = [this]() -> QString {
    return session_->isRunning() ? tr("a training run is in progress: stop it or wait until it ends") : QString();
  };
  experiment_->setHooks(std::move(hooks));
  auto* d = new QDockWidget(tr("Experiments"), this);
  d->setObjectName("experiments");
  d->setWidget(scrollableDockContent(experiment_, this));
  addDockWidget(Qt::BottomDockWidgetArea, d);  // arranged by applyDefaultLayout
  connect(experiment_, &ExperimentView::runningChanged, this, [this](bool running) {
    // A trial that changed a graph attribute stored its graph as the project's newest version:
    // the graph the user sees (unchanged since the sweep stored it) becomes the newest again, so
    // reopening the project opens it, not the last trial's.
    if (!running && project_ && !document_->isModified()) try {
        const std::string json = graph::to_json(document_->graph(), &project_->blobs());
        const std::optional<projects::GraphVersion> latest = project_->latest_graph();
        if (latest && latest->graph_json != json) project_->save_graph(json, "after a sweep");
      } catch (const std::exception& e) {
        log_->warning(tr("the graph was not stored after the sweep: %1").arg(QString::fromStdString(plain_error(e))));
      }
    updateTrainState();
  });
  connect(experiment_, &ExperimentView::trialsChanged, this, [this] { runs_->refresh(); });
  connect(experiment_, &ExperimentView::logMessage, this, [this](const QString& m) { log_->info(m); });
  connect(experiment_, &ExperimentView::applyBestRequested, this, [this](qint64 sweep) { applyBestTrial(sweep); });
}

bool MainWindow::sweepRunning() const { return experiment_ && experiment_->isRunning(); }

bool MainWindow::applyBestTrial(int64_t sweep) {
  const QString title = tr("Apply Best");
  if (!project_) {
    showError(title, tr("no project is open"));
    return false;
  }
  try {
    const SweepReport r = sweep_report(*project_, sweep);
    if (!r.best) {
      showError(title, tr("sweep %1 has no finished trial yet").arg(sweep));
      return false;
    }
    const projects::SweepTrial& best = r.trials[*r.best];
    // The trial's settings: the sweep's own base with its parameters (the device the user has).
    const nlohmann::json space = nlohmann::json::parse(r.sweep.space_json);
    TrainingConfig config = space.contains("training") ? TrainingConfig::from_json(space.at("training").dump())
                                                       : trainingPanel_->config();
    config.device = trainingPanel_->config().device;
    graph::Graph g = document_->graph();
    const std::string label = sweep::apply_trial(nlohmann::json::parse(best.params_json), config, g);
    if (!(g == document_->graph()) && document_->isReadOnly()) {
      showError(title, tr("the graph is locked while a run trains: apply trial %1's attributes after it").arg(best.trial));
      return false;
    }
    trainingPanel_->setConfig(config);
    project_->set_setting("training", config.to_json());
    if (!(g == document_->graph()))
      setChangedAttributes(g, tr("Apply trial %1 of sweep %2").arg(best.trial).arg(sweep));
    const QString m = tr("applied the best trial of sweep %1 (trial %2, run %3, %4 %5): %6")
                          .arg(sweep)
                          .arg(best.trial)
                          .arg(best.run)
                          .arg(QString::fromStdString(r.sweep.objective))
                          .arg(best.objective, 0, 'f', 4)
                          .arg(QString::fromStdString(label));
    log_->info(m);
    statusBar()->showMessage(m, 6000);
    if (QDockWidget* d = dock("training")) d->raise();
    updateTrainState();
    return true;
  } catch (const std::exception& e) {
    showError(title, QString::fromStdString(plain_error(e)));
    return false;
  }
}

}  // namespace kiln::studio
