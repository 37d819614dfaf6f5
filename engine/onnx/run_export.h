// A trained run's ONNX model with its preprocessing in front, as graph ops (issue 14): the model
// exported by export.h takes the preprocessed float tensor; with_preprocessing puts the run's
// test-time preprocessing before it, so that raw data give what `kiln predict` gives, and writes
// what reads the outputs (class names, task, label column) into the model's metadata_props.
// No protobuf types in this header; run_export.cpp edits the ModelProto with Debian's libonnx.
//
// Image runs (data::ImageRun, as read_image_input of predict_input.h applies it): one input
//   "image"  uint8 [N, H, W, C] (H and W any size, C the run's channels: 1 grey, 3 R G B, as
//            decoded; the caller converts other channel counts, as Kiln's to_channels does)
//   Cast -> Transpose to NCHW -> Kiln's resize (OpenCV's INTER_AREA / INTER_LINEAR on 8-bit
//   pixels, rebuilt as MatMuls with per-axis matrices computed in the graph: Note [Exported image
//   resize] in run_export.cpp) -> center crop (Slice; offsets round((size - target) / 2), half to
//   even as Kiln's std::nearbyint) -> x / 255 -> (x - mean) / std per channel -> the network.
//   Where Kiln enlarges, OpenCV's fixed-point bilinear weights make a pixel differ by up to one
//   level (tests/cli/test_export_run.sh measures the probabilities). The opset stays 17.
// Table runs (data::TabularSchema): one input per feature column, named as the column, in the
//   file's order: a numeric column float [N, 1] (NaN: missing), a categorical one string [N, 1].
//   Numeric: Where(IsNaN(x), mean, x) (the training split's mean fills a missing value), then
//   (x - mean) / scale. Categorical: ai.onnx.ml LabelEncoder (opset 2) of the sorted categories
//   to their positions, every missing marker (data::missing_markers; untrimmed, where
//   is_missing trims spaces) to the mode's, any other
//   unseen value to K -> OneHot(depth K) -> Flatten: [N, K], zeros for an unseen value. Then
//   Concat in column order -> the network. Text and ignored columns are not inputs.
// Both: a classification run gets a second output "probabilities" = Softmax(logits) [N, C].
// metadata_props: kiln.task ("classification" | "regression"), kiln.classes (a JSON array),
// kiln.label (a table's label column), kiln.inputs (a JSON description of each input),
// kiln.preprocessing ("included" | "none"); the model's doc_string says what the inputs are.
#pragma once
#include <string>
#include <vector>

#include "engine/data/image_source.h"
#include "engine/data/tabular.h"

namespace kiln::onnx {

// The prefix of the preprocessing's node, value and initializer names ("preprocess/Cast_0").
inline constexpr const char* kPreprocessPrefix = "preprocess/";

struct RunPreprocessing {
  const data::ImageRun* image = nullptr;       // an image run's (or idx_image_run's) preprocessing
  const data::TabularSchema* table = nullptr;  // a table run's fitted preprocessing
  std::vector<std::string> classes;            // the output's class names (empty for regression)
  bool regression = false;
  bool include = true;  // false: the model as exported (preprocessed inputs), metadata added
};

// `model_bytes` (a serialized ModelProto with one graph input, the network's, and its first output
// the logits [N, classes]) with the preprocessing of `p` in front (at most one of image and
// table; neither: metadata only). ValueError for a model that does not fit (not one input, a
// column name that cannot name an input, an image run of other than 1 or 3 channels).
std::string with_preprocessing(const std::string& model_bytes, const RunPreprocessing& p);

}  // namespace kiln::onnx
