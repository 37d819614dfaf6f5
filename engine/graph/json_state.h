// The "initial_state" member of graph JSON (json.h): a graph's initial parameter and buffer
// tensors (Graph::initial_state) as
//   {"conv1.weight": {"data": "<base64>", "dtype": "f32", "shape": [32, 1, 3, 3]}, ...}
// data: the elements in row-major order as little-endian bytes of the dtype (dtype_name's
// names: f32, f16, bf16, i64 ...), base64 as RFC 4648 section 4 writes it (with "=" padding);
// or, with a BlobStore (json.h), {"blob": KEY, "dtype": ..., "shape": [...]}: the same bytes
// kept in the store under KEY.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"
#include "engine/graph/json.h"

namespace kiln::graph::detail {

nlohmann::json state_json(const std::map<std::string, Tensor>& state, BlobStore* blobs = nullptr);
// ValueError "graph JSON: initial_state 'conv1.weight': <what>" for a malformed entry: not
// an object, unknown dtype, negative dim, data of another byte count than shape x dtype, a
// "blob" entry without `blobs`; BlobStore::get's error for a key the store lacks.
std::map<std::string, Tensor> state_of_json(const nlohmann::json& j, const BlobStore* blobs = nullptr);

}  // namespace kiln::graph::detail
