// Shape arithmetic on the host. Models exported by PyTorch compute shapes inside the graph
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Sqrt(Cast(Shape)) for attention's
// scale ...). On a GPU each of those is a kernel on a scalar, and each op that reads one back
// (Reshape's shape, Slice's starts) waits for the device. The executor (executor.cpp) runs
// these nodes on the CPU instead, and small integer constants stay there, so a GPU inference
// runs only the real work and never waits for the device in the middle of a run; an op that
// uses such a value as data gets it copied to its device (OpContext::input), which does not wait.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "engine/onnx/model.h"

namespace kiln::onnx {

// What of a graph lives on the host. An integer or bool constant of at most kMaxElements
// (an initializer, or a Constant node's value) is a host constant. A node is a host node when
//   - it is Shape or Size (it reads only its input's shape), or a Constant holding a host constant;
//   - or its op is cheap shape arithmetic (kHostOps: Gather, Unsqueeze, Concat, Slice, Cast, Add,
//     Mul, Div, Sqrt, Equal, Where, Range ...) and each input is a host value or a host constant,
//     at least one a host value.
// Host values are the outputs of host nodes. Nodes are judged in the graph's (topological) order.
// Subgraphs (If, Loop, Scan bodies) are not analysed: their nodes run on the session's device.
struct HostPlan {
  static constexpr int64_t kMaxElements = 64;
  std::vector<bool> nodes;          // by index in Graph::nodes: whether it runs on the host
  std::set<std::string> values;     // outputs of host nodes
  std::set<std::string> constants;  // initializers kept on the host (integer, small)
};
HostPlan plan_host_values(const Graph& g);

}  // namespace kiln::onnx
