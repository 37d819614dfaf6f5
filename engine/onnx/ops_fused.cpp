// The kiln.fused ops that the inference passes (rewrite.h) put in place of elementwise chains,
// each one engine kernel over its input: SiLU(x) = x * sigmoid(x) (Elfwing et al. 2018, torch's
// silu) and Gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016, exact);
// and QConv / QGemm, a QDQ model's quantized layers (rewrite_qdq.cpp) on the int8 kernels.
#include "engine/core/ops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/rewrite.h"
#include "engine/core/qops.h"

namespace kiln::onnx {
namespace {

// QConv / QGemm(x_q u8, scale, zero point, w_q i8, w_scale[, b_q i32]; relu): y f32 =
// [relu](scale (x_q - zp) * w_scale w_q + scale w_scale b_q), the DequantizeLinear + Conv / Gemm it
// replaced, on the int8 kernels (u8 x s8, s32 accumulation) where the device has them, else in f32.
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
  if (quant::int8_supported(x.device()))
    return {conv ? quant::quantized_conv2d(x, w, b, p, q, DType::f32) : quant::quantized_linear(x, w, b, q, DType::f32)};
  Shape per_channel(static_cast<size_t>(w.dim()), 1);
  per_channel[0] = w.size(0);
  const Tensor ws = Tensor::from_vector<float>(q.weight_scales, {w.size(0)}).to(x.device());
  const Tensor xf = (x.to(DType::f32) - static_cast<double>(q.in_zero_point)) * static_cast<double>(q.in_scale);
  const Tensor wf = w.to(DType::f32) * ws.reshape(per_channel);
  const Tensor bf = b.defined() ? b.to(DType::f32) * (ws * static_cast<double>(q.in_scale)) : Tensor();
  Tensor y = conv ? conv2d(xf, wf, bf, p) : linear(xf, wf, bf);
  return {q.relu ? apply_unary(UnaryOp::relu, y) : y};
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
}

}  // namespace kiln::onnx
