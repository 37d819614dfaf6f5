#include "engine/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace kiln::io {

namespace fs = std::filesystem;
using nlohmann::json;
static_assert(std::endian::native == std::endian::little, "safetensors is little-endian; so must the host be");

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // bytes; the Python library's limit too

const char* st_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f64: return "F64";
    case DType::i64: return "I64";
    case DType::i32: return "I32";
    case DType::u8: return "U8";
    case DType::i8: return "I8";
    case DType::bool_: return "BOOL";
    case DType::i16: return "I16";
    case DType::u16: return "U16";
    case DType::u32: return "U32";
    case DType::u64: return "U64";
  }
  return "?";
}

// Parses a safetensors dtype; false for one Kiln lacks (`known` says whether the
// format defines it).
bool st_dtype(const std::string& s, DType& out, bool& known) {
  static const std::pair<const char*, DType> kSupported[] = {
      {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64}, {"I64", DType::i64},
      {"I32", DType::i32}, {"U8", DType::u8},   {"I8", DType::i8},     {"BOOL", DType::bool_}, {"I16", DType::i16},
      {"U16", DType::u16}, {"U32", DType::u32}, {"U64", DType::u64}};
  static const std::set<std::string> kUnsupported = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4",
                                                     "F6_E2M3", "F6_E3M2", "C64"};
  for (const auto& [name, t] : kSupported)
    if (s == name) {
      out = t;
      known = true;
      return true;
    }
  known = kUnsupported.count(s) != 0;
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

uint64_t get_u64(const json& v, const std::string& path, const std::string& name, const char* what) {
  KILN_CHECK(v.is_number_unsigned(), IoError, path, ": tensor '", name, "': ", what,
             " must hold non-negative integers, got ", v.dump());
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& path, const std::string& name, const json& v) {
  KILN_CHECK(v.is_object(), IoError, path, ": tensor '", name, "': header entry must be an object, got ", v.dump());
  auto field = [&](const char* key) -> const json& {
    auto it = v.find(key);
    KILN_CHECK(it != v.end(), IoError, path, ": tensor '", name, "': header entry lacks \"", key, "\"");
    return *it;
  };
  const json& dt = field("dtype");
  const json& shape = field("shape");
  const json& offsets = field("data_offsets");
  KILN_CHECK(dt.is_string(), IoError, path, ": tensor '", name, "': dtype must be a string, got ", dt.dump());
  KILN_CHECK(shape.is_array(), IoError, path, ": tensor '", name, "': shape must be an array, got ", shape.dump());
  KILN_CHECK(offsets.is_array() && offsets.size() == 2, IoError, path, ": tensor '", name,
             "': data_offsets must be [begin, end], got ", offsets.dump());
  Entry e{name, DType::f32, {}, get_u64(offsets[0], path, name, "data_offsets"),
          get_u64(offsets[1], path, name, "data_offsets")};
  bool known = false;
  std::string dts = dt.get<std::string>();
  if (!st_dtype(dts, e.dtype, known)) {
    KILN_CHECK(!known, DTypeError, path, ": tensor '", name, "' has dtype ", dts, ", which Kiln does not support");
    throw IoError(detail::str_cat(path, ": tensor '", name, "' has unknown dtype \"", dts, "\""));
  }
  uint64_t bytes = dtype_size(e.dtype);
  for (const json& d : shape) {
    uint64_t n = get_u64(d, path, name, "shape");
    e.shape.push_back(static_cast<int64_t>(n));
    KILN_CHECK(!__builtin_mul_overflow(bytes, n, &bytes) && bytes < (uint64_t{1} << 62), IoError, path,
               ": tensor '", name, "': shape ", shape.dump(), " is too large");
  }
  KILN_CHECK(e.begin <= e.end, IoError, path, ": tensor '", name, "': data_offsets [", e.begin, ", ", e.end,
             "] end before they begin");
  KILN_CHECK(bytes == e.end - e.begin, IoError, path, ": tensor '", name, "': shape ", shape_str(e.shape), " ", dts,
             " needs ", bytes, " bytes but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin);
  return e;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::vector<std::pair<std::string, Tensor>> items;  // host, contiguous
  for (const auto& [name, t] : tensors) {
    KILN_CHECK(!name.empty() && name != "__metadata__", ValueError, "save_safetensors: ", path,
               ": invalid tensor name '", name, "'");
    KILN_CHECK(names.insert(name).second, ValueError, "save_safetensors: ", path, ": duplicate tensor name '", name,
               "'");
    KILN_CHECK(t.defined(), ValueError, "save_safetensors: ", path, ": tensor '", name, "' is undefined");
    Tensor h = t.detach();
    if (h.device().type != DeviceType::cpu) h = h.to(Device());
    items.emplace_back(name, h.contiguous());
  }
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    size_t sa = dtype_size(a.second.dtype()), sb = dtype_size(b.second.dtype());
    return sa != sb ? sa > sb : a.first < b.first;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : items) {
    uint64_t n = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", st_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();

  AtomicFile out(path);
  out.write(&n, 8);
  out.write(text.data(), text.size());
  for (const auto& [name, t] : items) {
    size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    if (bytes) out.write(static_cast<const char*>(t.impl()->storage->data()) + t.offset() * dtype_size(t.dtype()), bytes);
  }
  out.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  KILN_CHECK(!fs::is_directory(path), IoError, path, " is a directory, not a safetensors file");
  KILN_CHECK(fs::is_regular_file(path), IoError, path, ": no such file");
  uint64_t size = fs::file_size(path);
  KILN_CHECK(size >= 8, IoError, path, ": file too small for safetensors (", size,
             " bytes; the format starts with an 8-byte header length)");
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), IoError, path, ": cannot open");
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  KILN_CHECK(n <= kMaxHeader, IoError, path, ": header length ", n, " exceeds the limit of ", kMaxHeader,
             " bytes (not a safetensors file?)");
  KILN_CHECK(n <= size - 8, IoError, path, ": header length ", n, " is larger than the file (", size, " bytes)");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  KILN_CHECK(in.good(), IoError, path, ": read failed");
  KILN_CHECK(!text.empty() && text[0] == '{', IoError, path,
             ": header is not valid JSON (a safetensors header starts with '{')");

  // Duplicate names: the JSON parser keeps the last value silently, so watch the keys.
  std::set<std::string> keys;
  std::string duplicate;
  json header;
  try {
    header = json::parse(text, [&](int depth, json::parse_event_t ev, json& parsed) {
      if (depth == 1 && ev == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    throw IoError(detail::str_cat(path, ": header is not valid JSON (", e.what(), ")"));
  }
  KILN_CHECK(header.is_object(), IoError, path, ": header must be a JSON object, got ", header.type_name());
  KILN_CHECK(duplicate.empty(), IoError, path, ": duplicate tensor name '", duplicate, "' in the header");

  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      KILN_CHECK(v.is_object(), IoError, path, ": __metadata__ must be an object of strings, got ", v.dump());
      for (const auto& [k, s] : v.items()) {
        KILN_CHECK(s.is_string(), IoError, path, ": __metadata__ value of '", k, "' must be a string, got ", s.dump());
        result.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, name, v));
  }

  // The tensors must tile the byte buffer: sorted by offset, each starts where the last ended.
  const uint64_t buffer = size - 8 - n;
  for (const Entry& e : entries)
    KILN_CHECK(e.end <= buffer, IoError, path, ": tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
               "] run past the end of the ", buffer, "-byte data buffer (truncated file?)");
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t expect = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    KILN_CHECK(e.begin >= expect, IoError, path, ": tensor '", e.name, "' [", e.begin, ", ", e.end,
               ") overlaps tensor '", entries[i - 1].name, "' [", entries[i - 1].begin, ", ", entries[i - 1].end, ")");
    KILN_CHECK(e.begin == expect, IoError, path, ": bytes [", expect, ", ", e.begin,
               ") of the data buffer belong to no tensor (before '", e.name, "')");
    expect = e.end;
  }
  KILN_CHECK(expect == buffer, IoError, path, ": the last ", buffer - expect, " bytes of the ", buffer,
             "-byte data buffer belong to no tensor");

  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    uint64_t bytes = e.end - e.begin;
    if (bytes) {
      char* dst = static_cast<char*>(t.impl()->storage->data());
      in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
      in.read(dst, static_cast<std::streamsize>(bytes));
      KILN_CHECK(in.good(), IoError, path, ": read failed for tensor '", e.name, "'");
      if (e.dtype == DType::bool_)  // any non-zero byte is true; a C++ bool must hold 0 or 1
        for (uint64_t i = 0; i < bytes; ++i) dst[i] = dst[i] != 0;
    }
    result.tensors.emplace_back(e.name, t);
  }
  return result;
}

}  // namespace kiln::io
