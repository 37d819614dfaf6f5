#include "widgets/training/evaluation_view.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QPixmap>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/training/cell_samples.h"
#include "widgets/training/regression_plot.h"

namespace kiln::studio {

namespace {
// A label drawn bottom-to-top: the title of the confusion matrix's row axis.
class VerticalLabel : public QLabel {
 public:
  using QLabel::QLabel;
  QSize sizeHint() const override { return QLabel::sizeHint().transposed(); }
  QSize minimumSizeHint() const override { return QLabel::minimumSizeHint().transposed(); }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.translate(0, height());
    p.rotate(-90);
    p.drawText(QRect(0, 0, height(), width()), Qt::AlignCenter, text());
  }
};

QString percent(double f) { return QString::number(100 * f, 'f', 1) + " %"; }
}  // namespace

EvaluationView::EvaluationView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  // The summary and the normalization choice share one row, so that on a laptop (the bottom
  // dock about 300 px tall at 1366 x 768) the matrix keeps the height for its ten rows.
  auto* top = new QHBoxLayout;
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the dock
  top->addWidget(summary_, 1);
  layout->addLayout(top);
  auto* split = split_ = new QSplitter(Qt::Horizontal, this);

  // The matrix with its axis titles and the normalization choice.
  auto* matrix = new QWidget(split);
  auto* grid = new QGridLayout(matrix);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(2);
  showLabel_ = new QLabel(tr("Show:"), this);
  top->addWidget(showLabel_);
  normalization_ = new QComboBox(this);
  normalization_->addItem(tr("Counts"), static_cast<int>(Normalization::Counts));
  normalization_->addItem(tr("Normalized by row (recall)"), static_cast<int>(Normalization::ByRow));
  normalization_->addItem(tr("Normalized by column (precision)"), static_cast<int>(Normalization::ByColumn));
  normalization_->setToolTip(tr("Counts, or each cell's fraction of its row (true label: the diagonal is the recall) "
                                "or of its column (predicted label: the diagonal is the precision)"));
  top->addWidget(normalization_);
  predictedTitle_ = new QLabel(tr("Predicted label"), matrix);
  predictedTitle_->setAlignment(Qt::AlignCenter);
  predictedTitle_->setObjectName("predictedAxisTitle");
  trueTitle_ = new VerticalLabel(tr("True label"), matrix);
  trueTitle_->setObjectName("trueAxisTitle");
  QFont bold = font();
  bold.setBold(true);
  predictedTitle_->setFont(bold);
  trueTitle_->setFont(bold);
  confusion_ = new QTableWidget(matrix);
  confusion_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  confusion_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  confusion_->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  // Rows as low as the text (the style's default adds ~6 px): ten classes fit ~200 px.
  const int row = fontMetrics().height() + 2;
  confusion_->verticalHeader()->setMinimumSectionSize(row);
  confusion_->setToolTip(tr("Confusion matrix: row = true label, column = predicted label; click a cell to list its samples"));
  grid->addWidget(predictedTitle_, 0, 1);
  grid->addWidget(trueTitle_, 1, 0);
  grid->addWidget(confusion_, 1, 1);
  grid->setRowStretch(1, 1);
  grid->setColumnStretch(1, 1);

  tabs_ = new QTabWidget(split);
  report_ = new QTableWidget(0, 4, tabs_);
  report_->setHorizontalHeaderLabels({tr("Precision"), tr("Recall"), tr("F1-score"), tr("Support")});
  report_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  report_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  report_->setToolTip(tr("Per class, as scikit-learn's classification_report: precision = TP / (TP + FP), recall = "
                         "TP / (TP + FN), F1 = their harmonic mean, support = test images of the class"));
  cellSamples_ = new CellSamples(tabs_);
  misclassified_ = new QListWidget(tabs_);
  misclassified_->setViewMode(QListView::IconMode);
  misclassified_->setIconSize(QSize(56, 56));
  misclassified_->setGridSize(QSize(104, 96));
  misclassified_->setResizeMode(QListView::Adjust);
  misclassified_->setMovement(QListView::Static);
  misclassified_->setToolTip(tr("Misclassified test images: true label → predicted label"));
  tabs_->addTab(report_, tr("Per class"));
  tabs_->addTab(cellSamples_, tr("Cell samples"));
  tabs_->addTab(misclassified_, tr("Misclassified"));
  split->addWidget(matrix);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  regression_ = new RegressionPlot(this);
  layout->addWidget(regression_, 1);

  connect(normalization_, &QComboBox::currentIndexChanged, this, [this] { fillConfusion(); });
  connect(confusion_, &QTableWidget::cellClicked, this, [this](int row, int column) { showCell(row, column); });
  clear();
}

void EvaluationView::clear() {
  result_ = EvaluationResult{};
  summary_->setText(tr("Train a model: its test accuracy, confusion matrix and misclassified images appear here."));
  confusion_->clear();
  confusion_->setRowCount(0);
  confusion_->setColumnCount(0);
  report_->setRowCount(0);
  cellSamples_->clear();
  misclassified_->clear();
  regression_->clear();
  regression_->hide();
  for (QWidget* w : {static_cast<QWidget*>(split_), static_cast<QWidget*>(normalization_), static_cast<QWidget*>(showLabel_)})
    w->show();
}

QString EvaluationView::summaryText() const { return summary_->text(); }

void EvaluationView::setNormalization(Normalization n) {
  normalization_->setCurrentIndex(normalization_->findData(static_cast<int>(n)));
}

Normalization EvaluationView::normalization() const {
  return static_cast<Normalization>(normalization_->currentData().toInt());
}

void EvaluationView::setResult(const EvaluationResult& r) {
  clear();
  if (r.isRegression()) {
    result_ = r;
    for (QWidget* w : {static_cast<QWidget*>(split_), static_cast<QWidget*>(normalization_), static_cast<QWidget*>(showLabel_)})
      w->hide();
    regression_->show();
    try {
      regression_->setPoints(r.actual, r.predicted, r.target);
    } catch (const std::exception& e) {  // points of another count than values: say so
      summary_->setText(tr("Evaluation result is inconsistent: %1").arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
      return;
    }
    const train::RegressionMetrics& m = regression_->metrics();
    summary_->setText(tr("<b>Test regression of '%1'</b> on %2 rows · MAE %3 · RMSE %4 · R² %5")
                          .arg(r.target.toHtmlEscaped())
                          .arg(m.count)
                          .arg(m.mae, 0, 'g', 4)
                          .arg(m.rmse, 0, 'g', 4)
                          .arg(m.r2, 0, 'f', 3));
    return;
  }
  const int c = static_cast<int>(r.classNames.size());
  if (c == 0 || r.confusion.size() != static_cast<size_t>(c) * c) {
    summary_->setText(tr("Evaluation result is inconsistent: %1 classes but a confusion matrix of %2 cells.")
                          .arg(c)
                          .arg(r.confusion.size()));
    return;
  }
  result_ = r;
  summary_->setText(tr("<b>Test accuracy %1 %</b> on %2 %3 · mean loss %4")
                        .arg(100 * r.accuracy, 0, 'f', 2)
                        .arg(r.count)
                        .arg(r.texts.isEmpty() ? tr("images") : tr("texts"))
                        .arg(r.loss, 0, 'f', 4));
  confusion_->setRowCount(c);
  confusion_->setColumnCount(c);
  confusion_->setHorizontalHeaderLabels(r.classNames);
  confusion_->setVerticalHeaderLabels(r.classNames);
  fillConfusion();
  fillReport();
  const bool text = !r.texts.isEmpty();
  misclassified_->setViewMode(text ? QListView::ListMode : QListView::IconMode);
  misclassified_->setGridSize(text ? QSize() : QSize(104, 96));
  misclassified_->setWordWrap(true);
  misclassified_->setToolTip(text ? tr("Misclassified test texts: true label → predicted label, the text and (in the "
                                       "tooltip) the tokens the model saw")
                                  : tr("Misclassified test images: true label → predicted label"));
  for (const auto& s : r.misclassified) {
    const QString truth = s.truth < c ? r.classNames[s.truth] : QString::number(s.truth);
    const QString pred = s.predicted < c ? r.classNames[s.predicted] : QString::number(s.predicted);
    if (text) {
      const auto i = static_cast<qsizetype>(s.index);
      auto* item = new QListWidgetItem(QString::fromUtf8("%1 \u2192 %2: %3").arg(truth, pred, r.texts.value(i)), misclassified_);
      item->setToolTip(tr("%1\ntrue: %2, predicted: %3\ntokens: %4").arg(r.textOrigins.value(i), truth, pred, r.textTokens.value(i)));
      continue;
    }
    // A table's rows have no picture (s.image is null: QImage::scaled would warn): the test row instead.
    const QString label = s.image.isNull() && s.index >= 0
                              ? QString::fromUtf8("%1\n\u2192 %2\n%3").arg(truth, pred, tr("row %1").arg(s.index))
                              : QString::fromUtf8("%1\n\u2192 %2").arg(truth, pred);
    auto* item = new QListWidgetItem(label, misclassified_);
    if (!s.image.isNull()) item->setIcon(QIcon(QPixmap::fromImage(s.image.scaled(56, 56))));
    item->setToolTip(tr("true: %1, predicted: %2").arg(truth, pred));
  }
}

void EvaluationView::fillConfusion() {
  const EvaluationResult& r = result_;
  const int c = static_cast<int>(r.classNames.size());
  if (c == 0 || confusion_->rowCount() != c) return;
  const Normalization mode = normalization();
  for (int t = 0; t < c; ++t) {
    for (int p = 0; p < c; ++p) {
      const int64_t n = r.confusion[static_cast<size_t>(t * c + p)];
      const double row = normalized_cell(r.confusion, c, t, p, Normalization::ByRow);
      const double shown = normalized_cell(r.confusion, c, t, p, mode);
      auto* item = new QTableWidgetItem(mode == Normalization::Counts ? QString::number(n) : QString::number(shown, 'f', 2));
      item->setData(Qt::UserRole, shown);
      item->setTextAlignment(Qt::AlignCenter);
      // Diagonal (right) in green, errors in red; the stronger the colour the larger the
      // fraction (of the row for counts, else of the shown normalization).
      const double f = mode == Normalization::Counts ? row : shown;
      QColor bg = t == p ? QColor(40, 160, 80) : QColor(210, 60, 50);
      bg.setAlphaF(static_cast<float>(std::min(1.0, 0.08 + 0.92 * (t == p ? f : std::min(1.0, 4 * f)))));
      if (n == 0) bg = Qt::transparent;
      item->setBackground(bg);
      item->setToolTip(tr("%1 images of %2 predicted as %3 (%4 of the row, %5 of the column); click to list them")
                           .arg(n)
                           .arg(r.classNames[t], r.classNames[p])
                           .arg(percent(row), percent(normalized_cell(r.confusion, c, t, p, Normalization::ByColumn))));
      confusion_->setItem(t, p, item);
    }
  }
}

void EvaluationView::fillReport() {
  const int c = static_cast<int>(result_.classNames.size());
  const ClassificationReport rep = classification_report(result_.confusion, c);
  report_->setRowCount(c + 2);
  QStringList rows = result_.classNames;
  rows << tr("macro avg") << tr("weighted avg");
  report_->setVerticalHeaderLabels(rows);
  auto fill = [this](int row, const ClassMetrics& m) {
    const double values[] = {m.precision, m.recall, m.f1};
    for (int col = 0; col < 3; ++col) {
      auto* item = new QTableWidgetItem(QString::number(values[col], 'f', 3));
      item->setData(Qt::UserRole, values[col]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      report_->setItem(row, col, item);
    }
    auto* support = new QTableWidgetItem(QString::number(m.support));
    support->setData(Qt::UserRole, static_cast<qlonglong>(m.support));
    support->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    report_->setItem(row, 3, support);
  };
  for (int k = 0; k < c; ++k) fill(k, rep.classes[static_cast<size_t>(k)]);
  fill(c, rep.macro);
  fill(c + 1, rep.weighted);
}

void EvaluationView::showCell(int truth, int predicted) {
  cellSamples_->showCell(result_, truth, predicted);
  tabs_->setCurrentWidget(cellSamples_);
  if (!detailsShown()) setDetailsShown(true);
}

void EvaluationView::setDetailsShown(bool shown) {
  const int w = std::max(split_->width(), 500);
  split_->setSizes(shown ? QList<int>{w * 3 / 5, w * 2 / 5} : QList<int>{w, 0});
}

bool EvaluationView::detailsShown() const { return split_->sizes().value(1) > 0; }

}  // namespace kiln::studio
