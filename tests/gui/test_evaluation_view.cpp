// Evaluation view (issue 15, finding 6): axis titles, the normalization choice, the
// per-class report (scikit-learn's classification_report, hand-computed here) and the
// samples of a clicked confusion-matrix cell, also for evaluations stored without predictions.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QListWidget>
#include <QTableWidget>
#include <QtTest>
#include <cmath>

#include "engine/core/error.h"
#include "tests/common/test_deps.h"
#include "widgets/training/cell_samples.h"
#include "widgets/training/classification_report.h"
#include "widgets/training/evaluation_compare.h"
#include "widgets/training/evaluation_view.h"

using namespace kiln::studio;

namespace {
// rows: true 0..2, columns: predicted 0..2; 16 images, 12 right.
const std::vector<int64_t> kConfusion = {5, 1, 0,  //
                                         2, 3, 1,  //
                                         0, 0, 4};

EvaluationResult smallResult() {
  EvaluationResult r;
  r.count = 16;
  r.accuracy = 0.75;
  r.loss = 0.6;
  r.classNames = {"cat", "dog", "bird"};
  r.confusion = kConfusion;
  // One prediction per image (index = position); probabilities chosen so that the order
  // within a cell differs from the index order.
  int index = 0;
  for (int t = 0; t < 3; ++t)
    for (int p = 0; p < 3; ++p)
      for (int64_t k = 0; k < kConfusion[static_cast<size_t>(t * 3 + p)]; ++k, ++index)
        r.predictions.push_back({index, t, p, static_cast<float>(0.4 + 0.1 * static_cast<double>((index * 7) % 6))});
  return r;
}

// Qt's warnings while a MessageCatcher lives (then passed on to QtTest's own handler).
QStringList g_warnings;
QtMessageHandler g_previousHandler = nullptr;
void catchWarnings(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtWarningMsg) g_warnings << message;
  if (g_previousHandler) g_previousHandler(type, context, message);
}
struct MessageCatcher {
  MessageCatcher() {
    g_warnings.clear();
    g_previousHandler = qInstallMessageHandler(catchWarnings);
  }
  ~MessageCatcher() { qInstallMessageHandler(g_previousHandler); }
};

void near(double actual, double expected) {
  QVERIFY2(std::abs(actual - expected) < 1e-9, qPrintable(QString("%1 != %2").arg(actual, 0, 'g', 17).arg(expected, 0, 'g', 17)));
}
}  // namespace

class TestEvaluationView : public QObject {
  Q_OBJECT
 private slots:
  void axisTitlesArePresent() {
    EvaluationView view;
    view.setResult(smallResult());
    QCOMPARE(view.trueAxisTitle()->text(), QString("True label"));
    QCOMPARE(view.predictedAxisTitle()->text(), QString("Predicted label"));
    QVERIFY(view.findChild<QLabel*>("trueAxisTitle") != nullptr);
    view.resize(800, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // The row title stands left of the matrix, the column title above it.
    QVERIFY(view.trueAxisTitle()->geometry().right() <= view.confusionTable()->geometry().left());
    QVERIFY(view.predictedAxisTitle()->geometry().bottom() <= view.confusionTable()->geometry().top());
  }

  void reportMatchesHandComputedValues() {
    // sklearn.metrics.classification_report of the same 16 labels gives these values.
    const ClassificationReport r = classification_report(kConfusion, 3);
    near(r.classes[0].precision, 5.0 / 7), near(r.classes[0].recall, 5.0 / 6), near(r.classes[0].f1, 10.0 / 13);
    near(r.classes[1].precision, 3.0 / 4), near(r.classes[1].recall, 3.0 / 6), near(r.classes[1].f1, 0.6);
    near(r.classes[2].precision, 4.0 / 5), near(r.classes[2].recall, 1.0), near(r.classes[2].f1, 8.0 / 9);
    QCOMPARE(r.classes[0].support, 6);
    QCOMPARE(r.classes[1].support, 6);
    QCOMPARE(r.classes[2].support, 4);
    near(r.macro.precision, (5.0 / 7 + 3.0 / 4 + 4.0 / 5) / 3);
    near(r.macro.recall, 7.0 / 9);
    near(r.macro.f1, (10.0 / 13 + 0.6 + 8.0 / 9) / 3);
    near(r.weighted.precision, (6 * 5.0 / 7 + 6 * 3.0 / 4 + 4 * 4.0 / 5) / 16);
    near(r.weighted.recall, 0.75);
    near(r.weighted.f1, (6 * 10.0 / 13 + 6 * 0.6 + 4 * 8.0 / 9) / 16);
    near(r.accuracy, 0.75);
    QCOMPARE(r.macro.support, 16);
    // A class that is neither a true nor a predicted label is listed but not averaged
    // (classification_report without `labels`: macro precision 0.754762, not 0.566071).
    std::vector<int64_t> four(16, 0);
    for (int t = 0; t < 3; ++t)
      for (int p = 0; p < 3; ++p) four[static_cast<size_t>(t * 4 + p)] = kConfusion[static_cast<size_t>(t * 3 + p)];
    const ClassificationReport r4 = classification_report(four, 4);
    near(r4.macro.precision, r.macro.precision);
    QCOMPARE(r4.classes[3].support, 0);
    near(r4.classes[3].f1, 0);
    bool threw = false;
    try {
      classification_report({1, 2, 3}, 2);
    } catch (const kiln::ValueError& e) {
      threw = QString(e.what()).contains("3 cells for 2 classes");
    }
    QVERIFY(threw);
  }

  void reportTableShowsTheReport() {
    EvaluationView view;
    view.setResult(smallResult());
    QTableWidget* t = view.reportTable();
    QCOMPARE(t->rowCount(), 5);  // 3 classes, macro avg, weighted avg
    QCOMPARE(t->verticalHeaderItem(1)->text(), QString("dog"));
    QCOMPARE(t->verticalHeaderItem(3)->text(), QString("macro avg"));
    QCOMPARE(t->verticalHeaderItem(4)->text(), QString("weighted avg"));
    QCOMPARE(t->horizontalHeaderItem(2)->text(), QString("F1-score"));
    near(t->item(0, 0)->data(Qt::UserRole).toDouble(), 5.0 / 7);
    QCOMPARE(t->item(1, 1)->text(), QString("0.500"));
    QCOMPARE(t->item(2, 3)->text(), QString("4"));
    near(t->item(3, 1)->data(Qt::UserRole).toDouble(), 7.0 / 9);
  }

  void normalizationChangesTheCells() {
    EvaluationView view;
    view.setResult(smallResult());
    QTableWidget* m = view.confusionTable();
    QCOMPARE(view.normalization(), Normalization::Counts);
    QCOMPARE(m->item(1, 0)->text(), QString("2"));
    view.setNormalization(Normalization::ByRow);  // 2 of the 6 dogs
    near(m->item(1, 0)->data(Qt::UserRole).toDouble(), 2.0 / 6);
    QCOMPARE(m->item(1, 0)->text(), QString("0.33"));
    near(m->item(2, 2)->data(Qt::UserRole).toDouble(), 1.0);  // recall of bird
    view.normalizationBox()->setCurrentIndex(2);              // by column: 2 of the 7 predicted cats
    QCOMPARE(view.normalization(), Normalization::ByColumn);
    near(m->item(1, 0)->data(Qt::UserRole).toDouble(), 2.0 / 7);
    near(m->item(0, 0)->data(Qt::UserRole).toDouble(), 5.0 / 7);  // precision of cat
    near(normalized_cell({0, 0, 0, 0}, 2, 0, 1, Normalization::ByRow), 0.0);  // an empty row
  }

  void clickingACellListsExactlyItsSamples() {
    EvaluationView view;
    const EvaluationResult r = smallResult();
    view.setResult(r);
    view.resize(900, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTableWidget* m = view.confusionTable();
    QTest::mouseClick(m->viewport(), Qt::LeftButton, {}, m->visualItemRect(m->item(1, 0)).center());
    QTableWidget* s = view.cellSamples()->table();
    QVERIFY(s->isVisible());  // the samples' tab is brought to front
    // The dog images predicted as cat: indices 6 and 7 of the test split.
    QList<qlonglong> expected;
    std::vector<EvaluationResult::Prediction> cell;
    for (const auto& p : r.predictions)
      if (p.truth == 1 && p.predicted == 0) cell.push_back(p);
    std::sort(cell.begin(), cell.end(), [](auto& a, auto& b) { return a.probability > b.probability; });
    for (const auto& p : cell) expected << p.index;
    QCOMPARE(expected.size(), 2);
    QList<qlonglong> listed;
    for (int row = 0; row < s->rowCount(); ++row) {
      listed << s->item(row, 0)->data(Qt::DisplayRole).toLongLong();
      QCOMPARE(s->item(row, 1)->text(), QString("dog"));
      QCOMPARE(s->item(row, 2)->text(), QString("cat"));
    }
    QCOMPARE(listed, expected);
    QVERIFY(s->item(0, 3)->data(Qt::UserRole).toDouble() >= s->item(1, 3)->data(Qt::UserRole).toDouble());
    // A diagonal cell: all 5 cats, most confident first.
    view.showCell(0, 0);
    QCOMPARE(s->rowCount(), 5);
    for (int row = 1; row < s->rowCount(); ++row)
      QVERIFY(s->item(row - 1, 3)->data(Qt::UserRole).toDouble() >= s->item(row, 3)->data(Qt::UserRole).toDouble());
    QVERIFY(view.cellSamples()->message().contains("5 test image(s) of cat predicted as cat"));
    view.showCell(0, 2);  // an empty cell
    QCOMPARE(s->rowCount(), 0);
  }

  void oldEvaluationsSayWhyOnlyMistakesAreListed() {
    EvaluationView view;
    EvaluationResult r = smallResult();
    r.predictions.clear();  // stored before schema 4
    QImage img(28, 28, QImage::Format_Grayscale8);
    img.fill(90);
    r.misclassified = {{img, 1, 0, 6}, {img, 1, 2, 10}, {img, 1, 0, 7}};
    view.setResult(r);
    view.showCell(1, 0);
    QVERIFY2(view.cellSamples()->message().contains("evaluated before predictions were stored"),
             qPrintable(view.cellSamples()->message()));
    QTableWidget* s = view.cellSamples()->table();
    QCOMPARE(s->rowCount(), 2);
    QCOMPARE(s->item(0, 0)->data(Qt::DisplayRole).toLongLong(), 6);
    QCOMPARE(s->item(1, 0)->data(Qt::DisplayRole).toLongLong(), 7);
    QVERIFY(!s->item(0, 0)->icon().isNull());  // the stored image
  }

  // A table (CSV) run's evaluation, as run_restore.cpp builds it: misclassified rows without an
  // image. They are listed by test row, and nothing scales a null image ("QImage::scaled: Image
  // is a null image" was printed for each).
  void tableRunHasNoNullImageWarnings() {
    const MessageCatcher catcher;
    EvaluationView view;
    EvaluationResult r = smallResult();
    r.misclassified = {{QImage(), 1, 0, 6}, {QImage(), 1, 2, 10}, {QImage(), 2, 1, -1}};
    view.setResult(r);
    view.resize(800, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.showCell(1, 0);
    QVERIFY2(g_warnings.filter("null image").isEmpty(), qPrintable(g_warnings.join('\n')));
    QCOMPARE(view.cellSamples()->table()->rowCount(), 2);
    QListWidget* list = view.misclassifiedList();
    QCOMPARE(list->count(), 3);
    QCOMPARE(list->item(0)->text(), QString::fromUtf8("dog\n\u2192 cat\nrow 6"));
    QCOMPARE(list->item(2)->text(), QString::fromUtf8("bird\n\u2192 dog"));  // no row known
    QVERIFY(list->item(0)->icon().isNull());
    // The images of an image run still get their thumbnails.
    QImage img(28, 28, QImage::Format_Grayscale8);
    img.fill(90);
    r.misclassified = {{img, 1, 0, 6}};
    view.setResult(r);
    QCOMPARE(list->count(), 1);
    QVERIFY(!list->item(0)->icon().isNull());
    QCOMPARE(list->item(0)->text(), QString::fromUtf8("dog\n\u2192 cat"));
  }

  void cellSamplesShowTheTestImages() {
    const QString dir = "/usr/share/datasets/fashion-mnist";
    KILN_QSKIP_UNLESS_DEP(QDir(dir).exists(), "dataset-fashion-mnist", "no Fashion-MNIST in " + dir.toStdString());
    const QImage first = fashion_mnist_test_image(dir, 0);
    QCOMPARE(first.size(), QSize(28, 28));
    int lit = 0;
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) lit += first.pixelColor(x, y).value() > 0;
    QVERIFY(lit > 50);
    QVERIFY(fashion_mnist_test_image(dir, 10000).isNull());
    QVERIFY(fashion_mnist_test_image("/nonexistent", 0).isNull());
    EvaluationView view;
    EvaluationResult r = smallResult();
    r.imageDir = dir;
    view.setResult(r);
    view.showCell(2, 2);
    QVERIFY(!view.cellSamples()->table()->item(0, 0)->icon().isNull());
  }

  // Compare evaluations of two regression runs: their MAE, RMSE and R² (hand-computed) and the
  // differences, not the "0.00 %" accuracy a regression evaluation does not have.
  void compareShowsRegressionMetrics() {
    EvaluationResult a, b;
    for (EvaluationResult* r : {&a, &b}) {
      r->count = 4;
      r->accuracy = std::nan("");
      r->target = "price";
      r->actual = {1, 2, 3, 4};
    }
    a.predicted = {1.5, 2, 2, 5};  // errors 0.5 0 1 1: MAE 0.625, RMSE 0.75, R² 1 - 2.25 / 5 = 0.55
    b.predicted = {1, 2, 3, 5};    // errors 0 0 0 1: MAE 0.25, RMSE 0.5, R² 1 - 1 / 5 = 0.8
    EvaluationCompare compare;
    compare.setRuns("run 1", a, "run 2", b);
    const QString text = compare.summaryText();
    QVERIFY2(text.contains("run 1: MAE 0.625, RMSE 0.75, R² 0.5500 on 4 test rows (price)"), qPrintable(text));
    QVERIFY2(text.contains("run 2: MAE 0.25, RMSE 0.5, R² 0.8000 on 4 test rows (price)"), qPrintable(text));
    QVERIFY2(text.contains("MAE -0.375, RMSE -0.25, R² +0.25"), qPrintable(text));
    QVERIFY2(!text.contains("accuracy") && !text.contains("%"), qPrintable(text));
    QCOMPARE(compare.deltaTable()->rowCount(), 0);
    QVERIFY(compare.deltaTable()->isHidden());

    // A regression run against a classification run: both runs' own figures, no differences.
    compare.setRuns("run 1", a, "run 3", smallResult());
    QVERIFY2(compare.summaryText().contains("run 3: test accuracy 75.00 % on 16 images"), qPrintable(compare.summaryText()));
    QVERIFY2(compare.summaryText().contains("the other a classification"), qPrintable(compare.summaryText()));
    // Two classification runs again: the per-class table is back.
    compare.setRuns("run 3", smallResult(), "run 4", smallResult());
    QCOMPARE(compare.deltaTable()->rowCount(), 5);
    QVERIFY(!compare.deltaTable()->isHidden());
  }
};

QTEST_MAIN(TestEvaluationView)
#include "test_evaluation_view.moc"
