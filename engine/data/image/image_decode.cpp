#include "engine/data/image/image_decode.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "engine/core/error.h"
#include "engine/data/image/jpeg_decode.h"
#include "engine/data/image_source.h"  // image_files_read

namespace kiln::data {

namespace {

std::atomic<int64_t> g_files_read{0};

bool is_jpeg(std::string_view b) {
  return b.size() >= 3 && static_cast<uint8_t>(b[0]) == 0xFF && static_cast<uint8_t>(b[1]) == 0xD8 &&
         static_cast<uint8_t>(b[2]) == 0xFF;
}

// A complete JPEG ends with the EOI marker FF D9; writers may pad after it with zeros or a
// few bytes of junk, so the marker is looked for in the last 1 KiB.
bool jpeg_has_end(std::string_view b) {
  const size_t from = b.size() > 1024 ? b.size() - 1024 : 0;
  for (size_t i = b.size(); i-- > from + 1;)
    if (static_cast<uint8_t>(b[i - 1]) == 0xFF && static_cast<uint8_t>(b[i]) == 0xD9) return true;
  return false;
}

// The formats Kiln reads, by their signature. OpenCV recognizes more (HDR, EXR, PFM, Sun raster,
// JPEG 2000, GDAL ...), and decodes some of those through a temporary file; those are refused.
const char* known_format(std::string_view b) {
  auto starts = [&](std::string_view sig, size_t at = 0) { return b.size() >= at + sig.size() && b.substr(at, sig.size()) == sig; };
  if (is_jpeg(b)) return "JPEG";
  if (starts("\x89PNG\r\n\x1a\n")) return "PNG";
  if (starts("BM")) return "BMP";
  if (starts(std::string_view("II*\0", 4)) || starts(std::string_view("MM\0*", 4))) return "TIFF";
  if (starts("RIFF") && starts("WEBP", 8)) return "WebP";
  if (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') return "PPM/PGM";
  return nullptr;
}

void check_bytes(std::string_view bytes, const std::string& source) {
  KILN_CHECK(!bytes.empty(), IoError, source, ": empty file (0 bytes)");
  KILN_CHECK(bytes.size() <= static_cast<size_t>(INT32_MAX), IoError, source, ": larger than 2 GiB");
  KILN_CHECK(known_format(bytes), IoError, source, ": not a JPEG, PNG, BMP, TIFF, WebP or PPM/PGM file (",
             bytes.size(), " bytes)");
  if (is_jpeg(bytes))
    KILN_CHECK(jpeg_has_end(bytes), IoError, source, ": truncated JPEG (", bytes.size(),
               " bytes, no end-of-image marker); the file is cut short");
}

std::string read_file(const std::string& path) {
  ++g_files_read;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  KILN_CHECK(in, IoError, path, ": cannot read the file");
  const std::streamoff size = in.tellg();
  KILN_CHECK(size >= 0, IoError, path, ": cannot read the file (not a regular file?)");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  KILN_CHECK(in.gcount() == size, IoError, path, ": read error (", in.gcount(), " of ", size, " bytes)");
  return bytes;
}

}  // namespace

int64_t image_files_read() { return g_files_read.load(); }

bool is_image_file_name(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* const known[] = {".jpg", ".jpeg", ".jpe", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
  return std::find(std::begin(known), std::end(known), ext) != std::end(known);
}

cv::Mat decode_image(std::string_view bytes, const std::string& source) {
  check_bytes(bytes, source);
  const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data()));
  cv::Mat image;
  try {
    image = cv::imdecode(buffer, cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH);
  } catch (const cv::Exception& e) {
    throw IoError(source + ": cannot decode the image (OpenCV: " + e.err + ")");
  }
  KILN_CHECK(!image.empty(), IoError, source, ": not an image OpenCV can decode, or a corrupt one (",
             bytes.size(), " bytes)");
  KILN_CHECK(image.depth() == CV_8U || image.depth() == CV_16U, IoError, source,
             ": samples of OpenCV depth ", image.depth(), " (only 8- and 16-bit unsigned images are read)");
  KILN_CHECK(image.channels() == 1 || image.channels() == 3 || image.channels() == 4, IoError, source, ": ",
             image.channels(), " channels (1, 3 or 4 are read)");
  return image;
}

cv::Mat read_image(const std::string& path) { return decode_image(read_file(path), path); }

cv::Mat read_image(const std::string& path, int channels, int64_t min_short_side, ImageInfo* info) {
  KILN_CHECK(channels == 1 || channels == 3, ValueError, "images are read with 1 or 3 channels, not ", channels);
  const std::string bytes = read_file(path);
  if (is_jpeg(bytes)) {
    check_bytes(bytes, path);
    cv::Mat m = decode_jpeg(bytes, path, channels, min_short_side, info);
    if (!m.empty()) return m;
  }
  cv::Mat m = decode_image(bytes, path);
  if (info) *info = {m.rows, m.cols, m.channels(), m.depth() == CV_16U ? 16 : 8};
  return to_channels(m, channels);
}

cv::Mat to_channels(const cv::Mat& image, int channels) {
  KILN_CHECK(channels == 1 || channels == 3, ValueError, "images are read with 1 or 3 channels, not ", channels);
  cv::Mat out;
  const int have = image.channels();
  if (channels == 1) {
    if (have == 1) return image;
    cv::cvtColor(image, out, have == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
  } else {
    cv::cvtColor(image, out, have == 1 ? cv::COLOR_GRAY2RGB : have == 4 ? cv::COLOR_BGRA2RGB : cv::COLOR_BGR2RGB);
  }
  return out;
}

double unit_scale(const cv::Mat& image) { return image.depth() == CV_16U ? 1.0 / 65535.0 : 1.0 / 255.0; }

}  // namespace kiln::data
