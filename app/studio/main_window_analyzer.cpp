// MainWindow: the Network Analyzer (widgets/graph/network_analyzer.h) — Model > Analyze
// Network shows its dock, its totals stay in the status bar, its rows and warnings select
// their node on the canvas, its per-layer profile tints the canvas's nodes (GraphCanvas::
// setNodeHeat). Measuring and profiling are disabled while a run trains (updateTrainState).
// Each finished profile is stored in the open project (schema 12) with the graph version it is
// of, and the panel lists the project's stored profiles to reopen and compare.
// Model > Compare Devices shows the device comparison dock (main_window_layout.cpp), Model >
// Experiments / Sweep… the sweeps' dock (main_window_experiment.cpp).
#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>

#include "app/studio/main_window.h"
#include "app/studio/training_job.h"
#include "engine/graph/layer_profile.h"
#include "projects/profile_record.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/network_analyzer.h"

namespace kiln::studio {

void MainWindow::createModelMenu() {
  QMenu* model = menuBar()->addMenu(tr("&Model"));
  analyzeAction_ = model->addAction(tr("&Analyze Network"), this, [this] {
    QDockWidget* d = dock("analyzer");
    d->show();
    d->raise();
  });
  analyzeAction_->setObjectName("analyzeNetwork");
  analyzeAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
  createPredict(model);
  QAction* compare = model->addAction(tr("&Compare Devices"), this, [this] {
    QDockWidget* d = dock("compare");
    d->show();
    d->raise();
  });
  compare->setObjectName("compareDevices");
  experimentsAction_ = model->addAction(tr("E&xperiments / Sweep…"), this, [this] {
    QDockWidget* d = dock("experiments");
    d->show();
    d->raise();
  });
  experimentsAction_->setObjectName("experiments");
  experimentsAction_->setStatusTip(tr("Hyper-parameter sweeps: trials of settings run as runs of the project"));
}

void MainWindow::connectAnalyzer() {
  connect(analyzer_, &NetworkAnalyzer::nodeActivated, canvas_, &GraphCanvas::selectNode);
  const LayerProfilePanel* profile = analyzer_->profilePanel();
  connect(profile, &LayerProfilePanel::heatChanged, canvas_, [this, profile] { canvas_->setNodeHeat(profile->heat()); });
  connect(profile, &LayerProfilePanel::profileMeasured, this, &MainWindow::storeProfile);
  connect(profile, &LayerProfilePanel::deleteStoredRequested, this, [this](qint64 id) {
    if (!project_) return;
    try {
      project_->delete_profile(id);
    } catch (const std::exception& e) {
      statusBar()->showMessage(tr("The profile was not deleted: %1").arg(QString::fromStdString(plain_error(e))));
    }
    showStoredProfiles();
  });
  analyzerStatus_ = new QLabel(analyzer_->summaryText(), this);
  analyzerStatus_->setObjectName("analyzerStatus");
  statusBar()->addPermanentWidget(analyzerStatus_);
  connect(analyzer_, &NetworkAnalyzer::summaryChanged, analyzerStatus_, &QLabel::setText);
}

void MainWindow::storeProfile(const graph::LayerProfile& p) {
  if (!project_) {
    statusBar()->showMessage(tr("Profile done; save the project to keep profiles in it"), 5000);
    return;
  }
  try {
    const std::optional<projects::GraphVersion> v = project_->latest_graph();
    const projects::ProfileRecord r = projects::profile_record(p, v ? v->id : 0);
    project_->add_profile(r);
  } catch (const std::exception& e) {
    statusBar()->showMessage(tr("The profile was not stored: %1").arg(QString::fromStdString(plain_error(e))));
  }
  showStoredProfiles();
}

void MainWindow::showStoredProfiles() {
  std::vector<LayerProfilePanel::StoredProfile> list;
  if (project_) {
    try {
      for (const projects::ProfileRecord& r : project_->profiles()) {
        try {
          list.push_back({r.id, QString::fromStdString(r.created_at), graph::profile_from_json(r.profile_json)});
        } catch (const std::exception& e) {
          statusBar()->showMessage(tr("Stored profile %1 cannot be read: %2").arg(r.id).arg(QString::fromUtf8(e.what())));
        }
      }
    } catch (const std::exception& e) {
      statusBar()->showMessage(tr("The stored profiles cannot be read: %1").arg(QString::fromStdString(plain_error(e))));
    }
  }
  analyzer_->profilePanel()->setStoredProfiles(list);
}

QString MainWindow::analyzerStatusText() const { return analyzerStatus_->text(); }

}  // namespace kiln::studio
