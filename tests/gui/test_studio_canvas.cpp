// Finding a way around big graphs in Kiln Studio (issue 15, finding 8, canvas part):
// Ctrl+F and a name (or part of one) select and centre that node; Ctrl+wheel zooms around
// the cursor (the scene point under it stays under it).
#include <QAction>
#include <QLineEdit>
#include <QWheelEvent>
#include <QtTest>

#include "app/studio/main_window.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"

using namespace kiln::studio;
using kiln::graph::NodeId;

namespace {

NodeId nodeNamed(const kiln::graph::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.id;
  return -1;
}

// Distance in view pixels between the view's centre and the node's centre.
double offCentre(const GraphCanvas& c, NodeId id) {
  const QPointF node = c.mapFromScene(c.nodeItem(id)->sceneBoundingRect().center());
  const QPointF centre = QRectF(c.viewport()->rect()).center();
  return QLineF(node, centre).length();
}

}  // namespace

class TestStudioCanvas : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("KilnTest");
    QCoreApplication::setApplicationName("test_studio_canvas");
  }

  void ctrlFFindsANodeByName() {
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    w.resize(1280, 720);
    w.show();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    GraphCanvas* c = w.canvas();
    c->setFocus();
    QTest::keySequence(&w, QKeySequence::Find);
    QVERIFY(w.findField()->hasFocus());
    QTest::keyClicks(w.findField(), "POOL2");  // any case
    QTest::keyClick(w.findField(), Qt::Key_Return);
    const NodeId pool2 = nodeNamed(w.document()->graph(), "pool2");
    QCOMPARE(c->selectedNodes(), QList<NodeId>{pool2});
    QVERIFY2(offCentre(*c, pool2) < 3, qPrintable(QString::number(offCentre(*c, pool2))));
    // Part of a name: the first match by id; several matches are counted.
    const GraphCanvas::NodeMatch fc = c->findNode("fc");
    QCOMPARE(fc.node, nodeNamed(w.document()->graph(), "fc1"));
    QCOMPARE(fc.matches, 2);
    QVERIFY(offCentre(*c, fc.node) < 3);
    QCOMPARE(c->findNode("no_such_layer").node, NodeId(-1));
    QCOMPARE(c->selectedNodes(), QList<NodeId>{fc.node});  // unchanged
    // PyTorch's dotted module names find the identifiers an import makes of them.
    QVERIFY(w.document()->renameNode(pool2, "layer3_0_conv2_Conv"));
    QCOMPARE(c->findNode("layer3.0.conv2").node, pool2);
    QCOMPARE(c->findNode("/layer3_0/conv2").node, pool2);
    QCOMPARE(c->findNode("...").node, NodeId(-1));
  }

  void ctrlWheelZoomsAroundTheCursor() {
    MainWindow w;
    w.newFromTemplate("fashion_mnist_cnn");
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    GraphCanvas* c = w.canvas();
    c->fitAll();
    // The cursor over conv1's centre, away from the view's centre.
    const NodeId conv1 = nodeNamed(w.document()->graph(), "conv1");
    const QPointF target = c->nodeItem(conv1)->sceneBoundingRect().center();
    const QPoint at = c->mapFromScene(target);
    QVERIFY(QLineF(QPointF(at), QRectF(c->viewport()->rect()).center()).length() > 50);
    const double before = c->zoom();
    for (int i = 0; i < 3; ++i) {
      QWheelEvent wheel(at, c->viewport()->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::ControlModifier,
                        Qt::NoScrollPhase, false);
      QApplication::sendEvent(c->viewport(), &wheel);
    }
    QVERIFY2(c->zoom() > before * 1.5, qPrintable(QString("%1 -> %2").arg(before).arg(c->zoom())));
    const QPointF after = c->mapFromScene(target);
    QVERIFY2(QLineF(after, QPointF(at)).length() <= 2,
             qPrintable(QString("conv1 moved from (%1, %2) to (%3, %4)").arg(at.x()).arg(at.y()).arg(after.x()).arg(after.y())));
  }
};

QTEST_MAIN(TestStudioCanvas)
#include "test_studio_canvas.moc"
