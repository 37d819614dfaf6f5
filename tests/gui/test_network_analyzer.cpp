// Issue 20, part 3: the Network Analyzer dock (widgets/graph/network_analyzer.h) on the CNN
// template — per-layer figures, numeric sorting, totals in the main window's status bar,
// warnings that select their node, graph problems, and the step-time measurement on a worker
// thread (the event loop keeps running, Cancel ends it, closing while measuring is safe).
#include <QDockWidget>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include "app/studio/main_window.h"
#include "engine/core/registry.h"
#include "engine/graph/json.h"
#include "widgets/graph/network_analyzer.h"

using namespace kiln;
using namespace kiln::studio;
using graph::NodeId;

namespace {

graph::Graph cnnTemplate() { return graph::load_graph(KILN_SOURCE_DIR "/projects/templates/fashion_mnist_cnn.json"); }

NodeId nodeNamed(const graph::Graph& g, const std::string& name) {
  for (const graph::Node& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

// The Name column of the table as shown (after sorting).
QStringList shownNames(const NetworkAnalyzer& a) {
  QStringList out;
  const QAbstractItemModel* m = a.layerTable()->model();
  for (int r = 0; r < m->rowCount(); ++r) out << m->index(r, NetworkAnalyzer::Name).data().toString();
  return out;
}

QString shown(const NetworkAnalyzer& a, const QString& name, int column) {
  const QAbstractItemModel* m = a.layerTable()->model();
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, NetworkAnalyzer::Name).data().toString() == name) return m->index(r, column).data().toString();
  return "<no row " + name + ">";
}

DeviceInfo cpuInfo() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cpu) return d;
  return {};
}

}  // namespace

class TestNetworkAnalyzer : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_network_analyzer");
  }

  void figuresOfTheCnnTemplate() {
    GraphDocument doc;
    doc.setGraph(cnnTemplate());
    NetworkAnalyzer a(&doc);
    a.setDevices({});
    a.setBatchSize(128);
    QCOMPARE(shownNames(a), QStringList({"image", "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1",
                                         "relu3", "fc2", "logits"}));
    QCOMPARE(shown(a, "conv1", NetworkAnalyzer::Output), QString("f32[N, 32, 28, 28]"));
    QCOMPARE(shown(a, "conv1", NetworkAnalyzer::Activations), QString("12.2 MiB"));  // 128*32*28*28*4 bytes
    QCOMPARE(shown(a, "fc1", NetworkAnalyzer::Parameters), QString("401,536"));
    QCOMPARE(shown(a, "conv2", NetworkAnalyzer::Macs), QString("3.61 M"));
    QCOMPARE(a.summaryText(), QString("421,642 parameters · 4.24 M MACs/sample · training ≈ 49.8 MiB at batch 128"));
    QCOMPARE(a.memory().activation_bytes.at(nodeNamed(doc.graph(), "conv1")), int64_t(128) * 32 * 28 * 28 * 4);
    // bf16 halves the activation bytes.
    a.setDType("bf16");
    QCOMPARE(shown(a, "conv1", NetworkAnalyzer::Activations), QString("6.1 MiB"));
    // One warning: conv2 does 85% of the multiply-adds.
    QCOMPARE(a.warnings().size(), size_t(1));
    QCOMPARE(a.warnings()[0].node, nodeNamed(doc.graph(), "conv2"));
    QVERIFY(a.warningList()->item(0)->text().contains("'conv2' does 85% of the model's multiply-adds"));
    // An edit shows at once: conv2 with 128 channels.
    QString why;
    QVERIFY2(doc.setAttribute(nodeNamed(doc.graph(), "conv2"), "out_channels", int64_t(128), &why), qPrintable(why));
    QCOMPARE(shown(a, "conv2", NetworkAnalyzer::Parameters), QString("36,992"));
  }

  void columnsSortByValue() {
    GraphDocument doc;
    doc.setGraph(cnnTemplate());
    NetworkAnalyzer a(&doc);
    a.setDevices({});
    a.setBatchSize(128);
    a.layerTable()->sortByColumn(NetworkAnalyzer::Parameters, Qt::DescendingOrder);
    QCOMPARE(shownNames(a).mid(0, 4), QStringList({"fc1", "conv2", "fc2", "conv1"}));
    a.layerTable()->sortByColumn(NetworkAnalyzer::Macs, Qt::DescendingOrder);
    QCOMPARE(shownNames(a).first(), QString("conv2"));
    // Activations: "12.2 MiB" > "6.1 MiB" > "392.0 KiB" > "64.0 KiB" > "0 B" (text order would differ).
    a.layerTable()->sortByColumn(NetworkAnalyzer::Activations, Qt::AscendingOrder);
    const QAbstractItemModel* m = a.layerTable()->model();
    qlonglong last = -1;
    for (int r = 0; r < m->rowCount(); ++r) {
      const qlonglong v = m->index(r, NetworkAnalyzer::Activations).data(NetworkAnalyzer::kSortRole).toLongLong();
      QVERIFY2(v >= last, qPrintable(shownNames(a).join(", ")));
      last = v;
    }
    QCOMPARE(shownNames(a).first(), QString("logits"));
    QVERIFY(QStringList({"conv1", "relu1"}).contains(shownNames(a).last()));
    a.layerTable()->sortByColumn(NetworkAnalyzer::Name, Qt::AscendingOrder);  // back to graph order
    QCOMPARE(shownNames(a).first(), QString("image"));
    // Moving a node changes the document, not the figures: the table (and its selection) stays.
    a.layerTable()->selectRow(4);
    const QStandardItemModel* source = qobject_cast<const QStandardItemModel*>(
        qobject_cast<const QSortFilterProxyModel*>(a.layerTable()->model())->sourceModel());
    const QStandardItem* before = source->item(4, 0);
    doc.moveNodes({{nodeNamed(doc.graph(), "conv2"), QPointF(500, 500)}});
    QCOMPARE(source->item(4, 0), before);
    QCOMPARE(a.layerTable()->selectionModel()->selectedRows().size(), 1);
    // An edit that changes a figure rebuilds it.
    QString why;
    QVERIFY2(doc.setAttribute(nodeNamed(doc.graph(), "fc1"), "out_features", int64_t(64), &why), qPrintable(why));
    QCOMPARE(shown(a, "fc1", NetworkAnalyzer::Parameters), QString("200,768"));
  }

  void memoryWarningSelectsItsNode() {
    GraphDocument doc;
    doc.setGraph(cnnTemplate());
    NetworkAnalyzer a(&doc);
    a.setBatchSize(128);
    a.setDevices({{Device(DeviceType::cuda, 0), "small GPU", "discrete GPU", 32ull << 20, 1, 1}});  // 32 MiB < 49.8
    QCOMPARE(a.warnings().size(), size_t(2));
    const graph::Warning& w = a.warnings()[1];
    QCOMPARE(QString::fromStdString(w.kind), QString("memory"));
    QCOMPARE(w.node, nodeNamed(doc.graph(), "conv1"));  // the largest activation (first of the two 12.2 MiB)
    QSignalSpy spy(&a, &NetworkAnalyzer::nodeActivated);
    QListWidgetItem* item = a.warningList()->item(1);
    QVERIFY(item->text().contains("needs an estimated 49.8 MiB but cuda:0 (small GPU) has 32.0 MiB"));
    emit a.warningList()->itemActivated(item);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).value<NodeId>(), nodeNamed(doc.graph(), "conv1"));
    a.setBatchSize(64);  // ≈ 27 MiB: fits
    QCOMPARE(a.warnings().size(), size_t(1));
  }

  void problemsDisableTheMeasurement() {
    GraphDocument doc;
    graph::Graph g = cnnTemplate();
    g.disconnect({nodeNamed(g, "fc1"), 0});
    doc.setGraph(g);
    NetworkAnalyzer a(&doc);
    a.setDevices({cpuInfo()});
    QVERIFY2(a.summaryText().contains("problem"), qPrintable(a.summaryText()));
    QVERIFY(!a.measureButton()->isEnabled());
    QVERIFY(a.warningList()->item(0)->text().contains("problem"));
    QVERIFY(!shownNames(a).contains("fc1"));  // not inferred
    QVERIFY(shownNames(a).contains("conv1"));
    a.measure();
    QVERIFY(!a.isMeasuring());
  }

  void measuresOnAWorkerThread() {
    GraphDocument doc;
    doc.setGraph(cnnTemplate());
    NetworkAnalyzer a(&doc);
    a.setDevices({cpuInfo()});
    a.setBatchSize(16);
    QSignalSpy done(&a, &NetworkAnalyzer::measurementFinished);
    int ticks = 0;  // the event loop runs while the worker measures
    QTimer timer;
    connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(5);
    QTest::mouseClick(a.measureButton(), Qt::LeftButton);
    QVERIFY(a.isMeasuring());  // the click returned at once
    QVERIFY(!a.measureButton()->isEnabled());
    QVERIFY(a.cancelButton()->isEnabled());
    QVERIFY(done.wait(120000));
    QVERIFY2(ticks > 0, "the event loop did not run during the measurement");
    qInfo("%d timer ticks of 5 ms during the measurement", ticks);
    QCOMPARE(a.timeTable()->rowCount(), 1);
    QCOMPARE(a.timeTable()->item(0, 0)->text(), QString("cpu"));
    QVERIFY(a.timeTable()->item(0, 2)->text().toDouble() > 0);
    QVERIFY(a.timeTable()->item(0, 3)->text().toDouble() > 0);
    QCOMPARE(a.timeTable()->item(0, 5)->text(), QString("5 step(s)"));
    QVERIFY(!a.isMeasuring());
    QVERIFY(a.measureButton()->isEnabled());
  }

  void cancelAndCloseWhileMeasuring() {
    GraphDocument doc;
    doc.setGraph(cnnTemplate());
    {
      NetworkAnalyzer a(&doc);
      a.setDevices({cpuInfo(), cpuInfo()});
      a.setBatchSize(256);
      QSignalSpy done(&a, &NetworkAnalyzer::measurementFinished);
      a.measure();
      a.cancelMeasurement();
      QVERIFY(!a.cancelButton()->isEnabled());
      QVERIFY(done.wait(60000));
      QVERIFY(a.timeTable()->rowCount() <= 1);  // the second device never starts
      if (a.timeTable()->rowCount() == 1) QVERIFY(a.timeTable()->item(0, 5)->text().startsWith("cancelled"));
    }
    auto* b = new NetworkAnalyzer(&doc);
    b->setDevices({cpuInfo()});
    b->setBatchSize(256);
    b->measure();
    QVERIFY(b->isMeasuring());
    delete b;  // cancels and waits: no crash, no row delivered to a deleted widget
    QCoreApplication::processEvents();
  }

  void modelMenuAndStatusBar() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    QDockWidget* d = w.dock("analyzer");
    QVERIFY(d);
    d->hide();
    w.analyzeAction()->trigger();
    QVERIFY(!d->isHidden());
    QCOMPARE(w.analyzeAction()->text(), QString("&Analyze Network"));
    QVERIFY2(w.analyzerStatusText().startsWith("421,642 parameters · 4.24 M MACs/sample · training ≈"),
             qPrintable(w.analyzerStatusText()));
    w.networkAnalyzer()->setBatchSize(128);
    QVERIFY2(w.analyzerStatusText().endsWith("49.8 MiB at batch 128"), qPrintable(w.analyzerStatusText()));
  }
};

QTEST_MAIN(TestNetworkAnalyzer)
#include "test_network_analyzer.moc"
