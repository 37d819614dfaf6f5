// Training widgets: live plots (points, smoothing, coalesced replots), training panel
// (config round trip, Train disabled with reasons), settings JSON errors, evaluation
// view (confusion heat map, misclassified grid), log panel.
#include <qcustomplot.h>

#include <QComboBox>
#include <QListWidget>
#include <QPushButton>
#include <QSlider>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QtTest>
#include <cmath>

#include "engine/core/error.h"
#include "widgets/training/decimated_series.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/live_plots.h"
#include "widgets/training/log_panel.h"
#include "widgets/training/training_config.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;

class TestTrainingWidgets : public QObject {
  Q_OBJECT
 private slots:
  void plotsCountPointsAndSkipNaN() {
    LivePlots plots;
    QVector<double> s, l, r;
    for (int i = 1; i <= 1000; ++i) s << i, l << 2.0 / i, r << 1e-3;
    plots.addSteps(s, l, r);
    plots.addStep(1001, 0.001, 1e-3);
    QCOMPARE(plots.stepCount(), 1001);
    QCOMPARE(plots.lrPlot()->graph(0)->dataCount(), 1001);
    plots.addEpoch(1, 0.5, 0.8, NAN, NAN);  // no validation set
    QCOMPARE(plots.epochCount(), 1);
    QCOMPARE(plots.epochPlot()->graph(1)->dataCount(), 0);  // validation loss skipped
    QCOMPARE(plots.epochPlot()->graph(2)->data()->at(0)->value, 80.0);  // accuracy in %
    plots.clear();
    QCOMPARE(plots.stepCount(), 0);
    QCOMPARE(plots.epochCount(), 0);
  }

  void axesFitTheDataWithPadding() {
    LivePlots plots;
    QVector<double> s, l, r;
    for (int i = 1; i <= 100; ++i) s << i, l << 1.5, r << 1e-3;  // constant loss and lr
    plots.addSteps(s, l, r);
    plots.replotNow();
    const QCPRange lr = plots.lrPlot()->yAxis->range();
    QCOMPARE(lr.lower, 0.0);
    QVERIFY2(lr.upper > 1e-3 && lr.upper < 2e-3, qPrintable(QString::number(lr.upper)));
    const QCPRange loss = plots.stepPlot()->yAxis->range();
    QVERIFY2(loss.lower < 1.5 && loss.upper > 1.5 && loss.size() < 1.0, qPrintable(QString("%1..%2").arg(loss.lower).arg(loss.upper)));
    // A cosine staircase: its last (lowest, nonzero) step lies strictly above the axis bottom.
    plots.clear();
    s.clear(), l.clear(), r.clear();
    for (int i = 1; i <= 100; ++i) s << i, l << 2.0 / i, r << 1e-3 * (0.5 + 0.5 * std::cos(M_PI * ((i - 1) / 10) / 10.0));
    plots.addSteps(s, l, r);
    plots.addEpoch(1, 0.0, 0.9, NAN, NAN);  // a loss of 0 still gives a nonempty axis
    plots.replotNow();
    const QCPRange lr2 = plots.lrPlot()->yAxis->range();
    QVERIFY(lr2.lower <= 0 && lr2.upper > 1e-3);
    const QCPRange loss2 = plots.stepPlot()->yAxis->range();
    QVERIFY(loss2.lower < 0.02 && loss2.upper > 2.0);
    QVERIFY(plots.epochPlot()->yAxis->range().size() > 0);
    QCOMPARE(LivePlots::paddedRange(QCPRange(0, 0), true).upper, 1.0);
    QCOMPARE(LivePlots::paddedRange(QCPRange(-2, -2), false).lower, -2.2);
  }

  void smoothedCurveIsDebiasedEma() {
    LivePlots plots;
    plots.setSmoothing(0.5);
    plots.addSteps({1, 2, 3}, {4, 4, 1}, {0, 0, 0});
    QCPGraph* smooth = plots.stepPlot()->graph(1);
    QCOMPARE(smooth->dataCount(), 3);
    // Constant input: the debiased EMA equals it from the first point.
    QCOMPARE(smooth->data()->at(0)->value, 4.0);
    QCOMPARE(smooth->data()->at(1)->value, 4.0);
    // ema: 2, 3, 0.5 * 3 + 0.5 * 1 = 2; debiased by 1 - 0.5^3.
    QVERIFY(std::abs(smooth->data()->at(2)->value - 2.0 / 0.875) < 1e-12);
  }

  void smoothingSliderAppliesTensorBoardsFormula() {
    // TensorBoard's resmoothDataset with w = 0.5 on 2, 4, NaN, 1, by hand:
    // last = 1 -> 1 / 0.5 = 2; last = 2.5 -> 2.5 / 0.75; NaN kept, not counted; last = 1.75 -> 1.75 / 0.875.
    const QVector<double> s = LivePlots::smooth({2, 4, NAN, 1}, 0.5);
    QCOMPARE(s[0], 2.0);
    QVERIFY(std::abs(s[1] - 2.5 / 0.75) < 1e-12);
    QVERIFY(std::isnan(s[2]));
    QVERIFY(std::abs(s[3] - 1.75 / 0.875) < 1e-12);
    QCOMPARE(LivePlots::smooth({3, 1}, 0.0), QVector<double>({3, 1}));  // weight 0: the raw curve
    LivePlots plots;
    QVector<double> st, l, r;
    for (int i = 1; i <= 50; ++i) st << i, l << 1.0 + (i % 7) * 0.25, r << 1e-3;
    plots.addSteps(st, l, r);
    plots.smoothingSlider()->setValue(999);  // the slider's end: 0.999
    QCOMPARE(plots.smoothing(), 0.999);
    plots.smoothingSlider()->setValue(800);
    QCOMPARE(plots.smoothing(), 0.8);
    // The whole drawn curve is re-smoothed with the new weight.
    const QVector<double> expected = LivePlots::smooth(l, 0.8);
    double last = 0;
    for (int i = 0; i < 50; ++i) last = last * 0.8 + 0.2 * l[i];
    QVERIFY(std::abs(expected[49] - last / (1 - std::pow(0.8, 50))) < 1e-12);
    QCPGraph* smooth = plots.stepPlot()->graph(1);
    QCOMPARE(smooth->dataCount(), 50);
    for (int i = 0; i < 50; ++i) QVERIFY(std::abs(smooth->data()->at(i)->value - expected[i]) < 1e-12);
    plots.setSmoothing(2.0);
    QCOMPARE(plots.smoothing(), 0.999);
    QCOMPARE(plots.smoothingSlider()->value(), 999);
  }

  void xAxisSwitchesToWallTimeAndEpochs() {
    LivePlots plots;
    QVector<double> st, l, r, t, e;
    for (int i = 1; i <= 40; ++i) st << i, l << 1.0 / i, r << 1e-3, t << 0.5 + 0.25 * i, e << (i <= 20 ? 1 : 2);
    plots.addSteps(st, l, r, t, e);
    QCPGraph* raw = plots.stepPlot()->graph(0);
    QCOMPARE(raw->data()->at(3)->key, 4.0);
    plots.xAxisBox()->setCurrentIndex(plots.xAxisBox()->findText("Wall time"));
    QCOMPARE(plots.xAxis(), LivePlots::XAxis::WallTime);
    QCOMPARE(raw->dataCount(), 40);
    for (int i = 0; i < 40; ++i) QCOMPARE(raw->data()->at(i)->key, t[i]);  // time_s of each step
    QCOMPARE(plots.lrPlot()->graph(0)->data()->at(39)->key, t[39]);
    QCOMPARE(plots.stepPlot()->xAxis->label(), QString("wall time (s)"));
    plots.setXAxis(LivePlots::XAxis::Epoch);  // 20 steps per epoch: step 30 is half way through epoch 2
    QCOMPARE(raw->data()->at(29)->key, 1.5);
    QCOMPARE(raw->data()->at(19)->key, 1.0);
    plots.setXAxis(LivePlots::XAxis::Step);
    QCOMPARE(raw->data()->at(39)->key, 40.0);
    // Steps without times (an older caller): no wall-time choice.
    LivePlots bare;
    bare.addSteps(st, l, r);
    auto* model = qobject_cast<QStandardItemModel*>(bare.xAxisBox()->model());
    QVERIFY(!model->item(1)->isEnabled());
    QVERIFY(!model->item(2)->isEnabled());
  }

  void legendsNeverCoverTheCurves() {
    // The plots dock of a 1280 x 720 window, and a narrower one.
    for (QSize size : {QSize(1280, 230), QSize(700, 200)}) {
      LivePlots plots;
      QVector<double> st, l, r;
      for (int i = 1; i <= 100; ++i) st << i, l << 2.0 / i, r << 1e-3;
      plots.addSteps(st, l, r);
      plots.addEpoch(1, 0.5, 0.8, 0.6, 0.75);
      plots.resize(size);
      plots.show();
      QVERIFY(QTest::qWaitForWindowExposed(&plots));
      plots.replotNow();
      for (QCustomPlot* p : {plots.stepPlot(), plots.epochPlot()}) {
        QVERIFY(p->legend->visible());
        QVERIFY2(!p->legend->outerRect().intersects(p->axisRect()->rect()),
                 qPrintable(QString("legend %1,%2 %3x%4 over the data")
                                .arg(p->legend->outerRect().x())
                                .arg(p->legend->outerRect().y())
                                .arg(p->legend->outerRect().width())
                                .arg(p->legend->outerRect().height())));
      }
      const int withLegend = plots.stepPlot()->axisRect()->rect().height();
      plots.setLegendVisible(false);
      plots.replotNow();
      QVERIFY(!plots.stepPlot()->legend->visible());
      QVERIFY(plots.stepPlot()->axisRect()->rect().height() > withLegend);  // the axes get the room
      plots.setLegendVisible(true);
      QVERIFY(plots.epochPlot()->legend->visible());
    }
  }

  void replotsAreCoalesced() {
    LivePlots plots;
    plots.show();
    const int before = plots.replotCount();
    for (int i = 1; i <= 5000; ++i) plots.addStep(i, 1.0, 0.1);  // 5000 additions without returning to the loop
    QTRY_VERIFY_WITH_TIMEOUT(plots.replotCount() > before, 2000);
    QTest::qWait(100);
    QVERIFY2(plots.replotCount() - before <= 2, qPrintable(QString::number(plots.replotCount() - before)));
    QCOMPARE(plots.stepCount(), 5000);
  }

  void decimationKeepsTheEnvelope() {
    DecimatedSeries d;
    const int n = 100000;
    QVector<double> k(n), v(n);
    for (int i = 0; i < n; ++i) k[i] = i + 1, v[i] = std::sin(i * 0.01) + (i == 54321 ? 5.0 : 0.0);
    d.append(k.constData(), v.constData(), n / 2);  // in two parts: buckets continue across calls
    d.append(k.constData() + n / 2, v.constData() + n / 2, n - n / 2);
    QCOMPARE(d.size(), int64_t(n));
    QCOMPARE(d.forView(1, 100, 400), d.raw());  // few points in view: the raw data
    auto coarse = d.forView(1, n, 500);
    QVERIFY(coarse != d.raw());
    QVERIFY(coarse->size() >= 500 && coarse->size() <= 2 * n / 64);
    bool found = false;
    const QCPRange all = d.raw()->valueRange(found), kept = coarse->valueRange(found);
    QCOMPARE(kept.upper, all.upper);  // the spike at 54321 survives
    QCOMPARE(kept.lower, all.lower);
    for (int i = 1; i < coarse->size(); ++i) QVERIFY(coarse->at(i)->key >= coarse->at(i - 1)->key);
  }

  void millionStepsDrawFewPoints() {
    LivePlots plots;
    plots.resize(1200, 400);
    plots.show();
    const int n = 1000000;
    QVector<double> s(n), l(n), r(n);
    for (int i = 0; i < n; ++i) s[i] = i + 1, l[i] = 1.0 + (i % 7) * 0.01, r[i] = 1e-3;
    plots.addSteps(s, l, r);
    plots.replotNow();
    QCOMPARE(plots.stepCount(), n);
    QVERIFY(plots.stepPlot()->graph(0)->dataCount() < 20000);  // a level of detail, not the million points
    plots.stepPlot()->xAxis->setRange(1000, 1100);  // zoomed in: the raw points again
    QCOMPARE(plots.stepPlot()->graph(0)->dataCount(), n);
  }

  void panelConfigRoundTrip() {
    TrainingPanel panel;
    TrainingConfig c;
    c.optimizer = "sgd";
    c.lr = 0.05;
    c.momentum = 0.8;
    c.scheduler = "onecycle";
    c.epochs = 7;
    c.batch_size = 32;
    c.seed = 42;
    c.device = "cpu";
    panel.setConfig(c);
    TrainingConfig back = panel.config();
    QCOMPARE(QString::fromStdString(back.to_json()), QString::fromStdString(c.to_json()));
    QVERIFY(panel.deviceCombo()->count() >= 2);  // auto + at least the CPU
    QCOMPARE(panel.deviceCombo()->itemData(0).toString(), QString("auto"));
    QVERIFY(panel.deviceCombo()->findData("cpu") > 0);  // from kiln::list_devices()
  }

  void startDisabledWithReasons() {
    TrainingPanel panel;
    QVERIFY(panel.startButton()->isEnabled());
    panel.setStartBlockers({"output: input 0 is not connected", "no Output node"});
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY(panel.startButton()->toolTip().contains("input 0 is not connected"));
    QVERIFY(panel.startButton()->toolTip().contains("no Output node"));
    panel.setStartBlockers({});
    QVERIFY(panel.startButton()->isEnabled());
    panel.setState(TrainingPanel::State::Running);
    QVERIFY(!panel.startButton()->isEnabled());
    QVERIFY(panel.pauseButton()->isEnabled());
    QVERIFY(panel.stopButton()->isEnabled());
    panel.setProgress(50, 200, 1, 4, 1234.0, 65);
    QVERIFY2(panel.progressText().contains("ETA 1:05"), qPrintable(panel.progressText()));
    QVERIFY2(panel.statusText().contains("step 50/200"), qPrintable(panel.statusText()));
    QVERIFY(panel.statusText().contains("images/s"));
  }

  void progressShowsWhereARunStopped() {
    TrainingPanel panel;
    panel.setState(TrainingPanel::State::Running);
    panel.setProgress(130, 938, 1, 1, 5000, 42);
    QVERIFY2(panel.progressText().contains("ETA"), qPrintable(panel.progressText()));
    panel.setState(TrainingPanel::State::Idle);
    panel.setEnded("stopped");
    QCOMPARE(panel.progressText(), QString("Stopped at epoch 1, step 130"));
    panel.setEnded("failed");
    QCOMPARE(panel.progressText(), QString("Failed at epoch 1, step 130"));
    panel.setEnded("finished");
    QCOMPARE(panel.progressText(), QString("Done"));
    panel.setState(TrainingPanel::State::Running);  // the next run starts at 0%
    QCOMPARE(panel.progressText(), QString("0%"));
  }

  void configJsonErrorsNameTheField() {
    auto message = [](const std::string& json) -> QString {
      try {
        TrainingConfig::from_json(json);
      } catch (const kiln::ValueError& e) {
        return e.what();
      }
      return {};
    };
    QVERIFY(message(R"({"optimizer":"lion"})").contains("'optimizer'"));
    QVERIFY(message(R"({"epochs":0})").contains("'epochs'"));
    QVERIFY(message(R"({"lr":"fast"})").contains("'lr'"));
    QVERIFY(message("not json").contains("not valid JSON"));
    QVERIFY(message(R"({"batch_size":64})").isEmpty());
    TrainingConfig c;
    c.epochs = 3;
    QCOMPARE(TrainingConfig::from_json(c.to_json()).epochs, 3);
  }

  void evaluationShowsConfusionAndMistakes() {
    EvaluationView view;
    EvaluationResult r;
    r.count = 10;
    r.accuracy = 0.7;
    r.loss = 0.5;
    r.classNames = {"a", "b"};
    r.confusion = {4, 1, 2, 3};
    QImage img(28, 28, QImage::Format_Grayscale8);
    img.fill(128);
    r.misclassified = {{img, 0, 1}, {img, 1, 0}, {img, 1, 0}};
    view.setResult(r);
    QVERIFY(view.summaryText().contains("70.00"));
    QCOMPARE(view.confusionTable()->rowCount(), 2);
    QCOMPARE(view.confusionTable()->item(1, 0)->text(), QString("2"));
    QVERIFY(view.confusionTable()->item(0, 0)->background().color().alpha() >
            view.confusionTable()->item(0, 1)->background().color().alpha() - 1);
    QCOMPARE(view.misclassifiedList()->count(), 3);
    QVERIFY(view.misclassifiedList()->item(0)->text().contains("a"));
    r.confusion = {1, 2, 3};  // not 2 x 2
    view.setResult(r);
    QVERIFY(view.summaryText().contains("inconsistent"));
    QCOMPARE(view.confusionTable()->rowCount(), 0);
  }

  void logKeepsLines() {
    LogPanel log;
    log.info("hello");
    log.error("the loss became nan");
    QCOMPARE(log.lineCount(), 2);
    QVERIFY(log.text().contains("error: the loss became nan"));
    log.clear();
    QCOMPARE(log.lineCount(), 0);
  }
};

QTEST_MAIN(TestTrainingWidgets)
#include "test_training_widgets.moc"
