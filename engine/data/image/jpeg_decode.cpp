#include "engine/data/image/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <opencv2/imgproc.hpp>

namespace kiln::data {

namespace {

// libjpeg reports a fatal error through error_exit, which must not return: it jumps back to the
// setjmp of the step that called libjpeg. The steps below hold no C++ object with a destructor,
// so nothing is skipped by the jump.
struct Job {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  std::jmp_buf jump;
};

void on_error(j_common_ptr c) { std::longjmp(reinterpret_cast<Job*>(c->client_data)->jump, 1); }
void on_message(j_common_ptr) {}  // warnings (e.g. extraneous bytes) stay quiet, as errors are refused

bool create(Job& j) {
  if (setjmp(j.jump)) return false;
  jpeg_create_decompress(&j.cinfo);
  return true;
}

bool read_header(Job& j, const std::string_view bytes) {
  if (setjmp(j.jump)) return false;
  jpeg_mem_src(&j.cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&j.cinfo, JPEG_APP0 + 1, 0xFFFF);
  return jpeg_read_header(&j.cinfo, TRUE) == JPEG_HEADER_OK;
}

bool start(Job& j) {
  if (setjmp(j.jump)) return false;
  return jpeg_start_decompress(&j.cinfo) == TRUE;
}

bool read_rows(Job& j, unsigned char* data, size_t step) {
  if (setjmp(j.jump)) return false;
  while (j.cinfo.output_scanline < j.cinfo.output_height) {
    JSAMPROW row = data + step * j.cinfo.output_scanline;
    if (jpeg_read_scanlines(&j.cinfo, &row, 1) != 1) return false;
  }
  return jpeg_finish_decompress(&j.cinfo) == TRUE;
}

struct Destroy {
  Job& j;
  ~Destroy() { jpeg_destroy_decompress(&j.cinfo); }
};

uint32_t read_u(std::string_view b, size_t at, int bytes, bool little) {
  uint32_t v = 0;
  for (int k = 0; k < bytes; ++k) {
    const uint32_t byte = static_cast<uint8_t>(b[at + static_cast<size_t>(little ? bytes - 1 - k : k)]);
    v = (v << 8) | byte;
  }
  return v;
}

}  // namespace

int exif_orientation(std::string_view app1) {
  if (app1.size() < 6 + 8 || app1.substr(0, 6) != std::string_view("Exif\0\0", 6)) return 1;
  const std::string_view tiff = app1.substr(6);
  const bool little = tiff.substr(0, 2) == "II";
  if (!little && tiff.substr(0, 2) != "MM") return 1;
  if (read_u(tiff, 2, 2, little) != 42) return 1;
  const size_t ifd = read_u(tiff, 4, 4, little);
  if (ifd + 2 > tiff.size()) return 1;
  const size_t entries = read_u(tiff, ifd, 2, little);
  for (size_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + 12 * i;
    if (e + 12 > tiff.size()) break;
    if (read_u(tiff, e, 2, little) != 0x0112) continue;
    if (read_u(tiff, e + 2, 2, little) != 3) return 1;  // type SHORT
    const uint32_t v = read_u(tiff, e + 8, 2, little);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

cv::Mat apply_exif_orientation(const cv::Mat& image, int orientation) {
  cv::Mat out, t;
  switch (orientation) {
    case 2: cv::flip(image, out, 1); return out;
    case 3: cv::flip(image, out, -1); return out;
    case 4: cv::flip(image, out, 0); return out;
    case 5: cv::transpose(image, out); return out;
    case 6: cv::transpose(image, t); cv::flip(t, out, 1); return out;
    case 7: cv::transpose(image, t); cv::flip(t, out, -1); return out;
    case 8: cv::transpose(image, t); cv::flip(t, out, 0); return out;
    default: return image;
  }
}

cv::Mat decode_jpeg(std::string_view bytes, const std::string& /*source*/, int channels, int64_t min_short_side,
                    ImageInfo* info) {
  Job j{};
  j.cinfo.err = jpeg_std_error(&j.err);
  j.err.error_exit = on_error;
  j.err.output_message = on_message;
  j.cinfo.client_data = &j;
  if (!create(j)) return {};
  Destroy destroy{j};
  // Anything libjpeg refuses goes to OpenCV, whose errors name the file as before.
  if (!read_header(j, bytes)) return {};
  const J_COLOR_SPACE space = j.cinfo.jpeg_color_space;
  if (j.cinfo.data_precision != 8 || (space != JCS_GRAYSCALE && space != JCS_YCbCr && space != JCS_RGB)) return {};
  const bool grey = space == JCS_GRAYSCALE;
  j.cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
  const int64_t shorter = std::min(j.cinfo.image_width, j.cinfo.image_height);
  unsigned denom = 1;
  while (denom < 8 && min_short_side > 0 && (shorter + 2 * denom - 1) / (2 * denom) >= min_short_side) denom *= 2;
  j.cinfo.scale_num = 1;
  j.cinfo.scale_denom = denom;
  int orientation = 1;
  for (jpeg_saved_marker_ptr m = j.cinfo.marker_list; m; m = m->next)
    if (m->marker == JPEG_APP0 + 1 && orientation == 1)
      orientation = exif_orientation(std::string_view(reinterpret_cast<const char*>(m->data), m->data_length));
  if (!start(j)) return {};
  cv::Mat image(static_cast<int>(j.cinfo.output_height), static_cast<int>(j.cinfo.output_width),
                CV_8UC(j.cinfo.output_components));
  if (!read_rows(j, image.data, image.step)) return {};
  if (channels == 1 && !grey) cv::cvtColor(image, image, cv::COLOR_RGB2GRAY);
  if (channels == 3 && grey) cv::cvtColor(image, image, cv::COLOR_GRAY2RGB);
  if (info) {
    const bool turned = orientation >= 5;  // transposed (EXIF orientations 5 to 8)
    const int64_t h = j.cinfo.image_height, w = j.cinfo.image_width;
    *info = {turned ? w : h, turned ? h : w, grey ? 1 : 3, 8};
  }
  return apply_exif_orientation(image, orientation);
}

}  // namespace kiln::data
