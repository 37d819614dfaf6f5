// FuseConvBatchNorm and FuseConvActivation (rewrite.h): the convolution patterns of CNNs, after
// onnxruntime's conv_bn_fusion.cc and conv_activation_fusion.cc / conv_add_act_fusion.cc.
//
// FuseConvBatchNorm: Conv(x, W[, b]) -> BatchNormalization(scale, B, mean, var; epsilon) in its
// inference form (training_mode 0, one output) with W and b FLOAT initializers and the four BN
// parameters constant (initializers or Constant nodes, [Cout]) becomes one Conv(x, W', b') with,
// per output channel c, s = scale[c] / sqrt(var[c] + epsilon) and
//   W'[c] = W[c] * s,   b'[c] = (b[c] - mean[c]) * s + B[c]     (b = 0 when absent)
// computed in double and stored as new FLOAT initializers (names that collide with none). The
// Conv's output must have the BN as its only reader. The arithmetic is the BN's own in exact
// arithmetic; in float the outputs differ by rounding (~1e-7 relative).
//
// FuseConvActivation: a 2-d Conv (FLOAT 4-d weight initializer, no auto_pad, symmetric pads) whose
// output alone feeds
//   A | Add(y, z) | Add(y, z) -> A,   A = Relu | Clip(0, 6) | HardSwish | kiln.fused.SiLU (FuseSiLU)
// becomes kiln.fused.Conv(x, W, b or "", [z]) with the Conv's attributes and activation "Relu",
// "Clip" (clip_min 0, clip_max 6), "HardSwish", "SiLU" or "": one convolution whose epilogue adds
// z and applies the activation (engine/core/ops.h conv2d_fused; oneDNN post-ops on the CPU). Each intermediate
// value must have that one reader. z of Add must not be a constant (a constant there is a bias
// broadcast over the output, not a residual). That z has exactly the output's shape is checked
// when the node runs (the graph carries no shapes for its inner values): where it does not, the
// node computes conv, a broadcasting Add and the activation, the unfused graph's arithmetic.
#include <cmath>
#include <set>

#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

struct Lookup {
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;  // main-graph readers
  std::map<std::string, int> readers;                    // all readers (rewrite.h reader_counts)
  explicit Lookup(const Graph& g) : readers(reader_counts(g)) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& o : g.nodes[i].outputs)
        if (!o.empty()) producer[o] = i;
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) consumers[in].push_back(i);
    }
  }
  int readers_of(const std::string& v) const {
    auto it = readers.find(v);
    return it == readers.end() ? 0 : it->second;
  }
  // The node that alone reads v (no other reader anywhere, not a graph output), or -1.
  long only_reader(const std::string& v) const {
    auto c = consumers.find(v);
    if (readers_of(v) != 1 || c == consumers.end() || c->second.size() != 1) return -1;
    return static_cast<long>(c->second[0]);
  }
};

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// The value of `name` when it is constant: an initializer or a Constant node's `value`; else undefined.
Tensor constant_tensor(const Graph& g, const std::string& name) {
  if (auto it = g.initializers.find(name); it != g.initializers.end()) return it->second;
  for (const Node& n : g.nodes) {
    if (!is_op(n, "Constant") || n.outputs.size() != 1 || n.outputs[0] != name) continue;
    auto v = n.attributes.find("value");
    return v != n.attributes.end() && v->second.type == Attribute::Type::Tensor ? v->second.t : Tensor();
  }
  return {};
}

// Every value name in g and its subgraphs, initializers and graph inputs and outputs included.
void collect_names(const Graph& g, std::set<std::string>& names) {
  for (const auto& [name, t] : g.initializers) names.insert(name);
  for (const ValueInfo& v : g.inputs) names.insert(v.name);
  for (const ValueInfo& v : g.outputs) names.insert(v.name);
  for (const Node& n : g.nodes) {
    names.insert(n.inputs.begin(), n.inputs.end());
    names.insert(n.outputs.begin(), n.outputs.end());
    for (const auto& [k, a] : n.attributes) {
      if (a.g) collect_names(*a.g, names);
      for (const auto& sub : a.graphs)
        if (sub) collect_names(*sub, names);
    }
  }
}

// `hint`, or hint_1, hint_2 ... the first that names nothing in g.
std::string fresh_name(const Graph& g, const std::string& hint) {
  std::set<std::string> names;
  collect_names(g, names);
  std::string name = hint;
  for (int k = 1; names.count(name); ++k) name = hint + "_" + std::to_string(k);
  return name;
}

int64_t int_attr(const Node& n, const std::string& name, int64_t def) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? def : it->second.i;
}

// Drops the initializers nothing reads any more (a folded Conv's old weight and the BN's parameters).
void remove_unread_initializers(Graph& g) {
  const std::map<std::string, int> readers = reader_counts(g);
  std::erase_if(g.initializers, [&](const auto& kv) { return !readers.count(kv.first); });
}

// Why the Conv at `conv` and the BatchNormalization `bn` reading it do not fold, "" when they do.
std::string bn_mismatch(const Graph& g, const Lookup& ix, const Node& conv, const Node& bn) {
  if (ix.readers_of(conv.outputs[0]) != 1) return "the Conv's output has " + std::to_string(ix.readers_of(conv.outputs[0])) + " readers";
  size_t outputs = 0;
  for (const std::string& o : bn.outputs) outputs += !o.empty();
  if (outputs != 1 || bn.outputs[0].empty()) return "it has " + std::to_string(outputs) + " outputs (training mode)";
  if (int_attr(bn, "training_mode", 0) != 0) return "it is in training mode";
  if (bn.inputs.size() != 5) return "it has " + std::to_string(bn.inputs.size()) + " inputs";
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return "the Conv has no weight";
  const Tensor w = constant_tensor(g, conv.inputs[1]);
  if (!w.defined() || !g.initializers.count(conv.inputs[1]) || w.dtype() != DType::f32 || w.dim() < 3)
    return "the Conv's weight is not a FLOAT initializer";
  const int64_t cout = w.size(0);
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    const Tensor b = constant_tensor(g, conv.inputs[2]);
    if (!b.defined() || !g.initializers.count(conv.inputs[2]) || b.dtype() != DType::f32 || b.numel() != cout)
      return "the Conv's bias is not a FLOAT initializer [" + std::to_string(cout) + "]";
  }
  static const char* what[] = {"", "scale", "B", "mean", "var"};
  for (size_t k = 1; k < 5; ++k) {
    const Tensor t = constant_tensor(g, bn.inputs[k]);
    if (!t.defined() || !is_floating(t.dtype())) return std::string("its ") + what[k] + " is not constant";
    if (t.numel() != cout) return std::string("its ") + what[k] + " has " + std::to_string(t.numel()) + " values for " + std::to_string(cout) + " channels";
  }
  return "";
}

class FuseConvBatchNorm : public OnnxPass {
 public:
  std::string name() const override { return "FuseConvBatchNorm"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!is_op(g.nodes[i], "BatchNormalization") || g.nodes[i].inputs.empty()) continue;
      const Lookup ix(g);
      auto p = ix.producer.find(g.nodes[i].inputs[0]);
      if (p == ix.producer.end() || !is_op(g.nodes[p->second], "Conv")) continue;
      const size_t ci = p->second;
      const Node& conv = g.nodes[ci];
      const Node& bn = g.nodes[i];
      if (const std::string why = bn_mismatch(g, ix, conv, bn); !why.empty()) {
        ctx.log.push_back("FuseConvBatchNorm: left '" + bn.name + "' after '" + conv.name + "' unfolded: " + why);
        continue;
      }
      const Tensor w = g.initializers.at(conv.inputs[1]);
      const int64_t cout = w.size(0), per = w.numel() / cout;
      std::vector<double> wv = w.to(DType::f64).contiguous().to_vector<double>();
      std::vector<double> bv(static_cast<size_t>(cout), 0.0);
      if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) bv = g.initializers.at(conv.inputs[2]).to(DType::f64).to_vector<double>();
      auto values = [&](size_t k) { return constant_tensor(g, bn.inputs[k]).to(DType::f64).contiguous().to_vector<double>(); };
      const std::vector<double> scale = values(1), shift = values(2), mean = values(3), var = values(4);
      const double eps = [&] {
        auto it = bn.attributes.find("epsilon");
        return it == bn.attributes.end() ? 1e-5 : it->second.f;
      }();
      std::vector<float> wf(wv.size()), bf(static_cast<size_t>(cout));
      for (int64_t c = 0; c < cout; ++c) {
        const auto cu = static_cast<size_t>(c);
        const double s = scale[cu] / std::sqrt(var[cu] + eps);
        for (int64_t k = 0; k < per; ++k) wf[static_cast<size_t>(c * per + k)] = static_cast<float>(wv[static_cast<size_t>(c * per + k)] * s);
        bf[cu] = static_cast<float>((bv[cu] - mean[cu]) * s + shift[cu]);
      }
      Node fused = conv;
      fused.inputs.resize(3);
      fused.inputs[1] = fresh_name(g, conv.inputs[1] + "_bn_folded");
      g.initializers[fused.inputs[1]] = Tensor::from_vector(wf, w.shape());
      fused.inputs[2] = fresh_name(g, (conv.name.empty() ? conv.outputs[0] : conv.name) + "_bias_bn_folded");
      g.initializers[fused.inputs[2]] = Tensor::from_vector(bf, {cout});
      fused.outputs = bn.outputs;
      ctx.log.push_back("FuseConvBatchNorm: '" + conv.name + "' + '" + bn.name + "' -> Conv (BatchNormalization folded into its weight and bias)");
      g.nodes[i] = std::move(fused);
      g.nodes.erase(g.nodes.begin() + static_cast<long>(ci));
      --i;  // the node after the BN is now at i
      changed = true;
    }
    if (changed) remove_unread_initializers(g);
    return changed;
  }
};

// The activation node n applies, when it is one the fused Conv has: "Relu", "HardSwish", "SiLU"
// (kiln.fused.SiLU, from FuseSiLU), or "Clip" for constant bounds 0 and 6 (attributes min / max
// before opset 11, inputs since). "" otherwise, with `why` set for a Clip of other bounds.
std::string activation_of(const Graph& g, const Node& n, std::string& why) {
  if (is_op(n, "Relu")) return "Relu";
  if (is_op(n, "HardSwish")) return "HardSwish";
  if (n.domain == kFusedDomain && n.op_type == "SiLU") return "SiLU";
  if (!is_op(n, "Clip")) return "";
  std::optional<double> lo, hi;
  if (n.attributes.count("min") || n.attributes.count("max")) {
    if (auto it = n.attributes.find("min"); it != n.attributes.end()) lo = it->second.f;
    if (auto it = n.attributes.find("max"); it != n.attributes.end()) hi = it->second.f;
  } else {
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) lo = scalar_constant(g, n.inputs[1]);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) hi = scalar_constant(g, n.inputs[2]);
  }
  if (!lo || !hi || std::abs(*lo) > 1e-12 || !near(*hi, 6.0)) {
    why = "its Clip '" + n.name + "' is not a constant clip to [0, 6]";
    return "";
  }
  return "Clip";
}

// Why the Conv does not run as the fused kernel (2-d, FLOAT weight initializer, explicit
// symmetric pads), "" when it does.
std::string conv_mismatch(const Graph& g, const Node& conv) {
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return "it has no weight";
  auto w = g.initializers.find(conv.inputs[1]);
  if (w == g.initializers.end() || w->second.dtype() != DType::f32 || w->second.dim() != 4)
    return "its weight is not a FLOAT 4-d initializer (a 2-d convolution)";
  if (auto it = conv.attributes.find("auto_pad"); it != conv.attributes.end() && !it->second.s.empty() && it->second.s != "NOTSET")
    return "it uses auto_pad " + it->second.s;
  if (auto it = conv.attributes.find("pads"); it != conv.attributes.end()) {
    const std::vector<int64_t>& p = it->second.ints;
    if (p.size() != 4 || p[0] != p[2] || p[1] != p[3] || p[0] < 0 || p[1] < 0) return "its pads are not symmetric";
  }
  return "";
}

Attribute string_attr(const std::string& name, const std::string& v) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::String;
  a.s = v;
  return a;
}

Attribute float_attr(const std::string& name, double v) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::Float;
  a.f = v;
  return a;
}

// kiln.fused.Conv of `conv` (its name, attributes, x, W and b or "") with activation `act`;
// the caller adds the residual input and the outputs.
Node fused_conv(const Node& conv, const std::string& act) {
  Node fused;
  fused.op_type = "Conv";
  fused.domain = kFusedDomain;
  fused.name = conv.name;
  fused.attributes = conv.attributes;
  fused.attributes["activation"] = string_attr("activation", act);
  fused.inputs = {conv.inputs[0], conv.inputs[1], conv.inputs.size() > 2 ? conv.inputs[2] : ""};
  return fused;
}

class FuseConvActivation : public OnnxPass {
 public:
  std::string name() const override { return "FuseConvActivation"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!is_op(g.nodes[i], "Conv") || g.nodes[i].outputs.size() != 1) continue;
      const Lookup ix(g);
      const Node& conv = g.nodes[i];
      const std::string& y = conv.outputs[0];
      auto skip = [&](const std::string& why) { ctx.log.push_back("FuseConvActivation: left '" + conv.name + "' unfused: " + why); };
      // Only a Conv followed by something the kernel could absorb is a candidate.
      auto c = ix.consumers.find(y);
      bool follower = false;
      if (c != ix.consumers.end())
        for (size_t k : c->second) {
          std::string ignored;
          follower |= is_op(g.nodes[k], "Add") || is_op(g.nodes[k], "Clip") || !activation_of(g, g.nodes[k], ignored).empty();
        }
      if (!follower) continue;
      if (const long r = ix.only_reader(y); r < 0) {
        skip("its output '" + y + "' has " + std::to_string(ix.readers_of(y)) + " readers");
        continue;
      }
      if (const std::string why = conv_mismatch(g, conv); !why.empty()) { skip(why); continue; }
      std::set<size_t> drop{i};
      size_t next = static_cast<size_t>(ix.only_reader(y));
      std::string residual, why;
      if (is_op(g.nodes[next], "Add")) {
        const Node& add = g.nodes[next];
        if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) { skip("its Add adds it to itself"); continue; }
        residual = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
        if (constant_tensor(g, residual).defined()) {
          skip("the other operand of its Add '" + add.name + "' is a constant (broadcast), not a residual");
          continue;
        }
        drop.insert(next);
        const long after = ix.only_reader(add.outputs[0]);
        if (after < 0) {
          next = g.nodes.size();  // the Add ends the pattern
        } else {
          next = static_cast<size_t>(after);
        }
      }
      std::string act;
      if (next < g.nodes.size()) act = activation_of(g, g.nodes[next], why);
      if (!act.empty()) drop.insert(next);
      if (act.empty() && residual.empty()) { skip(why.empty() ? "nothing to fuse" : why); continue; }
      Node fused = fused_conv(conv, act);
      if (act == "Clip") {
        fused.attributes["clip_min"] = float_attr("clip_min", 0.0);
        fused.attributes["clip_max"] = float_attr("clip_max", 6.0);
      }
      if (!residual.empty()) fused.inputs.push_back(residual);
      fused.outputs = g.nodes[*drop.rbegin()].outputs;
      std::string parts;
      for (size_t k : drop) parts += (parts.empty() ? "'" : " + '") + g.nodes[k].name + "'";
      ctx.log.push_back("FuseConvActivation: " + parts + " -> Conv" + (residual.empty() ? "" : " + residual") +
                        (act.empty() ? "" : " + " + act) + (why.empty() ? "" : " (" + why + ")"));
      const size_t at = *drop.rbegin();
      g.nodes[at] = std::move(fused);
      for (auto it = std::next(drop.rbegin()); it != drop.rend(); ++it) g.nodes.erase(g.nodes.begin() + static_cast<long>(*it));
      --i;  // the node after the removed Conv is now at i
      changed = true;
    }
    return changed;
  }
};

// ConvOnFusedKernel: every 2-d Conv the fused kernel takes (conv_mismatch) and FuseConvActivation
// left becomes kiln.fused.Conv with no epilogue, so that all of a CNN's convolutions run on the
// one NHWC inference kernel and the activations between them stay channels last (Note [Channels
// last] in engine/core/ops_internal.h), as onnxruntime's NCHWc transformer moves every Conv to
// its blocked layout. A convolution read by an activation the kernel lacks, or a projection read by
// the next block's Add, otherwise ran on conv2d's kernel in oneDNN's blocked layout, with a reorder before
// and after it.
class ConvOnFusedKernel : public OnnxPass {
 public:
  std::string name() const override { return "ConvOnFusedKernel"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (Node& conv : g.nodes) {
      if (!is_op(conv, "Conv") || !conv_mismatch(g, conv).empty()) continue;
      Node fused = fused_conv(conv, "");
      fused.outputs = conv.outputs;
      ctx.log.push_back("ConvOnFusedKernel: '" + conv.name + "' -> Conv (no epilogue)");
      conv = std::move(fused);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<OnnxPass> make_conv_on_fused_kernel() { return std::make_unique<ConvOnFusedKernel>(); }
std::unique_ptr<OnnxPass> make_fuse_conv_batch_norm() { return std::make_unique<FuseConvBatchNorm>(); }
std::unique_ptr<OnnxPass> make_fuse_conv_activation() { return std::make_unique<FuseConvActivation>(); }

}  // namespace kiln::onnx
