// Neural-network functions: conv2d, pooling, softmax, index ops (torch.nn.functional).
#include <cmath>

#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/ops_internal.h"

namespace kiln {

namespace {

void check_floating(const Tensor& x, const char* op) {
  KILN_CHECK(is_floating(x.dtype()), DTypeError, op, ": expected a floating-point tensor, got ",
             dtype_name(x.dtype()));
}

void check_nchw(const Tensor& x, const char* op) {
  KILN_CHECK(x.dim() == 4, ShapeError, op, ": expected input [N, C, H, W], got ", shape_str(x.shape()));
  check_floating(x, op);
}

// Output length of a pooling or convolution window (PyTorch's pooling_output_shape).
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

Shape pool_output(const Tensor& x, const Pool2dParams& p, const char* op) {
  check_nchw(x, op);
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(p.kernel[i] > 0 && p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, ValueError, op,
               ": kernel, stride and dilation must be positive and padding non-negative");
    KILN_CHECK(p.padding[i] * 2 <= p.kernel[i], ValueError, op, ": padding ", p.padding[i],
               " must be at most half the kernel size ", p.kernel[i]);
  }
  int64_t oh = pooled_size(x.size(2), p.kernel[0], p.padding[0], p.stride[0], p.dilation[0], p.ceil_mode);
  int64_t ow = pooled_size(x.size(3), p.kernel[1], p.padding[1], p.stride[1], p.dilation[1], p.ceil_mode);
  KILN_CHECK(oh > 0 && ow > 0, ShapeError, op, ": input of shape ", shape_str(x.shape()),
             " is too small for kernel ", p.kernel[0], "x", p.kernel[1], " (output would be ", oh, "x", ow, ")");
  return {x.size(0), x.size(1), oh, ow};
}

}  // namespace


namespace {

// conv2d's checks (naming `op`): the output shape [N, Cout, Ho, Wo], and bias as a contiguous
// tensor of x's dtype in `b` (undefined when bias is).
Shape conv2d_output(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p, const char* op,
                    Tensor& b) {
  check_nchw(x, op);
  check_same_device(x, weight, op);
  KILN_CHECK(weight.dim() == 4, ShapeError, op, ": weight must be [out_channels, in_channels/groups, kH, kW], got ",
             shape_str(weight.shape()));
  KILN_CHECK(p.groups > 0 && x.size(1) == weight.size(1) * p.groups && weight.size(0) % p.groups == 0, ShapeError,
             op, ": input of shape ", shape_str(x.shape()), " does not match weight of shape ",
             shape_str(weight.shape()), " with groups=", p.groups, " (expected ", weight.size(1) * p.groups,
             " input channels)");
  KILN_CHECK(x.dtype() == weight.dtype(), DTypeError, op, ": input is ", dtype_name(x.dtype()), " but weight is ",
             dtype_name(weight.dtype()));
  for (int i = 0; i < 2; ++i)
    KILN_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, ValueError, op,
               ": stride and dilation must be positive and padding non-negative");
  const int64_t oh = pooled_size(x.size(2), weight.size(2), p.padding[0], p.stride[0], p.dilation[0], false);
  const int64_t ow = pooled_size(x.size(3), weight.size(3), p.padding[1], p.stride[1], p.dilation[1], false);
  KILN_CHECK(oh > 0 && ow > 0, ShapeError, op, ": input of shape ", shape_str(x.shape()),
             " is smaller than the (dilated) kernel of weight ", shape_str(weight.shape()));
  if (bias.defined()) {
    check_same_device(x, bias, op);
    KILN_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), ShapeError, op, ": bias of shape ",
               shape_str(bias.shape()), " does not match weight of shape ", shape_str(weight.shape()));
    b = bias.to(x.dtype()).contiguous();
  }
  return {x.size(0), weight.size(0), oh, ow};
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p) {
  check_nchw(x, "conv2d");
  check_same_device(x, weight, "conv2d");
  if (autocast_wants(x) || autocast_wants(weight))  // engine/core/autocast.h
    return conv2d(autocast(x), autocast(weight), autocast(bias), p);
  Tensor b;
  const Shape shape = conv2d_output(x, weight, bias, p, "conv2d", b);
  const TensorArg bias_arg = b.defined() ? b.arg() : TensorArg{};
  Tensor xc = x.contiguous(), wc = weight.contiguous();
  Tensor out = detail::empty(shape, x.dtype(), x.device());
  if (out.numel()) x.backend()->conv2d_forward(out.arg(), xc.arg(), wc.arg(), bias_arg, p);
  if (detail::needs_grad({&x, &weight, &bias})) {
    std::vector<Tensor> inputs{xc, wc};
    if (b.defined()) inputs.push_back(b);
    detail::record(out, OpKind::conv2d, inputs, p);
  }
  return out;
}

// The adjoint of conv2d (Dumoulin & Visin 2016, "A guide to convolution arithmetic", sec. 4):
// the backend's conv2d input-gradient kernel with x as the gradient of a conv2d's output. Its
// rule (autograd/rules.cpp) is conv2d_forward for x and conv2d_backward_weight for the weight.
// The bias is added as a broadcast add, which records its own gradient.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTranspose2dParams& p) {
  const char* op = "conv_transpose2d";
  check_nchw(x, op);
  check_same_device(x, weight, op);
  if (autocast_wants(x) || autocast_wants(weight))  // engine/core/autocast.h
    return conv_transpose2d(autocast(x), autocast(weight), autocast(bias), p);
  KILN_CHECK(weight.dim() == 4, ShapeError, op, ": weight must be [in_channels, out_channels/groups, kH, kW], got ",
             shape_str(weight.shape()));
  KILN_CHECK(p.groups > 0 && x.size(1) == weight.size(0) && weight.size(0) % p.groups == 0, ShapeError, op,
             ": input of shape ", shape_str(x.shape()), " does not match weight of shape ", shape_str(weight.shape()),
             " with groups=", p.groups, " (expected ", weight.size(0), " input channels, divisible by groups)");
  KILN_CHECK(x.dtype() == weight.dtype(), DTypeError, op, ": input is ", dtype_name(x.dtype()), " but weight is ",
             dtype_name(weight.dtype()));
  int64_t out_size[2];
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0, ValueError, op,
               ": stride and dilation must be positive and padding non-negative");
    KILN_CHECK(p.output_padding[i] >= 0 && p.output_padding[i] < p.stride[i], ValueError, op, ": output_padding (",
               p.output_padding[0], ", ", p.output_padding[1], ") must be non-negative and smaller than the stride (",
               p.stride[0], ", ", p.stride[1], ")");
    out_size[i] = (x.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (weight.size(2 + i) - 1) +
                  p.output_padding[i] + 1;
  }
  KILN_CHECK(out_size[0] > 0 && out_size[1] > 0, ShapeError, op, ": input of shape ", shape_str(x.shape()),
             " with padding (", p.padding[0], ", ", p.padding[1], ") gives an empty output (", out_size[0], "x",
             out_size[1], ")");
  const int64_t cout = weight.size(1) * p.groups;
  if (bias.defined()) {
    check_same_device(x, bias, op);
    KILN_CHECK(bias.dim() == 1 && bias.size(0) == cout, ShapeError, op, ": bias of shape ", shape_str(bias.shape()),
               " does not match the ", cout, " output channels of weight ", shape_str(weight.shape()));
  }
  Tensor xc = x.contiguous(), wc = weight.contiguous();
  Tensor out = x.numel() ? detail::empty({x.size(0), cout, out_size[0], out_size[1]}, x.dtype(), x.device())
                         : Tensor::zeros({x.size(0), cout, out_size[0], out_size[1]}, x.dtype(), x.device());
  const Conv2dParams& conv = p;
  if (x.numel() && out.numel()) x.backend()->conv2d_backward_input(out.arg(), xc.arg(), wc.arg(), conv);
  if (detail::needs_grad({&x, &weight})) detail::record(out, OpKind::conv_transpose2d, {xc, wc}, conv);
  return bias.defined() ? add(out, bias.to(x.dtype()).reshape({1, cout, 1, 1})) : out;
}

Tensor conv_activation(const Tensor& y, const ConvEpilogue& e) {
  switch (e.activation) {
    case ConvActivation::none: return y;
    case ConvActivation::relu: return apply_unary(UnaryOp::relu, y);
    case ConvActivation::clip: return clamp(y, e.lo, e.hi);
    case ConvActivation::hardswish: return apply_unary(UnaryOp::hardswish, y);
    case ConvActivation::silu: return apply_unary(UnaryOp::silu, y);
  }
  return y;
}

Tensor conv2d_fused(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const Conv2dParams& p, const ConvEpilogue& e) {
  Tensor b;
  const Shape shape = conv2d_output(x, weight, bias, p, "conv2d_fused", b);
  KILN_CHECK(e.residual == residual.defined(), ValueError, "conv2d_fused: a residual ",
             e.residual ? "is expected but none was given" : "was given but the epilogue adds none");
  if (e.residual) {
    check_same_device(x, residual, "conv2d_fused");
    KILN_CHECK(residual.shape() == shape && residual.dtype() == x.dtype(), ShapeError, "conv2d_fused: residual ",
               shape_str(residual.shape()), " ", dtype_name(residual.dtype()), " does not match the output ",
               shape_str(shape), " ", dtype_name(x.dtype()));
  }
  KILN_CHECK(e.activation != ConvActivation::clip || e.lo <= e.hi, ValueError, "conv2d_fused: clip bounds ", e.lo,
             " > ", e.hi);
  const bool fused = x.backend()->supports(OpId::conv2d_fused_forward, x.dtype()) && !autocast_wants(x) &&
                     !autocast_wants(weight) && !detail::needs_grad({&x, &weight, &bias, &residual});
  if (!fused) {  // the default decomposition (DESIGN.md: fused ops)
    Tensor y = conv2d(x, weight, bias, p);
    if (e.residual) y = add(y, residual);
    return conv_activation(y, e);
  }
  // The kernel reads x as it is laid out (contiguous or channels last) and writes its output
  // channels last, and the residual in the output's layout (Note [Channels last]).
  const Tensor xc = detail::is_channels_last(x) ? x : x.contiguous(), wc = weight.contiguous();
  Tensor out = detail::empty_channels_last(shape, x.dtype(), x.device());
  Tensor rc;
  if (e.residual && out.is_contiguous())  // C = 1 or H = W = 1: NHWC is NCHW
    rc = residual.contiguous();
  else if (e.residual)
    rc = detail::is_channels_last(residual) ? residual : residual.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  if (out.numel())
    x.backend()->conv2d_fused_forward(out.arg(), xc.arg(), wc.arg(), b.defined() ? b.arg() : TensorArg{},
                                      rc.defined() ? rc.arg() : TensorArg{}, p, e);
  return out;
}

bool batch_norm_fused_available(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                const Tensor& running_mean, const Tensor& running_var) {
  if (!x.defined() || x.dim() < 2 || !x.backend()->supports(OpId::batch_norm_forward, x.dtype()) ||
      !x.backend()->supports(OpId::batch_norm_backward, x.dtype()))
    return false;
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    if (t->defined() && (t->dtype() != DType::f32 || t->device() != x.device() || t->dim() != 1 ||
                         t->numel() != x.size(1) || !t->is_contiguous()))
      return false;
  return true;
}

Tensor batch_norm_training(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, double momentum, double eps) {
  KILN_CHECK(batch_norm_fused_available(x, weight, bias, running_mean, running_var), DTypeError,
             "batch_norm_training: ", x.defined() ? x.device().str() : "an undefined tensor",
             " has no fused batch norm for input ", x.defined() ? shape_str(x.shape()) : "", " ",
             x.defined() ? dtype_name(x.dtype()) : "", " with f32 [C] statistics");
  const int64_t c = x.size(1);
  Tensor xc = x.contiguous();
  Tensor y = detail::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = detail::empty({c}, DType::f32, x.device()), invstd = detail::empty({c}, DType::f32, x.device());
  auto arg = [](const Tensor& t) { return t.defined() ? t.arg() : TensorArg{}; };
  if (x.numel())
    x.backend()->batch_norm_forward(y.arg(), mean.arg(), invstd.arg(), xc.arg(), arg(weight), arg(bias),
                                    arg(running_mean), arg(running_var), momentum, eps);
  if (detail::needs_grad({&x, &weight, &bias})) {
    std::vector<Tensor> inputs{xc};
    if (weight.defined()) inputs.push_back(weight);
    if (bias.defined()) inputs.push_back(bias);
    detail::record(y, OpKind::batch_norm, inputs, op_attrs::BatchNorm{weight.defined(), bias.defined()}, {mean, invstd});
  }
  return y;
}

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p) {
  Shape s = pool_output(x, p, "max_pool2d");
  // Inference on the CPU: no indices (Note [Max pool inference] in backends/cpu/cpu_pool.cpp),
  // and a channels-last x pooled as it is laid out (Note [Channels last]).
  if (x.device().type == DeviceType::cpu && !detail::needs_grad({&x})) {
    const bool nhwc = detail::is_channels_last(x);
    const Tensor xc = nhwc ? x : x.contiguous();
    Tensor out = nhwc ? detail::empty_channels_last(s, x.dtype(), x.device()) : detail::empty(s, x.dtype(), x.device());
    if (out.numel()) x.backend()->max_pool2d_forward(out.arg(), TensorArg{}, xc.arg(), p);
    return out;
  }
  Tensor xc = x.contiguous();
  Tensor out = detail::empty(s, x.dtype(), x.device());
  Tensor idx = detail::empty(s, DType::i64, x.device());
  if (out.numel()) x.backend()->max_pool2d_forward(out.arg(), idx.arg(), xc.arg(), p);
  if (detail::needs_grad({&x})) detail::record(out, OpKind::max_pool2d, {xc}, p, {idx});
  return out;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
  Shape s = pool_output(x, p, "avg_pool2d");
  Tensor xc = x.contiguous();
  Tensor out = detail::empty(s, x.dtype(), x.device());
  if (out.numel()) x.backend()->avg_pool2d_forward(out.arg(), xc.arg(), p);
  if (detail::needs_grad({&x})) detail::record(out, OpKind::avg_pool2d, {xc}, p);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> size) {
  check_nchw(x, "adaptive_avg_pool2d");
  KILN_CHECK(size[0] > 0 && size[1] > 0, ValueError, "adaptive_avg_pool2d: output size must be positive, got ",
             size[0], "x", size[1]);
  int64_t h = x.size(2), w = x.size(3);
  if (h % size[0] == 0 && w % size[1] == 0) {
    Pool2dParams p;
    p.kernel[0] = p.stride[0] = h / size[0];
    p.kernel[1] = p.stride[1] = w / size[1];
    return avg_pool2d(x, p);
  }
  // General bins: out = Ph @ x @ Pw^T, where row i of Ph averages input rows
  // [floor(i*H/oh), ceil((i+1)*H/oh)) (PyTorch's start_index / end_index).
  auto pooling_matrix = [&](int64_t in, int64_t out_n) {
    std::vector<double> m(static_cast<size_t>(in * out_n), 0.0);
    for (int64_t i = 0; i < out_n; ++i) {
      int64_t start = (i * in) / out_n, end = ((i + 1) * in + out_n - 1) / out_n;
      for (int64_t j = start; j < end; ++j) m[static_cast<size_t>(i * in + j)] = 1.0 / static_cast<double>(end - start);
    }
    return Tensor::from_vector(m, {out_n, in}, x.device()).to(x.dtype());
  };
  Tensor ph = pooling_matrix(h, size[0]), pw = pooling_matrix(w, size[1]);
  return matmul(matmul(ph, x), pw.t());
}

namespace {
Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::f32);
  dim = wrap_dim(dim, x.dim(), name);
  Tensor xc = xf.contiguous();
  Tensor out = detail::empty(x.shape(), xf.dtype(), x.device());
  if (out.numel()) x.backend()->softmax_forward(out.arg(), xc.arg(), x.dim() == 0 ? 0 : dim, log);
  if (detail::needs_grad({&xf}))
    detail::record(out, log ? OpKind::log_softmax : OpKind::softmax, {xc}, op_attrs::Dim{dim}, {out});
  return out;
}

void check_index(const Tensor& index, const char* op) {
  KILN_CHECK(index.dtype() == DType::i64, DTypeError, op, ": index must be i64, got ", dtype_name(index.dtype()));
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device(x, index, "gather");
  check_index(index, "gather");
  dim = wrap_dim(dim, x.dim(), "gather");
  KILN_CHECK(index.dim() == x.dim(), ShapeError, "gather: index of shape ", shape_str(index.shape()),
             " must have as many dimensions as input of shape ", shape_str(x.shape()));
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(i == dim || index.size(i) <= x.size(i), ShapeError, "gather: index of shape ",
               shape_str(index.shape()), " is larger than input of shape ", shape_str(x.shape()), " in dimension ", i);
  Tensor out = detail::empty(index.shape(), x.dtype(), x.device());
  if (out.numel()) x.backend()->gather(out.arg(), x.arg(), dim, index.arg());
  if (detail::needs_grad({&x})) detail::record(out, OpKind::gather, {x}, op_attrs::Dim{dim}, {index});
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device(x, index, "scatter_add");
  check_same_device(x, src, "scatter_add");
  check_index(index, "scatter_add");
  dim = wrap_dim(dim, x.dim(), "scatter_add");
  KILN_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), ShapeError, "scatter_add: input ",
             shape_str(x.shape()), ", index ", shape_str(index.shape()), " and src ", shape_str(src.shape()),
             " must have the same number of dimensions");
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(index.size(i) <= src.size(i) && (i == dim || index.size(i) <= x.size(i)), ShapeError,
               "scatter_add: index of shape ", shape_str(index.shape()), " does not fit input ", shape_str(x.shape()),
               " and src ", shape_str(src.shape()));
  Tensor out = x.clone().detach();
  Tensor s = src.to(x.dtype());
  if (index.numel()) x.backend()->scatter_add(out.arg(), dim, index.arg(), s.arg());
  if (detail::needs_grad({&x, &src})) detail::record(out, OpKind::scatter_add, {x, s}, op_attrs::Dim{dim}, {index});
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device(x, index, "index_select");
  check_index(index, "index_select");
  KILN_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 1-d, got ", shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_select");
  Shape s = x.shape();
  if (x.dim() > 0) s[dim] = index.numel();
  Tensor out = detail::empty(s, x.dtype(), x.device());
  Tensor idx = index.reshape({index.numel()});
  if (out.numel()) x.backend()->index_select(out.arg(), x.arg(), dim, idx.arg());
  if (detail::needs_grad({&x})) detail::record(out, OpKind::index_select, {x}, op_attrs::Dim{dim}, {idx});
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device(x, index, "index_add");
  check_same_device(x, src, "index_add");
  check_index(index, "index_add");
  KILN_CHECK(index.dim() <= 1, ShapeError, "index_add: index must be 1-d, got ", shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_add");
  Shape want = x.shape();
  if (x.dim() > 0) want[dim] = index.numel();
  KILN_CHECK(src.shape() == want, ShapeError, "index_add: src of shape ", shape_str(src.shape()),
             " does not match input ", shape_str(x.shape()), " with ", index.numel(), " indices along dimension ",
             dim, " (expected ", shape_str(want), ")");
  Tensor out = x.clone().detach();
  Tensor s = src.to(x.dtype());
  Tensor idx = index.reshape({index.numel()});
  if (s.numel()) x.backend()->index_add(out.arg(), dim, idx.arg(), s.arg());
  if (detail::needs_grad({&x, &src})) detail::record(out, OpKind::index_add, {x, s}, op_attrs::Dim{dim}, {idx});
  return out;
}

Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype) {
  check_index(labels, "one_hot");
  KILN_CHECK(num_classes > 0, ValueError, "one_hot: num_classes must be positive, got ", num_classes);
  if (labels.numel()) {
    int64_t lo = amin(labels).item<int64_t>(), hi = amax(labels).item<int64_t>();
    KILN_CHECK(lo >= 0 && hi < num_classes, IndexError, "one_hot: class index ", lo < 0 ? lo : hi,
               " is out of range [0, ", num_classes, ")");
  }
  Tensor classes = Tensor::arange(num_classes, labels.device());
  return eq(labels.unsqueeze(-1), classes).to(dtype);
}

}  // namespace kiln
