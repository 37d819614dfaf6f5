// Crafted image files for the image loader's tests (tests/engine/test_data_image.cpp and
// tests/cli/test_images.sh through image_fixtures.cpp), written with OpenCV's encoders. Needs
// KILN_OPENCV. Palette PNGs and CMYK JPEGs, which OpenCV does not write, come from PIL in
// test_images.sh.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

namespace kiln::testdata {

inline void write_bytes(const std::filesystem::path& p, const std::vector<uchar>& bytes, size_t n = SIZE_MAX) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  if (bytes.empty()) return;
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(std::min(n, bytes.size())));
}

inline std::vector<uchar> encode(const std::string& ext, const cv::Mat& m) {
  std::vector<uchar> b;
  cv::imencode(ext, m, b);
  return b;
}

// A BGR test card of h x w: a left-to-right gradient in blue, top-to-bottom in green, and a red
// square in the top-left corner, so that flips and rotations are visible.
inline cv::Mat test_card(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      m.at<cv::Vec3b>(y, x) = {static_cast<uchar>(255 * x / std::max(1, w - 1)),
                               static_cast<uchar>(255 * y / std::max(1, h - 1)),
                               static_cast<uchar>(x < w / 4 && y < h / 4 ? 255 : 0)};
  return m;
}

// `jpeg` (from cv::imencode) with an APP1 Exif segment holding Orientation = `orientation`
// inserted after the SOI marker (big-endian TIFF, one IFD entry: tag 0x0112, SHORT, count 1).
inline std::vector<uchar> with_exif_orientation(const std::vector<uchar>& jpeg, int orientation) {
  const std::vector<uchar> app1 = {0xFF, 0xE1, 0x00, 34, 'E', 'x', 'i', 'f', 0, 0,
                                   'M', 'M', 0x00, 0x2A, 0, 0, 0, 8,  // TIFF header, IFD at 8
                                   0, 1,                              // one entry
                                   0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, static_cast<uchar>(orientation), 0, 0,
                                   0, 0, 0, 0};                       // no next IFD
  std::vector<uchar> out(jpeg.size() + app1.size());
  std::copy(jpeg.begin(), jpeg.begin() + 2, out.begin());  // SOI
  std::copy(app1.begin(), app1.end(), out.begin() + 2);
  std::copy(jpeg.begin() + 2, jpeg.end(), out.begin() + 2 + static_cast<std::ptrdiff_t>(app1.size()));
  return out;
}

// DIR/crafted/: classes "a", "b" and "c ü" (a space and a non-ASCII letter) with good files of
// every kind and the bad ones the loader must list, not crash on:
//   a/rgb.png a/grey.png a/rgba.png a/sixteen.png (16-bit grey, values up to 65535) a/card.bmp
//   b/exif6.jpg (stored 20 wide x 10 high, Orientation 6: decoded 10 wide x 20 high)
//   b/deep.tif (16-bit RGB) b/card.webp b/truncated.jpg (half of a JPEG) b/zero.jpg (0 bytes)
//   b/garbage.png (not a PNG) b/notes.txt (not an image name) b/.hidden.png (hidden)
//   c ü/ü 1.png c ü/sub/deeper.jpg (recursive)
// DIR/empty_class/{a: two images, b: none}; DIR/one_class/a; DIR/manifest.csv naming
// crafted/a/rgb.png, "crafted/c ü/ü 1.png", crafted/b/exif6.jpg and a missing file.
inline void write_crafted_cases(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path c = dir / "crafted";
  const cv::Mat card = test_card(12, 16);
  write_bytes(c / "a/rgb.png", encode(".png", card));
  cv::Mat grey;
  cv::extractChannel(card, grey, 1);
  write_bytes(c / "a/grey.png", encode(".png", grey));
  cv::Mat rgba(card.rows, card.cols, CV_8UC4, cv::Scalar(10, 20, 30, 128));
  write_bytes(c / "a/rgba.png", encode(".png", rgba));
  cv::Mat sixteen(12, 16, CV_16UC1);
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 16; ++x) sixteen.at<uint16_t>(y, x) = static_cast<uint16_t>(65535 - 4000 * x - y);
  write_bytes(c / "a/sixteen.png", encode(".png", sixteen));
  write_bytes(c / "a/card.bmp", encode(".bmp", card));
  write_bytes(c / "b/exif6.jpg", with_exif_orientation(encode(".jpg", test_card(10, 20)), 6));
  cv::Mat deep;
  card.convertTo(deep, CV_16UC3, 257.0);
  write_bytes(c / "b/deep.tif", encode(".tif", deep));
  write_bytes(c / "b/card.webp", encode(".webp", card));
  const std::vector<uchar> jpeg = encode(".jpg", test_card(64, 64));
  write_bytes(c / "b/truncated.jpg", jpeg, jpeg.size() / 2);
  std::ofstream(c / "b/zero.jpg", std::ios::binary).flush();  // 0 bytes
  write_bytes(c / "b/garbage.png", {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 1, 2, 3, 4, 5, 6, 7, 8});
  write_bytes(c / "b/notes.txt", {'h', 'i', '\n'});
  write_bytes(c / "b/.hidden.png", encode(".png", card));
  write_bytes(c / "c \xC3\xBC/\xC3\xBC 1.png", encode(".png", card));
  write_bytes(c / "c \xC3\xBC/sub/deeper.jpg", encode(".jpg", card));

  write_bytes(dir / "empty_class/a/1.png", encode(".png", card));
  write_bytes(dir / "empty_class/a/2.png", encode(".png", card));
  fs::create_directories(dir / "empty_class/b");
  write_bytes(dir / "one_class/a/1.png", encode(".png", card));
  write_bytes(dir / "one_class/a/2.png", encode(".png", card));
  std::ofstream m(dir / "manifest.csv");
  m << "path,label\ncrafted/a/rgb.png,cat\n\"crafted/c \xC3\xBC/\xC3\xBC 1.png\",dog\ncrafted/b/exif6.jpg,dog\n"
       "crafted/missing.png,cat\n";
}

}  // namespace kiln::testdata
