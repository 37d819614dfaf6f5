#include "engine/onnx/rewrite.h"

#include <cmath>

#include "engine/core/error.h"

namespace kiln::onnx {
namespace {

void count_readers(const Graph& g, std::map<std::string, int>& n) {
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs)
      if (!in.empty()) ++n[in];
    for (const auto& [name, a] : node.attributes) {
      if (a.g) count_readers(*a.g, n);
      for (const auto& sub : a.graphs)
        if (sub) count_readers(*sub, n);
    }
  }
  for (const ValueInfo& o : g.outputs) ++n[o.name];
}

}  // namespace

OnnxPassRunner& OnnxPassRunner::add(std::unique_ptr<OnnxPass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<std::string> OnnxPassRunner::run(Graph& graph, int max_rounds) const {
  OnnxRewriteContext ctx{graph, {}};
  for (int round = 0; round < max_rounds; ++round) {
    bool changed = false;
    for (const auto& p : passes_) changed |= p->apply(ctx);
    if (!changed) break;
  }
  return ctx.log;
}

OnnxPassRunner inference_passes() {
  OnnxPassRunner r;
  r.add(make_share_quantize_linear()).add(make_fuse_qdq()).add(make_fuse_qlinear()).add(make_fuse_conv_batch_norm()).add(make_fuse_gelu());
  r.add(make_fuse_silu()).add(make_fuse_conv_activation()).add(make_fuse_add_quantize()).add(make_conv_on_fused_kernel());
  return r;
}

std::map<std::string, int> reader_counts(const Graph& g) {
  std::map<std::string, int> n;
  count_readers(g, n);
  return n;
}

std::optional<double> scalar_constant(const Graph& g, const std::string& name) {
  auto one = [](const Tensor& t) -> std::optional<double> {
    if (!t.defined() || t.numel() != 1 || !is_floating(t.dtype())) return std::nullopt;
    return t.to_vector<double>()[0];
  };
  if (auto it = g.initializers.find(name); it != g.initializers.end()) return one(it->second);
  for (const Node& n : g.nodes) {
    if (n.op_type != "Constant" || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] != name) continue;
    if (auto v = n.attributes.find("value"); v != n.attributes.end() && v->second.type == Attribute::Type::Tensor)
      return one(v->second.t);
    if (auto v = n.attributes.find("value_float"); v != n.attributes.end() && v->second.type == Attribute::Type::Float)
      return v->second.f;
    return std::nullopt;
  }
  return std::nullopt;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)); }

}  // namespace kiln::onnx
