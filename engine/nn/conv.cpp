#include "engine/nn/conv.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/init.h"

namespace kiln::nn {

namespace {

// The constructor checks both layers share, naming the layer.
void check_conv(const char* layer, int64_t in, int64_t out, Size2 k, Size2 s, Size2 p, Size2 d, int64_t g) {
  KILN_CHECK(g > 0, ValueError, layer, ": groups must be a positive integer, got ", g);
  KILN_CHECK(in % g == 0, ValueError, layer, ": in_channels (", in, ") must be divisible by groups (", g, ")");
  KILN_CHECK(out % g == 0, ValueError, layer, ": out_channels (", out, ") must be divisible by groups (", g, ")");
  KILN_CHECK(k.h > 0 && k.w > 0 && s.h > 0 && s.w > 0 && d.h > 0 && d.w > 0 && p.h >= 0 && p.w >= 0, ValueError, layer,
             ": kernel_size, stride and dilation must be positive and padding non-negative");
}

void set_conv_params(Conv2dParams& p, Size2 stride, Size2 padding, Size2 dilation, int64_t groups) {
  p.stride[0] = stride.h, p.stride[1] = stride.w;
  p.padding[0] = padding.h, p.padding[1] = padding.w;
  p.dilation[0] = dilation.h, p.dilation[1] = dilation.w;
  p.groups = groups;
}

}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Size2 s, Size2 p, Size2 d, int64_t g, bool has_bias)
    : in_channels(in), out_channels(out), kernel_size(k), stride(s), padding(p), dilation(d), groups(g) {
  check_conv("Conv2d", in, out, k, s, p, d, g);
  weight = register_parameter("weight", Tensor::empty({out, in / g, k.h, k.w}));
  if (has_bias) bias = register_parameter("bias", Tensor::empty({out}));
  reset_parameters();
}

void Conv2d::reset_parameters() { init::reset_linear_like(weight, bias); }

Tensor Conv2d::forward(const Tensor& x) {
  Conv2dParams p;
  set_conv_params(p, stride, padding, dilation, groups);
  return conv2d(x, weight, bias, p);
}

std::string Conv2d::extra_repr() const {
  // torch's format: "3, 16, kernel_size=(3, 3), stride=(1, 1)" plus non-default settings.
  std::string s = detail::str_cat(in_channels, ", ", out_channels, ", kernel_size=", kernel_size.str(),
                                  ", stride=", stride.str());
  if (!(padding == Size2(0))) s += ", padding=" + padding.str();
  if (!(dilation == Size2(1))) s += ", dilation=" + dilation.str();
  if (groups != 1) s += detail::str_cat(", groups=", groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, Size2 k, Size2 s, Size2 p, Size2 op, int64_t g,
                                 bool has_bias, Size2 d)
    : in_channels(in),
      out_channels(out),
      kernel_size(k),
      stride(s),
      padding(p),
      output_padding(op),
      groups(g),
      dilation(d) {
  check_conv("ConvTranspose2d", in, out, k, s, p, d, g);
  KILN_CHECK(op.h >= 0 && op.w >= 0 && op.h < s.h && op.w < s.w, ValueError, "ConvTranspose2d: output_padding ",
             op.str(), " must be non-negative and smaller than the stride ", s.str());
  weight = register_parameter("weight", Tensor::empty({in, out / g, k.h, k.w}));
  if (has_bias) bias = register_parameter("bias", Tensor::empty({out}));
  reset_parameters();
}

void ConvTranspose2d::reset_parameters() { init::reset_linear_like(weight, bias); }

Tensor ConvTranspose2d::forward(const Tensor& x) {
  ConvTranspose2dParams p;
  set_conv_params(p, stride, padding, dilation, groups);
  p.output_padding[0] = output_padding.h, p.output_padding[1] = output_padding.w;
  return conv_transpose2d(x, weight, bias, p);
}

std::string ConvTranspose2d::extra_repr() const {
  // torch's format (_ConvNd.extra_repr): Conv2d's, output_padding after dilation.
  std::string s = detail::str_cat(in_channels, ", ", out_channels, ", kernel_size=", kernel_size.str(),
                                  ", stride=", stride.str());
  if (!(padding == Size2(0))) s += ", padding=" + padding.str();
  if (!(dilation == Size2(1))) s += ", dilation=" + dilation.str();
  if (!(output_padding == Size2(0))) s += ", output_padding=" + output_padding.str();
  if (groups != 1) s += detail::str_cat(", groups=", groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

}  // namespace kiln::nn
