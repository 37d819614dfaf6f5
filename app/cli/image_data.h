// Image datasets as the data of `kiln train --dataset imagefolder:DIR | images:FILE.csv`, `kiln eval`
// and `kiln dataset inspect` (engine/data/image, built with KILN_OPENCV): the image flags, loading,
// splitting (train/ test/ [val/] subfolders, else stratified by seed), and the run file images.json
// that keeps how the data was read and normalized, so that `kiln eval` rebuilds the same test split.
// In a build without OpenCV every loading function throws ValueError saying so.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/dataset.h"

namespace kiln::cli {

inline constexpr const char* kImageFolderPrefix = "imagefolder:";
inline constexpr const char* kImageManifestPrefix = "images:";
inline constexpr const char* kRunImagesFile = "images.json";      // in the run directory
inline constexpr const char* kImagesMetadataKey = "kiln.images";  // model.safetensors metadata naming it

// Whether `dataset` is "imagefolder:DIR" or "images:FILE.csv".
bool is_image_dataset(const std::string& dataset);
// Whether this build reads images (KILN_OPENCV).
bool have_image_support();

struct ImageConfig {
  std::string kind;            // "imagefolder" or "images"
  std::string path;            // the folder or the manifest CSV
  int64_t height = 0, width = 0;  // --image-size; 0: the most common size of the training images
  int channels = 0;            // --channels 1|3; 0: 1 when every training image is grey, else 3
  std::string augment = "none";   // --augment none|flip|standard
  double rotation = 0;         // --rotation DEGREES (RandomRotation when training)
  std::string normalize = "auto";  // auto | computed | imagenet | none | MEAN[,MEAN..]/STD[,STD..]
  double test_fraction = 0.2;  // when the folder has no train/ and test/ subfolders
  uint64_t seed = 0;           // of the split and of the augmentation draws
  int workers = 2;             // decoding threads (the DataLoader's workers)
  int64_t cache_mb = 4096;     // decoded-image cache (0: none)
};

// Adds --image-size, --channels, --augment, --rotation, --normalize, --workers and --cache-mb.
ArgParser& add_image_flags(ArgParser& p);
// The image flags' values for an image dataset (UsageError for a bad value, and for an image
// flag given with another dataset). test_fraction and seed come from the caller.
ImageConfig image_config(const Args& args, const std::string& dataset, double test_fraction, uint64_t seed);

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
  std::shared_ptr<const data::Dataset> train, validation, test;  // validation: a val/ subfolder, else null
  nlohmann::ordered_json summary;    // summary.json's "data" entry
  std::vector<std::string> skipped;  // "PATH: REASON" of every file left out
};

// Scans or reads the index, decodes every image once (workers threads, filling the cache),
// lists the undecodable ones, splits and builds the datasets. With `fitted` (a run's), its
// channels, size, normalization and classes are used and only the test split is built (train
// stays null). IoError naming the file or folder for bad data (image_index.h), ValueError for
// a dataset with fewer than two classes or without images.
ImageData load_images(const ImageConfig& config, const ImageRun* fitted = nullptr);

std::string run_images_json(const ImageRun& run);
// IoError naming path when it is missing or malformed.
ImageRun load_run_images(const std::string& path);

// `kiln dataset inspect` of an image folder or manifest: samples, classes and counts, sizes,
// channels, bit depths, skipped files with reasons, as text lines.
std::string inspect_images(const ImageConfig& config);

}  // namespace kiln::cli
