// SourceOptions: the Dataset panel's settings of a source other than Fashion-MNIST that are not
// its path or columns: the shares held out for testing and validation (every source), a CSV
// table's task (classification or regression) and missing-value policy, and for
// an image folder or manifest the model's input size, the training augmentation and the random
// rotation (DatasetSettings' fields, as `kiln train --test-fraction --validation-fraction
// --task --missing --image-size --augment --rotation`).
#pragma once
#include <QWidget>

#include "widgets/project/dataset_settings.h"

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace kiln::studio {

class SourceOptions : public QWidget {
  Q_OBJECT
 public:
  explicit SourceOptions(QWidget* parent = nullptr);
  // Shows s's values (the image rows only for "imagefolder" and "images"); emits nothing.
  void setSettings(const DatasetSettings& s);
  // s with the shown values: fractions from percent, the image size square when only the
  // height is set, 0 x 0 ("auto") when the height is 0.
  DatasetSettings applied(DatasetSettings s) const;

  QDoubleSpinBox* testPercentSpin() const { return test_; }
  QDoubleSpinBox* validationPercentSpin() const { return validation_; }
  QSpinBox* heightSpin() const { return height_; }  // 0 shows "auto"
  QSpinBox* widthSpin() const { return width_; }    // 0 shows "= height"
  QComboBox* taskCombo() const { return task_; }    // csv: classification | regression
  QComboBox* missingCombo() const { return missing_; }  // csv: error | drop | fill
  QComboBox* augmentCombo() const { return augment_; }
  QDoubleSpinBox* rotationSpin() const { return rotation_; }

 signals:
  void edited();  // the user changed a value (not while setSettings shows one)

 private:
  void onEdited();
  QDoubleSpinBox* test_ = nullptr;
  QDoubleSpinBox* validation_ = nullptr;
  QWidget* imageBox_ = nullptr;
  QWidget* taskBox_ = nullptr;
  QComboBox* task_ = nullptr;
  QComboBox* missing_ = nullptr;
  QSpinBox* height_ = nullptr;
  QSpinBox* width_ = nullptr;
  QComboBox* augment_ = nullptr;
  QDoubleSpinBox* rotation_ = nullptr;
  bool updating_ = false;
};

}  // namespace kiln::studio
