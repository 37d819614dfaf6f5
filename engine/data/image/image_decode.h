// Decoding one image file with OpenCV's imgcodecs (JPEG, PNG, BMP, TIFF, WebP, PPM/PGM), and the
// conversions every image dataset applies after it: EXIF orientation, channel count, bit depth.
// Built only with KILN_OPENCV (cmake/KilnOptions.cmake).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

namespace kiln::data {

// Whether `path`'s extension (any case) is one torchvision's ImageFolder reads (IMG_EXTENSIONS:
// .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp), plus .jpe. Other files in a folder are skipped.
bool is_image_file_name(const std::string& path);

// Decodes the bytes of one image file. Returns an 8-bit (CV_8U) or 16-bit (CV_16U) image with 1 or
// 3 channels (grey, or B, G, R: OpenCV's order; an alpha channel is dropped, as PIL's
// convert("RGB") does; palette and CMYK images come as B, G, R), in the file's depth (16-bit PNG
// and TIFF stay 16-bit), with the EXIF orientation of a JPEG applied (cv::IMREAD_ANYCOLOR |
// IMREAD_ANYDEPTH).
// Throws IoError "SOURCE: REASON" for an empty file, one OpenCV does not recognize or cannot
// decode, a JPEG that ends before its end-of-image marker (libjpeg would fill the rest grey and
// warn only), and samples other than 8- or 16-bit unsigned integers (e.g. float TIFF).
cv::Mat decode_image(std::string_view bytes, const std::string& source);

// Reads and decodes `path` (decode_image's errors, and IoError when it cannot be read).
cv::Mat read_image(const std::string& path);

// What an image file holds, before any conversion or reduced decoding: its size after the EXIF
// orientation, its channels as decoded (1 grey or 3 colour) and its bit depth (8 or 16).
struct ImageInfo {
  int64_t height = 0, width = 0;
  int channels = 0, depth = 8;
};

// Reads and decodes `path` to `channels` channels in R, G, B order: read_image then to_channels,
// the same image, but JPEGs go straight through libjpeg-turbo (jpeg_decode.h: about twice as
// fast), decoded at 1/2, 1/4 or 1/8 scale when the shorter side stays >= min_short_side (0:
// full size; PIL's Image.draft). `info` (may be null) is set to what the file holds (the full
// size even when decoded smaller). Errors as read_image, ValueError for channels other than 1 or 3.
cv::Mat read_image(const std::string& path, int channels, int64_t min_short_side, ImageInfo* info = nullptr);

// The image with `channels` channels (1: grey, 3: RGB) in R, G, B order, the depth kept: grey
// to RGB repeats the value, color to grey is ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B, as
// PIL's convert("L")), an alpha channel is dropped (as PIL's convert("RGB")). ValueError for
// channels other than 1 or 3.
cv::Mat to_channels(const cv::Mat& image, int channels);

// The scale of a pixel value of `image`'s depth to [0, 1]: 1/255 for 8-bit, 1/65535 for 16-bit.
double unit_scale(const cv::Mat& image);

}  // namespace kiln::data
