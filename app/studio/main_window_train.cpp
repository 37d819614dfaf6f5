// MainWindow: the Train menu — what blocks training, starting, pausing, stopping.
#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLocale>
#include <QPushButton>
#include <QThread>
#include <QUndoView>
#include <algorithm>
#include <optional>
#include <unistd.h>

#include "app/studio/main_window.h"
#include "widgets/graph/network_analyzer.h"

#include "engine/core/registry.h"
#include "engine/graph/fit_data.h"
#include "widgets/project/dataset_panel.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/layer_palette.h"
#include "widgets/graph/problems_panel.h"
#include "widgets/graph/property_editor.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

namespace {
// Note [Editing during training]: the run trains the graph as it was at Train; the
// document is read-only until the run ends (finished, stopped or failed), so the
// canvas, palette, property editor, history and the editing actions are off meanwhile.
void enableEditing(bool on, std::initializer_list<QWidget*> widgets, std::initializer_list<QAction*> actions) {
  const QString why = on ? QString() : QObject::tr("Editing is locked while training runs; stop the run to edit");
  for (QWidget* w : widgets) {
    w->setEnabled(on);
    w->setToolTip(why);
  }
  for (QAction* a : actions) a->setEnabled(on);
}

// Bytes a run keeps per parameter: f32 weights, gradients and Adam's two moments
// (Kingma & Ba 2015), 4 copies of 4 bytes; activations come on top.
constexpr double kTrainingBytesPerParameter = 16;

// A graph whose parameters alone cannot be trained in this machine's memory (a slip such as
// out_channels 2147483647): the reason names the node with the most parameters, so Train is
// blocked instead of the run failing to allocate. nullopt when it fits or memory is unknown.
std::optional<graph::Problem> memoryProblem(const graph::Graph& g, const graph::Analysis& a) {
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0 || a.nodes.empty()) return std::nullopt;
  const double memory = double(pages) * double(pageSize);
  const double total = double(a.total_parameters);
  if (total * kTrainingBytesPerParameter <= memory) return std::nullopt;
  auto largest = std::max_element(a.nodes.begin(), a.nodes.end(),
                                  [](const auto& x, const auto& y) { return x.second.parameters < y.second.parameters; });
  const QLocale c = QLocale::c();
  return graph::Problem{largest->first,
                        QObject::tr("%1 has %2 parameters (the graph %3): training needs %4 GB for them, more than this "
                                    "machine's %5 GB of memory; check its channel or feature counts")
                            .arg(QString::fromStdString(g.node(largest->first).name))
                            .arg(c.toString(double(largest->second.parameters), 'g', 4))
                            .arg(c.toString(total, 'g', 4))
                            .arg(c.toString(total * kTrainingBytesPerParameter / 1e9, 'f', 0))
                            .arg(c.toString(memory / 1e9, 'f', 0))
                            .toStdString()};
}
// memoryProblem's, else the whole training estimate's on the CPU (cpu_memory_problem): the
// graph's Input is the dataset's sample, so the analysis has every activation's size.
// samples: the dataset's (all splits: the largest batch there can be), 0 when not known.
std::optional<graph::Problem> memoryProblems(const graph::Graph& g, const graph::Analysis& a, const TrainingConfig& c,
                                             int64_t samples) {
  if (auto p = memoryProblem(g, a)) return p;
  try {
    if (const std::string why = cpu_memory_problem(g, a, c, resolve_device(c.device), samples); !why.empty())
      return graph::Problem{-1, why};
  } catch (const std::exception&) {  // an unknown device: the run reports it
  }
  return std::nullopt;
}
}  // namespace

void MainWindow::fitGraphToDataset() {
  const DatasetSummary& s = dataset_->summary();
  const DatasetSettings settings = dataset_->settings();
  const bool fashion = settings.is_fashion_mnist();
  if ((!fashion && (!s.error.isEmpty() || s.sample_shape.empty())) || document_->isReadOnly() ||
      document_->graph().input_nodes().size() != 1)
    return;
  graph::Graph fitted = document_->graph();
  std::vector<std::string> changes;
  try {
    changes = fashion           ? graph::fit_graph_to_data(fitted, {1, 28, 28}, settings.num_classes())
              : s.kind == "text" ? graph::fit_graph_to_text(fitted, s.sample_shape[0], s.vocab_size, s.class_names.size())
                                 : graph::fit_graph_to_data(fitted, s.sample_shape, s.regression ? 1 : s.class_names.size());
  } catch (const std::exception& e) {
    log_->info(tr("the graph was not fitted to the dataset: %1").arg(QString::fromStdString(e.what())));
    return;
  }
  if (changes.empty()) return;
  setChangedAttributes(fitted, tr("Fit the graph to the dataset"));
  for (const std::string& c : changes) log_->info(tr("fitted to the dataset: %1").arg(QString::fromStdString(c)));
}

void MainWindow::setChangedAttributes(const graph::Graph& target, const QString& text) {
  // Each changed attribute as the property editor would set it, in one undo step.
  document_->undoStack()->beginMacro(text);
  for (const graph::Node& n : target.nodes()) {
    if (!document_->graph().find(n.id)) continue;
    for (const auto& [name, value] : n.attrs) {
      auto it = document_->graph().node(n.id).attrs.find(name);
      if (it == document_->graph().node(n.id).attrs.end() || it->second == value) continue;
      document_->setAttribute(n.id, QString::fromStdString(name), value);
    }
  }
  document_->undoStack()->endMacro();
}

std::vector<graph::Problem> MainWindow::trainProblems() const {
  const DatasetSettings custom = datasetSettings();
  if (!custom.is_fashion_mnist()) {
    const DatasetSummary& s = dataset_->summary();
    std::vector<graph::Problem> out;
    if (!dataset_->isLoaded() && dataset_->errorText().isEmpty()) {
      out = training_problems(document_->graph(), document_->analysis(), trainingPanel_->config().batch_size, 0, {},
                              custom.spec());
      out.push_back({-1, tr("the dataset %1 is still being read").arg(QString::fromStdString(custom.path)).toStdString()});
    } else if (!dataset_->errorText().isEmpty()) {
      out = training_problems(document_->graph(), document_->analysis(), trainingPanel_->config().batch_size, 0, {},
                              custom.spec());
      out.push_back({-1, tr("the dataset cannot be read: %1").arg(dataset_->errorText()).toStdString()});
    } else {
      const graph::SymShape sample(s.sample_shape.begin(), s.sample_shape.end());
      out = training_problems(document_->graph(), document_->analysis(), trainingPanel_->config().batch_size,
                              s.class_names.size(), sample,
                              (custom.name == "csv"    ? "the table '"
                               : custom.name == "text" ? "the texts '"
                                                       : "the image folder '") +
                                  QFileInfo(QString::fromStdString(custom.path)).fileName().toStdString() + "'",
                              s.kind == "text" ? DType::i64 : DType::f32);
    }
    if (auto p = memoryProblems(document_->graph(), document_->analysis(), trainingPanel_->config(), s.total))
      out.push_back(*p);
    return out;
  }
  int64_t classes = kFashionMnistClasses;  // the class filter's k; invalid settings are reported below
  try {
    classes = datasetSettings().num_classes();
  } catch (const std::exception&) {
  }
  std::vector<graph::Problem> out =
      training_problems(document_->graph(), document_->analysis(), trainingPanel_->config().batch_size, classes);
  int64_t trainSize = 0;
  try {
    trainSize = datasetSettings().train_size;
  } catch (const std::exception&) {  // reported below
  }
  if (auto p = memoryProblems(document_->graph(), document_->analysis(), trainingPanel_->config(), trainSize))
    out.push_back(*p);
  try {
    const DatasetSettings d = datasetSettings();
    if (!QFileInfo(QString::fromStdString(d.dir)).isDir())
      out.push_back({-1, tr("Fashion-MNIST is not installed in %1 (Debian package dataset-fashion-mnist)")
                             .arg(QString::fromStdString(d.dir))
                             .toStdString()});
  } catch (const std::exception& e) {
    out.push_back({-1, e.what()});
  }
  return out;
}

QStringList MainWindow::blockerTexts(const std::vector<graph::Problem>& problems) const {
  const graph::Graph& g = document_->graph();
  const auto& analysis = document_->analysis().problems;
  QStringList reasons;
  for (const graph::Problem& p : problems) {
    const bool named = p.node >= 0 && g.contains(p.node) && std::find(analysis.begin(), analysis.end(), p) != analysis.end();
    reasons << QString::fromStdString(named ? g.node(p.node).name + ": " + p.message : p.message);
  }
  return reasons;
}

QStringList MainWindow::trainBlockers() const { return blockerTexts(trainProblems()); }

void MainWindow::updateTrainState() {
  const bool running = session_ && session_->isRunning();
  const bool sweeping = sweepRunning();
  const std::vector<graph::Problem> problems = trainProblems();
  const QStringList reasons = blockerTexts(problems);
  trainAction_->setEnabled(!running && !sweeping && reasons.isEmpty());
  trainAction_->setToolTip(!reasons.isEmpty() ? tr("Cannot train yet:\n\u2022 ") + reasons.join("\n\u2022 ")
                           : sweeping         ? tr("A sweep is running its trials (Experiments): stop it to train")
                                              : tr("Train the graph (F5)"));
  trainingPanel_->setStartBlockers(reasons);
  // The Problems panel lists the same reasons as the Training panel: those that are not the
  // graph analysis's own (it lists those already), e.g. an Output that is not [N, 10].
  std::vector<graph::Problem> fit;
  const auto& analysis = document_->analysis().problems;
  for (const graph::Problem& p : problems)
    if (std::find(analysis.begin(), analysis.end(), p) == analysis.end()) fit.push_back(p);
  problems_->setTrainingProblems(fit);
  pauseAction_->setEnabled(running);
  stopAction_->setEnabled(running);
  analyzer_->setMeasureAllowed(!running, tr("Training is running: measure the step time after it"));
  updatePredictAction();
}

bool MainWindow::startTraining() {
  if (session_->isRunning()) return false;
  if (sweepRunning()) {
    showError(tr("Cannot train"), tr("A sweep is running its trials (Experiments): stop it or wait until it ends."));
    return false;
  }
  const QStringList reasons = trainBlockers();
  if (!reasons.isEmpty()) {
    showError(tr("Cannot train"), tr("Cannot train yet:\n\u2022 ") + reasons.join("\n\u2022 "));
    return false;
  }
  if (!project_) {
    log_->info(tr("runs are stored in a project file: choose where to save it"));
    if (!save()) return false;
  }
  int64_t version = 0;  // 0: the session stores the graph as a new version (off the UI thread)
  try {
    auto latest = project_->latest_graph();
    if (latest && latest->graph_json == graph::to_json(document_->graph(), &project_->blobs())) version = latest->id;
  } catch (const std::exception& e) {
    showError(tr("Cannot train"), QString::fromStdString(plain_error(e)));
    return false;
  }
  prepareRunViews();
  QString error;
  if (!session_->start(project_->path(), version, document_->graph(), trainingPanel_->config(), datasetSettings(), testImages_,
                       &error)) {
    showError(tr("Cannot train"), error);
    return false;
  }
  document_->setClean();  // the run stores this graph as a version
  enterTrainingState();
  return true;
}

bool MainWindow::resumeRun(qint64 run) {
  if (!project_ || session_->isRunning() || sweepRunning()) {
    showError(tr("Cannot resume run %1").arg(run), !project_        ? tr("no project is open")
                                                   : sweepRunning() ? tr("a sweep is running its trials (Experiments)")
                                                                    : tr("a training run is already in progress"));
    return false;
  }
  prepareRunViews();
  QString error;
  if (!session_->resume(*project_, run, &error)) {
    showError(tr("Cannot resume run %1").arg(run), error);
    return false;
  }
  log_->info(tr("resuming run %1 from its newest checkpoint").arg(run));
  enterTrainingState();
  return true;
}

void MainWindow::prepareRunViews() {
  plots_->clear();
  evaluation_->clear();
  shownRun_ = 0;  // the docks follow the live run
  setEvaluationCaption(0, {});
  // Leave one core to the UI so that it stays responsive.
  session_->setThreads(std::max(1, QThread::idealThreadCount() - 1));
}

void MainWindow::enterTrainingState() {
  document_->setReadOnly(true, tr("a training run uses this graph; stop it or wait until it ends"));
  enableEditing(false, {palette_, properties_, history_},
                {undoAction_, redoAction_, pasteAction_, deleteAction_, layoutAction_});
  trainingPanel_->setState(TrainingPanel::State::Running);
  trainingPanel_->setStatusText(tr("Starting: loading the data set..."));
  if (QDockWidget* d = dock("plots")) d->raise();
  if (QDockWidget* d = dock("training")) d->raise();  // its progress, when it shares a tab (compact layout)
  updateTrainState();
}

void MainWindow::onTrainingFinished(qint64 run, const QString& status, const QString& message) {
  document_->setReadOnly(false);
  enableEditing(true, {palette_, properties_, history_}, {pasteAction_, deleteAction_, layoutAction_});
  undoAction_->setEnabled(document_->undoStack()->canUndo());
  redoAction_->setEnabled(document_->undoStack()->canRedo());
  trainingPanel_->setState(TrainingPanel::State::Idle);
  trainingPanel_->setEnded(status);
  runs_->refresh();
  if (project_ && run > 0) {
    shownRun_ = run;
    try {
      for (const auto& r : project_->runs())
        if (r.id == run) setEvaluationCaption(run, QString::fromStdString(r.name));
    } catch (const std::exception& e) {
      log_->warning(tr("cannot read the project's runs: %1").arg(QString::fromStdString(e.what())));
    }
  }
  pauseAction_->setChecked(false);
  trainingPanel_->setStatusText(status == "failed" ? tr("Run %1 failed: %2").arg(run).arg(message)
                                                   : tr("Run %1 %2.").arg(run).arg(status));
  plots_->fitToData();
  updateTrainState();
  if (status == "failed") showError(tr("Training failed"), message);
  else if (status == "finished")
    if (QDockWidget* d = dock("evaluation")) d->raise();
}

}  // namespace kiln::studio
