// Issue 14, the Studio side: a user's own data. The Dataset panel reads a generated PNG folder
// (three classes, one corrupt file) and a generated CSV table and shows what it found; bad input
// (an empty class folder, one class, a ragged CSV, a folder gone when the project is reopened)
// gives the engine's message naming the file, never a crash, and keeps the settings. kiln-studio
// --headless trains a template on each for one epoch end to end (the graph fitted to the data),
// and the run records the dataset and evaluates with its class names.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "app/studio/main_window.h"
#include "app/studio/templates.h"
#include "app/studio/training_job.h"
#include "engine/graph/fit_data.h"
#include "engine/graph/footprint.h"
#include "engine/data/image_source.h"
#include "engine/graph/json.h"
#include "projects/project.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/dataset_panel.h"

using namespace kiln::studio;
using kiln::studio::test::writeFile;
using kiln::studio::test::writeImageFolder;
using kiln::studio::test::writeProject;

namespace {

// A CSV with header x1,x2,kind: two well separated classes "low" and "high", `rows` rows.
QByteArray tableCsv(int rows) {
  QByteArray t = "x1,x2,kind\n";
  for (int i = 0; i < rows; ++i) {
    const bool high = i % 2;
    t += QByteArray::number((high ? 5.0 : -5.0) + 0.1 * (i % 7)) + "," + QByteArray::number(0.3 * (i % 5)) + "," +
         (high ? "high" : "low") + "\n";
  }
  return t;
}

bool waitLoaded(DatasetPanel& panel) {
  return QTest::qWaitFor([&] { return panel.isLoaded() || !panel.errorText().isEmpty(); }, 60000);
}

DatasetSettings source(const std::string& name, const QString& path) {
  DatasetSettings s;
  s.name = name;
  s.path = path.toStdString();
  return s;
}

using kiln::test::studio;

}  // namespace

class TestStudioData : public QObject {
  Q_OBJECT
 private slots:
  void imageFolderSummary() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog", "fox"}, 4);
    writeFile(root + "/dog/broken.png", QByteArray("\x89PNG\r\n\x1a\n not really a png", 26));
    DatasetPanel panel;
    panel.setBaseDirectory(dir.path());
    panel.setSettings(source("imagefolder", root));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    const DatasetSummary& s = panel.summary();
    QCOMPARE(s.class_names, QStringList({"cat", "dog", "fox"}));
    QCOMPARE(s.class_counts, std::vector<int64_t>({4, 4, 4}));
    QCOMPARE(s.sample_shape, std::vector<int64_t>({3, 16, 16}));
    QCOMPARE(s.skipped.size(), 1);
    QVERIFY2(s.skipped[0].contains("broken.png"), qPrintable(s.skipped[0]));
    QVERIFY2(panel.statusLabel()->text().contains("broken.png"), qPrintable(panel.statusLabel()->text()));
    QVERIFY2(panel.statusLabel()->text().contains("3 channel(s), 16 × 16"), qPrintable(panel.statusLabel()->text()));
    QVERIFY(panel.sampleGrid()->count() > 0);
    QCOMPARE(panel.sampleGrid()->image(0).size(), QSize(16, 16));
    QVERIFY(QStringList({"cat", "dog", "fox"}).contains(panel.sampleGrid()->label(0)));
    QCOMPARE(panel.classTable()->rowCount(), 3);
    QCOMPARE(panel.classTable()->item(1, 0)->text(), QString("dog"));
    QCOMPARE(panel.classTable()->item(1, 1)->text(), QString("4"));
    // The choice is what the project stores.
    const DatasetSettings back = DatasetSettings::from_json(panel.settings().to_json());
    QCOMPARE(back.name, std::string("imagefolder"));
    QCOMPARE(back.path, root.toStdString());
    QCOMPARE(back.spec(), "imagefolder:" + root.toStdString());
    // What the training job opens: the same spec and split settings, the run's seed.
    const kiln::data::DatasetSource source = back.source(7);
    QCOMPARE(source.spec, back.spec());
    QCOMPARE(source.seed, uint64_t(7));
    QCOMPARE(source.test_fraction, back.test_fraction);
  }

  void csvSummaryAndRaggedRows() {
    QTemporaryDir dir;
    writeFile(dir.filePath("t.csv"), tableCsv(40));
    DatasetPanel panel;
    panel.setSettings(source("csv", dir.filePath("t.csv")));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    const DatasetSummary& s = panel.summary();
    QCOMPARE(s.class_names, QStringList({"high", "low"}));
    QCOMPARE(s.class_counts, std::vector<int64_t>({20, 20}));
    QCOMPARE(s.sample_shape, std::vector<int64_t>({2}));
    QCOMPARE(s.columns, QStringList({"x1", "x2", "kind"}));
    QCOMPARE(panel.labelCombo()->currentText(), QString("kind"));
    QCOMPARE(panel.sampleGrid()->count(), 0);  // tables have no thumbnails
    QVERIFY2(s.details.contains("40 rows") && s.details.contains("2 features"), qPrintable(s.details));

    // Another label column: x2's five values become the classes.
    panel.labelCombo()->setCurrentIndex(panel.labelCombo()->findText("x2"));
    emit panel.labelCombo()->activated(panel.labelCombo()->currentIndex());
    QVERIFY(waitLoaded(panel));
    QCOMPARE(panel.settings().label, std::string("x2"));
    QCOMPARE(panel.summary().class_names.size(), 5);

    // A ragged row: the engine's message names the file and line, shown as it is.
    QByteArray ragged = tableCsv(10);
    ragged += "1.0,2.0,low,extra\n";
    writeFile(dir.filePath("ragged.csv"), ragged);
    panel.setSettings(source("csv", dir.filePath("ragged.csv")));
    QVERIFY(waitLoaded(panel));
    QVERIFY(!panel.isLoaded());
    QVERIFY2(panel.errorText().contains("ragged.csv:12"), qPrintable(panel.errorText()));
    QVERIFY(panel.statusLabel()->text().contains("ragged.csv:12"));
    QCOMPARE(panel.settings().path, dir.filePath("ragged.csv").toStdString());  // kept
  }

  void badFolders() {
    QTemporaryDir dir;
    // An empty class folder.
    writeImageFolder(dir.filePath("empty"), {"a", "b"}, 2);
    QVERIFY(QDir().mkpath(dir.filePath("empty/c")));
    DatasetPanel panel;
    panel.setSettings(source("imagefolder", dir.filePath("empty")));
    QVERIFY(waitLoaded(panel));
    QVERIFY(!panel.isLoaded());
    QVERIFY2(panel.errorText().contains(dir.filePath("empty/c")) || panel.errorText().contains("'c'"),
             qPrintable(panel.errorText()));
    // One class.
    writeImageFolder(dir.filePath("one"), {"only"}, 3);
    panel.setSettings(source("imagefolder", dir.filePath("one")));
    QVERIFY(waitLoaded(panel));
    QVERIFY(!panel.isLoaded());
    QVERIFY2(panel.errorText().contains("one class ('only')"), qPrintable(panel.errorText()));
    QCOMPARE(panel.classTable()->rowCount(), 0);
    QCOMPARE(panel.sampleGrid()->count(), 0);
  }

  // A project whose image folder is gone opens with the message in the Dataset panel; its
  // graph and settings are kept, and saving keeps the dataset choice.
  void missingFolderOnReopen() {
    QTemporaryDir dir;
    const QString root = dir.filePath("gone");
    writeImageFolder(root, {"a", "b"}, 2);
    const QString file = dir.filePath("p.kiln");
    writeProject(file, "image_folder_cnn", source("imagefolder", root));
    QVERIFY(QDir(root).removeRecursively());
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.openProject(file));
    auto* panel = w.findChild<DatasetPanel*>();
    QVERIFY(panel);
    QVERIFY(waitLoaded(*panel));
    QVERIFY(!panel->isLoaded());
    QVERIFY2(panel->errorText().contains(root), qPrintable(panel->errorText()));
    QCOMPARE(w.datasetSettings().path, root.toStdString());
    QCOMPARE(w.document()->graph().nodes().size(), size_t(24));  // nothing else lost
    QVERIFY(w.save());
    auto p = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(DatasetSettings::from_json(*p.setting("dataset")).path, root.toStdString());
  }

  // Reopening a project on an image folder takes its file index from the project (schema 10):
  // the window's Dataset panel reads only its thumbnails, and says so.
  void reopenUsesTheStoredIndex() {
    QTemporaryDir dir;
    const QString root = dir.filePath("pets");
    writeImageFolder(root, {"cat", "dog"}, 30);
    const QString file = dir.filePath("p.kiln");
    writeProject(file, "", source("imagefolder", root));
    for (int pass = 0; pass < 2; ++pass) {
      MainWindow w;
      w.setSilent(true);
      const int64_t read = kiln::data::image_files_read();
      QVERIFY(w.openProject(file));
      auto* panel = w.findChild<DatasetPanel*>();
      QVERIFY(waitLoaded(*panel));
      QVERIFY2(panel->isLoaded(), qPrintable(panel->errorText()));
      const int64_t files = kiln::data::image_files_read() - read;
      const bool used = panel->statusLabel()->toolTip().contains("stored file index was used");
      if (pass == 0) {
        QVERIFY(!used && files >= 60);
      } else {
        QVERIFY2(used, qPrintable(panel->statusLabel()->toolTip()));
        QVERIFY2(files <= DatasetPanel::kSamples + 1, qPrintable(QString::number(files)));
      }
    }
    auto p = kiln::projects::Project::open(file.toStdString());
    kiln::projects::Statement rows = p.database().prepare("SELECT count(*) FROM file_indexes");
    QVERIFY(rows.step());
    QCOMPARE(rows.int64(0), int64_t(1));
  }

  // Choosing a dataset in the window fits the graph's Input and class scores to it (one undo step).
  void windowFitsGraph() {
    QTemporaryDir dir;
    writeFile(dir.filePath("t.csv"), tableCsv(30));
    MainWindow w;
    w.setSilent(true);
    QFile t(KILN_SOURCE_DIR "/projects/templates/table_mlp.json");
    QVERIFY(t.open(QIODevice::ReadOnly));
    w.document()->setGraph(kiln::graph::from_json(t.readAll().toStdString()));
    auto* panel = w.findChild<DatasetPanel*>();
    emit panel->chosen();
    panel->setSettings(source("csv", dir.filePath("t.csv")));
    QVERIFY(waitLoaded(*panel));
    QVERIFY(QTest::qWaitFor([&] { return w.document()->undoStack()->count() > 0; }, 5000));
    const auto& g = w.document()->graph();
    QCOMPARE(std::get<std::vector<int64_t>>(g.find_by_name("features")->attrs.at("shape")), std::vector<int64_t>({2}));
    QCOMPARE(std::get<int64_t>(g.find_by_name("fc1")->attrs.at("in_features")), int64_t(2));
    QCOMPARE(std::get<int64_t>(g.find_by_name("fc3")->attrs.at("out_features")), int64_t(2));
    QCOMPARE(w.document()->undoStack()->count(), 1);
  }

  // kiln-studio --headless trains the templates on the generated folder and table, 1 epoch.
  void headlessTrainsOwnData() {
    QTemporaryDir dir;
    const QString root = dir.filePath("shapes");
    writeImageFolder(root, {"circle", "square", "star"}, 8);
    writeFile(root + "/star/zero.png", QByteArray());
    int code = 0;
    const QString imageProject = dir.filePath("img.kiln");
    QString out = studio({"--headless", "--new", imageProject, "--template", "image_folder_cnn", "--dataset",
                          "imagefolder:" + root, "--train", "--epochs", "1"},
                         &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("fitted to the dataset: Input 'image': shape [3, 64, 64] -> [3, 16, 16]"), qPrintable(out));
    QVERIFY2(out.contains("skipped ") && out.contains("zero.png"), qPrintable(out));
    {
      auto p = kiln::projects::Project::open(imageProject.toStdString());
      const auto runs = p.runs();
      QCOMPARE(runs.size(), size_t(1));
      QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
      const auto config = nlohmann::json::parse(runs[0].config_json);
      QCOMPARE(config["dataset"]["name"].get<std::string>(), std::string("imagefolder"));
      QCOMPARE(config["dataset"]["path"].get<std::string>(), root.toStdString());
      const auto e = p.evaluation(runs[0].id);
      QVERIFY(e.has_value());
      QCOMPARE(e->class_names, std::vector<std::string>({"circle", "square", "star"}));
      QVERIFY(e->count > 0);
      QCOMPARE(int64_t(e->predictions.size()), e->count);
      QVERIFY(e->images.size() == e->misclassified.size() * size_t(e->image_height * e->image_width));
      // Reopened: the dataset choice is there.
      QCOMPARE(DatasetSettings::from_json(*p.setting("dataset")).path, root.toStdString());
    }

    QByteArray table = tableCsv(60);
    writeFile(dir.filePath("t.csv"), table);
    const QString tableProject = dir.filePath("tab.kiln");
    out = studio({"--headless", "--new", tableProject, "--template", "table_mlp", "--dataset", "csv:" + dir.filePath("t.csv"),
                  "--label", "kind", "--train", "--epochs", "1"},
                 &code);
    QVERIFY2(code == 0, qPrintable(out));
    auto p = kiln::projects::Project::open(tableProject.toStdString());
    const auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    const auto e = p.evaluation(runs[0].id);
    QVERIFY(e.has_value());
    QCOMPARE(e->class_names, std::vector<std::string>({"high", "low"}));
    QVERIFY(e->images.empty());  // no thumbnails for tables

    // A ragged CSV: the reader's message names the file and line; nothing is recorded.
    table += "1,2\n";
    writeFile(dir.filePath("bad.csv"), table);
    out = studio({"--headless", "--project", tableProject, "--dataset", "csv:" + dir.filePath("bad.csv"), "--train"}, &code);
    QCOMPARE(code, 1);
    QVERIFY2(out.contains("bad.csv:62"), qPrintable(out));
    QCOMPARE(kiln::projects::Project::open(tableProject.toStdString()).runs().size(), size_t(1));
  }

  // Photos at full size: a CPU run whose training estimate (activations at the batch size) is more
  // than this machine's memory is refused before it starts, instead of swapping or being killed.
  void cpuRunLargerThanTheMemoryIsRefused() {
    initResources();
    kiln::graph::Graph g = kiln::graph::from_json(templateJson("image_folder_cnn"));
    kiln::graph::fit_graph_to_data(g, {3, 512, 512}, 10);
    const kiln::graph::Analysis a = kiln::graph::analyze(g);
    QVERIFY(a.ok());
    TrainingConfig c;
    c.batch_size = 1;
    const kiln::Device cpu = kiln::Device::parse("cpu");
    QCOMPARE(cpu_memory_problem(g, a, c, cpu), std::string());
    // A batch whose activations alone are twice this machine's memory, whatever the machine.
    const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    const int64_t perSample = kiln::graph::estimate_memory(g, a, {.batch = 1}).activations;
    c.batch_size = static_cast<int>(std::min(2 * memory / double(perSample) + 1, 2e9));
    const QString why = QString::fromStdString(cpu_memory_problem(g, a, c, cpu));
    QVERIFY2(why.contains("training needs about") && why.contains(QString("at batch size %1").arg(c.batch_size)) &&
                 why.contains("lower the batch size"),
             qPrintable(why));
    QCOMPARE(cpu_memory_problem(g, a, c, kiln::Device::parse("cuda:0")), std::string());  // a GPU: the analyzer warns
  }
};

QTEST_MAIN(TestStudioData)
#include "test_studio_data.moc"
