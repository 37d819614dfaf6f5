// CudaBackend::conv2d_forward / backward_input / backward_weight: argument checks, then
// cuDNN (conv_cudnn.cu, when the build found it) or our im2col/col2im kernels with cuBLAS
// (conv_im2col.cu). KILN_CUDA_CONV=im2col forces the second path (both pass the same tests).
#include <cstdlib>
#include <cstring>
#include <optional>

#include "backends/cuda/common.cuh"
#include "backends/cuda/conv.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {

ConvGeom conv_geometry(const char* op, const TensorArg& in, const TensorArg& weight, const TensorArg& out,
                       const Conv2dParams& p) {
  KILN_CHECK(in.shape.size() == 4 && weight.shape.size() == 4 && out.shape.size() == 4, ShapeError, op,
             ": input ", shape_str(in.shape), ", weight ", shape_str(weight.shape), " and output ",
             shape_str(out.shape), " must be 4-d (NCHW)");
  KILN_CHECK(in.dtype == weight.dtype && in.dtype == out.dtype, DTypeError, op, ": dtypes of ",
             args_str({&in, &weight, &out}), " differ");
  KILN_CHECK(p.groups >= 1 && in.shape[1] % p.groups == 0 && weight.shape[0] % p.groups == 0, ShapeError, op,
             ": groups ", p.groups, " must divide input channels ", in.shape[1], " and output channels ",
             weight.shape[0]);
  ConvGeom g{in.shape[0], in.shape[1], in.shape[2], in.shape[3], weight.shape[0], weight.shape[2], weight.shape[3],
             0, 0, p};
  KILN_CHECK(weight.shape[1] * p.groups == g.C, ShapeError, op, ": weight ", shape_str(weight.shape), " expects ",
             weight.shape[1] * p.groups, " input channels, input ", shape_str(in.shape), " has ", g.C);
  for (int i = 0; i < 2; ++i)
    KILN_CHECK(p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0, ValueError, op,
               ": stride and dilation must be >= 1 and padding >= 0");
  g.Ho = (g.H + 2 * p.padding[0] - p.dilation[0] * (g.kH - 1) - 1) / p.stride[0] + 1;
  g.Wo = (g.W + 2 * p.padding[1] - p.dilation[1] * (g.kW - 1) - 1) / p.stride[1] + 1;
  const Shape want{g.N, g.K, g.Ho, g.Wo};
  KILN_CHECK(out.shape == want, ShapeError, op, ": output ", shape_str(out.shape), " should be ", shape_str(want),
             " for input ", shape_str(in.shape), " and weight ", shape_str(weight.shape));
  return g;
}

bool use_cudnn() {
#if defined(KILN_HAVE_CUDNN)
  static const bool forced_im2col = [] {
    const char* e = std::getenv("KILN_CUDA_CONV");
    return e && std::strcmp(e, "im2col") == 0;
  }();
  return !forced_im2col;
#else
  return false;
#endif
}

namespace {
// t itself when contiguous, else a contiguous copy in `buf`.
TensorArg contiguous(CudaBackend& be, const TensorArg& t, std::optional<Scratch>& buf) {
  if (t.is_contiguous()) return t;
  buf.emplace(be, static_cast<size_t>(t.numel()) * dtype_size(t.dtype));
  TensorArg c = scratch_arg(*buf, t.dtype, t.shape);
  be.copy(c, t);
  return c;
}
}  // namespace

void CudaBackend::conv2d_forward(const TensorArg& out, const TensorArg& in_arg, const TensorArg& w_arg,
                                 const TensorArg& bias, const Conv2dParams& p) {
  ProfileScope prof_(stream_, "conv2d_forward", in_arg, &w_arg);
  const char* op = "conv2d_forward";
  const ConvGeom g = conv_geometry(op, in_arg, w_arg, out, p);
  if (bias.data)
    KILN_CHECK(bias.shape == Shape{g.K} && bias.dtype == out.dtype, ShapeError, op, ": bias ", args_str({&bias}),
               " should be [", g.K, "] ", dtype_name(out.dtype));
  if (out.numel() == 0) return;
  make_current();
  std::optional<Scratch> b1, b2, b3;
  const TensorArg in = contiguous(*this, in_arg, b1), w = contiguous(*this, w_arg, b2);
  const TensorArg o = out.is_contiguous() ? out : scratch_arg(b3.emplace(*this, out.numel() * dtype_size(out.dtype)),
                                                              out.dtype, out.shape);
  if (use_cudnn() && in.dtype != DType::f64) cudnn_conv_forward(*this, g, o, in, w, bias);
  else im2col_conv_forward(*this, g, o, in, w, bias);
  if (b3) copy(out, o);
}

void CudaBackend::conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& w_arg,
                                        const Conv2dParams& p) {
  ProfileScope prof_(stream_, "conv2d_backward_input", grad_out, &w_arg);
  const char* op = "conv2d_backward_input";
  const ConvGeom g = conv_geometry(op, grad_in, w_arg, grad_out, p);
  if (grad_in.numel() == 0) return;
  make_current();
  if (grad_out.numel() == 0 || g.C == 0) return fill(grad_in, 0.0);
  std::optional<Scratch> b1, b2, b3;
  const TensorArg gy = contiguous(*this, grad_out, b1), w = contiguous(*this, w_arg, b2);
  const TensorArg gx = grad_in.is_contiguous()
                           ? grad_in
                           : scratch_arg(b3.emplace(*this, grad_in.numel() * dtype_size(grad_in.dtype)),
                                         grad_in.dtype, grad_in.shape);
  if (use_cudnn() && gx.dtype != DType::f64) cudnn_conv_backward_input(*this, g, gx, gy, w);
  else im2col_conv_backward_input(*this, g, gx, gy, w);
  if (b3) copy(grad_in, gx);
}

void CudaBackend::conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias,
                                         const TensorArg& grad_out, const TensorArg& in_arg, const Conv2dParams& p) {
  ProfileScope prof_(stream_, "conv2d_backward_weight", grad_out, &grad_weight);
  const char* op = "conv2d_backward_weight";
  const ConvGeom g = conv_geometry(op, in_arg, grad_weight, grad_out, p);
  if (grad_bias.data)
    KILN_CHECK(grad_bias.shape == Shape{g.K} && grad_bias.dtype == grad_out.dtype, ShapeError, op, ": bias gradient ",
               args_str({&grad_bias}), " should be [", g.K, "] ", dtype_name(grad_out.dtype));
  make_current();
  if (grad_out.numel() == 0) {
    if (grad_weight.numel()) fill(grad_weight, 0.0);
    if (grad_bias.data && grad_bias.numel()) fill(grad_bias, 0.0);
    return;
  }
  if (grad_bias.data && grad_bias.numel()) {  // sum of grad_out over N, H, W
    TensorArg gb{grad_bias.data, grad_bias.offset, grad_bias.dtype, {1, g.K, 1, 1},
                 {0, grad_bias.strides[0], 0, 0}};
    reduce(ReduceOp::sum, gb, grad_out, 0);
  }
  if (grad_weight.numel() == 0) return;
  std::optional<Scratch> b1, b2, b3;
  const TensorArg gy = contiguous(*this, grad_out, b1), in = contiguous(*this, in_arg, b2);
  const TensorArg gw = grad_weight.is_contiguous()
                           ? grad_weight
                           : scratch_arg(b3.emplace(*this, grad_weight.numel() * dtype_size(grad_weight.dtype)),
                                         grad_weight.dtype, grad_weight.shape);
  if (use_cudnn() && gw.dtype != DType::f64) cudnn_conv_backward_weight(*this, g, gw, gy, in);
  else im2col_conv_backward_weight(*this, g, gw, gy, in);
  if (b3) copy(grad_weight, gw);
}

}  // namespace kiln::cuda
