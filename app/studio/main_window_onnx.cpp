// MainWindow: File > Import ONNX..., Export ONNX..., Export C++... (engine/onnx).
#include <algorithm>

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QSaveFile>
#include <QStatusBar>
#include <QTemporaryDir>

#include "app/studio/main_window.h"
#include "app/studio/run_predictor.h"
#include "app/studio/training_job.h"
#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/layout.h"
#include "engine/io/checkpoint.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_items.h"
#include "widgets/training/log_panel.h"
#ifdef KILN_HAVE_ONNX
#include "engine/onnx/codegen.h"
#include "engine/onnx/export.h"
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#include "engine/onnx/run_export.h"
#endif

namespace kiln::studio {

namespace {
const char* kOnnxFilter = "ONNX models (*.onnx);;All files (*)";

// "Graph problems:\n  'fc1': ..." for every problem of the analysis (graph-level ones unnamed).
QString problemList(const graph::Graph& g, const graph::Analysis& a) {
  QString text;
  for (const graph::Problem& p : a.problems) {
    text += "\n  ";
    if (p.node >= 0 && g.contains(p.node)) text += QString("'%1': ").arg(toQString(g.node(p.node).name));
    text += toQString(p.message);
  }
  return text;
}
}  // namespace

void MainWindow::createOnnxActions(QMenu* file) {
  importOnnxAction_ = new QAction(tr("&Import ONNX..."), this);
  importOnnxAction_->setStatusTip(tr("Open an ONNX model (.onnx) as a graph on the canvas"));
  exportOnnxAction_ = new QAction(tr("&Export ONNX..."), this);
  exportOnnxAction_->setStatusTip(tr("Write the graph as an ONNX model (opset 17), checked by libonnx"));
  exportCppAction_ = new QAction(tr("Export &C++..."), this);
  exportCppAction_->setStatusTip(tr("Write the graph as C++ source, its weights and a CMakeLists.txt into a folder"));
  exportPreprocessingAction_ = new QAction(tr("Export with the Run's &Preprocessing"), this);
  exportPreprocessingAction_->setCheckable(true);
  exportPreprocessingAction_->setChecked(true);
  exportPreprocessingAction_->setStatusTip(tr("Export ONNX of a trained run takes raw data: 8-bit images of any size "
                                              "(resized, cropped, normalized) or a table's columns (standardized, one-hot); "
                                              "Export C++ adds a predict program reading image files or a CSV"));
  for (QAction* a : {importOnnxAction_, exportOnnxAction_, exportPreprocessingAction_, exportCppAction_}) file->addAction(a);
  file->addSeparator();
#ifdef KILN_HAVE_ONNX
  onnx::register_onnx_schemas();  // graphs with imported nodes open from projects too
  connect(importOnnxAction_, &QAction::triggered, this, [this] {
    const QString path = choosePath(tr("Import ONNX Model"), tr(kOnnxFilter), PathKind::OpenFile);
    if (!path.isEmpty()) importOnnx(path);
  });
  connect(exportOnnxAction_, &QAction::triggered, this, [this] {
    if (refuseExport(tr("Cannot export ONNX"))) return;  // before asking for a file name
    QString path = choosePath(tr("Export ONNX Model"), tr(kOnnxFilter), PathKind::SaveFile);
    if (path.isEmpty()) return;
    if (!path.endsWith(".onnx", Qt::CaseInsensitive)) path += ".onnx";
    exportOnnx(path);
  });
  connect(exportCppAction_, &QAction::triggered, this, [this] {
    if (refuseExport(tr("Cannot export C++"))) return;
    const QString dir = choosePath(tr("Export C++ into Folder"), QString(), PathKind::Directory);
    if (!dir.isEmpty()) exportCpp(dir);
  });
#else
  for (QAction* a : {importOnnxAction_, exportOnnxAction_, exportPreprocessingAction_, exportCppAction_}) {
    a->setEnabled(false);
    a->setToolTip(tr("This Kiln Studio was built without ONNX support (libonnx was not found)"));
  }
#endif
}

QString MainWindow::choosePath(const QString& title, const QString& filter, PathKind kind) {
  if (pathChooser_) return pathChooser_(title, filter, kind);
  switch (kind) {
    case PathKind::OpenFile: return QFileDialog::getOpenFileName(this, title, dialogDirectory(), filter);
    case PathKind::SaveFile:
      return QFileDialog::getSaveFileName(this, title, QDir(dialogDirectory()).filePath(exportName() + ".onnx"), filter);
    case PathKind::Directory: {
      // A folder that does not exist yet is fine (exportCpp creates it): a save dialog
      // suggesting "<name>_cpp" beside the project.
      QFileDialog dialog(this, title, QDir(dialogDirectory()).filePath(exportName() + "_cpp"));
      dialog.setAcceptMode(QFileDialog::AcceptSave);
      dialog.setFileMode(QFileDialog::AnyFile);
      dialog.setOption(QFileDialog::ShowDirsOnly);
      dialog.setLabelText(QFileDialog::Accept, tr("Export"));
      return dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty() ? dialog.selectedFiles().first()
                                                                                      : QString();
    }
  }
  return QString();
}

bool MainWindow::refuseExport(const QString& title) {
  if (document_->analysis().ok()) return false;
  showError(title, tr("The graph has problems, so it cannot be exported:%1")
                       .arg(problemList(document_->graph(), document_->analysis())));
  return true;
}

nn::StateDict MainWindow::exportState(const graph::Graph& g, QString* source, int64_t* run_id) const {
  if (run_id) *run_id = 0;
  graph::GraphModule module(g);
  nn::StateDict state = module.state_dict();
  auto find = [](const nn::StateDict& d, const std::string& key) {
    return std::find_if(d.begin(), d.end(), [&](const auto& kv) { return kv.first == key; });
  };
  // A trained model: the newest run with a checkpoint whose parameters all fit this graph.
  if (project_) {
    const std::vector<projects::RunRecord> runs = project_->runs();
    for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
      const std::vector<int> epochs = project_->checkpoint_epochs(run->id);
      if (epochs.empty()) continue;
      const int epoch = *std::max_element(epochs.begin(), epochs.end());
      QTemporaryDir dir;
      if (!dir.isValid()) break;
      project_->restore_checkpoint(run->id, epoch, toStd(dir.path()));
      const nn::StateDict trained = io::load_checkpoint(toStd(dir.path())).model;
      const bool fits = trained.size() == state.size() && std::all_of(state.begin(), state.end(), [&](const auto& kv) {
        auto it = find(trained, kv.first);
        return it != trained.end() && it->second.shape() == kv.second.shape() && it->second.dtype() == kv.second.dtype();
      });
      if (!fits) continue;
      *source = tr("the weights of run %1 (epoch %2)").arg(run->id).arg(epoch);
      if (run_id) *run_id = run->id;
      return trained;
    }
  }
  *source = importedState_.empty() ? tr("the layers' initialization (untrained)") : tr("the imported weights");
  for (auto& [key, value] : state) {
    auto it = find(importedState_, key);
    if (it != importedState_.end() && it->second.shape() == value.shape() && it->second.dtype() == value.dtype())
      value = it->second;
    else if (key.size() > 6 && key.ends_with(".value"))  // an onnx.Initializer: its values came from the file
      throw ValueError("the weights of imported node '" + key.substr(0, key.size() - 6) +
                       "' are not in this session: import the .onnx file again to export it");
  }
  return state;
}

#ifdef KILN_HAVE_ONNX

std::shared_ptr<RunPredictor> MainWindow::exportPredictor(int64_t run) const {
  if (run <= 0 || !exportPreprocessingAction_->isChecked()) return nullptr;
  try {
    return RunPredictor::load(project_->path(), run);
  } catch (const std::exception& e) {  // a text run, a dataset that is gone: the network alone
    log_->warning(tr("exporting without run %1's preprocessing: %2").arg(run).arg(QString::fromStdString(plain_error(e))));
    return nullptr;
  }
}

std::string MainWindow::withRunPreprocessing(const std::string& bytes, int64_t run, QString* source) const {
  const std::shared_ptr<RunPredictor> predictor = exportPredictor(run);
  if (!predictor) return bytes;
  onnx::RunPreprocessing p;
  p.image = predictor->imageRun();
  p.table = predictor->tableSchema();
  p.classes = predictor->classes();
  p.regression = predictor->isRegression();
  *source += p.image ? tr(" and its preprocessing (input: uint8 images [N, H, W, C])")
                     : tr(" and its preprocessing (one input per column)");
  return onnx::with_preprocessing(bytes, p);
}

bool MainWindow::importOnnx(const QString& path) {
  if (session_->isRunning()) {
    showError(tr("Training is running"), tr("Stop the training run before importing a model."));
    return false;
  }
  if (sweepRunning()) {
    showError(tr("A sweep is running"), tr("Stop the sweep (Experiments) before importing a model."));
    return false;
  }
  if (QFileInfo(path).isDir()) {
    showError(tr("Cannot import ONNX"), tr("%1 is a directory, not an ONNX model file").arg(path));
    return false;
  }
  if (!maybeSave()) return false;
  try {
    onnx::Model model = onnx::load_model(toStd(path));
    onnx::ImportedGraph imported = onnx::import_graph(model);
    if (imported.graph.name.empty()) imported.graph.name = toStd(QFileInfo(path).completeBaseName());
    graph::auto_layout(imported.graph, canvasLayoutOptions());
    purgeDeletedRuns();
    project_.reset();
    importedState_ = std::move(imported.state_dict);
    document_->setGraph(imported.graph);
    documentName_ = tr("Untitled (%1)").arg(QFileInfo(path).fileName());
    loadProjectIntoUi();
    importedFrom_ = QFileInfo(path).absoluteFilePath();
    canvas_->fitReadable();
    log_->info(tr("imported %1: opset %2, %3 nodes, %4 parameters; Save stores it in a project file")
                   .arg(path)
                   .arg(model.opset())
                   .arg(imported.graph.nodes().size())
                   .arg(model.parameter_count()));
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot import ONNX"), tr("%1: %2").arg(path, QString::fromStdString(plain_error(e))));
    return false;
  }
}

bool MainWindow::exportOnnx(const QString& path) {
  const graph::Graph& g = document_->graph();
  if (!document_->analysis().ok()) {
    showError(tr("Cannot export ONNX"),
              tr("The graph has problems, so it cannot be exported:%1").arg(problemList(g, document_->analysis())));
    return false;
  }
  if (QFileInfo(path).isDir()) {
    showError(tr("Cannot export ONNX"), tr("%1 is a directory; choose a file name ending in .onnx").arg(path));
    return false;
  }
  try {
    QString source;
    onnx::ExportOptions options;
    options.graph_name = toStd(exportName());
    int64_t run = 0;
    std::string bytes = onnx::export_model(g, exportState(g, &source, &run), options);
    bytes = withRunPreprocessing(bytes, run, &source);
    // libonnx 1.12 checks opsets up to 17 (a model imported at a later opset exports at that one).
    if (onnx::parse_model(bytes, "", toStd(path)).opset() <= 17) onnx::check_model_bytes(bytes);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes.data(), static_cast<qint64>(bytes.size())) < 0 ||
        !file.commit())
      throw IoError(toStd(path) + ": cannot write: " + toStd(file.errorString()));
    if (project_) project_->add_export("onnx", toStd(QFileInfo(path).absoluteFilePath()));
    log_->info(tr("exported ONNX to %1 (%2 bytes) with %3").arg(path).arg(bytes.size()).arg(source));
    statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot export ONNX"), tr("%1: %2").arg(path, QString::fromStdString(plain_error(e))));
    return false;
  }
}

bool MainWindow::exportCpp(const QString& dir) {
  const graph::Graph& g = document_->graph();
  if (!document_->analysis().ok()) {
    showError(tr("Cannot export C++"),
              tr("The graph has problems, so it cannot be exported:%1").arg(problemList(g, document_->analysis())));
    return false;
  }
  if (QFileInfo(dir).exists() && !QFileInfo(dir).isDir()) {
    showError(tr("Cannot export C++"), tr("%1 is a file, not a folder").arg(dir));
    return false;
  }
  if (!QDir().mkpath(dir)) {
    showError(tr("Cannot export C++"), tr("%1: cannot create the folder").arg(dir));
    return false;
  }
  try {
    QString source;
    onnx::ExportOptions options;
    options.graph_name = toStd(exportName());  // the generated files: <project>.h / .cpp
    int64_t run = 0;
    const std::string bytes = onnx::export_model(g, exportState(g, &source, &run), options);
    const onnx::Model model = onnx::parse_model(bytes, "", toStd(dir));
    // A trained run's preprocessing goes into a predict program on raw images or CSV rows.
    onnx::CodegenOptions codegen;
    const std::shared_ptr<RunPredictor> predictor = exportPredictor(run);
    if (predictor) {
      codegen.predict.image = predictor->imageRun();
      codegen.predict.table = predictor->tableSchema();
      codegen.predict.table_config = predictor->tableConfig();
      codegen.predict.classes = predictor->classes();
      codegen.predict.regression = predictor->isRegression();
      source += tr(" and a predict program with its preprocessing (%1)")
                    .arg(codegen.predict.image ? tr("images.json") : tr("table.json"));
    }
    const std::vector<std::string> files = onnx::generate_cpp(model, toStd(dir), codegen);
    if (project_) project_->add_export("cpp", toStd(QFileInfo(dir).absoluteFilePath()));
    log_->info(tr("exported C++ to %1 (%2 files, %3; build with cmake -S %1 -B %1/build)")
                   .arg(dir)
                   .arg(files.size())
                   .arg(source));
    statusBar()->showMessage(tr("Exported C++ to %1").arg(dir), 4000);
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot export C++"), tr("%1: %2").arg(dir, QString::fromStdString(plain_error(e))));
    return false;
  }
}

#else

bool MainWindow::importOnnx(const QString&) {
  showError(tr("Cannot import ONNX"), tr("This Kiln Studio was built without ONNX support."));
  return false;
}
bool MainWindow::exportOnnx(const QString&) {
  showError(tr("Cannot export ONNX"), tr("This Kiln Studio was built without ONNX support."));
  return false;
}
bool MainWindow::exportCpp(const QString&) {
  showError(tr("Cannot export C++"), tr("This Kiln Studio was built without ONNX support."));
  return false;
}

#endif

}  // namespace kiln::studio
