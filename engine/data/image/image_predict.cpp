// predict_input.h's image half: built only with KILN_OPENCV (engine/data/predict_input.cpp has
// the functions of a build without it).
#include <algorithm>
#include <filesystem>
#include <set>

#include "engine/core/error.h"
#include "engine/data/image/image_cache.h"
#include "engine/data/image/image_decode.h"
#include "engine/data/image/image_transforms.h"
#include "engine/data/predict_input.h"

namespace kiln::data {

namespace fs = std::filesystem;

std::vector<ImageInput> list_image_inputs(const std::string& path, const std::vector<std::string>& classes,
                                          int64_t* other_files) {
  std::error_code ec;
  KILN_CHECK(fs::exists(path, ec), IoError, path, ": no such file or folder");
  if (!fs::is_directory(path, ec)) {
    KILN_CHECK(is_image_file_name(path), IoError, path, ": not an image file name (",
               "jpg, jpeg, jpe, png, ppm, pgm, bmp, tif, tiff, webp); a table of features needs a run trained on one");
    return {{path, ""}};
  }
  std::vector<std::string> files;
  int64_t others = 0;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {  // hidden
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    if (is_image_file_name(it->path().string())) files.push_back(it->path().string());
    else ++others;
  }
  KILN_CHECK(!ec, IoError, path, ": cannot list the folder (", ec.message(), ")");
  KILN_CHECK(!files.empty(), IoError, path, ": no image file in the folder or its subfolders (", others,
             " other files)");
  std::sort(files.begin(), files.end());
  if (other_files) *other_files = others;

  // Labels from class folders: DIR/<class>/..., every image in one.
  const std::set<std::string> names(classes.begin(), classes.end());
  std::vector<ImageInput> inputs;
  bool labelled = true;
  for (const std::string& f : files) {
    const fs::path rel = fs::path(f).lexically_relative(path);
    const std::string first = rel.begin()->string();
    labelled = labelled && std::distance(rel.begin(), rel.end()) > 1 && names.count(first);
    inputs.push_back({f, first});
  }
  if (!labelled)
    for (ImageInput& in : inputs) in.label.clear();
  return inputs;
}

void read_image_input(const std::string& path, const ImageRun& run, float* out) {
  ImageTransform t;
  t.height = run.height, t.width = run.width, t.channels = run.channels;
  t.mean = run.mean, t.stddev = run.stddev;
  // As ImageDataset::image and get_batch_for_epoch of a test split.
  const cv::Mat m = shrink_to_short_side(to_channels(read_image(path), run.channels),
                                               cache_short_side(run.height, run.width));
  std::mt19937_64 g = sample_generator(run.config.seed, 0, 0);  // not drawn from without augmentation
  t.apply(m, /*train=*/false, g, out);
}

}  // namespace kiln::data
