// Pooling a sequence [N, T, C] to one vector per sample [N, C] over its valid steps only, as a
// text classifier reads an embedded, padded batch (engine/data/text/text_dataset.h). The padding
// mask is f32 [N, T], 1 for a token and 0 for padding; padding is at the end of each row (the
// text datasets pad on the right), which `last` relies on. Built from differentiable ops
// (sum, amax, where, mul, div, cat), so gradients flow to x through the existing backward rules;
// the mask gets none. The formulas are those of the usual masked poolers (e.g. torchtext's and
// sentence-transformers' mean pooling: sum(x * m) / max(sum(m), 1)).
#pragma once
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::graph {

// The SequencePool modes: mean (sum over valid steps / their count), max (elementwise maximum over
// valid steps), last (the last valid step), first (step 0, the [CLS] position).
const std::vector<std::string>& sequence_pool_modes();

// x [N, T, C] floating, mask f32 [N, T] or undefined (every step valid) -> [N, C]. A row whose
// mask is all zero (a text with no token) pools to zeros in every mode. ShapeError naming both
// shapes when x is not rank 3 or the mask is not [N, T] of x; ValueError for an unknown mode.
Tensor sequence_pool(const Tensor& x, const Tensor& mask, const std::string& mode);

}  // namespace kiln::graph
