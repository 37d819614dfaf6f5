// Issue 20, Deliver 2 (Studio): the Network Analyzer's per-layer profile (widgets/graph/
// layer_profile_panel.h) on the CNN template on the CPU — every layer in the table, sorting by
// total, a heat annotation on each profiled node of the canvas (cleared by an edit, not by a
// move), Cancel, a device that does not exist, a second device side by side, and profiling
// blocked while training runs; each profile stored in the open project (schema 12), listed after
// reopening it, one shown again, two side by side with the difference per layer.
#include <QDockWidget>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>
#include <set>

#include "app/studio/main_window.h"
#include "engine/core/registry.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/network_analyzer.h"

using namespace kiln;
using namespace kiln::studio;
using graph::NodeId;
using P = LayerProfilePanel;

namespace {

DeviceInfo cpuInfo() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cpu) return d;
  return {};
}

NodeId nodeNamed(const graph::Graph& g, const std::string& name) {
  for (const graph::Node& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

// The layers a profile covers: every node but Input and Output.
std::set<NodeId> layers(const graph::Graph& g) {
  std::set<NodeId> out;
  for (const graph::Node& n : g.nodes())
    if (n.op != "Input" && n.op != "Output") out.insert(n.id);
  return out;
}

std::set<NodeId> tableNodes(const P& p) {
  std::set<NodeId> out;
  const QAbstractItemModel* m = p.table()->model();
  for (int r = 0; r < m->rowCount(); ++r) out.insert(m->index(r, P::Name).data(P::kNodeRole).toLongLong());
  return out;
}

QList<double> column(const P& p, int c) {
  QList<double> out;
  const QAbstractItemModel* m = p.table()->model();
  for (int r = 0; r < m->rowCount(); ++r) out << m->index(r, c).data(P::kSortRole).toDouble();
  return out;
}

struct Window {
  MainWindow w;
  NetworkAnalyzer* a;
  P* p;
  Window() {
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    a = w.networkAnalyzer();
    p = a->profilePanel();
    a->setDevices({cpuInfo()});
    a->setBatchSize(8);
    p->setSteps(2, 1);
  }
  const graph::Graph& graph() const { return w.document()->graph(); }
};

}  // namespace

class TestLayerProfile : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_layer_profile");
  }

  void profilesEveryLayerAndTintsTheCanvas() {
    Window x;
    QSignalSpy done(x.p, &P::profileFinished);
    QVERIFY(x.p->profileButton()->isEnabled());
    QTest::mouseClick(x.p->profileButton(), Qt::LeftButton);
    QVERIFY(x.p->isProfiling());  // the click returned at once
    QVERIFY(!x.p->profileButton()->isEnabled());
    QVERIFY(x.p->cancelButton()->isEnabled());
    QVERIFY(!x.a->measureButton()->isEnabled());  // measuring and profiling exclude each other
    QVERIFY(done.wait(120000));
    QVERIFY(!x.p->isProfiling());
    QVERIFY(x.a->measureButton()->isEnabled());

    const std::set<NodeId> want = layers(x.graph());
    QCOMPARE(want.size(), size_t(10));
    QCOMPARE(tableNodes(*x.p), want);
    QVERIFY2(x.p->summaryText().startsWith("per-layer sum ") && x.p->summaryText().contains("% of the step ") &&
                 x.p->summaryText().contains(" ms on cpu (batch 8, f32, interquartile means of 2 step(s))"),
             qPrintable(x.p->summaryText()));
    QVERIFY(x.p->table()->isColumnHidden(P::Ratio));  // no second device
    // Shares add up to 100; conv layers have a backward time.
    double shares = 0;
    for (double s : column(*x.p, P::Share)) shares += s;
    QVERIFY2(std::abs(shares - 100) < 0.01, qPrintable(QString::number(shares)));

    // Sorted by total, slowest first (the default), then ascending: by value, not by text.
    x.p->table()->sortByColumn(P::Total, Qt::DescendingOrder);
    QList<double> totals = column(*x.p, P::Total);
    QVERIFY(std::is_sorted(totals.rbegin(), totals.rend()));
    x.p->table()->sortByColumn(P::Total, Qt::AscendingOrder);
    totals = column(*x.p, P::Total);
    QVERIFY(std::is_sorted(totals.begin(), totals.end()));
    const QAbstractItemModel* m = x.p->table()->model();
    const NodeId slowest = m->index(m->rowCount() - 1, P::Name).data(P::kNodeRole).toLongLong();
    x.p->table()->sortByColumn(P::OutputBytes, Qt::DescendingOrder);
    QCOMPARE(m->index(0, P::OutputBytes).data().toString(), QString("784.0 KiB"));  // conv1/relu1: 8*32*28*28*4 bytes

    // The canvas: every profiled node annotated, the slowest at full heat, Input and Output not.
    for (NodeId id : want) {
      const std::optional<NodeHeat> h = x.w.canvas()->nodeHeat(id);
      QVERIFY2(h, qPrintable(QString::fromStdString(x.graph().node(id).name)));
      QVERIFY2(h->badge.endsWith(" ms") && h->heat >= 0 && h->heat <= 1, qPrintable(h->badge));
      QVERIFY(h->tip.startsWith("profile on cpu: forward "));
      QVERIFY(x.w.canvas()->nodeItem(id)->toolTip().contains("profile on cpu"));
    }
    QCOMPARE(x.w.canvas()->nodeHeat(slowest)->heat, 1.0);
    qInfo("%s", qPrintable(x.p->summaryText()));
    if (qEnvironmentVariableIsSet("KILN_TEST_SHOTS")) {  // a folder to look at the canvas and the dock in
      x.w.resize(1600, 1000);
      x.w.dock("analyzer")->show();
      x.w.dock("analyzer")->raise();
      x.w.canvas()->zoomAt(1.0, QPoint());
      x.w.canvas()->centerOn(x.w.canvas()->nodeItem(nodeNamed(x.graph(), "relu2")));
      x.w.canvas()->grab().save(qEnvironmentVariable("KILN_TEST_SHOTS") + "/profile_canvas.png");
      x.a->grab().save(qEnvironmentVariable("KILN_TEST_SHOTS") + "/profile_dock.png");
    }
    QVERIFY(!x.w.canvas()->nodeHeat(nodeNamed(x.graph(), "image")));
    QVERIFY(!x.w.canvas()->nodeHeat(nodeNamed(x.graph(), "logits")));

    // Moving a node keeps the profile; an edit clears the table and the canvas.
    const NodeId conv2 = nodeNamed(x.graph(), "conv2");
    x.w.document()->moveNodes({{conv2, QPointF(400, 400)}});
    QVERIFY(x.w.canvas()->nodeHeat(conv2));
    QCOMPARE(x.p->table()->model()->rowCount(), 10);
    QString why;
    QVERIFY2(x.w.document()->setAttribute(conv2, "out_channels", int64_t(32), &why), qPrintable(why));
    QCOMPARE(x.p->table()->model()->rowCount(), 0);
    QVERIFY(!x.w.canvas()->nodeHeat(conv2));
    QVERIFY(x.p->heat().empty());
    QCOMPARE(x.p->summaryText(), QString("The graph was edited: profile it again."));
  }

  void clearRemovesTheHeat() {
    Window x;
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(done.wait(120000));
    const NodeId conv1 = nodeNamed(x.graph(), "conv1");
    QVERIFY(x.w.canvas()->nodeHeat(conv1));
    // A row selects its node (the analyzer's nodeActivated, which the window sends to the canvas).
    x.w.canvas()->selectNode(nodeNamed(x.graph(), "fc2"));
    const QAbstractItemModel* m = x.p->table()->model();
    for (int r = 0; r < m->rowCount(); ++r)
      if (m->index(r, P::Name).data().toString() == "conv1") emit x.p->table()->activated(m->index(r, P::Total));
    QCOMPARE(x.w.canvas()->selectedNodes(), QList<NodeId>({conv1}));
    QVERIFY(x.p->clearButton()->isEnabled());
    QTest::mouseClick(x.p->clearButton(), Qt::LeftButton);
    QVERIFY(!x.w.canvas()->nodeHeat(conv1));
    QCOMPARE(x.p->table()->model()->rowCount(), 0);
    QVERIFY(x.w.canvas()->nodeItem(conv1)->toolTip().indexOf("profile on") < 0);
  }

  void cancelStops() {
    Window x;
    x.p->setSteps(1000000, 0);  // would run for hours unless Cancel stops it
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(x.p->isProfiling());
    QTest::mouseClick(x.p->cancelButton(), Qt::LeftButton);
    QVERIFY(!x.p->cancelButton()->isEnabled());
    QVERIFY(done.wait(60000));
    QVERIFY(!x.p->isProfiling());
    QVERIFY2(x.p->summaryText() == "Cancelled before a step was timed." || x.p->summaryText().contains("; cancelled"),
             qPrintable(x.p->summaryText()));
    QVERIFY(x.p->profileButton()->isEnabled());
    // Closing while profiling cancels and waits: no crash, no result delivered to a deleted panel.
    auto* y = new Window;
    y->p->setSteps(1000000, 0);
    y->a->profile();
    QVERIFY(y->p->isProfiling());
    delete y;
    QCoreApplication::processEvents();
  }

  void anUnknownDeviceGivesItsMessage() {
    Window x;
    x.a->setDevices({cpuInfo(), {Device(DeviceType::cuda, 7), "no such GPU", "discrete GPU", 1ull << 30, 1, 1}});
    QVERIFY(x.p->setDevice("cuda:7"));
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(done.wait(60000));
    QVERIFY2(x.p->summaryText().startsWith("cuda:7: failed: "), qPrintable(x.p->summaryText()));
    qInfo("%s", qPrintable(x.p->summaryText()));
    QCOMPARE(x.p->table()->model()->rowCount(), 0);
    QVERIFY(x.p->heat().empty());
    QVERIFY(!x.w.canvas()->nodeHeat(nodeNamed(x.graph(), "conv1")));
    // As the second device: the first is shown, the second's failure below it.
    QVERIFY(x.p->setDevice("cpu"));
    QVERIFY(x.p->setOtherDevice("cuda:7"));
    x.a->profile();
    QVERIFY(done.wait(120000));
    QCOMPARE(x.p->table()->model()->rowCount(), 10);
    QVERIFY(x.p->table()->isColumnHidden(P::Ratio));
    QVERIFY2(x.p->summaryText().contains("\ncuda:7: failed: "), qPrintable(x.p->summaryText()));
  }

  void twoDevicesSideBySide() {
    Window x;
    QVERIFY(x.p->setOtherDevice("cpu"));  // the same device twice: a ratio near 1 either way
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(done.wait(120000));
    QVERIFY(!x.p->table()->isColumnHidden(P::Ratio));
    QVERIFY(!x.p->table()->isColumnHidden(P::OtherTotal));
    const QAbstractItemModel* m = x.p->table()->model();
    QCOMPARE(m->headerData(P::Ratio, Qt::Horizontal).toString(), QString("vs cpu"));
    for (int r = 0; r < m->rowCount(); ++r) {
      const QString ratio = m->index(r, P::Ratio).data().toString();
      QVERIFY2(QRegularExpression("^[0-9.]+× (faster|slower) on cpu$").match(ratio).hasMatch() || ratio == "-",
               qPrintable(ratio));
    }
    const QStringList lines = x.p->summaryText().split('\n');
    QCOMPARE(lines.size(), 3);
    qInfo("%s", qPrintable(x.p->summaryText()));
    QVERIFY2(lines[2].startsWith("per-layer sum ") && lines[2].endsWith(" on cpu"), qPrintable(lines[2]));
    x.p->table()->sortByColumn(P::Ratio, Qt::DescendingOrder);
    const QList<double> ratios = column(*x.p, P::Ratio);
    QVERIFY(std::is_sorted(ratios.rbegin(), ratios.rend()));
  }

  void storedInTheProjectAndComparedLater() {
    QTemporaryDir dir;
    const QString path = dir.filePath("p.kiln");
    qint64 first = 0, second = 0;
    {
      Window x;
      QVERIFY(x.w.saveAs(path));
      QCOMPARE(x.p->storedCombo()->count(), 1);  // "none stored"
      QVERIFY(!x.p->storedCombo()->isEnabled());
      QSignalSpy done(x.p, &P::profileFinished);
      x.a->profile();
      QVERIFY(done.wait(120000));
      x.a->setBatchSize(4);
      x.a->profile();
      QVERIFY(done.wait(120000));
      const std::vector<projects::ProfileRecord> stored = x.w.project()->profiles();
      QCOMPARE(stored.size(), size_t(2));
      QCOMPARE(stored[0].batch_size, int64_t(8));
      QCOMPARE(stored[1].batch_size, int64_t(4));
      QCOMPARE(stored[0].device, std::string("cpu"));
      QCOMPARE(stored[0].steps, int64_t(2));
      QCOMPARE(stored[0].graph_version, x.w.project()->latest_graph()->id);
      first = stored[0].id;
      second = stored[1].id;
      // Listed at once, with date, device, precision and batch.
      QCOMPARE(x.p->storedCombo()->count(), 3);
      QVERIFY(x.p->storedCombo()->isEnabled());
      QVERIFY2(x.p->storedCombo()->itemText(2).startsWith(QString("#%1 · cpu · f32 · batch 4 · 20").arg(second)),
               qPrintable(x.p->storedCombo()->itemText(2)));
    }
    // Reopened in a new window: the figures are back.
    Window y;
    QVERIFY(y.w.openProject(path));
    QCOMPARE(y.p->storedCombo()->count(), 3);
    QCOMPARE(y.p->storedOtherCombo()->count(), 3);
    QCOMPARE(y.p->table()->model()->rowCount(), 0);
    QVERIFY(!y.p->showStored(first + 100));  // not stored: nothing shown
    QCOMPARE(y.p->table()->model()->rowCount(), 0);
    // Picking one in the list shows it, on the canvas too.
    y.p->storedCombo()->setCurrentIndex(1);
    emit y.p->storedCombo()->activated(1);
    QCOMPARE(tableNodes(*y.p), layers(y.graph()));
    QVERIFY(y.p->table()->isColumnHidden(P::Difference));
    QVERIFY2(y.p->summaryText().startsWith(QString("Stored profile #%1 · ").arg(first)), qPrintable(y.p->summaryText()));
    QVERIFY2(y.p->summaryText().contains("(batch 8, f32, interquartile means of 2 step(s))"), qPrintable(y.p->summaryText()));
    QVERIFY(y.w.canvas()->nodeHeat(nodeNamed(y.graph(), "conv1")));
    // Picking a second one beside it: its totals, the ratio and the difference per layer.
    y.p->storedOtherCombo()->setCurrentIndex(2);
    emit y.p->storedOtherCombo()->activated(2);
    QVERIFY(!y.p->table()->isColumnHidden(P::Difference));
    QVERIFY(!y.p->table()->isColumnHidden(P::OtherTotal));
    const QAbstractItemModel* m = y.p->table()->model();
    QCOMPARE(m->headerData(P::Difference, Qt::Horizontal).toString(), QString("Δ ms on #%1 cpu").arg(second));
    QCOMPARE(m->rowCount(), 10);
    for (int r = 0; r < m->rowCount(); ++r) {
      const double total = m->index(r, P::Total).data(P::kSortRole).toDouble();
      const double other = m->index(r, P::OtherTotal).data(P::kSortRole).toDouble();
      QCOMPARE(m->index(r, P::Difference).data(P::kSortRole).toDouble(), other - total);
    }
    QVERIFY2(y.p->summaryText().startsWith(QString("Stored profiles #%1 · ").arg(first)) &&
                 y.p->summaryText().contains(QString(" vs #%1 · ").arg(second)),
             qPrintable(y.p->summaryText()));
    // Sorted by the difference: the layers that got slowest in the second come first.
    y.p->table()->sortByColumn(P::Difference, Qt::DescendingOrder);
    const QList<double> diffs = column(*y.p, P::Difference);
    QVERIFY(std::is_sorted(diffs.rbegin(), diffs.rend()));
    qInfo("%s", qPrintable(y.p->summaryText()));
    // "—" in the first list clears the view.
    y.p->storedCombo()->setCurrentIndex(0);
    emit y.p->storedCombo()->activated(0);
    QCOMPARE(y.p->table()->model()->rowCount(), 0);
    QVERIFY(!y.p->deleteStoredButton()->isEnabled());  // nothing picked
    if (qEnvironmentVariableIsSet("KILN_TEST_SHOTS")) {  // the dock with two stored profiles side by side
      QVERIFY(y.p->showStored(first, second));
      y.w.resize(1600, 1000);
      y.a->grab().save(qEnvironmentVariable("KILN_TEST_SHOTS") + "/profile_stored.png");
    }
    // Delete: the profile shown leaves the project, the lists and the view.
    QVERIFY(y.p->showStored(first));
    QVERIFY(y.p->deleteStoredButton()->isEnabled());
    QTest::mouseClick(y.p->deleteStoredButton(), Qt::LeftButton);
    QCOMPARE(y.w.project()->profiles().size(), size_t(1));
    QCOMPARE(y.w.project()->profiles()[0].id, second);
    QCOMPARE(y.p->storedCombo()->count(), 2);
    QCOMPARE(y.p->table()->model()->rowCount(), 0);
    QVERIFY(!y.p->deleteStoredButton()->isEnabled());
    QVERIFY(y.w.openProject(path));  // and it stays deleted
    QCOMPARE(y.p->storedCombo()->count(), 2);
  }

  void withoutAProjectNothingIsStored() {
    Window x;  // an unsaved document
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(done.wait(120000));
    QCOMPARE(x.p->table()->model()->rowCount(), 10);  // shown all the same
    QCOMPARE(x.p->storedCombo()->count(), 1);
    QCOMPARE(x.w.statusBar()->currentMessage(), QString("Profile done; save the project to keep profiles in it"));
  }

  void blockedWhileTrainingAndWithProblems() {
    Window x;
    // A run starting cancels a profile that is running.
    x.p->setSteps(1000000, 0);
    QSignalSpy done(x.p, &P::profileFinished);
    x.a->profile();
    QVERIFY(x.p->isProfiling());
    x.a->setMeasureAllowed(false, "Training is running: measure the step time after it");
    QVERIFY(!x.p->cancelButton()->isEnabled());
    QVERIFY(done.wait(60000));
    x.a->setMeasureAllowed(false, "Training is running: measure the step time after it");
    QVERIFY(!x.p->profileButton()->isEnabled());
    QCOMPARE(x.p->profileButton()->toolTip(), QString("Training is running: measure the step time after it"));
    x.a->profile();
    QVERIFY(!x.p->isProfiling());
    x.a->setMeasureAllowed(true);
    QVERIFY(x.p->profileButton()->isEnabled());
    graph::Graph g = x.graph();
    g.disconnect({nodeNamed(g, "fc1"), 0});
    x.w.document()->setGraph(g);
    QVERIFY(!x.p->profileButton()->isEnabled());
    x.a->profile();
    QVERIFY(!x.p->isProfiling());
  }
};

QTEST_MAIN(TestLayerProfile)
#include "test_layer_profile.moc"
