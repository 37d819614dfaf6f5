// Issue 15, finding 7: a Studio run on some of Fashion-MNIST — a class filter ("5-9", relabelled
// 0..4, as `kiln train --classes`), a training subset and a test subset — trains a model of k
// outputs, names the kept classes in its evaluation and records all of it with the run.
#include <QSignalSpy>
#include <algorithm>
#include <numeric>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "app/studio/templates.h"
#include "app/studio/training_job.h"
#include "app/studio/training_session.h"
#include "engine/core/error.h"
#include "engine/data/class_filter.h"
#include "engine/data/fashion_mnist.h"
#include "engine/graph/json.h"
#include "projects/project.h"
#include "tests/common/test_deps.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/training/evaluation_view.h"

using namespace kiln;
using namespace kiln::studio;

namespace {
const QString kDir = "/usr/share/datasets/fashion-mnist";

// The MLP template with `outputs` class scores.
graph::Graph mlp(int outputs) {
  std::string json = templateJson("fashion_mnist_mlp");
  const std::string ten = "\"out_features\": 10";
  const size_t at = json.find(ten);
  if (at != std::string::npos) json.replace(at, ten.size(), "\"out_features\": " + std::to_string(outputs));
  return graph::from_json(json);
}

QString errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}
}  // namespace

class TestStudioSubsets : public QObject {
  Q_OBJECT
 private slots:
  void datasetSettingsCarryClassesAndTestSize() {
    DatasetSettings d;
    d.classes = "5-9";
    d.train_size = 1000;
    d.validation_size = 200;
    d.test_size = 500;
    QCOMPARE(d.num_classes(), int64_t(5));
    QCOMPARE(d.class_list(), (std::vector<int64_t>{5, 6, 7, 8, 9}));
    const DatasetSettings back = DatasetSettings::from_json(d.to_json());
    QCOMPARE(back.classes, std::string("5-9"));
    QCOMPARE(back.test_size, int64_t(500));
    QCOMPARE(DatasetSettings{}.to_json().find("classes"), std::string::npos);  // the JSON of older projects
    QVERIFY(errorOf([] { DatasetSettings::from_json(R"({"classes":"5-12"})"); }).contains("class 12 is out of range"));
    QVERIFY(errorOf([] { DatasetSettings::from_json(R"({"test_size":10001})"); }).contains("'test_size'"));
    // Five classes hold 30000 training images.
    QVERIFY(errorOf([] { DatasetSettings::from_json(R"({"classes":"5-9","train_size":30000,"validation_size":1})"); })
                .contains("30000 Fashion-MNIST training images of classes 5-9"));
  }

  // The test subset is a seeded random draw, not the first N images: the same seed gives the
  // same images, another seed others; the seed is stored with the dataset settings.
  void testSubsetIsSeededAndRandom() {
    const std::vector<int64_t> a = test_subset_indices(10000, 500, 7);
    QCOMPARE(a.size(), size_t(500));
    QCOMPARE(test_subset_indices(10000, 500, 7), a);
    QVERIFY(test_subset_indices(10000, 500, 8) != a);
    QVERIFY(std::is_sorted(a.begin(), a.end()));
    QVERIFY(std::adjacent_find(a.begin(), a.end()) == a.end());
    QVERIFY(a.front() >= 0 && a.back() < 10000);
    QVERIFY2(a.back() >= 5000, "drawn from the whole split, not its first images");
    std::vector<int64_t> all(1000);
    std::iota(all.begin(), all.end(), int64_t{0});
    QCOMPARE(test_subset_indices(1000, 0, 7), all);
    QCOMPARE(test_subset_indices(1000, 1000, 7), all);
    QCOMPARE(test_subset_indices(1000, 5000, 7), all);
    DatasetSettings d;
    QCOMPARE(d.to_json().find("test_seed"), std::string::npos);  // the JSON of older projects
    d.test_size = 500;
    d.test_seed = 42;
    QCOMPARE(DatasetSettings::from_json(d.to_json()).test_seed, uint64_t(42));
    QCOMPARE(DatasetSettings::from_json(d.to_json()), d);
    QVERIFY(errorOf([] { DatasetSettings::from_json(R"({"test_seed":-1})"); }).contains("'test_seed'"));
  }

  void theOutputMustGiveOneScorePerKeptClass() {
    const graph::Graph ten = mlp(10), five = mlp(5);
    QVERIFY(training_blockers(ten, graph::analyze(ten), 64).empty());
    QVERIFY(training_blockers(five, graph::analyze(five), 64, 5).empty());
    const auto blockers = training_blockers(ten, graph::analyze(ten), 64, 5);
    QCOMPARE(blockers.size(), size_t(1));
    QVERIFY2(QString::fromStdString(blockers[0]).contains("class scores [N, 5]"), blockers[0].c_str());
  }

  void classFilterRunTrainsFiveOutputsAndNamesTheClasses() {
    KILN_QSKIP_UNLESS_DEP(QDir(kDir).exists(), "dataset-fashion-mnist", "no Fashion-MNIST in " + kDir.toStdString());
    QTemporaryDir dir;
    const std::string path = dir.filePath("s.kiln").toStdString();
    createFromTemplate(path, "fashion_mnist_mlp");
    DatasetSettings d;
    d.classes = "5-9";  // issue 13's transfer experiment: 1,000 images of classes 5-9
    d.train_size = 1000;
    d.validation_size = 200;
    d.test_size = 500;
    d.test_seed = 11;
    TrainingConfig c;
    c.epochs = 1;
    c.batch_size = 64;
    c.device = "cpu";
    TrainingSession session;
    QSignalSpy finished(&session, &TrainingSession::finished);
    QSignalSpy evaluated(&session, &TrainingSession::evaluated);
    QString error;
    QVERIFY2(!session.start(path, 0, mlp(10), c, d, 10000, &error), "10 outputs for 5 classes");
    QVERIFY(error.contains("[N, 5]"));
    QVERIFY2(session.start(path, 0, mlp(5), c, d, 10000, &error), qPrintable(error));
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.at(0).at(1).toString(), QString("finished"));

    projects::Project project = projects::Project::open(path);
    const projects::RunRecord run = project.runs().at(0);
    const auto config = nlohmann::json::parse(run.config_json);
    QCOMPARE(config.at("dataset").at("classes").get<std::string>(), std::string("5-9"));
    QCOMPARE(config.at("test_size").get<int64_t>(), int64_t(500));
    QCOMPARE(config.at("test_seed").get<uint64_t>(), uint64_t(11));
    QVERIFY(QString::fromStdString(run.name).contains("classes 5-9"));
    QVERIFY(QString::fromStdString(run.name).contains("test 500"));
    const projects::Evaluation e = *project.evaluation(run.id);
    QCOMPARE(e.count, int64_t(500));
    QCOMPARE(e.class_names, (std::vector<std::string>{"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}));
    QCOMPARE(e.confusion.size(), size_t(25));
    // Each prediction names its image in the test split; that image's label is the kept class
    // the prediction's truth stands for (5 + truth).
    const data::FashionMNIST test(false, kDir.toStdString());
    const auto labels = test.labels().contiguous().to_vector<int64_t>();
    QCOMPARE(e.predictions.size(), size_t(500));
    // The images of test_subset_indices(5000 of classes 5-9, 500, seed 11), in that order.
    auto split = std::make_shared<data::FashionMNIST>(false, kDir.toStdString());
    const data::ClassFilter kept(split, {5, 6, 7, 8, 9});
    const std::vector<int64_t> chosen = test_subset_indices(5000, 500, 11);
    for (size_t i = 0; i < chosen.size(); ++i) QCOMPARE(int64_t(e.predictions[i].index), kept.source_index(chosen[i]));
    for (const auto& p : e.predictions) {
      QVERIFY(p.truth >= 0 && p.truth < 5 && p.predicted >= 0 && p.predicted < 5);
      QCOMPARE(labels.at(static_cast<size_t>(p.index)), int64_t(5 + p.truth));
    }
    for (const auto& m : e.misclassified) QCOMPARE(labels.at(static_cast<size_t>(m.index)), int64_t(5 + m.truth));
    // The view gets the class names and the run's directory for the images.
    QCOMPARE(evaluated.size(), 1);
    const auto shown = evaluated.at(0).at(0).value<EvaluationResult>();
    QCOMPARE(shown.classNames.at(4), QString("Ankle boot"));
    QCOMPARE(shown.imageDir, kDir);
  }
};

QTEST_MAIN(TestStudioSubsets)
#include "test_studio_subsets.moc"
