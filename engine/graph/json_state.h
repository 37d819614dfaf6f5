// The "initial_state" member of graph JSON (json.h): a graph's initial parameter and buffer
// tensors (Graph::initial_state) as
//   {"conv1.weight": {"data": "<base64>", "dtype": "f32", "shape": [32, 1, 3, 3]}, ...}
// data: the elements in row-major order as little-endian bytes of the dtype (dtype_name's
// names: f32, f16, bf16, i64 ...), base64 as RFC 4648 section 4 writes it (with "=" padding).
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"

namespace kiln::graph::detail {

nlohmann::json state_json(const std::map<std::string, Tensor>& state);
// ValueError "graph JSON: initial_state 'conv1.weight': <what>" for a malformed entry: not
// an object, unknown dtype, negative dim, data of another byte count than shape x dtype.
std::map<std::string, Tensor> state_of_json(const nlohmann::json& j);

}  // namespace kiln::graph::detail
