// Kiln Studio main window and projects: Train disabled with the reasons for an invalid
// graph; a graph whose Input does not fit the dataset is refused naming both shapes, one
// with a fixed batch naming the batch;
// save -> reopen gives the same graph JSON and the runs; bad project files give a clear
// message, and so do settings naming an unknown optimizer; window title and modified flag;
// dock layout reset.
#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QtTest>

#include "app/studio/main_window.h"
#include "app/studio/templates.h"
#include "engine/graph/json.h"
#include "projects/project.h"
#include "studio_test_util.h"
#include "widgets/graph/graph_document.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;
using kiln::graph::NodeId;

namespace {
NodeId nodeNamed(const kiln::graph::Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n.op == op) return n.id;
  return -1;
}
}  // namespace

class TestStudioProject : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("KilnTest"); }

  void templatesAreEmbedded() {
    const QStringList names = templateNames();
    QVERIFY(names.contains("fashion_mnist_cnn"));
    QVERIFY(names.contains("fashion_mnist_mlp"));
    QVERIFY(names.contains("residual_cnn"));
    QVERIFY(names.contains("image_folder_cnn"));
    QVERIFY(names.contains("table_mlp"));
    QVERIFY(names.contains("text_classifier_lstm"));
    QVERIFY(names.contains("small_transformer_classifier"));
    for (const QString& n : names) {
      kiln::graph::Graph g = kiln::graph::from_json(templateJson(n));
      const kiln::graph::Analysis a = kiln::graph::analyze(g);
      QVERIFY2(a.ok(), qPrintable(n));
      // The text templates read token ids; the Studio's training takes images and tables.
      if (n.startsWith("text_") || n.startsWith("small_transformer")) continue;
      // The templates for a user's own data start at a typical size (fitted to the data when it is chosen).
      const kiln::graph::SymShape sample = n == "table_mlp"          ? kiln::graph::SymShape{4}
                                           : n == "image_folder_cnn" ? kiln::graph::SymShape{3, 64, 64}
                                                                     : kFashionMnistImageShape;
      const int64_t classes = n == "table_mlp" ? 3 : 10;
      QVERIFY2(training_blockers(g, a, 0, classes, sample, "data").empty(), qPrintable(n));
    }
    bool threw = false;
    try {
      templateJson("nope");
    } catch (const kiln::ValueError& e) {
      threw = QString(e.what()).contains("fashion_mnist_cnn");
    }
    QVERIFY(threw);
  }

  void invalidGraphDisablesTrainWithReasons() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    if (test::haveFashionMnist()) QVERIFY2(w.trainAction()->isEnabled(), qPrintable(w.trainAction()->toolTip()));
    const NodeId out = nodeNamed(w.document()->graph(), "Output");
    QVERIFY(out >= 0);
    w.document()->removeNodes({out});
    QVERIFY(!w.trainAction()->isEnabled());
    QVERIFY(!w.trainingPanel()->startButton()->isEnabled());
    QVERIFY2(w.trainAction()->toolTip().contains("Output"), qPrintable(w.trainAction()->toolTip()));
    QVERIFY(w.trainingPanel()->startButton()->toolTip().contains("Output"));
    QVERIFY(!w.startTraining());
    w.document()->undoStack()->undo();
    if (test::haveFashionMnist()) QVERIFY(w.trainAction()->isEnabled());
  }

  void inputShapeMismatchNamesBothShapes() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    const NodeId in = nodeNamed(w.document()->graph(), "Input");
    QVERIFY(w.document()->setAttribute(in, "shape", std::vector<int64_t>{3, 32, 32}));
    const QString reasons = w.trainBlockers().join("\n");
    QVERIFY2(reasons.contains("[1, 28, 28]") && reasons.contains("[3, 32, 32]"), qPrintable(reasons));
    QVERIFY(!w.trainAction()->isEnabled());
    // The session refuses it too, before anything is recorded.
    QTemporaryDir dir;
    auto p = kiln::projects::Project::create(dir.filePath("m.kiln").toStdString());
    TrainingSession session;
    QString error;
    QVERIFY(!session.start(p.path(), 0, w.document()->graph(), TrainingConfig{}, DatasetSettings{}, 0, &error));
    QVERIFY2(error.contains("[1, 28, 28]") && error.contains("[3, 32, 32]"), qPrintable(error));
    QVERIFY(p.runs().empty());
  }

  void fixedInputBatchSaysSoNotTheShape() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    const NodeId in = nodeNamed(w.document()->graph(), "Input");
    QVERIFY(w.document()->setAttribute(in, "batch", int64_t{1}));  // an imported model's [1, 1, 28, 28]
    QString reasons = w.trainBlockers().join("\n");
    QVERIFY2(reasons.contains("fixes the batch at 1, but training takes batches of 128 images") &&
                 reasons.contains("set the Input's batch to 0 (any batch size)"),
             qPrintable(reasons));
    QVERIFY2(!reasons.contains("set the Input's shape"), qPrintable(reasons));  // the samples fit
    QVERIFY(!w.trainAction()->isEnabled());
    TrainingConfig c = w.trainingPanel()->config();
    c.batch_size = 64;
    w.trainingPanel()->setConfig(c);  // the reason follows the panel's batch size
    QVERIFY2(w.trainAction()->toolTip().contains("batches of 64 images"), qPrintable(w.trainAction()->toolTip()));
    QVERIFY(w.document()->setAttribute(in, "batch", int64_t{0}));
    reasons = w.trainBlockers().join("\n");
    QVERIFY2(!reasons.contains("batch"), qPrintable(reasons));
  }

  void saveAndReopenGivesTheSameGraphAndRuns() {
    KILN_QSKIP_UNLESS_DEP(test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir dir;
    const QString path = dir.filePath("r.kiln");
    std::string json;
    std::vector<kiln::projects::RunRecord> runs;
    {
      MainWindow w;
      w.setSilent(true);
      w.newFromTemplate("residual_cnn");
      QVERIFY(w.windowTitle().contains("[*]"));
      const NodeId first = w.document()->graph().nodes().front().id;
      w.document()->moveNodes({{first, QPointF(-120, 37)}});  // an edit: unsaved
      QVERIFY(w.isWindowModified());
      QVERIFY(w.saveAs(path));
      QVERIFY(!w.isWindowModified());
      QVERIFY(w.windowTitle().startsWith("r[*]"));
      test::quickSettings(w, 256);
      w.setTestImages(0);
      QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
      QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
      QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
      json = kiln::graph::to_json(w.document()->graph());
      runs = w.project()->runs();
      QCOMPARE(runs.size(), size_t(1));
    }
    MainWindow w2;
    w2.setSilent(true);
    QVERIFY(w2.openProject(path));
    QCOMPARE(kiln::graph::to_json(w2.document()->graph()), json);
    QVERIFY(!w2.isWindowModified());
    const auto again = w2.project()->runs();
    QCOMPARE(again.size(), runs.size());
    QCOMPARE(again[0].id, runs[0].id);
    QCOMPARE(again[0].final_metrics_json, runs[0].final_metrics_json);
    QCOMPARE(w2.trainingPanel()->config().to_json(), w2.trainingPanel()->config().to_json());
    QCOMPARE(w2.datasetSettings().train_size, int64_t(256));
  }

  void badProjectFileGivesAClearMessage() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.kiln");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a Kiln project");
    f.close();
    MainWindow w;
    w.setSilent(true);
    QVERIFY(!w.openProject(path));
    QVERIFY2(w.lastError().contains("bad.kiln"), qPrintable(w.lastError()));
    QFile g(path);
    QVERIFY(g.open(QIODevice::ReadOnly));
    QCOMPARE(g.readAll(), QByteArray("this is not a Kiln project"));  // untouched
  }

  void unknownOptimizerInAProjectGivesAClearMessage() {
    // A project written by another Kiln (or edited by hand) names an optimizer this one lacks:
    // it opens with the default settings and a message naming the setting, the value and the
    // known names (the Studio used to train such a run with RMSprop).
    QTemporaryDir dir;
    const QString path = dir.filePath("lion.kiln");
    {
      kiln::projects::Project p = createFromTemplate(path.toStdString(), "fashion_mnist_mlp");
      p.set_setting("training", R"({"optimizer":"lion","lr":0.01,"epochs":2})");
    }
    MainWindow w;
    w.setSilent(true);
    QVERIFY2(w.openProject(path), qPrintable(w.lastError()));
    for (const char* part : {"lion.kiln", "'optimizer'", "'lion'", "sgd, adam, adamw, rmsprop", "defaults"})
      QVERIFY2(w.lastError().contains(part), qPrintable(part + (": " + w.lastError())));
    QCOMPARE(QString::fromStdString(w.trainingPanel()->config().optimizer), QString("adam"));
    QCOMPARE(w.trainingPanel()->config().epochs, TrainingConfig{}.epochs);
    QVERIFY(!w.document()->graph().nodes().empty());  // the graph is there all the same
  }

  void newGivesAnEmptyGraphWithInputAndOutput() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    QAction* newAction = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->shortcut() == QKeySequence(QKeySequence::New)) newAction = a;
    QVERIFY(newAction);
    newAction->trigger();
    const auto& g = w.document()->graph();
    QCOMPARE(int(g.nodes().size()), 2);
    QVERIFY(nodeNamed(g, "Input") >= 0);
    QVERIFY(nodeNamed(g, "Output") >= 0);
    QVERIFY(!w.trainAction()->isEnabled());  // nothing connects Input to Output yet
    QVERIFY(w.project() == nullptr);
  }

  void defaultWindowSizeFitsTheScreen() {
    QSettings().remove("window");  // every screen size's saved layout
    MainWindow w;
    const QSize avail = w.screen()->availableGeometry().size();
    QVERIFY2(w.width() <= 1600 && w.height() <= 1000, qPrintable(QString("%1x%2").arg(w.width()).arg(w.height())));
    QVERIFY2(w.width() <= avail.width() && w.height() <= avail.height(),
             qPrintable(QString("%1x%2 on %3x%4").arg(w.width()).arg(w.height()).arg(avail.width()).arg(avail.height())));
    // A laptop screen (the offscreen platform's 800x600 is one) gets all of it: at 90% of
    // 1366x768 the Training form showed two fields.
    if (MainWindow::isCompactScreen(avail)) QCOMPARE(w.size(), avail);
  }

  void resetLayoutShowsEveryDock() {
    MainWindow w;
    w.show();
    for (const char* name : {"layers", "properties", "problems", "history", "training", "plots", "evaluation", "log"})
      QVERIFY2(w.dock(name), name);
    w.dock("log")->close();
    w.dock("plots")->setFloating(true);
    w.resetLayout();
    QVERIFY(w.dock("log")->isVisible() || !w.dock("log")->isHidden());
    QVERIFY(!w.dock("plots")->isFloating());
  }
};

QTEST_MAIN(TestStudioProject)
#include "test_studio_project.moc"
