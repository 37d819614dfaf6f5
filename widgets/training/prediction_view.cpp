#include "widgets/training/prediction_view.h"

#include <QColor>
#include <QHeaderView>
#include <QPixmap>
#include <QVBoxLayout>
#include <algorithm>

namespace kiln::studio {

PredictionView::PredictionView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  caption_ = new QLabel(this);
  caption_->setObjectName("predictionCaption");
  caption_->setWordWrap(true);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(this);
  table_->setObjectName("predictionTable");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setIconSize(QSize(kThumbnailSide, kThumbnailSide));
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(caption_);
  layout->addWidget(table_, 1);
}

void PredictionView::setCaption(const QString& text) { caption_->setText(text); }

void PredictionView::clear() {
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
}

void PredictionView::setRows(const QVector<PredictionRow>& rows, bool regression, const QString& valueName) {
  clear();
  int k = regression ? 1 : 0;
  for (const PredictionRow& r : rows) k = std::max(k, static_cast<int>(r.classes.size()));
  QStringList headers{tr("Input")};
  for (int j = 0; j < k; ++j)
    headers << (regression ? (valueName.isEmpty() ? tr("Predicted value") : tr("Predicted %1").arg(valueName))
                           : j == 0 ? tr("Class") : tr("Class %1").arg(j + 1));
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(rows.size()));
  bool thumbnails = false;
  for (int i = 0; i < rows.size(); ++i) {
    const PredictionRow& r = rows[i];
    auto* input = new QTableWidgetItem(r.input);
    input->setToolTip(r.input);
    if (!r.thumbnail.isNull()) {
      input->setIcon(QPixmap::fromImage(
          r.thumbnail.scaled(kThumbnailSide, kThumbnailSide, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
      thumbnails = true;
    }
    table_->setItem(i, 0, input);
    if (!r.error.isEmpty()) {  // the reason across the prediction columns
      auto* e = new QTableWidgetItem(tr("error: %1").arg(r.error));
      e->setToolTip(r.error);
      e->setForeground(QColor(0xff, 0x8a, 0x80));
      table_->setItem(i, 1, e);
      if (k > 1) table_->setSpan(i, 1, 1, k);
      continue;
    }
    if (regression) {
      table_->setItem(i, 1, new QTableWidgetItem(QString::number(r.value, 'g', 6)));
      continue;
    }
    for (int j = 0; j < r.classes.size(); ++j)
      table_->setItem(i, j + 1, new QTableWidgetItem(r.classes[j] + "  " +
                                                     QString::number(100.0 * r.probabilities.value(j), 'f', 1) + " %"));
  }
  if (thumbnails) table_->verticalHeader()->setDefaultSectionSize(kThumbnailSide + 4);
  table_->resizeColumnsToContents();
}

}  // namespace kiln::studio
