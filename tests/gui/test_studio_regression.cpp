// Issue 14, Deliver 4, regression in the Studio: the Dataset panel chooses the task of a CSV
// table; a regression table opens with one output and no classes, the graph is fitted to one
// output, and Studio training (kiln-studio --headless) trains it with mse_loss and reports the
// test rows' MAE, RMSE and R² (engine/train/regression_metrics.h, checked against numbers
// worked by hand); the evaluation is kept with the run (schema 8: a schema-7 project made by the
// Kiln before it, tests/fixtures/project_schema7.kiln, opens with its evaluation intact) and the
// evaluation view of the reopened run shows the predicted-vs-actual scatter instead of a
// confusion matrix.
#include <QComboBox>
#include <QFile>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include <qcustomplot.h>

#include "app/studio/run_restore.h"
#include "engine/core/error.h"
#include "engine/data/dataset_source.h"
#include "engine/train/regression_metrics.h"
#include "projects/project.h"
#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "projects/schema.h"
#include "widgets/project/dataset_panel.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/regression_plot.h"

using namespace kiln::studio;
using kiln::studio::test::writeProject;

namespace {

// y = 3 a - 2 b + 1 on a grid of (a, b): a noiseless linear target an MLP fits quickly.
void writeTable(const QString& path, int rows) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("a,b,y\n");
  for (int i = 0; i < rows; ++i) {
    const double a = (i % 10) / 10.0, b = (i / 10 % 10) / 10.0;
    f.write(QByteArray::number(a) + "," + QByteArray::number(b) + "," + QByteArray::number(3 * a - 2 * b + 1) + "\n");
  }
}

bool waitLoaded(DatasetPanel& panel) {
  return QTest::qWaitFor([&] { return panel.isLoaded() || !panel.errorText().isEmpty(); }, 60000);
}

}  // namespace

class TestStudioRegression : public QObject {
  Q_OBJECT
 private slots:
  void metricsByHand() {
    // actual 1 2 3 4 (mean 2.5, SS_tot 5); predicted 1 2 3 6: errors 0 0 0 2.
    const auto m = kiln::train::regression_metrics({1, 2, 3, 6}, {1, 2, 3, 4});
    QCOMPARE(m.count, int64_t(4));
    QCOMPARE(m.mae, 0.5);
    QCOMPARE(m.rmse, 1.0);
    QCOMPARE(m.r2, 1 - 4.0 / 5.0);
    QCOMPARE(kiln::train::regression_metrics({2, 2}, {2, 2}).r2, 1.0);  // constant and exact
    QCOMPARE(kiln::train::regression_metrics({1, 3}, {2, 2}).r2, 0.0);  // constant, not exact
    QVERIFY_THROWS_EXCEPTION(kiln::ValueError, kiln::train::regression_metrics({1}, {1, 2}));
  }

  void settingsAndSource() {
    DatasetSettings s;
    s.name = "csv";
    s.path = "/t.csv";
    QVERIFY(s.to_json().find("task") == std::string::npos);  // classification writes no key, as before
    s.task = "regression";
    QCOMPARE(DatasetSettings::from_json(s.to_json()).task, std::string("regression"));
    QCOMPARE(s.source(0).task, std::string("regression"));
    s.name = "imagefolder";
    QVERIFY_THROWS_EXCEPTION(kiln::ValueError, s.validate());  // regression is a table's
  }

  void panelChoosesTask() {
    QTemporaryDir dir;
    writeTable(dir.filePath("t.csv"), 100);
    DatasetSettings s;
    s.name = "csv";
    s.path = dir.filePath("t.csv").toStdString();
    s.label = "y";
    DatasetPanel panel(nullptr, s);
    QVERIFY(waitLoaded(panel));
    // As classification, y's many values are classes.
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QVERIFY(panel.summary().class_names.size() > 10);
    QComboBox* task = panel.sourceOptions()->taskCombo();
    QVERIFY(task->isVisibleTo(&panel));
    task->setCurrentIndex(task->findData("regression"));
    emit task->activated(task->currentIndex());
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.settings().task, std::string("regression"));
    QVERIFY(panel.summary().regression);
    QVERIFY(panel.summary().class_names.isEmpty());
    QCOMPARE(panel.classTable()->rowCount(), 0);
    QVERIFY2(panel.summary().details.contains("regression of the number in column 'y'"), qPrintable(panel.summary().details));
    QCOMPARE(panel.summary().sample_shape, std::vector<int64_t>({2}));
    // The missing-value policy (as kiln train --missing): a table with an empty field fails to
    // load under "error", naming its line, and loads with the row dropped under "drop".
    QFile f(dir.filePath("t.csv"));
    QVERIFY(f.open(QIODevice::Append));
    f.write("1.5,,3\n");
    f.close();
    QComboBox* missing = panel.sourceOptions()->missingCombo();
    QVERIFY(missing->isVisibleTo(&panel));
    QCOMPARE(missing->currentData().toString(), QString("error"));
    auto choose = [&](const char* policy) {
      missing->setCurrentIndex(missing->findData(policy));
      emit missing->activated(missing->currentIndex());
      return waitLoaded(panel);
    };
    QVERIFY(choose("drop"));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.settings().missing, std::string("drop"));
    QCOMPARE(DatasetSettings::from_json(panel.settings().to_json()).missing, std::string("drop"));
    QVERIFY(choose("error"));
    QVERIFY2(!panel.isLoaded() && panel.errorText().contains("t.csv:102"), qPrintable(panel.errorText()));
    QVERIFY(choose("fill"));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
  }

  void headlessTrainsRegression() {
    QTemporaryDir dir;
    writeTable(dir.filePath("t.csv"), 200);
    const QString file = dir.filePath("p.kiln");
    DatasetSettings d;
    d.name = "csv";
    d.path = dir.filePath("t.csv").toStdString();
    d.label = "y";
    d.task = "regression";
    writeProject(file, "table_mlp", d);
    int code = 0;
    const QString out = kiln::test::studio({"--headless", "--project", file, "--dataset", "csv:" + dir.filePath("t.csv"),
                                            "--label", "y", "--train", "--epochs", "40"},
                                           &code);
    QVERIFY2(code == 0, qPrintable(out));
    QVERIFY2(out.contains("regression of 'y'"), qPrintable(out));
    QVERIFY2(out.contains("validation loss") && !out.contains("nan %"), qPrintable(out));  // losses, no NaN accuracy
    QVERIFY2(out.contains("out_features 10 -> 1") || out.contains("-> 1"), qPrintable(out));  // one output
    const QRegularExpression line("test regression of 'y' on (\\d+) rows: MAE ([0-9.e+-]+), RMSE ([0-9.e+-]+), R² ([0-9.e+-]+)");
    const QRegularExpressionMatch m = line.match(out);
    QVERIFY2(m.hasMatch(), qPrintable(out));
    QCOMPARE(m.captured(1).toInt(), 40);  // 20 % of 200
    const double mae = m.captured(2).toDouble(), rmse = m.captured(3).toDouble(), r2 = m.captured(4).toDouble();
    QVERIFY(mae > 0 && rmse >= mae);
    QVERIFY2(r2 > 0.5, qPrintable(out));  // y is linear in the features: the MLP explains most of it
    auto p = kiln::projects::Project::open(file.toStdString());
    QCOMPARE(p.runs().size(), size_t(1));
    QCOMPARE(p.runs()[0].status, kiln::projects::RunStatus::finished);
    // Kept with the run: the points, whose metrics are the ones logged.
    const auto e = p.evaluation(p.runs()[0].id);
    QVERIFY(e.has_value());
    QVERIFY(e->is_regression());
    QCOMPARE(e->target, std::string("y"));
    QCOMPARE(e->regression.size(), size_t(40));
    QVERIFY(e->class_names.empty() && e->confusion.empty());
    std::vector<double> actual, predicted;
    for (const auto& pt : e->regression) actual.push_back(pt.actual), predicted.push_back(pt.predicted);
    const auto stored = kiln::train::regression_metrics(predicted, actual);
    QVERIFY(std::abs(stored.mae - mae) <= 1e-3 * mae && std::abs(stored.r2 - r2) <= 1e-3);
    for (const auto& pt : e->regression) {  // y = 3a - 2b + 1 with a, b in {0, 0.1, .., 0.9} (read as f32)
      QVERIFY2(pt.actual >= -0.8 - 1e-5 && pt.actual <= 3.7 + 1e-5, qPrintable(QString::number(pt.actual)));
      QVERIFY(std::isfinite(pt.predicted));
    }
    // The reopened run's evaluation view: the scatter and the metrics, no confusion matrix.
    LivePlots plots;
    EvaluationView view;
    QString error;
    QVERIFY2(showStoredRun(p, p.runs()[0].id, &plots, &view, &error), qPrintable(error));
    QVERIFY(view.regressionPlot()->isVisibleTo(&view));
    QVERIFY(!view.confusionTable()->isVisibleTo(&view));
    QCOMPARE(view.regressionPlot()->pointCount(), 40);
    QCOMPARE(view.regressionPlot()->metrics().count, int64_t(40));
    QVERIFY2(view.summaryText().contains("Test regression of 'y'") && view.summaryText().contains("R²"),
             qPrintable(view.summaryText()));
    QCOMPARE(view.regressionPlot()->plot()->xAxis->label(), QString("actual y"));
    // A classification result afterwards brings the matrix back.
    EvaluationResult c;
    c.count = 2;
    c.classNames = {"a", "b"};
    c.confusion = {1, 0, 0, 1};
    view.setResult(c);
    QVERIFY(view.confusionTable()->isVisibleTo(&view));
    QVERIFY(!view.regressionPlot()->isVisibleTo(&view));
  }

  // A schema-7 project (made by the Kiln before schema 8: kiln-studio --headless --new --template
  // table_mlp on a 40-row two-class CSV, 1 epoch, then VACUUM) opens migrated with its
  // classification evaluation intact and stores a regression evaluation.
  void schema7ProjectMigrates() {
    QTemporaryDir dir;
    const QString path = dir.filePath("old.kiln");
    QVERIFY(QFile::copy(KILN_SOURCE_DIR "/tests/fixtures/project_schema7.kiln", path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    QCOMPARE(kiln::projects::check_project_file(path.toStdString(), kiln::projects::kCurrentSchema), 7);
    auto p = kiln::projects::Project::open(path.toStdString());
    QCOMPARE(p.database().pragma_int("user_version"), int64_t(kiln::projects::kCurrentSchema));
    QCOMPARE(p.runs().size(), size_t(1));
    const auto e = p.evaluation(p.runs()[0].id);
    QVERIFY(e.has_value());
    QCOMPARE(e->class_names, std::vector<std::string>({"high", "low"}));
    QCOMPARE(e->count, int64_t(8));
    QCOMPARE(e->predictions.size(), size_t(8));
    QVERIFY(!e->is_regression());
    QCOMPARE(e->target, std::string());
    kiln::projects::Evaluation r;
    r.count = 3;
    r.loss = 0.5;
    r.target = "price";
    r.regression = {{1, 1.5}, {2, 2}, {3, 2.5}};
    p.set_evaluation(p.runs()[0].id, r);
    const auto back = p.evaluation(p.runs()[0].id);
    QCOMPARE(back->target, std::string("price"));
    QCOMPARE(back->regression.size(), size_t(3));
    QCOMPARE(back->regression[2].predicted, 2.5);
    r.count = 4;  // a point per evaluated row
    QVERIFY_THROWS_EXCEPTION(kiln::projects::ProjectError, p.set_evaluation(p.runs()[0].id, r));
  }
};

QTEST_MAIN(TestStudioRegression)
#include "test_studio_regression.moc"
