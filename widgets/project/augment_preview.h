// AugmentPreview: the Dataset panel's augmentation preview: one training image of an image
// folder or manifest under kDraws draws of the current training transforms (engine/data's
// augmentation_preview: the loader's own ImageTransform code, the draws of epochs 0..7 of that
// sample), redrawn when the augmentation or rotation changes. The image is chosen with the
// "Image" spin box (1 to the training split's size) or, in the Dataset panel, by clicking a
// sample of its grid.
#pragma once
#include <QWidget>
#include <memory>
#include <string>

#include "engine/data/dataset.h"

class QLabel;
class QSpinBox;

namespace kiln::studio {

class SampleGrid;

class AugmentPreview : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kDraws = 8;
  explicit AugmentPreview(QWidget* parent = nullptr);
  // The training split the image comes from (an image dataset of engine/data's load_images;
  // null or another kind: nothing to preview, the widget hides) and the sample shown.
  void setDataset(std::shared_ptr<const data::Dataset> train, int64_t sample = 0);
  // Shows sample i of the training split (0-based; clamped to it), as the spin box does.
  void setSample(int64_t sample);
  int64_t sample() const { return sample_; }
  QSpinBox* sampleSpin() const { return spin_; }  // the sample shown, 1-based ("3 of 120")
  // The transforms drawn (DatasetSettings' augment and rotation); redraws when they differ.
  void setTransforms(const std::string& augment, double rotation);

  const SampleGrid* grid() const { return grid_; }  // kDraws pictures of the model's input size
  QString errorText() const { return error_; }      // why there is no preview ("" when there is)

 private:
  void redraw();
  std::shared_ptr<const data::Dataset> train_;
  int64_t sample_ = 0;
  std::string augment_ = "none";
  double rotation_ = 0;
  QLabel* caption_ = nullptr;
  QSpinBox* spin_ = nullptr;
  SampleGrid* grid_ = nullptr;
  QString error_;
};

}  // namespace kiln::studio
