// Layers with weights: Linear, Conv2d, ConvTranspose2d, Embedding. Attribute defaults follow the
// PyTorch constructors (torch.nn.Linear(bias=True), torch.nn.Conv2d(stride=1, padding=0,
// dilation=1, groups=1, bias=True), torch.nn.ConvTranspose2d(stride=1, padding=0,
// output_padding=0, groups=1, bias=True, dilation=1)); where PyTorch has no default (sizes), Kiln's starting
// value fits the Fashion-MNIST CNN.
#include "engine/graph/op_helpers.h"
#include "engine/nn/conv.h"
#include "engine/nn/embedding.h"
#include "engine/nn/linear.h"

namespace kiln::graph::detail {

namespace {

std::vector<TensorType> infer_linear(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t = in.at(0);
  expect_floating("Linear", t);
  expect_batched("Linear", t);
  const int64_t features = attr_int(a, "in_features");
  if (t.shape.size() < 2 || t.shape.back() != features) {
    const bool flat_fits = t.shape.size() > 2 && sample_numel(t.shape) == features;
    throw ShapeError("Linear expects input features " + std::to_string(features) + ", got " + shape_str(t.shape) +
                     (flat_fits ? " (flatten first?)" : ""));
  }
  TensorType out = t;
  out.shape.back() = attr_int(a, "out_features");
  return {out};
}

void pair_of(const Attributes& a, const std::string& name, int64_t v[2]) {
  const auto& p = attr_ints(a, name);
  v[0] = p.at(0);
  v[1] = p.at(1);
}

nn::Size2 size2_of(const Attributes& a, const std::string& name) {
  const auto& v = attr_ints(a, name);
  return {v.at(0), v.at(1)};
}

std::vector<TensorType> infer_conv2d(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t = in.at(0);
  expect_floating("Conv2d", t);
  expect_rank("Conv2d", t, 4, "[N, C, H, W]");
  expect_batched("Conv2d", t);
  const int64_t cin = attr_int(a, "in_channels"), cout = attr_int(a, "out_channels"), groups = attr_int(a, "groups");
  KILN_CHECK(t.shape[1] == cin, ShapeError, "Conv2d expects ", cin, " input channels, got ", shape_str(t.shape));
  KILN_CHECK(cin % groups == 0 && cout % groups == 0, ValueError, "Conv2d: in_channels ", cin, " and out_channels ",
             cout, " must be divisible by groups ", groups);
  int64_t k[2], s[2], p[2], d[2], o[2];
  pair_of(a, "kernel_size", k), pair_of(a, "stride", s), pair_of(a, "padding", p), pair_of(a, "dilation", d);
  for (int i = 0; i < 2; ++i) o[i] = pooled_size(t.shape[2 + static_cast<size_t>(i)], k[i], p[i], s[i], d[i], false);
  const bool fits = (o[0] > 0 || o[0] == kUnknownDim) && (o[1] > 0 || o[1] == kUnknownDim);  // "?": symbolic H/W
  KILN_CHECK(fits, ShapeError, "Conv2d: input ", shape_str(t.shape), " is too small for kernel ", k[0], "x", k[1],
             " (output would be ", o[0], "x", o[1], ")");
  return {TensorType{t.dtype, {kBatch, cout, o[0], o[1]}}};
}

std::vector<TensorType> infer_conv_transpose2d(const std::vector<TensorType>& in, const Attributes& a) {
  const char* op = "ConvTranspose2d";
  const TensorType& t = in.at(0);
  expect_floating(op, t);
  expect_rank(op, t, 4, "[N, C, H, W]");
  expect_batched(op, t);
  const int64_t cin = attr_int(a, "in_channels"), cout = attr_int(a, "out_channels"), groups = attr_int(a, "groups");
  KILN_CHECK(t.shape[1] == cin, ShapeError, op, " expects ", cin, " input channels, got ", shape_str(t.shape));
  KILN_CHECK(cin % groups == 0 && cout % groups == 0, ValueError, op, ": in_channels ", cin, " and out_channels ", cout,
             " must be divisible by groups ", groups);
  int64_t k[2], s[2], p[2], d[2], outpad[2], o[2];
  pair_of(a, "kernel_size", k), pair_of(a, "stride", s), pair_of(a, "padding", p), pair_of(a, "dilation", d);
  pair_of(a, "output_padding", outpad);
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(outpad[i] < s[i], ValueError, op, ": output_padding (", outpad[0], ", ", outpad[1],
               ") must be smaller than the stride (", s[0], ", ", s[1], ")");
    const int64_t h = t.shape[2 + static_cast<size_t>(i)];
    o[i] = is_symbolic(h) ? kUnknownDim : (h - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + outpad[i] + 1;
  }
  KILN_CHECK((o[0] > 0 || o[0] == kUnknownDim) && (o[1] > 0 || o[1] == kUnknownDim), ShapeError, op, ": input ",
             shape_str(t.shape), " with padding (", p[0], ", ", p[1], ") gives an empty output (", o[0], "x", o[1], ")");
  return {TensorType{t.dtype, {kBatch, cout, o[0], o[1]}}};
}

std::vector<TensorType> infer_embedding(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t = in.at(0);
  KILN_CHECK(is_integral(t.dtype), DTypeError, "Embedding expects integer indices, got ", t.str());
  expect_batched("Embedding", t);
  SymShape out = t.shape;
  out.push_back(attr_int(a, "embedding_dim"));
  return {TensorType{DType::f32, out}};
}

}  // namespace

void register_layer_ops(OpRegistry& r) {
  {
    OpSchema s;
    s.name = "Linear";
    s.category = "Layers";
    s.description = "Fully connected layer y = x W^T + b (torch.nn.Linear).";
    s.inputs = {{"in", "[N, *, in_features]"}};
    s.outputs = {{"out", "[N, *, out_features]"}};
    s.attributes = {int_attr("in_features", 3136, 1, kMaxSize, "", "Size of each input sample's last dimension."),
                    int_attr("out_features", 128, 1, kMaxSize, "", "Size of each output sample's last dimension."),
                    bool_attr("bias", true, "Learn an additive bias.")};
    s.input_dim_attributes = {{"in_features", 0, -1}};
    s.infer = infer_linear;
    s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
      std::vector<ParamSpec> p{{"weight", {attr_int(a, "out_features"), attr_int(a, "in_features")}}};
      if (attr_bool(a, "bias")) p.push_back({"bias", {attr_int(a, "out_features")}});
      return p;
    };
    s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes& a) {
      const int64_t rows = sample_numel(in.at(0).shape) / attr_int(a, "in_features");
      return sat_mul(rows, sat_mul(attr_int(a, "in_features"), attr_int(a, "out_features")));
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::make_shared<nn::Linear>(attr_int(a, "in_features"), attr_int(a, "out_features"), attr_bool(a, "bias"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Conv2d";
    s.category = "Layers";
    s.description = "2-d convolution over [N, C, H, W] images (torch.nn.Conv2d).";
    s.inputs = {{"in", "[N, in_channels, H, W]"}};
    s.outputs = {{"out", "[N, out_channels, Ho, Wo], Ho = floor((H + 2p - d(k-1) - 1) / s) + 1"}};
    s.attributes = {
        int_attr("in_channels", 1, 1, kMaxSize, "", "Channels of the input image."),
        int_attr("out_channels", 32, 1, kMaxSize, "", "Channels produced by the convolution (number of filters)."),
        ints_attr("kernel_size", {3, 3}, 2, 2, 1, 4096, "px", "Kernel height and width."),
        ints_attr("stride", {1, 1}, 2, 2, 1, 4096, "px", "Step of the kernel (height, width)."),
        ints_attr("padding", {0, 0}, 2, 2, 0, 4096, "px", "Zeros added on each side (height, width)."),
        ints_attr("dilation", {1, 1}, 2, 2, 1, 4096, "px", "Spacing between kernel elements (height, width)."),
        int_attr("groups", 1, 1, kMaxSize, "", "Blocked connections: both channel counts must be divisible by it."),
        bool_attr("bias", true, "Learn an additive bias per output channel.")};
    s.input_dim_attributes = {{"in_channels", 4, 1}};
    s.infer = infer_conv2d;
    s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
      const auto& k = attr_ints(a, "kernel_size");
      const int64_t cout = attr_int(a, "out_channels");
      std::vector<ParamSpec> p{{"weight", {cout, attr_int(a, "in_channels") / attr_int(a, "groups"), k.at(0), k.at(1)}}};
      if (attr_bool(a, "bias")) p.push_back({"bias", {cout}});
      return p;
    };
    s.macs = [](const std::vector<TensorType>&, const std::vector<TensorType>& out, const Attributes& a) {
      const auto& k = attr_ints(a, "kernel_size");
      const int64_t per_output = sat_mul(attr_int(a, "in_channels") / attr_int(a, "groups"), sat_mul(k.at(0), k.at(1)));
      return sat_mul(sample_numel(out.at(0).shape), per_output);
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      auto pair = [&](const char* n) { return size2_of(a, n); };
      return std::make_shared<nn::Conv2d>(attr_int(a, "in_channels"), attr_int(a, "out_channels"), pair("kernel_size"),
                                          pair("stride"), pair("padding"), pair("dilation"), attr_int(a, "groups"),
                                          attr_bool(a, "bias"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "ConvTranspose2d";
    s.category = "Layers";
    s.description = "Transposed 2-d convolution, the adjoint of Conv2d, for upsampling (torch.nn.ConvTranspose2d).";
    s.inputs = {{"in", "[N, in_channels, H, W]"}};
    s.outputs = {{"out", "[N, out_channels, Ho, Wo], Ho = (H - 1)s - 2p + d(k-1) + output_padding + 1"}};
    s.attributes = {
        int_attr("in_channels", 32, 1, kMaxSize, "", "Channels of the input image."),
        int_attr("out_channels", 16, 1, kMaxSize, "", "Channels produced by the transposed convolution."),
        ints_attr("kernel_size", {2, 2}, 2, 2, 1, 4096, "px", "Kernel height and width."),
        ints_attr("stride", {1, 1}, 2, 2, 1, 4096, "px", "Upsampling factor: the step of the kernel over the output."),
        ints_attr("padding", {0, 0}, 2, 2, 0, 4096, "px", "Rows and columns removed from each side of the output."),
        ints_attr("output_padding", {0, 0}, 2, 2, 0, 4096, "px",
                  "Rows and columns added at the bottom and right of the output; smaller than the stride."),
        int_attr("groups", 1, 1, kMaxSize, "", "Blocked connections: both channel counts must be divisible by it."),
        bool_attr("bias", true, "Learn an additive bias per output channel."),
        ints_attr("dilation", {1, 1}, 2, 2, 1, 4096, "px", "Spacing between kernel elements (height, width).")};
    s.input_dim_attributes = {{"in_channels", 4, 1}};
    s.infer = infer_conv_transpose2d;
    s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
      const auto& k = attr_ints(a, "kernel_size");
      const int64_t cout = attr_int(a, "out_channels");
      std::vector<ParamSpec> p{{"weight", {attr_int(a, "in_channels"), cout / attr_int(a, "groups"), k.at(0), k.at(1)}}};
      if (attr_bool(a, "bias")) p.push_back({"bias", {cout}});
      return p;
    };
    s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes& a) {
      // Every input element meets (out_channels / groups) kH kW weights.
      const auto& k = attr_ints(a, "kernel_size");
      const int64_t per_input = sat_mul(attr_int(a, "out_channels") / attr_int(a, "groups"), sat_mul(k.at(0), k.at(1)));
      return sat_mul(sample_numel(in.at(0).shape), per_input);
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      auto pair = [&](const char* n) { return size2_of(a, n); };
      return std::make_shared<nn::ConvTranspose2d>(attr_int(a, "in_channels"), attr_int(a, "out_channels"),
                                                   pair("kernel_size"), pair("stride"), pair("padding"),
                                                   pair("output_padding"), attr_int(a, "groups"), attr_bool(a, "bias"),
                                                   pair("dilation"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Embedding";
    s.category = "Layers";
    s.description = "Lookup table mapping integer ids to learned vectors (torch.nn.Embedding).";
    s.inputs = {{"in", "integer ids [N, *]"}};
    s.outputs = {{"out", "f32 [N, *, embedding_dim]"}};
    s.attributes = {int_attr("num_embeddings", 1000, 1, kMaxSize, "", "Size of the vocabulary (ids 0 .. n-1)."),
                    int_attr("embedding_dim", 64, 1, kMaxSize, "", "Size of each embedding vector.")};
    s.infer = infer_embedding;
    s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::vector<ParamSpec>{{"weight", {attr_int(a, "num_embeddings"), attr_int(a, "embedding_dim")}}};
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::make_shared<nn::Embedding>(attr_int(a, "num_embeddings"), attr_int(a, "embedding_dim"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
}

}  // namespace kiln::graph::detail
