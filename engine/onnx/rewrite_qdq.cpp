// FuseQdq (rewrite.h): a QDQ model's quantized Conv / Gemm onto the int8 kernels, as onnxruntime's
// QDQ selectors (onnxruntime/core/optimizer/qdq_transformer/selectors_actions) turn the same
// pattern into QLinearConv. The pattern (what export_qdq.h and onnxruntime's quantizer write):
//   Conv | Gemm(transA 0, transB 1, alpha 1, beta 1) of
//     DequantizeLinear(x_q, scale, zero point)     scalar FLOAT scale > 0, scalar UINT8 zero point
//     DequantizeLinear(w_q, w_scale, w_zp, axis 0)  INT8 initializer, FLOAT [Cout] (or scalar), zero points 0
//     [DequantizeLinear(b_q, b_scale, axis 0)]      INT32 initializer, b_scale = scale x w_scale (1e-6 relative)
//   [followed by the Relu that alone reads it]
//   [followed by the QuantizeLinear that alone reads that: one FLOAT scale > 0, UINT8 zero point]
// -> kiln.fused.QConv / kiln.fused.QGemm(x_q, scale, zero point, w_q, w_scale[, b_q]) with the
// Conv's attributes and relu 0/1: u8 x s8 with s32 accumulation on the device's int8 kernels
// (engine/core/qops.h; f32 output, or u8 with attributes y_scale and y_zero_point where the
// QuantizeLinear was taken in, Note [Requantized output]), or, on a device without them, the DequantizeLinear + Conv /
// Gemm arithmetic in float. A Conv other than 2-d with symmetric pads, or a candidate breaking
// any of the rules above, is left as it is, with a log line saying why.
#include <algorithm>
#include <cmath>
#include <set>

#include "engine/onnx/rewrite.h"

namespace kiln::onnx {
namespace {

struct Lookup {
  std::map<std::string, size_t> producer;
  std::map<std::string, int> readers;
  explicit Lookup(const Graph& g) : readers(reader_counts(g)) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const std::string& o : g.nodes[i].outputs)
        if (!o.empty()) producer[o] = i;
  }
  // The ai.onnx `op` node producing `value`, or null.
  const Node* made_by(const Graph& g, const std::string& value, const char* op) const {
    auto it = producer.find(value);
    if (it == producer.end()) return nullptr;
    const Node& n = g.nodes[it->second];
    return n.domain.empty() && n.op_type == op ? &n : nullptr;
  }
  int readers_of(const std::string& v) const {
    auto it = readers.find(v);
    return it == readers.end() ? 0 : it->second;
  }
};

int64_t int_attr(const Node& n, const std::string& name, int64_t def) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? def : it->second.i;
}

const Tensor* initializer(const Graph& g, const Node& dq, size_t input) {
  if (dq.inputs.size() <= input || dq.inputs[input].empty()) return nullptr;
  auto it = g.initializers.find(dq.inputs[input]);
  return it == g.initializers.end() ? nullptr : &it->second;
}

// Why `op` (a Conv or Gemm) does not match the pattern, "" when it does.
std::string mismatch(const Graph& g, const Lookup& ix, const Node& op) {
  if (op.inputs.size() < 2) return "it has fewer than 2 inputs";
  const Node* dx = ix.made_by(g, op.inputs[0], "DequantizeLinear");
  const Node* dw = ix.made_by(g, op.inputs[1], "DequantizeLinear");
  if (!dx || !dw) return "its input or weight does not come from a DequantizeLinear";
  const Tensor* xs = initializer(g, *dx, 1);
  const Tensor* xz = initializer(g, *dx, 2);
  if (!xs || xs->numel() != 1 || !xz || xz->numel() != 1 || xz->dtype() != DType::u8)
    return "its input's DequantizeLinear has no scalar scale and UINT8 zero point initializers";
  const double s = xs->to(DType::f64).to_vector<double>()[0];
  if (!(s > 0)) return "its input scale is not positive";
  const Tensor* w = initializer(g, *dw, 0);
  const Tensor* ws = initializer(g, *dw, 1);
  const Tensor* wz = initializer(g, *dw, 2);
  if (!w || w->dtype() != DType::i8 || !ws || ws->dim() > 1) return "its weight is not an INT8 initializer with 1-d scales";
  const int64_t cout = w->dim() > 0 ? w->size(0) : 0;
  if (ws->numel() != 1 && (ws->numel() != cout || int_attr(*dw, "axis", 1) != 0))
    return "its weight scales are not per tensor or per output channel (axis 0)";
  if (wz) {
    for (int64_t z : wz->to(DType::i64).to_vector<int64_t>())
      if (z != 0) return "its weight zero point is not 0 (the int8 kernels take symmetric weights)";
  }
  for (double v : ws->to(DType::f64).to_vector<double>())
    if (!(v > 0)) return "a weight scale is not positive";
  if (op.inputs.size() > 2 && !op.inputs[2].empty()) {
    const Node* db = ix.made_by(g, op.inputs[2], "DequantizeLinear");
    const Tensor* b = db ? initializer(g, *db, 0) : nullptr;
    const Tensor* bs = db ? initializer(g, *db, 1) : nullptr;
    if (!b || b->dtype() != DType::i32 || b->dim() != 1 || b->size(0) != cout || !bs || (db->inputs.size() > 2 && !db->inputs[2].empty()))
      return "its bias is not an INT32 initializer [Cout] through a DequantizeLinear without zero point";
    const std::vector<double> wsv = ws->to(DType::f64).to_vector<double>(), bsv = bs->to(DType::f64).to_vector<double>();
    if (bsv.size() != static_cast<size_t>(cout) && bsv.size() != 1) return "its bias scales are not one per output channel";
    for (size_t c = 0; c < bsv.size(); ++c)
      if (!near(bsv[c], s * wsv[wsv.size() == 1 ? 0 : c])) return "its bias scale is not input scale x weight scale";
  }
  if (op.op_type == "Conv") {
    if (w->dim() != 4) return "it is not a 2-d convolution";
    if (auto it = op.attributes.find("auto_pad"); it != op.attributes.end() && it->second.s != "NOTSET" && !it->second.s.empty())
      return "it uses auto_pad";
    auto pads = op.attributes.count("pads") ? op.attributes.at("pads").ints : std::vector<int64_t>{0, 0, 0, 0};
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) return "its pads are not symmetric";
  } else {
    if (w->dim() != 2 || int_attr(op, "transA", 0) != 0 || int_attr(op, "transB", 0) != 1) return "it is not Gemm(transA 0, transB 1)";
    for (const char* a : {"alpha", "beta"})
      if (auto it = op.attributes.find(a); it != op.attributes.end() && it->second.f != 1.0) return std::string(a) + " is not 1";
  }
  return "";
}

// Drops the DequantizeLinear nodes nothing reads any more (the fused layers' weight, bias and
// input ones), so that no run dequantizes a weight for nothing.
void remove_unread_dequantize(Graph& g) {
  const std::map<std::string, int> readers = reader_counts(g);
  std::erase_if(g.nodes, [&](const Node& n) {
    return n.domain.empty() && n.op_type == "DequantizeLinear" && n.outputs.size() == 1 && !readers.count(n.outputs[0]);
  });
}

class FuseQdq : public OnnxPass {
 public:
  std::string name() const override { return "FuseQdq"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& op = g.nodes[i];
      if (!op.domain.empty() || (op.op_type != "Conv" && op.op_type != "Gemm")) continue;
      const Lookup ix(g);
      if (!ix.made_by(g, op.inputs.at(0), "DequantizeLinear") && !(op.inputs.size() > 1 && ix.made_by(g, op.inputs[1], "DequantizeLinear")))
        continue;  // a float Conv / Gemm
      if (const std::string why = mismatch(g, ix, op); !why.empty()) {
        ctx.log.push_back("FuseQdq: left '" + op.name + "' in float: " + why);
        continue;
      }
      Node fused;
      fused.op_type = op.op_type == "Conv" ? "QConv" : "QGemm";
      fused.domain = kFusedDomain;
      fused.name = op.name;
      fused.attributes = op.attributes;
      const Node& dx = *ix.made_by(g, op.inputs[0], "DequantizeLinear");
      const Node& dw = *ix.made_by(g, op.inputs[1], "DequantizeLinear");
      fused.inputs = {dx.inputs[0], dx.inputs[1], dx.inputs[2], dw.inputs[0], dw.inputs[1]};
      if (op.inputs.size() > 2 && !op.inputs[2].empty())
        fused.inputs.push_back(ix.made_by(g, op.inputs[2], "DequantizeLinear")->inputs[0]);
      fused.outputs = op.outputs;
      std::set<size_t> drop{i};
      // The Relu that alone reads the output becomes the kernel's post-op.
      const std::string& y = op.outputs.at(0);
      size_t relu = g.nodes.size();
      for (size_t j = i + 1; j < g.nodes.size(); ++j)
        if (std::find(g.nodes[j].inputs.begin(), g.nodes[j].inputs.end(), y) != g.nodes[j].inputs.end()) {
          if (ix.readers_of(y) == 1 && g.nodes[j].domain.empty() && g.nodes[j].op_type == "Relu") relu = j;
          break;
        }
      Attribute r;
      r.name = "relu";
      r.type = Attribute::Type::Int;
      r.i = relu < g.nodes.size();
      fused.attributes["relu"] = r;
      if (relu < g.nodes.size()) {
        fused.outputs = g.nodes[relu].outputs;
        drop.insert(relu);
      }
      // The QuantizeLinear that alone reads the output becomes the kernel's requantization
      // (Note [Requantized output]).
      const std::string& out = fused.outputs.at(0);
      size_t quant = g.nodes.size();
      std::string why_not_u8;
      for (size_t j = std::max(i, relu < g.nodes.size() ? relu : i) + 1; j < g.nodes.size(); ++j)
        if (std::find(g.nodes[j].inputs.begin(), g.nodes[j].inputs.end(), out) != g.nodes[j].inputs.end()) {
          if (ix.readers_of(out) == 1 && g.nodes[j].domain.empty() && g.nodes[j].op_type == "QuantizeLinear") {
            why_not_u8 = requantize_mismatch(g, g.nodes[j]);
            if (why_not_u8.empty()) quant = j;
          }
          break;
        }
      if (quant < g.nodes.size()) {
        const Node& qn = g.nodes[quant];
        fused.attributes["y_scale"] = float_attr_of("y_scale", initializer(g, qn, 1)->to(DType::f64).to_vector<double>()[0]);
        Attribute z;
        z.name = "y_zero_point";
        z.type = Attribute::Type::Int;
        z.i = initializer(g, qn, 2)->to(DType::i64).to_vector<int64_t>()[0];
        fused.attributes["y_zero_point"] = z;
        fused.outputs = qn.outputs;
        drop.insert(quant);
      } else if (!why_not_u8.empty()) {
        ctx.log.push_back("FuseQdq: '" + op.name + "' writes f32: its QuantizeLinear " + why_not_u8);
      }
      ctx.log.push_back("FuseQdq: '" + op.name + "'" + (r.i ? " + '" + g.nodes[relu].name + "'" : "") +
                        (quant < g.nodes.size() ? " + '" + g.nodes[quant].name + "'" : "") + " -> " + fused.op_type +
                        " (int8 kernels" + (quant < g.nodes.size() ? ", u8 out" : "") + ")");
      // The fused node goes where the last dropped node was; the DequantizeLinear nodes it
      // replaced go below once nothing else reads them.
      const size_t at = *drop.rbegin();
      g.nodes[at] = std::move(fused);
      for (auto it = std::next(drop.rbegin()); it != drop.rend(); ++it) g.nodes.erase(g.nodes.begin() + static_cast<long>(*it));
      changed = true;
      if (drop.size() > 1) --i;  // the node after the removed Conv / Gemm is now at i (wraps to 0 at 0)
    }
    if (changed) remove_unread_dequantize(g);
    return changed;
  }
};

}  // namespace

Attribute float_attr_of(const std::string& name, double v) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::Float;
  a.f = v;
  return a;
}

// Note [Requantized output]: a QuantizeLinear(y, scale, zero point) that alone reads a fused
// layer's output y (after its Relu) is the int8 kernel's own requantization, u8 = saturate(
// rint(acc * in_scale * w_scale[c] / scale) + zero point) (QuantizedParams.out_scale), so the
// layer writes u8 and the f32 y is never stored: the QuantizeLinear and a pass over y go. The
// kernel scales the s32 sum in f32 (oneDNN) where the float path rounds the f32 y / scale, so a
// value that lands within an f32 rounding error of a half step may round the other way: one
// quantization step, as between onnxruntime's QLinearConv and its QDQ float path.
std::string requantize_mismatch(const Graph& g, const Node& q) {
  const Tensor* s = initializer(g, q, 1);
  const Tensor* z = initializer(g, q, 2);
  if (!s || s->numel() != 1 || !is_floating(s->dtype())) return "has no one-value FLOAT scale initializer";
  const double v = s->to(DType::f64).to_vector<double>()[0];
  if (!(v > 0) || !std::isfinite(v)) return "has a scale that is not finite and > 0";
  if (!z || z->numel() != 1 || z->dtype() != DType::u8) return "has no one-value UINT8 zero point initializer";
  return "";
}

std::unique_ptr<OnnxPass> make_fuse_qdq() { return std::make_unique<FuseQdq>(); }

}  // namespace kiln::onnx
