// .npy reading and writing (engine/onnx/npy.h): round trips, Fortran order, bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/onnx/npy.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("kiln_npy_" + std::to_string(::getpid()) + "_" + name);
}

void write_npy(const fs::path& p, const std::string& header_dict, const std::string& data) {
  std::string header = header_dict;
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream out(p, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  char le[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(le, 2);
  out << header << data;
}

// A version 2.0 or 3.0 file (numpy.lib.format, NEP 1): a 4-byte little-endian header length
// after the version, the header padded so that the data starts at a multiple of 64. `claimed`
// overrides the stored header length (for truncated files).
void write_npy_v(const fs::path& p, int major, const std::string& header_dict, const std::string& data,
                 int64_t claimed = -1) {
  std::string header = header_dict;
  header += std::string((64 - (12 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream out(p, std::ios::binary);
  out.write("\x93NUMPY", 6);
  out.put(static_cast<char>(major)).put('\0');
  uint32_t n = claimed >= 0 ? static_cast<uint32_t>(claimed) : static_cast<uint32_t>(header.size());
  for (int i = 0; i < 4; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
}

}  // namespace

TEST(Npy, ReadsVersions2And3) {
  fs::path p = temp_file("v2.npy");
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  std::string data(reinterpret_cast<const char*>(v.data()), 24);
  for (int major : {2, 3}) {
    write_npy_v(p, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data);
    EXPECT_EQ(fs::file_size(p) % 64, 24u) << "the data starts at a multiple of 64";
    Tensor t = kiln::onnx::load_npy(p.string());
    EXPECT_EQ(t.shape(), (Shape{2, 3})) << "version " << major;
    EXPECT_EQ(t.to_vector<float>(), v) << "version " << major;
  }
  // A header length past the end of the file: an error that says so, with the sizes.
  write_npy_v(p, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 1 << 20);
  try {
    kiln::onnx::load_npy(p.string());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated .npy header: version 2.0 header of 1048576 bytes"),
              std::string::npos) << e.what();
  }
  { std::ofstream(p, std::ios::binary).write("\x93NUMPY\x02\x00\x10", 9); }  // cut inside the length
  EXPECT_THROW(kiln::onnx::load_npy(p.string()), IoError);
  fs::remove(p);
}

TEST(Npy, RoundTripsEveryDtype) {
  fs::path p = temp_file("rt.npy");
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::i64, DType::i32, DType::i8, DType::u8, DType::bool_}) {
    Tensor t = Tensor::from_vector(std::vector<double>{1, 0, 3, 4, 0, 6}, {3, 2}).to(dt);
    kiln::onnx::save_npy(t, p.string());
    Tensor back = kiln::onnx::load_npy(p.string());
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.shape(), (Shape{3, 2}));
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>());
  }
  kiln::onnx::save_npy(Tensor::scalar(2.5, DType::f64), p.string());  // 0-d: shape ()
  EXPECT_EQ(kiln::onnx::load_npy(p.string()).dim(), 0);
  fs::remove(p);
}

TEST(Npy, ReadsFortranOrder) {
  fs::path p = temp_file("f.npy");
  std::vector<float> col_major{1, 4, 2, 5, 3, 6};  // [[1, 2, 3], [4, 5, 6]] column by column
  write_npy(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            std::string(reinterpret_cast<const char*>(col_major.data()), 24));
  Tensor t = kiln::onnx::load_npy(p.string());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  fs::remove(p);
}

TEST(Npy, BadFilesAreClearErrors) {
  fs::path p = temp_file("bad.npy");
  write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(8, '\0'));
  EXPECT_THROW(kiln::onnx::load_npy(p.string()), IoError);  // truncated data
  write_npy(p, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  EXPECT_THROW(kiln::onnx::load_npy(p.string()), DTypeError);  // big-endian
  { std::ofstream(p) << "not numpy"; }
  try {
    kiln::onnx::load_npy(p.string());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not a .npy file"), std::string::npos) << e.what();
  }
  fs::remove(p);
  EXPECT_THROW(kiln::onnx::load_npy(p.string()), IoError);
}
