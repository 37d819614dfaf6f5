// One Conv2d or Linear layer in int8 (scheme.h): f32 input -> u8 with the calibrated input
// parameters -> the device's int8 kernel (qops.h; s32 accumulation, per-channel scales, the
// fused ReLU as a post-op) -> f32 output. Its state is the int8 weight and what it needs to
// compute: buffers weight (i8), weight_scale (f32 [Cout]), bias (i32 [Cout], when the layer has
// one), input_scale (f32 [1]) and input_zero_point (i32 [1]).
// On a device without int8 kernels it computes in float with the dequantized weight and bias
// (the same function up to the input's rounding) and says so in fallback_note().
#pragma once
#include <string>

#include "engine/core/backend.h"
#include "engine/nn/module.h"
#include "engine/quant/scheme.h"

namespace kiln::quant {

class QuantizedLayer : public nn::Module {
 public:
  // op "Conv2d" (conv: its stride/padding/dilation/groups) or "Linear"; name: the graph node's.
  // weight: quantize_weight's; bias: quantize_bias's or undefined. ValueError naming the layer
  // when the shapes disagree (scales per output channel, bias [Cout]) or the op is another.
  QuantizedLayer(std::string name, std::string op, const Conv2dParams& conv, QuantizedWeight weight, Tensor bias,
                 ActivationQParams input, bool relu);
  // An empty layer of the given shapes for load_state_dict to fill (Int8Model::load).
  QuantizedLayer(std::string name, std::string op, const Conv2dParams& conv, const Shape& weight_shape,
                 bool has_bias, bool relu);
  // x f32 [N, Cin, H, W] (Conv2d) or [N, *, Cin] (Linear) -> f32.
  Tensor forward(const Tensor& x) override { return run(x, nullptr); }
  // x f32 (quantized here with input_qparams()) or u8 (already quantized with them: the output of
  // the int8 layer before it, Int8Model). out null: an f32 output; else u8, requantized with *out
  // (the next int8 layer's input parameters) by the kernel, with the fused ReLU before it.
  Tensor run(const Tensor& x, const ActivationQParams* out);
  std::string type_name() const override { return "Quantized" + op_; }
  std::string extra_repr() const override;
  const std::string& name() const { return name_; }
  const std::string& op() const { return op_; }
  bool relu() const { return relu_; }
  const Conv2dParams& conv() const { return conv_; }
  ActivationQParams input_qparams() const;
  QuantizedParams kernel_params() const;
  // The weight (i8, the layer's shape) and bias (i32 [Cout], undefined when none) as stored.
  const Tensor& int8_weight() const { return weight_; }
  const Tensor& int32_bias() const { return bias_; }
  // Bytes of the weight, bias and scale tensors (the payload a file stores).
  int64_t payload_bytes() const;
  // "" while every forward ran in int8; else why it ran in float.
  const std::string& fallback_note() const { return note_; }

 private:
  void check() const;
  std::string name_, op_;
  Conv2dParams conv_;
  bool relu_ = false;
  Tensor weight_, weight_scale_, bias_, input_scale_, input_zero_point_;
  std::string note_;
};

}  // namespace kiln::quant
