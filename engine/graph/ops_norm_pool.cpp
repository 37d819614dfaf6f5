// Pooling, normalization and Dropout. Defaults are those of the PyTorch constructors:
// MaxPool2d(stride=None -> kernel_size, padding=0, dilation=1, ceil_mode=False),
// AvgPool2d(count_include_pad=True), BatchNorm(eps=1e-5, momentum=0.1, affine=True,
// track_running_stats=True), LayerNorm(eps=1e-5, elementwise_affine=True), Dropout(p=0.5).
#include "engine/graph/op_helpers.h"
#include "engine/nn/dropout.h"
#include "engine/nn/normalization.h"
#include "engine/nn/pooling.h"

namespace kiln::graph::detail {

namespace {

nn::Size2 pair(const Attributes& a, const char* name) {
  const auto& v = attr_ints(a, name);
  return nn::Size2(v.at(0), v.at(1));
}

// stride [] means kernel_size (PyTorch's stride=None).
nn::Size2 pool_stride(const Attributes& a) {
  return attr_ints(a, "stride").empty() ? pair(a, "kernel_size") : pair(a, "stride");
}

std::optional<std::string> check_pool(const Attributes& a) {
  if (attr_ints(a, "stride").size() == 1) return "stride expects 0 (same as kernel_size) or 2 integers, got 1";
  return std::nullopt;
}

std::vector<TensorType> infer_pool(const std::string& op, const std::vector<TensorType>& in, const Attributes& a,
                                   bool max) {
  const TensorType& t = in.at(0);
  expect_floating(op, t);
  expect_rank(op, t, 4, "[N, C, H, W]");
  expect_batched(op, t);
  nn::Size2 k = pair(a, "kernel_size"), s = pool_stride(a), p = pair(a, "padding");
  nn::Size2 d = max ? pair(a, "dilation") : nn::Size2(1);
  KILN_CHECK(2 * p.h <= k.h && 2 * p.w <= k.w, ValueError, op, ": padding ", p.str(),
             " must be at most half the kernel size ", k.str());
  const bool ceil = attr_bool(a, "ceil_mode");
  int64_t oh = pooled_size(t.shape[2], k.h, p.h, s.h, d.h, ceil), ow = pooled_size(t.shape[3], k.w, p.w, s.w, d.w, ceil);
  const bool fits = (oh > 0 || oh == kUnknownDim) && (ow > 0 || ow == kUnknownDim);  // "?": symbolic H/W
  KILN_CHECK(fits, ShapeError, op, ": input ", shape_str(t.shape), " is too small for kernel ", k.h, "x", k.w,
             " (output would be ", oh, "x", ow, ")");
  return {TensorType{t.dtype, {kBatch, t.shape[1], oh, ow}}};
}

std::vector<AttrSpec> pool_attrs(bool max) {
  std::vector<AttrSpec> v{
      ints_attr("kernel_size", {2, 2}, 2, 2, 1, 4096, "px", "Window height and width."),
      ints_attr("stride", {}, 0, 2, 1, 4096, "px", "Step of the window (height, width); empty: kernel_size."),
      ints_attr("padding", {0, 0}, 2, 2, 0, 2048, "px", "Implicit padding on each side, at most half the kernel."),
  };
  if (max) v.push_back(ints_attr("dilation", {1, 1}, 2, 2, 1, 4096, "px", "Spacing between window elements."));
  v.push_back(bool_attr("ceil_mode", false, "Round the output size up instead of down."));
  if (!max) v.push_back(bool_attr("count_include_pad", true, "Count padded zeros in the average's divisor."));
  return v;
}

OpSchema batch_norm(const std::string& name, bool two_d) {
  OpSchema s;
  s.name = name;
  s.category = "Normalization";
  s.description = two_d ? "Batch normalization over the channels of [N, C, H, W] (Ioffe & Szegedy 2015)."
                        : "Batch normalization over the features of [N, C] or [N, C, L] (Ioffe & Szegedy 2015).";
  s.inputs = {{"in", two_d ? "[N, C, H, W]" : "[N, C] or [N, C, L]"}};
  s.outputs = {{"out", "same shape"}};
  s.input_dim_attributes = {{"num_features", two_d ? size_t(4) : size_t(0), 1}};
  s.attributes = {int_attr("num_features", 32, 1, kMaxSize, "", "C, the number of channels / features."),
                  float_attr("eps", 1e-5, 0, 1, "", "Added to the variance for numerical stability."),
                  float_attr("momentum", 0.1, 0, 1, "", "Weight of the batch statistic in the running estimate."),
                  bool_attr("affine", true, "Learn a per-channel scale (weight) and shift (bias)."),
                  bool_attr("track_running_stats", true, "Keep running mean and variance for evaluation.")};
  s.infer = [name, two_d](const std::vector<TensorType>& in, const Attributes& a) {
    const TensorType& t = in.at(0);
    expect_floating(name, t);
    if (two_d) expect_rank(name, t, 4, "[N, C, H, W]");
    else KILN_CHECK(t.shape.size() == 2 || t.shape.size() == 3, ShapeError, name, " expects input [N, C] or [N, C, L], got ",
                    shape_str(t.shape));
    expect_batched(name, t);
    KILN_CHECK(t.shape[1] == attr_int(a, "num_features"), ShapeError, name, " expects ", attr_int(a, "num_features"),
               " channels, got ", shape_str(t.shape));
    return std::vector<TensorType>{t};
  };
  s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
    std::vector<ParamSpec> p;
    if (attr_bool(a, "affine")) p = {{"weight", {attr_int(a, "num_features")}}, {"bias", {attr_int(a, "num_features")}}};
    return p;
  };
  s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes&) {
    return sample_numel(in.at(0).shape);
  };
  s.build = [two_d](const std::vector<TensorType>&, const Attributes& a) -> std::shared_ptr<nn::Module> {
    const int64_t c = attr_int(a, "num_features");
    const double eps = attr_float(a, "eps"), momentum = attr_float(a, "momentum");
    const bool affine = attr_bool(a, "affine"), track = attr_bool(a, "track_running_stats");
    if (two_d) return std::make_shared<nn::BatchNorm2d>(c, eps, momentum, affine, track);
    return std::make_shared<nn::BatchNorm1d>(c, eps, momentum, affine, track);
  };
  s.forward = module_forward;
  return s;
}

}  // namespace

void register_norm_pool_ops(OpRegistry& r) {
  for (bool max : {true, false}) {
    OpSchema s;
    s.name = max ? "MaxPool2d" : "AvgPool2d";
    s.category = "Pooling";
    s.description = max ? "Maximum over each window of [N, C, H, W] (torch.nn.MaxPool2d)."
                        : "Mean over each window of [N, C, H, W] (torch.nn.AvgPool2d).";
    s.inputs = {{"in", "[N, C, H, W]"}};
    s.outputs = {{"out", "[N, C, Ho, Wo]"}};
    s.attributes = pool_attrs(max);
    s.check = check_pool;
    s.infer = [name = s.name, max](const std::vector<TensorType>& in, const Attributes& a) {
      return infer_pool(name, in, a, max);
    };
    if (!max)
      s.macs = [](const std::vector<TensorType>&, const std::vector<TensorType>& out, const Attributes& a) {
        const auto& k = attr_ints(a, "kernel_size");
        return sat_mul(sample_numel(out.at(0).shape), sat_mul(k.at(0), k.at(1)));
      };
    s.build = [max](const std::vector<TensorType>&, const Attributes& a) -> std::shared_ptr<nn::Module> {
      if (max)
        return std::make_shared<nn::MaxPool2d>(pair(a, "kernel_size"), pool_stride(a), pair(a, "padding"),
                                               pair(a, "dilation"), attr_bool(a, "ceil_mode"));
      return std::make_shared<nn::AvgPool2d>(pair(a, "kernel_size"), pool_stride(a), pair(a, "padding"),
                                             attr_bool(a, "ceil_mode"), attr_bool(a, "count_include_pad"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "AdaptiveAvgPool2d";
    s.category = "Pooling";
    s.description = "Averages [N, C, H, W] down to a fixed output size whatever H and W; [1, 1] is a global "
                    "average pool (torch.nn.AdaptiveAvgPool2d).";
    s.inputs = {{"in", "[N, C, H, W]"}};
    s.outputs = {{"out", "[N, C, oh, ow]"}};
    s.attributes = {ints_attr("output_size", {1, 1}, 2, 2, 1, 4096, "px", "Output height and width.")};
    s.infer = [](const std::vector<TensorType>& in, const Attributes& a) {
      const TensorType& t = in.at(0);
      expect_floating("AdaptiveAvgPool2d", t);
      expect_rank("AdaptiveAvgPool2d", t, 4, "[N, C, H, W]");
      expect_batched("AdaptiveAvgPool2d", t);
      const auto& o = attr_ints(a, "output_size");
      return std::vector<TensorType>{{t.dtype, {kBatch, t.shape[1], o.at(0), o.at(1)}}};
    };
    s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes&) {
      return sample_numel(in.at(0).shape);
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::make_shared<nn::AdaptiveAvgPool2d>(pair(a, "output_size"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  r.add(batch_norm("BatchNorm1d", false));
  r.add(batch_norm("BatchNorm2d", true));
  {
    OpSchema s;
    s.name = "LayerNorm";
    s.category = "Normalization";
    s.description = "Normalizes each sample over its last dims (Ba et al. 2016; torch.nn.LayerNorm).";
    s.inputs = {{"in", "[N, *, *normalized_shape]"}};
    s.outputs = {{"out", "same shape"}};
    s.attributes = {ints_attr("normalized_shape", {128}, 1, 8, 1, kMaxSize, "", "The trailing dims normalized over."),
                    float_attr("eps", 1e-5, 0, 1, "", "Added to the variance for numerical stability."),
                    bool_attr("elementwise_affine", true, "Learn a scale (weight) and shift (bias) per element.")};
    s.infer = [](const std::vector<TensorType>& in, const Attributes& a) {
      const TensorType& t = in.at(0);
      expect_floating("LayerNorm", t);
      expect_batched("LayerNorm", t);
      const auto& ns = attr_ints(a, "normalized_shape");
      bool fits = t.shape.size() > ns.size() && std::equal(ns.begin(), ns.end(), t.shape.end() - static_cast<long>(ns.size()));
      KILN_CHECK(fits, ShapeError, "LayerNorm expects trailing dims ", attr_str(ns), ", got ", shape_str(t.shape));
      return std::vector<TensorType>{t};
    };
    s.parameters = [](const std::vector<TensorType>&, const Attributes& a) {
      std::vector<ParamSpec> p;
      if (attr_bool(a, "elementwise_affine")) p = {{"weight", attr_ints(a, "normalized_shape")}, {"bias", attr_ints(a, "normalized_shape")}};
      return p;
    };
    s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes&) {
      return sample_numel(in.at(0).shape);
    };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::make_shared<nn::LayerNorm>(attr_ints(a, "normalized_shape"), attr_float(a, "eps"),
                                             attr_bool(a, "elementwise_affine"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Dropout";
    s.category = "Regularization";
    s.description = "In training, zeroes each element with probability p and scales the rest by 1/(1-p) "
                    "(Srivastava et al. 2014); identity in evaluation.";
    s.inputs = {{"in", "any shape"}};
    s.outputs = {{"out", "same shape"}};
    s.attributes = {float_attr("p", 0.5, 0, 1, "", "Probability of zeroing an element.")};
    s.infer = [](const std::vector<TensorType>& in, const Attributes&) { return same_type("Dropout", in); };
    s.build = [](const std::vector<TensorType>&, const Attributes& a) { return std::make_shared<nn::Dropout>(attr_float(a, "p")); };
    s.forward = module_forward;
    r.add(std::move(s));
  }
}

}  // namespace kiln::graph::detail
