// FuseSiLU and FuseGelu (rewrite.h): the activations PyTorch's exporter writes as chains of
// elementwise nodes, each chain -> one kiln.fused node that runs the engine's one-pass kernel.
#include <cmath>
#include <set>

#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

// The main graph's nodes by the values they produce and read.
struct Index {
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;  // main-graph readers only
  std::map<std::string, int> readers;                    // all readers (rewrite.h reader_counts)
  explicit Index(const Graph& g) : readers(reader_counts(g)) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& o : g.nodes[i].outputs)
        if (!o.empty()) producer[o] = i;
      for (const std::string& in : g.nodes[i].inputs)
        if (!in.empty()) consumers[in].push_back(i);
    }
  }
  // The node producing `name` when it is an ai.onnx `op` node, else -1.
  long made_by(const Graph& g, const std::string& name, const char* op) const {
    auto it = producer.find(name);
    if (it == producer.end()) return -1;
    const Node& n = g.nodes[it->second];
    return n.domain.empty() && n.op_type == op ? static_cast<long>(it->second) : -1;
  }
  // The one node reading `name`, when that is its only reader anywhere and an ai.onnx `op`; else -1.
  long only_reader(const Graph& g, const std::string& name, const char* op) const {
    auto r = readers.find(name);
    auto c = consumers.find(name);
    if (r == readers.end() || r->second != 1 || c == consumers.end() || c->second.size() != 1) return -1;
    const Node& n = g.nodes[c->second[0]];
    return n.domain.empty() && n.op_type == op ? static_cast<long>(c->second[0]) : -1;
  }
  int readers_of(const std::string& name) const {
    auto it = readers.find(name);
    return it == readers.end() ? 0 : it->second;
  }
};

// A binary node's operand other than `one` (which it reads), or "" when it reads `one` twice
// or not at all.
std::string other_operand(const Node& n, const std::string& one) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return "";
  if (n.inputs[0] == one && n.inputs[1] != one) return n.inputs[1];
  if (n.inputs[1] == one && n.inputs[0] != one) return n.inputs[0];
  return "";
}

bool is_scalar(const Graph& g, const std::string& name, double value) {
  std::optional<double> v = scalar_constant(g, name);
  return v && near(*v, value);
}

// Replaces the nodes `drop` by one fused node at the position of the last of them.
void replace(Graph& g, const std::set<size_t>& drop, Node fused) {
  size_t at = *drop.rbegin();
  g.nodes[at] = std::move(fused);
  for (auto it = std::next(drop.rbegin()); it != drop.rend(); ++it)
    g.nodes.erase(g.nodes.begin() + static_cast<long>(*it));
}

Node fused_node(const char* op, const std::string& name, const std::string& x, const std::string& y) {
  Node n;
  n.op_type = op;
  n.domain = kFusedDomain;
  n.name = name;
  n.inputs = {x};
  n.outputs = {y};
  return n;
}

class FuseSiLU : public OnnxPass {
 public:
  std::string name() const override { return "FuseSiLU"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& sig = g.nodes[i];
      if (!sig.domain.empty() || sig.op_type != "Sigmoid" || sig.inputs.size() != 1 || sig.outputs.size() != 1) continue;
      Index ix(g);
      const std::string& x = sig.inputs[0];
      const std::string& s = sig.outputs[0];
      long mul = -1;
      for (size_t c : ix.consumers[s])
        if (g.nodes[c].domain.empty() && g.nodes[c].op_type == "Mul" && other_operand(g.nodes[c], s) == x)
          mul = static_cast<long>(c);
      if (mul < 0) continue;  // a plain sigmoid
      if (ix.readers_of(s) != 1) {
        ctx.log.push_back("FuseSiLU: left '" + sig.name + "' unfused: its output '" + s + "' has " +
                          std::to_string(ix.readers_of(s)) + " readers");
        continue;
      }
      const Node& m = g.nodes[static_cast<size_t>(mul)];
      ctx.log.push_back("FuseSiLU: '" + sig.name + "' + '" + m.name + "' -> SiLU");
      replace(g, {i, static_cast<size_t>(mul)}, fused_node("SiLU", m.name, x, m.outputs[0]));
      changed = true;
      --i;  // the node now at i is the one after the removed Sigmoid
    }
    return changed;
  }
};

class FuseGelu : public OnnxPass {
 public:
  std::string name() const override { return "FuseGelu"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!g.nodes[i].domain.empty() || g.nodes[i].op_type != "Erf" || g.nodes[i].inputs.size() != 1) continue;
      Index ix(g);
      const Node& erf = g.nodes[i];
      auto skip = [&](const std::string& why) { ctx.log.push_back("FuseGelu: left '" + erf.name + "' unfused: " + why); };
      // d = x / sqrt(2) or x * (1 / sqrt(2))
      const std::string& d = erf.inputs[0];
      std::string x;
      if (long div = ix.made_by(g, d, "Div"); div >= 0) {
        const Node& n = g.nodes[static_cast<size_t>(div)];
        if (n.inputs.size() == 2 && is_scalar(g, n.inputs[1], std::sqrt(2.0))) x = n.inputs[0];
      } else if (long mul = ix.made_by(g, d, "Mul"); mul >= 0) {
        const Node& n = g.nodes[static_cast<size_t>(mul)];
        for (int k = 0; k < 2 && n.inputs.size() == 2; ++k)
          if (is_scalar(g, n.inputs[static_cast<size_t>(k)], 1 / std::sqrt(2.0))) x = n.inputs[static_cast<size_t>(1 - k)];
      }
      if (x.empty()) continue;  // an Erf of something else
      if (ix.readers_of(d) != 1) { skip("'" + d + "' has other readers"); continue; }
      const size_t d_node = ix.producer.at(d);
      // a = erf + 1
      long add = ix.only_reader(g, erf.outputs[0], "Add");
      if (add < 0 || !is_scalar(g, other_operand(g.nodes[static_cast<size_t>(add)], erf.outputs[0]), 1.0)) {
        skip("its output is not read by one Add of 1");
        continue;
      }
      const std::string& a = g.nodes[static_cast<size_t>(add)].outputs[0];
      long r = ix.only_reader(g, a, "Mul");
      if (r < 0) { skip("'" + a + "' is not read by one Mul"); continue; }
      const Node& rn = g.nodes[static_cast<size_t>(r)];
      const std::string partner = other_operand(rn, a);
      std::set<size_t> drop{d_node, i, static_cast<size_t>(add), static_cast<size_t>(r)};
      std::string y;
      if (partner == x) {  // (x * a) * 0.5
        long half = ix.only_reader(g, rn.outputs[0], "Mul");
        if (half >= 0 && is_scalar(g, other_operand(g.nodes[static_cast<size_t>(half)], rn.outputs[0]), 0.5)) {
          y = g.nodes[static_cast<size_t>(half)].outputs[0];
          drop.insert(static_cast<size_t>(half));
        }
      } else if (long h = ix.made_by(g, partner, "Mul"); h >= 0 && ix.readers_of(partner) == 1) {  // (x * 0.5) * a
        const Node& hn = g.nodes[static_cast<size_t>(h)];
        if (is_scalar(g, other_operand(hn, x), 0.5)) {
          y = rn.outputs[0];
          drop.insert(static_cast<size_t>(h));
        }
      }
      if (y.empty()) { skip("no Mul by x and by 0.5 after '" + a + "'"); continue; }
      ctx.log.push_back("FuseGelu: '" + erf.name + "' and " + std::to_string(drop.size() - 1) + " nodes around it -> Gelu");
      replace(g, drop, fused_node("Gelu", g.nodes[*drop.rbegin()].name, x, y));
      changed = true;
      i = *drop.begin();  // the nodes before the first dropped one are unchanged
      --i;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<OnnxPass> make_fuse_silu() { return std::make_unique<FuseSiLU>(); }
std::unique_ptr<OnnxPass> make_fuse_gelu() { return std::make_unique<FuseGelu>(); }

}  // namespace kiln::onnx
