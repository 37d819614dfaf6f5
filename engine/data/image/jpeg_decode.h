// JPEG decoding straight through libjpeg-turbo (libjpeg-dev), for the image datasets' hot path.
// OpenCV 4.6's imdecode (Debian 12) asks libjpeg for R, G, B, swaps every pixel to B, G, R in a
// byte loop, and Kiln then swaps it back with cvtColor: about half the decode time on 500 x 375
// photos (perf, tests/bench/data_vs_torchvision.sh). Here libjpeg writes R, G, B (or grey) into
// the result directly, and, like PIL's Image.draft, decodes at 1/2, 1/4 or 1/8 scale in the DCT
// domain when the image is that much larger than the size it will be shrunk to.
// Built only with KILN_OPENCV (cmake/KilnOptions.cmake).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "engine/data/image/image_decode.h"

namespace kiln::data {

// Decodes the JPEG `bytes` (from `source`, named in errors) to an 8-bit image with `channels`
// channels: 3 = R, G, B; 1 = grey (ITU-R 601 luma of the R, G, B, as to_channels). The EXIF
// orientation (APP1 tag 0x0112) is applied, as cv::imdecode does. With min_short_side > 0 the
// image is decoded at the smallest scale 1/8, 1/4, 1/2 or 1 (libjpeg's scale_denom) whose shorter
// side is still >= min_short_side (PIL's Image.draft); 0 decodes at full size.
// `info` (may be null) is set to the file's full size after the orientation, its channels (1 or 3)
// and depth 8, when a Mat is returned.
// Returns an empty Mat for JPEGs this path does not take (CMYK / YCCK, or not 8-bit samples) or
// that libjpeg cannot decode: the caller decodes those with OpenCV, whose errors name the file.
cv::Mat decode_jpeg(std::string_view bytes, const std::string& source, int channels, int64_t min_short_side,
                    ImageInfo* info = nullptr);

// The EXIF orientation (1 to 8) in the APP1 segment `app1` (starting "Exif\0\0"), or 1 when there
// is none or it is malformed. Source: the EXIF 2.32 specification, tag 0x0112 of IFD0.
int exif_orientation(std::string_view app1);

// `image` turned as EXIF orientation `orientation` (1 to 8) says (OpenCV's ApplyExifOrientation).
cv::Mat apply_exif_orientation(const cv::Mat& image, int orientation);

}  // namespace kiln::data
