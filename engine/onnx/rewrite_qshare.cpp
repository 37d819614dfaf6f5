// ShareQuantizeLinear (rewrite.h): two QuantizeLinear nodes of one value with equal one-value scale
// and zero point (of one type) compute the same tensor, so the later one goes and its readers read
// the earlier one's output. Kiln's QDQ export writes such pairs where two int8 layers read one
// value with the same calibration (a ResNet stage's first block: conv1 and the downsample conv).
// A later node whose output is a graph output stays (its name is the model's), and so does one read
// inside a subgraph.
#include <algorithm>

#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

// The (scale, zero point, zero point type) of a per-tensor QuantizeLinear with initializer
// parameters, or nullopt.
struct Params {
  double scale = 0;
  int64_t zero_point = 0;
  DType type = DType::u8;
  bool operator==(const Params& o) const { return scale == o.scale && zero_point == o.zero_point && type == o.type; }
};

std::optional<Params> params_of(const Graph& g, const Node& q) {
  if (!q.domain.empty() || q.op_type != "QuantizeLinear" || q.inputs.size() != 3 || q.outputs.size() != 1) return std::nullopt;
  auto s = g.initializers.find(q.inputs[1]);
  auto z = g.initializers.find(q.inputs[2]);
  if (s == g.initializers.end() || z == g.initializers.end() || s->second.numel() != 1 || z->second.numel() != 1 ||
      !is_floating(s->second.dtype()))
    return std::nullopt;
  return Params{s->second.to(DType::f64).to_vector<double>()[0], z->second.to(DType::i64).to_vector<int64_t>()[0],
                z->second.dtype()};
}

// Whether every reader of `value` is a main-graph node: not a graph output, none in a subgraph
// (If / Loop bodies are not renamed).
bool replaceable(const Graph& g, const std::string& value) {
  if (std::any_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& v) { return v.name == value; })) return false;
  int main_readers = 0;
  for (const Node& n : g.nodes) main_readers += static_cast<int>(std::count(n.inputs.begin(), n.inputs.end(), value));
  const std::map<std::string, int> all = reader_counts(g);
  return !all.count(value) || all.at(value) == main_readers;
}

class ShareQuantizeLinear : public OnnxPass {
 public:
  std::string name() const override { return "ShareQuantizeLinear"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const std::optional<Params> p = params_of(g, g.nodes[i]);
      if (!p) continue;
      for (size_t j = i + 1; j < g.nodes.size();) {
        const Node& other = g.nodes[j];
        const std::optional<Params> o = params_of(g, other);
        if (!o || !(*o == *p) || other.inputs[0] != g.nodes[i].inputs[0] || !replaceable(g, other.outputs[0])) {
          ++j;
          continue;
        }
        const std::string from = other.outputs[0], to = g.nodes[i].outputs[0];
        ctx.log.push_back("ShareQuantizeLinear: '" + other.name + "' is '" + g.nodes[i].name + "' (same input, scale and zero point)");
        g.nodes.erase(g.nodes.begin() + static_cast<long>(j));
        for (Node& n : g.nodes)
          for (std::string& in : n.inputs)
            if (in == from) in = to;
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<OnnxPass> make_share_quantize_linear() { return std::make_unique<ShareQuantizeLinear>(); }

}  // namespace kiln::onnx
