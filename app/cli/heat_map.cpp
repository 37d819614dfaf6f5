#include "app/cli/heat_map.h"

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/shape.h"

#ifdef KILN_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace kiln::cli {

void write_heat_overlay(const Tensor& image, const Tensor& map, const std::string& path) {
  KILN_CHECK(image.dim() == 3 && (image.size(0) == 1 || image.size(0) == 3) && map.dim() == 2 &&
                 map.size(0) == image.size(1) && map.size(1) == image.size(2),
             ShapeError, "heat map: an image [1 or 3, H, W] and a map [H, W] are needed, got ", shape_str(image.shape()),
             " and ", shape_str(map.shape()));
#ifdef KILN_HAVE_OPENCV
  const int c = static_cast<int>(image.size(0)), h = static_cast<int>(image.size(1)), w = static_cast<int>(image.size(2));
  const std::vector<float> px = image.to(Device()).to(DType::f32).to_vector<float>();
  const std::vector<float> m = map.to(Device()).to(DType::f32).to_vector<float>();
  const auto [lo, hi] = std::minmax_element(px.begin(), px.end());
  const float range = *hi > *lo ? *hi - *lo : 1.0f;
  const float top = std::max(*std::max_element(m.begin(), m.end()), 1e-30f);
  cv::Mat picture(h, w, CV_8UC3), heat(h, w, CV_8UC1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      cv::Vec3b& bgr = picture.at<cv::Vec3b>(y, x);
      for (int k = 0; k < 3; ++k) {
        const float v = px[static_cast<size_t>((c == 3 ? k : 0) * h * w + y * w + x)];
        bgr[2 - k] = cv::saturate_cast<uchar>(255.0f * (v - *lo) / range);
      }
      heat.at<uchar>(y, x) = cv::saturate_cast<uchar>(255.0f * std::max(m[static_cast<size_t>(y * w + x)], 0.0f) / top);
    }
  cv::Mat colour, out;
  cv::applyColorMap(heat, colour, cv::COLORMAP_JET);
  cv::addWeighted(picture, 0.5, colour, 0.5, 0.0, out);
  const int factor = std::max(1, (256 + std::max(h, w) - 1) / std::max(h, w));
  if (factor > 1) cv::resize(out, out, cv::Size(w * factor, h * factor), 0, 0, cv::INTER_NEAREST);
  bool ok = false;
  try {
    ok = cv::imwrite(path, out);
  } catch (const cv::Exception& e) {
    throw IoError(path + ": cannot write the heat map: " + e.what());
  }
  KILN_CHECK(ok, IoError, path, ": cannot write the heat map (a missing folder, or an extension OpenCV does not write)");
#else
  (void)path;
  throw ValueError("kiln explain writes its heat map with OpenCV; this build has none (KILN_OPENCV=OFF)");
#endif
}

}  // namespace kiln::cli
