#include "engine/graph/passes.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/graph/analysis.h"
#include "engine/graph/op_schema.h"

namespace kiln::graph {
namespace {

// The one reader of node `id`'s output 0, or nullopt when it has none or several.
std::optional<PortRef> only_reader(const Graph& g, NodeId id) {
  const auto readers = g.consumers_of({id, 0});
  if (readers.size() != 1) return std::nullopt;
  return readers[0];
}

// The state entry `key` as f64 values, checked to hold `count` elements; `fallback` fills a
// missing entry (empty fallback: missing is allowed only when the caller checks it).
std::vector<double> entry(const Graph& g, const std::string& key, int64_t count, double fallback) {
  auto it = g.initial_state.find(key);
  if (it == g.initial_state.end()) return std::vector<double>(static_cast<size_t>(count), fallback);
  KILN_CHECK(it->second.numel() == count, ShapeError, "FoldBatchNorm: ", key, " has ", it->second.numel(),
             " elements, expected ", count);
  return it->second.contiguous().to_vector<double>();
}

// Why the BatchNorm `bn` cannot be folded into `layer`; empty when it can.
std::string fold_blocker(const Graph& g, const Analysis& a, const Node& layer, const Node& bn) {
  const bool two_d = bn.op == "BatchNorm2d";
  if (two_d && layer.op != "Conv2d") return "its input is not a Conv2d";
  if (!two_d && layer.op != "Linear") return "its input is not a Linear";
  if (g.consumers_of({layer.id, 0}).size() != 1)
    return "the output of " + layer.name + " has other readers besides it";
  if (!attr_bool(bn.attrs, "track_running_stats")) return "it normalizes by batch statistics (track_running_stats false)";
  if (!two_d) {
    auto t = a.type_of({layer.id, 0});
    if (!t || t->shape.size() != 2) return "Linear output is not [N, C]";
  }
  if (!g.initial_state.count(layer.name + ".weight")) return layer.name + ".weight is not in the graph's state";
  return {};
}

void fold(Graph& g, const Node& layer_node, const Node& bn) {
  const std::string layer = layer_node.name;
  const NodeId layer_id = layer_node.id, bn_id = bn.id;
  const Tensor w = g.initial_state.at(layer + ".weight");
  KILN_CHECK(w.dim() >= 2, ShapeError, "FoldBatchNorm: ", layer, ".weight must be [out, ...], got ", shape_str(w.shape()));
  const int64_t c = w.shape()[0];
  KILN_CHECK(attr_int(bn.attrs, "num_features") == c, ShapeError, "FoldBatchNorm: ", bn.name, " has ",
             attr_int(bn.attrs, "num_features"), " features but ", layer, " has ", c, " outputs");
  const int64_t per = w.numel() / c;
  std::vector<double> wv = w.contiguous().to_vector<double>();
  const bool affine = attr_bool(bn.attrs, "affine");
  const double eps = attr_float(bn.attrs, "eps");
  const auto gamma = affine ? entry(g, bn.name + ".weight", c, 1.0) : std::vector<double>(c, 1.0);
  const auto beta = affine ? entry(g, bn.name + ".bias", c, 0.0) : std::vector<double>(c, 0.0);
  const auto mean = entry(g, bn.name + ".running_mean", c, 0.0);
  const auto var = entry(g, bn.name + ".running_var", c, 1.0);
  std::vector<double> b = attr_bool(layer_node.attrs, "bias") ? entry(g, layer + ".bias", c, 0.0)
                                                              : std::vector<double>(c, 0.0);
  for (int64_t o = 0; o < c; ++o) {
    KILN_CHECK(var[o] + eps > 0, ValueError, "FoldBatchNorm: ", bn.name, ".running_var[", o, "] + eps is ",
               var[o] + eps, " (must be > 0)");
    const double s = gamma[o] / std::sqrt(var[o] + eps);
    for (int64_t i = 0; i < per; ++i) wv[o * per + i] *= s;
    b[o] = (b[o] - mean[o]) * s + beta[o];
  }
  const DType dt = w.dtype();
  const std::vector<PortRef> readers = g.consumers_of({bn_id, 0});
  const std::string bn_name = bn.name;  // bn dies with remove_node
  g.remove_node(bn_id);
  for (auto it = g.initial_state.begin(); it != g.initial_state.end();)
    it = state_key_node(it->first) == bn_name ? g.initial_state.erase(it) : std::next(it);
  for (const PortRef& r : readers) g.connect({layer_id, 0}, r);
  g.set_attr(layer_id, "bias", true);
  g.initial_state[layer + ".weight"] = Tensor::from_vector<double>(wv, w.shape()).to(dt);
  g.initial_state[layer + ".bias"] = Tensor::from_vector<double>(b, {c}).to(dt);
}

}  // namespace

bool FoldBatchNorm::apply(RewriteContext& ctx) const {
  Graph& g = ctx.graph;
  const Analysis analysis = analyze(g);
  for (NodeId id : g.topological_order()) {
    const Node& bn = g.node(id);
    if (bn.op != "BatchNorm2d" && bn.op != "BatchNorm1d") continue;
    const auto src = g.source_of({id, 0});
    if (!src) continue;
    const Node& layer = g.node(src->node);
    const std::string why = fold_blocker(g, analysis, layer, bn);
    if (!why.empty()) {
      const std::string line = "FoldBatchNorm: kept " + bn.name + ": " + why;
      if (std::find(ctx.log.begin(), ctx.log.end(), line) == ctx.log.end()) ctx.log.push_back(line);
      continue;
    }
    ctx.log.push_back("FoldBatchNorm: folded " + bn.name + " into " + layer.name);
    fold(g, Node(layer), Node(bn));
    return true;  // ids and references changed: the runner calls again
  }
  return false;
}

bool FuseActivation::apply(RewriteContext& ctx) const {
  const Graph& g = ctx.graph;
  bool changed = false;
  for (const Node& n : g.nodes()) {
    if ((n.op != "Conv2d" && n.op != "Linear") || ctx.fusion_of_producer(n.id)) continue;
    const auto reader = only_reader(g, n.id);
    if (!reader) continue;
    const Node& act = g.node(reader->node);
    if (act.op != "ReLU") continue;
    ctx.fusions.push_back({n.id, act.id, act.op});
    ctx.log.push_back("FuseActivation: " + n.name + " + " + act.name);
    changed = true;
  }
  return changed;
}

PassRunner inference_passes() {
  PassRunner r;
  r.add(std::make_unique<FoldBatchNorm>()).add(std::make_unique<FuseActivation>());
  return r;
}

}  // namespace kiln::graph
