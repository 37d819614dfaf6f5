// Issue 14, Deliver 4: Predict. A run trained headless (kiln-studio --headless) on a generated
// image folder, a CSV table and a regression table predicts files with its own preprocessing
// (app/studio/run_predictor.h, engine/data/predict_input.h): the test split's files give exactly
// the classes, probabilities and values of the run's stored evaluation (the engine's
// train::evaluate over the test DataLoader). Bad input (a corrupt image, a file of the wrong
// kind, a CSV with a missing or an extra column) gives that file a message, the others are still
// predicted. In the window: Model > Predict is disabled without a finished run, files dropped on
// the window fill the Predictions view on a worker thread. kiln-studio --headless --task regression
// stores the table's task as the Dataset panel does.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "app/studio/main_window.h"
#include "app/studio/run_predictor.h"
#include "engine/core/error.h"
#include "engine/data/dataset_source.h"
#include "engine/data/predict_input.h"
#include "engine/explain/explain.h"
#include "projects/project.h"
#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/training/prediction_view.h"

using namespace kiln::studio;
using kiln::studio::test::writeFile;

namespace {

// Data lines of a CSV with header x1,x2,kind: two classes "low" and "high" that overlap a little
// (so that the probabilities are not all 1).
QList<QByteArray> tableLines(int rows) {
  QList<QByteArray> lines;
  for (int i = 0; i < rows; ++i) {
    const bool high = i % 2;
    lines << QByteArray::number((high ? 1.0 : -1.0) + 0.3 * (i % 7) - 0.9) + "," + QByteArray::number(0.3 * (i % 5)) +
                 "," + (high ? "high" : "low");
  }
  return lines;
}

// The run's dataset opened again as TrainingJob opened it (its settings and seed).
kiln::data::OpenedDataset reopen(const kiln::projects::RunRecord& run) {
  const auto config = nlohmann::json::parse(run.config_json);
  return kiln::data::open_dataset(
      DatasetSettings::from_json(config["dataset"].dump()).source(config.value("seed", uint64_t{0})));
}

// Trains `args` headless into a new project; the project's only run.
kiln::projects::RunRecord trainHeadless(const QStringList& args) {
  int code = 0;
  const QString out = kiln::test::studio(args, &code);
  if (code != 0) qWarning("%s", qPrintable(out));
  const int i = static_cast<int>(args.indexOf("--new") >= 0 ? args.indexOf("--new") : args.indexOf("--project"));
  const auto runs = kiln::projects::Project::open(args[i + 1].toStdString()).runs();
  return runs.empty() ? kiln::projects::RunRecord{} : runs.back();
}

// Each of `predicted` has the class and probability of the evaluation's prediction at the same place.
void compareWithEvaluation(const std::vector<PredictedInput>& predicted, const kiln::projects::Evaluation& e) {
  QCOMPARE(predicted.size(), e.predictions.size());
  for (size_t i = 0; i < predicted.size(); ++i) {
    const PredictedInput& p = predicted[i];
    QVERIFY2(p.error.empty(), p.error.c_str());
    QVERIFY(!p.top.empty());
    QCOMPARE(p.top[0].first, int64_t(e.predictions[i].predicted));
    QVERIFY2(std::abs(p.top[0].second - e.predictions[i].probability) < 1e-5,
             qPrintable(QString("%1: %2 vs the evaluation's %3").arg(QString::fromStdString(p.input))
                            .arg(p.top[0].second).arg(e.predictions[i].probability)));
    for (size_t j = 1; j < p.top.size(); ++j) QVERIFY(p.top[j].second <= p.top[j - 1].second);
  }
}

}  // namespace

class TestStudioPredict : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString imageProject_, tableProject_;
  kiln::projects::RunRecord imageRun_, tableRun_;

 private slots:
  void initTestCase() {
    const QString root = dir_.filePath("shapes");
    kiln::studio::test::writeImageFolder(root, {"circle", "square", "star"}, 8);
    imageProject_ = dir_.filePath("img.kiln");
    imageRun_ = trainHeadless({"--headless", "--new", imageProject_, "--template", "image_folder_cnn", "--dataset",
                       "imagefolder:" + root, "--train", "--epochs", "1"});
    QCOMPARE(imageRun_.status, kiln::projects::RunStatus::finished);
    QByteArray csv = "x1,x2,kind\n";
    for (const QByteArray& l : tableLines(60)) csv += l + "\n";
    writeFile(dir_.filePath("t.csv"), csv);
    tableProject_ = dir_.filePath("tab.kiln");
    tableRun_ = trainHeadless({"--headless", "--new", tableProject_, "--template", "table_mlp", "--dataset",
                       "csv:" + dir_.filePath("t.csv"), "--label", "kind", "--train", "--epochs", "2"});
    QCOMPARE(tableRun_.status, kiln::projects::RunStatus::finished);
  }

  void imagesPredictAsTheEvaluation() {
    const auto e = kiln::projects::Project::open(imageProject_.toStdString()).evaluation(imageRun_.id);
    QVERIFY(e.has_value() && e->count > 0);
    const kiln::data::OpenedDataset d = reopen(imageRun_);
    std::vector<std::string> files;
    for (int64_t i = 0; i < e->count; ++i) files.push_back(kiln::data::image_sample_path(*d.test, i));
    const auto p = RunPredictor::load(imageProject_.toStdString(), imageRun_.id);
    QCOMPARE(p->classes(), std::vector<std::string>({"circle", "square", "star"}));
    QVERIFY(!p->isTable() && !p->isRegression());
    const std::vector<PredictedInput> all = p->predict(files, 3);
    for (const PredictedInput& in : all) QCOMPARE(in.top.size(), size_t(3));
    compareWithEvaluation(all, *e);

    // Bad files among good ones: each its message, the good ones still predicted, in order.
    writeFile(dir_.filePath("broken.png"), QByteArray("\x89PNG\r\n\x1a\n not really a png", 26));
    writeFile(dir_.filePath("rows.csv"), "a,b\n1,2\n");
    const std::vector<PredictedInput> mixed =
        p->predict({dir_.filePath("broken.png").toStdString(), files[0], dir_.filePath("rows.csv").toStdString(),
                    dir_.filePath("gone.png").toStdString(), files[1]});
    QCOMPARE(mixed.size(), size_t(5));
    QVERIFY2(mixed[0].error.find("broken.png") != std::string::npos && mixed[0].top.empty(), mixed[0].error.c_str());
    QVERIFY2(mixed[2].error.find("rows.csv") != std::string::npos &&
                 mixed[2].error.find("not an image file") != std::string::npos, mixed[2].error.c_str());
    QVERIFY2(mixed[3].error.find("gone.png") != std::string::npos, mixed[3].error.c_str());
    kiln::projects::Evaluation firstTwo;
    firstTwo.predictions = {e->predictions[0], e->predictions[1]};
    compareWithEvaluation({mixed[1], mixed[4]}, firstTwo);
  }

  // Grad-CAM and saliency maps: the engine's (explain.h) for the image as preprocessed, the image
  // as the model saw it before Normalize; tables get none.
  void imagesExplainAsTheEngine() {
    const auto p = RunPredictor::load(imageProject_.toStdString(), imageRun_.id);
    const kiln::data::ImageRun& ir = *p->imageRun();
    const std::string file = dir_.filePath("shapes/star/3.png").toStdString();
    std::vector<float> x(static_cast<size_t>(ir.channels * ir.height * ir.width));
    kiln::data::read_image_input(file, ir, x.data());
    const kiln::Tensor image = kiln::Tensor::from_vector(x, {ir.channels, ir.height, ir.width});
    const auto cam = kiln::explain::grad_cam(p->model(), image);
    const auto sal = kiln::explain::saliency(p->model(), image);
    const auto grad = p->predict({file}, 3, Explain::grad_cam).at(0);
    QVERIFY2(grad.explain_error.empty(), grad.explain_error.c_str());
    QCOMPARE(grad.heat, cam.map.to_vector<float>());
    QCOMPARE(grad.explain_layer, cam.layer);
    QCOMPARE(grad.top.at(0).first, cam.predicted);
    QCOMPARE(grad.channels, int64_t(ir.channels));
    QCOMPARE(grad.seen.size(), x.size());
    const int64_t hw = ir.height * ir.width;
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t c = i / static_cast<size_t>(hw);
      const double sd = c < ir.stddev.size() ? ir.stddev[c] : 1.0, m = c < ir.mean.size() ? ir.mean[c] : 0.0;
      const double expected = std::clamp(x[i] * sd + m, 0.0, 1.0);
      QVERIFY2(std::abs(grad.seen[i] - expected) < 1e-6, qPrintable(QString("pixel %1").arg(i)));
    }
    const auto salient = p->predict({file}, 3, Explain::saliency).at(0);
    std::vector<float> s = sal.map.to_vector<float>();
    const float peak = *std::max_element(s.begin(), s.end());
    QVERIFY(peak > 0);
    QCOMPARE(salient.heat.size(), s.size());
    for (size_t i = 0; i < s.size(); ++i) QVERIFY(std::abs(salient.heat[i] - s[i] / peak) < 1e-6f);
    QVERIFY(salient.explain_layer.empty());
    QVERIFY(p->predict({file}, 3).at(0).heat.empty());  // only when asked
    const auto table = RunPredictor::load(tableProject_.toStdString(), tableRun_.id);
    for (const PredictedInput& row : table->predict({dir_.filePath("test.csv").toStdString()}, 3, Explain::grad_cam))
      QVERIFY(row.heat.empty() && row.explain_error.empty());
    QVERIFY(heatOverlay({0.5f}, {1.0f, 0.0f}, 1, 1, 1).isNull());  // sizes that do not fit: no picture
    const QImage hot = heatOverlay({0.0f, 0.0f}, {1.0f, 0.0f}, 1, 1, 2);
    QCOMPARE(hot.pixel(0, 0), qRgb(64, 0, 0));   // jet's dark red at 1, half over black
    QCOMPARE(hot.pixel(1, 0), qRgb(0, 0, 64));   // its dark blue at 0
  }

  // Schema 10: a run keeps its fitted preprocessing in the project, so Predict gives the same
  // probabilities after its dataset folder is deleted or replaced; a run without it (stored by an
  // older Kiln) opens the dataset again, says so, and names the folder when it is gone.
  void storedPreprocessingOutlivesTheDataset() {
    const QString root = dir_.filePath("goes");
    kiln::studio::test::writeImageFolder(root, {"circle", "square", "star"}, 8);
    const QString project = dir_.filePath("goes.kiln");
    const auto run = trainHeadless({"--headless", "--new", project, "--template", "image_folder_cnn", "--dataset",
                                    "imagefolder:" + root, "--train", "--epochs", "1"});
    QCOMPARE(run.status, kiln::projects::RunStatus::finished);
    const std::string stored = kiln::projects::Project::open(project.toStdString()).run_preprocessing(run.id);
    QVERIFY2(stored.find("\"images\"") != std::string::npos && stored.find("\"mean\"") != std::string::npos,
             stored.c_str());
    QVERIFY(QDir().mkpath(dir_.filePath("inputs")));
    std::vector<std::string> files;
    for (const char* f : {"circle/0.png", "square/3.png", "star/7.png"}) {
      const QString to = dir_.filePath("inputs/" + QString(f).replace('/', '_'));
      QVERIFY(QFile::copy(root + "/" + f, to));
      files.push_back(to.toStdString());
    }
    auto load = [&] { return RunPredictor::load(project.toStdString(), run.id); };
    const auto p = load();
    QVERIFY(p->storedPreprocessing());
    QVERIFY2(p->description().find("stored with the run") != std::string::npos, p->description().c_str());
    const std::vector<PredictedInput> before = p->predict(files, 3);
    auto same = [&](const std::vector<PredictedInput>& after) {
      QCOMPARE(after.size(), before.size());
      for (size_t i = 0; i < before.size(); ++i) {
        QVERIFY2(after[i].error.empty(), after[i].error.c_str());
        QCOMPARE(after[i].top, before[i].top);  // the same classes and probabilities, exactly
      }
    };
    QVERIFY(QDir(root).removeRecursively());
    const auto gone = load();
    QCOMPARE(gone->classes(), std::vector<std::string>({"circle", "square", "star"}));
    same(gone->predict(files, 3));
    // Replaced by other data (two classes, bigger images): still the run's preprocessing.
    kiln::studio::test::writeImageFolder(root, {"a", "b"}, 3);
    same(load()->predict(files, 3));
    QVERIFY(QDir(root).removeRecursively());

    // A run stored without it: the dataset is opened again (and must be there).
    kiln::projects::Project::open(project.toStdString())
        .database()
        .prepare("UPDATE runs SET preprocessing_json = '' WHERE id = ?")
        .bind(1, run.id)
        .run();
    try {
      load();
      QFAIL("a run without stored preprocessing whose folder is gone loaded");
    } catch (const kiln::Error& e) {
      QVERIFY2(QString(e.what()).contains(root), e.what());
    }
    kiln::studio::test::writeImageFolder(root, {"circle", "square", "star"}, 8);
    const auto old = load();
    QVERIFY(!old->storedPreprocessing());
    QVERIFY2(old->description().find("opened again") != std::string::npos, old->description().c_str());
    same(old->predict(files, 3));
  }

  // A table run keeps its table.json: its CSV moved away, the rows predict as before.
  void tableRunKeepsItsPreprocessing() {
    const QString csv = dir_.filePath("t.csv"), moved = dir_.filePath("t.csv.away");
    writeFile(dir_.filePath("rows.csv"), "x1,x2\n0.4,0.2\n-1.1,0.9\n");
    const std::vector<std::string> rows = {dir_.filePath("rows.csv").toStdString()};
    const auto p = RunPredictor::load(tableProject_.toStdString(), tableRun_.id);
    QVERIFY(p->storedPreprocessing() && p->isTable());
    const auto before = p->predict(rows);
    QVERIFY(QFile::rename(csv, moved));
    const auto after = RunPredictor::load(tableProject_.toStdString(), tableRun_.id)->predict(rows);
    QVERIFY(QFile::rename(moved, csv));
    QCOMPARE(after.size(), size_t(2));
    for (size_t i = 0; i < after.size(); ++i) {
      QVERIFY2(after[i].error.empty(), after[i].error.c_str());
      QCOMPARE(after[i].top, before[i].top);
    }
  }

  void tableRowsPredictAsTheEvaluation() {
    const auto e = kiln::projects::Project::open(tableProject_.toStdString()).evaluation(tableRun_.id);
    QVERIFY(e.has_value() && e->count > 0);
    const kiln::data::OpenedDataset d = reopen(tableRun_);
    const QList<QByteArray> lines = tableLines(60);
    QByteArray test = "x1,x2,kind\n", unlabelled = "x2,x1\n";  // columns by name, the label optional
    for (int64_t row : d.table->test_rows) {
      const QList<QByteArray> f = lines[static_cast<int>(row)].split(',');
      test += lines[static_cast<int>(row)] + "\n";
      unlabelled += f[1] + "," + f[0] + "\n";
    }
    writeFile(dir_.filePath("test.csv"), test);
    writeFile(dir_.filePath("unlabelled.csv"), unlabelled);
    const auto p = RunPredictor::load(tableProject_.toStdString(), tableRun_.id);
    QVERIFY(p->isTable());
    QCOMPARE(p->classes(), std::vector<std::string>({"high", "low"}));
    const std::vector<PredictedInput> rows = p->predict({dir_.filePath("test.csv").toStdString()});
    QCOMPARE(rows[0].input, dir_.filePath("test.csv").toStdString() + ":2");
    compareWithEvaluation(rows, *e);
    compareWithEvaluation(p->predict({dir_.filePath("unlabelled.csv").toStdString()}), *e);

    // A missing column, an extra one, an image: one message each, naming the file and column.
    writeFile(dir_.filePath("missing.csv"), "x1,kind\n1,low\n");
    writeFile(dir_.filePath("extra.csv"), "x1,x2,kind,colour\n1,2,low,red\n");
    const std::vector<PredictedInput> bad =
        p->predict({dir_.filePath("missing.csv").toStdString(), dir_.filePath("extra.csv").toStdString(),
                    dir_.filePath("broken.png").toStdString(), dir_.filePath("test.csv").toStdString()});
    QCOMPARE(bad.size(), size_t(3) + rows.size());
    QVERIFY2(bad[0].error.find("missing.csv:1") != std::string::npos && bad[0].error.find("'x2'") != std::string::npos,
             bad[0].error.c_str());
    QVERIFY2(bad[1].error.find("extra.csv:1") != std::string::npos && bad[1].error.find("'colour'") != std::string::npos,
             bad[1].error.c_str());
    QVERIFY2(bad[2].error.find("an image") != std::string::npos, bad[2].error.c_str());
    compareWithEvaluation(std::vector<PredictedInput>(bad.begin() + 3, bad.end()), *e);
  }

  void regressionPredictsTheEvaluatedValues() {
    QByteArray csv = "a,b,y\n";
    for (int i = 0; i < 100; ++i) {
      const double a = 0.1 * (i % 10), b = 0.1 * ((i * 3) % 10);
      csv += QByteArray::number(a) + "," + QByteArray::number(b) + "," + QByteArray::number(3 * a - 2 * b + 1) + "\n";
    }
    writeFile(dir_.filePath("r.csv"), csv);
    // kiln-studio --headless --task regression: stored as the Dataset panel stores it.
    const QString file = dir_.filePath("reg.kiln");
    const auto run = trainHeadless({"--headless", "--new", file, "--template", "table_mlp", "--dataset", "csv:" + dir_.filePath("r.csv"),
                            "--label", "y", "--task", "regression", "--train", "--epochs", "2"});
    QCOMPARE(DatasetSettings::from_json(*kiln::projects::Project::open(file.toStdString()).setting("dataset")).task,
             std::string("regression"));
    QCOMPARE(run.status, kiln::projects::RunStatus::finished);
    const auto e = kiln::projects::Project::open(file.toStdString()).evaluation(run.id);
    QVERIFY(e.has_value() && e->is_regression());
    const kiln::data::OpenedDataset d = reopen(run);
    const QList<QByteArray> lines = csv.trimmed().split('\n');
    QByteArray test = "a,b\n";
    for (int64_t row : d.table->test_rows) {
      const QList<QByteArray> f = lines[static_cast<int>(row) + 1].split(',');
      test += f[0] + "," + f[1] + "\n";
    }
    writeFile(dir_.filePath("rtest.csv"), test);
    const auto p = RunPredictor::load(file.toStdString(), run.id);
    QVERIFY(p->isRegression() && p->classes().empty());
    QCOMPARE(p->label(), std::string("y"));
    const std::vector<PredictedInput> values = p->predict({dir_.filePath("rtest.csv").toStdString()});
    QCOMPARE(values.size(), e->regression.size());
    for (size_t i = 0; i < values.size(); ++i) {
      QVERIFY2(values[i].error.empty() && values[i].top.empty(), values[i].error.c_str());
      QVERIFY2(std::abs(values[i].value - e->regression[i].predicted) < 1e-5 * (1 + std::abs(e->regression[i].predicted)),
               qPrintable(QString("%1 vs %2").arg(values[i].value).arg(e->regression[i].predicted)));
    }
  }

  // --task: a bad value, regression of a non-table, or no --dataset: a message, exit 2 (a
  // command-line mistake), nothing trained.
  void headlessTaskBadInput() {
    int code = 0;
    const QString project = dir_.filePath("task.kiln");
    QString out = kiln::test::studio({"--headless", "--new", project, "--template", "table_mlp", "--dataset",
                                      "csv:" + dir_.filePath("t.csv"), "--task", "clustering", "--train"}, &code);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains("--task must be classification or regression, got 'clustering'"), qPrintable(out));
    QVERIFY(!QFileInfo::exists(project));  // refused before the project is made
    QVERIFY(kiln::test::studio({"--headless", "--new", project, "--template", "table_mlp"}, &code).contains("created"));
    out = kiln::test::studio({"--headless", "--project", project, "--dataset", "imagefolder:" + dir_.filePath("shapes"),
                              "--task", "regression", "--train"}, &code);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains("--task regression needs --dataset csv:FILE"), qPrintable(out));
    out = kiln::test::studio({"--headless", "--project", project, "--task", "regression", "--train"}, &code);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains("--task needs --dataset csv:FILE"), qPrintable(out));
    QVERIFY(kiln::projects::Project::open(project.toStdString()).runs().empty());
  }

  // Issue 14's new-user try: the label column never filters rows (empty, a missing marker or a class
  // the run does not know, the row is predicted as without it), and a category the training rows
  // never had is predicted (encoded as none, as OneHotEncoder(handle_unknown='ignore')) with a note.
  void tableRowsWithOddLabelsOrUnseenCategories() {
    QByteArray csv = "x,colour,kind\n";
    for (int i = 0; i < 40; ++i)
      csv += QByteArray::number(i % 2 ? 2.0 + 0.1 * (i % 5) : -2.0 + 0.1 * (i % 3)) + "," + (i % 2 ? "red" : "blue") + "," +
             (i % 2 ? "high" : "low") + "\n";
    writeFile(dir_.filePath("cat.csv"), csv);
    const QString file = dir_.filePath("cat.kiln");
    const auto run = trainHeadless({"--headless", "--new", file, "--template", "table_mlp", "--dataset",
                                    "csv:" + dir_.filePath("cat.csv"), "--train", "--epochs", "1"});
    QCOMPARE(run.status, kiln::projects::RunStatus::finished);
    writeFile(dir_.filePath("odd.csv"), "x,colour,kind\n2.1,red,\n-2,blue,NA\n2.2,red,giraffe\n-1.9,green,low\n");
    writeFile(dir_.filePath("plain.csv"), "x,colour\n2.1,red\n-2,blue\n2.2,red\n-1.9,green\n");
    const auto p = RunPredictor::load(file.toStdString(), run.id);
    const std::vector<PredictedInput> odd = p->predict({dir_.filePath("odd.csv").toStdString()});
    const std::vector<PredictedInput> plain = p->predict({dir_.filePath("plain.csv").toStdString()});
    QCOMPARE(odd.size(), size_t(4));
    QCOMPARE(plain.size(), size_t(4));
    for (size_t i = 0; i < odd.size(); ++i) {
      QVERIFY2(odd[i].error.empty() && !odd[i].top.empty(), odd[i].error.c_str());
      QCOMPARE(odd[i].top, plain[i].top);
      QCOMPARE(odd[i].note, plain[i].note);
    }
    QCOMPARE(odd[3].note, std::string("column 'colour': 'green' was not seen in training"));
    QVERIFY2(odd[0].note.empty() && odd[2].note.empty(), odd[0].note.c_str());
  }

  void noFinishedRun() {
    QVERIFY_THROWS_EXCEPTION(kiln::ValueError, RunPredictor::load(tableProject_.toStdString(), 999));
    MainWindow w;
    w.setSilent(true);
    QVERIFY(!w.predictAction()->isEnabled());
    QVERIFY(!w.predictFiles({dir_.filePath("t.csv")}));
    QVERIFY2(w.lastError().contains("finished training run"), qPrintable(w.lastError()));
  }

  // The window: files dropped on the canvas reach the window, which predicts them off the UI thread.
  void dropOnTheWindow() {
    MainWindow w;
    w.setSilent(true);
    w.resize(1200, 800);
    w.show();
    QVERIFY(w.openProject(tableProject_));
    QVERIFY(w.predictAction()->isEnabled());
    QCOMPARE(w.predictRun(), tableRun_.id);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(dir_.filePath("test.csv")), QUrl::fromLocalFile(dir_.filePath("missing.csv"))});
    auto* canvas = w.findChild<GraphCanvas*>();
    QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    enter.ignore();
    QApplication::sendEvent(canvas->viewport(), &enter);
    QVERIFY(enter.isAccepted());  // files are welcome over the canvas (its own drops are the palette's layers)
    QDropEvent drop(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(canvas->viewport(), &drop);
    QVERIFY(w.isPredicting() || w.predictionView());
    QVERIFY(QTest::qWaitFor([&] { return !w.isPredicting(); }, 60000));
    PredictionView* view = w.predictionView();
    QVERIFY(view);
    QVERIFY2(view->caption()->text().contains(QString("run %1").arg(tableRun_.id)), qPrintable(view->caption()->text()));
    const auto e = kiln::projects::Project::open(tableProject_.toStdString()).evaluation(tableRun_.id);
    QCOMPARE(view->table()->rowCount(), static_cast<int>(e->predictions.size()) + 1);
    const QString first = view->table()->item(0, 1)->text();
    QVERIFY2(first.startsWith(QString::fromStdString(e->class_names[static_cast<size_t>(e->predictions[0].predicted)])) &&
                 first.endsWith(" %"),
             qPrintable(first));
    const QString last = view->table()->item(view->table()->rowCount() - 1, 1)->text();
    QVERIFY2(last.contains("error") && last.contains("'x2'"), qPrintable(last));

    // Images (Model > Predict's files): a thumbnail and the three classes each; the corrupt one its message.
    QVERIFY(w.openProject(imageProject_));
    QCOMPARE(w.predictRun(), imageRun_.id);
    const QString good = dir_.filePath("shapes/star/3.png");
    QVERIFY(w.predictFiles({good, dir_.filePath("broken.png")}));
    QVERIFY(QTest::qWaitFor([&] { return !w.isPredicting(); }, 60000));
    QCOMPARE(view->table()->rowCount(), 2);
    QCOMPARE(view->table()->columnCount(), 4);  // input, then the top-3 classes
    QVERIFY(!view->table()->item(0, 0)->icon().isNull());
    for (int c = 1; c <= 3; ++c) QVERIFY2(view->table()->item(0, c)->text().endsWith(" %"), qPrintable(view->table()->item(0, c)->text()));
    QVERIFY(view->table()->item(1, 0)->icon().isNull());
    QVERIFY2(view->table()->item(1, 1)->text().contains("broken.png"), qPrintable(view->table()->item(1, 1)->text()));
    QVERIFY2(view->caption()->text().contains("1 of 2 input(s) predicted, 1 without a prediction"), qPrintable(view->caption()->text()));

    // Choosing Grad-CAM predicts the files again, with a heat-map column.
    view->explainMethod()->setCurrentIndex(PredictionView::gradCam);
    QVERIFY(w.isPredicting());
    QVERIFY(QTest::qWaitFor([&] { return !w.isPredicting(); }, 60000));
    QCOMPARE(view->table()->columnCount(), 5);
    QCOMPARE(view->table()->horizontalHeaderItem(4)->text(), QString("Grad-CAM"));
    QVERIFY(!view->table()->item(0, 4)->icon().isNull());
    QVERIFY2(view->table()->item(0, 4)->toolTip().contains("Grad-CAM of the predicted class at layer"),
             qPrintable(view->table()->item(0, 4)->toolTip()));
    view->explainMethod()->setCurrentIndex(PredictionView::noExplanation);
    QVERIFY(QTest::qWaitFor([&] { return !w.isPredicting(); }, 60000));
    QCOMPARE(view->table()->columnCount(), 4);
  }
};

QTEST_MAIN(TestStudioPredict)
#include "test_studio_predict.moc"
