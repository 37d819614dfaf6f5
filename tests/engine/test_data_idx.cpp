// IDX reading (plain and gzip), MNIST-like loading and its errors, Fashion-MNIST.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/engine/test_util.h"
#include "tests/common/test_deps.h"
#include "engine/core/error.h"
#include "engine/data/dataloader.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/idx.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::data;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

uint32_t crc32(const Bytes& b) {
  uint32_t c = 0xffffffffu;
  for (uint8_t x : b) {
    c ^= x;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A gzip file (RFC 1952) of deflate "stored" blocks: written independently of zlib.
Bytes gzip(const Bytes& data) {
  Bytes out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(data.size() - pos, 65535);
    bool last = pos + n == data.size();
    out.push_back(last ? 1 : 0);
    out.push_back(uint8_t(n));
    out.push_back(uint8_t(n >> 8));
    out.push_back(uint8_t(~n));
    out.push_back(uint8_t(~n >> 8));
    out.insert(out.end(), data.begin() + long(pos), data.begin() + long(pos + n));
    pos += n;
  } while (pos < data.size());
  uint32_t crc = crc32(data), size = uint32_t(data.size());
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(crc >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(size >> (8 * i)));
  return out;
}

Bytes idx(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes iota_bytes(size_t n, uint8_t start = 0) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(start + i);
  return b;
}

template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no IoError)";
}

}  // namespace

TEST(IdxRead, PlainU8) {
  TempDir dir("kiln-idx");
  write_file(dir / "a.idx", idx(0x08, {2, 3, 4}, iota_bytes(24)));
  Tensor t = read_idx(dir / "a.idx");
  EXPECT_EQ(t.dtype(), DType::u8);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.to_vector<uint8_t>(), iota_bytes(24));
}

TEST(IdxRead, GzipMatchesPlain) {
  TempDir dir("kiln-idx");
  Bytes file = idx(0x08, {300, 400}, iota_bytes(120000, 7));  // several stored blocks
  write_file(dir / "a.idx.gz", gzip(file));
  Tensor t = read_idx(dir / "a.idx.gz");
  EXPECT_EQ(t.shape(), (Shape{300, 400}));
  EXPECT_EQ(t.to_vector<uint8_t>(), iota_bytes(120000, 7));
}

TEST(IdxRead, BigEndianTypes) {
  TempDir dir("kiln-idx");
  write_file(dir / "i16", gzip(idx(0x0B, {3}, {0xff, 0xfe, 0x01, 0x00, 0x80, 0x00})));
  EXPECT_EQ(read_idx(dir / "i16").dtype(), DType::i32);
  EXPECT_EQ(read_idx(dir / "i16").to_vector<int32_t>(), (std::vector<int32_t>{-2, 256, -32768}));
  write_file(dir / "i32", idx(0x0C, {2}, {0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xfd}));
  EXPECT_EQ(read_idx(dir / "i32").to_vector<int32_t>(), (std::vector<int32_t>{65536, -3}));
  write_file(dir / "i8", idx(0x09, {2}, {0xff, 0x05}));
  EXPECT_EQ(read_idx(dir / "i8").to_vector<int8_t>(), (std::vector<int8_t>{-1, 5}));
  write_file(dir / "f32", idx(0x0D, {1, 1}, {0x3f, 0xc0, 0x00, 0x00}));  // 1.5
  EXPECT_EQ(read_idx(dir / "f32").to_vector<float>(), (std::vector<float>{1.5f}));
  write_file(dir / "f64", idx(0x0E, {1}, {0xc0, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}));  // -pi
  EXPECT_EQ(read_idx(dir / "f64").to_vector<double>(), (std::vector<double>{-M_PI}));
}

TEST(IdxRead, MissingFileNamesPath) {
  TempDir dir("kiln-idx");
  std::string msg = error_of([&] { read_idx(dir / "nope.gz"); });
  EXPECT_NE(msg.find(dir / "nope.gz"), std::string::npos) << msg;
}

TEST(IdxRead, WrongMagic) {
  TempDir dir("kiln-idx");
  write_file(dir / "a", {0x01, 0x02, 0x08, 0x03, 0, 0, 0, 0});
  EXPECT_NE(error_of([&] { read_idx(dir / "a"); }).find("not an IDX file (magic 0x01020803)"), std::string::npos);
  write_file(dir / "b", idx(0x07, {1}, {0}));  // unknown type code
  EXPECT_NE(error_of([&] { read_idx(dir / "b"); }).find("magic 0x00000701"), std::string::npos);
  write_file(dir / "c", {0, 0, 8, 5});  // five dimensions
  EXPECT_NE(error_of([&] { read_idx(dir / "c"); }).find("not an IDX file"), std::string::npos);
}

TEST(IdxRead, TruncatedData) {
  TempDir dir("kiln-idx");
  Bytes file = idx(0x08, {2, 3, 4}, iota_bytes(20));  // 4 bytes short
  write_file(dir / "plain", file);
  std::string msg = error_of([&] { read_idx(dir / "plain"); });
  EXPECT_NE(msg.find("truncated (expected 24 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 20"), std::string::npos) << msg;
  // a gzip stream cut short
  Bytes gz = gzip(idx(0x08, {2, 3, 4}, iota_bytes(24)));
  gz.resize(gz.size() - 14);
  write_file(dir / "cut.gz", gz);
  msg = error_of([&] { read_idx(dir / "cut.gz"); });
  EXPECT_NE(msg.find("truncated (expected 24 bytes"), std::string::npos) << msg;
}

TEST(IdxRead, TrailingData) {
  TempDir dir("kiln-idx");
  write_file(dir / "a", idx(0x08, {2}, {1, 2, 3}));
  EXPECT_NE(error_of([&] { read_idx(dir / "a"); }).find("unexpected data after"), std::string::npos);
}

TEST(IdxRead, NonGzipGarbage) {
  TempDir dir("kiln-idx");
  std::string text = "this is certainly not an IDX file\n";
  write_file(dir / "garbage.gz", Bytes(text.begin(), text.end()));
  std::string msg = error_of([&] { read_idx(dir / "garbage.gz"); });
  EXPECT_NE(msg.find("garbage.gz: not an IDX file (magic 0x74686973)"), std::string::npos) << msg;
}

TEST(IdxRead, CorruptGzip) {
  TempDir dir("kiln-idx");
  Bytes gz = gzip(idx(0x08, {100}, iota_bytes(100)));
  gz[gz.size() - 8] ^= 0x55;  // CRC-32 no longer matches the data
  write_file(dir / "crc.gz", gz);
  std::string msg = error_of([&] { read_idx(dir / "crc.gz"); });
  EXPECT_NE(msg.find("corrupt gzip data"), std::string::npos) << msg;
  gz = gzip(idx(0x08, {100}, iota_bytes(100)));
  gz[10] = 0x07;  // deflate block type 3 (reserved)
  write_file(dir / "block.gz", gz);
  msg = error_of([&] { read_idx(dir / "block.gz"); });
  EXPECT_NE(msg.find("block.gz: corrupt gzip data"), std::string::npos) << msg;
}

namespace {
// Writes a small MNIST-like set of n images (28 x 28) and m labels into dir.
void write_mnist(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t m, uint8_t max_label = 9) {
  Bytes pixels(size_t(n) * 784);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i * 7 % 256);
  Bytes labels(m);
  for (uint32_t i = 0; i < m; ++i) labels[i] = uint8_t(i % (max_label + 1));
  write_file(dir / (prefix + "-images-idx3-ubyte.gz"), gzip(idx(0x08, {n, 28, 28}, pixels)));
  write_file(dir / (prefix + "-labels-idx1-ubyte"), idx(0x08, {m}, labels));  // a plain file also works
}
}  // namespace

TEST(IdxMnist, LoadsImagesAndLabels) {
  TempDir dir("kiln-idx");
  write_mnist(dir, "t10k", 12, 12);
  MnistData d = load_mnist_like(dir.path.string(), false);
  EXPECT_EQ(d.images.dtype(), DType::u8);
  EXPECT_EQ(d.images.shape(), (Shape{12, 28, 28}));
  EXPECT_EQ(d.labels.dtype(), DType::i64);
  EXPECT_EQ(d.labels.to_vector<int64_t>()[11], 1);
}

TEST(IdxMnist, LabelCountMismatch) {
  TempDir dir("kiln-idx");
  write_mnist(dir, "train", 5, 4);
  std::string msg = error_of([&] { load_mnist_like(dir.path.string(), true); });
  EXPECT_NE(msg.find("train-labels-idx1-ubyte has 4 labels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz has 5 images"), std::string::npos) << msg;
}

TEST(IdxMnist, LabelOutOfRange) {
  TempDir dir("kiln-idx");
  write_mnist(dir, "train", 12, 12, 11);
  std::string msg = error_of([&] { load_mnist_like(dir.path.string(), true); });
  EXPECT_NE(msg.find("label 10 of sample 10 is not in [0, 10)"), std::string::npos) << msg;
}

TEST(IdxMnist, MissingDirSaysInstallPackage) {
  std::string msg = error_of([] { load_mnist_like("/nonexistent/fashion-mnist", true); });
  EXPECT_NE(msg.find("Fashion-MNIST not found in /nonexistent/fashion-mnist: install the Debian package "
                     "dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"),
            std::string::npos)
      << msg;
  TempDir dir("kiln-idx");  // a directory without the files names the file
  msg = error_of([&] { load_mnist_like(dir.path.string(), true); });
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz: no such file"), std::string::npos) << msg;
}

TEST(IdxMnist, FashionMnistBatchIsNormalized) {
  TempDir dir("kiln-idx");
  write_mnist(dir, "train", 6, 6);
  FashionMNIST ds(true, dir.path.string());
  EXPECT_EQ(ds.size(), 6);
  Batch b = ds.get_batch({4, 1});
  EXPECT_EQ(b.input.shape(), (Shape{2, 1, 28, 28}));
  EXPECT_EQ(b.input.dtype(), DType::f32);
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{4, 1}));
  std::vector<float> x = b.input.to_vector<float>();
  for (size_t p : {size_t(0), size_t(100), size_t(783)}) {
    double raw = double((4 * 784 + p) * 7 % 256);
    EXPECT_NEAR(x[p], (raw / 255 - 0.2860) / 0.3530, 1e-5);
  }
  EXPECT_THROW(ds.get_batch({6}), IndexError);
  EXPECT_STREQ(FashionMNIST::kClassNames[9], "Ankle boot");
}

TEST(DataFashionMnist, RealDatasetLoadsAndIteratesFast) {
  KILN_SKIP_UNLESS_DEP(fs::exists(FashionMNIST::kDefaultDir), "dataset-fashion-mnist",
                       std::string("no Fashion-MNIST in ") + FashionMNIST::kDefaultDir);
  for (bool train : {true, false}) {
    FashionMNIST ds(train);
    int64_t n = train ? 60000 : 10000;
    ASSERT_EQ(ds.size(), n);
    EXPECT_EQ(ds.images().shape(), (Shape{n, 28, 28}));
    std::array<int64_t, 10> hist{};
    for (int64_t y : ds.labels().to_vector<int64_t>()) hist[size_t(y)]++;
    for (int64_t h : hist) EXPECT_EQ(h, n / 10);
  }
  auto ds = std::make_shared<FashionMNIST>(true);
  // The default Normalize constants are the training pixels' mean and std (scaled to [0, 1]).
  const uint8_t* px = ds->images().data_ptr<const uint8_t>();
  double sum = 0, sq = 0, count = double(ds->images().numel());
  for (int64_t i = 0; i < ds->images().numel(); ++i) sum += px[i], sq += double(px[i]) * px[i];
  double mean = sum / count / 255, sd = std::sqrt(sq / count / (255.0 * 255) - mean * mean);
  EXPECT_NEAR(mean, FashionMNIST::kMean, 5e-4);
  EXPECT_NEAR(sd, FashionMNIST::kStd, 5e-4);

  DataLoader loader(ds, {.batch_size = 128, .shuffle = true, .seed = 1});
  auto t0 = std::chrono::steady_clock::now();
  int64_t batches = 0, samples = 0;
  for (const Batch& b : loader) ++batches, samples += b.input.size(0);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(batches, 469);
  EXPECT_EQ(samples, 60000);
  std::printf("[ info     ] one epoch of Fashion-MNIST train, batch 128: %.3f s (%.0f images/s)\n", s, 60000 / s);
}

TEST(IdxMnist, ImagesOfAnotherSizeAreRejected) {
  TempDir dir("kiln-idx");
  write_file(dir / "train-images-idx3-ubyte", idx(0x08, {2, 28, 30}, Bytes(2 * 28 * 30, 0)));
  write_file(dir / "train-labels-idx1-ubyte", idx(0x08, {2}, Bytes(2, 0)));
  std::string msg = error_of([&] { load_mnist_like(dir.path.string(), true); });
  EXPECT_NE(msg.find("expected 28x28 images, got 28x30"), std::string::npos) << msg;
}

TEST(Idx, HeaderLargerThanTheFileCanHoldIsRejectedBeforeAllocating) {
  TempDir dir("kiln-idx");
  // 60000 x 1000 x 1000 bytes claimed by a tiny gzip file: no 60 GB allocation, a clear error.
  write_file(dir / "huge.gz", gzip(idx(0x08, {60000, 1000, 1000}, Bytes(100, 0))));
  std::string msg = error_of([&] { read_idx(dir / "huge.gz"); });
  EXPECT_NE(msg.find("huge.gz: the header's dimensions [60000, 1000, 1000] need"), std::string::npos) << msg;
}
