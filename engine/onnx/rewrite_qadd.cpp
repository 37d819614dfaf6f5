// FuseAddQuantize (rewrite.h): the residual Add of a quantized network whose sum goes to int8
// layers, as Kiln's QDQ export writes a ResNet block's end (export_qdq.h: the Add and its Relu in
// float, then the next int8 layer's QuantizeLinear):
//   Add(a, b) [-> Relu] -> v;  QuantizeLinear(v, scale, zero point) -> q
// where the Add's output has no other reader (nor the Relu's input), and the QuantizeLinear has one
// FLOAT scale > 0 and a UINT8 zero point (requantize_mismatch); a and b may each be a
// DequantizeLinear's output with the same kind of parameters, read by this Add alone (onnxruntime's
// QDQ form). -> kiln.fused.AddQuantize(a or a_q, b or b_q; relu, y_scale, y_zero_point[, a_scale,
// a_zero_point][, b_scale, b_zero_point]) -> q [, v when something else reads v: the next block's identity]:
// one pass over a and b on the CPU instead of the Add, the Relu and the QuantizeLinear's five,
// with the same f32 arithmetic (ops_fused_qadd.cpp), so the same values. A candidate breaking a
// rule is left as it is, with a log line saying why.
#include <algorithm>
#include <set>

#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

Attribute int_attr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::Int;
  a.i = v;
  return a;
}

// The indices of the nodes of g reading `value`.
std::vector<size_t> readers_of(const Graph& g, const std::string& value) {
  std::vector<size_t> r;
  for (size_t j = 0; j < g.nodes.size(); ++j)
    if (std::find(g.nodes[j].inputs.begin(), g.nodes[j].inputs.end(), value) != g.nodes[j].inputs.end()) r.push_back(j);
  return r;
}

// The indices of the nodes of g writing `value` (one in a valid graph).
std::vector<size_t> producers_of(const Graph& g, const std::string& value) {
  std::vector<size_t> r;
  for (size_t j = 0; j < g.nodes.size(); ++j)
    if (std::find(g.nodes[j].outputs.begin(), g.nodes[j].outputs.end(), value) != g.nodes[j].outputs.end()) r.push_back(j);
  return r;
}

bool is(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

class FuseAddQuantize : public OnnxPass {
 public:
  std::string name() const override { return "FuseAddQuantize"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!is(g.nodes[i], "Add") || g.nodes[i].inputs.size() != 2 || g.nodes[i].outputs.size() != 1) continue;
      const std::map<std::string, int> counts = reader_counts(g);
      auto count = [&](const std::string& v) { return counts.count(v) ? counts.at(v) : 0; };
      const Node& add = g.nodes[i];
      size_t last = i;  // the Add, or its Relu
      const std::vector<size_t> after_add = readers_of(g, add.outputs[0]);
      if (count(add.outputs[0]) == 1 && after_add.size() == 1 && is(g.nodes[after_add[0]], "Relu")) last = after_add[0];
      const std::string& v = g.nodes[last].outputs.at(0);
      size_t quant = g.nodes.size();
      for (size_t j : readers_of(g, v))
        if (is(g.nodes[j], "QuantizeLinear") && g.nodes[j].inputs.at(0) == v) {
          quant = j;
          break;
        }
      if (quant == g.nodes.size()) continue;  // a float Add
      const Node& q = g.nodes[quant];
      if (const std::string why = requantize_mismatch(g, q); !why.empty()) {
        const std::string line = "FuseAddQuantize: left '" + add.name + "' in float: its QuantizeLinear '" + q.name + "' " + why;
        if (std::find(ctx.log.begin(), ctx.log.end(), line) == ctx.log.end()) ctx.log.push_back(line);
        continue;
      }
      const bool relu = last != i;
      Node fused;
      // An input that a per-tensor u8 DequantizeLinear makes for this Add alone comes in as u8
      // (onnxruntime's QDQ form: DQ(a) + DQ(b) -> Add -> Q): its scale and zero point become
      // attributes a_/b_scale, a_/b_zero_point, and the DequantizeLinear goes.
      std::vector<std::string> inputs = add.inputs;
      std::set<size_t> dequantize;
      for (size_t k = 0; k < 2; ++k) {
        const std::vector<size_t> from = producers_of(g, add.inputs[k]);
        if (from.size() != 1 || count(add.inputs[k]) != 1 || !is(g.nodes[from[0]], "DequantizeLinear")) continue;
        const Node& dq = g.nodes[from[0]];
        if (!requantize_mismatch(g, dq).empty()) continue;  // the same rules as a QuantizeLinear's
        const std::string p = k == 0 ? "a_" : "b_";
        fused.attributes[p + "scale"] = float_attr_of(p + "scale", g.initializers.at(dq.inputs.at(1)).to(DType::f64).to_vector<double>()[0]);
        fused.attributes[p + "zero_point"] = int_attr(p + "zero_point", g.initializers.at(dq.inputs.at(2)).to(DType::i64).to_vector<int64_t>()[0]);
        inputs[k] = dq.inputs[0];
        dequantize.insert(from[0]);
      }
      fused.op_type = "AddQuantize";
      fused.domain = kFusedDomain;
      fused.name = add.name;
      fused.inputs = inputs;
      fused.outputs = {q.outputs.at(0)};
      const bool f32_out = count(v) > 1;  // another reader (a graph output counts) needs v itself
      if (f32_out) fused.outputs.push_back(v);
      fused.attributes["relu"] = int_attr("relu", relu);
      fused.attributes["y_scale"] = float_attr_of("y_scale", g.initializers.at(q.inputs.at(1)).to(DType::f64).to_vector<double>()[0]);
      fused.attributes["y_zero_point"] = int_attr("y_zero_point", g.initializers.at(q.inputs.at(2)).to(DType::i64).to_vector<int64_t>()[0]);
      ctx.log.push_back("FuseAddQuantize: '" + add.name + "'" + (relu ? " + '" + g.nodes[last].name + "'" : "") + " + '" + q.name +
                        "' -> AddQuantize (one pass" + (dequantize.empty() ? "" : ", " + std::to_string(dequantize.size()) + " u8 input(s)") +
                        (f32_out ? ", f32 sum kept for its other readers)" : ")"));
      // The fused node goes where the Relu (or the Add) was: every reader of v or q comes later;
      // the DequantizeLinear nodes came before the Add.
      std::set<size_t> drop = dequantize;
      drop.insert(quant);
      if (relu) drop.insert(i);
      g.nodes[last] = std::move(fused);
      size_t before_i = 0;
      for (auto it = drop.rbegin(); it != drop.rend(); ++it) {
        g.nodes.erase(g.nodes.begin() + static_cast<long>(*it));
        before_i += *it <= i;
      }
      changed = true;
      i -= before_i;  // back to the node after the ones removed (wraps below 0, and the loop's ++i brings it back)
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<OnnxPass> make_fuse_add_quantize() { return std::make_unique<FuseAddQuantize>(); }

}  // namespace kiln::onnx
