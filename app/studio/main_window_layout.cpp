// MainWindow: the docks — created once, arranged per screen size (applyDefaultLayout), the
// user's arrangement saved and restored per screen size (QSettings), View > Reset Layout.
#include <QDockWidget>
#include <QGuiApplication>
#include <QScreen>
#include <QScrollArea>
#include <QStatusBar>
#include <QSettings>
#include <QUndoView>
#include <algorithm>

#include "app/studio/main_window.h"
#include "engine/core/registry.h"
#include "widgets/graph/device_compare_panel.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/layer_palette.h"
#include "widgets/graph/network_analyzer.h"
#include "widgets/graph/problems_panel.h"
#include "widgets/graph/property_editor.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

QScrollArea* scrollableDockContent(QWidget* content, QWidget* parent) {
  auto* area = new QScrollArea(parent);
  area->setWidget(content);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  area->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  return area;
}

void MainWindow::createDocks() {
  auto addDock = [this](const QString& name, const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  palette_ = new LayerPalette(this);
  properties_ = new PropertyEditor(document_, this);
  problems_ = new ProblemsPanel(document_, this);
  history_ = new QUndoView(document_->undoStack(), this);
  history_->setEmptyLabel(tr("<opened>"));
  trainingPanel_ = new TrainingPanel(this);
  plots_ = new LivePlots(this);
  evaluation_ = new EvaluationView(this);
  log_ = new LogPanel(this);
  analyzer_ = new NetworkAnalyzer(document_, this);

  addDock("layers", tr("Layers"), palette_, Qt::LeftDockWidgetArea);
  addDock("history", tr("History"), history_, Qt::LeftDockWidgetArea);
  addDock("properties", tr("Properties"), properties_, Qt::RightDockWidgetArea);
  addDock("training", tr("Training"), trainingPanel_, Qt::RightDockWidgetArea);
  addDock("plots", tr("Plots"), plots_, Qt::BottomDockWidgetArea);
  addDock("evaluation", tr("Evaluation"), evaluation_, Qt::BottomDockWidgetArea);
  addDock("log", tr("Log"), log_, Qt::BottomDockWidgetArea);
  // In a scroll area: its controls and three views must not raise the bottom tabs' minimum height.
  addDock("analyzer", tr("Network Analyzer"), scrollableDockContent(analyzer_, this), Qt::BottomDockWidgetArea);
  addDock("problems", tr("Problems"), problems_, Qt::RightDockWidgetArea);
  // Model > Compare devices (issue 20): each finished comparison is stored in the open project
  // (schema 9) with the graph version it compared; loadProjectIntoUi shows the latest again.
  auto* compare = new DeviceComparePanel(document_, this);
  compare->setDevices(list_devices());
  addDock("compare", tr("Compare Devices"), scrollableDockContent(compare, this), Qt::BottomDockWidgetArea);
  connect(compare, &DeviceComparePanel::comparisonFinished, this, [this](const QString& json, int batch) {
    if (!project_) {
      statusBar()->showMessage(tr("Comparison done; save the project to keep comparisons in it"), 5000);
      return;
    }
    try {
      projects::DeviceComparisonRecord r;
      const std::optional<projects::GraphVersion> v = project_->latest_graph();
      r.graph_version = v ? v->id : 0;
      r.batch_size = batch;
      r.results_json = json.toStdString();
      project_->save_device_comparison(r);
    } catch (const std::exception& e) {
      statusBar()->showMessage(tr("The comparison was not stored: %1").arg(QString::fromUtf8(e.what())));
    }
  });
  createProjectDocks();
  createExperimentDock();
  for (QDockWidget* d : findChildren<QDockWidget*>()) d->setMinimumSize(kDockMinimum);
}

bool MainWindow::isCompactScreen(const QSize& available) { return available.height() < kCompactHeight; }

QSize MainWindow::availableScreenSize() const {
  const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
  return s ? s->availableGeometry().size() : QSize(1600, 1000);
}

void MainWindow::applyDefaultLayout(const QSize& available) {
  // Every dock is re-added so that the arrangement does not depend on the previous one.
  const bool compact = isCompactScreen(available);
  // The window defaultWindowSize() gives: all of a compact screen, else 90% (at most 1600x1000).
  const QSize window =
      compact ? available : QSize(available.width() * 9 / 10, available.height() * 9 / 10).boundedTo(QSize(1600, 1000));
  auto place = [this](const char* name, Qt::DockWidgetArea area) {
    QDockWidget* d = dock(name);
    d->setFloating(false);
    addDockWidget(area, d);
    d->show();
    return d;
  };
  QDockWidget* layers = place("layers", Qt::LeftDockWidgetArea);
  for (const char* name : {"dataset", "history"}) tabifyDockWidget(layers, place(name, Qt::LeftDockWidgetArea));
  QDockWidget* props = place("properties", Qt::RightDockWidgetArea);
  QDockWidget* training = place("training", Qt::RightDockWidgetArea);
  QDockWidget* problems = place("problems", Qt::RightDockWidgetArea);
  QDockWidget* plots = place("plots", Qt::BottomDockWidgetArea);
  for (const char* name : {"evaluation", "runs", "log", "analyzer", "compare", "experiments"}) tabifyDockWidget(plots, place(name, Qt::BottomDockWidgetArea));
  if (compact) {
    // Small screens (1280x720, 1366x768, 1920x1080 at 125%): Properties and Training share
    // the right column as tabs above a low Problems dock (its message and a row or two), and
    // the bottom tabs take 40% of the screen: enough for a 10-class confusion matrix and plots over 150 px
    // tall (at 30% the matrix showed 5 of its 10 rows at 1366x768).
    splitDockWidget(props, problems, Qt::Vertical);
    tabifyDockWidget(props, training);
    props->raise();
    resizeDocks({props, problems}, {window.height(), kCompactProblemsHeight}, Qt::Vertical);
    resizeDocks({plots}, {window.height() * 2 / 5}, Qt::Vertical);
    resizeDocks({layers, props}, {240, 320}, Qt::Horizontal);
  } else {
    splitDockWidget(props, training, Qt::Vertical);
    splitDockWidget(training, problems, Qt::Vertical);
    resizeDocks({props, training, problems}, {180, 420, 160}, Qt::Vertical);
    resizeDocks({plots}, {std::max(300, window.height() * 9 / 20)}, Qt::Vertical);  // the Runs table and its plot
    resizeDocks({layers, props}, {220, 380}, Qt::Horizontal);
  }
  layers->raise();
  plots->raise();
}

QDockWidget* MainWindow::dock(const QString& objectName) const { return findChild<QDockWidget*>(objectName); }

QString MainWindow::layoutSettingsKey() const {
  const QSize s = availableScreenSize();
  return QString("window/%1x%2/").arg(s.width()).arg(s.height());
}

void MainWindow::storeLayout() {
  QSettings settings;
  settings.setValue(layoutSettingsKey() + "geometry", saveGeometry());
  settings.setValue(layoutSettingsKey() + "state", saveState(kLayoutVersion));
}

void MainWindow::restoreLayout() {
  QSettings settings;
  restoreGeometry(settings.value(layoutSettingsKey() + "geometry").toByteArray());
  restoreState(settings.value(layoutSettingsKey() + "state").toByteArray(), kLayoutVersion);
}

void MainWindow::resetLayout() {
  applyDefaultLayout(availableScreenSize());
  for (QDockWidget* d : findChildren<QDockWidget*>()) d->show();
  dock("layers")->raise();
  dock("plots")->raise();
}

}  // namespace kiln::studio
