// GraphDocument: every edit is one undo step that restores the exact previous graph.
#include <QFile>
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

  // Item: input-dimension attributes follow an upstream edit in the same undo step.
  void inputDimensionsFollowUpstreamEdits() {
    QFile f(KILN_SOURCE_DIR "/projects/templates/fashion_mnist_cnn.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    GraphDocument doc;
    doc.setGraph(graph::from_json(f.readAll().toStdString()));
    auto id = [&](const char* name) { return doc.graph().find_by_name(name)->id; };
    auto attr = [&](const char* node, const char* name) {
      return std::get<int64_t>(doc.graph().node(id(node)).attrs.at(name));
    };
    QVERIFY(doc.analysis().ok());
    const std::string original = json(doc);

    // conv1 32 -> 64 channels: conv2.in_channels follows; no output size changes.
    QVERIFY(doc.setAttribute(id("conv1"), "out_channels", int64_t(64)));
    QCOMPARE(doc.undoStack()->count(), 1);
    QCOMPARE(attr("conv2", "in_channels"), int64_t(64));
    QCOMPARE(attr("conv2", "out_channels"), int64_t(64));
    QCOMPARE(attr("conv1", "in_channels"), int64_t(1));
    QCOMPARE(attr("fc1", "in_features"), int64_t(3136));
    QVERIFY(doc.analysis().ok());
    QVERIFY2(doc.undoStack()->text(0).contains("conv2.in_channels = 64"), qPrintable(doc.undoStack()->text(0)));
    const std::string wider = json(doc);

    // conv2 64 -> 16 channels: the flattened size 16 * 7 * 7 reaches fc1, not fc2.
    QVERIFY(doc.setAttribute(id("conv2"), "out_channels", int64_t(16)));
    QCOMPARE(attr("fc1", "in_features"), int64_t(16 * 7 * 7));
    QCOMPARE(attr("fc2", "in_features"), int64_t(128));
    QCOMPARE(attr("fc1", "out_features"), int64_t(128));
    QVERIFY(doc.analysis().ok());
    // pool2 kernel 2 -> 1 (stride follows the kernel): 16 * 14 * 14 features.
    QVERIFY(doc.setAttribute(id("pool2"), "kernel_size", std::vector<int64_t>{1, 1}));
    QCOMPARE(attr("fc1", "in_features"), int64_t(16 * 14 * 14));
    QVERIFY(doc.analysis().ok());
    const std::string last = json(doc);
    QCOMPARE(doc.undoStack()->count(), 3);

    // Undo restores both the edit and what followed it; redo brings them back.
    doc.undoStack()->undo();
    QCOMPARE(attr("fc1", "in_features"), int64_t(16 * 7 * 7));
    doc.undoStack()->undo();
    QCOMPARE(json(doc), wider);
    doc.undoStack()->undo();
    QCOMPARE(json(doc), original);
    for (int i = 0; i < 3; ++i) doc.undoStack()->redo();
    QCOMPARE(json(doc), last);

    // The user's own value of an input dimension is kept (and reported as a problem).
    QVERIFY(doc.setAttribute(id("conv2"), "in_channels", int64_t(8)));
    QCOMPARE(attr("conv2", "in_channels"), int64_t(8));
    QVERIFY(!doc.analysis().ok());
    // ... and not "fixed" by a later upstream edit, since it did not match before.
    QVERIFY(doc.setAttribute(id("conv1"), "out_channels", int64_t(48)));
    QCOMPARE(attr("conv2", "in_channels"), int64_t(8));
  }

  void batchNormFollowsConvolution() {
    graph::Graph g;
    const graph::NodeId in = g.add_node("Input", "image");
    const graph::NodeId conv = g.add_node("Conv2d", "conv", {{"in_channels", int64_t(1)}, {"out_channels", int64_t(8)}});
    const graph::NodeId bn = g.add_node("BatchNorm2d", "bn", {{"num_features", int64_t(8)}});
    g.connect({in, 0}, {conv, 0});
    g.connect({conv, 0}, {bn, 0});
    GraphDocument doc;
    doc.setGraph(g);
    QVERIFY(doc.analysis().problems_of(bn).empty());
    const std::string before = json(doc);
    QVERIFY(doc.setAttribute(conv, "out_channels", int64_t(24)));
    QCOMPARE(std::get<int64_t>(doc.graph().node(bn).attrs.at("num_features")), int64_t(24));
    QVERIFY(doc.analysis().problems_of(bn).empty());
    doc.undoStack()->undo();
    QCOMPARE(json(doc), before);
    // An edit that changes no shape downstream is a plain one-command step.
    QVERIFY(doc.setAttribute(conv, "bias", false));
    QCOMPARE(doc.undoStack()->command(doc.undoStack()->count() - 1)->childCount(), 0);
  }

  // Read-only (a training run): every edit is refused with the reason, nothing changes.
  void readOnlyRefusesEveryEdit() {
    std::vector<graph::NodeId> ids;
    GraphDocument doc;
    doc.setGraph(mlp(784, &ids));
    QSignalSpy spy(&doc, &GraphDocument::readOnlyChanged);
    doc.setReadOnly(true, "a training run uses this graph");
    QCOMPARE(spy.count(), 1);
    QVERIFY(doc.isReadOnly());
    const std::string before = json(doc);
    QString reason;
    QCOMPARE(doc.addNode("ReLU", QPointF(), &reason), graph::NodeId(-1));
    QCOMPARE(reason, QString("a training run uses this graph"));
    reason.clear();
    QVERIFY(!doc.setAttribute(ids[2], "out_features", int64_t(5), &reason));
    QVERIFY(!reason.isEmpty());
    QVERIFY(!doc.renameNode(ids[2], "x", &reason));
    QVERIFY(!doc.connectPorts({ids[0], 0}, {ids[2], 0}, &reason));
    QVERIFY(doc.paste(doc.copy({ids[1]}), QPointF(10, 10), &reason).isEmpty());
    doc.removeNodes({ids[1]});
    doc.disconnectPort({ids[2], 0});
    doc.moveNodes({{ids[0], QPointF(500, 500)}});
    doc.autoLayout();
    QCOMPARE(json(doc), before);
    QCOMPARE(doc.undoStack()->count(), 0);
    doc.setReadOnly(false);
    QCOMPARE(spy.count(), 2);
    QVERIFY(doc.setAttribute(ids[2], "out_features", int64_t(5)));
    QCOMPARE(doc.undoStack()->count(), 1);
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
