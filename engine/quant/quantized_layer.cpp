#include "engine/quant/quantized_layer.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/qops.h"

namespace kiln::quant {
namespace {

// quantize_activation's arithmetic with tensor ops, on x's device: f32 -> u8.
Tensor quantize(const Tensor& x, const ActivationQParams& q) {
  return clamp(apply_unary(UnaryOp::round, x.to(DType::f32) / static_cast<double>(q.scale)) +
                   static_cast<double>(q.zero_point),
               kActivationQMin, kActivationQMax)
      .to(DType::u8);
}

}  // namespace

QuantizedLayer::QuantizedLayer(std::string name, std::string op, const Conv2dParams& conv, QuantizedWeight weight,
                               Tensor bias, ActivationQParams input, bool relu)
    : name_(std::move(name)), op_(std::move(op)), conv_(conv), relu_(relu) {
  const int64_t cout = weight.q.size(0);
  weight_ = register_buffer("weight", weight.q);
  weight_scale_ = register_buffer("weight_scale", Tensor::from_vector<float>(weight.scales, {cout}));
  if (bias.defined()) bias_ = register_buffer("bias", bias);
  input_scale_ = register_buffer("input_scale", Tensor::from_vector<float>({input.scale}, {1}));
  input_zero_point_ = register_buffer("input_zero_point", Tensor::from_vector<int32_t>({input.zero_point}, {1}));
  check();
}

QuantizedLayer::QuantizedLayer(std::string name, std::string op, const Conv2dParams& conv, const Shape& weight_shape,
                               bool has_bias, bool relu)
    : name_(std::move(name)), op_(std::move(op)), conv_(conv), relu_(relu) {
  KILN_CHECK(!weight_shape.empty(), ValueError, "layer '", name_, "': weight shape is empty");
  const int64_t cout = weight_shape[0];
  weight_ = register_buffer("weight", Tensor::zeros(weight_shape, DType::i8));
  weight_scale_ = register_buffer("weight_scale", Tensor::ones({cout}));
  if (has_bias) bias_ = register_buffer("bias", Tensor::zeros({cout}, DType::i32));
  input_scale_ = register_buffer("input_scale", Tensor::ones({1}));
  input_zero_point_ = register_buffer("input_zero_point", Tensor::zeros({1}, DType::i32));
  check();
}

void QuantizedLayer::check() const {
  KILN_CHECK(op_ == "Conv2d" || op_ == "Linear", ValueError, "layer '", name_, "': int8 runs Conv2d and Linear, not ",
             op_);
  KILN_CHECK(weight_.dim() == (op_ == "Conv2d" ? 4 : 2), ShapeError, "layer '", name_, "': ", op_, " weight ",
             shape_str(weight_.shape()), " has the wrong rank");
  const int64_t cout = weight_.size(0);
  KILN_CHECK(weight_scale_.numel() == cout, ShapeError, "layer '", name_, "': ", weight_scale_.numel(),
             " weight scales for ", cout, " output channels");
  KILN_CHECK(!bias_.defined() || bias_.numel() == cout, ShapeError, "layer '", name_, "': bias has ",
             bias_.defined() ? bias_.numel() : 0, " elements for ", cout, " output channels");
}

ActivationQParams QuantizedLayer::input_qparams() const {
  return {input_scale_.to_vector<float>().at(0), input_zero_point_.to_vector<int32_t>().at(0)};
}

QuantizedParams QuantizedLayer::kernel_params() const {
  const ActivationQParams in = input_qparams();
  QuantizedParams q;
  q.in_scale = in.scale;
  q.in_zero_point = in.zero_point;
  q.weight_scales = weight_scale_.to_vector<float>();
  q.relu = relu_;
  return q;
}

int64_t QuantizedLayer::payload_bytes() const {
  int64_t n = 0;
  for (const Tensor* t : {&weight_, &weight_scale_, &bias_, &input_scale_, &input_zero_point_})
    if (t->defined()) n += t->numel() * static_cast<int64_t>(dtype_size(t->dtype()));
  return n;
}

std::string QuantizedLayer::extra_repr() const {
  return detail::str_cat("weight=", shape_str(weight_.shape()), ", int8, relu=", relu_ ? "True" : "False");
}

Tensor QuantizedLayer::run(const Tensor& x, const ActivationQParams* out) {
  check();
  QuantizedParams q = kernel_params();
  if (int8_supported(x.device())) {
    const Tensor xq = x.dtype() == DType::u8 ? x : quantize(x, {q.in_scale, q.in_zero_point});
    if (out) {
      q.out_scale = out->scale;
      q.out_zero_point = out->zero_point;
    }
    const DType dt = out ? DType::u8 : DType::f32;
    return op_ == "Conv2d" ? quantized_conv2d(xq, weight_, bias_, conv_, q, dt) : quantized_linear(xq, weight_, bias_, q, dt);
  }
  note_ = detail::str_cat("layer '", name_, "' ran in float on ", x.device().str(), ", which has no int8 kernels");
  const int64_t cout = weight_.size(0);
  Shape per_channel(static_cast<size_t>(weight_.dim()), 1);
  per_channel[0] = cout;
  const Tensor w = weight_.to(DType::f32) * weight_scale_.reshape(per_channel);
  Tensor b;
  if (bias_.defined()) b = bias_.to(DType::f32) * (weight_scale_ * static_cast<double>(q.in_scale));
  const Tensor xf = x.dtype() == DType::u8
                        ? (x.to(DType::f32) - static_cast<double>(q.in_zero_point)) * static_cast<double>(q.in_scale)
                        : x.to(DType::f32);
  Tensor y = op_ == "Conv2d" ? conv2d(xf, w, b, conv_) : linear(xf, w, b);
  if (relu_) y = apply_unary(UnaryOp::relu, y);
  return out ? quantize(y, *out) : y;
}

}  // namespace kiln::quant
