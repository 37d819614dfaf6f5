// New inputs for a trained model, preprocessed as its run's evaluation preprocesses the test split:
// image files (one, or a folder's, recursively) and CSV tables encoded with the run's fitted table
// preprocessing. Shared by `kiln predict` / `kiln explain` (app/cli) and Kiln Studio's Predict
// (app/studio/run_predictor.h). No OpenCV type: in a build without OpenCV (KILN_OPENCV=OFF) the
// image functions throw ValueError saying so.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/data/image_source.h"
#include "engine/data/table_source.h"

namespace kiln::data {

// An image file to predict and what is known about it.
struct ImageInput {
  std::string path;
  std::string label;  // the class folder it is in, when the input folder holds one per class ("": none)
};

// The images of `path`: the file itself, or every file of the folder and its subfolders whose name
// is an image's (is_image_file_name, image/image_decode.h), sorted by path (byte order), hidden files and folders
// (names starting with '.') left out; *other_files counts the files left out for their names.
// Labels: when every image lies in a first-level subfolder named after one of `classes`, that name
// (as a labelled imagefolder:DIR or its test/ folder), else "". IoError naming path when it is
// missing or holds no image file; ValueError for a build without OpenCV.
std::vector<ImageInput> list_image_inputs(const std::string& path, const std::vector<std::string>& classes,
                                          int64_t* other_files);

// The preprocessing of a run trained on Fashion-MNIST's IDX files: grey 28 x 28, x / 255, then
// Normalize(0.2860, 0.3530) (FashionMNIST), as an ImageRun for read_image_input.
ImageRun idx_image_run(const std::vector<std::string>& classes);

// Reads and decodes the image at `path` and writes it as f32 [channels, height, width] into out,
// preprocessed as `run`'s test images: converted to its channels (RGB to grey as ITU-R 601 luma,
// grey to RGB repeated), resized to cover its size and center-cropped, scaled to [0, 1] and
// normalized with its mean and std (ImageTransform without augmentation). IoError
// "PATH: REASON" when the file cannot be read or decoded (read_image).
void read_image_input(const std::string& path, const ImageRun& run, float* out);

// A categorical field of a table input whose value the run's training split never had: encoded as
// none of the column's categories (all zeros, as scikit-learn's OneHotEncoder(handle_unknown='ignore')).
struct UnseenCategory {
  size_t input = 0;    // the row: an index into TableInput::inputs
  std::string column;  // the column's name
  std::string value;
};

// A CSV file of feature rows encoded for a run trained on a table.
struct TableInput {
  Tensor x;                         // f32 [N, F]: the rows kept
  bool labelled = false;            // the file has the label column
  std::vector<std::string> inputs;  // "FILE:LINE" of each row kept
  // The label field of each row kept as written ("" without a label column): only echoed, never
  // used to choose rows (empty, missing or a class the run does not know, the row is predicted).
  std::vector<std::string> labels;
  std::vector<std::string> dropped;  // "FILE:LINE" of the rows the run's missing-value policy drop left out
  std::vector<UnseenCategory> unseen;  // in row order
};

// Reads `path` as the run's table was read (its delimiter, header and skip_rows), matches its
// columns to the training table's (by header name; without a header by position, with or without
// the label column) and encodes the rows with `schema`'s fitted preprocessing and `config`'s
// missing-value policy for the feature columns; the label column is not read for the encoding.
// IoError "FILE: a PNG image, but the run was trained on a table" for a folder or an image file
// (by its first bytes: PNG, JPEG, GIF, BMP, TIFF, WebP); "FILE:LINE: ..." naming a feature column the file lacks, a column the training table did
// not have, or a field count that fits neither; the engine's errors (prepare_tabular) for values
// that do not fit, naming file, line and column.
TableInput read_table_input(const std::string& path, const TableConfig& config, const TabularSchema& schema);

// "" when `in` has no unseen categorical value, else a note for the user: "3 values of categorical
// columns were not seen in training: encoded as none of the column's categories (as scikit-learn's
// OneHotEncoder(handle_unknown='ignore')), the row still predicted:", then the first `shown` one a
// line ("  FILE:LINE, column 'C': 'V'") and "  and N more".
std::string unseen_categories_note(const TableInput& in, size_t shown = 5);

}  // namespace kiln::data
