// FuseQLinear (rewrite.h): a QOperator model's QLinearConv / QLinearMatMul (ONNX Operators.md,
// opset 10; what onnxruntime's quantizer writes with QuantFormat.QOperator) onto the int8 kernels.
// The arithmetic is the spec's (and onnx/reference/ops/op_qlinear_conv.py's):
//   y = saturate(rint(acc * (x_scale * w_scale[c] / y_scale) + y_zero_point)),
//   acc = sum (x - x_zero_point) (w - w_zero_point[c]) [+ B[c]]   (s32)
// A node is rewritten when
//   - x_scale, x_zero_point, y_scale, y_zero_point are one-element constants (an initializer or a
//     Constant node), scales finite and > 0, zero points UINT8 or INT8 (the spec's types);
//   - w (b of QLinearMatMul) is a UINT8 or INT8 constant, its zero point of the same type, per
//     tensor or one per output channel (per column of b), and its scales too;
//   - QLinearConv: 2-d (w [M, C/group, kH, kW]), no auto_pad, symmetric pads, B absent or an
//     INT32 constant [M]; QLinearMatMul: a_scale per tensor (the kernels take one input scale).
// -> kiln.fused.QLinearConv(x, w8[, B]) / kiln.fused.QLinearMatMul(a, w8) with the scales and
// zero points as attributes (ops_fused_qlinear.cpp runs them). w8 is a new INT8 initializer:
// w - w_zero_point, transposed to [.., N, K] for the matmul. Where w - w_zero_point leaves
// [-128, 127] (u8 weights with a zero point away from 128, as in the ONNX node tests), w8 holds
// it in two INT8 halves, hi = floor(w' / 2) and lo = w' - 2 hi (0 or 1), as twice the output
// channels (Note [Wide weights]). Anything else is left in float with a log line saying why.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "engine/core/qops.h"
#include "engine/onnx/rewrite.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {
namespace {

// Note [Wide weights]: the int8 kernels multiply u8 by s8. A weight w' = w - zp of a UINT8 w
// spans [-255, 255]; written as w' = 2 hi + lo with hi in [-128, 127] and lo in {0, 1}, the
// layer runs as one int8 kernel call with 2M output channels (hi and lo), f32 output with unit
// scales (the s32 sums, exact in f32 while |sum| < 2^24, which the rewrite checks from the
// weights: |x - x_zp| <= 255), combined as 2 hi + lo (+ B) in f64 and requantized as the spec
// says. Twice the kernel work, still on the int8 kernels; weights within [-128, 127] take the
// direct path (u8 output requantized by the kernel).

const Tensor* constant(const Graph& g, const std::string& name) {
  if (name.empty()) return nullptr;
  if (auto it = g.initializers.find(name); it != g.initializers.end()) return &it->second;
  for (const Node& n : g.nodes) {
    if (n.op_type != "Constant" || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] != name) continue;
    auto v = n.attributes.find("value");
    return v != n.attributes.end() && v->second.type == Attribute::Type::Tensor ? &v->second.t : nullptr;
  }
  return nullptr;
}

const std::string& input_name(const Node& n, size_t i) {
  static const std::string none;
  return i < n.inputs.size() ? n.inputs[i] : none;
}

bool is_q8(DType t) { return t == DType::u8 || t == DType::i8; }

std::string type_name(DType t) { return onnx_type_name(onnx_type_of(t)); }  // "UINT8", as the spec names types

// What the fused node gets; filled by plan_*().
struct Plan {
  std::vector<int8_t> w8;  // the kernel's weight, `w8_shape`
  Shape w8_shape;
  std::vector<double> w_scales;  // one per output channel
  double x_scale = 1, y_scale = 1;
  int64_t x_zero_point = 0, y_zero_point = 0;
  DType x_type = DType::u8, y_type = DType::u8;
  bool wide = false;
};

// The spec's names of inputs 0-7 of each op (the log names them).
const char* const kConvNames[] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"};
const char* const kMatMulNames[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};

// Checks the per-tensor scale (input s) and zero point (input s + 1) of the input or output.
std::string per_tensor(const Graph& g, const Node& n, const char* const* names, size_t s, double& scale,
                       int64_t& zero_point, DType& type) {
  const Tensor* sc = constant(g, input_name(n, s));
  const Tensor* zp = constant(g, input_name(n, s + 1));
  if (!sc || !zp) return std::string("its ") + names[s] + " and " + names[s + 1] + " are not both constants";
  if (sc->numel() != 1 || !is_floating(sc->dtype()))
    return std::string("its ") + names[s] + " is not one floating value" +
           (sc->numel() > 1 ? " (per-row scales: the int8 kernels take one scale per tensor)" : "");
  scale = sc->to(DType::f64).to_vector<double>()[0];
  if (!(scale > 0) || !std::isfinite(scale)) return std::string("its ") + names[s] + " is not finite and > 0";
  if (zp->numel() != 1) return std::string("its ") + names[s + 1] + " is not one value";
  if (!is_q8(zp->dtype()))
    return std::string("its ") + names[s + 1] + " is " + type_name(zp->dtype()) +
           ", not UINT8 or INT8 (the type of the tensor it belongs to)";
  zero_point = zp->to(DType::i64).to_vector<int64_t>()[0];
  type = zp->dtype();
  return "";
}

// w' = w - zero point for the output channel of each element (channel_of), into the Plan's
// scales; "" or why not.
std::string weight_values(const Graph& g, const Node& n, const char* const* names, int64_t channels,
                          const std::function<int64_t(int64_t)>& channel_of, std::vector<int32_t>& values,
                          Plan& p) {
  const Tensor* w = constant(g, input_name(n, 3));
  const Tensor* ws = constant(g, input_name(n, 4));
  const Tensor* wz = constant(g, input_name(n, 5));
  const std::string per = std::string(" (") + std::to_string(channels) + " output channels)";
  if (!ws || !wz) return std::string("its ") + names[4] + " and " + names[5] + " are not both constants";
  if (ws->dim() > 1 || (ws->numel() != 1 && ws->numel() != channels) || !is_floating(ws->dtype()))
    return std::string("its ") + names[4] + " has " + std::to_string(ws->numel()) +
           " entries: one or one per output channel" + per + " expected";
  if (wz->dim() > 1 || (wz->numel() != 1 && wz->numel() != channels))
    return std::string("its ") + names[5] + " has " + std::to_string(wz->numel()) +
           " entries: one or one per output channel" + per + " expected";
  if (wz->dtype() != w->dtype())
    return std::string("its ") + names[5] + " is " + type_name(wz->dtype()) + " but " + names[3] + " is " +
           type_name(w->dtype());
  const std::vector<double> s = ws->to(DType::f64).to_vector<double>();
  for (double v : s)
    if (!(v > 0) || !std::isfinite(v)) return std::string("a ") + names[4] + " is not finite and > 0";
  p.w_scales.assign(static_cast<size_t>(channels), s[0]);
  if (s.size() > 1) p.w_scales = s;
  const std::vector<int64_t> z = wz->to(DType::i64).to_vector<int64_t>();
  const std::vector<int64_t> wv = w->to(DType::i64).to_vector<int64_t>();
  values.resize(wv.size());
  for (size_t i = 0; i < wv.size(); ++i)
    values[i] = static_cast<int32_t>(wv[i] - z[z.size() == 1 ? 0 : static_cast<size_t>(channel_of(int64_t(i)))]);
  p.wide = std::any_of(values.begin(), values.end(), [](int32_t v) { return v < -128 || v > 127; });
  return "";
}

// Checks the common inputs and the weight of node n; "" or why not.
std::string plan_common(const Graph& g, const Node& n, const char* const* names, Plan& p) {
  for (size_t i = 0; i < 8; ++i)
    if (input_name(n, i).empty()) return std::string("it has no ") + names[i];
  const Tensor* w = constant(g, input_name(n, 3));
  if (!w) return std::string("its ") + names[3] + " '" + input_name(n, 3) + "' is not a constant (an initializer or "
                 "Constant node): the int8 kernels take prepared weights";
  if (!is_q8(w->dtype())) return std::string("its ") + names[3] + " is " + type_name(w->dtype()) + ", not UINT8 or INT8";
  if (std::string why = per_tensor(g, n, names, 1, p.x_scale, p.x_zero_point, p.x_type); !why.empty()) return why;
  return per_tensor(g, n, names, 6, p.y_scale, p.y_zero_point, p.y_type);
}

// hi = floor(v / 2), lo = v - 2 hi; whether every output channel's sum stays exact in f32
// (Note [Wide weights]): 255 * sum |hi| < 2^24 (lo's sum is smaller).
bool exact_in_f32(const std::vector<int32_t>& v, int64_t channels) {
  const int64_t per = static_cast<int64_t>(v.size()) / channels;
  for (int64_t c = 0; c < channels; ++c) {
    int64_t s = 0;
    for (int64_t k = 0; k < per; ++k) s += std::abs(v[size_t(c * per + k)] >> 1);
    if (255 * s >= (int64_t{1} << 24)) return false;
  }
  return true;
}

std::string plan_conv(const Graph& g, const Node& n, Plan& p) {
  if (std::string why = plan_common(g, n, kConvNames, p); !why.empty()) return why;
  const Tensor& w = *constant(g, input_name(n, 3));
  if (w.dim() != 4) return "it is not a 2-d convolution (w is " + shape_str(w.shape()) + ")";
  const int64_t M = w.size(0), per = w.numel() / std::max<int64_t>(M, 1);
  auto attr = n.attributes;
  if (auto it = attr.find("auto_pad"); it != attr.end() && it->second.s != "NOTSET" && !it->second.s.empty())
    return "it uses auto_pad " + it->second.s;
  auto ints = [&](const char* a, std::vector<int64_t> def) { return attr.count(a) ? attr.at(a).ints : def; };
  const std::vector<int64_t> pads = ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) return "its pads are not symmetric";
  if (ints("strides", {1, 1}).size() != 2 || ints("dilations", {1, 1}).size() != 2) return "its strides or dilations are not 2-d";
  if (attr.count("kernel_shape") && attr.at("kernel_shape").ints != std::vector<int64_t>{w.size(2), w.size(3)})
    return "its kernel_shape differs from w " + shape_str(w.shape());
  const int64_t group = attr.count("group") ? attr.at("group").i : 1;
  if (group < 1 || M % group != 0) return "its group " + std::to_string(group) + " does not divide M = " + std::to_string(M);
  if (const std::string& b = input_name(n, 8); !b.empty()) {
    const Tensor* bias = constant(g, b);
    if (!bias || bias->dtype() != DType::i32 || bias->dim() != 1 || bias->size(0) != M)
      return "its B is not an INT32 constant [" + std::to_string(M) + "]";
  }
  std::vector<int32_t> v;
  if (std::string why = weight_values(g, n, kConvNames, M, [&](int64_t i) { return i / per; }, v, p); !why.empty())
    return why;
  if (!p.wide) {
    p.w8.assign(v.begin(), v.end());
    p.w8_shape = w.shape();
    return "";
  }
  if (!exact_in_f32(v, M)) return "w - w_zero_point leaves [-128, 127] and its sums could exceed 2^24 (Note [Wide weights])";
  // [group, 2, M / group, per]: each group's hi channels, then its lo channels, so that the
  // doubled layer keeps the group structure.
  const int64_t mg = M / group;
  p.w8.resize(size_t(2 * M * per));
  for (int64_t c = 0; c < M; ++c)
    for (int64_t k = 0; k < per; ++k) {
      const int32_t x = v[size_t(c * per + k)], hi = x >> 1;
      const int64_t gi = c / mg, j = c % mg;
      p.w8[size_t(((gi * 2 + 0) * mg + j) * per + k)] = static_cast<int8_t>(hi);
      p.w8[size_t(((gi * 2 + 1) * mg + j) * per + k)] = static_cast<int8_t>(x - 2 * hi);
    }
  p.w8_shape = {2 * M, w.size(1), w.size(2), w.size(3)};
  return "";
}

std::string plan_matmul(const Graph& g, const Node& n, Plan& p) {
  if (std::string why = plan_common(g, n, kMatMulNames, p); !why.empty()) return why;
  const Tensor& b = *constant(g, input_name(n, 3));
  if (b.dim() < 2) return "its b is " + shape_str(b.shape()) + ", not a matrix or a stack of them";
  const int64_t K = b.size(-2), N = b.size(-1), batch = b.numel() / std::max<int64_t>(K * N, 1);
  std::vector<int32_t> v;
  if (std::string why = weight_values(g, n, kMatMulNames, N, [&](int64_t i) { return i % N; }, v, p); !why.empty())
    return why;
  if (p.wide) {
    // the per-column sums: the check runs on the transposed values
    std::vector<int32_t> t(v.size());
    for (int64_t i = 0; i < batch * N; ++i)
      for (int64_t k = 0; k < K; ++k) t[size_t(i * K + k)] = v[size_t((i / N) * K * N + k * N + i % N)];
    if (!exact_in_f32(t, batch * N))
      return "b - b_zero_point leaves [-128, 127] and its sums could exceed 2^24 (Note [Wide weights])";
  }
  // [batch, N (x2: hi then lo), K]
  const int64_t rows = p.wide ? 2 * N : N;
  p.w8.resize(size_t(batch * rows * K));
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c) {
        const int32_t x = v[size_t(bi * K * N + k * N + c)], hi = p.wide ? x >> 1 : x;
        p.w8[size_t((bi * rows + c) * K + k)] = static_cast<int8_t>(hi);
        if (p.wide) p.w8[size_t((bi * rows + N + c) * K + k)] = static_cast<int8_t>(x - 2 * hi);
      }
  Shape s(b.shape().begin(), b.shape().end() - 2);
  s.push_back(rows);
  s.push_back(K);
  p.w8_shape = s;
  return "";
}

Attribute attr_of(const std::string& name, double f) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::Float;
  a.f = f;
  return a;
}

Attribute attr_of(const std::string& name, int64_t i) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::Int;
  a.i = i;
  return a;
}

std::string fresh_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.initializers.count(name); ++i) name = base + "." + std::to_string(i);
  return name;
}

class FuseQLinear : public OnnxPass {
 public:
  std::string name() const override { return "FuseQLinear"; }
  bool apply(OnnxRewriteContext& ctx) const override {
    Graph& g = ctx.graph;
    bool changed = false;
    std::set<std::string> replaced;  // the weights the fused nodes no longer read
    for (Node& n : g.nodes) {
      if (!n.domain.empty() || (n.op_type != "QLinearConv" && n.op_type != "QLinearMatMul")) continue;
      const bool conv = n.op_type == "QLinearConv";
      Plan p;
      std::string why = quant::int8_supported(Device()) ? "" : "the CPU has no int8 kernels";
      if (why.empty()) why = conv ? plan_conv(g, n, p) : plan_matmul(g, n, p);
      if (!why.empty()) {  // once, though the runner repeats the passes while another one changes the graph
        const std::string line = "FuseQLinear: left '" + n.name + "' in float: " + why;
        if (std::find(ctx.log.begin(), ctx.log.end(), line) == ctx.log.end()) ctx.log.push_back(line);
        continue;
      }
      const std::string w8 = fresh_name(g, input_name(n, 3) + ".int8");
      g.initializers[w8] = Tensor::from_vector(p.w8, p.w8_shape);
      replaced.insert(input_name(n, 3));
      Node fused;
      fused.op_type = n.op_type;
      fused.domain = kFusedDomain;
      fused.name = n.name;
      fused.inputs = {n.inputs[0], w8};
      if (conv && !input_name(n, 8).empty()) fused.inputs.push_back(n.inputs[8]);
      fused.outputs = n.outputs;
      fused.attributes = n.attributes;
      for (const char* a : {"x_scale", "y_scale"}) fused.attributes[a] = attr_of(a, a[0] == 'x' ? p.x_scale : p.y_scale);
      for (const char* a : {"x_zero_point", "y_zero_point"})
        fused.attributes[a] = attr_of(a, a[0] == 'x' ? p.x_zero_point : p.y_zero_point);
      fused.attributes["x_signed"] = attr_of("x_signed", int64_t{p.x_type == DType::i8});
      fused.attributes["y_signed"] = attr_of("y_signed", int64_t{p.y_type == DType::i8});
      fused.attributes["wide"] = attr_of("wide", int64_t{p.wide});
      Attribute ws;
      ws.name = "w_scales";
      ws.type = Attribute::Type::Floats;
      ws.floats = p.w_scales;
      fused.attributes["w_scales"] = ws;
      ctx.log.push_back("FuseQLinear: '" + n.name + "' -> " + n.op_type + " (int8 kernels" +
                        (p.wide ? ", w - zero point in two int8 halves" : "") + ")");
      n = std::move(fused);
      changed = true;
    }
    if (changed) {  // drop the original weights nothing reads any more
      const std::map<std::string, int> readers = reader_counts(g);
      for (const std::string& w : replaced)
        if (!readers.count(w)) g.initializers.erase(w);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<OnnxPass> make_fuse_qlinear() { return std::make_unique<FuseQLinear>(); }

}  // namespace kiln::onnx
