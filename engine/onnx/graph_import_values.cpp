#include "engine/onnx/graph_import_values.h"

#include <vector>

#include "engine/onnx/op_context.h"

namespace kiln::onnx::detail {

namespace {

// An input of an op whose contents the op reads as a shape, axes, counts or indexes
// (onnx.ai Operators.md's input names); `shapes`: they decide the output's dims.
struct ContentsInput {
  size_t slot;
  const char* role;
  bool shapes;
};

const std::map<std::string, std::vector<ContentsInput>>& contents_inputs() {
  static const std::map<std::string, std::vector<ContentsInput>> table = [] {
    std::map<std::string, std::vector<ContentsInput>> t{
        {"Reshape", {{1, "shape", true}}},
        {"Expand", {{1, "shape", true}}},
        {"ConstantOfShape", {{0, "shape", true}}},
        {"Unsqueeze", {{1, "axes", true}}},
        {"Squeeze", {{1, "axes", true}}},
        {"Slice", {{1, "starts", true}, {2, "ends", true}, {3, "axes", true}, {4, "steps", true}}},
        {"Tile", {{1, "repeats", true}}},
        {"TopK", {{1, "K", true}}},
        {"Split", {{1, "split", true}}},
        {"Pad", {{1, "pads", true}, {3, "axes", true}}},
        {"Resize", {{1, "roi", true}, {2, "scales", true}, {3, "sizes", true}}},
        {"Upsample", {{1, "scales", true}}},
        {"Range", {{0, "start", true}, {1, "limit", true}, {2, "delta", true}}},
        {"OneHot", {{1, "depth", true}}},
        {"CenterCropPad", {{1, "shape", true}}},
        {"Col2Im", {{1, "image_shape", true}, {2, "block_shape", true}}},
        {"MaxUnpool", {{2, "output_shape", true}}},
        {"DFT", {{1, "dft_length", true}, {2, "axis", true}}},
        {"STFT", {{1, "frame_step", true}, {3, "frame_length", true}}},
        {"HannWindow", {{0, "size", true}}},
        {"HammingWindow", {{0, "size", true}}},
        {"BlackmanWindow", {{0, "size", true}}},
        {"MelWeightMatrix", {{0, "num_mel_bins", true}, {1, "dft_length", true}}},
        {"CumSum", {{1, "axis", false}}},
        {"RoiAlign", {{2, "batch_indices", false}}},
        {"NonZero", {{0, "X", true}}},
        {"NonMaxSuppression",
         {{0, "boxes", true}, {1, "scores", true}, {2, "max_output_boxes_per_class", true},
          {3, "iou_threshold", true}, {4, "score_threshold", true}}},
        {"Unique", {{0, "X", true}}},
        {"Compress", {{1, "condition", true}}}};
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      t[op] = {{1, "axes", true}};
    return t;
  }();
  return table;
}

}  // namespace

InputValues::InputValues(const Graph& g) {
  for (const ValueInfo& v : g.inputs) from_input_[v.name] = v.name;
  const auto& table = contents_inputs();
  for (const Node& n : g.nodes) {
    std::string follows;  // a graph input the outputs' contents follow ("" = none)
    bool dims = false;
    const bool shape_only = n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size");
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      dims = dims || shape_dependent_.count(in);
      auto it = from_input_.find(in);
      if (!shape_only && it != from_input_.end() && follows.empty()) follows = it->second;
      if (shape_only && shape_dependent_.count(in) && follows.empty())
        follows = from_input_.count(in) ? from_input_.at(in) : in;
    }
    auto entry = n.domain.empty() ? table.find(n.op_type) : table.end();
    if (entry != table.end())
      for (const ContentsInput& c : entry->second)
        if (c.shapes && c.slot < n.inputs.size() && from_input_.count(n.inputs[c.slot])) dims = true;
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      if (!follows.empty()) from_input_[out] = follows;
      if (dims) shape_dependent_.insert(out);
    }
  }
}

void InputValues::forget_dims(std::map<std::string, graph::TensorType>& types,
                              const std::vector<ValueInfo>& outputs) const {
  for (const std::string& name : shape_dependent_) {
    auto t = types.find(name);
    if (t == types.end()) continue;
    const ValueInfo* declared = nullptr;
    for (const ValueInfo& v : outputs)
      if (v.name == name && v.has_shape && v.shape.size() == t->second.shape.size()) declared = &v;
    for (size_t i = 0; i < t->second.shape.size(); ++i)
      t->second.shape[i] = declared && declared->shape[i].known() ? declared->shape[i].value : graph::kUnknownDim;
  }
}

std::string InputValues::explain_failure(const Graph& g, const std::string& error) const {
  const auto& table = contents_inputs();
  std::string first;
  for (const Node& n : g.nodes) {
    auto entry = n.domain.empty() ? table.find(n.op_type) : table.end();
    if (entry == table.end()) continue;
    for (const ContentsInput& c : entry->second) {
      if (c.slot >= n.inputs.size()) continue;
      const std::string& value = n.inputs[c.slot];
      auto it = from_input_.find(value);
      if (value.empty() || it == from_input_.end()) continue;
      const std::string source = it->second == value ? "the graph input '" + value + "'"
                                                     : "'" + value + "', computed from the graph input '" + it->second + "'";
      std::string msg = "node '" + n.name + "' (" + n.op_type + "): its " + c.role + " is " + source +
                        "; graph import runs the model on example inputs (ones) to record each value's type, and "
                        "ones do not stand in for those contents (the run failed: " + error +
                        "); make '" + it->second + "' an initializer to import the model";
      if (error.find("'" + n.name + "'") != std::string::npos) return msg;
      if (first.empty()) first = msg;
    }
  }
  return first;
}

std::string unmapped_reason(const Node& n) {
  SequenceOpTable strings;
  register_string_ops(strings);
  const std::string key = op_key(n);
  if (key == "If" || key == "Loop" || key == "Scan")
    return "control flow ops (nodes with subgraphs) do not map to the graph IR yet";
  if (strings.count(key))
    return "string ops do not map to the graph IR yet (its tensors hold strings; the graph IR's are numeric)";
  if (key.find("Sequence") != std::string::npos || key.find("Optional") != std::string::npos)
    return "sequence ops do not map to the graph IR yet (its values are sequences or optionals; the graph IR's are "
           "tensors)";
  return "runs in Kiln's ONNX executor only (no graph IR op yet)";
}

}  // namespace kiln::onnx::detail
