// Issue 15, finding 8: imported models readable on the canvas. A ResNet-18-shaped graph
// (torchvision's resnet18 block structure, built here so the test needs no PyTorch) piled
// up at one spot is laid out by Auto Layout: no overlaps, every edge going down, no
// crossings, each residual block's chain in one column with its skip edge in a lane beside
// it (not through the block's nodes). Long names are elided in the middle; fallback ONNX
// nodes' attributes read as name / value rows.
#include <QtTest>
#include <cmath>
#include <map>

#include "test_graph_util.h"
#include "widgets/graph/graph_items.h"
#include "widgets/graph/onnx_attribute_rows.h"

using namespace kiln;
using namespace kiln::studio;
using namespace kiln::studio::testing;

namespace {

graph::Attributes conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return {{"in_channels", in},
          {"out_channels", out},
          {"kernel_size", std::vector<int64_t>{k, k}},
          {"stride", std::vector<int64_t>{stride, stride}},
          {"padding", std::vector<int64_t>{k / 2, k / 2}},
          {"bias", false}};
}

// The blocks of ResNet-18 (He et al. 2016; torchvision.models.resnet18): a stem, four
// stages of two BasicBlocks (the first of stages 2-4 with a 1x1 downsample), then pooling
// and the classifier. Channels are small; the structure is the real one (71 nodes).
struct ResNetLike {
  graph::Graph g;
  std::vector<std::vector<graph::NodeId>> chains;  // per block: conv1 ... add, relu
  std::vector<graph::NodeId> order;                // every node, in creation order
};

ResNetLike resnetLike() {
  ResNetLike r;
  graph::Graph& g = r.g;
  g.name = "resnet18-like";
  auto add = [&](const std::string& op, const std::string& name, graph::Attributes a = {}) {
    const graph::NodeId id = g.add_node(op, name, std::move(a));
    r.order.push_back(id);
    return id;
  };
  auto link = [&](graph::NodeId a, graph::NodeId b, int port = 0) { g.connect({a, 0}, {b, port}); };
  graph::NodeId x = add("Input", "input", {{"shape", std::vector<int64_t>{1, 28, 28}}});
  std::vector<graph::NodeId> stem{add("Conv2d", "conv1", conv(1, 8, 7, 2)),
                                  add("BatchNorm2d", "bn1", {{"num_features", int64_t(8)}}),
                                  add("ReLU", "relu"),
                                  add("MaxPool2d", "maxpool", {{"kernel_size", std::vector<int64_t>{3, 3}},
                                                               {"stride", std::vector<int64_t>{2, 2}},
                                                               {"padding", std::vector<int64_t>{1, 1}}})};
  for (graph::NodeId n : stem) link(x, n), x = n;
  int64_t channels = 8;
  for (int stage = 1; stage <= 4; ++stage)
    for (int block = 0; block < 2; ++block) {
      const bool down = stage > 1 && block == 0;
      const int64_t out = down ? channels * 2 : channels;
      const std::string p = "layer" + std::to_string(stage) + "_" + std::to_string(block) + "_";
      std::vector<graph::NodeId> chain{add("Conv2d", p + "conv1", conv(channels, out, 3, down ? 2 : 1)),
                                       add("BatchNorm2d", p + "bn1", {{"num_features", out}}),
                                       add("ReLU", p + "relu1"),
                                       add("Conv2d", p + "conv2", conv(out, out, 3, 1)),
                                       add("BatchNorm2d", p + "bn2", {{"num_features", out}}),
                                       add("Add", p + "add", {{"num_inputs", int64_t(2)}}),
                                       add("ReLU", p + "relu2")};
      graph::NodeId prev = x;
      for (size_t i = 0; i < chain.size(); ++i) link(prev, chain[i]), prev = chain[i];
      graph::NodeId skip = x;
      if (down) {
        const graph::NodeId dc = add("Conv2d", p + "downsample_0", conv(channels, out, 1, 2));
        const graph::NodeId db = add("BatchNorm2d", p + "downsample_1", {{"num_features", out}});
        link(x, dc), link(dc, db), skip = db;
      }
      link(skip, chain[5], 1);  // out += identity: the Add's second input
      r.chains.push_back(chain);
      x = chain.back();
      channels = out;
    }
  std::vector<graph::NodeId> head{add("AdaptiveAvgPool2d", "avgpool", {{"output_size", std::vector<int64_t>{1, 1}}}),
                                  add("Flatten", "flatten"),
                                  add("Linear", "fc", {{"in_features", channels}, {"out_features", int64_t(10)}}),
                                  add("Output", "output")};
  for (graph::NodeId n : head) link(x, n), x = n;
  for (graph::NodeId id : r.order) g.set_position(id, 0, 0);  // all piled up: a bad layout
  return r;
}

// The node's box (its scene rectangle without the port margin).
QRectF box(NodeItem* n) {
  return QRectF(n->pos().x() - n->width() / 2, n->pos().y() - kNodeHeight / 2, n->width(), kNodeHeight);
}

// Pairs of edges whose drawn curves cross (sampled; shared end points do not count).
int crossings(const QList<EdgeItem*>& edges) {
  auto samples = [](const EdgeItem* e) {
    QPolygonF p;
    for (int i = 1; i < 60; ++i) p << e->path().pointAtPercent(i / 60.0);
    return p;
  };
  std::vector<QPolygonF> lines;
  for (const EdgeItem* e : edges) lines.push_back(samples(e));
  int count = 0;
  for (size_t a = 0; a < lines.size(); ++a)
    for (size_t b = a + 1; b < lines.size(); ++b) {
      bool crossed = false;
      for (int i = 0; i + 1 < lines[a].size() && !crossed; ++i)
        for (int j = 0; j + 1 < lines[b].size() && !crossed; ++j) {
          QPointF at;
          crossed = QLineF(lines[a][i], lines[a][i + 1]).intersects(QLineF(lines[b][j], lines[b][j + 1]), &at) ==
                    QLineF::BoundedIntersection;
        }
      count += crossed;
    }
  return count;
}

}  // namespace

class TestGraphReadable : public QObject {
  Q_OBJECT
 private slots:
  void autoLayoutMakesResNetReadable() {
    ResNetLike r = resnetLike();
    QVERIFY(r.g.nodes().size() >= 60);
    GraphDocument doc;
    doc.setGraph(r.g);
    QVERIFY2(doc.analysis().ok(), doc.analysis().problems.empty() ? "" : doc.analysis().problems[0].message.c_str());
    GraphCanvas canvas(&doc);
    canvas.resize(900, 700);
    canvas.show();
    const std::string piled = json(doc);
    QVERIFY(doc.autoLayout());
    QCOMPARE(doc.undoStack()->count(), 1);  // a bad layout changes
    QVERIFY(json(doc) != piled);

    std::vector<NodeItem*> items;
    for (graph::NodeId id : r.order) items.push_back(canvas.nodeItem(id));
    // No two boxes overlap (nor touch: 8 units apart at least).
    for (size_t a = 0; a < items.size(); ++a)
      for (size_t b = a + 1; b < items.size(); ++b)
        QVERIFY2(!box(items[a]).adjusted(-4, -4, 4, 4).intersects(box(items[b]).adjusted(-4, -4, 4, 4)),
                 qPrintable(QStringLiteral("%1 overlaps %2")
                                .arg(toQString(items[a]->node().name), toQString(items[b]->node().name))));
    // Every edge goes down to a later layer.
    QList<EdgeItem*> edges;
    for (const graph::Edge& e : doc.graph().edges()) {
      QVERIFY(doc.graph().node(e.to.node).y > doc.graph().node(e.from.node).y);
      edges << canvas.edgeItem(e.to);
    }
    // Each block's chain (conv1 ... add, relu) in one column.
    for (const auto& chain : r.chains)
      for (graph::NodeId id : chain)
        QVERIFY2(std::abs(doc.graph().node(id).x - doc.graph().node(chain.front()).x) <= 1,
                 doc.graph().node(id).name.c_str());
    // No edge runs through a node it does not join (the skip edges go beside the blocks).
    for (EdgeItem* e : edges) {
      const graph::Edge& ge = e->edge();
      for (NodeItem* n : items) {
        if (n->id() == ge.from.node || n->id() == ge.to.node) continue;
        const QRectF inner = box(n).adjusted(2, 2, -2, -2);
        for (int i = 0; i <= 100; ++i)
          QVERIFY2(!inner.contains(e->path().pointAtPercent(i / 100.0)),
                   qPrintable(QStringLiteral("the edge %1 -> %2 crosses %3")
                                  .arg(toQString(doc.graph().node(ge.from.node).name),
                                       toQString(doc.graph().node(ge.to.node).name), toQString(n->node().name))));
      }
    }
    QCOMPARE(crossings(edges), 0);
    // Readable at a glance: a tall column, not a wide fan (4 skip lanes at most side by side).
    const QRectF all = canvas.scene()->itemsBoundingRect();
    QVERIFY2(all.width() < 3 * (kNodeWidth + 40), qPrintable(QString::number(all.width())));
    // Auto Layout again: nothing to change; undo puts every node back on the pile.
    QVERIFY(!doc.autoLayout());
    QCOMPARE(doc.undoStack()->count(), 1);
    doc.undoStack()->undo();
    QCOMPARE(json(doc), piled);
  }

  void longNamesAreElidedInTheMiddle() {
    const QString name = QStringLiteral("features_denseblock4_denselayer16_conv2_output_projection");
    const QFontMetricsF metrics(QFont{});
    const QString shown = elideMiddle(name, metrics, kNodeWidth - 16);
    QVERIFY(shown.size() < name.size());
    QVERIFY2(shown.startsWith("features") && shown.endsWith("projection") && shown.contains(QChar(0x2026)),
             qPrintable(shown));
    QVERIFY(metrics.horizontalAdvance(shown) <= kNodeWidth - 16);
    QCOMPARE(elideMiddle("fc", metrics, kNodeWidth - 16), QString("fc"));
    graph::Graph g;
    const graph::NodeId id = g.add_node("ReLU", toStd(name));
    GraphDocument doc;
    doc.setGraph(g);
    GraphCanvas canvas(&doc);
    QVERIFY(canvas.nodeItem(id)->toolTip().contains(name));  // the full name on hover
  }

  void onnxAttributesReadAsRows() {
    graph::Node n;
    n.op = "onnx.Resize";
    n.name = "resize";
    n.attrs = {{"onnx_attributes",
                std::string(R"({"mode": {"string": "nearest"}, "axes": {"ints": [2, 3]},)"
                            R"( "cubic_coeff_a": {"float": -0.75}, "exclude_outside": {"int": 0},)"
                            R"( "scales": {"tensor": {"dtype": "float32", "shape": [4], "data": [1, 1, 2, 2]}},)"
                            R"( "table": {"tensor": {"dtype": "int64", "shape": [3, 4], "data": [0,1,2,3,4,5,6,7,8,9,10,11]}}})")},
               {"onnx_names", std::string(R"({"node": "/layer1/Resize", "inputs": ["x"], "outputs": ["y"]})")},
               {"opset", int64_t(17)}};
    QVERIFY(isOnnxFallback(n));
    QVERIFY(isOnnxBookkeeping("onnx_attributes") && !isOnnxBookkeeping("num_features"));
    std::map<QString, QString> rows;
    for (const auto& [k, v] : onnxAttributeRows(n)) rows[k] = v;
    QCOMPARE(rows["ONNX node"], QString("/layer1/Resize"));
    QCOMPARE(rows["opset"], QString("17"));
    QCOMPARE(rows["mode"], QString("nearest"));
    QCOMPARE(rows["axes"], QString("2, 3"));
    QCOMPARE(rows["cubic_coeff_a"], QString("-0.75"));
    QCOMPARE(rows["exclude_outside"], QString("0"));
    QCOMPARE(rows["scales"], QString("float32[4]: 1, 1, 2, 2"));
    QCOMPARE(rows["table"], QString("int64[3, 4]"));  // large tensors: dtype and shape only
    n.attrs["onnx_attributes"] = std::string("{\"mode\": ");
    const auto bad = onnxAttributeRows(n);
    QVERIFY(bad.back().first == "onnx_attributes" && bad.back().second.startsWith("not readable"));
    n.op = "onnx.Initializer";
    QVERIFY(!isOnnxFallback(n));
  }
};

QTEST_MAIN(TestGraphReadable)
#include "test_graph_readable.moc"
