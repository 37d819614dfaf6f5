#include "engine/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine/core/error.h"

namespace kiln::data {

namespace fs = std::filesystem;
static_assert(std::endian::native == std::endian::little, "the IDX reader assumes a little-endian host");

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

// A gzip (or plain) file read in full-size chunks; errors name the path.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    KILN_CHECK(fs::exists(path), IoError, path, ": no such file");
    KILN_CHECK(!fs::is_directory(path), IoError, path, ": is a directory, not an IDX file");
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    KILN_CHECK(file_ != nullptr, IoError, path, ": cannot open (", errno ? std::strerror(errno) : "out of memory", ")");
    gzbuffer(file_.get(), 1 << 18);
  }

  // Reads up to n bytes; returns how many were read (fewer only at the end of the data).
  // Throws IoError when the gzip stream is corrupt.
  size_t read(void* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, size_t{1} << 30));
      int got = gzread(file_.get(), static_cast<char*>(dst) + done, chunk);
      if (got < 0) fail();
      done += static_cast<size_t>(got);
      if (static_cast<unsigned>(got) < chunk) break;
    }
    int err = Z_OK;
    gzerror(file_.get(), &err);
    if (err != Z_OK && err != Z_BUF_ERROR) fail();  // Z_BUF_ERROR: stream ends early (a short read)
    return done;
  }

 private:
  [[noreturn]] void fail() {
    int err = Z_OK;
    const char* msg = gzerror(file_.get(), &err);
    throw IoError(detail::str_cat(path_, ": corrupt gzip data (", msg ? msg : "unknown zlib error", ")"));
  }
  std::string path_;
  GzPtr file_;
};

struct IdxType {
  DType out;      // dtype of the tensor returned
  size_t stored;  // bytes per element in the file
};

bool idx_type(uint8_t code, IdxType& t) {
  switch (code) {
    case 0x08: t = {DType::u8, 1}; return true;
    case 0x09: t = {DType::i8, 1}; return true;
    case 0x0B: t = {DType::i32, 2}; return true;
    case 0x0C: t = {DType::i32, 4}; return true;
    case 0x0D: t = {DType::f32, 4}; return true;
    case 0x0E: t = {DType::f64, 8}; return true;
    default: return false;
  }
}

void byteswap_inplace(void* data, size_t count, size_t width) {
  if (width == 2) {
    auto* p = static_cast<uint16_t*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = __builtin_bswap16(p[i]);
  } else if (width == 4) {
    auto* p = static_cast<uint32_t*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = __builtin_bswap32(p[i]);
  } else if (width == 8) {
    auto* p = static_cast<uint64_t*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = __builtin_bswap64(p[i]);
  }
}

std::string hex_magic(const uint8_t m[4]) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 0; i < 4; ++i) {
    s += digits[m[i] >> 4];
    s += digits[m[i] & 15];
  }
  return s;
}

}  // namespace

Tensor read_idx(const std::string& path) {
  GzReader in(path);
  uint8_t magic[4] = {0, 0, 0, 0};
  size_t got = in.read(magic, 4);
  KILN_CHECK(got == 4, IoError, path, ": not an IDX file (only ", got, " bytes)");
  IdxType type{};
  KILN_CHECK(magic[0] == 0 && magic[1] == 0 && idx_type(magic[2], type) && magic[3] >= 1 && magic[3] <= 4, IoError,
             path, ": not an IDX file (magic ", hex_magic(magic), ")");

  int ndim = magic[3];
  uint8_t dims_be[16];
  got = in.read(dims_be, static_cast<size_t>(ndim) * 4);
  KILN_CHECK(got == static_cast<size_t>(ndim) * 4, IoError, path, ": truncated header (expected ", ndim * 4,
             " bytes of dimensions, got ", got, ")");
  Shape shape;
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    uint32_t v;
    std::memcpy(&v, dims_be + 4 * d, 4);
    v = __builtin_bswap32(v);
    shape.push_back(v);
    KILN_CHECK(!__builtin_mul_overflow(count, uint64_t{v}, &count) && count <= (uint64_t{1} << 40), IoError, path,
               ": dimensions ", shape_str(shape), " are too large");
  }

  size_t expected = static_cast<size_t>(count) * type.stored;
  // Deflate expands at most 1032:1 (RFC 1951's longest match per bit), so a header asking
  // for more than that is corrupt: say so before allocating for it.
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  KILN_CHECK(ec || expected <= file_bytes * 1032 + 1024, IoError, path, ": the header's dimensions ",
             shape_str(shape), " need ", expected, " bytes of data, more than a ", file_bytes,
             "-byte file can hold (corrupt header?)");
  Tensor out = Tensor::empty(shape, type.out);
  std::vector<uint8_t> staging;  // for i16, which is widened to i32
  void* dst = out.impl()->storage->data();
  if (type.stored != dtype_size(type.out)) {
    staging.resize(expected);
    dst = staging.data();
  }
  got = in.read(dst, expected);
  KILN_CHECK(got == expected, IoError, path, ": truncated (expected ", expected, " bytes of data after the header, got ",
             got, ")");
  uint8_t extra[1];
  KILN_CHECK(in.read(extra, 1) == 0, IoError, path, ": unexpected data after the ", expected,
             " bytes that the header ", shape_str(shape), " describes");

  byteswap_inplace(dst, static_cast<size_t>(count), type.stored);
  if (!staging.empty()) {
    const auto* src = reinterpret_cast<const int16_t*>(staging.data());
    int32_t* o = out.data_ptr<int32_t>();
    for (size_t i = 0; i < count; ++i) o[i] = src[i];
  }
  return out;
}

namespace {
std::string find_file(const fs::path& dir, const std::string& stem) {
  fs::path gz = dir / (stem + ".gz");
  if (fs::exists(gz)) return gz.string();
  fs::path plain = dir / stem;
  if (fs::exists(plain)) return plain.string();
  throw IoError(detail::str_cat(gz.string(), ": no such file (nor ", plain.string(), ")"));
}
}  // namespace

MnistData load_mnist_like(const std::string& dir, bool train) {
  KILN_CHECK(fs::is_directory(dir), IoError, "Fashion-MNIST not found in ", dir,
             ": install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)");
  std::string prefix = train ? "train" : "t10k";
  std::string image_path = find_file(dir, prefix + "-images-idx3-ubyte");
  std::string label_path = find_file(dir, prefix + "-labels-idx1-ubyte");

  Tensor images = read_idx(image_path);
  KILN_CHECK(images.dtype() == DType::u8 && images.dim() == 3, IoError, image_path,
             ": expected u8 images [N, H, W], got ", dtype_name(images.dtype()), " ", shape_str(images.shape()));
  Tensor labels = read_idx(label_path);
  KILN_CHECK(labels.dtype() == DType::u8 && labels.dim() == 1, IoError, label_path, ": expected u8 labels [N], got ",
             dtype_name(labels.dtype()), " ", shape_str(labels.shape()));
  KILN_CHECK(images.size(1) == 28 && images.size(2) == 28, IoError, image_path, ": expected 28x28 images, got ",
             images.size(1), "x", images.size(2));
  KILN_CHECK(labels.size(0) == images.size(0), IoError, label_path, " has ", labels.size(0), " labels but ",
             image_path, " has ", images.size(0), " images");

  const uint8_t* l = labels.data_ptr<uint8_t>();
  Tensor labels64 = Tensor::empty({labels.size(0)}, DType::i64);
  int64_t* o = labels64.data_ptr<int64_t>();
  for (int64_t i = 0; i < labels.size(0); ++i) {
    KILN_CHECK(l[i] < 10, IoError, label_path, ": label ", int{l[i]}, " of sample ", i, " is not in [0, 10)");
    o[i] = l[i];
  }
  return {images, labels64};
}

}  // namespace kiln::data
