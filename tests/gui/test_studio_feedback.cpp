// What Kiln Studio tells the user (issue 15, findings 5, 7 and 10): a Linear fed an image
// batch (rank 4) is warned about in the Problems panel, a sequence (rank 3) is not; the
// Problems panel lists what blocks training as the Training panel does (an Output that is
// not [N, 10]); progress names its phase (training / validating / testing) with that
// phase's ETA, and a pause freezes the ETA; a corrupt project leaves no -wal / -shm files.
#include <QDir>
#include <cmath>
#include <QFile>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "app/studio/main_window.h"
#include "app/studio/run_progress.h"
#include "engine/graph/json.h"
#include "studio_test_util.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_warnings.h"
#include "widgets/graph/problems_panel.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;
using kiln::graph::NodeId;

namespace {

NodeId nodeNamed(const kiln::graph::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

// "node: message" of every row of the Problems panel.
QStringList rows(const ProblemsPanel& panel) {
  QStringList out;
  for (int i = 0; i < panel.list()->topLevelItemCount(); ++i)
    out << panel.list()->topLevelItem(i)->text(0) + ": " + panel.list()->topLevelItem(i)->text(1);
  return out;
}

}  // namespace

class TestStudioFeedback : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_feedback");
  }

  // Finding 5: MaxPool2d [N,64,7,7] straight into a Linear over the last dimension
  // (Flatten deleted, in_features set to 7): [N,64,7,128] ... [N,64,7,10], no analysis problem.
  void linearOnAnImageBatchIsWarnedAbout() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    auto* panel = w.findChild<ProblemsPanel*>();
    QVERIFY(panel);
    GraphDocument* doc = w.document();
    const NodeId pool = nodeNamed(doc->graph(), "pool2"), fc1 = nodeNamed(doc->graph(), "fc1");
    doc->removeNodes({nodeNamed(doc->graph(), "flatten")});
    QString reason;
    QVERIFY2(doc->connectPorts({pool, 0}, {fc1, 0}, &reason), qPrintable(reason));
    QVERIFY2(doc->setAttribute(fc1, "in_features", int64_t(7), &reason), qPrintable(reason));
    QCOMPARE(doc->analysis().problems.size(), size_t(0));
    const QString all = rows(*panel).join("\n");
    QVERIFY2(all.contains(QString("fc1: ⚠ ") + kLinearOnImageWarning), qPrintable(all));
    QVERIFY2(panel->summaryText().contains("warning"), qPrintable(panel->summaryText()));
    // What the Training panel says about the output is in the Problems panel too.
    QVERIFY(!w.trainBlockers().isEmpty());
    for (const QString& reason : w.trainBlockers())
      if (reason.contains("class scores")) QVERIFY2(all.contains(reason), qPrintable(all + "\nlacks\n" + reason));
    QVERIFY2(all.contains("class scores [N, 10]"), qPrintable(all));
    QVERIFY(!panel->summaryText().contains("No problems"));
  }

  // Finding 5: a Linear over [N, T, C] (a sequence) is legitimate.
  void linearOnASequenceIsNotWarnedAbout() {
    const kiln::graph::Graph g = kiln::graph::from_json(R"({"format": "kiln-graph", "version": 1, "name": "seq",
      "edges": [{"from": {"node": 1, "port": 0}, "to": {"node": 2, "port": 0}},
                {"from": {"node": 2, "port": 0}, "to": {"node": 3, "port": 0}}],
      "nodes": [
        {"attrs": {"dtype": "f32", "shape": [28, 28]}, "id": 1, "name": "x", "op": "Input", "x": 0.0, "y": 0.0},
        {"attrs": {"in_features": 28, "out_features": 10}, "id": 2, "name": "proj", "op": "Linear", "x": 0.0, "y": 100.0},
        {"attrs": {}, "id": 3, "name": "y", "op": "Output", "x": 0.0, "y": 200.0}]})");
    QVERIFY(graph_warnings(g, kiln::graph::analyze(g)).empty());
    GraphDocument doc;
    doc.setGraph(g);
    ProblemsPanel panel(&doc);
    QVERIFY2(!rows(panel).join("\n").contains("Flatten"), qPrintable(rows(panel).join("\n")));
  }

  // Finding 7: 2 epochs of 10 steps, 1000 validation and 2000 test images; times in seconds.
  void progressNamesThePhaseWithItsOwnEta() {
    using Phase = RunProgress::Phase;
    RunProgress p(2, 1000, 2000);
    QCOMPARE(p.phase(), Phase::Starting);
    QVERIFY(std::isnan(p.etaSeconds(0)));
    for (int b = 1; b <= 9; ++b) p.batchEnded(0, b, b, 10, 100.0, b * 1.0);  // 1 s per step, 100 images/s
    QCOMPARE(p.phase(), Phase::Training);
    QCOMPARE(p.etaSeconds(9), 11.0);  // 11 steps left at 1 s each
    QCOMPARE(p.fraction(9), 0.45);
    p.batchEnded(0, 10, 10, 10, 100.0, 10);  // the epoch's last batch: validation starts
    QCOMPARE(p.phase(), Phase::Validating);
    QCOMPARE(p.epoch(), 1);
    // Not measured yet: 1000 images at 3 x 100 images/s.
    QVERIFY(qFuzzyCompare(p.etaSeconds(10), 1000.0 / 300.0));
    QVERIFY(qFuzzyCompare(p.etaSeconds(11), 1000.0 / 300.0 - 1));
    p.epochEnded(0, 15);  // validation took 5 s
    QCOMPARE(p.phase(), Phase::Training);
    p.batchEnded(1, 11, 1, 10, 100.0, 16);
    QCOMPARE(p.etaSeconds(16), 9.0);  // training seconds only (11 for 11 steps): 9 steps left
    for (int b = 2; b <= 10; ++b) p.batchEnded(1, 10 + b, b, 10, 100.0, 15.0 + b);
    QCOMPARE(p.phase(), Phase::Validating);
    QCOMPARE(p.etaSeconds(25), 5.0);  // the last validation's 5 s
    QCOMPARE(p.etaSeconds(27), 3.0);
    QCOMPARE(p.etaSeconds(40), 0.0);  // late: never negative
    p.epochEnded(1, 30);
    QCOMPARE(p.phase(), Phase::Testing);
    QCOMPARE(p.etaSeconds(30), 10.0);  // 2000 images at the measured 1000 per 5 s
    p.testBatch(1, 8, 31);
    p.testBatch(3, 8, 34);  // 2 batches done in 4 s: 6 left
    QCOMPARE(p.etaSeconds(34), 12.0);
    QCOMPARE(p.fraction(34), 0.25);

    // A pause freezes the ETA: paused time is not counted.
    RunProgress q(1, 0, 0);
    for (int b = 1; b <= 5; ++b) q.batchEnded(0, b, b, 10, 100.0, b * 2.0);
    QCOMPARE(q.etaSeconds(10), 10.0);
    q.setPaused(true, 10);
    QCOMPARE(q.etaSeconds(70), 10.0);
    q.setPaused(false, 70);
    QCOMPARE(q.etaSeconds(71), 9.0);
    q.batchEnded(0, 6, 6, 10, 100.0, 72);  // 6 steps in 12 active seconds
    QCOMPARE(q.etaSeconds(72), 8.0);
    QCOMPARE(QString(phase_name(int(Phase::Validating))), QString("validating"));
  }

  // Finding 7: the Training panel's bar names the phase; paused, it shows no ETA.
  void progressBarNamesThePhase() {
    TrainingPanel panel;
    panel.setState(TrainingPanel::State::Running);
    panel.setProgress(20, 20, 2, 2, 500, 0, TrainingPanel::Phase::Validating, 0.5);
    QVERIFY2(panel.progressText().startsWith("Validating epoch 2"), qPrintable(panel.progressText()));
    panel.setProgress(20, 20, 2, 2, 500, 45, TrainingPanel::Phase::Testing, 0.4);
    QCOMPARE(panel.progressText(), QString("Testing · 40% · ETA 0:45"));
    panel.setState(TrainingPanel::State::Paused);
    QVERIFY2(panel.progressText().startsWith("Paused") && !panel.progressText().contains("ETA"),
             qPrintable(panel.progressText()));
    panel.setState(TrainingPanel::State::Running);
    QVERIFY(panel.progressText().contains("ETA 0:45"));
    panel.setProgress(5, 20, 1, 2, 500, 65);
    QCOMPARE(panel.progressText(), QString("Training · 25% · ETA 1:05"));
    // Another project (MainWindow::loadProjectIntoUi): the old run's "Done" goes.
    panel.setState(TrainingPanel::State::Idle);
    panel.setEnded("finished");
    QCOMPARE(panel.progressText(), QString("Done"));
    panel.clearProgress();
    QCOMPARE(panel.progressText(), QString("0%"));
  }

  // Finding 10: "Stop it and quit?" pauses the run while it is open; No resumes, Yes stops.
  void closingWhileTrainingPausesForTheQuestion() {
    KILN_QSKIP_UNLESS_DEP(test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir dir;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(dir.filePath("q.kiln"), "fashion_mnist_mlp"));
    test::quickSettings(w, 20000, 3);
    w.show();
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(w.plots()->stepCount() >= 2, 60000);
    bool pausedWhileAsked = false;
    int stepsWhileAsked = -1;
    w.setQuestionAsker([&](const QString&, const QString& text) {
      pausedWhileAsked = text.contains("Stop it and quit?") && w.session()->isPaused() &&
                         w.trainingPanel()->state() == TrainingPanel::State::Paused;
      // The batch in flight (and the poll that brings its point) may still arrive: wait, in
      // 200 ms windows, for one without a new step (a run that did not pause never gives one).
      int held = w.plots()->stepCount();
      for (int i = 0; i < 25; ++i) {
        QTest::qWait(200);
        if (w.plots()->stepCount() == held) break;
        held = w.plots()->stepCount();
      }
      QTest::qWait(400);
      stepsWhileAsked = w.plots()->stepCount() - held;
      return false;
    });
    QVERIFY(!w.close());  // No: the window stays, the run goes on
    QVERIFY(pausedWhileAsked);
    QCOMPARE(stepsWhileAsked, 0);
    QVERIFY(w.session()->isRunning());
    QVERIFY(!w.session()->isPaused());
    QCOMPARE(w.trainingPanel()->state(), TrainingPanel::State::Running);
    w.setQuestionAsker([](const QString&, const QString&) { return true; });
    QVERIFY(w.close());  // Yes: the run stops
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 60000);
  }
};

QTEST_MAIN(TestStudioFeedback)
#include "test_studio_feedback.moc"
