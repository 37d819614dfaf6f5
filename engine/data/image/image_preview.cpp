// image_source.h's augmentation_preview (built with KILN_OPENCV).
#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/data/image/image_dataset.h"
#include "engine/data/image_source.h"

namespace kiln::data {

std::vector<Thumbnail> augmentation_preview(const Dataset& dataset, int64_t i, const std::string& augment,
                                            double rotation, int draws) {
  const auto* images = dynamic_cast<const ImageDataset*>(&dataset);
  if (!images) return {};
  KILN_CHECK(draws >= 0, ValueError, "augmentation_preview: draws must be >= 0, got ", draws);
  KILN_CHECK(rotation >= 0 && rotation <= 180, ValueError, "augmentation_preview: the rotation must be 0 to 180 degrees, got ",
             rotation);
  ImageTransform t = images->transform();
  t.augment = parse_augment(augment);
  t.rotation = rotation;
  const cv::Mat image = images->image(i);  // IndexError for i outside the dataset
  const int64_t position = images->positions()[static_cast<size_t>(i)];
  const int64_t c = t.channels, h = t.height, w = t.width, plane = h * w;
  std::vector<float> out(static_cast<size_t>(c * plane));
  std::vector<Thumbnail> result;
  for (int d = 0; d < draws; ++d) {
    std::mt19937_64 g = sample_generator(images->seed(), d, position);  // epoch d's draws, as the loader's
    t.apply(image, true, g, out.data());
    Thumbnail th;
    th.height = h, th.width = w, th.channels = static_cast<int>(c);
    th.pixels.resize(static_cast<size_t>(plane * c));
    for (int64_t k = 0; k < c; ++k) {
      const size_t m = t.mean.size() == 1 ? 0 : static_cast<size_t>(k);
      const double mu = t.mean.empty() ? 0.0 : t.mean[m], sd = t.stddev.empty() ? 1.0 : t.stddev[m];
      for (int64_t p = 0; p < plane; ++p) {
        const double v = std::clamp(out[static_cast<size_t>(k * plane + p)] * sd + mu, 0.0, 1.0);
        th.pixels[static_cast<size_t>(p * c + k)] = static_cast<uint8_t>(std::lround(v * 255.0));
      }
    }
    result.push_back(std::move(th));
  }
  return result;
}

}  // namespace kiln::data
