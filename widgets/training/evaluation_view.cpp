#include "widgets/training/evaluation_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPixmap>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace kiln::studio {

EvaluationView::EvaluationView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  confusion_ = new QTableWidget(split);
  confusion_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  confusion_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  confusion_->verticalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  confusion_->setToolTip(tr("Confusion matrix: row = true class, column = predicted class"));
  misclassified_ = new QListWidget(split);
  misclassified_->setViewMode(QListView::IconMode);
  misclassified_->setIconSize(QSize(56, 56));
  misclassified_->setGridSize(QSize(104, 96));
  misclassified_->setResizeMode(QListView::Adjust);
  misclassified_->setMovement(QListView::Static);
  misclassified_->setToolTip(tr("Misclassified test images: true label → predicted label"));
  split->addWidget(confusion_);
  split->addWidget(misclassified_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  clear();
}

void EvaluationView::clear() {
  summary_->setText(tr("Train a model: its test accuracy, confusion matrix and misclassified images appear here."));
  confusion_->clear();
  confusion_->setRowCount(0);
  confusion_->setColumnCount(0);
  misclassified_->clear();
}

QString EvaluationView::summaryText() const { return summary_->text(); }

void EvaluationView::setResult(const EvaluationResult& r) {
  clear();
  const int c = static_cast<int>(r.classNames.size());
  if (c == 0 || r.confusion.size() != static_cast<size_t>(c) * c) {
    summary_->setText(tr("Evaluation result is inconsistent: %1 classes but a confusion matrix of %2 cells.")
                          .arg(c)
                          .arg(r.confusion.size()));
    return;
  }
  summary_->setText(tr("<b>Test accuracy %1 %</b> on %2 images · mean loss %3")
                        .arg(100 * r.accuracy, 0, 'f', 2)
                        .arg(r.count)
                        .arg(r.loss, 0, 'f', 4));
  confusion_->setRowCount(c);
  confusion_->setColumnCount(c);
  confusion_->setHorizontalHeaderLabels(r.classNames);
  confusion_->setVerticalHeaderLabels(r.classNames);
  for (int t = 0; t < c; ++t) {
    int64_t rowSum = 0;
    for (int p = 0; p < c; ++p) rowSum += r.confusion[t * c + p];
    for (int p = 0; p < c; ++p) {
      const int64_t n = r.confusion[t * c + p];
      const double f = rowSum > 0 ? static_cast<double>(n) / static_cast<double>(rowSum) : 0;
      auto* item = new QTableWidgetItem(QString::number(n));
      item->setTextAlignment(Qt::AlignCenter);
      // Diagonal (right) in green, errors in red; the stronger the colour the larger the fraction.
      const QColor base = t == p ? QColor(40, 160, 80) : QColor(210, 60, 50);
      QColor bg = base;
      bg.setAlphaF(static_cast<float>(std::min(1.0, 0.08 + 0.92 * (t == p ? f : std::min(1.0, 4 * f)))));
      if (n == 0) bg = Qt::transparent;
      item->setBackground(bg);
      item->setToolTip(tr("%1 images of %2 predicted as %3 (%4 % of the row)")
                           .arg(n)
                           .arg(r.classNames[t], r.classNames[p])
                           .arg(100 * f, 0, 'f', 1));
      confusion_->setItem(t, p, item);
    }
  }
  for (const auto& s : r.misclassified) {
    const QString truth = s.truth < c ? r.classNames[s.truth] : QString::number(s.truth);
    const QString pred = s.predicted < c ? r.classNames[s.predicted] : QString::number(s.predicted);
    auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(s.image.scaled(56, 56))),
                                     QString::fromUtf8("%1\n\u2192 %2").arg(truth, pred), misclassified_);
    item->setToolTip(tr("true: %1, predicted: %2").arg(truth, pred));
  }
}

}  // namespace kiln::studio
