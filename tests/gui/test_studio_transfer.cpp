// Issue 13 in the Studio: transfer learning. A node's Trainable box and Freeze up to here /
// Unfreeze all are undoable and saved in graph JSON; Replace classifier head gives the last
// Linear a new class count with fresh weights (or names where the search stopped); a short
// run from the window leaves frozen weights and batch-norm statistics byte-identical and
// trains the rest.
#include <QCheckBox>
#include <QtTest>

#include "app/studio/main_window.h"
#include "app/studio/training_job.h"
#include "app/studio/training_session.h"
#include "engine/graph/graph_module.h"
#include "engine/core/random.h"
#include "engine/graph/json.h"
#include "engine/graph/transfer.h"
#include "engine/io/checkpoint.h"
#include "projects/project.h"
#include "studio_test_util.h"
#include "test_graph_util.h"
#include "widgets/graph/graph_items.h"
#include "widgets/graph/property_editor.h"
#include "widgets/training/log_panel.h"

using namespace kiln;
using namespace kiln::studio;
using kiln::studio::testing::json;

namespace {
std::string readTemplate(const char* name) {
  QFile f(QStringLiteral(KILN_SOURCE_DIR "/projects/templates/%1.json").arg(name));
  return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}
const graph::Node& named(const GraphDocument& doc, const char* name) { return *doc.graph().find_by_name(name); }
}  // namespace

class TestStudioTransfer : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("KilnTest"); }

  void trainableBoxIsUndoableAndSaved() {
    std::vector<graph::NodeId> ids;
    GraphDocument doc;
    doc.setGraph(testing::mlp(784, &ids));  // input, flatten, fc, output
    PropertyEditor editor(&doc);
    editor.setNode(ids[1]);
    QVERIFY(editor.trainableBox()->isHidden());  // Flatten has no parameters
    editor.setNode(ids[2]);
    QCheckBox* box = editor.trainableBox();
    QVERIFY(!box->isHidden() && box->isChecked());
    const std::string before = json(doc);
    box->click();
    QVERIFY(!doc.graph().node(ids[2]).trainable);
    QCOMPARE(doc.undoStack()->count(), 1);
    QCOMPARE(doc.undoStack()->undoText(), QString("Freeze fc"));
    QCOMPARE(doc.frozenParameters(), int64_t(784 * 10 + 10));
    QVERIFY(json(doc).find("\"trainable\": false") != std::string::npos);  // graph JSON, as the CLI writes it
    QVERIFY(graph::from_json(json(doc)).node(ids[2]).trainable == false);
    // drawn muted with the frozen count in its badge
    GraphCanvas canvas(&doc);
    QVERIFY(canvas.nodeItem(ids[2])->frozen());
    QVERIFY2(canvas.nodeItem(ids[2])->badgeText().startsWith("frozen " + shortCount(784 * 10 + 10) + " params"),
             qPrintable(canvas.nodeItem(ids[2])->badgeText()));
    QVERIFY(!canvas.nodeItem(ids[1])->frozen());  // no parameters: nothing to show
    doc.undoStack()->undo();
    QCOMPARE(json(doc), before);
    QVERIFY(box->isChecked());
    QVERIFY(!canvas.nodeItem(ids[2])->frozen());
    doc.undoStack()->redo();
    QVERIFY(!box->isChecked());
  }

  void freezeUpToHereFreezesAncestorsOnly() {
    graph::Graph g = graph::from_json(readTemplate("residual_cnn"));
    GraphDocument doc;
    doc.setGraph(g);
    const graph::NodeId add = named(doc, "block1_add").id;
    doc.freezeUpTo(add);
    QCOMPARE(doc.undoStack()->count(), 1);
    for (const char* frozen : {"image", "stem_conv", "stem_bn", "stem_relu", "block1_conv1", "block1_bn2", "block1_add"})
      QVERIFY2(!named(doc, frozen).trainable, frozen);
    for (const char* free : {"block1_relu2", "block2_conv1", "block2_shortcut"})
      QVERIFY2(named(doc, free).trainable, free);
    QVERIFY(doc.frozenParameters() > 0);
    QVERIFY(training_blockers(doc.graph(), doc.analysis()).empty());
    doc.freezeUpTo(named(doc, "logits").id);  // everything: Train is blocked, saying why
    const std::vector<std::string> blockers = training_blockers(doc.graph(), doc.analysis());
    QVERIFY(blockers.size() == 1 && blockers[0].find("every layer with parameters is frozen") == 0);
    doc.undoStack()->undo();
    doc.freezeUpTo(add);  // nothing new: no undo step
    QCOMPARE(doc.undoStack()->index(), 1);
    doc.unfreezeAll();
    QCOMPARE(doc.undoStack()->count(), 2);
    for (const graph::Node& n : doc.graph().nodes()) QVERIFY(n.trainable);
    doc.undoStack()->undo();
    QVERIFY(!named(doc, "stem_bn").trainable);
    doc.undoStack()->undo();
    QCOMPARE(json(doc), graph::to_json(g));
  }

  void replaceHeadChangesOutFeaturesAndDropsWeights() {
    graph::Graph g = graph::from_json(readTemplate("fashion_mnist_cnn"));
    graph::GraphModule init(g);
    for (const auto& [key, t] : init.state_dict()) g.initial_state[key] = t;
    GraphDocument doc;
    doc.setGraph(g);
    QString reason;
    const graph::NodeId head = doc.replaceHead(5, &reason);
    QVERIFY2(head >= 0, qPrintable(reason));
    QCOMPARE(doc.graph().node(head).name, std::string("fc2"));
    QCOMPARE(std::get<int64_t>(doc.graph().node(head).attrs.at("out_features")), int64_t(5));
    QVERIFY(doc.analysis().ok());  // shape inference passes: the Output receives [N, 5]
    QCOMPARE(doc.analysis().type_of({head, 0})->str(), std::string("f32[N, 5]"));
    QVERIFY(!doc.graph().initial_state.count("fc2.weight") && !doc.graph().initial_state.count("fc2.bias"));
    QVERIFY(doc.graph().initial_state.count("fc1.weight"));  // the rest keeps its weights
    doc.undoStack()->undo();
    QVERIFY(doc.graph() == g);
    QVERIFY(doc.replaceHead(0, &reason) < 0);
    QVERIFY2(reason.contains("at least 1"), qPrintable(reason));
    // No Linear before the Output: the error names the node where the search stopped.
    graph::Graph conv = graph::from_json(readTemplate("fashion_mnist_cnn"));
    conv.remove_node(conv.find_by_name("fc2")->id);
    conv.connect({conv.find_by_name("relu3")->id, 0}, {conv.find_by_name("logits")->id, 0});
    conv.remove_node(conv.find_by_name("fc1")->id);
    conv.connect({conv.find_by_name("flatten")->id, 0}, {conv.find_by_name("relu3")->id, 0});
    doc.setGraph(conv);
    QVERIFY(doc.replaceHead(10, &reason) < 0);
    QVERIFY2(reason.contains("image") || reason.contains("conv2"), qPrintable(reason));
    QCOMPARE(doc.undoStack()->count(), 0);
  }

  void studioTrainingKeepsFrozenWeights() {
    KILN_QSKIP_UNLESS_DEP(kiln::studio::test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(tmp.filePath("t.kiln"), "residual_cnn"));
    // Known starting weights (as an imported model's): the initialization, in the graph.
    graph::Graph g = w.document()->graph();
    manual_seed(7);
    graph::GraphModule init(g);
    for (const auto& [key, t] : init.state_dict()) g.initial_state[key] = t.clone();
    w.document()->setGraph(g);
    w.document()->freezeUpTo(named(*w.document(), "block1_add").id);
    QVERIFY(w.replaceClassifierHead(10));
    const std::string head = w.document()->graph().node(graph::find_head(w.document()->graph())).name;
    kiln::studio::test::quickSettings(w, 256);
    QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
    // The optimizer got only the trainable parameters.
    const int64_t frozenCount = w.document()->frozenParameters(),
                  total = w.document()->analysis().total_parameters;
    QVERIFY(frozenCount > 0);
    QVERIFY2(w.logPanel()->text().contains(QStringLiteral("training %1 parameters (%2 frozen)").arg(total - frozenCount).arg(frozenCount)),
             qPrintable(w.logPanel()->text()));
    const auto runs = w.project()->runs();
    QCOMPARE(runs.size(), size_t{1});
    const std::vector<int> epochs = w.project()->checkpoint_epochs(runs[0].id);
    QVERIFY2(!epochs.empty(), qPrintable(w.logPanel()->text()));
    QTemporaryDir ckpt;
    w.project()->restore_checkpoint(runs[0].id, epochs.back(), ckpt.path().toStdString());
    const io::Checkpoint c = io::load_checkpoint(ckpt.path().toStdString());
    int frozen = 0;
    bool headChanged = false;
    for (const auto& [key, value] : c.model) {
      const std::string node = key.substr(0, key.find('.'));
      const graph::Node* n = w.document()->graph().find_by_name(node);
      QVERIFY2(n, key.c_str());
      if (!n->trainable) {  // weights and running statistics: byte-identical
        QVERIFY2(value.to_vector<double>() == g.initial_state.at(key).to_vector<double>(), key.c_str());
        ++frozen;
      }
      if (key == head + ".weight") headChanged = value.to_vector<float>() != g.initial_state.at(key).to_vector<float>();
    }
    QVERIFY(frozen >= 10);  // stem and block 1: convolutions, batch norms with their statistics
    QVERIFY(headChanged);
  }
};

QTEST_MAIN(TestStudioTransfer)
#include "test_studio_transfer.moc"
