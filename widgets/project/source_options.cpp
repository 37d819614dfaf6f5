#include "widgets/project/source_options.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <cmath>

namespace kiln::studio {

namespace {
constexpr double kMostHeldOut = 90;  // percent: DatasetSettings::validate's 0.9 together
constexpr int kLargestSide = 8192;   // px: DatasetSettings::validate's (and kiln train --image-size's)

QFormLayout* form_layout(QWidget* owner) {
  auto* f = new QFormLayout(owner);
  f->setRowWrapPolicy(QFormLayout::WrapLongRows);
  f->setContentsMargins(0, 0, 0, 0);
  return f;
}

QDoubleSpinBox* percent_spin(const QString& tip) {
  auto* s = new QDoubleSpinBox;
  s->setRange(0, kMostHeldOut);
  s->setDecimals(1);
  s->setSingleStep(5);
  s->setSuffix(" %");
  s->setKeyboardTracking(false);  // one change (and one re-read of the data) per value typed
  s->setToolTip(tip);
  return s;
}
}  // namespace

SourceOptions::SourceOptions(QWidget* parent) : QWidget(parent) {
  auto* form = form_layout(this);
  test_ = percent_spin(tr("Share of each class held out for testing (a folder with train/ and test/ subfolders uses "
                          "them instead); test and validation together at most 90 %"));
  validation_ = percent_spin(tr("Share of all samples taken out of the training split to measure validation loss "
                                "and accuracy each epoch (a val/ subfolder is used instead when present)"));
  taskBox_ = new QWidget;
  task_ = new QComboBox;
  task_->addItem(tr("Classification"), "classification");
  task_->addItem(tr("Regression"), "regression");
  task_->setToolTip(tr("Classification: the label column's values are the classes. Regression: the label is a number "
                       "the model predicts (one output, mean squared error loss)"));
  missing_ = new QComboBox;
  missing_->addItem(tr("Error"), "error");
  missing_->addItem(tr("Drop the row"), "drop");
  missing_->addItem(tr("Fill (mean or mode)"), "fill");
  missing_->setToolTip(tr("A missing value (an empty field, NA, NaN, ?): an error naming its line and column, the "
                          "row left out, or filled with the training split's mean (numbers) or most frequent value"));
  QFormLayout* table = form_layout(taskBox_);
  table->addRow(tr("Task:"), task_);
  table->addRow(tr("Missing values:"), missing_);
  form->addRow(taskBox_);
  form->addRow(tr("Test share:"), test_);
  form->addRow(tr("Validation share:"), validation_);
  imageBox_ = new QWidget;
  auto* images = form_layout(imageBox_);
  height_ = new QSpinBox;
  width_ = new QSpinBox;
  for (QSpinBox* s : {height_, width_}) {
    s->setRange(0, kLargestSide);
    s->setKeyboardTracking(false);
  }
  height_->setSpecialValueText(tr("auto"));
  width_->setSpecialValueText(tr("= height"));
  height_->setToolTip(tr("The model's input height in pixels; auto: the most common size of the training images, "
                         "scaled to 224 on its shorter side when longer "
                         "(every image is resized to cover the size, then center-cropped)"));
  width_->setToolTip(tr("The model's input width in pixels (= height: square)"));
  auto* size = new QHBoxLayout;
  size->addWidget(height_, 1);
  size->addWidget(new QLabel(QStringLiteral("×")));
  size->addWidget(width_, 1);
  images->addRow(tr("Image size:"), size);
  augment_ = new QComboBox;
  augment_->addItem(tr("None"), "none");
  augment_->addItem(tr("Flip"), "flip");
  augment_->addItem(tr("Standard"), "standard");
  augment_->setItemData(0, tr("Resize and center crop, as evaluation"), Qt::ToolTipRole);
  augment_->setItemData(1, tr("Resize, center crop and a random horizontal flip"), Qt::ToolTipRole);
  augment_->setItemData(2, tr("RandomResizedCrop, random horizontal flip and ColorJitter(0.4, 0.4, 0.4)"), Qt::ToolTipRole);
  augment_->setToolTip(tr("Random changes to each training image, drawn anew every epoch (the preview below shows "
                          "eight draws); testing always uses resize and center crop"));
  rotation_ = new QDoubleSpinBox;
  rotation_->setRange(0, 180);
  rotation_->setDecimals(0);
  rotation_->setSingleStep(5);
  rotation_->setSuffix(QStringLiteral("°"));
  rotation_->setSpecialValueText(tr("none"));
  rotation_->setKeyboardTracking(false);
  rotation_->setToolTip(tr("Rotate each training image by a random angle of up to this many degrees either way"));
  images->addRow(tr("Augmentation:"), augment_);
  images->addRow(tr("Rotation:"), rotation_);
  form->addRow(imageBox_);
  for (QDoubleSpinBox* s : {test_, validation_, rotation_})
    connect(s, &QDoubleSpinBox::valueChanged, this, &SourceOptions::onEdited);
  for (QSpinBox* s : {height_, width_}) connect(s, &QSpinBox::valueChanged, this, &SourceOptions::onEdited);
  connect(augment_, &QComboBox::activated, this, &SourceOptions::onEdited);
  connect(task_, &QComboBox::activated, this, &SourceOptions::onEdited);
  connect(missing_, &QComboBox::activated, this, &SourceOptions::onEdited);
}

void SourceOptions::setSettings(const DatasetSettings& s) {
  updating_ = true;
  test_->setMaximum(kMostHeldOut);
  validation_->setMaximum(kMostHeldOut);
  test_->setValue(100 * s.test_fraction);
  validation_->setValue(100 * s.validation_fraction);
  test_->setMaximum(kMostHeldOut - validation_->value());
  validation_->setMaximum(kMostHeldOut - test_->value());
  height_->setValue(int(s.image_height));
  width_->setValue(s.image_width == s.image_height ? 0 : int(s.image_width));
  augment_->setCurrentIndex(std::max(0, augment_->findData(QString::fromStdString(s.augment))));
  rotation_->setValue(s.rotation);
  imageBox_->setVisible(s.name == "imagefolder" || s.name == "images");
  task_->setCurrentIndex(std::max(0, task_->findData(QString::fromStdString(s.task))));
  missing_->setCurrentIndex(std::max(0, missing_->findData(QString::fromStdString(s.missing))));
  taskBox_->setVisible(s.name == "csv");
  updating_ = false;
}

DatasetSettings SourceOptions::applied(DatasetSettings s) const {
  // Percent with one decimal back to a fraction without binary noise (12.5 % -> 0.125).
  s.test_fraction = std::round(test_->value() * 10) / 1000;
  s.validation_fraction = std::round(validation_->value() * 10) / 1000;
  s.image_height = height_->value();
  s.image_width = s.image_height == 0 ? 0 : width_->value() == 0 ? s.image_height : width_->value();
  if (s.image_height == 0) s.image_width = 0;
  s.augment = augment_->currentData().toString().toStdString();
  if (s.name == "csv") {
    s.task = task_->currentData().toString().toStdString();
    s.missing = missing_->currentData().toString().toStdString();
  }
  s.rotation = rotation_->value();
  return s;
}

void SourceOptions::onEdited() {
  if (updating_) return;
  // Test and validation together hold out at most 90 %: each one's range leaves room for the other.
  updating_ = true;
  test_->setMaximum(kMostHeldOut - validation_->value());
  validation_->setMaximum(kMostHeldOut - test_->value());
  updating_ = false;
  emit edited();
}

}  // namespace kiln::studio
