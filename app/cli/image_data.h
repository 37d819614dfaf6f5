// Image datasets as the data of `kiln train --dataset imagefolder:DIR | images:FILE.csv`, `kiln eval`
// and `kiln dataset inspect`: the image flags and the run file images.json. Loading, splitting and
// the run description are engine/data/image_source.h's (shared with Kiln Studio).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/image_source.h"

namespace kiln::cli {

inline constexpr const char* kRunImagesFile = "images.json";      // in the run directory
inline constexpr const char* kImagesMetadataKey = "kiln.images";  // model.safetensors metadata naming it

// The loading itself is the engine's (engine/data/image_source.h), shared with Kiln Studio.
using data::have_image_support;
using data::ImageConfig;
using data::ImageData;
using data::ImageRun;
using data::inspect_images;
using data::is_image_dataset;
using data::kImageFolderPrefix;
using data::kImageManifestPrefix;
using data::load_images;
using data::load_run_images;
using data::run_images_json;

// Adds --image-size, --channels, --augment, --rotation, --normalize, --workers and --cache-mb.
ArgParser& add_image_flags(ArgParser& p);
// The image flags' values for an image dataset (UsageError for a bad value, and for an image
// flag given with another dataset). test_fraction and seed come from the caller.
ImageConfig image_config(const Args& args, const std::string& dataset, double test_fraction, uint64_t seed);

}  // namespace kiln::cli
