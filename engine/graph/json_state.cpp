#include "engine/graph/json_state.h"

#include <bit>
#include <cstring>

#include "engine/core/error.h"
#include "engine/io/base64.h"

namespace kiln::graph::detail {

static_assert(std::endian::native == std::endian::little, "graph JSON stores tensors as little-endian bytes");

nlohmann::json state_json(const std::map<std::string, Tensor>& state, BlobStore* blobs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, tensor] : state) {
    const Tensor t = tensor.to(Device()).contiguous();
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    std::string raw(bytes, '\0');
    if (bytes)
      std::memcpy(raw.data(), static_cast<const char*>(t.impl()->storage->data()) + t.offset() * dtype_size(t.dtype()),
                  bytes);
    j[key] = {{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}};
    if (blobs)
      j[key]["blob"] = blobs->put(raw);
    else
      j[key]["data"] = io::base64_encode(raw);
  }
  return j;
}

std::map<std::string, Tensor> state_of_json(const nlohmann::json& j, const BlobStore* blobs) {
  auto fail = [](const std::string& key, const std::string& what) {
    throw ValueError("graph JSON: initial_state '" + key + "': " + what);
  };
  if (!j.is_object()) throw ValueError("graph JSON: \"initial_state\" must be an object");
  std::map<std::string, Tensor> state;
  for (const auto& [key, v] : j.items()) {
    if (!v.is_object() || v.contains("data") == v.contains("blob") ||
        !(v.contains("data") ? v["data"] : v["blob"]).is_string() || !v.contains("dtype") ||
        !v["dtype"].is_string() || !v.contains("shape") || !v["shape"].is_array())
      fail(key, "expected {\"data\": base64 or \"blob\": key, \"dtype\": name, \"shape\": [dims]}");
    for (const auto& [k, unused] : v.items())
      if (k != "data" && k != "blob" && k != "dtype" && k != "shape") fail(key, "unknown key '" + k + "'");
    if (v.contains("blob") && !blobs)
      fail(key, "its data is kept in a project's blob table (" + v["blob"].get<std::string>() +
                    "); open the graph through its project");
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
    if (v.contains("blob")) {
      raw = blobs->get(v["blob"].get<std::string>());
    } else {
      try {
        raw = io::base64_decode(v["data"].get<std::string>());
      } catch (const ValueError& e) {
        fail(key, e.what());
      }
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
