#include "engine/graph/json_state.h"

#include <bit>
#include <cstring>

#include "engine/core/error.h"

namespace kiln::graph::detail {

static_assert(std::endian::native == std::endian::little, "graph JSON stores tensors as little-endian bytes");

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string base64_decode(const std::string& text) {
  KILN_CHECK(text.size() % 4 == 0, ValueError, "data is not base64: its length ", text.size(),
             " is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pad = 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int s = 0;
      if (c == '=' && last && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++pad;
      } else {
        s = sextet(c);
        KILN_CHECK(s >= 0 && pad == 0, ValueError, "data is not base64: character ", i + k, " is '", c, "'");
      }
      v = v << 6 | static_cast<uint32_t>(s);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>((v >> 8) & 255);
    if (pad < 1) out += static_cast<char>(v & 255);
  }
  return out;
}

nlohmann::json state_json(const std::map<std::string, Tensor>& state) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, tensor] : state) {
    const Tensor t = tensor.to(Device()).contiguous();
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    std::string raw(bytes, '\0');
    if (bytes)
      std::memcpy(raw.data(), static_cast<const char*>(t.impl()->storage->data()) + t.offset() * dtype_size(t.dtype()),
                  bytes);
    j[key] = {{"data", base64_encode(raw)}, {"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}};
  }
  return j;
}

std::map<std::string, Tensor> state_of_json(const nlohmann::json& j) {
  auto fail = [](const std::string& key, const std::string& what) {
    throw ValueError("graph JSON: initial_state '" + key + "': " + what);
  };
  if (!j.is_object()) throw ValueError("graph JSON: \"initial_state\" must be an object");
  std::map<std::string, Tensor> state;
  for (const auto& [key, v] : j.items()) {
    if (!v.is_object() || !v.contains("data") || !v["data"].is_string() || !v.contains("dtype") ||
        !v["dtype"].is_string() || !v.contains("shape") || !v["shape"].is_array())
      fail(key, "expected {\"data\": base64, \"dtype\": name, \"shape\": [dims]}");
    for (const auto& [k, unused] : v.items())
      if (k != "data" && k != "dtype" && k != "shape") fail(key, "unknown key '" + k + "'");
    DType dtype{};
    try {
      dtype = dtype_from_name(v["dtype"].get<std::string>());
    } catch (const Error& e) {
      fail(key, e.what());
    }
    Shape shape;
    int64_t count = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40))
        fail(key, "shape must hold integers in [0, 2^40], got " + v["shape"].dump());
      shape.push_back(d.get<int64_t>());
      const int64_t dim = d.get<int64_t>();
      count = dim != 0 && count > (int64_t{1} << 40) / dim ? (int64_t{1} << 40) + 1 : count * dim;
    }
    std::string raw;
    try {
      raw = base64_decode(v["data"].get<std::string>());
    } catch (const ValueError& e) {
      fail(key, e.what());
    }
    const size_t want = static_cast<size_t>(count) * dtype_size(dtype);
    if (count > (int64_t{1} << 40) || raw.size() != want)
      fail(key, "data holds " + std::to_string(raw.size()) + " bytes, shape " + shape_str(shape) + " of " +
                    dtype_name(dtype) + " needs " + std::to_string(want));
    state[key] = Tensor::from_host(raw.data(), static_cast<size_t>(count), dtype, shape);
  }
  return state;
}

}  // namespace kiln::graph::detail
