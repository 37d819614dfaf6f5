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

}  // namespace

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
