// libFuzzer target for the image loader (not built by CMake or run by CI; see run_image.sh): the
// bytes are one image file. decode_image (OpenCV's decoders behind Kiln's checks), then the
// conversion to 1 and 3 channels, the cache's downscale and the training transforms with every
// augmentation on a small target. A kiln::Error is the expected answer to bad input; anything
// else escaping, a crash, an ASan report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/image/image_cache.h"
#include "engine/data/image/image_decode.h"
#include "engine/data/image/image_transforms.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::data;
  try {
    const cv::Mat image = decode_image(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    if (static_cast<int64_t>(image.total()) > (int64_t{1} << 22)) return 0;  // keep each run fast
    for (int channels : {1, 3}) {
      const cv::Mat m = shrink_to_short_side(to_channels(image, channels), cache_short_side(7, 9));
      ImageTransform t;
      t.height = 7, t.width = 9, t.channels = channels, t.augment = Augment::standard, t.rotation = 30;
      t.mean = {0.5}, t.stddev = {0.25};
      std::vector<float> out(static_cast<size_t>(channels * 7 * 9));
      std::mt19937_64 g = sample_generator(1, 2, static_cast<int64_t>(size));
      t.apply(m, true, g, out.data());
      t.apply(m, false, g, out.data());
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
