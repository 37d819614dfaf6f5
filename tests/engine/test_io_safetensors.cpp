// safetensors: round trips and every malformed-file error.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/engine/test_util.h"
#include "engine/core/error.h"
#include "engine/io/safetensors.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::io;
namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A file of the given header text (padded to 8 bytes unless raw) and data buffer;
// header_len overrides the length field.
void write_st(const std::string& path, std::string header, const std::string& buffer, int64_t header_len = -1) {
  uint64_t n = header_len >= 0 ? uint64_t(header_len) : header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << buffer;
}

template <class Err = IoError, class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Err& e) {
    return e.what();
  }
  return "(no exception of the expected type)";
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& name) {
  EXPECT_EQ(a.dtype(), b.dtype()) << name;
  EXPECT_EQ(a.shape(), b.shape()) << name;
  EXPECT_EQ(a.to(DType::f64).to_vector<double>(), b.to(DType::f64).to_vector<double>()) << name;
}

}  // namespace

TEST(SafetensorsRoundTrip, EveryDtypeAndNonContiguous) {
  TempDir dir("kiln-st");
  Tensor base = Tensor::arange(-12, 12, 1, DType::f32).reshape({4, 6});
  NamedTensors in;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = DType(i);
    Tensor x = t == DType::u8 ? (base + 12.0).to(t) : base.to(t);
    in.emplace_back(std::string("c_") + dtype_name(t), x);
    in.emplace_back(std::string("t_") + dtype_name(t), x.t());                 // transposed view
    in.emplace_back(std::string("s_") + dtype_name(t), x.slice(1, 1, 6, 2));  // strided slice
  }
  in.emplace_back("scalar", Tensor::scalar(3.5, DType::f64));
  in.emplace_back("empty", Tensor::zeros({0, 3}));
  save_safetensors(dir / "m.safetensors", in);
  SafetensorsFile f = load_safetensors(dir / "m.safetensors");
  ASSERT_EQ(f.tensors.size(), in.size());
  EXPECT_TRUE(f.metadata.empty());
  for (const auto& [name, x] : in) {
    auto it = std::find_if(f.tensors.begin(), f.tensors.end(), [&](const auto& p) { return p.first == name; });
    ASSERT_NE(it, f.tensors.end()) << name;
    expect_same(it->second, x, name);
  }
  EXPECT_TRUE(std::filesystem::directory_iterator(dir.path) != std::filesystem::directory_iterator());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);  // no temporaries
}

TEST(SafetensorsRoundTrip, MetadataAndLayout) {
  TempDir dir("kiln-st");
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "ünïcode \"quoted\""}};
  save_safetensors(dir / "a.safetensors",
                   {{"b", Tensor::ones({3}, DType::u8)}, {"a", Tensor::ones({2}, DType::f64)},
                    {"c", Tensor::ones({1}, DType::f32)}},
                   meta);
  SafetensorsFile f = load_safetensors(dir / "a.safetensors");
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), 3u);  // file order: widest dtype first, as the Python library writes
  EXPECT_EQ(f.tensors[0].first, "a");
  EXPECT_EQ(f.tensors[1].first, "c");
  EXPECT_EQ(f.tensors[2].first, "b");
  std::string raw = read_all(dir / "a.safetensors");
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw[8], '{');
  EXPECT_EQ(raw.size(), 8 + n + 16 + 4 + 3);
  EXPECT_NE(raw.find(R"("a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]})"), std::string::npos) << raw;
}

TEST(SafetensorsRoundTrip, OverwriteIsAtomicAndBadInputLeavesFileAlone) {
  TempDir dir("kiln-st");
  std::string p = dir / "w.safetensors";
  save_safetensors(p, {{"x", Tensor::full({2}, 1.0)}});
  save_safetensors(p, {{"x", Tensor::full({2}, 2.0)}});
  EXPECT_EQ(load_safetensors(p).tensors[0].second.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_THROW(save_safetensors(p, {{"x", Tensor::ones({1})}, {"x", Tensor::ones({1})}}), ValueError);
  EXPECT_THROW(save_safetensors(p, {{"__metadata__", Tensor::ones({1})}}), ValueError);
  EXPECT_EQ(load_safetensors(p).tensors[0].second.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
  EXPECT_THROW(save_safetensors(dir / "no/such/dir/x.safetensors", {}), IoError);
}

TEST(SafetensorsErrors, MissingAndTooSmall) {
  TempDir dir("kiln-st");
  EXPECT_NE(error_of([&] { load_safetensors(dir / "none"); }).find("none: no such file"), std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors(dir.path); }).find("is a directory, not a safetensors file"),
            std::string::npos);
  std::ofstream(dir / "tiny", std::ios::binary) << "abc";
  EXPECT_NE(error_of([&] { load_safetensors(dir / "tiny"); }).find("tiny: file too small"), std::string::npos);
}

TEST(SafetensorsErrors, BadHeaderLength) {
  TempDir dir("kiln-st");
  write_st(dir / "long", "{}", "", 1000);
  std::string msg = error_of([&] { load_safetensors(dir / "long"); });
  EXPECT_NE(msg.find("header length 1000 is larger than the file (10 bytes)"), std::string::npos) << msg;
  write_st(dir / "huge", "{}", "", int64_t(1) << 40);
  msg = error_of([&] { load_safetensors(dir / "huge"); });
  EXPECT_NE(msg.find("exceeds the limit of 100000000 bytes"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, InvalidJson) {
  TempDir dir("kiln-st");
  write_st(dir / "j", R"({"x": {"dtype": "F32", )", "");
  std::string msg = error_of([&] { load_safetensors(dir / "j"); });
  EXPECT_NE(msg.find("j: header is not valid JSON"), std::string::npos) << msg;
  write_st(dir / "arr", "[1, 2]  ", "");
  EXPECT_NE(error_of([&] { load_safetensors(dir / "arr"); }).find("starts with '{'"), std::string::npos);
  write_st(dir / "meta", R"({"__metadata__": {"a": 1}})", "");
  EXPECT_NE(error_of([&] { load_safetensors(dir / "meta"); }).find("value of 'a' must be a string"),
            std::string::npos);
  write_st(dir / "field", R"({"x": {"dtype": "F32", "shape": [1]}})", "");
  EXPECT_NE(error_of([&] { load_safetensors(dir / "field"); }).find("lacks \"data_offsets\""), std::string::npos);
  write_st(dir / "neg", R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "");
  EXPECT_NE(error_of([&] { load_safetensors(dir / "neg"); }).find("non-negative"), std::string::npos);
}

TEST(SafetensorsErrors, UnknownAndUnsupportedDtype) {
  TempDir dir("kiln-st");
  write_st(dir / "q", R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}})", "x");
  std::string msg = error_of([&] { load_safetensors(dir / "q"); });
  EXPECT_NE(msg.find("tensor 'w' has unknown dtype \"Q4\""), std::string::npos) << msg;
  write_st(dir / "f8", R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", "ab");
  msg = error_of<DTypeError>([&] { load_safetensors(dir / "f8"); });
  EXPECT_NE(msg.find("tensor 'w' has dtype F8_E4M3, which Kiln does not support"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, ShapeOffsetSizeMismatch) {
  TempDir dir("kiln-st");
  write_st(dir / "m", R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", std::string(12, 'x'));
  std::string msg = error_of([&] { load_safetensors(dir / "m"); });
  EXPECT_NE(msg.find("shape [2, 2] F32 needs 16 bytes but data_offsets [0, 12] span 12"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, OffsetsPastEnd) {
  TempDir dir("kiln-st");
  write_st(dir / "p", R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", std::string(8, 'x'));
  std::string msg = error_of([&] { load_safetensors(dir / "p"); });
  EXPECT_NE(msg.find("data_offsets [0, 16] run past the end of the 8-byte data buffer"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, OverlapGapAndTrailingBytes) {
  TempDir dir("kiln-st");
  write_st(dir / "o",
           R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
               "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})",
           std::string(6, 'x'));
  std::string msg = error_of([&] { load_safetensors(dir / "o"); });
  EXPECT_NE(msg.find("tensor 'b' [2, 6) overlaps tensor 'a' [0, 4)"), std::string::npos) << msg;
  write_st(dir / "g",
           R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
               "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
           std::string(6, 'x'));
  msg = error_of([&] { load_safetensors(dir / "g"); });
  EXPECT_NE(msg.find("bytes [2, 4) of the data buffer belong to no tensor"), std::string::npos) << msg;
  write_st(dir / "t", R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", std::string(5, 'x'));
  msg = error_of([&] { load_safetensors(dir / "t"); });
  EXPECT_NE(msg.find("the last 3 bytes"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, DuplicateNames) {
  TempDir dir("kiln-st");
  write_st(dir / "d",
           R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
               "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
           "xy");
  std::string msg = error_of([&] { load_safetensors(dir / "d"); });
  EXPECT_NE(msg.find("duplicate tensor name 'a'"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, TruncatedFile) {
  TempDir dir("kiln-st");
  std::string p = dir / "full.safetensors";
  save_safetensors(p, {{"w", Tensor::ones({64})}, {"b", Tensor::ones({8})}});
  std::string raw = read_all(p);
  for (size_t cut : {raw.size() - 1, raw.size() - 40, size_t(20)}) {
    std::ofstream(dir / "cut", std::ios::binary).write(raw.data(), std::streamsize(cut));
    std::string msg = error_of([&] { load_safetensors(dir / "cut"); });
    EXPECT_TRUE(msg.find("run past the end") != std::string::npos || msg.find("larger than the file") != std::string::npos)
        << cut << ": " << msg;
  }
}
