#include "engine/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>
#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/core/error.h"

namespace kiln::onnx {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

const char* onnx_type_name(int32_t t) {
  if (TensorProto::DataType_IsValid(t)) {
    static std::string names[32];
    std::string& n = names[t & 31];
    if (n.empty()) n = TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
    return n.c_str();
  }
  return "UNKNOWN";
}

int32_t onnx_type_of(DType d) {
  switch (d) {
    case DType::f32: return TensorProto::FLOAT;
    case DType::f64: return TensorProto::DOUBLE;
    case DType::f16: return TensorProto::FLOAT16;
    case DType::bf16: return TensorProto::BFLOAT16;
    case DType::i64: return TensorProto::INT64;
    case DType::i32: return TensorProto::INT32;
    case DType::i8: return TensorProto::INT8;
    case DType::u8: return TensorProto::UINT8;
    case DType::bool_: return TensorProto::BOOL;
    case DType::i16: return TensorProto::INT16;
    case DType::u16: return TensorProto::UINT16;
    case DType::u32: return TensorProto::UINT32;
    case DType::u64: return TensorProto::UINT64;
  }
  throw DTypeError("no ONNX type for this dtype");
}

DType dtype_of_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case TensorProto::FLOAT: return DType::f32;
    case TensorProto::DOUBLE: return DType::f64;
    case TensorProto::FLOAT16: return DType::f16;
    case TensorProto::BFLOAT16: return DType::bf16;
    case TensorProto::INT64: return DType::i64;
    case TensorProto::INT32: return DType::i32;
    case TensorProto::INT8: return DType::i8;
    case TensorProto::UINT8: return DType::u8;
    case TensorProto::BOOL: return DType::bool_;
    case TensorProto::INT16: return DType::i16;
    case TensorProto::UINT16: return DType::u16;
    case TensorProto::UINT32: return DType::u32;
    case TensorProto::UINT64: return DType::u64;
    default: break;
  }
  throw DTypeError(detail::str_cat(what, ": ONNX element type ", onnx_type_name(t), " (", t,
                                   ") has no Kiln dtype (supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, "
                                   "INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8, BOOL)"));
}

namespace {

// Reads `length` bytes at `offset` of an external data file, refusing any location that
// leaves base_dir (absolute paths, "..", symbolic links pointing outside).
std::string read_external(const TensorProto& p, const std::string& base_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw ValueError(what + ": external data '" + kv.key() + "' is not a number: '" + kv.value() + "'");
    }
  }
  KILN_CHECK(!location.empty(), ValueError, what, ": external data without a location");
  KILN_CHECK(!base_dir.empty(), ValueError, what, ": external data '", location,
             "' but the model was not read from a file");
  KILN_CHECK(offset >= 0, ValueError, what, ": negative external data offset ", offset);
  fs::path rel(location);
  KILN_CHECK(rel.is_relative() && !rel.has_root_name(), ValueError, what, ": external data location '", location,
             "' is absolute; it must be a file in the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir), ec);
  fs::path full = fs::weakly_canonical(base / rel, ec);
  KILN_CHECK(!ec, IoError, what, ": cannot resolve external data location '", location, "': ", ec.message());
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  KILN_CHECK(b == base.end() && f != full.end(), ValueError, what, ": external data location '", location,
             "' escapes the model's folder ", base.string());
  std::ifstream in(full, std::ios::binary);
  KILN_CHECK(in, IoError, what, ": cannot open external data file ", full.string());
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = size - offset;
  KILN_CHECK(offset + length <= size && length >= 0, IoError, what, ": external data [", offset, ", ",
             offset + length, ") lies outside ", full.string(), " (", size, " bytes)");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  KILN_CHECK(in, IoError, what, ": reading ", full.string(), " failed");
  return bytes;
}

template <class Dst, class Field>
void copy_field(const Field& field, std::vector<Dst>& out, size_t n, const std::string& what, const char* fname) {
  KILN_CHECK(static_cast<size_t>(field.size()) == n, ValueError, what, ": ", fname, " holds ", field.size(),
             " values for ", n, " elements");
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<Dst>(field.Get(static_cast<int>(i)));
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& p, const std::string& base_dir) {
  std::string what = "tensor '" + p.name() + "'";
  if (p.name().empty()) what = "tensor";
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape) KILN_CHECK(d >= 0, ValueError, what, ": negative dimension in ", shape_str(shape));
  KILN_CHECK(!p.has_segment(), ValueError, what, ": segmented tensors are not supported");
  DType dt = dtype_of_onnx(p.data_type(), what);
  // numel with an overflow check
  uint64_t n = 1;
  for (int64_t d : shape) {
    KILN_CHECK(d == 0 || n <= (uint64_t(1) << 62) / static_cast<uint64_t>(d), ValueError, what,
               ": too many elements in ", shape_str(shape));
    n *= static_cast<uint64_t>(d);
  }
  size_t esize = dtype_size(dt);
  bool external = p.data_location() == TensorProto::EXTERNAL;
  if (external || p.has_raw_data()) {
    std::string ext;
    const std::string& raw = external ? (ext = read_external(p, base_dir, what)) : p.raw_data();
    KILN_CHECK(raw.size() == n * esize, ValueError, what, ": ", external ? "external data" : "raw_data", " has ",
               raw.size(), " bytes, expected ", n * esize, " for ", onnx_type_name(p.data_type()), shape_str(shape));
    return Tensor::from_host(raw.data(), n, dt, shape);
  }
  size_t count = static_cast<size_t>(n);
  // The typed field each element type is stored in (onnx.proto: the 16-bit floats, the 8- and
  // 16-bit integers and bool in int32_data; UINT32/UINT64 in uint64_data).
  auto typed = [&](auto tag, const auto& field, const char* field_name) {
    std::vector<decltype(tag)> v;
    copy_field(field, v, count, what, field_name);
    if (dt == DType::bool_)
      for (auto& b : v) b = b != 0;
    return Tensor::from_host(v.data(), count, dt, shape);
  };
  switch (dt) {
    case DType::f32: return typed(float{}, p.float_data(), "float_data");
    case DType::f64: return typed(double{}, p.double_data(), "double_data");
    case DType::i64: return typed(int64_t{}, p.int64_data(), "int64_data");
    case DType::i32: return typed(int32_t{}, p.int32_data(), "int32_data");
    case DType::f16:
    case DType::bf16:
    case DType::u16: return typed(uint16_t{}, p.int32_data(), "int32_data");
    case DType::i16: return typed(int16_t{}, p.int32_data(), "int32_data");
    case DType::i8: return typed(int8_t{}, p.int32_data(), "int32_data");
    case DType::u8:
    case DType::bool_: return typed(uint8_t{}, p.int32_data(), "int32_data");
    case DType::u32: return typed(uint32_t{}, p.uint64_data(), "uint64_data");
    case DType::u64: return typed(uint64_t{}, p.uint64_data(), "uint64_data");
  }
  throw DTypeError(what + ": unsupported element type");
}

void tensor_to_proto(const Tensor& t, TensorProto& p) {
  p.set_data_type(onnx_type_of(t.dtype()));
  p.clear_dims();
  for (int64_t d : t.shape()) p.add_dims(d);
  Tensor c = t.to(Device()).contiguous();
  if (c.numel() == 0) {
    p.set_raw_data(std::string());
    return;
  }
  const char* data = static_cast<const char*>(c.impl()->storage->data()) + c.offset() * dtype_size(c.dtype());
  p.set_raw_data(std::string(data, static_cast<size_t>(c.numel()) * dtype_size(c.dtype())));
}

StringTensor strings_from_proto(const TensorProto& p) {
  std::string what = p.name().empty() ? std::string("tensor") : "tensor '" + p.name() + "'";
  KILN_CHECK(p.data_type() == TensorProto::STRING, ValueError, what, ": element type ", onnx_type_name(p.data_type()),
             " is not STRING");
  StringTensor s;
  s.shape.assign(p.dims().begin(), p.dims().end());
  uint64_t n = 1;
  for (int64_t d : s.shape) {
    KILN_CHECK(d >= 0, ValueError, what, ": negative dimension in ", shape_str(s.shape));
    KILN_CHECK(d == 0 || n <= (uint64_t(1) << 62) / static_cast<uint64_t>(d), ValueError, what,
               ": too many elements in ", shape_str(s.shape));
    n *= static_cast<uint64_t>(d);
  }
  KILN_CHECK(static_cast<uint64_t>(p.string_data_size()) == n, ValueError, what, ": string_data holds ",
             p.string_data_size(), " strings for ", n, " elements of ", shape_str(s.shape));
  s.data.assign(p.string_data().begin(), p.string_data().end());
  return s;
}

void strings_to_proto(const StringTensor& s, TensorProto& p) {
  p.set_data_type(TensorProto::STRING);
  p.clear_dims();
  for (int64_t d : s.shape) p.add_dims(d);
  p.clear_string_data();
  for (const std::string& e : s.data) p.add_string_data(e);
}

namespace {
TensorProto read_tensor_proto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  TensorProto p;
  KILN_CHECK(p.ParseFromString(ss.str()), IoError, path, ": not a valid ONNX TensorProto (truncated or corrupt)");
  return p;
}
}  // namespace

StringTensor load_strings_file(const std::string& path) {
  TensorProto p = read_tensor_proto(path);
  try {
    return strings_from_proto(p);
  } catch (const Error& e) {
    throw IoError(path + ": " + e.what());
  }
}

Tensor load_tensor_file(const std::string& path) {
  TensorProto p = read_tensor_proto(path);
  try {
    return tensor_from_proto(p, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw IoError(path + ": " + e.what());
  }
}

std::vector<Tensor> load_sequence_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  ::onnx::SequenceProto p;
  KILN_CHECK(p.ParseFromString(ss.str()), IoError, path, ": not a valid ONNX SequenceProto (truncated or corrupt)");
  KILN_CHECK(p.elem_type() == ::onnx::SequenceProto::TENSOR || p.tensor_values_size() > 0 ||
                 p.elem_type() == ::onnx::SequenceProto::UNDEFINED,
             IoError, path, ": only sequences of tensors are supported");
  std::vector<Tensor> out;
  try {
    for (const auto& t : p.tensor_values()) out.push_back(tensor_from_proto(t, fs::path(path).parent_path().string()));
  } catch (const Error& e) {
    throw IoError(path + ": " + e.what());
  }
  return out;
}

void save_tensor_file(const Tensor& t, const std::string& path, const std::string& name) {
  TensorProto p;
  tensor_to_proto(t, p);
  if (!name.empty()) p.set_name(name);
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out && p.SerializeToOstream(&out), IoError, "cannot write ", path);
}

}  // namespace kiln::onnx
