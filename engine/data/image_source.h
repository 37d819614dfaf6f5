// Image datasets opened from a spec, shared by `kiln train|eval|dataset inspect` (app/cli) and
// Kiln Studio (app/studio): "imagefolder:DIR" (root/<class>/<image>, as torchvision's ImageFolder)
// or "images:FILE.csv" (a manifest of path,label). Loading scans or reads the index, decodes every
// image once (engine/data/image), lists the undecodable files, splits (train/ test/ [val/]
// subfolders, else stratified by seed) and builds the datasets with their transforms and
// normalization. The run description (images.json) keeps how the data was read and normalized so
// that an evaluation rebuilds the same test split. This header uses no OpenCV type: in a build
// without OpenCV (KILN_OPENCV=OFF) every loading function throws ValueError saying so.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace kiln::data {

inline constexpr const char* kImageFolderPrefix = "imagefolder:";
inline constexpr const char* kImageManifestPrefix = "images:";

// Whether `spec` is "imagefolder:DIR" or "images:FILE.csv".
bool is_image_dataset(const std::string& spec);
// Whether this build reads images (KILN_OPENCV).
bool have_image_support();
// How many image files the decoder (image/image_decode.h read_image) has opened since the process
// started, on all threads: what an opening of a dataset read (none when its file index came from
// an IndexStore unchanged). 0 in a build without OpenCV.
int64_t image_files_read();

// The most an automatic input size's shorter side is (ImageConfig::height 0): 224, the input of
// torchvision's classification models. Photos at their own size would need tens of GB to train.
inline constexpr int64_t kDefaultShortSide = 224;

struct ImageConfig {
  std::string kind;               // "imagefolder" or "images"
  std::string path;               // the folder or the manifest CSV
  // 0: the most common size of the training images, scaled down (aspect kept, as torchvision's
  // Resize(kDefaultShortSide)) when its shorter side is longer than kDefaultShortSide.
  int64_t height = 0, width = 0;
  int channels = 0;               // 1 or 3; 0: 1 when every training image is grey, else 3
  std::string augment = "none";   // none | flip | standard (image_transforms.h parse_augment)
  double rotation = 0;            // RandomRotation of up to this many degrees when training
  std::string normalize = "auto"; // auto (ImageNet's mean/std for RGB, computed for grey) | computed
                                  // | imagenet | none | MEAN[,MEAN..]/STD[,STD..]
  double test_fraction = 0.2;     // when the folder has no train/ and test/ subfolders
  uint64_t seed = 0;              // of the split and of the augmentation draws
  int workers = 2;                // decoding threads (the DataLoader's workers)
  int64_t cache_mb = 4096;        // decoded-image cache in MiB (0: none)
};

// The config of a spec: kind and path from "imagefolder:DIR" / "images:FILE.csv", the rest
// defaults. ValueError for another spec or an empty path.
ImageConfig image_config_from_spec(const std::string& spec);

// What a run keeps (images.json): the config plus the values settled from the data.
struct ImageRun {
  ImageConfig config;
  int channels = 3;
  int64_t height = 0, width = 0;
  std::vector<double> mean, stddev;  // Normalize (empty: none)
  std::vector<std::string> classes;
  std::string fingerprint;           // of the training split's file list (image_index.h)
};

struct ImageData {
  ImageRun run;
  // f32 [channels, height, width] samples with i64 class targets; validation: a val/ subfolder,
  // else null; train is null when loaded with a `fitted` run.
  std::shared_ptr<const Dataset> train, validation, test;
  nlohmann::ordered_json summary;    // kind, path, classes, class_counts, samples, split, channels,
                                     // image_size, image_sizes, skipped ([{path, reason}]), fingerprint...
  std::vector<std::string> skipped;  // "PATH: REASON" of every file left out
  // With an IndexStore: how many of the folders indexed (train/, test/, val/ or the one folder)
  // came from the store unchanged, and what the store said of each (image_index_store.h: reused,
  // a folder that changed, a damaged stored index, a store that failed).
  int index_reused = 0;
  std::vector<std::string> notes;
};

// Loads an image dataset. With `fitted` (a run's), its channels, size, normalization and classes
// are used and only the test split is built. IoError naming the file or folder for bad data
// (image_index.h: a missing folder, a class folder without images, ...), ValueError for a
// dataset with fewer than two classes or without a decodable image. With `store` (an image folder;
// a manifest is always read again), each folder's verified index is taken from it when the folder
// is unchanged, and saved to it when scanned (image/image_index_store.h index_image_folder;
// `rescan` ignores what is stored).
class IndexStore;
ImageData load_images(const ImageConfig& config, const ImageRun* fitted = nullptr, IndexStore* store = nullptr,
                      bool rescan = false);

std::string run_images_json(const ImageRun& run);
// IoError naming path when it is missing or malformed.
ImageRun load_run_images(const std::string& path);
// The same from the text of an images.json; `path` names where it came from in the errors.
ImageRun parse_run_images(const std::string& text, const std::string& path);

// `kiln dataset inspect` of an image folder or manifest: samples, classes and counts, sizes,
// channels, bit depths, skipped files with reasons, as text lines.
std::string inspect_images(const ImageConfig& config);

// An 8-bit picture of a sample for display: interleaved rows of `channels` (1 grey, 3 R G B) bytes.
struct Thumbnail {
  int64_t height = 0, width = 0;
  int channels = 1;
  std::vector<uint8_t> pixels;  // height * width * channels
};
// Sample i of a dataset built by load_images (its train, validation or test), as decoded and
// cached (before any crop or normalization), scaled down (area interpolation) so that its longer
// side is at most max_side, 16-bit values scaled to 8 bits. An empty Thumbnail for a dataset of
// another kind; IndexError for i outside it; IoError naming the file when it no longer decodes.
Thumbnail image_thumbnail(const Dataset& dataset, int64_t i, int64_t max_side);
// The augmentation preview of the Studio's Dataset panel: sample i of a dataset built by
// load_images (its training split) under `draws` draws of its training transforms with
// `augment` (none | flip | standard) and `rotation` (degrees, 0 to 180) in place of its own:
// ImageTransform::apply with train on and draw d's generator sample_generator(seed, d, sample),
// i.e. the draws the DataLoader makes for that sample in epochs 0 .. draws-1. Normalization is
// undone (x * std + mean, clamped to [0, 1], scaled to 255), so each picture is the model's
// input size (height x width) as the model sees it. Empty for a dataset of another kind (and in
// a build without OpenCV); IndexError for i outside it, ValueError for an unknown augment name,
// a rotation outside [0, 180] or draws < 0, IoError naming the file when it no longer decodes.
std::vector<Thumbnail> augmentation_preview(const Dataset& dataset, int64_t i, const std::string& augment,
                                            double rotation, int draws);
// The file of sample i of such a dataset ("" for a dataset of another kind).
std::string image_sample_path(const Dataset& dataset, int64_t i);
// The class of every sample of such a dataset, from its index (nothing decoded); empty for a
// dataset of another kind.
std::vector<int64_t> image_labels(const Dataset& dataset);
// The files of the image datasets among `datasets` (or the datasets a Subset of one is of) whose
// size or modification time is no longer the one their index holds, or that are gone, each as
// "PATH (what changed)", every index looked at once: a file rewritten in place after a stored
// index was made (image/image_index_store.h Note [What the folder check misses]). One stat a file;
// nothing is read. Empty for datasets of another kind (and in a build without OpenCV).
std::vector<std::string> changed_image_files(const std::vector<const Dataset*>& datasets);

}  // namespace kiln::data
