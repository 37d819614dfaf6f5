// GraphDocument: every edit is one undo step that restores the exact previous graph.
#include <QSignalSpy>
#include <QTest>
#include <set>

#include "engine/graph/op_schema.h"
#include "test_graph_util.h"

using namespace kiln;
using namespace kiln::studio;
using kiln::studio::testing::json;
using kiln::studio::testing::mlp;

class TestGraphDocument : public QObject {
  Q_OBJECT
 private slots:
  void addNodeGetsDefaultsAndUndoRemovesIt() {
    GraphDocument doc;
    QSignalSpy changed(&doc, &GraphDocument::changed);
    const std::string empty = json(doc);
    const graph::NodeId id = doc.addNode("Conv2d", QPointF(10, 20));
    QVERIFY(id >= 0);
    QCOMPARE(changed.count(), 1);
    const graph::Node& n = doc.graph().node(id);
    QCOMPARE(n.op, std::string("Conv2d"));
    QCOMPARE(n.name, std::string("conv2d_1"));
    QCOMPARE(std::get<int64_t>(n.attrs.at("out_channels")), int64_t(32));
    QCOMPARE(n.x, 10.0);
    QCOMPARE(n.y, 20.0);
    QVERIFY(doc.isModified());
    doc.undoStack()->undo();
    QCOMPARE(json(doc), empty);
    QVERIFY(!doc.isModified());
    doc.undoStack()->redo();
    QVERIFY(doc.graph().contains(id));  // same id again
    QCOMPARE(doc.graph().node(id).name, std::string("conv2d_1"));
  }

  void unknownOpIsRefusedWithReason() {
    GraphDocument doc;
    QString reason;
    QCOMPARE(doc.addNode("Conv3d", QPointF(), &reason), graph::NodeId(-1));
    QVERIFY2(reason.contains("Conv3d"), qPrintable(reason));
    QCOMPARE(doc.undoStack()->count(), 0);
  }

  // Note: the central round-trip check of the issue — a sequence of every kind of
  // edit, then undo step by step back to each earlier JSON, then redo forward again.
  void undoRedoSequenceRestoresEveryState() {
    GraphDocument doc;
    std::vector<std::string> states{json(doc)};
    auto step = [&] { states.push_back(json(doc)); };
    const graph::NodeId in = doc.addNode("Input", QPointF(0, 0));
    step();
    const graph::NodeId flat = doc.addNode("Flatten", QPointF(0, 150));
    step();
    const graph::NodeId fc = doc.addNode("Linear", QPointF(0, 300));
    step();
    QVERIFY(doc.connectPorts({in, 0}, {flat, 0}));
    step();
    QVERIFY(doc.connectPorts({flat, 0}, {fc, 0}));
    step();
    doc.moveNodes({{fc, QPointF(40, 310)}});
    doc.moveNodes({{fc, QPointF(60, 320)}});  // same drag: merges
    doc.finishMove();
    step();
    QVERIFY(doc.setAttribute(fc, "in_features", int64_t(784)));
    step();
    QVERIFY(doc.renameNode(fc, "classifier"));
    step();
    const QString fragment = doc.copy({flat, fc});
    const QList<graph::NodeId> pasted = doc.paste(fragment, QPointF(200, 0));
    QCOMPARE(pasted.size(), 2);
    step();
    doc.removeNodes({flat});
    step();
    doc.disconnectPort({pasted[1], 0});
    step();
    doc.autoLayout();
    step();
    QCOMPARE(doc.undoStack()->count(), int(states.size()) - 1);
    for (size_t i = states.size() - 1; i > 0; --i) {
      QCOMPARE(json(doc), states[i]);
      doc.undoStack()->undo();
    }
    QCOMPARE(json(doc), states[0]);
    for (size_t i = 1; i < states.size(); ++i) {
      doc.undoStack()->redo();
      QCOMPARE(json(doc), states[i]);
    }
  }

  void movesOfOneDragMergeIntoOneStep() {
    GraphDocument doc;
    const graph::NodeId a = doc.addNode("ReLU", QPointF(0, 0));
    const int before = doc.undoStack()->count();
    for (int i = 1; i <= 5; ++i) doc.moveNodes({{a, QPointF(10.0 * i, 0)}});
    QCOMPARE(doc.undoStack()->count(), before + 1);
    doc.finishMove();
    doc.moveNodes({{a, QPointF(0, 99)}});  // a new drag: a new step
    QCOMPARE(doc.undoStack()->count(), before + 2);
    doc.undoStack()->undo();
    QCOMPARE(doc.graph().node(a).x, 50.0);
    doc.undoStack()->undo();
    QCOMPARE(doc.graph().node(a).x, 0.0);
    QCOMPARE(doc.graph().node(a).y, 0.0);
  }

  void rejectedEditsChangeNothing() {
    std::vector<graph::NodeId> ids;
    GraphDocument doc;
    doc.setGraph(mlp(784, &ids));
    QVERIFY(!doc.isModified());
    const std::string before = json(doc);
    QString reason;
    QVERIFY(!doc.setAttribute(ids[2], "in_features", int64_t(0), &reason));
    QVERIFY2(reason.contains("in_features"), qPrintable(reason));
    QVERIFY(!doc.setAttribute(ids[2], "no_such", int64_t(1), &reason));
    QVERIFY2(reason.contains("no_such"), qPrintable(reason));
    QVERIFY(!doc.connectPorts({ids[3], 0}, {ids[0], 0}, &reason));  // Output has no output port
    QVERIFY(!reason.isEmpty());
    QVERIFY(!doc.connectPorts({ids[2], 0}, {ids[1], 0}, &reason));  // would close a cycle
    QVERIFY2(reason.contains("cycle"), qPrintable(reason));
    QVERIFY(!doc.connectPorts({ids[1], 0}, {ids[2], 0}, &reason));  // already that edge
    QVERIFY(!doc.renameNode(ids[2], "1fc", &reason));
    QVERIFY(!reason.isEmpty());
    QVERIFY(!doc.renameNode(ids[2], "flatten", &reason));  // taken
    QVERIFY(!reason.isEmpty());
    QVERIFY(doc.paste("{not json", QPointF(), &reason).isEmpty());
    QVERIFY(!reason.isEmpty());
    QCOMPARE(json(doc), before);
    QCOMPARE(doc.undoStack()->count(), 0);
  }

  void connectingAConnectedInputReplacesItsEdge() {
    GraphDocument doc;
    const graph::NodeId a = doc.addNode("Input", QPointF());
    const graph::NodeId b = doc.addNode("Input", QPointF());
    const graph::NodeId r = doc.addNode("ReLU", QPointF());
    QVERIFY(doc.connectPorts({a, 0}, {r, 0}));
    const std::string before = json(doc);
    QVERIFY(doc.connectPorts({b, 0}, {r, 0}));
    QCOMPARE(doc.graph().source_of({r, 0}), std::optional<graph::PortRef>(graph::PortRef{b, 0}));
    QCOMPARE(doc.graph().edges().size(), size_t(1));
    const auto name = [&](graph::NodeId id) { return QString::fromStdString(doc.graph().node(id).name); };
    QCOMPARE(doc.undoStack()->undoText(),
             QString("Replace %1 → %3 with %2 → %3").arg(name(a), name(b), name(r)));
    doc.undoStack()->undo();
    QCOMPARE(json(doc), before);
  }

  void copyPasteGivesFreshIdsAndNames() {
    std::vector<graph::NodeId> ids;
    GraphDocument doc;
    doc.setGraph(mlp(784, &ids));
    const QString fragment = doc.copy({ids[1], ids[2]});
    QVERIFY(fragment.contains("\"kiln-graph\""));
    const QList<graph::NodeId> pasted = doc.paste(fragment, QPointF(300, 0));
    QCOMPARE(pasted.size(), 2);
    for (graph::NodeId id : pasted) {
      QVERIFY(std::find(ids.begin(), ids.end(), id) == ids.end());
      QVERIFY(doc.graph().node(id).name != "flatten" && doc.graph().node(id).name != "fc");
    }
    QCOMPARE(doc.graph().node(pasted[1]).op, std::string("Linear"));
    QCOMPARE(doc.graph().node(pasted[1]).x, 300.0);
    QCOMPARE(std::get<int64_t>(doc.graph().node(pasted[1]).attrs.at("in_features")), int64_t(784));
    // The edge between the copies came along; the edge from the Input did not.
    QCOMPARE(doc.graph().source_of({pasted[1], 0}), std::optional<graph::PortRef>(graph::PortRef{pasted[0], 0}));
    QVERIFY(!doc.graph().source_of({pasted[0], 0}));
    QCOMPARE(doc.undoStack()->count(), 1);
    QCOMPARE(doc.undoStack()->undoText(), QString("Paste 2 node(s)"));
    // Into an empty document the original names are kept.
    GraphDocument other;
    const QList<graph::NodeId> copied = other.paste(fragment, QPointF());
    QCOMPARE(other.graph().node(copied[0]).name, std::string("flatten"));
  }

  void shapeErrorAttachesToTheRightNode() {
    std::vector<graph::NodeId> ids;
    GraphDocument doc;
    doc.setGraph(mlp(100, &ids));  // Flatten gives 784 features, Linear expects 100
    QVERIFY(!doc.analysis().ok());
    const std::vector<std::string> fc = doc.analysis().problems_of(ids[2]);
    QCOMPARE(fc.size(), size_t(1));
    QVERIFY2(QString::fromStdString(fc[0]).contains("784"), fc[0].c_str());
    QVERIFY(doc.analysis().problems_of(ids[0]).empty());
    QVERIFY(doc.analysis().problems_of(ids[1]).empty());
    QVERIFY(doc.setAttribute(ids[2], "in_features", int64_t(784)));  // fix it
    QVERIFY(doc.analysis().ok());
    QCOMPARE(doc.analysis().type_of({ids[2], 0})->str(), std::string("f32[N, 10]"));
    doc.undoStack()->undo();
    QVERIFY(!doc.analysis().ok());
  }

  void autoLayoutIsOneUndoStep() {
    GraphDocument doc;
    graph::Graph g = mlp(784);
    for (const graph::Node& n : std::vector<graph::Node>(g.nodes())) g.set_position(n.id, 0, 0);
    doc.setGraph(g);
    const std::string before = json(doc);
    doc.autoLayout();
    QCOMPARE(doc.undoStack()->count(), 1);
    QVERIFY(json(doc) != before);
    std::set<std::pair<double, double>> positions;
    for (const graph::Node& n : doc.graph().nodes()) positions.insert({n.x, n.y});
    QCOMPARE(positions.size(), doc.graph().nodes().size());  // no two nodes on one spot
    doc.undoStack()->undo();
    QCOMPARE(json(doc), before);
  }

  void countAttributeBelowAConnectedPortIsRefused() {
    GraphDocument doc;
    const graph::NodeId a = doc.addNode("Input", QPointF());
    const graph::NodeId add = doc.addNode("Add", QPointF());
    QVERIFY(doc.setAttribute(add, "num_inputs", int64_t(3)));
    QVERIFY(doc.connectPorts({a, 0}, {add, 2}));
    QString reason;
    QVERIFY(!doc.setAttribute(add, "num_inputs", int64_t(2), &reason));
    QVERIFY(!reason.isEmpty());
    QCOMPARE(std::get<int64_t>(doc.graph().node(add).attrs.at("num_inputs")), int64_t(3));
  }
};

QTEST_MAIN(TestGraphDocument)
#include "test_graph_document.moc"
