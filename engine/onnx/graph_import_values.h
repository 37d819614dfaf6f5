// Internal to engine/onnx's graph import: which values' dims depend on the *values* (not the
// shapes) of the model's graph inputs.
//
// Note [Values at import]
// Graph import records every value's type by running the model on example inputs (ones, at
// the sizes of Note [Symbols at import]). A graph input that a node reads for its contents'
// sake where they decide a shape (Reshape's shape, Unsqueeze's axes, Resize's sizes, TopK's
// K, Tile's repeats, Slice's starts ...; onnx.ai Operators.md names each input) then gives
// dims that hold for ones only (test_unsqueeze_axis_0: axes [1] instead of [0] gives
// [3, 1, 4, 5], not [1, 3, 4, 5]). So a value is "value-dependent" when its contents follow a
// graph input's contents (every node's outputs follow its inputs', except Shape's and Size's,
// which follow their input's dims), and "shape-dependent" when its dims may follow a graph
// input's contents: an output of a node that reads a value-dependent value at such an input,
// of a data-dependent op (NonZero, NonMaxSuppression, Unique, Compress) fed one, and any
// output of a node fed a shape-dependent value (a conservative rule: its dims cannot be
// checked without the op's own shape function). Import records each dim of a shape-dependent
// value as "?" (the rank still comes from the run), or as the model's declared dim where the
// value is a graph output whose declared shape fixes it: never a number that holds for ones.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/types.h"
#include "engine/onnx/model.h"

namespace kiln::onnx::detail {

class InputValues {
 public:
  // Walks `g`'s nodes in their (topological) order.
  explicit InputValues(const Graph& g);
  // Sets each dim of every shape-dependent value in `types` (value name -> type recorded by the
  // example run) to "?" (graph::kUnknownDim), or to the dim_value a graph output of `outputs`
  // declares for it (same rank); other values are left as they are.
  void forget_dims(std::map<std::string, graph::TensorType>& types, const std::vector<ValueInfo>& outputs) const;
  // For a run of the example inputs that failed with `error`: a message naming the node that
  // reads a value-dependent value at a contents-sensitive input ("node 'r' (Reshape): its
  // shape is the graph input 'shape'; ...", preferring the node `error` names), or "" when no
  // node does (the failure is the model's own).
  std::string explain_failure(const Graph& g, const std::string& error) const;

 private:
  std::map<std::string, std::string> from_input_;  // value-dependent value -> a graph input it follows
  std::set<std::string> shape_dependent_;
};

// Why node `n`, which Kiln's executor runs but onnx_ops() lacks, does not map to the graph IR:
// "control flow ops ...", "string ops do not map ... (its tensors hold strings ...)", "sequence ops ...".
std::string unmapped_reason(const Node& n);

}  // namespace kiln::onnx::detail
