// Keeping input-dimension attributes in step with an edit upstream: when an edit changes
// the shape a layer receives (conv1.out_channels 32 -> 64, a pooling change that alters
// the flattened feature count), the attributes that must repeat a dimension of that input
// (OpSchema::input_dim_attributes: Conv2d.in_channels, Linear.in_features,
// BatchNorm.num_features) follow, as PyTorch users otherwise fix by hand.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace kiln::graph {

struct AttributeUpdate {
  NodeId node = -1;
  std::string attribute;
  int64_t value = 0;
};

// The updates that keep `after` (= `before` with one edit applied) consistent: each
// input-dimension attribute that equalled its input's dimension in `before` but differs
// from the (known, positive) dimension inferred in `after` gets that dimension. Repeated
// on the updated graph until nothing changes, so a chain follows too. Only
// input_dim_attributes are touched (never an output size such as out_channels); an
// attribute that was already inconsistent before the edit, an input whose shape is
// unknown, and `edited_node`.`edited_attribute` itself (the user's own value) are left
// alone. Ordered by node id, then attribute. Never throws for graphs of the registry's ops.
std::vector<AttributeUpdate> follow_input_dims(const Graph& before, const Graph& after, NodeId edited_node = -1,
                                               const std::string& edited_attribute = "");

}  // namespace kiln::graph
