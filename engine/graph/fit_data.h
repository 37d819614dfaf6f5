// Fitting a graph to a dataset: the Input's per-sample shape follows the data ([C, H, W] images,
// [F] table rows) and the layers whose width follows from it (the first Conv2d's in_channels, a
// Linear's in_features, a BatchNorm's num_features) are set to what now reaches them; the Linear
// that feeds the Output gives one score per class. Kiln Studio applies it when a project's dataset
// is chosen, so a template trains on an image folder or a table without editing by hand.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace kiln::graph {

// Changes `g` (it must have exactly one Input) so that it takes samples of `sample` (per sample,
// without the batch; each dim >= 1) and ends in `classes` (>= 1) scores: sets the Input's
// "shape", then, in topological order, every Conv2d's in_channels, Linear's in_features and
// BatchNorm1d/2d's num_features that no longer matches its input (re-analysing after each), and
// the out_features of a Linear whose output goes straight to the Output. Returns one sentence per
// change ("Input 'image': shape [1, 28, 28] -> [3, 32, 32]"), empty when `g` already fits.
// ValueError for a graph without exactly one Input or a bad sample/classes; a layer that cannot
// be fitted (e.g. a Reshape with a fixed shape) is left as it is, and the analysis names it.
// The Input's "dtype" becomes f32 when it was another (images and tables are float).
std::vector<std::string> fit_graph_to_data(Graph& g, const std::vector<int64_t>& sample, int64_t classes);

// Fits `g` to a text dataset (token ids i64 [max_length], ids in [0, vocab_size), data/text):
// the Input's dtype becomes i64 and its shape [max_length], every Embedding's num_embeddings
// becomes vocab_size (the only layer that reads ids), every PositionalEmbedding's max_length
// becomes max_length (a learned table one row per position), then fit_graph_to_data for the
// widths and the classes. Returns the changes as fit_graph_to_data does; its errors, and
// ValueError for vocab_size < 2 or max_length < 1.
std::vector<std::string> fit_graph_to_text(Graph& g, int64_t max_length, int64_t vocab_size, int64_t classes);

}  // namespace kiln::graph
