// The kiln.fused ops that the inference passes (rewrite.h) put in place of elementwise chains,
// each one engine kernel over its input: SiLU(x) = x * sigmoid(x) (Elfwing et al. 2018, torch's
// silu) and Gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016, exact);
// QConv / QGemm, a QDQ model's quantized layers (rewrite_qdq.cpp) on the int8 kernels; and Conv,
// a float 2-d convolution with its epilogue (rewrite_conv.cpp, FuseConvActivation).
#include "engine/core/ops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/rewrite.h"
#include "engine/core/qops.h"

namespace kiln::onnx {
namespace {

// QConv / QGemm(x_q u8, scale, zero point, w_q i8, w_scale[, b_q i32]; relu[, y_scale, y_zero_point]):
// y f32 = [relu](scale (x_q - zp) * w_scale w_q + scale w_scale b_q), the DequantizeLinear + Conv / Gemm
// it replaced, or with y_scale, u8 QuantizeLinear(y, y_scale, y_zero_point), on the int8 kernels
// (u8 x s8, s32 accumulation) where the device has them, else in f32.
std::vector<Tensor> quantized_layer_op(OpContext& c, bool conv) {
  const Tensor& x = c.input(0);
  if (x.dtype() != DType::u8) c.fail(std::string("the quantized input must be UINT8, got ") + dtype_name(x.dtype()));
  const Tensor w = c.input(3).to(x.device());
  QuantizedParams q;
  q.in_scale = static_cast<float>(c.scalar_input(1));
  q.in_zero_point = static_cast<int32_t>(c.scalar_input(2));
  q.weight_scales = c.input(4).to(DType::f32).to_vector<float>();
  if (q.weight_scales.size() == 1) q.weight_scales.assign(static_cast<size_t>(w.size(0)), q.weight_scales[0]);
  q.relu = c.attr_int("relu", 0) != 0;
  const Tensor b = c.has_input(5) ? c.input(5).to(x.device()) : Tensor();
  Conv2dParams p;
  if (conv) {
    const std::vector<int64_t> s = c.attr_ints("strides", {1, 1}), d = c.attr_ints("dilations", {1, 1}),
                               pads = c.attr_ints("pads", {0, 0, 0, 0});
    for (size_t i = 0; i < 2; ++i) p.stride[i] = s.at(i), p.dilation[i] = d.at(i), p.padding[i] = pads.at(i);
    p.groups = c.attr_int("group", 1);
  }
  const bool u8_out = c.has_attr("y_scale");  // the QuantizeLinear taken in (rewrite_qdq.cpp, Note [Requantized output])
  if (u8_out) {
    q.out_scale = static_cast<float>(c.attr_float("y_scale", 1));
    q.out_zero_point = static_cast<int32_t>(c.attr_int("y_zero_point", 0));
  }
  const DType out = u8_out ? DType::u8 : DType::f32;
  if (quant::int8_supported(x.device()))
    return {conv ? quant::quantized_conv2d(x, w, b, p, q, out) : quant::quantized_linear(x, w, b, q, out)};
  Shape per_channel(static_cast<size_t>(w.dim()), 1);
  per_channel[0] = w.size(0);
  const Tensor ws = Tensor::from_vector<float>(q.weight_scales, {w.size(0)}).to(x.device());
  const Tensor xf = (x.to(DType::f32) - static_cast<double>(q.in_zero_point)) * static_cast<double>(q.in_scale);
  const Tensor wf = w.to(DType::f32) * ws.reshape(per_channel);
  const Tensor bf = b.defined() ? b.to(DType::f32) * (ws * static_cast<double>(q.in_scale)) : Tensor();
  Tensor y = conv ? conv2d(xf, wf, bf, p) : linear(xf, wf, bf);
  if (q.relu) y = apply_unary(UnaryOp::relu, y);
  if (!u8_out) return {y};
  // QuantizeLinear: saturate(round_half_even(y / scale) + zero point)
  return {clamp(add(round(div(y, Tensor::scalar(q.out_scale, DType::f32, y.device()))),
                    Tensor::scalar(q.out_zero_point, DType::f32, y.device())), 0, 255).to(DType::u8)};
}

// Conv(x [N, C, H, W], W [M, C/group, kH, kW], B [M] or "", [Z]; strides, pads (symmetric),
// dilations, group, activation "" | "Relu" | "Clip", clip_min, clip_max) -> y [N, M, Ho, Wo] =
// activation(conv(x, W) + B [+ Z]) as conv2d_fused (one oneDNN convolution with post-ops on the
// CPU). A Z of another shape than the convolution's output (the pass cannot see shapes) is added
// with broadcasting after the convolution instead: the arithmetic of the nodes it replaced.
std::vector<Tensor> fused_conv_op(OpContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  if (x.dim() != 4 || w.dim() != 4) c.fail("expects a 2-d convolution, got input " + shape_str(x.shape()) + " and weight " + shape_str(w.shape()));
  Conv2dParams p;
  const std::vector<int64_t> s = c.attr_ints("strides", {1, 1}), d = c.attr_ints("dilations", {1, 1}),
                             pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    c.fail("strides, dilations and pads must fit 2 spatial dimensions with symmetric pads");
  for (size_t i = 0; i < 2; ++i) p.stride[i] = s[i], p.dilation[i] = d[i], p.padding[i] = pads[i];
  if (s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0) c.fail("strides and dilations must be positive");
  p.groups = c.attr_int("group", 1);
  const std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.size(2), w.size(3)});
  if (kernel.size() != 2 || kernel[0] != w.size(2) || kernel[1] != w.size(3))
    c.fail("kernel_shape does not match weight " + shape_str(w.shape()));
  ConvEpilogue e;
  const std::string act = c.attr_string("activation", "");
  if (act == "Relu") {
    e.activation = ConvActivation::relu;
  } else if (act == "Clip") {
    e.activation = ConvActivation::clip;
    e.lo = static_cast<float>(c.attr_float("clip_min", 0));
    e.hi = static_cast<float>(c.attr_float("clip_max", 6));
  } else if (act == "HardSwish") {
    e.activation = ConvActivation::hardswish;
  } else if (act == "SiLU") {
    e.activation = ConvActivation::silu;
  } else if (!act.empty()) {
    c.fail("unknown activation '" + act + "'");
  }
  Tensor b = c.optional_input(2);
  if (b.defined() && b.dtype() != x.dtype()) b = b.to(x.dtype());
  const Tensor z = c.optional_input(3);
  if (z.defined()) {
    auto size = [&](size_t i) {  // torch.nn.Conv2d's output size
      return (x.size(2 + static_cast<int64_t>(i)) + 2 * p.padding[i] - p.dilation[i] * (w.size(2 + static_cast<int64_t>(i)) - 1) - 1) / p.stride[i] + 1;
    };
    const Shape out{x.size(0), w.size(0), size(0), size(1)};
    if (z.shape() != out || z.dtype() != x.dtype()) {  // a broadcasting Add: the unfused arithmetic
      return {conv_activation(add(conv2d(x, w, b, p), z), e)};
    }
    e.residual = true;
  }
  return {conv2d_fused(x, w, b, z, p, e)};
}

}  // namespace

void register_fused_ops(OpTable& t) {
  const std::string d = std::string(kFusedDomain) + ".";
  t[d + "SiLU"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    if (!is_floating(x.dtype())) c.fail("SiLU needs a floating-point input, got " + std::string(dtype_name(x.dtype())));
    return {silu(x)};
  };
  t[d + "Gelu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    if (!is_floating(x.dtype())) c.fail("Gelu needs a floating-point input, got " + std::string(dtype_name(x.dtype())));
    return {gelu(x, "none")};
  };
  t[d + "QConv"] = [](OpContext& c) { return quantized_layer_op(c, true); };
  t[d + "QGemm"] = [](OpContext& c) { return quantized_layer_op(c, false); };
  t[d + "Conv"] = fused_conv_op;
}

}  // namespace kiln::onnx
