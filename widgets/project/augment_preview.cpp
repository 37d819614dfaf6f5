#include "widgets/project/augment_preview.h"

#include <QFileInfo>
#include <QImage>
#include <QFormLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cstring>

#include "engine/data/image_source.h"
#include "widgets/project/sample_grid.h"

namespace kiln::studio {

AugmentPreview::AugmentPreview(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  caption_ = new QLabel;
  caption_->setWordWrap(true);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  spin_ = new QSpinBox;
  spin_->setRange(1, 1);
  spin_->setToolTip(tr("Which training image the preview shows (a click on a sample above chooses it too)"));
  grid_ = new SampleGrid;
  auto* form = new QFormLayout;
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("Image:"), spin_);
  layout->addWidget(caption_);
  layout->addLayout(form);
  layout->addWidget(grid_);
  connect(spin_, &QSpinBox::valueChanged, this, [this](int v) { setSample(v - 1); });
  hide();
}

void AugmentPreview::setDataset(std::shared_ptr<const data::Dataset> train, int64_t sample) {
  train_ = std::move(train);
  sample_ = -1;  // redraw even when the index is the same
  {
    const QSignalBlocker block(spin_);
    spin_->setRange(1, int(std::clamp<int64_t>(train_ ? train_->size() : 1, 1, INT32_MAX)));
    spin_->setSuffix(tr(" of %1").arg(spin_->maximum()));
  }
  setSample(sample);
}

void AugmentPreview::setSample(int64_t sample) {
  sample = std::clamp<int64_t>(sample, 0, spin_->maximum() - 1);
  if (sample == sample_) return;
  sample_ = sample;
  {
    const QSignalBlocker block(spin_);
    spin_->setValue(int(sample + 1));
  }
  redraw();
}

void AugmentPreview::setTransforms(const std::string& augment, double rotation) {
  if (augment == augment_ && rotation == rotation_) return;
  augment_ = augment;
  rotation_ = rotation;
  redraw();
}

void AugmentPreview::redraw() {
  error_.clear();
  std::vector<QImage> images;
  QStringList labels;
  QString file;
  if (train_ && sample_ < train_->size()) {
    try {
      for (const data::Thumbnail& t : data::augmentation_preview(*train_, sample_, augment_, rotation_, kDraws)) {
        QImage img(int(t.width), int(t.height), t.channels == 3 ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
        for (int64_t y = 0; y < t.height; ++y)
          std::memcpy(img.scanLine(int(y)), t.pixels.data() + y * t.width * t.channels, size_t(t.width * t.channels));
        images.push_back(std::move(img));
        labels << tr("draw %1").arg(images.size());
      }
      file = QFileInfo(QString::fromStdString(data::image_sample_path(*train_, sample_))).fileName();
    } catch (const std::exception& e) {  // the file no longer decodes: say so instead of a preview
      error_ = QString::fromUtf8(e.what());
      images.clear();
      labels.clear();
    }
  }
  grid_->setSamples(std::move(images), labels);
  if (!error_.isEmpty()) {
    caption_->setText(tr("No augmentation preview: %1").arg(error_));
  } else if (augment_ == "none" && rotation_ == 0) {
    caption_->setText(tr("<b>Augmentation preview</b> (%1): no augmentation; every epoch sees the image resized and "
                         "center-cropped.").arg(file.toHtmlEscaped()));
  } else {
    caption_->setText(tr("<b>Augmentation preview</b> (%1): %2 random draws of the training transforms, as the first "
                         "%2 epochs see it.").arg(file.toHtmlEscaped()).arg(kDraws));
  }
  setVisible(grid_->count() > 0 || !error_.isEmpty());
}

}  // namespace kiln::studio
