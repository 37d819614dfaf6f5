#include "engine/onnx/fold.h"

#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

namespace {

constexpr int64_t kMaxFoldElements = int64_t(1) << 20;

bool deterministic(const Node& n) {
  static const std::set<std::string> random{"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike",
                                            "Bernoulli", "Multinomial", "Dropout"};
  static const std::set<std::string> control{"If", "Loop", "Scan", "SequenceMap"};
  if (!n.domain.empty() || random.count(n.op_type) || control.count(n.op_type)) return false;
  if (n.op_type.rfind("Sequence", 0) == 0 || n.op_type.rfind("Optional", 0) == 0) return false;
  for (const auto& [name, a] : n.attributes)
    if (a.g || !a.graphs.empty()) return false;
  return onnx_ops().count(n.op_type) > 0;
}

// Names read by the nodes of `g` and of its subgraphs (outer-scope reads included).
void collect_reads(const Graph& g, std::set<std::string>& out) {
  for (const Node& n : g.nodes) {
    for (const std::string& i : n.inputs)
      if (!i.empty()) out.insert(i);
    for (const auto& [name, a] : n.attributes) {
      if (a.g) collect_reads(*a.g, out);
      for (const auto& sub : a.graphs) collect_reads(*sub, out);
    }
  }
}

// Zero inputs with every symbolic or unknown dimension `sym`; false when an input cannot be made.
bool make_feed(const Model& m, int64_t sym, std::map<std::string, Tensor>& feed) {
  for (const ValueInfo& v : m.graph.inputs) {
    if (v.is_sequence || v.is_optional || !v.has_shape || v.elem_type == 0) return false;
    DType dt;
    try {
      dt = dtype_of_onnx(v.elem_type, v.name);
    } catch (const Error&) {
      return false;
    }
    Shape shape;
    for (const Dim& d : v.shape) shape.push_back(d.known() ? d.value : sym);
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d > 0 && n > kMaxFoldElements * 64 / d) return false;  // too big to run for folding
      n *= d;
    }
    feed[v.name] = Tensor::zeros(shape, dt);
  }
  return true;
}

bool same(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.numel() > kMaxFoldElements) return false;
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i])) return false;  // NaN never folds
  return true;
}

}  // namespace

bool input_shapes_known(const Model& model) {
  for (const ValueInfo& v : model.graph.inputs) {
    if (!v.has_shape) return false;
    for (const Dim& d : v.shape)
      if (!d.known()) return false;
  }
  return true;
}

FoldReport fold_shape_subgraphs(Model& model) {
  FoldReport report;
  Graph& g = model.graph;
  // the cone
  std::set<std::string> cone_values;
  for (const auto& [name, t] : g.initializers) cone_values.insert(name);
  std::vector<bool> in_cone(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    bool shape_of = (n.op_type == "Shape" || n.op_type == "Size") && n.domain.empty();
    bool ok = deterministic(n);
    if (ok && !shape_of)
      for (const std::string& i : n.inputs) ok &= i.empty() || cone_values.count(i) > 0;
    if (!ok) continue;
    in_cone[k] = true;
    for (const std::string& o : n.outputs)
      if (!o.empty()) cone_values.insert(o);
  }
  // Without a Shape or Size node nothing can depend on the symbolic dimensions, and the runs
  // (which cost two inferences) are not worth it: Constant nodes run as cheaply as initializers.
  bool any = false;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    any |= in_cone[k] && (g.nodes[k].op_type == "Shape" || g.nodes[k].op_type == "Size");
  if (!any || !find_unsupported(model).empty()) return report;
  // two runs, recording the cone's values; one when every input dimension is known (both runs
  // would be the same)
  std::map<std::string, Tensor> seen[2];
  const int runs = input_shapes_known(model) ? 1 : 2;
  try {
    Session session(model);
    for (int r = 0; r < runs; ++r) {
      std::map<std::string, Tensor> feed;
      if (!make_feed(model, r == 0 ? 2 : 3, feed)) return report;
      session.run(feed, [&](const Node& n, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
        for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i)
          if (!n.outputs[i].empty() && cone_values.count(n.outputs[i]) && out[i].defined() &&
              out[i].numel() <= kMaxFoldElements)
            seen[r][n.outputs[i]] = out[i];
      });
    }
  } catch (const std::exception&) {
    return report;  // a model that does not run on zeros keeps its nodes
  }
  // fold: a cone node all of whose outputs are equal in both runs
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!in_cone[k]) continue;
    const Node& n = g.nodes[k];
    bool all = true;
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      auto a = seen[0].find(o), b = seen[runs - 1].find(o);
      all &= a != seen[0].end() && b != seen[runs - 1].end() && same(a->second, b->second);
    }
    if (!all) continue;
    for (const std::string& o : n.outputs)
      if (!o.empty()) {
        g.initializers[o] = seen[0][o].contiguous();
        ++report.folded_values;
      }
    drop[k] = true;
  }
  // nodes of the cone whose outputs nobody reads any more (the Shape nodes that fed folded chains)
  for (bool changed = true; changed;) {
    changed = false;
    Graph kept;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (!drop[k]) kept.nodes.push_back(g.nodes[k]);
    std::set<std::string> reads;
    collect_reads(kept, reads);
    for (const ValueInfo& v : g.outputs) reads.insert(v.name);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      if (drop[k] || !in_cone[k]) continue;
      bool read = false;
      for (const std::string& o : g.nodes[k].outputs) read |= !o.empty() && reads.count(o);
      if (!read) drop[k] = changed = true;
    }
  }
  std::vector<Node> nodes;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (drop[k]) ++report.removed_nodes;
    else nodes.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(nodes);
  // initializers that only fed removed nodes stay: they are cheap and may be graph outputs
  return report;
}

}  // namespace kiln::onnx
