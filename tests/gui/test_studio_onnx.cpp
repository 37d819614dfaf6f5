// Kiln Studio's File > Import ONNX / Export ONNX / Export C++, driven through the menu actions
// with the file dialogs replaced by a chooser that returns temporary paths: export -> import
// round trip with shapes on the edges, the trained weights of the project's run exported, unsupported ops and corrupt files reported in the log
// with the document untouched, an invalid graph refused with its problems, exports recorded in
// the open project.
#include <QAction>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

#include <onnx/onnx_pb.h>

#include "app/studio/main_window.h"
#include "app/studio/training_session.h"
#include "engine/graph/json.h"
#include "engine/io/checkpoint.h"
#include "engine/onnx/model.h"
#include "projects/project.h"
#include "studio_test_util.h"
#include "tests/onnx/model_builder.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_items.h"
#include "widgets/graph/property_editor.h"
#include "widgets/training/log_panel.h"

using namespace kiln::studio;
namespace ot = kiln::onnx::test;
using kiln::graph::NodeId;

namespace {
// Makes the window's file dialogs return `path` (and records which kind was asked for).
void answerWith(MainWindow& w, const QString& path, MainWindow::PathKind* asked = nullptr) {
  w.setPathChooser([path, asked](const QString&, const QString&, MainWindow::PathKind kind) {
    if (asked) *asked = kind;
    return path;
  });
}

QStringList edgeLabels(const MainWindow& w) {
  QStringList labels;
  for (QGraphicsItem* item : w.canvas()->scene()->items())
    if (item->type() == EdgeItem::Type) labels << static_cast<EdgeItem*>(item)->label();
  return labels;
}

int countOps(const kiln::graph::Graph& g, const std::string& prefix) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

void writeFile(const QString& path, const std::string& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  QCOMPARE(f.write(bytes.data(), static_cast<qint64>(bytes.size())), static_cast<qint64>(bytes.size()));
}
}  // namespace

class TestStudioOnnx : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QCoreApplication::setOrganizationName("KilnTest"); }

  void exportThenImportShowsShapes() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_cnn");
    const QString onnxPath = tmp.filePath("cnn.onnx");
    MainWindow::PathKind asked = MainWindow::PathKind::Directory;
    answerWith(w, onnxPath, &asked);
    w.exportOnnxAction()->trigger();
    QCOMPARE(asked, MainWindow::PathKind::SaveFile);
    QVERIFY2(QFileInfo(onnxPath).size() > 1000, qPrintable(w.lastError()));
    QVERIFY(w.logPanel()->text().contains("exported ONNX to " + onnxPath));

    w.newEmpty();
    QCOMPARE(countOps(w.document()->graph(), "onnx."), 0);
    answerWith(w, onnxPath, &asked);
    w.importOnnxAction()->trigger();
    QCOMPARE(asked, MainWindow::PathKind::OpenFile);
    const kiln::graph::Graph& g = w.document()->graph();
    // native layers (issue 13), their weights in the graph, no initializer nodes
    QVERIFY2(countOps(g, "Conv2d") == 2, qPrintable(w.lastError()));
    QCOMPARE(countOps(g, "onnx."), 0);
    QVERIFY(g.initial_state.count("conv1.weight") == 1);
    QVERIFY(w.document()->analysis().ok());
    QVERIFY(!w.document()->isModified());
    QVERIFY(w.windowTitle().contains("cnn.onnx"));
    // every edge shows its inferred shape; the first conv's output is [N, 32, 28, 28] or so
    const QStringList labels = edgeLabels(w);
    QVERIFY(!labels.isEmpty());
    for (const QString& l : labels) QVERIFY2(l.startsWith("f32[") || l.startsWith("i64["), qPrintable(l));
    QVERIFY2(labels.filter("[N, 10]").size() >= 1, qPrintable(labels.join(" | ")));
    // laid out: not every node at the origin
    std::set<std::pair<double, double>> positions;
    for (const auto& n : g.nodes()) positions.insert({n.x, n.y});
    QVERIFY(positions.size() > 3);

    // the imported model exports again with its own weights, and that file imports too
    const QString again = tmp.filePath("again.onnx");
    answerWith(w, again);
    w.exportOnnxAction()->trigger();
    QVERIFY2(QFile::exists(again), qPrintable(w.lastError()));
    answerWith(w, again);
    QVERIFY(w.importOnnx(again));
    QCOMPARE(countOps(w.document()->graph(), "Conv2d"), 2);
  }

  void unsupportedOpsAreListedAndNothingChanges() {
    QTemporaryDir tmp;
    ::onnx::GraphProto g;
    g.set_name("odd");
    *g.add_input() = ot::value_info("x", ::onnx::TensorProto::FLOAT, {-1, 4});
    *g.add_output() = ot::value_info("y", ::onnx::TensorProto::FLOAT, {-1, 4});
    ot::add_node(g, "Relu", {"x"}, {"a"}, "relu0");
    ot::add_node(g, "FrobnicateA", {"a"}, {"b"}, "frob_a");
    ot::add_node(g, "FrobnicateB", {"b"}, {"y"}, "frob_b");
    const QString path = tmp.filePath("odd.onnx");
    writeFile(path, ot::model_with(g, 17).SerializeAsString());

    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    const std::string before = kiln::graph::to_json(w.document()->graph());
    answerWith(w, path);
    w.importOnnxAction()->trigger();
    const QString log = w.logPanel()->text();
    for (const char* needle : {"FrobnicateA", "frob_a", "FrobnicateB", "frob_b", "odd.onnx"})
      QVERIFY2(log.contains(needle), qPrintable(needle + (": " + log)));
    QVERIFY(!log.contains("imported "));
    QCOMPARE(kiln::graph::to_json(w.document()->graph()), before);
  }

  // Issue 15 finding 8: a node kept as onnx.<op> shows its ONNX attributes as rows.
  void fallbackNodeAttributesAreRows() {
    QTemporaryDir tmp;
    ::onnx::GraphProto g;
    g.set_name("transposed");
    *g.add_input() = ot::value_info("x", ::onnx::TensorProto::FLOAT, {-1, 3, 4});
    *g.add_output() = ot::value_info("y", ::onnx::TensorProto::FLOAT, {-1, 4, 3});
    ot::set_ints(ot::add_node(g, "Transpose", {"x"}, {"y"}, "/block/Transpose_with_a_long_onnx_name"), "perm", {0, 2, 1});
    const QString path = tmp.filePath("t.onnx");
    writeFile(path, ot::model_with(g, 17).SerializeAsString());
    MainWindow w;
    w.setSilent(true);
    QVERIFY2(w.importOnnx(path), qPrintable(w.lastError()));
    const kiln::graph::Node* t = nullptr;
    for (const auto& n : w.document()->graph().nodes())
      if (n.op == "onnx.Transpose") t = &n;
    QVERIFY(t);
    PropertyEditor* editor = w.findChild<PropertyEditor*>();
    QVERIFY(editor);
    editor->setNode(t->id);
    QVERIFY(editor->onnxRow("perm"));
    QCOMPARE(editor->onnxRow("perm")->text(), QString("0, 2, 1"));
    QCOMPARE(editor->onnxRow("ONNX node")->text(), QString("/block/Transpose_with_a_long_onnx_name"));
    QCOMPARE(editor->onnxRow("opset")->text(), QString("17"));
    QVERIFY(!editor->editor("onnx_attributes") && !editor->editor("onnx_names"));  // no raw JSON
  }

  void corruptFilesAreRefused() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    const QString good = tmp.filePath("mlp.onnx");
    QVERIFY(w.exportOnnx(good));
    QFile f(good);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    const std::string before = kiln::graph::to_json(w.document()->graph());

    const QString truncated = tmp.filePath("truncated.onnx");
    writeFile(truncated, bytes.left(bytes.size() / 2).toStdString());
    QVERIFY(!w.importOnnx(truncated));
    QVERIFY2(w.lastError().contains("truncated.onnx"), qPrintable(w.lastError()));

    std::string noise(4096, '\0');
    uint32_t x = 12345;
    for (char& c : noise) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
    const QString random = tmp.filePath("random.onnx");
    writeFile(random, noise);
    answerWith(w, random);
    w.importOnnxAction()->trigger();
    QVERIFY2(w.lastError().contains("random.onnx"), qPrintable(w.lastError()));

    QVERIFY(!w.importOnnx(tmp.path()));
    QVERIFY2(w.lastError().contains("is a directory"), qPrintable(w.lastError()));
    QVERIFY(!w.importOnnx(tmp.filePath("missing.onnx")));
    QVERIFY2(w.lastError().contains("missing.onnx"), qPrintable(w.lastError()));
    QCOMPARE(kiln::graph::to_json(w.document()->graph()), before);
  }

  void invalidGraphIsNotExported() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    w.newFromTemplate("fashion_mnist_mlp");
    const kiln::graph::Graph& g = w.document()->graph();
    const kiln::graph::Node* flatten = nullptr;
    for (const auto& n : g.nodes())
      if (n.op == "Flatten") flatten = &n;
    QVERIFY(flatten);
    w.document()->disconnectPort({flatten->id, 0});
    QVERIFY(!w.document()->analysis().ok());
    const QString path = tmp.filePath("bad.onnx");
    answerWith(w, path);
    w.exportOnnxAction()->trigger();
    QVERIFY(!QFile::exists(path));
    QVERIFY2(w.lastError().contains("The graph has problems") && w.lastError().contains("'flatten'") &&
                 w.lastError().contains("not connected"),
             qPrintable(w.lastError()));
    const QString dir = tmp.filePath("cpp");
    answerWith(w, dir);
    w.exportCppAction()->trigger();
    QVERIFY(!QFileInfo::exists(dir));
    QVERIFY2(w.lastError().contains("'flatten'"), qPrintable(w.lastError()));
  }

  // Issue 15, finding 9: no file dialog for a graph that cannot be exported; dialogs start
  // beside the project or the imported model; C++ goes into a new folder, named after the project.
  void exportsAskOnlyForValidGraphsAndAreNamedAfterTheProject() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(tmp.filePath("my_cnn.kiln"), "fashion_mnist_cnn"));
    QCOMPARE(w.dialogDirectory(), QDir(tmp.path()).absolutePath());
    QCOMPARE(w.exportName(), QString("my_cnn"));
    NodeId flatten = -1;
    for (const auto& n : w.document()->graph().nodes())
      if (n.op == "Flatten") flatten = n.id;
    w.document()->disconnectPort({flatten, 0});
    int asked = 0;
    w.setPathChooser([&](const QString&, const QString&, MainWindow::PathKind) {
      ++asked;
      return tmp.filePath("never");
    });
    w.exportOnnxAction()->trigger();
    QVERIFY2(w.lastError().contains("The graph has problems"), qPrintable(w.lastError()));
    w.exportCppAction()->trigger();
    QCOMPARE(asked, 0);
    w.document()->undoStack()->undo();
    QVERIFY(w.document()->analysis().ok());

    const QString cppDir = tmp.filePath("exports/new/cpp");  // none of it exists yet
    answerWith(w, cppDir);
    w.exportCppAction()->trigger();
    for (const char* f : {"my_cnn.h", "my_cnn.cpp", "CMakeLists.txt"})
      QVERIFY2(QFile::exists(cppDir + "/" + f), qPrintable(QString(f) + " missing; " + w.lastError()));

    QVERIFY(QDir(tmp.path()).mkdir("models"));
    const QString onnxPath = tmp.filePath("models/small_net.onnx");
    answerWith(w, onnxPath);
    w.exportOnnxAction()->trigger();
    QVERIFY2(QFile::exists(onnxPath), qPrintable(w.lastError()));
    QVERIFY(w.importOnnx(onnxPath));
    QCOMPARE(w.dialogDirectory(), QDir(tmp.filePath("models")).absolutePath());
    QCOMPARE(w.exportName(), QString("small_net"));
  }

  void exportsAreRecordedInTheProject() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(tmp.filePath("p.kiln"), "fashion_mnist_cnn"));
    const QString onnxPath = tmp.filePath("model.onnx"), cppDir = tmp.filePath("cpp");
    answerWith(w, onnxPath);
    w.exportOnnxAction()->trigger();
    QVERIFY2(QFile::exists(onnxPath), qPrintable(w.lastError()));
    MainWindow::PathKind asked = MainWindow::PathKind::OpenFile;
    answerWith(w, cppDir, &asked);
    w.exportCppAction()->trigger();
    QCOMPARE(asked, MainWindow::PathKind::Directory);
    for (const char* f : {"main.cpp", "CMakeLists.txt", "example_inputs.safetensors"})
      QVERIFY2(QFile::exists(cppDir + "/" + f), qPrintable(f + (" missing; " + w.lastError())));
    QVERIFY(!QDir(cppDir).entryList({"*.h"}).isEmpty());

    auto st = w.project()->database().prepare("SELECT kind, path FROM exports ORDER BY id");
    QStringList rows;
    while (st.step()) rows << QString::fromStdString(st.text(0) + " " + st.text(1));
    QCOMPARE(rows, QStringList({"onnx " + QFileInfo(onnxPath).absoluteFilePath(),
                                "cpp " + QFileInfo(cppDir).absoluteFilePath()}));

    // a file where a folder is expected, a folder where a file is expected: plain errors
    answerWith(w, onnxPath);
    w.exportCppAction()->trigger();
    QVERIFY2(w.lastError().contains("is a file, not a folder"), qPrintable(w.lastError()));
    QVERIFY(!w.exportOnnx(cppDir));
    QVERIFY2(w.lastError().contains("is a directory"), qPrintable(w.lastError()));
    // cancelling the dialog does nothing
    w.setPathChooser([](const QString&, const QString&, MainWindow::PathKind) { return QString(); });
    const int lines = w.logPanel()->lineCount();
    w.exportOnnxAction()->trigger();
    w.importOnnxAction()->trigger();
    QCOMPARE(w.logPanel()->lineCount(), lines);
  }

  // An imported model's weights go to the project's blobs (schema 5), once: Save, another
  // Save after an edit and the autosave add no bytes, and the project reopens with them.
  void importedWeightsAreStoredOnceInTheProject() {
    QTemporaryDir tmp;
    const QString onnxPath = tmp.filePath("cnn.onnx");
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(tmp.filePath("p.kiln"), "fashion_mnist_cnn"));
    answerWith(w, onnxPath);
    w.exportOnnxAction()->trigger();
    QVERIFY2(QFile::exists(onnxPath), qPrintable(w.lastError()));
    QVERIFY2(w.importOnnx(onnxPath), qPrintable(w.lastError()));
    const auto state = w.document()->graph().initial_state;
    QVERIFY(state.size() >= 4);
    const QString importedPath = tmp.filePath("imported.kiln");  // an import starts a new document
    QVERIFY2(w.saveAs(importedPath), qPrintable(w.lastError()));
    auto blobBytes = [&] {
      auto s = w.project()->database().prepare("SELECT COUNT(*), SUM(size) FROM blobs");
      s.step();
      return std::make_pair(s.int64(0), s.int64(1));
    };
    const auto stored = blobBytes();
    QCOMPARE(stored.first, int64_t(state.size()));
    const std::string json = w.project()->latest_graph()->graph_json;
    QVERIFY(json.find("\"data\"") == std::string::npos && json.find("\"blob\"") != std::string::npos);
    QVERIFY(json.size() < 20000);  // the weights (~100k floats) are not in the text
    const auto versions = w.project()->graph_versions().size();
    w.document()->renameNode(w.document()->graph().nodes().back().id, "renamed_output");
    QVERIFY(w.save());
    w.document()->renameNode(w.document()->graph().nodes().back().id, "renamed_again");
    w.autosave();
    QCOMPARE(w.project()->graph_versions().size(), versions + 1);
    QCOMPARE(blobBytes(), stored);
    QVERIFY(w.openProject(importedPath));  // reopened: the autosave is not restored when silent
    QCOMPARE(w.document()->graph().initial_state.size(), state.size());
    for (const auto& [key, t] : state) {
      const kiln::Tensor back = w.document()->graph().initial_state.at(key).contiguous(), want = t.contiguous();
      QVERIFY2(back.shape() == want.shape() && std::memcmp(back.impl()->storage->data(), want.impl()->storage->data(),
                                                           want.numel() * kiln::dtype_size(want.dtype())) == 0,
               key.c_str());
    }
  }

  void exportUsesTheTrainedWeights() {
    KILN_QSKIP_UNLESS_DEP(test::haveFashionMnist(), "dataset-fashion-mnist", "no Fashion-MNIST in /usr/share/datasets/fashion-mnist");
    QTemporaryDir tmp;
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(tmp.filePath("p.kiln"), "fashion_mnist_mlp"));
    const QString untrained = tmp.filePath("untrained.onnx"), trained = tmp.filePath("trained.onnx");
    QVERIFY(w.exportOnnx(untrained));
    QVERIFY(w.logPanel()->text().contains("with the layers' initialization (untrained)"));
    test::quickSettings(w, 256);
    QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
    const auto runs = w.project()->runs();
    QCOMPARE(runs.size(), size_t{1});
    const std::vector<int> epochs = w.project()->checkpoint_epochs(runs[0].id);
    QVERIFY(!epochs.empty());
    answerWith(w, trained);
    w.exportOnnxAction()->trigger();
    QVERIFY2(w.logPanel()->text().contains(QString("with the weights of run %1 (epoch %2)").arg(runs[0].id).arg(epochs.back())),
             qPrintable(w.logPanel()->text()));
    QTemporaryDir ckpt;
    w.project()->restore_checkpoint(runs[0].id, epochs.back(), ckpt.path().toStdString());
    const kiln::io::Checkpoint c = kiln::io::load_checkpoint(ckpt.path().toStdString());
    const kiln::onnx::Model after = kiln::onnx::load_model(trained.toStdString());
    const kiln::onnx::Model before = kiln::onnx::load_model(untrained.toStdString());
    int compared = 0;
    for (const auto& [key, value] : c.model) {
      if (!after.graph.initializers.count(key)) continue;
      QCOMPARE(after.graph.initializers.at(key).to_vector<float>(), value.to_vector<float>());
      ++compared;
    }
    QVERIFY(compared >= 4);  // fc1 and fc2, weight and bias
    QVERIFY(after.graph.initializers.at("fc1.weight").to_vector<float>() !=
            before.graph.initializers.at("fc1.weight").to_vector<float>());
    // By default the run's preprocessing is in front: raw 8-bit grey images, the class names in
    // the metadata; unchecked, the network's own input.
    QVERIFY(w.exportPreprocessingAction()->isChecked());
    QVERIFY2(w.logPanel()->text().contains("and its preprocessing (input: uint8 images"), qPrintable(w.logPanel()->text()));
    QCOMPARE(after.graph.inputs.size(), size_t{1});
    QCOMPARE(after.graph.inputs[0].name, std::string("image"));
    QCOMPARE(after.graph.inputs[0].elem_type, 2);  // UINT8
    QCOMPARE(after.graph.inputs[0].shape.back().value, int64_t{1});
    QFile file(trained);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("\"T-shirt/top\",\"Trouser\""));
    const QString plain = tmp.filePath("plain.onnx");
    w.exportPreprocessingAction()->setChecked(false);
    QVERIFY(w.exportOnnx(plain));
    const kiln::onnx::Model network = kiln::onnx::load_model(plain.toStdString());
    QCOMPARE(network.graph.inputs.size(), size_t{1});
    QCOMPARE(network.graph.inputs[0].name, before.graph.inputs[0].name);
    QCOMPARE(network.graph.inputs[0].elem_type, 1);  // FLOAT
    // Export C++: with the preprocessing, a predict program and the run's images.json beside the
    // class (tests/cli/test_codegen_run.sh builds and runs such a program); without, the network alone.
    w.exportPreprocessingAction()->setChecked(true);
    const QString cpp = tmp.filePath("cpp"), plainCpp = tmp.filePath("plain_cpp");
    QVERIFY2(w.exportCpp(cpp), qPrintable(w.lastError()));
    QVERIFY2(w.logPanel()->text().contains("and a predict program with its preprocessing (images.json)"),
             qPrintable(w.logPanel()->text()));
    QVERIFY(QFile::exists(cpp + "/predict.cpp"));
    QFile images(cpp + "/images.json");
    QVERIFY(images.open(QIODevice::ReadOnly));
    const QByteArray json = images.readAll();
    QVERIFY2(json.contains("\"T-shirt/top\"") && json.contains("\"height\": 28"), json.constData());
    QFile cmake(cpp + "/CMakeLists.txt");
    QVERIFY(cmake.open(QIODevice::ReadOnly));
    QVERIFY(cmake.readAll().contains("_predict predict.cpp"));
    w.exportPreprocessingAction()->setChecked(false);
    QVERIFY2(w.exportCpp(plainCpp), qPrintable(w.lastError()));
    QVERIFY(!QFile::exists(plainCpp + "/predict.cpp") && !QFile::exists(plainCpp + "/images.json"));
  }
};

QTEST_MAIN(TestStudioOnnx)
#include "test_studio_onnx.moc"
