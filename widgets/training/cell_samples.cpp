#include "widgets/training/cell_samples.h"

#include <QHeaderView>
#include <QLabel>
#include <QPixmap>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "engine/data/fashion_mnist.h"
#include "widgets/training/evaluation_view.h"

namespace kiln::studio {

QImage fashion_mnist_test_image(const QString& dir, int64_t index) {
  static std::mutex mutex;
  static std::map<QString, std::shared_ptr<const data::FashionMNIST>> cache;  // null: could not be read
  std::shared_ptr<const data::FashionMNIST> split;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(dir);
    if (it == cache.end()) {
      try {
        it = cache.emplace(dir, std::make_shared<data::FashionMNIST>(false, dir.toStdString())).first;
      } catch (const std::exception&) {
        it = cache.emplace(dir, nullptr).first;
      }
    }
    split = it->second;
  }
  if (!split || index < 0 || index >= split->size()) return {};
  const Tensor& images = split->images();  // u8 [N, 28, 28], contiguous on the CPU
  const int h = static_cast<int>(images.shape()[1]), w = static_cast<int>(images.shape()[2]);
  const uint8_t* bytes = images.data_ptr<uint8_t>() + index * h * w;
  QImage image(w, h, QImage::Format_Grayscale8);
  for (int y = 0; y < h; ++y) std::copy_n(bytes + static_cast<ptrdiff_t>(y) * w, w, image.scanLine(y));
  return image;
}

CellSamples::CellSamples(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  layout->addWidget(message_);
  table_ = new QTableWidget(0, 4, this);
  table_->setHorizontalHeaderLabels({tr("Test index"), tr("True"), tr("Predicted"), tr("Probability")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setIconSize(QSize(kThumbnail, kThumbnail));
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(kThumbnail + 4);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);
  clear();
}

QString CellSamples::message() const { return message_->text(); }

void CellSamples::clear() {
  message_->setText(tr("Click a cell of the confusion matrix to list its test samples."));
  table_->setRowCount(0);
  table_->setColumnCount(4);
}

void CellSamples::showCell(const EvaluationResult& r, int truth, int predicted) {
  table_->setRowCount(0);
  const int c = static_cast<int>(r.classNames.size());
  if (truth < 0 || truth >= c || predicted < 0 || predicted >= c) return;
  const QString t = r.classNames[truth], p = r.classNames[predicted];
  auto addRow = [&](int64_t index, double probability, const QImage& image) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* idx = new QTableWidgetItem;
    idx->setData(Qt::DisplayRole, static_cast<qlonglong>(index));
    if (!image.isNull()) idx->setIcon(QIcon(QPixmap::fromImage(image.scaled(kThumbnail, kThumbnail))));
    table_->setItem(row, 0, idx);
    table_->setItem(row, 1, new QTableWidgetItem(t));
    table_->setItem(row, 2, new QTableWidgetItem(p));
    auto* prob = new QTableWidgetItem(std::isnan(probability) ? tr("n/a") : QString::number(probability, 'f', 4));
    prob->setData(Qt::UserRole, probability);
    prob->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, 3, prob);
    if (!r.texts.isEmpty()) {
      const auto i = static_cast<qsizetype>(index);
      auto* text = new QTableWidgetItem(r.texts.value(i));
      text->setToolTip(tr("%1\ntokens: %2").arg(r.textOrigins.value(i), r.textTokens.value(i)));
      table_->setItem(row, 4, text);
    }
  };
  table_->setColumnCount(r.texts.isEmpty() ? 4 : 5);
  if (!r.texts.isEmpty()) table_->setHorizontalHeaderItem(4, new QTableWidgetItem(tr("Text")));
  if (r.predictions.isEmpty()) {
    int shown = 0;
    for (const auto& s : r.misclassified)
      if (s.truth == truth && s.predicted == predicted) {
        addRow(s.index, NAN, s.image);
        ++shown;
      }
    message_->setText(tr("This run was evaluated before predictions were stored: only the stored misclassified "
                         "samples can be shown (%1 of %2 → %3).")
                          .arg(shown)
                          .arg(t, p));
    return;
  }
  std::vector<EvaluationResult::Prediction> cell;
  for (const auto& s : r.predictions)
    if (s.truth == truth && s.predicted == predicted) cell.push_back(s);
  // Highest probability first; NaN (a model that output NaN) last.
  std::stable_sort(cell.begin(), cell.end(), [](const auto& a, const auto& b) {
    if (std::isnan(a.probability) != std::isnan(b.probability)) return std::isnan(b.probability);
    return a.probability > b.probability;
  });
  table_->setUpdatesEnabled(false);
  for (const auto& s : cell)
    addRow(s.index, s.probability,
           s.index < r.imageFiles.size() ? QImage(r.imageFiles[static_cast<qsizetype>(s.index)])
           : r.imageDir.isEmpty()        ? QImage()
                                         : fashion_mnist_test_image(r.imageDir, s.index));
  table_->setUpdatesEnabled(true);
  message_->setText((r.texts.isEmpty()
                         ? tr("%n test image(s) of %1 predicted as %2, most confident first", nullptr, static_cast<int>(cell.size()))
                         : tr("%n test text(s) of %1 predicted as %2, most confident first", nullptr, static_cast<int>(cell.size())))
                        .arg(t, p));
}

}  // namespace kiln::studio
