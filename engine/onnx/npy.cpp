#include "engine/onnx/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/core/error.h"

namespace kiln::onnx {

namespace {

struct Descr {
  const char* text;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::f32}, {"<f8", DType::f64}, {"<f2", DType::f16}, {"<i8", DType::i64},
                             {"<i4", DType::i32}, {"|i1", DType::i8},  {"|u1", DType::u8},  {"|b1", DType::bool_},
                             {"<i2", DType::i16}, {"<u2", DType::u16}, {"<u4", DType::u32}, {"<u8", DType::u64}};

// The value of `key` in the header dict: "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "
std::string field(const std::string& header, const std::string& key, const std::string& path) {
  auto k = header.find("'" + key + "'");
  KILN_CHECK(k != std::string::npos, IoError, path, ": .npy header has no '", key, "': ", header);
  auto colon = header.find(':', k);
  KILN_CHECK(colon != std::string::npos, IoError, path, ": malformed .npy header: ", header);
  size_t start = header.find_first_not_of(' ', colon + 1);
  KILN_CHECK(start != std::string::npos, IoError, path, ": malformed .npy header: ", header);
  size_t end;
  if (header[start] == '(') end = header.find(')', start) + 1;
  else if (header[start] == '\'') end = header.find('\'', start + 1) + 1;
  else end = header.find_first_of(",}", start);
  KILN_CHECK(end != std::string::npos && end > start, IoError, path, ": malformed .npy header: ", header);
  return header.substr(start, end - start);
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), IoError, path, " is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  KILN_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, IoError, path,
             ": not a .npy file (no \\x93NUMPY magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  KILN_CHECK(major >= 1 && major <= 3, IoError, path, ": unsupported .npy version ", major);
  size_t header_len, offset;
  // numpy.lib.format (NEP 1): version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 (a
  // UTF-8 header) in 4, little-endian.
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    offset = 10;
  } else {
    KILN_CHECK(bytes.size() >= 12, IoError, path, ": truncated .npy header: version ", major,
               " needs a 4-byte header length after the version, the file has ", bytes.size(), " bytes");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + size_t(i)])) << (8 * i);
    offset = 12;
  }
  KILN_CHECK(offset + header_len <= bytes.size(), IoError, path, ": truncated .npy header: version ", major, ".",
             static_cast<int>(static_cast<uint8_t>(bytes[7])), " header of ", header_len, " bytes at offset ", offset,
             ", but the file has ", bytes.size(), " bytes");
  std::string header = bytes.substr(offset, header_len);
  std::string descr = field(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';
  if (descr == "<b1" || descr == "<i1" || descr == "<u1") descr[0] = '|';
  const Descr* d = nullptr;
  for (const Descr& c : kDescrs)
    if (descr == c.text) d = &c;
  KILN_CHECK(d, DTypeError, path, ": .npy dtype '", descr, "' is not supported (<f4, <f8, <f2, <i8, <i4, <i2, |i1, <u8, <u4, <u2, |u1, |b1)");
  bool fortran = field(header, "fortran_order", path) == "True";
  std::string shape_text = field(header, "shape", path);
  Shape shape;
  std::stringstream sh(shape_text.substr(1, shape_text.size() - 2));
  std::string item;
  while (std::getline(sh, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      throw IoError(path + ": malformed .npy shape " + shape_text);
    }
    KILN_CHECK(shape.back() >= 0, IoError, path, ": negative dimension in .npy shape ", shape_text);
  }
  int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const ShapeError&) {
    throw IoError(path + ": .npy shape " + shape_text + " has too many elements");
  }
  size_t n = static_cast<size_t>(count), esize = dtype_size(d->dtype);
  size_t data_at = offset + header_len;
  KILN_CHECK(n <= (bytes.size() - data_at) / esize, IoError, path, ": truncated .npy data: ", bytes.size() - data_at,
             " bytes for ", n, " elements of ", descr);
  if (!fortran) return Tensor::from_host(bytes.data() + data_at, n, d->dtype, shape);
  Shape rev(shape.rbegin(), shape.rend());
  std::vector<int64_t> perm;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
  return Tensor::from_host(bytes.data() + data_at, n, d->dtype, rev).permute(perm).contiguous();
}

void save_npy(const Tensor& tensor, const std::string& path) {
  Tensor t = tensor.to(Device()).contiguous();
  const char* descr = nullptr;
  for (const Descr& c : kDescrs)
    if (c.dtype == t.dtype()) descr = c.text;
  KILN_CHECK(descr, DTypeError, "save_npy: no .npy dtype for ", dtype_name(t.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.dim() == 1) shape += ",";  // numpy writes (3,)
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out, IoError, "cannot write ", path);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(le, 2);
  out << header;
  size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
  if (bytes) out.write(static_cast<const char*>(t.impl()->storage->data()) + t.offset() * dtype_size(t.dtype()),
                       static_cast<std::streamsize>(bytes));
  KILN_CHECK(out, IoError, "writing ", path, " failed");
}

}  // namespace kiln::onnx
