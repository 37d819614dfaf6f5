#include "widgets/training/prediction_view.h"

#include <QColor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPixmap>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

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
  explain_ = new QComboBox(this);
  explain_->setObjectName("explainMethod");
  explain_->addItems({tr("No explanation"), tr("Grad-CAM heat maps"), tr("Saliency maps")});
  explain_->setToolTip(tr("Why did the model predict that: Grad-CAM (the last convolution's evidence for the "
                          "predicted class) or saliency (the gradient of its score by pixel), over the image "
                          "as the model saw it"));
  connect(explain_, &QComboBox::currentIndexChanged, this, &PredictionView::explainMethodChanged);
  auto* top = new QHBoxLayout;
  top->addWidget(caption_, 1);
  top->addWidget(explain_);
  layout->addLayout(top);
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
  const bool explained =
      std::any_of(rows.begin(), rows.end(), [](const PredictionRow& r) { return !r.explanationNote.isEmpty(); });
  const int why = static_cast<int>(headers.size());  // the explanation column, when there is one
  if (explained) headers << (explain_->currentIndex() == saliency ? tr("Saliency") : tr("Grad-CAM"));
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
    if (explained && r.error.isEmpty()) {
      auto* e = new QTableWidgetItem(r.explanation.isNull() ? r.explanationNote : QString());
      e->setToolTip(r.explanationNote);
      if (!r.explanation.isNull())
        e->setIcon(QPixmap::fromImage(r.explanation.scaled(kExplanationSide, kExplanationSide, Qt::KeepAspectRatio,
                                                           Qt::SmoothTransformation)));
      table_->setItem(i, why, e);
    }
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
  if (explained) {
    table_->setIconSize(QSize(kExplanationSide, kExplanationSide));
    table_->verticalHeader()->setDefaultSectionSize(kExplanationSide + 4);
  } else {
    table_->setIconSize(QSize(kThumbnailSide, kThumbnailSide));
    if (thumbnails) table_->verticalHeader()->setDefaultSectionSize(kThumbnailSide + 4);
  }
  table_->resizeColumnsToContents();
}

QImage heatOverlay(const std::vector<float>& seen, const std::vector<float>& heat, int channels, int height, int width) {
  const size_t hw = static_cast<size_t>(height) * static_cast<size_t>(width);
  if (height <= 0 || width <= 0 || (channels != 1 && channels != 3) || heat.size() != hw ||
      seen.size() != hw * static_cast<size_t>(channels))
    return {};
  QImage out(width, height, QImage::Format_RGB32);
  auto channel = [](float v) { return static_cast<int>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); };
  for (int y = 0; y < height; ++y) {
    auto* line = reinterpret_cast<QRgb*>(out.scanLine(y));
    for (int x = 0; x < width; ++x) {
      const size_t i = static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x);
      const float h = std::clamp(heat[i], 0.0f, 1.0f);
      // jet: red, green and blue as the piecewise-linear ramps of matplotlib's "jet"
      const float jr = std::clamp(1.5f - std::abs(4.0f * h - 3.0f), 0.0f, 1.0f);
      const float jg = std::clamp(1.5f - std::abs(4.0f * h - 2.0f), 0.0f, 1.0f);
      const float jb = std::clamp(1.5f - std::abs(4.0f * h - 1.0f), 0.0f, 1.0f);
      const float r = seen[i], g = channels == 3 ? seen[hw + i] : r, b = channels == 3 ? seen[2 * hw + i] : r;
      line[x] = qRgb(channel(0.5f * (r + jr)), channel(0.5f * (g + jg)), channel(0.5f * (b + jb)));
    }
  }
  return out;
}

}  // namespace kiln::studio
