// ONNX export rules of the sequence layers over [N, T, C] (ops_onnx.h), opset 17 (onnx.ai
// Operators.md). The graph's padding mask (graph_module.h: token id 0 is <pad>) is recomputed
// from the token ids in the exported graph: m = Cast(Not(Equal(ids, 0))). The recurrent layers
// take it as ONNX's sequence_lens (the number of tokens per sequence, which equals the native
// layers' masking for padding at the end, as the tokenizers pad: engine/data).
#include <cfloat>
#include <cmath>
#include <limits>

#include "engine/core/ops.h"
#include "engine/graph/op_helpers.h"
#include "engine/graph/ops_onnx.h"

namespace kiln::graph::detail {

namespace {

using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// ReduceSum over axis 1 of `in` into `out` (axes is an input from opset 13; ReduceMax/Min from 18).
std::string reduce(OnnxEmitter& e, const std::string& op, const std::string& out, const std::string& in, bool keep) {
  if (op == "ReduceSum" ? e.opset() >= 13 : e.opset() >= 18)
    e.node(op, out, {in, e.ints(out + "/axes", {1})}, {out}, {{"keepdims", int64_t{keep ? 1 : 0}}});
  else
    e.node(op, out, {in}, {out}, {{"axes", Ints{1}}, {"keepdims", int64_t{keep ? 1 : 0}}});
  return out;
}

// "<y>/is_pad" (bool [N, T], true at padding) and "<y>/valid" (its negation) from the ids.
void pad_flags(OnnxEmitter& e, const std::string& y) {
  e.node("Equal", y + "/is_pad", {e.padding_mask_ids(), e.int_scalar(y + "/pad_id", 0)}, {y + "/is_pad"});
  e.node("Not", y + "/valid", {y + "/is_pad"}, {y + "/valid"});
}

// x [T, N, I] @ W^T + b for the nn::Linear-like state "<prefix>weight" [out, in], "<prefix>bias" [out].
std::string linear(OnnxEmitter& e, const OnnxExportNode& n, const std::string& prefix, const std::string& x,
                   const std::string& out, int64_t in_features, int64_t out_features) {
  std::string w = e.param(n, prefix + "weight", {out_features, in_features});
  std::string b = e.param(n, prefix + "bias", {out_features});
  e.node("Transpose", out + "/weight_T", {w}, {out + "/weight_T"}, {{"perm", Ints{1, 0}}});
  e.node("MatMul", out + "/matmul", {x, out + "/weight_T"}, {out + "/matmul"});
  e.node("Add", out, {out + "/matmul", b}, {out});
  return out;
}

// ---- RNN, LSTM, GRU ------------------------------------------------------------------------

// PyTorch's gate blocks in ONNX's order: LSTM i, f, g, o -> i, o, f, c; GRU r, z, n -> z, r, h.
Ints onnx_gate_order(const std::string& op) {
  if (op == "LSTM") return {0, 3, 1, 2};
  if (op == "GRU") return {1, 0, 2};
  return {0};
}

Tensor reorder_gates(const Tensor& t, const Ints& order, int64_t hidden) {
  std::vector<Tensor> blocks;
  for (int64_t g : order) blocks.push_back(t.slice(0, g * hidden, (g + 1) * hidden));
  return cat(blocks, 0).contiguous();
}

// ONNX's gate block j holds PyTorch's block order[j]; this gives, for PyTorch's block p, the
// ONNX block that holds it (LSTM i, f, g, o <- i, o, f, c; GRU r, z, n <- z, r, h).
Ints pytorch_gate_order(const std::string& op) {
  const Ints order = onnx_gate_order(op);
  Ints inverse(order.size());
  for (size_t j = 0; j < order.size(); ++j) inverse[static_cast<size_t>(order[j])] = static_cast<int64_t>(j);
  return inverse;
}

bool present(const OnnxNodeView& v, size_t i) { return i < v.inputs.size() && v.inputs[i].present; }
const Tensor* constant(const OnnxNodeView& v, size_t i) {
  return present(v, i) && v.inputs[i].constant.defined() ? &v.inputs[i].constant : nullptr;
}
bool all_zero(const Tensor& t) {
  for (double x : t.to(DType::f64).to_vector<double>())
    if (x != 0) return false;
  return true;
}

// A float32 initializer of the given shape at input i, or why it is not.
std::string weight_problem(const OnnxNodeView& v, size_t i, const char* what, const Shape& want) {
  const Tensor* t = constant(v, i);
  const std::string which = std::string("its ") + what + " (input " + std::to_string(i) + ")";
  if (!t) return which + " is computed at run time, not an initializer";
  if (t->dtype() != DType::f32) return which + " is " + dtype_name(t->dtype()) + ", native layers hold f32";
  if (t->shape() != want) return which + " has shape " + shape_str(t->shape()) + ", expected " + shape_str(want);
  return "";
}

}  // namespace

// ONNX RNN / GRU / LSTM (opset 14 form) -> the native layer with num_layers 1: W [D, G*H, I],
// R [D, G*H, H], B [D, 2*G*H] (zeros when absent) become weight_ih_l0, weight_hh_l0, bias_ih_l0,
// bias_hh_l0 (and *_reverse) in PyTorch's gate order. Forms the native layer does not compute
// return the reason: layout 1, direction reverse, clip, input_forget, peepholes, non-default
// activations, GRU's linear_before_reset 0, initial states that are not zero, a sequence_lens
// that is not the graph's padding mask (OnnxNodeView::graph_padding_mask). The import
// (graph_import_sequence.h) presents a layout 1 node batch first, without its layout attribute.
OnnxMapResult map_recurrent(const OnnxNodeView& v) {
  const std::string& op = v.op_type;
  const int64_t g = static_cast<int64_t>(onnx_gate_order(op).size());
  auto int_of = [&](const std::string& name, int64_t def) {
    auto it = v.attributes.find(name);
    return it != v.attributes.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : def;
  };
  auto it_dir = v.attributes.find("direction");
  const std::string dir = it_dir != v.attributes.end() && std::holds_alternative<std::string>(it_dir->second)
                              ? std::get<std::string>(it_dir->second)
                              : "forward";
  if (int_of("layout", 0) != 0) return "layout 1 is not the time-major form the import maps";
  if (dir == "reverse") return "direction reverse alone has no native form (the native layer runs forward or both ways)";
  if (dir != "forward" && dir != "bidirectional") return "direction '" + dir + "' is not forward or bidirectional";
  const int64_t dirs = dir == "bidirectional" ? 2 : 1;
  if (v.attributes.count("clip")) return "clip bounds the cell input; the native layer does not clip";
  if (op == "LSTM" && int_of("input_forget", 0) != 0) return "input_forget = 1 couples the input and forget gates";
  if (op == "GRU" && int_of("linear_before_reset", 0) != 1)
    return "linear_before_reset = 0 applies the reset gate before R's product; the native GRU (as PyTorch's) after it";
  std::string nonlinearity = "tanh";
  if (auto it = v.string_lists.find("activations"); it != v.string_lists.end()) {
    Strings per_dir = op == "LSTM" ? Strings{"Sigmoid", "Tanh", "Tanh"} : op == "GRU" ? Strings{"Sigmoid", "Tanh"} : Strings{"Tanh"};
    if (op == "RNN" && !it->second.empty() && it->second[0] == "Relu") per_dir = {"Relu"}, nonlinearity = "relu";
    Strings want;
    for (int64_t d = 0; d < dirs; ++d) want.insert(want.end(), per_dir.begin(), per_dir.end());
    if (it->second != want) {
      std::string got;
      for (const std::string& a : it->second) got += (got.empty() ? "" : ", ") + a;
      return "activations [" + got + "] are not the native " + op + "'s";
    }
  }
  if (!present(v, 0) || v.inputs[0].type.shape.size() != 3) return "input is not [N, T, C]";
  const int64_t input = v.inputs[0].type.shape[2];
  if (is_symbolic(input)) return "its input feature size is symbolic";
  if (!constant(v, 1)) return "its W (input 1) is computed at run time, not an initializer";
  const Tensor* r = constant(v, 2);
  if (!r) return "its R (input 2) is computed at run time, not an initializer";
  if (r->dim() != 3) return "its R (input 2) has shape " + shape_str(r->shape()) + ", expected [D, G*H, H]";
  const int64_t h = r->shape()[2];
  if (int_of("hidden_size", h) != h)
    return "hidden_size " + std::to_string(int_of("hidden_size", h)) + " differs from R's " + shape_str(r->shape());
  if (auto why = weight_problem(v, 1, "W", {dirs, g * h, input}); !why.empty()) return why;
  if (auto why = weight_problem(v, 2, "R", {dirs, g * h, h}); !why.empty()) return why;
  if (present(v, 3))
    if (auto why = weight_problem(v, 3, "B", {dirs, 2 * g * h}); !why.empty()) return why;
  if (present(v, 4))
    return "its sequence_lens (input 4) is not the token count of the graph's padding mask (token id 0, "
           "graph_module.h), by which the native layer skips steps";
  if (v.graph_padding_mask)
    return "it has no sequence_lens, but the graph's token ids give a padding mask (token id 0) that the native " + op +
           " would apply";
  const char* state_names[] = {"initial_h", "initial_c", "P (peepholes)"};
  for (size_t i = 5; i < (op == "LSTM" ? size_t{8} : size_t{6}); ++i) {
    if (!present(v, i)) continue;
    const Tensor* t = constant(v, i);
    if (!t) return std::string("its ") + state_names[i - 5] + " (input " + std::to_string(i) + ") is computed at run time";
    if (!all_zero(*t))
      return std::string("its ") + state_names[i - 5] + " (input " + std::to_string(i) + ") is not zero; the native " +
             op + (i == 7 ? " has no peepholes" : " starts from zeros");
  }
  const Ints order = pytorch_gate_order(op);
  OnnxMapping m;
  for (int64_t d = 0; d < dirs; ++d) {
    const std::string suffix = std::string("_l0") + (d == 1 ? "_reverse" : "");
    m.state["weight_ih" + suffix] = reorder_gates(constant(v, 1)->select(0, d), order, h);
    m.state["weight_hh" + suffix] = reorder_gates(r->select(0, d), order, h);
    const Tensor b = present(v, 3) ? constant(v, 3)->select(0, d) : Tensor::zeros({2 * g * h});
    m.state["bias_ih" + suffix] = reorder_gates(b.slice(0, 0, g * h), order, h);
    m.state["bias_hh" + suffix] = reorder_gates(b.slice(0, g * h, 2 * g * h), order, h);
  }
  m.attrs = {{"hidden_size", h}, {"num_layers", int64_t{1}}, {"bidirectional", dirs == 2}, {"dropout", 0.0}};
  if (op == "RNN") m.attrs["nonlinearity"] = nonlinearity;
  return m;
}

void export_sequence_pool(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string &y = n.name, &x = n.values.at(0), mode = attr_string(n.attrs, "mode");
  auto axes = [&](const std::string& what, const Ints& v) { return e.ints(y + "/" + what, v); };
  if (e.padding_mask_ids().empty()) {  // features [N, T, C]: every step counts
    if (mode == "mean" || mode == "max") {
      reduce(e, mode == "mean" ? "ReduceSum" : "ReduceMax", mode == "mean" ? y + "/sum" : y, x, false);
      if (mode == "mean") {
        e.node("Shape", y + "/shape", {x}, {y + "/shape"});
        e.node("Gather", y + "/t", {y + "/shape", e.int_scalar(y + "/one_i", 1)}, {y + "/t"});
        e.node("Cast", y + "/tf", {y + "/t"}, {y + "/tf"}, {{"to", int64_t{1}}});  // FLOAT
        e.node("Div", y, {y + "/sum", y + "/tf"}, {y});
      }
    } else {
      e.node("Gather", y, {x, e.int_scalar(y + "/step", mode == "last" ? -1 : 0)}, {y}, {{"axis", int64_t{1}}});
    }
    return;
  }
  pad_flags(e, y);
  e.node("Cast", y + "/mask", {y + "/valid"}, {y + "/mask"}, {{"to", int64_t{1}}});
  const std::string m = y + "/mask", m3 = y + "/mask3";
  e.node("Unsqueeze", m3, {m, axes("axis2", {2})}, {m3});
  const std::string count = reduce(e, "ReduceSum", y + "/count", m, true);  // [N, 1]
  if (mode == "mean") {
    e.node("Mul", y + "/masked", {x, m3}, {y + "/masked"});
    reduce(e, "ReduceSum", y + "/sum", y + "/masked", false);
    e.node("Max", y + "/den", {count, e.scalar(y + "/one", 1.0f)}, {y + "/den"});
    e.node("Div", y, {y + "/sum", y + "/den"}, {y});
  } else if (mode == "max") {
    e.node("Unsqueeze", y + "/valid3", {y + "/valid", axes("axis2v", {2})}, {y + "/valid3"});
    e.node("Where", y + "/filled", {y + "/valid3", x, e.scalar(y + "/lowest", -FLT_MAX)}, {y + "/filled"});
    reduce(e, "ReduceMax", y + "/max", y + "/filled", false);
    e.node("Min", y + "/any", {count, e.scalar(y + "/one", 1.0f)}, {y + "/any"});
    e.node("Mul", y, {y + "/max", y + "/any"}, {y});
  } else if (mode == "last") {  // one-hot at the last valid step: m[t] - m[t + 1]
    e.node("Slice", y + "/after",
           {m, e.ints(y + "/start1", {1}), e.ints(y + "/end", {std::numeric_limits<int64_t>::max()}), axes("axis1s", {1})},
           {y + "/after"});
    e.node("Pad", y + "/next", {y + "/after", e.ints(y + "/pads", {0, 0, 0, 1})}, {y + "/next"});
    e.node("Sub", y + "/w", {m, y + "/next"}, {y + "/w"});
    e.node("Unsqueeze", y + "/w3", {y + "/w", axes("axis2w", {2})}, {y + "/w3"});
    e.node("Mul", y + "/picked", {x, y + "/w3"}, {y + "/picked"});
    reduce(e, "ReduceSum", y, y + "/picked", false);
  } else {  // first
    e.node("Gather", y + "/first", {x, e.int_scalar(y + "/zero_i", 0)}, {y + "/first"}, {{"axis", int64_t{1}}});
    e.node("Slice", y + "/m0", {m, e.ints(y + "/start0", {0}), e.ints(y + "/end1", {1}), axes("axis1f", {1})},
           {y + "/m0"});
    e.node("Mul", y, {y + "/first", y + "/m0"}, {y});
  }
}

// One ONNX RNN/GRU/LSTM node per layer on [T, N, I] (layout 0, which every opset has), with
// W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] (W's bias, then R's) built from PyTorch's
// weight_ih_l<k>[_reverse] ... in ONNX's gate order; GRU with linear_before_reset = 1 (PyTorch
// applies the reset gate after R's product). Y [T, D, N, H] becomes [T, N, D*H] for the next
// layer and [N, T, D*H] at the end.
void export_recurrent(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string &y = n.name, &op = n.op;
  const int64_t h = attr_int(n.attrs, "hidden_size"), layers = attr_int(n.attrs, "num_layers");
  const int64_t dirs = attr_bool(n.attrs, "bidirectional") ? 2 : 1;
  const Ints order = onnx_gate_order(op);
  const int64_t g = static_cast<int64_t>(order.size());
  std::string lens;
  if (!e.padding_mask_ids().empty()) {
    pad_flags(e, y);
    e.node("Cast", y + "/valid_i32", {y + "/valid"}, {y + "/valid_i32"}, {{"to", int64_t{6}}});  // INT32
    lens = reduce(e, "ReduceSum", y + "/sequence_lens", y + "/valid_i32", false);                // [N]
  }
  std::string x = y + "/x_tnc";
  e.node("Transpose", x, {n.values.at(0)}, {x}, {{"perm", Ints{1, 0, 2}}});
  for (int64_t k = 0; k < layers; ++k) {
    const std::string l = y + "/l" + std::to_string(k);
    const int64_t input = k == 0 ? n.inputs.at(0).shape.at(2) : dirs * h;
    std::vector<Tensor> w, r, b;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = "_l" + std::to_string(k) + (d == 1 ? "_reverse" : "");
      auto get = [&](const std::string& key, const Shape& shape) {
        Tensor t = e.state(n, key + suffix);
        KILN_CHECK(t.shape() == shape, ValueError, "export: node '", n.name, "' (", op, "): parameter '", key, suffix,
                   "' has shape ", shape_str(t.shape()), ", the node needs ", shape_str(shape));
        return reorder_gates(t.to(DType::f32), order, h);
      };
      w.push_back(get("weight_ih", {g * h, input}));
      r.push_back(get("weight_hh", {g * h, h}));
      b.push_back(cat({get("bias_ih", {g * h}), get("bias_hh", {g * h})}, 0));
    }
    std::vector<std::string> ins{x, e.constant(l + "/W", stack(w, 0).contiguous()),
                                 e.constant(l + "/R", stack(r, 0).contiguous()),
                                 e.constant(l + "/B", stack(b, 0).contiguous()), lens};
    if (lens.empty()) ins.pop_back();
    OnnxAttrs attrs{{"direction", std::string(dirs == 2 ? "bidirectional" : "forward")}, {"hidden_size", h}};
    if (op == "GRU") attrs.emplace_back("linear_before_reset", int64_t{1});
    if (op == "RNN")
      attrs.emplace_back("activations", Strings(static_cast<size_t>(dirs),
                                                attr_string(n.attrs, "nonlinearity") == "relu" ? "Relu" : "Tanh"));
    e.node(op, l, ins, {l + "/Y"}, attrs);
    const bool last = k + 1 == layers;
    const std::string perm_out = l + (last ? "/Y_ntdh" : "/Y_tndh");
    e.node("Transpose", perm_out, {l + "/Y"}, {perm_out}, {{"perm", last ? Ints{2, 0, 1, 3} : Ints{0, 2, 1, 3}}});
    x = last ? y : l + "/out";
    e.node("Reshape", x, {perm_out, e.ints(l + "/shape", {0, 0, dirs * h})}, {x});
  }
}

// Multi-head self-attention (torch.nn.MultiheadAttention, batch_first, q = k = v = x) on [N, T, E]
// as MatMul/Softmax: qkv = x in_proj^T + b split into H heads of E/H, softmax(q k^T / sqrt(E/H)
// + mask) v, heads joined, out_proj. The mask is -inf at padded keys (not in a sequence without
// tokens, as the native layer) and, when causal, at keys after the query.
std::string attention(OnnxEmitter& e, const OnnxExportNode& n, const std::string& prefix, const std::string& x,
                      const std::string& y, int64_t heads, bool causal) {
  const int64_t emb = n.inputs.at(0).shape.at(2), dh = emb / heads;
  const std::string p = y + "/";
  linear(e, n, prefix + "in_proj_", x, p + "qkv", emb, 3 * emb);
  e.node("Reshape", p + "qkv5", {p + "qkv", e.ints(p + "qkv_shape", {0, 0, 3, heads, dh})}, {p + "qkv5"});
  e.node("Transpose", p + "qkv_heads", {p + "qkv5"}, {p + "qkv_heads"}, {{"perm", Ints{2, 0, 3, 1, 4}}});
  for (int i = 0; i < 3; ++i) {
    const std::string part = std::string(1, "qkv"[i]);
    e.node("Gather", p + part, {p + "qkv_heads", e.int_scalar(p + part + "_index", i)}, {p + part},
           {{"axis", int64_t{0}}});  // [N, H, T, Dh]
  }
  e.node("Transpose", p + "k_t", {p + "k"}, {p + "k_t"}, {{"perm", Ints{0, 1, 3, 2}}});
  e.node("MatMul", p + "qk", {p + "q", p + "k_t"}, {p + "qk"});
  std::string scores = p + "scores";
  e.node("Mul", scores, {p + "qk", e.scalar(p + "scale", static_cast<float>(1.0 / std::sqrt(double(dh))))}, {scores});
  const std::string inf = e.scalar(p + "minus_inf", -std::numeric_limits<float>::infinity());
  const std::string zero = e.scalar(p + "zero", 0.0f);
  if (!e.padding_mask_ids().empty()) {
    pad_flags(e, p + "keys");
    e.node("Cast", p + "keys/mask", {p + "keys/valid"}, {p + "keys/mask"}, {{"to", int64_t{1}}});
    reduce(e, "ReduceSum", p + "keys/count", p + "keys/mask", true);  // [N, 1]
    e.node("Greater", p + "keys/any", {p + "keys/count", zero}, {p + "keys/any"});
    e.node("And", p + "keys/masked", {p + "keys/is_pad", p + "keys/any"}, {p + "keys/masked"});
    e.node("Unsqueeze", p + "keys/masked4", {p + "keys/masked", e.ints(p + "keys/axes12", {1, 2})},
           {p + "keys/masked4"});  // [N, 1, 1, T]
    e.node("Where", p + "keys/bias", {p + "keys/masked4", inf, zero}, {p + "keys/bias"});
    e.node("Add", p + "scores_keys", {scores, p + "keys/bias"}, {p + "scores_keys"});
    scores = p + "scores_keys";
  }
  if (causal) {  // key j > query i: Range(0, T) compared as a column and a row
    e.node("Shape", p + "causal/shape", {x}, {p + "causal/shape"});
    e.node("Gather", p + "causal/t", {p + "causal/shape", e.int_scalar(p + "causal/one", 1)}, {p + "causal/t"});
    e.node("Range", p + "causal/steps", {e.int_scalar(p + "causal/start", 0), p + "causal/t", p + "causal/one"},
           {p + "causal/steps"});
    e.node("Unsqueeze", p + "causal/query", {p + "causal/steps", e.ints(p + "causal/axis1", {1})},
           {p + "causal/query"});
    e.node("Greater", p + "causal/later", {p + "causal/steps", p + "causal/query"}, {p + "causal/later"});  // [T, T]
    e.node("Where", p + "causal/bias", {p + "causal/later", inf, zero}, {p + "causal/bias"});
    e.node("Add", p + "scores_causal", {scores, p + "causal/bias"}, {p + "scores_causal"});
    scores = p + "scores_causal";
  }
  e.node("Softmax", p + "weights", {scores}, {p + "weights"}, {{"axis", int64_t{-1}}});
  e.node("MatMul", p + "context", {p + "weights", p + "v"}, {p + "context"});  // [N, H, T, Dh]
  e.node("Transpose", p + "context_nthd", {p + "context"}, {p + "context_nthd"}, {{"perm", Ints{0, 2, 1, 3}}});
  e.node("Reshape", p + "joined", {p + "context_nthd", e.ints(p + "joined_shape", {0, 0, emb})}, {p + "joined"});
  return linear(e, n, prefix + "out_proj.", p + "joined", y, emb, emb);
}

void export_attention(OnnxEmitter& e, const OnnxExportNode& n) {
  attention(e, n, "", n.values.at(0), n.name, attr_int(n.attrs, "num_heads"), attr_bool(n.attrs, "causal"));
}

// torch.nn.TransformerEncoderLayer (batch_first, layer_norm_eps 1e-5): post-LN
// x = norm1(x + sa(x)), x = norm2(x + ff(x)); pre-LN (norm_first) x = x + sa(norm1(x)),
// x = x + ff(norm2(x)); ff = linear2(act(linear1(x))), act ReLU or GELU (the erf form).
void export_encoder_layer(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string p = n.name + "/";
  const int64_t emb = n.inputs.at(0).shape.at(2), ff = attr_int(n.attrs, "dim_feedforward");
  const bool norm_first = attr_bool(n.attrs, "norm_first");
  auto norm = [&](const std::string& which, const std::string& in, const std::string& out) {
    std::string w = e.param(n, which + ".weight", {emb});
    e.node("LayerNormalization", out, {in, w, e.param(n, which + ".bias", {emb})}, {out},
           {{"axis", int64_t{-1}}, {"epsilon", 1e-5}});
    return out;
  };
  auto self_attention = [&](const std::string& in) {
    return attention(e, n, "self_attn.", in, p + "sa", attr_int(n.attrs, "nhead"), attr_bool(n.attrs, "causal"));
  };
  auto feed_forward = [&](const std::string& in) {
    const std::string hidden = linear(e, n, "linear1.", in, p + "linear1", emb, ff), act = p + "act";
    if (attr_string(n.attrs, "activation") == "gelu") {  // 0.5 x (1 + erf(x / sqrt 2))
      e.node("Div", act + "/div", {hidden, e.scalar(act + "/sqrt2", static_cast<float>(std::sqrt(2.0)))}, {act + "/div"});
      e.node("Erf", act + "/erf", {act + "/div"}, {act + "/erf"});
      e.node("Add", act + "/one_plus", {act + "/erf", e.scalar(act + "/one", 1.0f)}, {act + "/one_plus"});
      e.node("Mul", act + "/mul_x", {hidden, act + "/one_plus"}, {act + "/mul_x"});
      e.node("Mul", act, {act + "/mul_x", e.scalar(act + "/half", 0.5f)}, {act});
    } else {
      e.node("Relu", act, {hidden}, {act});
    }
    return linear(e, n, "linear2.", act, p + "linear2", ff, emb);
  };
  const std::string& x = n.values.at(0);
  if (norm_first) {
    e.node("Add", p + "res1", {x, self_attention(norm("norm1", x, p + "norm1"))}, {p + "res1"});
    e.node("Add", n.name, {p + "res1", feed_forward(norm("norm2", p + "res1", p + "norm2"))}, {n.name});
  } else {
    e.node("Add", p + "res1", {x, self_attention(x)}, {p + "res1"});
    const std::string h = norm("norm1", p + "res1", p + "norm1");
    e.node("Add", p + "res2", {h, feed_forward(h)}, {p + "res2"});
    norm("norm2", p + "res2", n.name);
  }
}

// x + table[t] at step t: the learned weight [max_length, C], or the sinusoidal buffer pe
// [max_length, 1, C] as a constant [max_length, C]; rows Gathered by Range(0, T).
void export_positional(OnnxEmitter& e, const OnnxExportNode& n) {
  const std::string p = n.name + "/";
  const int64_t c = n.inputs.at(0).shape.at(2), max = attr_int(n.attrs, "max_length");
  std::string table;
  if (attr_string(n.attrs, "mode") == "learned") {
    table = e.param(n, "weight", {max, c});
  } else {
    Tensor pe = e.state(n, "pe");
    KILN_CHECK(pe.shape() == Shape({max, 1, c}), ValueError, "export: node '", n.name,
               "' (PositionalEmbedding): buffer 'pe' has shape ", shape_str(pe.shape()), ", the node needs [",
               max, ", 1, ", c, "]");
    table = e.constant(p + "pe", pe.reshape({max, c}).to(DType::f32).contiguous());
  }
  e.node("Shape", p + "shape", {n.values.at(0)}, {p + "shape"});
  e.node("Gather", p + "t", {p + "shape", e.int_scalar(p + "one", 1)}, {p + "t"});
  e.node("Range", p + "steps", {e.int_scalar(p + "zero", 0), p + "t", p + "one"}, {p + "steps"});
  e.node("Gather", p + "positions", {table, p + "steps"}, {p + "positions"}, {{"axis", int64_t{0}}});
  e.node("Add", n.name, {n.values.at(0), p + "positions"}, {n.name});
}

}  // namespace kiln::graph::detail
