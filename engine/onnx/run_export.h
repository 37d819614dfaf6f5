// A trained run's ONNX model with its preprocessing in front, as graph ops (issue 14): the model
// exported by export.h takes the preprocessed float tensor; with_preprocessing puts the run's
// test-time preprocessing before it, so that raw data give what `kiln predict` gives, and writes
// what reads the outputs (class names, task, label column) into the model's metadata_props.
// No protobuf types in this header; run_export.cpp edits the ModelProto with Debian's libonnx.
//
// Image runs (data::ImageRun, as read_image_input of predict_input.h applies it): one input
//   "image"  uint8 [N, H, W, C] (H and W any size, C the run's channels: 1 grey, 3 R G B, as
//            decoded; the caller converts other channel counts, as Kiln's to_channels does)
//   Cast -> Transpose to NCHW -> Resize (ai.onnx 18: linear, antialias, keep_aspect_ratio_policy
//   not_smaller to the run's height x width, half_pixel, exclude_outside) -> Round (Kiln resizes
//   8-bit pixels) -> center crop (Slice; offsets round((size - target) / 2), half to even as
//   Kiln's std::nearbyint) -> x / 255 -> (x - mean) / std per channel -> the network.
//   Kiln resizes with OpenCV's INTER_AREA when shrinking (a box filter, after shrinking a large
//   image's short side to ceil(1.14 * max(height, width)) first) and INTER_LINEAR when
//   enlarging; ONNX has no box filter, so a shrunk image differs slightly: the exported model is
//   close to `kiln predict`, not equal (tests/cli/test_export_run.sh measures how close).
//   The model's opset becomes 18 (the network's ops must mean the same at 18; ValueError naming
//   the op when one does not: Pad, Split, the Reduce ops ... changed at 18).
// Table runs (data::TabularSchema): one input per feature column, named as the column, in the
//   file's order: a numeric column float [N, 1] (NaN: missing), a categorical one string [N, 1].
//   Numeric: Where(IsNaN(x), mean, x) (the training split's mean fills a missing value), then
//   (x - mean) / scale. Categorical: ai.onnx.ml LabelEncoder (opset 2) of the sorted categories
//   to their positions, every missing marker of data::is_missing to the mode's, any other
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

struct RunPreprocessing {
  const data::ImageRun* image = nullptr;       // an image run's (or idx_image_run's) preprocessing
  const data::TabularSchema* table = nullptr;  // a table run's fitted preprocessing
  std::vector<std::string> classes;            // the output's class names (empty for regression)
  bool regression = false;
  bool include = true;  // false: the model as exported (preprocessed inputs), metadata added
};

// `model_bytes` (a serialized ModelProto with one graph input, the network's, and its first output
// the logits [N, classes]) with the preprocessing of `p` in front (at most one of image and
// table; neither: metadata only). ValueError for a model that does not fit (inputs, width of the
// table's features, an op whose meaning changed at opset 18 for an image run).
std::string with_preprocessing(const std::string& model_bytes, const RunPreprocessing& p);

}  // namespace kiln::onnx
