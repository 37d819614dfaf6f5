// Constant folding of the shape-only subgraphs that exporters write (PyTorch's
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains): nodes whose values do not
// depend on the model's input data nor on its symbolic dimensions become initializers.
#pragma once
#include <cstddef>

#include "engine/onnx/model.h"

namespace kiln::onnx {

struct FoldReport {
  size_t folded_values = 0;  // node outputs that became initializers
  size_t removed_nodes = 0;  // nodes taken out of the graph (folded, or left without readers)
};

// The shape-only cone of the main graph: Shape and Size nodes, Constant nodes, and every
// deterministic op (not Random*, Bernoulli, Multinomial, control flow or sequence ops) whose
// inputs all lie in the cone or are initializers. Values in that cone cannot depend on the
// input data, only on input shapes. The model runs twice, with every symbolic or unknown input
// dimension set to 2 and then to 3 (inputs filled with zeros; once when every input dimension
// is known, as in a model exported for batch 1); a cone value equal in both runs
// (dtype, shape and every element; at most 2^20 elements) is taken as independent of the
// symbolic dimensions and becomes an initializer — the same two-run reading of symbolic
// dimensions as import_graph's. Nodes of the cone left without readers are removed; values
// read by subgraphs or named as graph outputs are kept. Nothing is folded (an empty report,
// and the model does not run) when the cone holds no Shape or Size node; nothing is folded
// when an input is not a numeric tensor of known rank or when a run fails. Outputs of the
// folded model equal those of the original for every input.
FoldReport fold_shape_subgraphs(Model& model);

// Whether every dimension of every model input is a number (no symbolic or unknown one, every
// input with a shape). Then fold_shape_subgraphs is exact: the values it folds are the same
// for every input the model accepts. With a symbolic dimension it relies on its two runs, and a
// value such as floor(N / 4) is the same for N = 2 and 3 but not for N = 8.
bool input_shapes_known(const Model& model);

}  // namespace kiln::onnx
