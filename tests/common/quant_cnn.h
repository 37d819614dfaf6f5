// The small CNN the quantization tests calibrate and convert (engine/quant), with its parameters
// drawn from `seed` and a batch norm whose statistics are not the identity (so folding it matters).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/random.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_module.h"

namespace kiln::test {

// image [1, 12, 12] -> conv1 -> bn1 -> relu1 -> pool -> flatten -> fc1 -> relu2 -> fc2 -> out
inline graph::Graph small_quant_cnn(uint64_t seed) {
  graph::Graph g;
  std::vector<graph::NodeId> ids{
      g.add_node("Input", "image", {{"shape", std::vector<int64_t>{1, 12, 12}}}),
      g.add_node("Conv2d", "conv1",
                 {{"in_channels", int64_t{1}}, {"out_channels", int64_t{8}}, {"padding", std::vector<int64_t>{1, 1}}}),
      g.add_node("BatchNorm2d", "bn1", {{"num_features", int64_t{8}}}),
      g.add_node("ReLU", "relu1"),
      g.add_node("MaxPool2d", "pool", {{"kernel_size", std::vector<int64_t>{2, 2}}}),
      g.add_node("Flatten", "flatten"),
      g.add_node("Linear", "fc1", {{"in_features", int64_t{288}}, {"out_features", int64_t{16}}}),
      g.add_node("ReLU", "relu2"),
      g.add_node("Linear", "fc2", {{"in_features", int64_t{16}}, {"out_features", int64_t{4}}}),
      g.add_node("Output", "out")};
  for (size_t i = 0; i + 1 < ids.size(); ++i) g.connect({ids[i], 0}, {ids[i + 1], 0});
  manual_seed(seed);
  graph::GraphModule m(g);
  graph::store_state(g, m.state_dict());
  g.initial_state["bn1.weight"] = uniform({8}, 0.5, 1.5);
  g.initial_state["bn1.bias"] = normal({8}, 0, 0.2);
  g.initial_state["bn1.running_mean"] = normal({8}, 0, 0.2);
  g.initial_state["bn1.running_var"] = uniform({8}, 0.5, 2);
  return g;
}

}  // namespace kiln::test
