#include "engine/onnx/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/core/error.h"
#include "engine/onnx/tensor_proto.h"

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

// A .npy file's bytes and header fields (numpy.lib.format, NEP 1).
struct NpyFile {
  std::string bytes, descr;
  bool fortran = false;
  Shape shape;
  std::string shape_text;
  size_t data_at = 0;
};

NpyFile read_npy(const std::string& path) {
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), IoError, path, " is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
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
  NpyFile f;
  f.descr = descr;
  f.fortran = field(header, "fortran_order", path) == "True";
  std::string shape_text = field(header, "shape", path);
  f.shape_text = shape_text;
  Shape& shape = f.shape;
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
  f.data_at = offset + header_len;
  f.bytes = std::move(bytes);
  return f;
}

}  // namespace

Tensor load_npy(const std::string& path) {
  NpyFile f = read_npy(path);
  const std::string& descr = f.descr;
  const Shape& shape = f.shape;
  const std::string& shape_text = f.shape_text;
  const std::string& bytes = f.bytes;
  const bool fortran = f.fortran;
  const Descr* d = nullptr;
  for (const Descr& c : kDescrs)
    if (descr == c.text) d = &c;
  KILN_CHECK(d, DTypeError, path, ": .npy dtype '", descr, "' is not supported (<f4, <f8, <f2, <i8, <i4, <i2, |i1, <u8, <u4, <u2, |u1, |b1)");
  int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const ShapeError&) {
    throw IoError(path + ": .npy shape " + shape_text + " has too many elements");
  }
  size_t n = static_cast<size_t>(count), esize = dtype_size(d->dtype);
  size_t data_at = f.data_at;
  KILN_CHECK(n <= (bytes.size() - data_at) / esize, IoError, path, ": truncated .npy data: ", bytes.size() - data_at,
             " bytes for ", n, " elements of ", descr);
  if (!fortran) return Tensor::from_host(bytes.data() + data_at, n, d->dtype, shape);
  Shape rev(shape.rbegin(), shape.rend());
  std::vector<int64_t> perm;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
  return Tensor::from_host(bytes.data() + data_at, n, d->dtype, rev).permute(perm).contiguous();
}

StringTensor load_npy_strings(const std::string& path) {
  NpyFile f = read_npy(path);
  KILN_CHECK(f.descr.size() > 2 && f.descr.compare(0, 2, "<U") == 0 && !f.fortran, DTypeError, path, ": .npy dtype '",
             f.descr, "' is not a C-ordered unicode string array ('<U<n>')");
  size_t width = 0;
  try {
    width = std::stoul(f.descr.substr(2));
  } catch (const std::exception&) {
    throw IoError(path + ": malformed .npy dtype " + f.descr);
  }
  int64_t count = 0;
  try {
    count = numel(f.shape);
  } catch (const ShapeError&) {
    throw IoError(path + ": .npy shape " + f.shape_text + " has too many elements");
  }
  const auto n = static_cast<size_t>(count);
  KILN_CHECK(width > 0 && n <= (f.bytes.size() - f.data_at) / (4 * width), IoError, path, ": truncated .npy data: ",
             f.bytes.size() - f.data_at, " bytes for ", n, " elements of ", f.descr);
  StringTensor out{f.shape, {}};
  for (size_t i = 0; i < n; ++i) {
    std::string s;
    for (size_t k = 0; k < width; ++k) {  // UTF-32LE code points, NUL-padded, to UTF-8
      const auto* p = reinterpret_cast<const unsigned char*>(f.bytes.data() + f.data_at + 4 * (i * width + k));
      const uint32_t c = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
      if (c == 0) break;
      KILN_CHECK(c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF), IoError, path, ": element ", i, " holds the invalid code point ", c);
      if (c < 0x80) {
        s += static_cast<char>(c);
      } else if (c < 0x800) {
        s += static_cast<char>(0xC0 | (c >> 6)), s += static_cast<char>(0x80 | (c & 0x3F));
      } else if (c < 0x10000) {
        s += static_cast<char>(0xE0 | (c >> 12)), s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
      } else {
        s += static_cast<char>(0xF0 | (c >> 18)), s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F)), s += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    out.data.push_back(std::move(s));
  }
  return out;
}

bool npy_holds_strings(const std::string& path) {
  const std::string descr = read_npy(path).descr;
  return descr.size() > 2 && descr.compare(0, 2, "<U") == 0;
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
