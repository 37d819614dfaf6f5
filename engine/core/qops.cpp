#include "engine/core/qops.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"

namespace kiln::quant {
namespace {

void check_common(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const QuantizedParams& q, DType out_dtype) {
  KILN_CHECK(x.dtype() == DType::u8 && weight.dtype() == DType::i8, DTypeError, op, ": expects a u8 input and an i8 ",
             "weight, got ", dtype_name(x.dtype()), " and ", dtype_name(weight.dtype()));
  KILN_CHECK(out_dtype == DType::f32 || out_dtype == DType::u8, DTypeError, op, ": output must be f32 or u8, got ",
             dtype_name(out_dtype));
  check_same_device(x, weight, op);
  const int64_t cout = weight.size(0);
  if (bias.defined()) {
    check_same_device(x, bias, op);
    KILN_CHECK(bias.dtype() == DType::i32 && bias.dim() == 1 && bias.size(0) == cout, ShapeError, op, ": bias ",
               dtype_name(bias.dtype()), shape_str(bias.shape()), " must be i32 [", cout, "]");
  }
  KILN_CHECK(static_cast<int64_t>(q.weight_scales.size()) == cout, ValueError, op, ": ", q.weight_scales.size(),
             " weight scales for ", cout, " output channels");
  KILN_CHECK(x.backend()->supports(OpId::qconv2d_forward, DType::u8), DTypeError, op, ": ", x.device().str(),
             " has no int8 kernels");
}

int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

}  // namespace

bool int8_supported(const Device& device) {
  Backend* b = backend_for(device);
  return b->supports(OpId::qconv2d_forward, DType::u8) && b->supports(OpId::qlinear_forward, DType::u8);
}

Tensor quantized_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                        const QuantizedParams& q, DType out_dtype) {
  KILN_CHECK(x.dim() == 4 && weight.dim() == 4, ShapeError, "quantized_conv2d: input ", shape_str(x.shape()),
             " and weight ", shape_str(weight.shape()), " must be 4-d");
  check_common("quantized_conv2d", x, weight, bias, q, out_dtype);
  KILN_CHECK(p.groups > 0 && x.size(1) == weight.size(1) * p.groups && weight.size(0) % p.groups == 0, ShapeError,
             "quantized_conv2d: input ", shape_str(x.shape()), " does not match weight ", shape_str(weight.shape()),
             " with groups=", p.groups);
  for (int i = 0; i < 2; ++i)
    KILN_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, ValueError,
               "quantized_conv2d: stride and dilation must be positive and padding non-negative");
  const int64_t oh = out_size(x.size(2), weight.size(2), p.padding[0], p.stride[0], p.dilation[0]);
  const int64_t ow = out_size(x.size(3), weight.size(3), p.padding[1], p.stride[1], p.dilation[1]);
  KILN_CHECK(oh > 0 && ow > 0, ShapeError, "quantized_conv2d: input ", shape_str(x.shape()),
             " is smaller than the kernel of weight ", shape_str(weight.shape()));
  const Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = Tensor::empty({x.size(0), weight.size(0), oh, ow}, out_dtype, x.device());
  if (out.numel()) x.backend()->qconv2d_forward(out.arg(), xc.arg(), wc.arg(), bc.defined() ? bc.arg() : TensorArg{}, p, q);
  return out;
}

bool u8_max_pool_supported(const Device& device) {
  return backend_for(device)->supports(OpId::max_pool2d_forward, DType::u8);
}

Tensor quantized_max_pool2d(const Tensor& x, const Pool2dParams& p) {
  KILN_CHECK(x.dtype() == DType::u8 && x.dim() == 4, DTypeError, "quantized_max_pool2d: expects a u8 [N, C, H, W] ",
             "input, got ", dtype_name(x.dtype()), shape_str(x.shape()));
  KILN_CHECK(u8_max_pool_supported(x.device()), DTypeError, "quantized_max_pool2d: ", x.device().str(),
             " has no u8 max pooling");
  Shape s = x.shape();
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(p.kernel[i] >= 1 && p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0, ValueError,
               "quantized_max_pool2d: kernel, stride and dilation must be positive and padding non-negative");
    // PyTorch's pooling_output_shape (as the backend checks it).
    const int64_t in = x.size(2 + i);
    const int64_t num = in + 2 * p.padding[i] - p.dilation[i] * (p.kernel[i] - 1) - 1 + (p.ceil_mode ? p.stride[i] - 1 : 0);
    int64_t out = (num >= 0 ? num / p.stride[i] : -((-num + p.stride[i] - 1) / p.stride[i])) + 1;
    if (p.ceil_mode && (out - 1) * p.stride[i] >= in + p.padding[i]) --out;
    KILN_CHECK(out > 0, ShapeError, "quantized_max_pool2d: input ", shape_str(x.shape()), " is smaller than the window");
    s[2 + i] = out;
  }
  const Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(s, DType::u8, x.device());
  if (out.numel()) x.backend()->max_pool2d_forward(out.arg(), TensorArg{}, xc.arg(), p);
  return out;
}

Tensor quantized_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const QuantizedParams& q,
                        DType out_dtype) {
  KILN_CHECK(x.dim() >= 2 && weight.dim() == 2 && x.size(-1) == weight.size(1), ShapeError,
             "quantized_linear: input ", shape_str(x.shape()), " does not match weight ", shape_str(weight.shape()),
             " (expected [N, *, ", weight.dim() == 2 ? weight.size(1) : -1, "])");
  check_common("quantized_linear", x, weight, bias, q, out_dtype);
  const int64_t k = weight.size(1), rows = x.numel() / k;
  const Tensor xc = x.contiguous().reshape({rows, k}), wc = weight.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = Tensor::empty({rows, weight.size(0)}, out_dtype, x.device());
  if (out.numel()) x.backend()->qlinear_forward(out.arg(), xc.arg(), wc.arg(), bc.defined() ? bc.arg() : TensorArg{}, q);
  Shape shape = x.shape();
  shape.back() = weight.size(0);
  return out.reshape(shape);
}

}  // namespace kiln::quant
