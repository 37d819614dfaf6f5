// GraphCanvas, LayerPalette and ProblemsPanel driven by simulated mouse and keyboard.
#include <QDropEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QTest>

#include "engine/graph/op_schema.h"
#include "test_graph_util.h"
#include "widgets/graph/layer_palette.h"
#include "widgets/graph/problems_panel.h"
#include "widgets/graph/property_editor.h"

using namespace kiln;
using namespace kiln::studio;
using namespace kiln::studio::testing;

class TestGraphCanvas : public QObject {
  Q_OBJECT

  // A shown canvas of 900 x 700 on a document holding `g`, at 100% zoom.
  struct Fixture {
    GraphDocument doc;
    GraphCanvas canvas{&doc};
    explicit Fixture(const graph::Graph& g = {}) {
      doc.setGraph(g);
      canvas.resize(900, 700);
      canvas.show();
      QVERIFY(QTest::qWaitForWindowExposed(&canvas));
      canvas.centerOn(0, 200);
    }
    NodeItem* item(graph::NodeId id) { return canvas.nodeItem(id); }
  };

 private slots:
  void paletteListsEveryOpByCategoryWithTooltips() {
    LayerPalette palette;
    const auto all = graph::OpRegistry::global().all();
    int ops = 0;
    for (int c = 0; c < palette.tree()->topLevelItemCount(); ++c) ops += palette.tree()->topLevelItem(c)->childCount();
    QCOMPARE(ops, int(all.size()));
    for (const char* op : {"LSTM", "GRU", "RNN", "MultiheadAttention", "TransformerEncoderLayer", "PositionalEmbedding"}) {
      QTreeWidgetItem* item = palette.itemForOp(op);
      QVERIFY2(item && item->parent()->text(0) == "Sequence", op);  // the sequence layers have their category
    }
    QTreeWidgetItem* conv = palette.itemForOp("Conv2d");
    QVERIFY(conv);
    QCOMPARE(conv->parent()->text(0), QString::fromStdString(graph::OpRegistry::global().get("Conv2d").category));
    QVERIFY(conv->toolTip(0).contains(QString::fromStdString(graph::OpRegistry::global().get("Conv2d").description).toHtmlEscaped()));
    // Dragging an op carries its name as application/x-kiln-op.
    const QModelIndex index = palette.tree()->indexFromItem(conv);
    std::unique_ptr<QMimeData> mime(palette.tree()->model()->mimeData({index}));
    QVERIFY(mime);
    QCOMPARE(QString::fromUtf8(mime->data(kOpMimeType)), QString("Conv2d"));
  }

  void paletteSearchFiltersByNameAndDescription() {
    LayerPalette palette;
    QTest::keyClicks(palette.searchBox(), "conv");
    QVERIFY(!palette.itemForOp("Conv2d")->isHidden());
    QVERIFY(palette.itemForOp("Linear")->isHidden());
    QVERIFY(palette.itemForOp("Linear")->parent()->isHidden() || !palette.itemForOp("Conv2d")->parent()->isHidden());
    palette.setFilter("sigmoid(x)");  // only in SiLU's description besides Sigmoid's name
    QVERIFY(!palette.itemForOp("SiLU")->isHidden());
    QVERIFY(palette.itemForOp("Conv2d")->isHidden());
    palette.setFilter("");
    QVERIFY(!palette.itemForOp("Linear")->isHidden());
  }

  void paletteDoubleClickAddsALayer() {
    Fixture f;
    LayerPalette palette;
    palette.resize(250, 600);
    palette.show();
    QVERIFY(QTest::qWaitForWindowExposed(&palette));
    QObject::connect(&palette, &LayerPalette::layerActivated, &f.canvas, &GraphCanvas::addLayer);
    QSignalSpy activated(&palette, &LayerPalette::layerActivated);
    QTreeWidgetItem* item = palette.itemForOp("Linear");
    palette.tree()->scrollToItem(item);
    const QPoint at = palette.tree()->visualItemRect(item).center();
    // A real double click: press/release, then the double-click press and its release.
    QTest::mouseClick(palette.tree()->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QTest::mouseDClick(palette.tree()->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(f.doc.graph().nodes().size(), size_t(1));
    const graph::Node n = f.doc.graph().nodes().front();
    QCOMPARE(n.op, std::string("Linear"));
    QVERIFY(f.item(n.id));
    QCOMPARE(f.canvas.selectedNodes(), QList<graph::NodeId>{n.id});
    // A second one does not land on the first.
    const graph::NodeId second = f.canvas.addLayer("Linear");
    QVERIFY(!f.item(second)->sceneBoundingRect().intersects(
        f.item(n.id)->sceneBoundingRect().adjusted(2, 2, -2, -2)));
  }

  void paletteBuildsAChainAfterTheSelectedNode() {
    Fixture f;
    const graph::NodeId input = f.canvas.addLayer("Input");
    const graph::NodeId flatten = f.canvas.addLayer("Flatten");  // Input selected: appended
    QCOMPARE(f.doc.graph().source_of({flatten, 0}), std::optional<graph::PortRef>(graph::PortRef{input, 0}));
    QVERIFY(f.doc.graph().node(flatten).y > f.doc.graph().node(input).y);
    const graph::NodeId fc = f.canvas.addLayer("Linear");
    // in_features taken from the input: 784, not the default.
    QCOMPARE(std::get<int64_t>(f.doc.graph().node(fc).attrs.at("in_features")), int64_t(784));
    const graph::NodeId out = f.canvas.addLayer("Output");
    QVERIFY2(f.doc.analysis().ok(), f.doc.analysis().problems.empty() ? "" : f.doc.analysis().problems[0].message.c_str());
    QCOMPARE(f.canvas.selectedNodes(), QList<graph::NodeId>{out});
    // Each append is one undo step; an Output has no output to append to.
    QCOMPARE(f.doc.undoStack()->count(), 4);
    const graph::NodeId lone = f.canvas.addLayer("ReLU");
    QVERIFY(!f.doc.graph().source_of({lone, 0}));
    f.doc.undoStack()->undo();
    f.doc.undoStack()->undo();
    QVERIFY(!f.doc.graph().contains(out));
    QVERIFY(f.doc.graph().consumers_of({fc, 0}).empty());
    QCOMPARE(f.canvas.addLayer("NoSuchOp"), graph::NodeId(-1));
  }

  void paletteChainOfConvolutionsFitsChannels() {
    Fixture f;
    f.canvas.addLayer("Input");
    const graph::NodeId c1 = f.canvas.addLayer("Conv2d");
    const graph::NodeId bn = f.canvas.addLayer("BatchNorm2d");
    f.canvas.addLayer("ReLU");
    const graph::NodeId c2 = f.canvas.addLayer("Conv2d");
    auto attr = [&](graph::NodeId id, const char* name) { return std::get<int64_t>(f.doc.graph().node(id).attrs.at(name)); };
    QCOMPARE(attr(c1, "in_channels"), int64_t(1));
    QCOMPARE(attr(bn, "num_features"), attr(c1, "out_channels"));
    QCOMPARE(attr(c2, "in_channels"), attr(c1, "out_channels"));
    f.canvas.addLayer("Flatten");
    f.canvas.addLayer("Linear");
    f.canvas.addLayer("Output");
    QVERIFY2(f.doc.analysis().ok(), f.doc.analysis().problems.empty() ? "" : f.doc.analysis().problems[0].message.c_str());
    QCOMPARE(f.doc.undoStack()->count(), 8);  // one step per palette double-click
    for (int i = 0; i < 8; ++i) f.doc.undoStack()->undo();
    QVERIFY(f.doc.graph().nodes().empty());
  }

  void droppingAnOpAddsItWhereItIsDropped() {
    Fixture f;
    QMimeData mime;
    mime.setData(kOpMimeType, "ReLU");
    const QPoint at = f.canvas.mapFromScene(QPointF(120, 80));
    QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(f.canvas.viewport(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(f.canvas.viewport(), &drop);
    QCOMPARE(f.doc.graph().nodes().size(), size_t(1));
    const graph::Node& n = f.doc.graph().nodes().front();
    QCOMPARE(n.op, std::string("ReLU"));
    QVERIFY(std::abs(n.x - 120) <= 2 && std::abs(n.y - 80) <= 2);
  }

  void dragFromOutputToInputConnectsAndLabelsTheEdge() {
    std::vector<graph::NodeId> ids;
    graph::Graph g = mlp(784, &ids);
    g.disconnect({ids[1], 0});  // Input -/-> Flatten
    Fixture f(g);
    QSignalSpy messages(&f.canvas, &GraphCanvas::message);
    drag(&f.canvas, f.item(ids[0])->outputPos(0), f.item(ids[1])->inputPos(0));
    QCOMPARE(f.doc.graph().source_of({ids[1], 0}), std::optional<graph::PortRef>(graph::PortRef{ids[0], 0}));
    EdgeItem* edge = f.canvas.edgeItem({ids[1], 0});
    QVERIFY(edge);
    QCOMPARE(edge->label(), QString("f32[N, 1, 28, 28]"));
    QCOMPARE(f.canvas.edgeItem({ids[2], 0})->label(), QString("f32[N, 784]"));
    QVERIFY(f.doc.analysis().ok());
    QVERIFY(!messages.isEmpty());
    // Ctrl+Z on the canvas takes the connection back.
    QTest::keyClick(&f.canvas, Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(!f.doc.graph().source_of({ids[1], 0}));
    QVERIFY(!f.canvas.edgeItem({ids[1], 0}));
    QTest::keyClick(&f.canvas, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(f.doc.graph().source_of({ids[1], 0}));
  }

  void connectingIntoAFedInputSaysWhichEdgeItReplaced() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    QSignalSpy messages(&f.canvas, &GraphCanvas::message);
    // flatten -> output, where fc -> output is.
    drag(&f.canvas, f.item(ids[1])->outputPos(0), f.item(ids[3])->inputPos(0));
    QCOMPARE(f.doc.graph().source_of({ids[3], 0}), std::optional<graph::PortRef>(graph::PortRef{ids[1], 0}));
    QCOMPARE(messages.count(), 1);
    QCOMPARE(messages.takeFirst().at(0).toString(), QString("Replaced fc → output with flatten → output"));
    QCOMPARE(f.doc.undoStack()->count(), 1);
    QCOMPARE(f.doc.undoStack()->undoText(), QString("Replace fc → output with flatten → output"));
    f.doc.undoStack()->undo();
    QCOMPARE(f.doc.graph().source_of({ids[3], 0}), std::optional<graph::PortRef>(graph::PortRef{ids[2], 0}));
    // A plain connection still says "Connected".
    f.doc.disconnectPort({ids[3], 0});
    drag(&f.canvas, f.item(ids[2])->outputPos(0), f.item(ids[3])->inputPos(0));
    QCOMPARE(messages.count(), 1);
    QCOMPARE(messages.takeFirst().at(0).toString(), QString("Connected fc → output"));
  }

  void connectingByMouseFitsTheChannelCount() {
    Fixture f;
    const graph::NodeId input = f.doc.addNode("Input", QPointF(0, 0));
    QVERIFY(f.doc.setAttribute(input, "shape", std::vector<int64_t>{3, 32, 32}));
    const graph::NodeId conv = f.doc.addNode("Conv2d", QPointF(0, 200));
    const int steps = f.doc.undoStack()->count();
    drag(&f.canvas, f.item(input)->outputPos(0), f.item(conv)->inputPos(0));
    QCOMPARE(std::get<int64_t>(f.doc.graph().node(conv).attrs.at("in_channels")), int64_t(3));
    QVERIFY(f.doc.analysis().problems_of(conv).empty());
    QCOMPARE(f.doc.undoStack()->count(), steps + 1);  // connect + fit: one step
    f.doc.undoStack()->undo();
    QCOMPARE(std::get<int64_t>(f.doc.graph().node(conv).attrs.at("in_channels")), int64_t(1));
    QVERIFY(!f.doc.graph().source_of({conv, 0}));
    // A refused drag leaves the redo history alone.
    drag(&f.canvas, f.item(conv)->outputPos(0), f.item(conv)->inputPos(0));  // self-loop
    QVERIFY(f.doc.undoStack()->canRedo());
  }

  void refusedConnectionReportsTheReason() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    const std::string before = json(f.doc);
    QSignalSpy messages(&f.canvas, &GraphCanvas::message);
    // fc -> flatten would close a cycle.
    drag(&f.canvas, f.item(ids[2])->outputPos(0), f.item(ids[1])->inputPos(0));
    QCOMPARE(messages.count(), 1);
    const QString text = messages.takeFirst().at(0).toString();
    QVERIFY2(text.contains("cycle"), qPrintable(text));
    // Output port to output port.
    drag(&f.canvas, f.item(ids[0])->outputPos(0), f.item(ids[1])->outputPos(0));
    QCOMPARE(messages.count(), 1);
    QVERIFY(messages.takeFirst().at(0).toString().contains("input port"));
    QCOMPARE(json(f.doc), before);
    QCOMPARE(f.doc.undoStack()->count(), 0);
  }

  void deleteKeyRemovesTheSelectionAndUndoBringsItBack() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    const std::string before = json(f.doc);
    QTest::mouseClick(f.canvas.viewport(), Qt::LeftButton, Qt::NoModifier,
                      f.canvas.mapFromScene(f.item(ids[1])->scenePos()));
    QCOMPARE(f.canvas.selectedNodes(), QList<graph::NodeId>{ids[1]});
    QTest::keyClick(&f.canvas, Qt::Key_Delete);
    QVERIFY(!f.doc.graph().contains(ids[1]));
    QVERIFY(!f.item(ids[1]));
    QCOMPARE(f.doc.graph().edges().size(), size_t(1));  // fc -> output is left
    QTest::keyClick(&f.canvas, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(json(f.doc), before);
    QVERIFY(f.item(ids[1]));
    // Selecting an edge and deleting removes just that edge.
    EdgeItem* edge = f.canvas.edgeItem({ids[3], 0});
    f.canvas.scene()->clearSelection();
    edge->setSelected(true);
    QTest::keyClick(&f.canvas, Qt::Key_Delete);
    QVERIFY(!f.doc.graph().source_of({ids[3], 0}));
    QCOMPARE(f.doc.graph().nodes().size(), size_t(4));
  }

  void rubberBandSelectsAndDragMovesInOneUndoStep() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    // Rubber band around the first two nodes (they sit at y = 0 and 150).
    drag(&f.canvas, QPointF(-120, -60), QPointF(120, 200));
    QCOMPARE(f.canvas.selectedNodes(), (QList<graph::NodeId>{ids[0], ids[1]}));
    const int steps = f.doc.undoStack()->count();
    drag(&f.canvas, f.item(ids[0])->scenePos() + QPointF(0, 10), f.item(ids[0])->scenePos() + QPointF(80, 40), 6);
    QCOMPARE(f.doc.undoStack()->count(), steps + 1);
    QCOMPARE(f.doc.graph().node(ids[0]).x, 80.0);
    QCOMPARE(f.doc.graph().node(ids[1]).y, 180.0);
    QCOMPARE(f.doc.graph().node(ids[2]).x, 0.0);  // not selected, not moved
    f.doc.undoStack()->undo();
    QCOMPARE(f.doc.graph().node(ids[0]).x, 0.0);
    QCOMPARE(f.item(ids[1])->pos(), QPointF(0, 150));
  }

  void arrowKeysNudgeTheSelection() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    f.canvas.selectNode(ids[1]);
    QTest::keyClick(&f.canvas, Qt::Key_Right);
    QTest::keyClick(&f.canvas, Qt::Key_Down, Qt::ShiftModifier);
    QCOMPARE(f.doc.graph().node(ids[1]).x, 10.0);
    QCOMPARE(f.doc.graph().node(ids[1]).y, 200.0);
    QCOMPARE(f.doc.undoStack()->count(), 2);  // one step per key press
    f.doc.undoStack()->undo();
    QCOMPARE(f.doc.graph().node(ids[1]).y, 150.0);
  }

  void copyPasteWithKeys() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    f.canvas.selectNode(ids[2]);
    QTest::keyClick(&f.canvas, Qt::Key_C, Qt::ControlModifier);
    QTest::keyClick(&f.canvas, Qt::Key_V, Qt::ControlModifier);
    QCOMPARE(f.doc.graph().nodes().size(), size_t(5));
    const QList<graph::NodeId> selected = f.canvas.selectedNodes();
    QCOMPARE(selected.size(), 1);
    QVERIFY(selected[0] != ids[2]);
    QCOMPARE(f.doc.graph().node(selected[0]).op, std::string("Linear"));
    QCOMPARE(f.doc.undoStack()->undoText(), QString("Paste 1 node(s)"));
    // The copy lands beside the original, not on top of it.
    const graph::Node& original = f.doc.graph().node(ids[2]);
    const graph::Node& copy = f.doc.graph().node(selected[0]);
    QVERIFY(copy.x != original.x || copy.y != original.y);
    QVERIFY(f.item(selected[0])->pos() != f.item(ids[2])->pos());
  }

  void shapeErrorShowsOnTheNodeAndInProblemsPanel() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(100, &ids));
    ProblemsPanel problems(&f.doc);
    QObject::connect(&problems, &ProblemsPanel::nodeActivated, &f.canvas, &GraphCanvas::selectNode);
    problems.resize(500, 200);
    problems.show();
    QVERIFY(QTest::qWaitForWindowExposed(&problems));
    QVERIFY(f.item(ids[2])->hasProblems());
    QVERIFY(f.item(ids[2])->toolTip().contains("784"));
    for (int i : {0, 1, 3}) QVERIFY(!f.item(ids[size_t(i)])->hasProblems());
    QCOMPARE(problems.count(), 1);
    QCOMPARE(problems.summaryText(), QString("1 problem(s)"));
    QTreeWidgetItem* row = problems.list()->topLevelItem(0);
    QCOMPARE(row->text(0), QString("fc"));
    QVERIFY(row->text(1).contains("784"));
    // The edge out of the failed node has no type.
    QCOMPARE(f.canvas.edgeItem({ids[3], 0})->label(), QString("?"));
    QSignalSpy activated(&problems, &ProblemsPanel::nodeActivated);
    QTest::mouseClick(problems.list()->viewport(), Qt::LeftButton, Qt::NoModifier,
                      problems.list()->visualItemRect(row).center());
    QCOMPARE(activated.count(), 1);
    QCOMPARE(f.canvas.selectedNodes(), QList<graph::NodeId>{ids[2]});
    // Fixing the attribute clears the error on the node and in the panel.
    QVERIFY(f.doc.setAttribute(ids[2], "in_features", int64_t(784)));
    QVERIFY(!f.item(ids[2])->hasProblems());
    QCOMPARE(problems.count(), 0);
    QCOMPARE(problems.summaryText(), QString("No problems in the graph."));
    QCOMPARE(f.canvas.edgeItem({ids[3], 0})->label(), QString("f32[N, 10]"));
  }

  void syncKeepsItemsOfUnchangedNodes() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    NodeItem* input = f.item(ids[0]);
    EdgeItem* edge = f.canvas.edgeItem({ids[1], 0});
    QVERIFY(f.doc.setAttribute(ids[2], "out_features", int64_t(12)));
    QCOMPARE(f.item(ids[0]), input);  // updated in place, not rebuilt
    QCOMPARE(f.canvas.edgeItem({ids[1], 0}), edge);
    QVERIFY(f.item(ids[2])->badgeText().contains("9.4K params"));  // 784*12 + 12 = 9420
  }

  void zoomAndFit() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    const double z0 = f.canvas.zoom();
    QTest::keyClick(&f.canvas, Qt::Key_Plus);
    QVERIFY(f.canvas.zoom() > z0);
    QTest::keyClick(&f.canvas, Qt::Key_Minus);
    QTest::keyClick(&f.canvas, Qt::Key_Minus);
    QVERIFY(f.canvas.zoom() < z0);
    const double z1 = f.canvas.zoom();
    QWheelEvent wheel(QPointF(400, 300), f.canvas.viewport()->mapToGlobal(QPointF(400, 300)), QPoint(),
                      QPoint(0, 120), Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(f.canvas.viewport(), &wheel);
    QVERIFY(f.canvas.zoom() > z1);
    for (int i = 0; i < 30; ++i) f.canvas.zoomIn();
    QCOMPARE(f.canvas.zoom(), 4.0);  // clamped
    EdgeItem* edge = f.canvas.edgeItem({ids[1], 0});
    QVERIFY(edge->childItems().front()->isVisible());
    for (int i = 0; i < 10; ++i) f.canvas.zoomOut();  // 4 / 1.25^10 = 0.43
    QVERIFY(edge->childItems().front()->isVisible());
    f.canvas.zoomOut();  // 0.34: labels would be unreadable
    QVERIFY(!edge->childItems().front()->isVisible());
    f.canvas.zoomIn();
    QVERIFY(edge->childItems().front()->isVisible());
    f.canvas.fitAll();
    const QRect visible = f.canvas.viewport()->rect();
    for (graph::NodeId id : ids) {
      const QRect r = f.canvas.mapFromScene(f.item(id)->sceneBoundingRect()).boundingRect();
      QVERIFY2(visible.contains(r), qPrintable(QString("node %1 outside the view after fitAll").arg(id)));
    }
  }

  void panWithMiddleButtonAndSpaceDrag() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    f.canvas.setSceneRect(-3000, -3000, 6000, 6000);  // room to pan
    const QPointF c0 = f.canvas.mapToScene(f.canvas.viewport()->rect().center());
    const QPoint a(400, 300), b(300, 200);
    QTest::mousePress(f.canvas.viewport(), Qt::MiddleButton, Qt::NoModifier, a);
    sendMouse(&f.canvas, QEvent::MouseMove, f.canvas.mapToScene(b), Qt::NoButton, Qt::MiddleButton);
    QTest::mouseRelease(f.canvas.viewport(), Qt::MiddleButton, Qt::NoModifier, b);
    const QPointF c1 = f.canvas.mapToScene(f.canvas.viewport()->rect().center());
    QVERIFY2(std::abs((c1 - c0).x() - 100) < 2 && std::abs((c1 - c0).y() - 100) < 2,
             qPrintable(QString("view centre moved by %1, %2").arg((c1 - c0).x()).arg((c1 - c0).y())));
    // Space + left drag pans too, and moves no node.
    QTest::keyPress(&f.canvas, Qt::Key_Space);
    const QPoint start = f.canvas.mapFromScene(f.item(ids[1])->scenePos());
    QTest::mousePress(f.canvas.viewport(), Qt::LeftButton, Qt::NoModifier, start);
    for (int dx = 10; dx <= 50; dx += 10)  // view coordinates: the scene moves under the mouse
      sendMouse(&f.canvas, QEvent::MouseMove, f.canvas.mapToScene(start - QPoint(dx, 0)), Qt::NoButton, Qt::LeftButton);
    QTest::mouseRelease(f.canvas.viewport(), Qt::LeftButton, Qt::NoModifier, start - QPoint(50, 0));
    QTest::keyRelease(&f.canvas, Qt::Key_Space);
    const QPointF c2 = f.canvas.mapToScene(f.canvas.viewport()->rect().center());
    QVERIFY(std::abs((c2 - c1).x() - 50) < 2);
    QCOMPARE(f.doc.undoStack()->count(), 0);
    QCOMPARE(f.canvas.dragMode(), QGraphicsView::RubberBandDrag);
  }

  void draggingAConnectedInputOffDisconnectsIt() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    drag(&f.canvas, f.item(ids[2])->inputPos(0), f.item(ids[2])->inputPos(0) + QPointF(-250, -30));
    QVERIFY(!f.doc.graph().source_of({ids[2], 0}));
    // And from an input port back to an output port connects.
    drag(&f.canvas, f.item(ids[2])->inputPos(0), f.item(ids[1])->outputPos(0));
    QCOMPARE(f.doc.graph().source_of({ids[2], 0}), std::optional<graph::PortRef>(graph::PortRef{ids[1], 0}));
  }

  void portToolTipsNameThePortAndItsType() {
    std::vector<graph::NodeId> ids;
    Fixture f(mlp(784, &ids));
    QCOMPARE(f.canvas.portToolTip(ids[1], PortHit{true, 0}), QString("out (output) of flatten: f32[N, 784]"));
    QCOMPARE(f.canvas.portToolTip(ids[2], PortHit{false, 0}), QString("in (input) of fc: f32[N, 784]"));
  }

  void windowDeletesTheDocumentBeforeTheViews() {
    // A main window creates the document first, so deletes it first; the canvas's
    // scene then clears its selection while a property editor still listens.
    auto* window = new QWidget;
    auto* doc = new GraphDocument(window);
    auto* canvas = new GraphCanvas(doc, window);
    auto* editor = new PropertyEditor(doc, window);
    QObject::connect(canvas, &GraphCanvas::selectionChanged, editor, &PropertyEditor::setSelection);
    doc->setGraph(mlp(784));
    canvas->selectNode(doc->graph().nodes()[1].id);
    QCOMPARE(editor->node(), doc->graph().nodes()[1].id);
    delete window;  // must not touch the deleted document (run under valgrind to see)
  }

  void graphLevelProblemsAndWideNodes() {
    Fixture f;
    ProblemsPanel problems(&f.doc);
    const graph::NodeId add = f.canvas.addLayer("Add");
    // Unconnected inputs on the node, and no Input / no Output for the graph.
    bool graphLevel = false;
    for (int i = 0; i < problems.count(); ++i) {
      QTreeWidgetItem* row = problems.list()->topLevelItem(i);
      if (row->text(0) == "(graph)") graphLevel = true;
      else QCOMPARE(row->text(0), QString("add_1"));
    }
    QVERIFY(graphLevel);
    QSignalSpy activated(&problems, &ProblemsPanel::nodeActivated);
    for (int i = 0; i < problems.count(); ++i) emit problems.list()->itemClicked(problems.list()->topLevelItem(i), 0);
    QCOMPARE(activated.count(), int(f.doc.analysis().problems_of(add).size()));  // graph rows emit nothing
    // Eight input ports still sit apart.
    QVERIFY(f.doc.setAttribute(add, "num_inputs", int64_t(8)));
    NodeItem* item = f.item(add);
    QCOMPARE(item->inputCount(), 8);
    for (int i = 0; i + 1 < 8; ++i)
      QVERIFY(QLineF(item->inputPos(i), item->inputPos(i + 1)).length() >= 2 * kPortRadius + 4);
    QCOMPARE(item->portAt(item->inputPos(7))->port, 7);
  }

  void editsThroughMouseAndKeysUndoBackToTheStart() {
    std::vector<graph::NodeId> ids;
    graph::Graph g = mlp(784, &ids);
    g.disconnect({ids[3], 0});
    Fixture f(g);
    const std::string start = json(f.doc);
    const graph::NodeId relu = f.canvas.addLayer("ReLU");
    f.doc.moveNodes({{relu, QPointF(250, 380)}});
    f.doc.finishMove();
    drag(&f.canvas, f.item(ids[2])->outputPos(0), f.item(relu)->inputPos(0));
    drag(&f.canvas, f.item(relu)->outputPos(0), f.item(ids[3])->inputPos(0));
    QVERIFY(f.doc.analysis().ok());
    f.canvas.selectNode(ids[1]);
    QTest::keyClick(&f.canvas, Qt::Key_Delete);
    const std::string end = json(f.doc);
    const int steps = f.doc.undoStack()->count();
    QCOMPARE(steps, 5);
    for (int i = 0; i < steps; ++i) QTest::keyClick(&f.canvas, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(json(f.doc), start);
    for (int i = 0; i < steps; ++i) QTest::keyClick(&f.canvas, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(json(f.doc), end);
  }
};

QTEST_MAIN(TestGraphCanvas)
#include "test_graph_canvas.moc"
