// Schema 5: graph weights kept in the project's blobs table (Project::blobs) instead of
// inline base64 in every graph version, and the schema-4 file of the release before it
// (tests/fixtures/project_schema4.kiln) migrated with its inline weights intact.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

#include "engine/core/error.h"
#include "engine/graph/json.h"
#include "project_test_util.h"

using namespace kiln;
using namespace kiln::projects;
using kiln_test::project_error;

namespace {

// The fixture: kiln-studio --headless --new (fashion_mnist_cnn template, version 1), then
// version 2 = the graph.json `kiln train --onnx tiny.onnx` wrote (Linear 4 -> 3 -> 2 with its
// weights inline) and an autosave of it renamed "tiny (edited)"; made by the schema-4 release.
const QString kFixture = QStringLiteral(KILN_SOURCE_DIR "/tests/fixtures/project_schema4.kiln");

int64_t count(Project& p, const std::string& sql) {
  Statement s = p.database().prepare(sql);
  return s.step() ? s.int64(0) : -1;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.impl()->storage->data(), y.impl()->storage->data(), x.numel() * dtype_size(x.dtype())) == 0;
}

}  // namespace

class TestProjectBlobs : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString copyOfFixture(const QString& name) {
    const QString path = dir_.filePath(name);
    QFile::remove(path);
    if (!QFile::copy(kFixture, path)) qFatal("cannot copy %s", qPrintable(kFixture));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    return path;
  }

 private slots:
  // The release before schema 5 wrote weights inline: its file opens, migrates, and its
  // graph versions and autosave read back unchanged.
  void schema4FileMigrates() {
    const QString path = copyOfFixture("old.kiln");
    QCOMPARE(kiln_test::raw_int(path, "PRAGMA user_version"), int64_t(4));
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("user_version"), int64_t(Project::kSchemaVersion));
    QCOMPARE(count(p, "SELECT COUNT(*) FROM blobs"), int64_t(0));
    QCOMPARE(count(p, "SELECT COUNT(*) FROM sweeps") + count(p, "SELECT COUNT(*) FROM sweep_trials"), int64_t(0));  // schema 7
    const auto versions = p.graph_versions();
    QCOMPARE(versions.size(), size_t(2));
    QCOMPARE(graph::from_json(versions[0].graph_json, &p.blobs()).name, std::string("Fashion-MNIST CNN"));
    const graph::Graph tiny = graph::from_json(versions[1].graph_json, &p.blobs());
    QCOMPARE(tiny.initial_state.size(), size_t(4));  // two Linear layers' weight and bias
    QCOMPARE(tiny.initial_state.at("n0_Gemm.weight").shape(), (Shape{3, 4}));
    const auto autosaved = p.autosave_if_newer();
    QVERIFY(autosaved);
    const graph::Graph edited = graph::from_json(*autosaved, &p.blobs());
    QCOMPARE(edited.name, std::string("tiny (edited)"));
    QCOMPARE(edited.initial_state.size(), tiny.initial_state.size());
    for (const auto& [key, t] : tiny.initial_state) QVERIFY2(same_bytes(edited.initial_state.at(key), t), key.c_str());
    QCOMPARE(p.purge_unreferenced_blobs(), 0);
  }

  // Saved through the store, the weights leave the JSON, are stored once however often the
  // graph is saved, and read back byte for byte.
  void weightsAreStoredOnce() {
    const QString path = copyOfFixture("once.kiln");
    Project p = Project::open(path.toStdString());
    const graph::Graph tiny = graph::from_json(p.graph_versions()[1].graph_json, &p.blobs());
    const std::string json = graph::to_json(tiny, &p.blobs());
    QVERIFY2(json.find("\"data\"") == std::string::npos, json.c_str());
    QVERIFY(json.find("\"blob\": \"sha256:") != std::string::npos);
    QCOMPARE(count(p, "SELECT COUNT(*) FROM blobs"), int64_t(4));
    p.save_graph(json, "first");
    graph::Graph renamed = tiny;
    renamed.name = "renamed";
    p.save_graph(graph::to_json(renamed, &p.blobs()), "second");
    p.autosave(graph::to_json(renamed, &p.blobs()));
    QCOMPARE(count(p, "SELECT COUNT(*) FROM blobs"), int64_t(4));
    QCOMPARE(count(p, "SELECT SUM(size) FROM blobs"), int64_t((12 + 3 + 6 + 2) * 4));  // f32 bytes
    const graph::Graph back = graph::from_json(p.latest_graph()->graph_json, &p.blobs());
    QCOMPARE(back.initial_state.size(), tiny.initial_state.size());
    for (const auto& [key, t] : tiny.initial_state) QVERIFY2(same_bytes(back.initial_state.at(key), t), key.c_str());
    // The same JSON is written for the same graph: Save compares texts to skip a new version.
    QCOMPARE(graph::to_json(back, &p.blobs()), graph::to_json(renamed, &p.blobs()));
  }

  // Weights only an overwritten autosave referred to are purged; the rest stay.
  void unreferencedBlobsArePurged() {
    const QString path = copyOfFixture("purge.kiln");
    Project p = Project::open(path.toStdString());
    graph::Graph tiny = graph::from_json(p.graph_versions()[1].graph_json, &p.blobs());
    p.save_graph(graph::to_json(tiny, &p.blobs()), "kept");
    graph::Graph changed = tiny;
    changed.initial_state["n0_Gemm.bias"] = Tensor::from_host(std::vector<float>{7, 8, 9}.data(), 3, DType::f32, {3});
    p.autosave(graph::to_json(changed, &p.blobs()));
    QCOMPARE(count(p, "SELECT COUNT(*) FROM blobs"), int64_t(5));
    QCOMPARE(p.purge_unreferenced_blobs(), 0);  // the autosave still refers to it
    p.autosave(graph::to_json(tiny, &p.blobs()));
    QCOMPARE(p.purge_unreferenced_blobs(), 1);
    QCOMPARE(count(p, "SELECT COUNT(*) FROM blobs"), int64_t(4));
    const graph::Graph back = graph::from_json(p.latest_graph()->graph_json, &p.blobs());
    QVERIFY(same_bytes(back.initial_state.at("n0_Gemm.bias"), tiny.initial_state.at("n0_Gemm.bias")));
  }

  // Bad input: JSON with blob references read without the project, a blob missing or
  // damaged in the file: a clear error naming the key and the file, no crash.
  void missingOrDamagedBlobsAreReported() {
    const QString path = copyOfFixture("bad.kiln");
    Project p = Project::open(path.toStdString());
    const graph::Graph tiny = graph::from_json(p.graph_versions()[1].graph_json, &p.blobs());
    p.save_graph(graph::to_json(tiny, &p.blobs()), "with blobs");
    const std::string json = p.latest_graph()->graph_json;
    try {
      graph::from_json(json);
      QFAIL("a blob reference read without its project");
    } catch (const ValueError& e) {
      QVERIFY2(QString(e.what()).contains("project's blob table") && QString(e.what()).contains("sha256:"), e.what());
    }
    Statement key = p.database().prepare("SELECT key FROM blobs WHERE size = 12");  // n0_Gemm.bias, 3 floats
    QVERIFY(key.step());
    const std::string bias = key.text(0);
    p.database().prepare("UPDATE blobs SET data = zeroblob(12) WHERE key = ?").bind(1, bias).run();
    QString e = project_error([&] { graph::from_json(json, &p.blobs()); });
    QVERIFY2(e.contains("is damaged") && e.contains(QString::fromStdString(bias)) && e.contains(path), qPrintable(e));
    p.database().prepare("DELETE FROM blobs WHERE key = ?").bind(1, bias).run();
    e = project_error([&] { graph::from_json(json, &p.blobs()); });
    QVERIFY2(e.contains("is missing") && e.contains(QString::fromStdString(bias)), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestProjectBlobs)
#include "test_project_blobs.moc"
