#include "widgets/training/evaluation_compare.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "engine/train/regression_metrics.h"
#include "widgets/training/classification_report.h"

namespace kiln::studio {

namespace {

QString signedPoints(double d) { return (d >= 0 ? "+" : "") + QString::number(d, 'f', 2); }

QTableWidgetItem* number(double v, const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setData(Qt::UserRole, v);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

// "<b>A</b> NAME: test accuracy 91.20 % on 1000 images", or a regression run's
// "<b>A</b> NAME: MAE 0.412, RMSE 0.530, R² 0.871 on 40 test rows (price)".
QString runLine(const QString& which, const QString& name, const EvaluationResult& r) {
  const QString head = QStringLiteral("<b>%1</b> %2: ").arg(which, name.toHtmlEscaped());
  if (!r.isRegression())
    return head + EvaluationCompare::tr("test accuracy %1 % on %2 images").arg(100 * r.accuracy, 0, 'f', 2).arg(r.count);
  const train::RegressionMetrics m = train::regression_metrics(std::vector<double>(r.predicted.begin(), r.predicted.end()),
                                                               std::vector<double>(r.actual.begin(), r.actual.end()));
  return head + EvaluationCompare::tr("MAE %1, RMSE %2, R² %3 on %4 test rows%5")
                    .arg(m.mae, 0, 'g', 4)
                    .arg(m.rmse, 0, 'g', 4)
                    .arg(m.r2, 0, 'f', 4)
                    .arg(m.count)
                    .arg(r.target.isEmpty() ? QString() : " (" + r.target.toHtmlEscaped() + ")");
}

}  // namespace

EvaluationCompare::EvaluationCompare(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  auto* split = new QSplitter(Qt::Vertical, this);
  deltas_ = new QTableWidget(0, kColumns, split);
  deltas_->setHorizontalHeaderLabels({tr("Precision A"), tr("Precision B"), tr("Δ"), tr("Recall A"), tr("Recall B"),
                                      tr("Δ"), tr("F1 A"), tr("F1 B"), tr("Δ")});
  deltas_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  deltas_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  deltas_->setToolTip(tr("Per class, as scikit-learn's classification_report; Δ = B − A (green: B is better)"));
  auto* views = new QSplitter(Qt::Horizontal, split);
  a_ = new EvaluationView(views);
  b_ = new EvaluationView(views);
  // The matrices get the width (the table above has both runs' per-class figures); a
  // clicked cell opens its view's details with the samples.
  for (EvaluationView* v : {a_, b_}) v->setDetailsShown(false);
  split->addWidget(deltas_);
  split->addWidget(views);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addWidget(split, 1);
}

QString EvaluationCompare::summaryText() const { return summary_->text(); }

void EvaluationCompare::setRuns(const QString& nameA, const EvaluationResult& a, const QString& nameB,
                                const EvaluationResult& b) {
  a_->setResult(a);
  b_->setResult(b);
  deltas_->setRowCount(0);
  QString text = runLine("A", nameA, a) + "<br>" + runLine("B", nameB, b);
  // Regression runs have no classes: their metrics and differences (lower MAE and RMSE, higher
  // R² are better), no per-class table.
  deltas_->setVisible(!a.isRegression() && !b.isRegression());
  if (a.isRegression() || b.isRegression()) {
    if (a.isRegression() != b.isRegression()) {
      summary_->setText(text + "<br>" + tr("One run is a regression, the other a classification: no differences."));
      return;
    }
    const auto metrics = [](const EvaluationResult& r) {
      return train::regression_metrics(std::vector<double>(r.predicted.begin(), r.predicted.end()),
                                       std::vector<double>(r.actual.begin(), r.actual.end()));
    };
    const train::RegressionMetrics ma = metrics(a), mb = metrics(b);
    const auto d = [](double v) { return (v >= 0 ? "+" : "") + QString::number(v, 'g', 4); };
    text += "<br>" + tr("<b>Δ (B − A): MAE %1, RMSE %2, R² %3</b>").arg(d(mb.mae - ma.mae), d(mb.rmse - ma.rmse), d(mb.r2 - ma.r2));
    if (a.target != b.target) text += " " + tr("(different label columns: %1 and %2)").arg(a.target.toHtmlEscaped(), b.target.toHtmlEscaped());
    else if (a.count != b.count) text += " " + tr("(tested on different numbers of rows)");
    summary_->setText(text);
    return;
  }
  const int c = static_cast<int>(a.classNames.size());
  const bool comparable = a.classNames == b.classNames && c > 0 &&
                          a.confusion.size() == static_cast<size_t>(c) * c && b.confusion.size() == a.confusion.size();
  if (!comparable) {
    summary_->setText(text + "<br>" +
                      tr("The runs were tested on different classes (%1 and %2 classes): no per-class differences.")
                          .arg(a.classNames.size())
                          .arg(b.classNames.size()));
    return;
  }
  text += "<br>" + tr("<b>Δ accuracy (B − A): %1 percentage points</b>").arg(signedPoints(100 * (b.accuracy - a.accuracy)));
  if (a.count != b.count) text += " " + tr("(tested on different numbers of images)");
  summary_->setText(text);

  const ClassificationReport ra = classification_report(a.confusion, c);
  const ClassificationReport rb = classification_report(b.confusion, c);
  QStringList rows = a.classNames;
  rows << tr("macro avg") << tr("weighted avg");
  deltas_->setRowCount(c + 2);
  deltas_->setVerticalHeaderLabels(rows);
  auto fill = [this](int row, const ClassMetrics& ma, const ClassMetrics& mb) {
    const double va[] = {ma.precision, ma.recall, ma.f1}, vb[] = {mb.precision, mb.recall, mb.f1};
    for (int m = 0; m < 3; ++m) {
      deltas_->setItem(row, 3 * m, number(va[m], QString::number(va[m], 'f', 3)));
      deltas_->setItem(row, 3 * m + 1, number(vb[m], QString::number(vb[m], 'f', 3)));
      const double d = vb[m] - va[m];
      QTableWidgetItem* delta = number(d, (d >= 0 ? "+" : "") + QString::number(d, 'f', 3));
      if (d >= kShownChange) delta->setForeground(QColor(60, 170, 90));
      if (d <= -kShownChange) delta->setForeground(QColor(220, 80, 70));
      QFont bold = delta->font();
      bold.setBold(true);
      delta->setFont(bold);
      deltas_->setItem(row, 3 * m + 2, delta);
    }
  };
  for (int k = 0; k < c; ++k) fill(k, ra.classes[static_cast<size_t>(k)], rb.classes[static_cast<size_t>(k)]);
  fill(c, ra.macro, rb.macro);
  fill(c + 1, ra.weighted, rb.weighted);
}

}  // namespace kiln::studio
