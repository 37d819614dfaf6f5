// What a `kiln train` run was trained on, read from its model.safetensors metadata and run files
// (run_files.h): the table, image or text preprocessing and the class names. Shared by `kiln
// predict` and `kiln explain`.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "engine/io/safetensors.h"

namespace kiln::cli {

// What the run was trained on, and how its inputs are read.
struct RunData {
  std::optional<std::pair<TableConfig, data::TabularSchema>> table;
  std::optional<ImageRun> image;  // an image run's, or Fashion-MNIST's (idx_image_run)
  std::optional<TextRun> text;    // a text run's text.json, with its tokenizer
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::vector<std::string> names;
  bool regression = false;
  bool class_subset = false;  // a Fashion-MNIST run of kiln train --classes
};

// The RunData of the run directory `run` whose model.safetensors is `file`. ValueError naming
// the file for a run of a dataset whose inputs are unknown (its run files missing); the run
// files' readers' errors (IoError naming the file) otherwise.
RunData run_data(const io::SafetensorsFile& file, const std::filesystem::path& run);

}  // namespace kiln::cli
