// ONNX import and export rules of the native ops (OpSchema::onnx_import, onnx_export): one
// table entry per op (register_onnx_rules; the export rules live in ops_onnx_export.cpp and
// ops_onnx_sequence.cpp). Import: which ai.onnx op types each schema claims and how attributes
// and initializers become its attributes and state_dict entries. Semantics from onnx.ai
// Operators.md (opset 13 on; the import maps nothing below: graph_import.h) and the PyTorch
// constructors (ops_*.cpp). A node whose form the native op cannot express returns the
// reason, and the import keeps it as onnx.<op_type>.
#include <algorithm>
#include <cmath>

#include "engine/graph/op_helpers.h"
#include "engine/graph/ops_onnx.h"

namespace kiln::graph::detail {

namespace {

using Ints = std::vector<int64_t>;

int64_t int_of(const OnnxNodeView& v, const std::string& name, int64_t def) {
  auto it = v.attributes.find(name);
  return it != v.attributes.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : def;
}
double float_of(const OnnxNodeView& v, const std::string& name, double def) {
  auto it = v.attributes.find(name);
  return it != v.attributes.end() && std::holds_alternative<double>(it->second) ? std::get<double>(it->second) : def;
}
std::string string_of(const OnnxNodeView& v, const std::string& name, const std::string& def) {
  auto it = v.attributes.find(name);
  return it != v.attributes.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second)
                                                                                      : def;
}
Ints ints_of(const OnnxNodeView& v, const std::string& name, const Ints& def) {
  auto it = v.attributes.find(name);
  return it != v.attributes.end() && std::holds_alternative<Ints>(it->second) ? std::get<Ints>(it->second) : def;
}

bool present(const OnnxNodeView& v, size_t i) { return i < v.inputs.size() && v.inputs[i].present; }
// The constant at input i, or nullptr when it is absent or computed at run time.
const Tensor* constant(const OnnxNodeView& v, size_t i) {
  return present(v, i) && v.inputs[i].constant.defined() ? &v.inputs[i].constant : nullptr;
}
size_t rank(const OnnxNodeView& v, size_t i = 0) { return present(v, i) ? v.inputs[i].type.shape.size() : 0; }
std::string ints_str(const Ints& v) { return attr_str(AttrValue(v)); }

// The first read output beyond output 0, as a reason; "" when only output 0 is read.
std::string extra_outputs_read(const OnnxNodeView& v) {
  for (size_t i = 1; i < v.outputs.size(); ++i)
    if (v.output_read(i)) return "its output " + std::to_string(i) + " is read, the native op has one output";
  return "";
}

// A weight at input i: a float32 initializer of the given rank, or the reason it is not.
std::string weight_problem(const OnnxNodeView& v, size_t i, size_t want_rank, const char* what) {
  const Tensor* t = constant(v, i);
  if (!t) return std::string("its ") + what + " (input " + std::to_string(i) + ") is computed at run time, not an initializer";
  if (t->dtype() != DType::f32) return std::string("its ") + what + " is " + dtype_name(t->dtype()) + ", native layers hold f32";
  if (static_cast<size_t>(t->dim()) != want_rank)
    return std::string("its ") + what + " has shape " + shape_str(t->shape()) + ", expected rank " + std::to_string(want_rank);
  return "";
}

// Symmetric 2-d pads [top, left, bottom, right] -> [top, left]; auto_pad must be NOTSET or VALID.
std::variant<Ints, std::string> padding_2d(const OnnxNodeView& v) {
  const std::string auto_pad = string_of(v, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return "auto_pad " + auto_pad + " has no fixed padding";
  const Ints pads = auto_pad == "VALID" ? Ints{0, 0, 0, 0} : ints_of(v, "pads", {0, 0, 0, 0});
  if (pads.size() != 4) return "pads " + ints_str(pads) + " are not 2-d";
  if (pads[0] != pads[2] || pads[1] != pads[3]) return "pads " + ints_str(pads) + " are asymmetric";
  return Ints{pads[0], pads[1]};
}

// Conv -> Conv2d, ConvTranspose -> ConvTranspose2d (weight [in, out/group, kH, kW]; output_padding
// below the stride, as PyTorch requires, and no output_shape).
OnnxMapResult map_conv(const OnnxNodeView& v) {
  if (rank(v) != 4) return "input is not [N, C, H, W]";
  if (auto why = weight_problem(v, 1, 4, "weight"); !why.empty()) return why;
  const Tensor& w = *constant(v, 1);
  const int64_t cin = v.inputs[0].type.shape[1], group = int_of(v, "group", 1);
  if (is_symbolic(cin)) return "its input channel count is symbolic";
  const Ints kernel{w.shape()[2], w.shape()[3]};
  if (ints_of(v, "kernel_shape", kernel) != kernel) return "kernel_shape differs from the weight's shape";
  auto pads = padding_2d(v);
  if (auto* why = std::get_if<std::string>(&pads)) return *why;
  const bool transposed = v.op_type == "ConvTranspose";
  const int64_t cout = transposed ? w.shape()[1] * group : w.shape()[0];
  if (transposed && w.shape()[0] != cin)
    return "its weight " + shape_str(w.shape()) + " does not take the input's " + std::to_string(cin) + " channels";
  OnnxMapping m;
  const bool bias = present(v, 2);
  if (bias) {
    if (auto why = weight_problem(v, 2, 1, "bias"); !why.empty()) return why;
    m.state["bias"] = *constant(v, 2);
  }
  m.state["weight"] = w;
  const Ints stride = ints_of(v, "strides", {1, 1});
  m.attrs = {{"in_channels", cin},
             {"out_channels", cout},
             {"kernel_size", kernel},
             {"stride", stride},
             {"padding", std::get<Ints>(pads)},
             {"dilation", ints_of(v, "dilations", {1, 1})},
             {"groups", group},
             {"bias", bias}};
  if (transposed) {
    if (!ints_of(v, "output_shape", {}).empty()) return "its output_shape attribute sets the size; the native op takes output_padding";
    const Ints outpad = ints_of(v, "output_padding", {0, 0});
    if (outpad.size() != 2 || stride.size() != 2 || outpad[0] >= stride[0] || outpad[1] >= stride[1])
      return "output_padding " + ints_str(outpad) + " is not below the strides " + ints_str(stride);
    m.attrs["output_padding"] = outpad;
  }
  return m;
}

// Linear from a weight stored [in, out] (MatMul, Gemm transB=0) or [out, in] (Gemm transB=1).
OnnxMapResult linear(const OnnxNodeView& v, bool out_in, size_t bias_input) {
  if (auto why = weight_problem(v, 1, 2, "weight"); !why.empty()) return why;
  const Tensor& b = *constant(v, 1);
  OnnxMapping m;
  m.state["weight"] = out_in ? b : b.t().contiguous();
  const int64_t out = m.state["weight"].shape()[0], in = m.state["weight"].shape()[1];
  const bool bias = present(v, bias_input);
  if (bias) {
    const Tensor* c = constant(v, bias_input);
    if (!c) return "its bias (input " + std::to_string(bias_input) + ") is computed at run time, not an initializer";
    if (c->dtype() != DType::f32 || c->numel() != out || (c->dim() == 2 && c->shape()[0] != 1) || c->dim() > 2)
      return "its bias " + c->str() + " is not one f32 value per output feature (" + std::to_string(out) + ")";
    m.state["bias"] = c->reshape({out}).contiguous();
  }
  m.attrs = {{"in_features", in}, {"out_features", out}, {"bias", bias}};
  return m;
}

OnnxMapResult map_gemm(const OnnxNodeView& v) {
  if (int_of(v, "transA", 0) != 0) return "transA = 1 transposes the input";
  if (float_of(v, "alpha", 1.0) != 1.0 || (present(v, 2) && float_of(v, "beta", 1.0) != 1.0))
    return "alpha or beta is not 1";
  return linear(v, int_of(v, "transB", 0) != 0, 2);
}

OnnxMapResult map_matmul(const OnnxNodeView& v) {
  if (rank(v) < 2) return "input has rank below 2";
  return linear(v, false, 2);  // input 2: the bias of a fused MatMul + Add (OnnxNodeView)
}

OnnxMapResult map_batch_norm(const OnnxNodeView& v, bool two_d) {
  const size_t r = rank(v);
  if (r < 2 || r > 4) return "input is not [N, C], [N, C, L] or [N, C, H, W]";
  if (int_of(v, "training_mode", 0) != 0) return "training_mode = 1 normalizes with the batch's statistics";
  if (auto why = extra_outputs_read(v); !why.empty()) return why;
  OnnxMapping m;
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (size_t i = 0; i < 4; ++i) {
    if (auto why = weight_problem(v, i + 1, 1, names[i]); !why.empty()) return why;
    m.state[names[i]] = *constant(v, i + 1);
  }
  m.state["num_batches_tracked"] = Tensor::zeros({}, DType::i64);
  if (!two_d) m.op = "BatchNorm1d";
  // ONNX weighs the running value, PyTorch the batch's. Defaults as the float32 an ONNX
  // attribute holds, so that export -> import gives the same attributes.
  const double momentum = 1.0 - float_of(v, "momentum", static_cast<double>(0.9f));
  m.attrs = {{"num_features", m.state["weight"].shape()[0]},
             {"eps", float_of(v, "epsilon", static_cast<double>(1e-5f))},
             {"momentum", std::clamp(momentum, 0.0, 1.0)},
             {"affine", true},
             {"track_running_stats", true}};
  return m;
}

// LayerNormalization over the dims from `axis` on -> LayerNorm (Scale the weight, B the bias:
// zeros when absent).
OnnxMapResult map_layer_norm(const OnnxNodeView& v) {
  if (auto why = extra_outputs_read(v); !why.empty()) return why;
  const SymShape& in = v.inputs.at(0).type.shape;
  int64_t axis = int_of(v, "axis", -1);
  axis = axis < 0 ? axis + static_cast<int64_t>(in.size()) : axis;
  if (axis < 1 || axis >= static_cast<int64_t>(in.size())) return "axis " + std::to_string(axis) + " includes the batch";
  const Ints normalized(in.begin() + axis, in.end());
  for (int64_t d : normalized)
    if (is_symbolic(d)) return "it normalizes over a symbolic dim";
  const size_t r = normalized.size();
  if (auto why = weight_problem(v, 1, r, "scale"); !why.empty()) return why;
  OnnxMapping m;
  m.state["weight"] = *constant(v, 1);
  if (present(v, 2)) {
    if (auto why = weight_problem(v, 2, r, "bias"); !why.empty()) return why;
    m.state["bias"] = *constant(v, 2);
  } else {
    m.state["bias"] = Tensor::zeros(Shape(normalized.begin(), normalized.end()));
  }
  m.attrs = {{"normalized_shape", normalized},
             {"eps", float_of(v, "epsilon", static_cast<double>(1e-5f))},
             {"elementwise_affine", true}};
  return m;
}

OnnxMapResult map_pool(const OnnxNodeView& v, bool max) {
  if (rank(v) != 4) return "input is not [N, C, H, W]";
  if (auto why = extra_outputs_read(v); !why.empty()) return why;
  const Ints kernel = ints_of(v, "kernel_shape", {});
  if (kernel.size() != 2) return "kernel_shape " + ints_str(kernel) + " is not 2-d";
  if (max && int_of(v, "storage_order", 0) != 0) return "storage_order 1";
  auto pads = padding_2d(v);
  if (auto* why = std::get_if<std::string>(&pads)) return *why;
  OnnxMapping m;
  m.attrs = {{"kernel_size", kernel},
             {"stride", ints_of(v, "strides", {1, 1})},  // ONNX's default 1, PyTorch's the kernel size
             {"padding", std::get<Ints>(pads)},
             {"ceil_mode", int_of(v, "ceil_mode", 0) != 0}};
  if (max) m.attrs["dilation"] = ints_of(v, "dilations", {1, 1});
  else if (ints_of(v, "dilations", {1, 1}) != Ints{1, 1}) return "AveragePool with dilations";
  else m.attrs["count_include_pad"] = int_of(v, "count_include_pad", 0) != 0;
  return m;
}

OnnxMapResult map_clip(const OnnxNodeView& v) {
  double lo = -INFINITY, hi = INFINITY;
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!present(v, i)) continue;
    const Tensor* t = constant(v, i);
    if (!t || t->numel() != 1) return "its bounds are not constant scalars";
    (i == 1 ? lo : hi) = t->to_vector<double>()[0];
  }
  if (lo != 0 || hi != 6) return "Clip(" + std::to_string(lo) + ", " + std::to_string(hi) + ") is not ReLU6's Clip(0, 6)";
  return OnnxMapping{};
}

OnnxMapResult map_softmax(const OnnxNodeView& v) {
  OnnxMapping m;
  m.attrs = {{"dim", int_of(v, "axis", -1)}};
  return m;
}

OnnxMapResult map_elementwise(const OnnxNodeView& v) {
  OnnxMapping m;
  m.data_inputs.clear();
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    if (constant(v, i)) return "input " + std::to_string(i) + " is a constant; the native op takes tensors from other nodes";
    m.data_inputs.push_back(i);
  }
  if (m.data_inputs.size() < 2 || m.data_inputs.size() > 8) return "it has " + std::to_string(m.data_inputs.size()) + " inputs, the native op 2 to 8";
  m.attrs = {{"num_inputs", static_cast<int64_t>(m.data_inputs.size())}};
  if (v.op_type == "Concat") m.attrs["dim"] = int_of(v, "axis", 1);
  return m;
}

// Reshape to [0 or N or -1, *sample]: the batch kept (a -1 first, with none in `sample`, keeps
// it when the sample sizes match: the native infer checks that).
OnnxMapResult map_reshape(const OnnxNodeView& v) {
  const Tensor* s = constant(v, 1);
  if (!s) return "its shape (input 1) is computed at run time";
  const Ints shape = s->to_vector<int64_t>();
  const SymShape& in = v.inputs[0].type.shape;
  if (shape.empty() || in.empty()) return "it reshapes to or from a scalar";
  const bool allowzero = int_of(v, "allowzero", 0) != 0;  // a 0 is then a size, not a copy
  if (allowzero && std::count(shape.begin(), shape.end(), 0) > 0) return "allowzero = 1 with a 0 in its shape";
  Ints sample(shape.begin() + 1, shape.end());
  const bool keeps = shape[0] == 0 || shape[0] == in[0] ||
                     (shape[0] == -1 && std::count(sample.begin(), sample.end(), -1) == 0);
  if (!keeps) return "its shape " + ints_str(shape) + " does not keep the batch dimension";
  for (size_t i = 0; i < sample.size(); ++i)
    if (sample[i] == 0) {  // 0 copies the input's dim
      if (i + 1 >= in.size() || is_symbolic(in[i + 1])) return "its shape copies a symbolic dim";
      sample[i] = in[i + 1];
    }
  OnnxMapping m;
  m.attrs = {{"shape", sample}};
  return m;
}

OnnxMapResult map_flatten(const OnnxNodeView& v) {
  if (int_of(v, "axis", 1) != 1) return "axis " + std::to_string(int_of(v, "axis", 1)) + " is not 1";
  if (rank(v) < 2) return "input has rank below 2";
  OnnxMapping m;
  m.attrs = {{"start_dim", int64_t{1}}, {"end_dim", int64_t{-1}}};
  return m;
}

OnnxMapResult map_dropout(const OnnxNodeView& v) {
  if (auto why = extra_outputs_read(v); !why.empty()) return why;
  double p = 0.5;
  if (present(v, 1)) {
    const Tensor* r = constant(v, 1);
    if (!r) return "its ratio is computed at run time";
    p = r->to_vector<double>().at(0);
  }
  if (present(v, 2)) {
    const Tensor* t = constant(v, 2);
    if (!t || t->to_vector<double>().at(0) != 0) return "training_mode is not a constant false";
  }
  OnnxMapping m;
  m.attrs = {{"p", p}};
  return m;
}

OnnxMapResult map_gather(const OnnxNodeView& v) {
  if (int_of(v, "axis", 0) != 0) return "axis is not 0";
  if (auto why = weight_problem(v, 0, 2, "table"); !why.empty()) return why;
  if (constant(v, 1)) return "its indices are constant";
  const Tensor& w = *constant(v, 0);
  OnnxMapping m;
  m.data_inputs = {1};
  m.state["weight"] = w;
  m.attrs = {{"num_embeddings", w.shape()[0]}, {"embedding_dim", w.shape()[1]}};
  return m;
}

OnnxMapResult no_attributes(const OnnxNodeView&) { return OnnxMapping{}; }

}  // namespace

void register_onnx_rules(OpRegistry& r) {
  using Fn = std::function<OnnxMapResult(const OnnxNodeView&)>;
  using Export = std::function<void(OnnxEmitter&, const OnnxExportNode&)>;
  // One entry per op: the ONNX op types its import claims, the import rule (empty: none) and
  // the export rule (ops_onnx.h).
  const std::vector<std::tuple<const char*, std::vector<std::string>, Fn, Export>> rules{
      {"Conv2d", {"Conv"}, map_conv, export_conv},
      {"ConvTranspose2d", {"ConvTranspose"}, map_conv, export_conv},
      {"Linear", {"Gemm", "MatMul"}, [](const OnnxNodeView& v) { return v.op_type == "Gemm" ? map_gemm(v) : map_matmul(v); },
       export_linear},
      {"Embedding", {"Gather"}, map_gather, export_embedding},
      {"BatchNorm2d", {"BatchNormalization"}, [](const OnnxNodeView& v) { return map_batch_norm(v, rank(v) == 4); },
       export_batch_norm},
      {"BatchNorm1d", {}, nullptr, export_batch_norm},  // imported through BatchNorm2d's rule (OnnxMapping::op)
      {"LayerNorm", {"LayerNormalization"}, map_layer_norm, export_layer_norm},
      {"MaxPool2d", {"MaxPool"}, [](const OnnxNodeView& v) { return map_pool(v, true); }, export_pool},
      {"AvgPool2d", {"AveragePool"}, [](const OnnxNodeView& v) { return map_pool(v, false); }, export_pool},
      {"AdaptiveAvgPool2d", {"GlobalAveragePool", "ReduceMean"},
       [](const OnnxNodeView& v) -> OnnxMapResult {
         if (rank(v) != 4) return "input is not [N, C, H, W]";
         if (v.op_type == "ReduceMean") {  // over H and W, kept: PyTorch 2's form of a global average pool
           Ints axes = ints_of(v, "axes", {});  // an attribute below opset 18, input 1 from it on
           if (const Tensor* a = constant(v, 1)) axes = a->to_vector<int64_t>();
           else if (present(v, 1)) return "its axes are computed at run time";
           for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
           std::sort(axes.begin(), axes.end());
           if (axes != Ints{2, 3} || int_of(v, "keepdims", 1) != 1) return "it is not a mean over H and W with keepdims";
         }
         OnnxMapping m;
         m.attrs = {{"output_size", Ints{1, 1}}};
         return m;
       },
       export_adaptive_pool},
      {"Dropout", {"Dropout"}, map_dropout, export_same},
      {"ReLU6", {"Clip"}, map_clip, export_relu6},
      {"LeakyReLU", {"LeakyRelu"},
       [](const OnnxNodeView& v) -> OnnxMapResult {
         OnnxMapping m;
         m.attrs = {{"negative_slope", float_of(v, "alpha", 0.01)}};
         return m;
       },
       export_leaky_relu},
      {"GELU", {"Gelu"},
       [](const OnnxNodeView& v) -> OnnxMapResult {
         OnnxMapping m;
         m.attrs = {{"approximate", string_of(v, "approximate", "none")}};
         return m;
       },
       export_gelu},
      {"SiLU", {"kiln.Silu"}, no_attributes, export_silu},
      {"Softmax", {"Softmax"}, map_softmax, export_softmax},
      {"LogSoftmax", {"LogSoftmax"}, map_softmax, export_softmax},
      {"Add", {"Add"}, map_elementwise, export_elementwise},
      {"Mul", {"Mul"}, map_elementwise, export_elementwise},
      {"Concat", {"Concat"}, map_elementwise, export_concat},
      {"Reshape", {"Reshape"}, map_reshape, export_reshape},
      {"Flatten", {"Flatten"}, map_flatten, export_flatten},
      {"Identity", {"Identity"}, no_attributes, export_same},  // only where it is a graph output; elsewhere removed
      {"SequencePool", {"kiln.SequencePool"},
       [](const OnnxNodeView& v) -> OnnxMapResult {
         OnnxMapping m;
         m.attrs = {{"mode", string_of(v, "mode", "mean")}};
         return m;
       },
       export_sequence_pool},
      {"RNN", {"RNN"}, map_recurrent, export_recurrent},
      {"LSTM", {"LSTM"}, map_recurrent, export_recurrent},
      {"GRU", {"GRU"}, map_recurrent, export_recurrent},
      {"MultiheadAttention", {}, nullptr, export_attention},
      {"TransformerEncoderLayer", {}, nullptr, export_encoder_layer},
      {"PositionalEmbedding", {}, nullptr, export_positional},
  };
  for (const auto& [name, types, fn, exporter] : rules) {
    OpSchema* s = r.mutable_find(name);
    if (!s) throw ValueError(std::string("ONNX rule for unknown op '") + name + "'");
    if (fn) s->onnx_import = {types, fn};
    s->onnx_export = exporter;
  }
  for (const OpSchema* s : r.all())  // unary layers: their one ONNX operator, with its fixed float attributes
    if (s->unary_layer) {
      OpSchema* m = r.mutable_find(s->name);
      m->onnx_import = {
          {s->unary_layer->onnx_op_type}, [layer = *s->unary_layer](const OnnxNodeView& v) -> OnnxMapResult {
            auto why = layer.onnx_mismatch([&](const std::string& n, double d) { return float_of(v, n, d); });
            if (why) return *why;
            return OnnxMapping{};
          }};
      m->onnx_export = [layer = *s->unary_layer](OnnxEmitter& e, const OnnxExportNode& n) {
        OnnxAttrs attrs;
        for (const auto& f : layer.onnx_floats) attrs.emplace_back(f.name, f.value);
        e.node(layer.onnx_op_type, n.name, {n.values.at(0)}, {n.name}, attrs);
      };
    }
}

}  // namespace kiln::graph::detail
