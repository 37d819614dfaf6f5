#include "engine/data/image_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"

namespace kiln::data {

namespace fs = std::filesystem;

bool is_image_dataset(const std::string& spec) {
  return spec.rfind(kImageFolderPrefix, 0) == 0 || spec.rfind(kImageManifestPrefix, 0) == 0;
}

bool have_image_support() {
#ifdef KILN_HAVE_OPENCV
  return true;
#else
  return false;
#endif
}

ImageConfig image_config_from_spec(const std::string& spec) {
  KILN_CHECK(is_image_dataset(spec), ValueError, "'", spec, "' is not an image dataset (imagefolder:DIR or images:FILE.csv)");
  ImageConfig c;
  const bool folder = spec.rfind(kImageFolderPrefix, 0) == 0;
  c.kind = folder ? "imagefolder" : "images";
  c.path = spec.substr(std::string(folder ? kImageFolderPrefix : kImageManifestPrefix).size());
  KILN_CHECK(!c.path.empty(), ValueError, folder ? "imagefolder:DIR needs a folder" : "images:FILE.csv needs a file");
  return c;
}

std::string run_images_json(const ImageRun& r) {
  const ImageConfig& c = r.config;
  nlohmann::ordered_json source = {
      {"kind", c.kind},
      {"path", c.path.empty() ? std::string() : fs::absolute(c.path).lexically_normal().string()},  // "": Fashion-MNIST
      {"test_fraction", c.test_fraction},
      {"seed", c.seed},
      {"augment", c.augment},
      {"rotation", c.rotation},
      {"normalize", c.normalize},
  };
  nlohmann::ordered_json j = {{"source", source},   {"channels", r.channels}, {"height", r.height},
                              {"width", r.width},   {"mean", r.mean},         {"std", r.stddev},
                              {"classes", r.classes}, {"fingerprint", r.fingerprint}};
  return j.dump(2) + "\n";
}

ImageRun load_run_images(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, path, ": cannot read the run's image dataset description");
  std::stringstream text;
  text << in.rdbuf();
  return parse_run_images(text.str(), path);
}

ImageRun parse_run_images(const std::string& text, const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& s = j.at("source");
    ImageRun r;
    r.config.kind = s.at("kind").get<std::string>();
    r.config.path = s.at("path").get<std::string>();
    r.config.test_fraction = s.at("test_fraction").get<double>();
    r.config.seed = s.at("seed").get<uint64_t>();
    r.config.augment = s.at("augment").get<std::string>();
    r.config.rotation = s.at("rotation").get<double>();
    r.config.normalize = s.at("normalize").get<std::string>();
    r.channels = j.at("channels").get<int>();
    r.height = j.at("height").get<int64_t>();
    r.width = j.at("width").get<int64_t>();
    r.mean = j.at("mean").get<std::vector<double>>();
    r.stddev = j.at("std").get<std::vector<double>>();
    r.classes = j.at("classes").get<std::vector<std::string>>();
    r.fingerprint = j.at("fingerprint").get<std::string>();
    KILN_CHECK((r.channels == 1 || r.channels == 3) && r.height > 0 && r.width > 0 && r.mean.size() == r.stddev.size(),
               IoError, path, ": inconsistent image dataset description");
    r.config.channels = r.channels;
    r.config.height = r.height, r.config.width = r.width;
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw IoError(path + ": malformed image dataset description (" + e.what() + ")");
  }
}

#ifndef KILN_HAVE_OPENCV

namespace {
[[noreturn]] void no_opencv(const ImageConfig& c) {
  throw ValueError(c.kind + ":" + c.path + ": this build of Kiln reads no images: it was configured without OpenCV "
                   "(KILN_OPENCV=OFF, or libopencv-imgcodecs-dev and libopencv-imgproc-dev missing; "
                   "installer/quickstart.sh installs them)");
}
}  // namespace

ImageData load_images(const ImageConfig& config, const ImageRun*, IndexStore*, bool) { no_opencv(config); }
std::string inspect_images(const ImageConfig& config) { no_opencv(config); }
Thumbnail image_thumbnail(const Dataset&, int64_t, int64_t) { return {}; }
std::string image_sample_path(const Dataset&, int64_t) { return {}; }
std::vector<Thumbnail> augmentation_preview(const Dataset&, int64_t, const std::string&, double, int) { return {}; }
std::vector<int64_t> image_labels(const Dataset&) { return {}; }
std::vector<std::string> changed_image_files(const std::vector<const Dataset*>&) { return {}; }
int64_t image_files_read() { return 0; }

#endif

}  // namespace kiln::data
