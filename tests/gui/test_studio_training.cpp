// A training run from the main window: metrics rows reach SQLite, the plots get the
// points, the evaluation appears, and the UI thread keeps serving its event loop while the
// run goes on (issue 3): a 10 ms QTimer keeps firing through the run. The longest gap
// between its timeouts and the UI thread's own CPU time within it (getrusage(RUSAGE_THREAD))
// are printed, not asserted: a timed bound fails on a loaded machine for no fault of the window.
#include <QAction>
#include <QElapsedTimer>
#include <QLabel>
#include <QListWidget>
#include <QTableWidget>
#include <QtTest>
#include <sys/resource.h>

#include "app/studio/main_window.h"
#include "projects/project.h"
#include "studio_test_util.h"
#include "engine/graph/json.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/layer_palette.h"
#include "widgets/graph/property_editor.h"
#include "widgets/project/runs_view.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;

class TestStudioTraining : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    KILN_QSKIP_UNLESS_DEP(test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
  }

  void trainFromTheWindowWritesMetricsAndPlots() {
    QTemporaryDir dir;
    MainWindow w;
    w.setSilent(true);
    w.show();
    const QString path = dir.filePath("t.kiln");
    QVERIFY(w.newProjectFile(path, "fashion_mnist_cnn"));
    test::quickSettings(w, 2048);
    QVERIFY2(w.trainAction()->isEnabled(), qPrintable(w.trainAction()->toolTip()));
    QTest::qWait(300);  // the window's first paint is not part of the run

    // Event-loop latency while the run goes on.
    QElapsedTimer clock;
    qint64 last = -1, maxGap = 0, maxBusy = 0;
    int ticks = 0;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(10);
    connect(&probe, &QTimer::timeout, [&] {
      const qint64 now = clock.elapsed();
      if (last >= 0) maxGap = std::max(maxGap, now - last);
      rusage ru;
      getrusage(RUSAGE_THREAD, &ru);
      const qint64 cpu = ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 + ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
      static qint64 lastCpu = cpu;
      if (last >= 0) maxBusy = std::max(maxBusy, cpu - lastCpu);
      if (last >= 0 && now - last > 30) qInfo("gap %lld ms at %lld ms (UI thread busy %lld ms of it)", now - last, now, cpu - lastCpu);
      lastCpu = cpu;
      last = now;
      ++ticks;
    });
    clock.start();
    probe.start();
    connect(w.session(), &TrainingSession::finished, [&] { qInfo("finished at %lld ms", clock.elapsed()); });
    QTest::qWait(50);
    w.trainAction()->trigger();
    QVERIFY(w.session()->isRunning());
    QVERIFY(!w.trainAction()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
    probe.stop();
    qInfo("UI event-loop latency during training: max gap %lld ms (UI thread busy at most %lld ms of a gap) over %d ticks",
          maxGap, maxBusy, ticks);
    QVERIFY2(ticks > 20, qPrintable(QString("the UI thread's event loop ran %1 times during the run").arg(ticks)));

    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
    kiln::projects::Project p = kiln::projects::Project::open(path.toStdString());
    auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
    QCOMPARE(runs[0].device, std::string("cpu"));
    const auto steps = p.step_metrics(runs[0].id);
    QCOMPARE(steps.size(), size_t(2048 / 64));
    QCOMPARE(steps.back().step, int64_t(32));
    QVERIFY(std::isfinite(steps.front().loss) && steps.front().loss > 0);
    QCOMPARE(p.epoch_metrics(runs[0].id).size(), size_t(1));
    QVERIFY(QString::fromStdString(runs[0].final_metrics_json).contains("test_accuracy"));
    QCOMPARE(p.checkpoint_epochs(runs[0].id), std::vector<int>{1});

    QCOMPARE(w.plots()->stepCount(), 32);
    QCOMPARE(w.plots()->epochCount(), 1);
    QVERIFY(w.evaluationView()->summaryText().contains("Test accuracy"));
    QVERIFY(w.trainAction()->isEnabled());
  }

  // A run of 2 epochs: a checkpoint per epoch (latest and best kept) and the evaluation
  // are stored; a new window opening the project shows the run in Runs, its curves in
  // Plots and its test results in Evaluation, as they were.
  void reopenedProjectShowsTheLastRun() {
    QTemporaryDir dir;
    const QString path = dir.filePath("r.kiln");
    int steps = 0, misclassified = 0;
    QString summary;
    {
      MainWindow w;
      w.setSilent(true);
      QVERIFY(w.newProjectFile(path, "fashion_mnist_mlp"));
      test::quickSettings(w, 512, 2);
      QVERIFY(w.startTraining());
      QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
      QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
      steps = w.plots()->stepCount();
      QCOMPARE(steps, 2 * 512 / 64);
      summary = w.evaluationView()->summaryText();
      misclassified = w.evaluationView()->misclassifiedList()->count();
      QVERIFY(misclassified > 0);
    }
    {
      kiln::projects::Project p = kiln::projects::Project::open(path.toStdString());
      const int64_t run = p.runs().back().id;
      const auto checkpoints = p.checkpoints(run);
      QVERIFY(!checkpoints.empty() && checkpoints.size() <= 2);
      QCOMPARE(checkpoints.back().epoch, 2);
      QVERIFY(checkpoints.back().latest);
      QVERIFY(p.evaluation(run));
      QCOMPARE(p.evaluation(run)->count, int64_t(256));
    }
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(path));
    QCOMPARE(w.runsView()->rowCount(), 1);
    QCOMPARE(w.runsView()->selectedRuns().size(), 1);
    QVERIFY(!w.runsView()->cellText(0, RunsModel::TestAccuracy).isEmpty());
    QCOMPARE(w.plots()->stepCount(), steps);
    QCOMPARE(w.plots()->epochCount(), 2);
    QCOMPARE(w.evaluationView()->summaryText(), summary);
    QCOMPARE(w.evaluationView()->misclassifiedList()->count(), misclassified);
    QCOMPARE(w.evaluationView()->confusionTable()->rowCount(), 10);
  }

  // A run that fails (a dataset folder without the Fashion-MNIST files) unlocks the editor too.
  void failedRunUnlocksEditing() {
    QTemporaryDir dir;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(dir.filePath("f.kiln"), "fashion_mnist_mlp"));
    test::quickSettings(w, 256);
    DatasetSettings d = w.datasetSettings();
    d.dir = dir.path().toStdString();  // exists, but holds no IDX files
    w.setDatasetSettings(d);
    QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
    QVERIFY(w.document()->isReadOnly());
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 60000);
    QVERIFY(!w.lastError().isEmpty());
    QVERIFY(!w.document()->isReadOnly());
    QVERIFY(w.canvas()->lockNote()->isHidden());
    QVERIFY(w.findChild<LayerPalette*>()->isEnabled());
  }

  void stopEndsTheRunAsStopped() {
    QTemporaryDir dir;
    MainWindow w;
    w.setSilent(true);
    const QString path = dir.filePath("s.kiln");
    QVERIFY(w.newProjectFile(path, "fashion_mnist_mlp"));
    test::quickSettings(w, 20000, 3);
    const std::string graphBefore = kiln::graph::to_json(w.document()->graph());
    QVERIFY(w.startTraining());
    // Editing is locked while the run goes on, with a visible note why.
    QVERIFY(w.document()->isReadOnly());
    QVERIFY(!w.canvas()->lockNote()->isHidden());
    QVERIFY2(w.canvas()->lockNote()->text().contains("training"), qPrintable(w.canvas()->lockNote()->text()));
    QVERIFY(!w.findChild<LayerPalette*>()->isEnabled());
    QVERIFY(!w.findChild<PropertyEditor*>()->isEnabled());
    QCOMPARE(w.canvas()->addLayer("ReLU"), kiln::graph::NodeId(-1));
    w.canvas()->selectNode(w.document()->graph().nodes().at(1).id);
    QTest::keyClick(w.canvas()->viewport(), Qt::Key_Delete);
    QTest::keyClick(w.canvas(), Qt::Key_Delete);
    QCOMPARE(kiln::graph::to_json(w.document()->graph()), graphBefore);
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->stepCount() >= 3, 60000);
    w.session()->setPaused(true);
    // The steps trained before the pause (the window may lag behind on a loaded machine) arrive
    // first: wait, in 300 ms windows, for one without a new step; then no more come.
    int held = w.plots()->stepCount();
    for (int i = 0; i < 30; ++i) {
      QTest::qWait(300);
      if (w.plots()->stepCount() == held) break;
      held = w.plots()->stepCount();
    }
    QTest::qWait(600);
    QVERIFY2(w.plots()->stepCount() <= held + 1, qPrintable(QString("%1 steps after %2").arg(w.plots()->stepCount()).arg(held)));  // at most the batch in flight
    w.session()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 60000);
    kiln::projects::Project p = kiln::projects::Project::open(path.toStdString());
    QCOMPARE(p.runs().back().status, kiln::projects::RunStatus::stopped);
    QVERIFY(!w.document()->isReadOnly());  // unlocked when the run stopped
    QVERIFY(w.canvas()->lockNote()->isHidden());
    QVERIFY(w.findChild<LayerPalette*>()->isEnabled());
    QVERIFY(w.findChild<PropertyEditor*>()->isEnabled());
    QVERIFY(w.canvas()->addLayer("ReLU") >= 0);
    QVERIFY(p.step_metrics(p.runs().back().id).size() < size_t(3 * 20000 / 64));
  }
};

QTEST_MAIN(TestStudioTraining)
#include "test_studio_training.moc"
