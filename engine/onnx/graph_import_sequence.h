// Internal to graph_import_native.cpp: the sequence patterns of the native import. Note [Sequence import]:
// - The native RNN / LSTM / GRU are batch first ([N, T, C] -> [N, T, D*H], graph_module.h), ONNX's
//   (layout 0) time-major: X [T, N, C], Y [T, D, N, H]. Kiln's export (ops_onnx_sequence.cpp) and
//   torch.onnx wrap each node in the layout changes, and those are what the import undoes: the
//   node's X must be Transpose(perm [1, 0, 2]) of an [N, T, C] value (which the native node reads)
//   or the time-major output of a recurrent node fused the same way; every reader of Y must be
//   Transpose [2, 0, 1, 3] + Reshape [0, 0, D*H] (-> [N, T, D*H], the native output itself),
//   Transpose [0, 2, 1, 3] + Reshape, or for one direction Squeeze(axis 1) (-> [T, N, D*H], read
//   by the next recurrent node or by Transpose [1, 0, 2] back to [N, T, D*H]). Those nodes are
//   removed. With layout 1 (batch-major X [N, T, C], Y [N, T, D, H], Y_h [N, D, H]) X is what
//   the native node reads, and every reader of Y must be Reshape [0, 0, D*H] or, for one
//   direction, Squeeze(axis 2) (Y_h: Squeeze or Gather of axis 1).
// - Chained nodes of one op and the same attributes, each read only by the next, become one
//   native layer of num_layers = the chain's length (Note [Stacked layers],
//   graph_import_sequence.cpp), as torch.onnx and Kiln's export write a layer of several (ONNX
//   has no inter-layer dropout: dropout 0). Layout 1 chains stay one native node per layer.
// - Y_h and Y_c: the native layer has one output (Y). For one direction, Y_h is Y's last valid
//   step: read as [N, H] (Gather(Y_h, 0 or -1) or Squeeze(Y_h, 0), PyTorch's h_n[-1]) it becomes
//   a SequencePool(mode "last") of the native output, which skips padding as sequence_lens does.
//   torch.onnx's h_n of a stacked layer, Concat(axis 0) of every layer's Y_h read only by
//   Gathers of a constant index (h_n[-1]), gives the picked layer's last step the same way.
//   A node whose Y_c is read (the cell state is not a function of Y), or whose Y_h is read
//   otherwise or for two directions, stays onnx.<Op>.
// - Padding: with a token-id input (graph_module.h's padding mask) the native layer skips the
//   padded steps; the node maps only when its sequence_lens is ReduceSum(Cast(Not(Equal(ids, 0))),
//   axis 1) of those ids (as Kiln's export writes it), and that arithmetic is removed. Without
//   such an input the node must have no sequence_lens.
// - initial_h / initial_c that are ConstantOfShape(..., value 0), as torch.onnx writes PyTorch's
//   default zero state, are omitted (their shape arithmetic removed); a constant of zeros maps too.
// - Kiln's SequencePool exports (mean and max over the padding mask, first and last valid step)
//   become SequencePool again (OnnxNodeView op_type "kiln.SequencePool").
// - A chain where one recurrent node stays onnx.<Op> keeps all of its linked nodes onnx.<Op>
//   (each warned, naming the node), since only the native nodes read the batch-first form.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/op_schema.h"
#include "engine/onnx/graph_import_native.h"

namespace kiln::onnx::detail {

struct ValueUse {
  size_t node;   // index in the graph's nodes
  size_t input;  // ONNX input index
};

struct SequencePlanInput {
  const NativeImportContext& ctx;
  const std::map<std::string, std::vector<ValueUse>>& uses;  // resolved value -> the node inputs reading it
  const std::set<std::string>& graph_outputs;
  std::function<std::string(const std::string&)> resolve;  // an Identity of a constant -> that constant
  // The view of node n as op_type with these inputs (by ONNX index) and n's outputs.
  std::function<graph::OnnxNodeView(const Node& n, const std::string& op_type, const std::vector<std::string>& inputs)> view;
  // Dry run of the native mapping: whether view v of node n maps (when not, a warning names n).
  std::function<bool(const Node& n, const graph::OnnxNodeView& v)> fits;
  std::function<void(const Node& n, const std::string& why)> warn;
  std::optional<std::string> mask_ids;  // the graph input whose ids give the padding mask, if any
};

struct SequenceFusion {
  graph::OnnxNodeView view;          // as the schema's onnx_import hook sees it
  std::vector<std::string> inputs;   // the value of each view input (input 0: a value or another fusion's output key)
  std::string output;                // the key the native node's output is known by
  std::vector<std::string> aliases;  // the model's values equal to that output
  // Values equal to Y_h [1, N, H] read as [N, H] (Gather 0 / -1 or Squeeze of axis 0): a
  // SequencePool(mode "last") of the native output gives them (the last valid step).
  std::vector<std::string> last_step;
  // A recurrent fusion's ONNX nodes, bottom layer first, and each one's view (view is layers[0]'s):
  // more than one when layers stack into one native node of num_layers = layers.size()
  // (Note [Stacked layers] in graph_import_sequence.cpp); the fusion is keyed by the top layer.
  std::vector<size_t> layers;
  std::vector<graph::OnnxNodeView> layer_views;
};

struct SequencePlan {
  std::map<size_t, SequenceFusion> fusions;  // by the node that becomes native
  std::set<size_t> removed;                  // nodes the fusions make unnecessary
};

SequencePlan plan_sequences(const SequencePlanInput& in);

}  // namespace kiln::onnx::detail
