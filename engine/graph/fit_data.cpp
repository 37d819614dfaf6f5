#include "engine/graph/fit_data.h"

#include "engine/core/error.h"
#include "engine/graph/analysis.h"

namespace kiln::graph {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// The attribute of `op` whose value is the width of its input, and which dim of the input gives it.
const char* width_attr(const std::string& op) {
  if (op == "Conv2d" || op == "ConvTranspose2d" || op == "Conv1d") return "in_channels";
  if (op == "Linear") return "in_features";
  if (op == "BatchNorm1d" || op == "BatchNorm2d") return "num_features";
  return nullptr;
}

// Records a change of `attr` of node `id` to `value` in `changes` (unless the value is refused or unchanged).
bool set_attr_noting(Graph& g, std::vector<std::string>& changes, NodeId id, const std::string& attr,
                     const AttrValue& value, std::string before, std::string after) {
  if (g.check_attr(id, attr, value)) return false;
  g.set_attr(id, attr, value);
  changes.push_back(g.node(id).op + " '" + g.node(id).name + "': " + attr + " " + before + " -> " + after);
  return true;
}

// The Linear that feeds an Output gives `classes` scores, and each layer's width follows what reaches it.
std::vector<std::string> fit_classes_and_widths(Graph& g, int64_t classes) {
  std::vector<std::string> changes;
  for (NodeId out : g.output_nodes())
    if (auto src = g.source_of(PortRef{out, 0})) {
      const Node& n = g.node(src->node);
      if (n.op != "Linear") continue;
      const auto* old = std::get_if<int64_t>(&n.attrs.at("out_features"));
      if (old && *old != classes)
        set_attr_noting(g, changes, n.id, "out_features", classes, std::to_string(*old), std::to_string(classes));
    }
  // Widths in topological order: each fix may change what reaches the next layer.
  const std::vector<NodeId> order = g.topological_order();
  for (NodeId id : order) {
    const char* attr = width_attr(g.node(id).op);
    if (!attr) continue;
    const auto src = g.source_of(PortRef{id, 0});
    if (!src) continue;
    const Analysis a = analyze(g);
    const std::optional<TensorType> t = a.type_of(*src);
    if (!t || t->shape.size() < 2) continue;
    // Conv and batch norm: the channel dim (1); Linear: the last.
    const int64_t width = g.node(id).op == "Linear" ? t->shape.back() : t->shape[1];
    if (width < 1) continue;  // symbolic
    const auto* old = std::get_if<int64_t>(&g.node(id).attrs.at(attr));
    if (old && *old != width) set_attr_noting(g, changes, id, attr, width, std::to_string(*old), std::to_string(width));
  }
  return changes;
}

// Sets the Input's dtype and per-sample shape.
void fit_input(Graph& g, std::vector<std::string>& changes, NodeId input, const std::string& dtype,
               const std::vector<int64_t>& sample) {
  const Node& in = g.node(input);
  if (auto it = in.attrs.find("dtype"); it != in.attrs.end()) {
    const auto* old = std::get_if<std::string>(&it->second);
    if (old && *old != dtype) set_attr_noting(g, changes, input, "dtype", dtype, *old, dtype);
  }
  if (auto it = g.node(input).attrs.find("shape"); it != g.node(input).attrs.end()) {
    const auto* old = std::get_if<std::vector<int64_t>>(&it->second);
    if (!old || *old != sample)
      set_attr_noting(g, changes, input, "shape", sample, old ? shape_text(*old) : "?", shape_text(sample));
  }
}

}  // namespace

std::vector<std::string> fit_graph_to_data(Graph& g, const std::vector<int64_t>& sample, int64_t classes) {
  const std::vector<NodeId> inputs = g.input_nodes();
  KILN_CHECK(inputs.size() == 1, ValueError, "fitting a graph to a dataset needs exactly one Input node, it has ",
             inputs.size());
  KILN_CHECK(!sample.empty() && classes >= 1, ValueError, "fitting a graph to a dataset: bad sample shape ",
             shape_text(sample), " or class count ", classes);
  for (int64_t d : sample) KILN_CHECK(d >= 1, ValueError, "fitting a graph to a dataset: bad sample shape ", shape_text(sample));
  std::vector<std::string> changes;
  fit_input(g, changes, inputs[0], "f32", sample);
  std::vector<std::string> rest = fit_classes_and_widths(g, classes);
  changes.insert(changes.end(), rest.begin(), rest.end());
  return changes;
}

std::vector<std::string> fit_graph_to_text(Graph& g, int64_t max_length, int64_t vocab_size, int64_t classes) {
  const std::vector<NodeId> inputs = g.input_nodes();
  KILN_CHECK(inputs.size() == 1, ValueError, "fitting a graph to a dataset needs exactly one Input node, it has ",
             inputs.size());
  KILN_CHECK(max_length >= 1 && vocab_size >= 2 && classes >= 1, ValueError,
             "fitting a graph to a text dataset: bad max length ", max_length, ", vocabulary size ", vocab_size,
             " or class count ", classes);
  std::vector<std::string> changes;
  fit_input(g, changes, inputs[0], "i64", {max_length});
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    const char* attr = n.op == "Embedding" ? "num_embeddings" : n.op == "PositionalEmbedding" ? "max_length" : nullptr;
    if (!attr) continue;
    const int64_t value = n.op == "Embedding" ? vocab_size : max_length;
    const auto it = n.attrs.find(attr);
    const auto* old = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
    if (!old || *old != value)
      set_attr_noting(g, changes, id, attr, value, old ? std::to_string(*old) : "?", std::to_string(value));
  }
  std::vector<std::string> rest = fit_classes_and_widths(g, classes);
  changes.insert(changes.end(), rest.begin(), rest.end());
  return changes;
}

}  // namespace kiln::graph
