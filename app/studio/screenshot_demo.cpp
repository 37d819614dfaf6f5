#include "app/studio/screenshot_demo.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QScreen>
#include <cstdio>
#include <functional>
#include <utility>

#include "app/studio/main_window.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_items.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio {

namespace {

bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeoutMs) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
  }
  return true;
}

void pause(int ms) {
  waitUntil([] { return false; }, ms);
}

bool shot(MainWindow& w, const QDir& dir, const QString& name) {
  w.plots()->replotNow();
  pause(300);
  const QString path = dir.filePath(name);
  const bool ok = w.grab().save(path);
  std::printf("%s %s\n", ok ? "saved" : "FAILED to save", path.toUtf8().constData());
  std::fflush(stdout);
  return ok;
}

}  // namespace

int runScreenshotDemo(const QString& dirPath) {
  QDir dir(dirPath);
  if (!dir.mkpath(".")) {
    std::fprintf(stderr, "kiln-studio: cannot create %s\n", dirPath.toUtf8().constData());
    return 1;
  }
  const QString project = dir.filePath("demo.kiln");
  for (const QString& f : {project, project + "-wal", project + "-shm"}) QFile::remove(f);

  MainWindow w;
  w.setSilent(true);
  // The window fills the screen (tests/gui/screenshots.sh sets its size), in the default
  // arrangement for that screen.
  const QScreen* screen = w.screen() ? w.screen() : QGuiApplication::primaryScreen();
  const QSize size = screen ? screen->availableGeometry().size() : QSize(1600, 1000);
  w.resetLayout();
  w.resize(size);
  w.show();
  if (!w.newProjectFile(project, "fashion_mnist_cnn")) return 1;
  pause(500);
  int failures = !shot(w, dir, "01_cnn_template.png");

  DatasetSettings d;
  d.train_size = 4000;
  d.validation_size = 1000;
  w.setDatasetSettings(d);
  w.setTestImages(2000);
  TrainingConfig c;
  c.epochs = 2;
  c.batch_size = 64;
  c.lr = 2e-3;
  w.trainingPanel()->setConfig(c);
  auto trainAndWait = [&](const QString& midShot) {
    if (!w.startTraining()) return false;
    if (!midShot.isEmpty()) {
      waitUntil([&] { return w.plots()->epochCount() >= 1 && w.plots()->stepCount() >= 90; }, 240000);
      failures += !shot(w, dir, midShot);
    }
    return waitUntil([&] { return !w.session()->isRunning(); }, 600000);
  };
  if (!trainAndWait("02_training.png")) return 1;
  failures += !shot(w, dir, "03_evaluation.png");

  c.optimizer = "sgd";
  c.lr = 0.05;
  c.scheduler = "onecycle";
  w.trainingPanel()->setConfig(c);
  if (!trainAndWait("")) return 1;
  if (QDockWidget* runs = w.dock("runs")) {
    runs->raise();
    w.selectAllRuns();
  }
  failures += !shot(w, dir, "04_runs_overlay.png");

  // The user guide's pictures of single panels, then the trained CNN exported as ONNX and
  // opened again with File > Import ONNX.
  for (const auto& [name, file] : {std::pair{"dataset", "05_dataset_panel.png"}, {"training", "06_training_panel.png"}}) {
    QDockWidget* d = w.dock(name);
    if (!d) return 1;
    d->raise();
    pause(200);
    const bool ok = d->grab().save(dir.filePath(file));
    std::printf("%s %s\n", ok ? "saved" : "FAILED to save", dir.filePath(file).toUtf8().constData());
    failures += !ok;
  }
  const QString onnx = dir.filePath("cnn.onnx");
  if (!w.exportOnnx(onnx) || !w.importOnnx(onnx)) return 1;
  pause(500);
  failures += !shot(w, dir, "07_imported_onnx.png");
  return failures == 0 ? 0 : 1;
}

int runImportScreenshot(const QString& onnx, const QString& dirPath) {
  QDir dir(dirPath);
  if (!dir.mkpath(".")) {
    std::fprintf(stderr, "kiln-studio: cannot create %s\n", dirPath.toUtf8().constData());
    return 1;
  }
  MainWindow w;
  w.setSilent(true);
  const QScreen* screen = w.screen() ? w.screen() : QGuiApplication::primaryScreen();
  w.resetLayout();
  w.resize(screen ? screen->availableGeometry().size() : QSize(1600, 1000));
  w.show();
  if (!w.importOnnx(onnx)) {
    std::fprintf(stderr, "kiln-studio: %s\n", w.lastError().toUtf8().constData());
    return 1;
  }
  pause(500);
  const QString base = QFileInfo(onnx).completeBaseName() == "model" ? QFileInfo(onnx).dir().dirName()
                                                                     : QFileInfo(onnx).completeBaseName();
  int failures = !shot(w, dir, base + ".png");
  // The Training tab in front: what it says about training this model on the dataset
  // (resnet18 on Fashion-MNIST: its input, batch and output do not fit).
  if (QDockWidget* training = w.dock("training")) {
    training->raise();
    pause(200);
    failures += !shot(w, dir, base + "_training.png");
    w.dock("properties")->raise();
  }
  w.canvas()->fitAll();
  pause(300);
  failures += !shot(w, dir, base + "_fit.png");
  // A readable detail of the canvas: 70 % zoom around the node a third of the way down.
  const auto& nodes = w.document()->graph().nodes();
  if (NodeItem* item = nodes.empty() ? nullptr : w.canvas()->nodeItem(nodes[nodes.size() / 3].id)) {
    w.canvas()->resetTransform();
    w.canvas()->scale(0.7, 0.7);
    w.canvas()->centerOn(item);
    pause(300);
    const QString path = dir.filePath(base + "_detail.png");
    const bool ok = w.canvas()->grab().save(path);
    std::printf("%s %s\n", ok ? "saved" : "FAILED to save", path.toUtf8().constData());
    failures += !ok;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace kiln::studio
