#include "engine/nn/pooling.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"

namespace kiln::nn {

namespace {
Pool2dParams make_params(Size2 k, std::optional<Size2> s, Size2 p, Size2 d, bool ceil_mode, bool include_pad) {
  Size2 st = s.value_or(k);
  Pool2dParams out;
  out.kernel[0] = k.h, out.kernel[1] = k.w;
  out.stride[0] = st.h, out.stride[1] = st.w;
  out.padding[0] = p.h, out.padding[1] = p.w;
  out.dilation[0] = d.h, out.dilation[1] = d.w;
  out.ceil_mode = ceil_mode;
  out.count_include_pad = include_pad;
  return out;
}

std::string pair_str(const int64_t v[2]) { return Size2(v[0], v[1]).str(); }
const char* py_bool(bool b) { return b ? "True" : "False"; }
}  // namespace

MaxPool2d::MaxPool2d(Size2 k, std::optional<Size2> s, Size2 p, Size2 d, bool ceil_mode)
    : params(make_params(k, s, p, d, ceil_mode, true)) {}

Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, params); }

std::string MaxPool2d::extra_repr() const {
  return detail::str_cat("kernel_size=", pair_str(params.kernel), ", stride=", pair_str(params.stride),
                         ", padding=", pair_str(params.padding), ", dilation=", pair_str(params.dilation),
                         ", ceil_mode=", py_bool(params.ceil_mode));
}

AvgPool2d::AvgPool2d(Size2 k, std::optional<Size2> s, Size2 p, bool ceil_mode, bool count_include_pad)
    : params(make_params(k, s, p, 1, ceil_mode, count_include_pad)) {}

Tensor AvgPool2d::forward(const Tensor& x) { return avg_pool2d(x, params); }

std::string AvgPool2d::extra_repr() const {
  return detail::str_cat("kernel_size=", pair_str(params.kernel), ", stride=", pair_str(params.stride),
                         ", padding=", pair_str(params.padding));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 size) : output_size(size) {
  KILN_CHECK(size.h > 0 && size.w > 0, ValueError, "AdaptiveAvgPool2d: output size must be positive, got ",
             size.str());
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, {output_size.h, output_size.w}); }

}  // namespace kiln::nn
