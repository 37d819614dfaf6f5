// MainWindow: the File menu — templates, open, save, save as, recent files, autosave.
#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QFile>
#include <QStandardPaths>
#include <QStatusBar>

#include "app/studio/experiment_view.h"
#include "app/studio/main_window.h"
#include "app/studio/run_restore.h"
#include "app/studio/templates.h"
#include "engine/graph/json.h"
#include "projects/index_store.h"
#include "widgets/graph/device_compare_panel.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/project/dataset_panel.h"
#include "widgets/project/runs_view.h"
#include "widgets/graph/graph_document.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

namespace {
constexpr int kMaxRecent = 8;
const char* kFilter = "Kiln projects (*.kiln);;All files (*)";
QString withSuffix(QString path) { return path.endsWith(".kiln") ? path : path + ".kiln"; }
}  // namespace

void MainWindow::createProjectDocks() {
  dataset_ = new DatasetPanel(this);
  runs_ = new RunsView(nullptr, this);
  auto* data = new QDockWidget(tr("Dataset"), this);
  data->setObjectName("dataset");
  data->setWidget(scrollableDockContent(dataset_, this));
  addDockWidget(Qt::LeftDockWidgetArea, data);
  auto* runs = new QDockWidget(tr("Runs"), this);
  runs->setObjectName("runs");
  runs->setWidget(scrollableDockContent(runs_, this));
  addDockWidget(Qt::BottomDockWidgetArea, runs);  // arranged by applyDefaultLayout
  connect(dataset_, &DatasetPanel::settingsChanged, this, [this] { updateTrainState(); });
  connect(dataset_, &DatasetPanel::chosen, this, [this] { fitPending_ = true; });
  connect(dataset_, &DatasetPanel::loaded, this, [this] {
    if (std::exchange(fitPending_, false)) fitGraphToDataset();
    updateTrainState();
  });
  connect(runs_, &RunsView::message, this, [this](const QString& m) { log_->info(m); });
  connectRuns();
}

void MainWindow::selectAllRuns() {
  QList<int64_t> ids;
  if (project_)
    for (const auto& r : project_->runs()) ids << r.id;
  runs_->selectRuns(ids);
}

void MainWindow::connectFileActions() {
  connect(openAction_, &QAction::triggered, this, [this] {
    if (!maybeSave()) return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Project"), dialogDirectory(), tr(kFilter));
    if (!path.isEmpty()) openProject(path);
  });
  connect(saveAction_, &QAction::triggered, this, &MainWindow::save);
  connect(saveAsAction_, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save Project As"),
                                                      QDir(dialogDirectory()).filePath(exportName() + ".kiln"), tr(kFilter));
    if (!path.isEmpty()) saveAs(withSuffix(path));
  });
}

void MainWindow::updateTitle() {
  const QString name = project_ ? QFileInfo(QString::fromStdString(project_->path())).completeBaseName() : documentName_;
  setWindowTitle(QString("%1[*] \u2014 Kiln Studio").arg(name));
  setWindowModified(document_->isModified());
}

void MainWindow::newFromTemplate(const QString& name) {
  if (session_->isRunning()) return showError(tr("Training is running"), tr("Stop the training run first."));
  if (sweepRunning()) return showError(tr("A sweep is running"), tr("Stop the sweep first (Experiments)."));
  if (!maybeSave()) return;
  try {
    graph::Graph g = graph::from_json(templateJson(name));
    purgeDeletedRuns();
    project_.reset();
    document_->setGraph(g);
    documentName_ = tr("Untitled (%1)").arg(templateTitle(name));
    setDatasetSettings(DatasetSettings{});
    trainingPanel_->setConfig(TrainingConfig{});
    loadProjectIntoUi();
    canvas_->fitReadable();
    log_->info(tr("new graph from the template %1; Save stores it in a project file").arg(templateTitle(name)));
  } catch (const std::exception& e) {
    showError(tr("New from template"), QString::fromStdString(plain_error(e)));
  }
}

bool MainWindow::newProjectFile(const QString& path, const QString& templateName) {
  try {
    createFromTemplate(path.toStdString(), templateName);
  } catch (const std::exception& e) {
    showError(tr("New project"), QString::fromStdString(plain_error(e)));
    return false;
  }
  return openProject(path);
}

bool MainWindow::openProject(const QString& path) {
  if (session_->isRunning()) {
    showError(tr("Training is running"), tr("Stop the training run before opening another project."));
    return false;
  }
  if (sweepRunning()) {
    showError(tr("A sweep is running"), tr("Stop the sweep (Experiments) before opening another project."));
    return false;
  }
  try {
    projects::Project p = projects::Project::open(path.toStdString());
    graph::Graph g;
    if (auto v = p.latest_graph()) g = graph::from_json(v->graph_json, &p.blobs());
    // Stored settings Kiln cannot use (an optimizer it does not know, a wrong type) do not
    // keep the project closed: the panels show the defaults and the message says which.
    TrainingConfig training;
    DatasetSettings dataset;
    QStringList unusable;
    try {
      if (auto s = p.setting("training")) training = TrainingConfig::from_json(*s);
    } catch (const std::exception& e) {
      unusable << QString::fromStdString(e.what());
    }
    try {
      if (auto s = p.setting("dataset")) dataset = DatasetSettings::from_json(*s);
    } catch (const std::exception& e) {
      unusable << QString::fromStdString(e.what());
    }
    std::optional<std::string> autosaved = p.autosave_if_newer();
    purgeDeletedRuns();  // of the project being closed
    project_.emplace(std::move(p));
    useProjectIndexStore();  // before the dataset is read
    document_->setGraph(g);
    dataset_->setBaseDirectory(QFileInfo(path).absolutePath());
    fitPending_ = false;
    setDatasetSettings(dataset);
    trainingPanel_->setConfig(training);
    if (autosaved) {
      const bool restore = !silent_ && QMessageBox::question(this, tr("Restore autosave?"),
                                                             tr("%1 has unsaved changes from an earlier session "
                                                                "(autosaved). Restore them?")
                                                                 .arg(QFileInfo(path).fileName())) == QMessageBox::Yes;
      if (restore) {
        document_->setGraph(graph::from_json(*autosaved, &project_->blobs()));
        document_->undoStack()->resetClean();  // restored changes are unsaved
        log_->info(tr("restored the autosaved graph; Save keeps it"));
      }
    }
    loadProjectIntoUi();
    canvas_->fitReadable();
    if (!unusable.isEmpty())
      showError(tr("Project settings"), tr("%1's stored settings cannot be used (%2); the panels show the defaults, "
                                           "which Save or the next training run stores")
                                            .arg(QFileInfo(path).fileName(), unusable.join("; ")));
    addRecent(QFileInfo(path).absoluteFilePath());
    log_->info(tr("opened %1 (%2 graph version(s), %3 run(s))")
                   .arg(path)
                   .arg(project_->graph_versions().size())
                   .arg(runs_->model()->rowCount()));
    // The newest run that a kill, a Stop or a failure left unfinished, with where Resume Run continues it.
    const std::vector<projects::RunRecord> runs = project_->runs();
    for (auto r = runs.rbegin(); r != runs.rend(); ++r)
      if (project_->why_not_resumable(r->id).empty()) {
        const auto point = project_->resume_point(r->id);
        log_->info(tr("run %1 (%2) was %3 at its checkpoint after %4: the Runs view's Resume Run continues it")
                       .arg(r->id)
                       .arg(QString::fromStdString(r->name))
                       .arg(r->status == projects::RunStatus::stopped  ? tr("stopped")
                            : r->status == projects::RunStatus::failed ? tr("failed (%1)").arg(QString::fromStdString(r->message))
                                                                       : tr("interrupted"))
                       .arg(point->batch > 0 ? tr("batch %1 of epoch %2").arg(point->batch).arg(point->epoch + 1)
                                             : tr("epoch %1").arg(point->epoch)));
        break;
      }
    {
      const QFileInfo file(path), dir(QFileInfo(path).absolutePath());
      if (!file.isWritable() || !dir.isWritable()) {
        const QString m = tr("%1 is read-only: use Save As to keep changes").arg(path);
        log_->warning(m);
        statusBar()->showMessage(m);
      }
    }
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot open project"), QString::fromStdString(plain_error(e)));
    return false;
  }
}

QString MainWindow::dialogDirectory() const {
  if (project_) return QFileInfo(QString::fromStdString(project_->path())).absolutePath();
  if (!importedFrom_.isEmpty()) return QFileInfo(importedFrom_).absolutePath();
  return QDir::homePath();
}

QString MainWindow::exportName() const {
  if (project_) return QFileInfo(QString::fromStdString(project_->path())).completeBaseName();
  if (!importedFrom_.isEmpty()) return QFileInfo(importedFrom_).completeBaseName();
  return documentName_;
}

void MainWindow::useProjectIndexStore() {
  dataset_->setIndexStore(project_ ? std::make_shared<projects::ProjectIndexStore>(project_->path()) : nullptr);
}

void MainWindow::loadProjectIntoUi() {
  importedFrom_.clear();  // importOnnx sets it again after this
  useProjectIndexStore();
  runs_->setProject(project_ ? &*project_ : nullptr);
  experiment_->setProject(project_ ? &*project_ : nullptr);
  plots_->clear();
  evaluation_->clear();
  trainingPanel_->clearProgress();  // no "Done" of the previous project's run
  showLatestResults();  // a stored run as it ended: its curves, its evaluation, selected in Runs
  if (auto* compare = findChild<DeviceComparePanel*>()) {  // the latest stored device comparison
    compare->clear();
    const std::vector<projects::DeviceComparisonRecord> c =
        project_ ? project_->device_comparisons() : std::vector<projects::DeviceComparisonRecord>{};
    if (!c.empty()) compare->showDocument(QString::fromStdString(c.back().results_json));
  }
  showStoredProfiles();  // the profile panel's Stored lists
  updateTitle();
  updateTrainState();
}

void MainWindow::storeSettings() {
  if (!project_) return;
  project_->set_setting("training", trainingPanel_->config().to_json());
  project_->set_setting("dataset", datasetSettings().to_json());
}

DatasetSettings MainWindow::datasetSettings() const { return dataset_->settings(); }

void MainWindow::setDatasetSettings(const DatasetSettings& d) {
  dataset_->setSettings(d);
  updateTrainState();
}

bool MainWindow::save() {
  if (!project_) {
    const QString path = silent_ ? QString()
                                 : QFileDialog::getSaveFileName(this, tr("Save Project"), QDir(dialogDirectory()).filePath(exportName() + ".kiln"),
                                                              tr(kFilter));
    if (path.isEmpty()) return false;
    return saveAs(withSuffix(path));
  }
  try {
    const std::string json = graph::to_json(document_->graph(), &project_->blobs());
    auto latest = project_->latest_graph();
    if (!latest || latest->graph_json != json) project_->save_graph(json, "saved");
    storeSettings();
    document_->setClean();
    updateTitle();
    statusBar()->showMessage(tr("Saved %1").arg(QString::fromStdString(project_->path())), 4000);
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot save"), QString::fromStdString(plain_error(e)));
    return false;
  }
}

bool MainWindow::saveAs(const QString& path) {
  if (session_->isRunning()) {
    showError(tr("Training is running"), tr("Stop the training run before saving under another name."));
    return false;
  }
  if (sweepRunning()) {
    showError(tr("A sweep is running"), tr("Stop the sweep (Experiments) before saving under another name."));
    return false;
  }
  try {
    if (project_) {
      project_->save_as(path.toStdString());
      runs_->setProject(&*project_);
    } else {
      // The file dialog asked before replacing an existing file.
      for (const QString& f : {path, path + "-wal", path + "-shm"}) QFile::remove(f);
      project_.emplace(projects::Project::create(path.toStdString()));
      runs_->setProject(&*project_);
    }
    useProjectIndexStore();
    addRecent(QFileInfo(path).absoluteFilePath());
  } catch (const std::exception& e) {
    showError(tr("Cannot save"), QString::fromStdString(plain_error(e)));
    return false;
  }
  return save();
}

bool MainWindow::maybeSave() {
  if (!document_->isModified()) return true;
  if (silent_) return true;
  const auto answer = QMessageBox::warning(this, tr("Unsaved changes"),
                                           tr("The graph has unsaved changes. Save them?"),
                                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

void MainWindow::autosave() {
  if (!project_ || !document_->isModified()) return;
  try {
    project_->autosave(graph::to_json(document_->graph(), &project_->blobs()));
    statusBar()->showMessage(tr("Autosaved"), 2000);
  } catch (const std::exception& e) {
    log_->warning(tr("autosave failed: %1").arg(QString::fromStdString(e.what())));
  }
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentFiles").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentFiles", recent);
  updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("recentFiles").toStringList();
  for (const QString& path : recent) {
    QAction* a = recentMenu_->addAction(QFileInfo(path).fileName());
    a->setToolTip(path);
    connect(a, &QAction::triggered, this, [this, path] {
      if (maybeSave()) openProject(path);
    });
  }
  recentMenu_->setEnabled(!recent.isEmpty());
}

}  // namespace kiln::studio
