// Activations (torch.nn.ReLU, ReLU6, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Hardswish, Hardsigmoid, Softmax, LogSoftmax):
// no parameters, output shaped as the input. Defaults as PyTorch: LeakyReLU
// negative_slope=0.01, GELU approximate='none'; Softmax/LogSoftmax take dim=None in
// PyTorch (deprecated implicit choice), Kiln defaults to the last dim.
#include "engine/core/ops.h"
#include "engine/graph/op_helpers.h"
#include "engine/nn/activation.h"

namespace kiln::graph::detail {

namespace {

// What every activation shares: category, one input and one output of its shape and dtype.
OpSchema elementwise_base(const std::string& name, const std::string& description) {
  OpSchema s;
  s.name = name;
  s.category = "Activations";
  s.description = description;
  s.inputs = {{"in", "any floating-point tensor"}};
  s.outputs = {{"out", "same shape"}};
  s.infer = [name](const std::vector<TensorType>& in, const Attributes&) { return same_type(name, in); };
  return s;
}

template <class M, class Make>
OpSchema activation(const std::string& name, const std::string& description, std::vector<AttrSpec> attrs, Make make) {
  OpSchema s = elementwise_base(name, description);
  s.attributes = std::move(attrs);
  s.build = [make](const std::vector<TensorType>&, const Attributes& a) -> std::shared_ptr<nn::Module> { return make(a); };
  s.forward = module_forward;
  return s;
}

// A layer that runs one plain elementwise op (OpSchema::unary_layer): no module, no attributes.
OpSchema unary_layer(const std::string& name, const std::string& description, UnaryOp op, const std::string& onnx_op_type,
                     std::vector<OpSchema::UnaryLayer::OnnxFloat> onnx_floats = {}) {
  OpSchema s = elementwise_base(name, description);
  s.forward = [op](nn::Module*, const std::vector<Tensor>& in, const Attributes&) {
    return std::vector<Tensor>{apply_unary(op, in.at(0))};
  };
  s.unary_layer = OpSchema::UnaryLayer{op, onnx_op_type, std::move(onnx_floats)};
  return s;
}

OpSchema softmax(const std::string& name, const std::string& description, bool log) {
  std::vector<AttrSpec> attrs{int_attr("dim", -1, -8, 7, "", "Dimension the probabilities sum to 1 over (negative counts from the end).")};
  OpSchema s = activation<nn::Softmax>(name, description, attrs, [log](const Attributes& a) -> std::shared_ptr<nn::Module> {
    if (log) return std::make_shared<nn::LogSoftmax>(attr_int(a, "dim"));
    return std::make_shared<nn::Softmax>(attr_int(a, "dim"));
  });
  s.infer = [name](const std::vector<TensorType>& in, const Attributes& a) {
    std::vector<TensorType> out = same_type(name, in);
    wrap_dim(name, attr_int(a, "dim"), in[0]);
    return out;
  };
  return s;
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  r.add(unary_layer("ReLU", "max(x, 0) (Nair & Hinton 2010).", UnaryOp::relu, "Relu"));
  r.add(unary_layer("Sigmoid", "1 / (1 + exp(-x)).", UnaryOp::sigmoid, "Sigmoid"));
  r.add(unary_layer("Tanh", "Hyperbolic tangent.", UnaryOp::tanh, "Tanh"));
  r.add(unary_layer("Hardswish", "x * relu6(x + 3) / 6 (Howard et al. 2019, MobileNetV3; torch.nn.Hardswish).",
                    UnaryOp::hardswish, "HardSwish"));
  r.add(unary_layer("Hardsigmoid", "relu6(x + 3) / 6 (Howard et al. 2019, MobileNetV3; torch.nn.Hardsigmoid).",
                    UnaryOp::hardsigmoid, "HardSigmoid", {{"alpha", 1.0 / 6.0, 0.2}, {"beta", 0.5, 0.5}}));
  AttrSpec slope = float_attr("negative_slope", 0.01, 0, 0, "", "Slope for x < 0.");
  slope.min.reset(), slope.max.reset();
  r.add(activation<nn::LeakyReLU>("LeakyReLU", "x for x > 0, negative_slope * x otherwise (Maas et al. 2013).", {slope},
                                  [](const Attributes& a) { return std::make_shared<nn::LeakyReLU>(attr_float(a, "negative_slope")); }));
  r.add(activation<nn::GELU>(
      "GELU", "x * Phi(x), the Gaussian error linear unit (Hendrycks & Gimpel 2016).",
      {choice_attr("approximate", "none", {"none", "tanh"}, "'tanh' uses the tanh approximation.")},
      [](const Attributes& a) { return std::make_shared<nn::GELU>(attr_string(a, "approximate")); }));
  {
    // torch.nn.ReLU6 (Krizhevsky 2010; MobileNetV2's activation): stateless, runs kiln::clamp.
    OpSchema s = activation<nn::ReLU>("ReLU6", "min(max(x, 0), 6) (torch.nn.ReLU6; MobileNetV2's activation).", {},
                                      [](const Attributes&) { return std::make_shared<nn::ReLU>(); });
    s.build = nullptr;
    s.forward = [](nn::Module*, const std::vector<Tensor>& in, const Attributes&) {
      return std::vector<Tensor>{kiln::clamp(in.at(0), 0.0, 6.0)};
    };
    r.add(std::move(s));
  }
  r.add(activation<nn::SiLU>("SiLU", "x * sigmoid(x), also called swish (Elfwing et al. 2017).", {},
                             [](const Attributes&) { return std::make_shared<nn::SiLU>(); }));
  r.add(softmax("Softmax", "exp(x) / sum(exp(x)) along dim: probabilities (torch.nn.Softmax).", false));
  r.add(softmax("LogSoftmax", "x - logsumexp(x) along dim: log-probabilities (torch.nn.LogSoftmax).", true));
}

}  // namespace kiln::graph::detail
