#include "engine/nn/conv.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/init.h"

namespace kiln::nn {

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Size2 s, Size2 p, Size2 d, int64_t g, bool has_bias)
    : in_channels(in), out_channels(out), kernel_size(k), stride(s), padding(p), dilation(d), groups(g) {
  KILN_CHECK(g > 0, ValueError, "Conv2d: groups must be a positive integer, got ", g);
  KILN_CHECK(in % g == 0, ValueError, "Conv2d: in_channels (", in, ") must be divisible by groups (", g, ")");
  KILN_CHECK(out % g == 0, ValueError, "Conv2d: out_channels (", out, ") must be divisible by groups (", g, ")");
  KILN_CHECK(k.h > 0 && k.w > 0 && s.h > 0 && s.w > 0 && d.h > 0 && d.w > 0 && p.h >= 0 && p.w >= 0, ValueError,
             "Conv2d: kernel_size, stride and dilation must be positive and padding non-negative");
  weight = register_parameter("weight", Tensor::empty({out, in / g, k.h, k.w}));
  if (has_bias) bias = register_parameter("bias", Tensor::empty({out}));
  reset_parameters();
}

void Conv2d::reset_parameters() { init::reset_linear_like(weight, bias); }

Tensor Conv2d::forward(const Tensor& x) {
  Conv2dParams p;
  p.stride[0] = stride.h, p.stride[1] = stride.w;
  p.padding[0] = padding.h, p.padding[1] = padding.w;
  p.dilation[0] = dilation.h, p.dilation[1] = dilation.w;
  p.groups = groups;
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

}  // namespace kiln::nn
