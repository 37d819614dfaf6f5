// Kiln Studio's Predict: a finished run's model applied to new files, each preprocessed as the run's
// evaluation preprocessed its test split. The model is the run's graph version with its latest
// checkpoint (the weights the evaluation used); the preprocessing is the engine's
// (engine/data/predict_input.h) with the values fitted on the run's data, which the run keeps in
// the project (schema 10, preprocessing_json): the image size, channels and normalization
// (computed ones included), or the table's reading options, standardization, category maps and
// missing-value fills fitted on its training split, so that Predict needs neither the dataset
// nor a rescan of it, and a dataset changed since gives the same predictions. A run stored by an
// older Kiln keeps none: its dataset is then opened again with the run's seed
// (data::open_dataset), and description() says so. No Qt in its interface; MainWindow runs it on
// a worker thread.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/dataset_source.h"
#include "engine/data/image_source.h"
#include "engine/data/table_source.h"
#include "engine/nn/module.h"

namespace kiln::studio {

// The preprocessing a run keeps with it in the project (Project::set_run_preprocessing):
// {"images": images.json} or {"table": table.json} (engine/data/image_source.h run_images_json,
// table_source.h run_table_json) of its opened dataset, as `kiln train` writes them beside a run.
// ValueError for a dataset of another kind (texts).
std::string preprocessing_json(const data::OpenedDataset& dataset);

// The prediction of one input: an image file, or one row of a CSV file ("FILE:LINE").
struct PredictedInput {
  std::string input;
  std::string error;  // why it has no prediction ("" = it has one)
  // A table row's categorical values the run's training data did not have, encoded as none of the
  // column's categories (data::UnseenCategory): "column 'colour': 'purple' was not seen in
  // training" ("; " between several); "" for none.
  std::string note;
  // Classification: the most probable classes first, (class index, softmax probability in [0, 1]).
  std::vector<std::pair<int64_t, float>> top;
  double value = 0;   // regression: the model's output, in the label's unit
  // With an Explain method, for an image input: what the model saw, f32 [channels, height, width]
  // in [0, 1] (the preprocessed image before Normalize), and the map over it, f32 [height, width]
  // in [0, 1] for the predicted class (explain::grad_cam; explain::saliency divided by its
  // maximum); explain_layer: Grad-CAM's layer; explain_error: why there is no map.
  std::vector<float> seen, heat;
  int64_t channels = 0, height = 0, width = 0;
  std::string explain_layer, explain_error;
};

// Why the model predicted what it did (engine/explain/explain.h), for image runs.
enum class Explain { none, grad_cam, saliency };

class RunPredictor {
 public:
  // Loads run `run` of the project file at project_path. ValueError in plain words when the run
  // is unknown, not finished, has no checkpoint or was trained on texts; the engine's errors when
  // its dataset cannot be opened again (a folder that is gone names it) or its graph does not
  // take the checkpoint.
  static std::shared_ptr<RunPredictor> load(const std::string& project_path, int64_t run);

  // One PredictedInput per image file, one per row of each CSV file (several for a table run),
  // in the order given; a file that cannot be used gives one with its error (a corrupt image, a
  // CSV whose columns are not the training table's, a file of the other kind), the others are
  // still predicted. top_k: classes kept per input (at most the class count). Never throws for
  // a bad file; throws what the model throws.
  // explain: also a heat map per image (PredictedInput::heat); ignored for tables.
  std::vector<PredictedInput> predict(const std::vector<std::string>& files, int64_t top_k = 3,
                                      Explain explain = Explain::none) const;

  int64_t run() const { return run_; }
  bool isTable() const { return table_ != nullptr; }
  bool isRegression() const { return regression_; }
  const std::vector<std::string>& classes() const { return classes_; }  // empty for regression
  const std::string& label() const { return label_; }                    // a table's label column
  // The preprocessing it applies (for an ONNX export with it, engine/onnx/run_export.h): an image
  // run's (Fashion-MNIST's too) or a table run's; null for the other kind.
  const data::ImageRun* imageRun() const { return image_.get(); }
  const data::TabularSchema* tableSchema() const { return table_ ? &table_->second : nullptr; }
  const data::TableConfig* tableConfig() const { return table_ ? &table_->first : nullptr; }  // how its CSV is read
  nn::Module& model() const { return *model_; }  // in eval mode
  // "run 3 'adam lr 0.001, 2 epoch(s)' (epoch 2), the image folder pets: ..." (the dataset as
  // opened again), or "..., the preprocessing stored with the run (image folder pets, 3 x 32 x 32)".
  const std::string& description() const { return description_; }
  // Whether the preprocessing came from the project (false: the dataset was opened again).
  bool storedPreprocessing() const { return stored_; }

 private:
  RunPredictor() = default;
  void predictImages(const std::vector<std::string>& files, int64_t top_k, Explain explain,
                     std::vector<PredictedInput>& out) const;
  // The map of `explain` for the preprocessed image (f32 [C, H, W], normalized) into r.
  void explainImage(const float* image, Explain explain, PredictedInput& r) const;
  void predictTable(const std::string& file, int64_t top_k, std::vector<PredictedInput>& out) const;
  // The model's outputs for x ([N, ...] f32) into out[first ...]: top classes or the value.
  void fill(const Tensor& x, int64_t top_k, PredictedInput* out) const;

  int64_t run_ = 0;
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<const data::ImageRun> image_;  // image runs (Fashion-MNIST's too)
  std::shared_ptr<const std::pair<data::TableConfig, data::TabularSchema>> table_;
  bool regression_ = false, stored_ = false;
  std::vector<std::string> classes_;
  std::string label_, description_;
};

}  // namespace kiln::studio
