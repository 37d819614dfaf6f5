// The ops front end: checks shapes and dtypes (errors name the op and the
// shapes), broadcasts (NumPy rules), promotes types (PyTorch rules), allocates
// the output on the inputs' device, runs the backend kernel and, when grad mode
// is on and an input requires grad, records a Node for engine/autograd.
// All tensors of one op must be on one device (DeviceError names both).
#pragma once
#include <array>
#include <string_view>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/tensor.h"

namespace kiln {

// ---- elementwise, broadcasting ----
// One function per row of engine/core/elementwise_ops.def: add(a, b), ..., logical_or(a, b)
// (comparisons and logical ops give bool and are not differentiable), and the unary ops that
// take one tensor, neg(x) ... logical_not(x); the def's comments give each one's semantics.
#define KILN_BINARY_OP(name, compare, grad) Tensor name(const Tensor& a, const Tensor& b);
#include "engine/core/elementwise_ops.def"
#define KILN_UNARY_DECL_1(name) Tensor name(const Tensor& x);
#define KILN_UNARY_DECL_0(name)
#define KILN_UNARY_OP(name, real, grad, saves, plain) KILN_UNARY_DECL_##plain(name)
#include "engine/core/elementwise_ops.def"
#undef KILN_UNARY_DECL_1
#undef KILN_UNARY_DECL_0
Tensor pow(const Tensor& a, double exponent);  // a ** exponent (the def's pow_scalar)
// The plain unary op `op` (a row of the def whose `plain` is 1): apply_unary(UnaryOp::exp, x)
// is exp(x). ValueError for ops that take more (gelu, leaky_relu, clamp, pow_scalar).
Tensor apply_unary(UnaryOp op, const Tensor& x);
// A scalar operand becomes a 0-d tensor of the type PyTorch would give it.
Tensor scalar_like(double value, const Tensor& like);

// torch.nn.functional.gelu: approximate "none" is exact, x * Phi(x); "tanh" is
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel, 2016). ValueError otherwise.
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor clamp(const Tensor& x, double min, double max);  // use +-INFINITY for one side
Tensor square(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // cond is bool

// ---- reductions (empty dims = all dims; negative dims count from the end) ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// torch.var: correction 1 = unbiased (Bessel), 0 = population variance.
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // i64
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// log(sum(exp(x))) computed stably: max + log(sum(exp(x - max))).
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);

// ---- linear algebra ----
// torch.matmul: 1-d and 2-d operands, and batched with broadcast batch dims.
// ShapeError names both shapes when the inner dimensions differ.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x @ weight^T + bias; x [*, in], weight [out, in], bias [out] (may be undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// ---- joining ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);

// ---- neural-network functions (PyTorch's torch.nn.functional) ----
// x [N, Cin, H, W], weight [Cout, Cin/groups, kH, kW], bias [Cout] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p = {});
// torch.nn.functional.conv_transpose2d, the input-gradient of conv2d with p: x [N, Cin, H, W],
// weight [Cin, Cout/groups, kH, kW], bias [Cout] or undefined; the output is [N, Cout, Ho, Wo],
// Ho = (H - 1)·stride - 2·padding + dilation·(kH - 1) + output_padding + 1 (and Wo alike).
// ShapeError when the shapes do not fit, ValueError when output_padding is not below the stride.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTranspose2dParams& p = {});
// Inference only: act(conv2d(x, weight, bias) + residual) in one kernel where x's backend runs
// conv2d_fused_forward for x's dtype (the CPU: oneDNN post-ops), else as conv2d, add and the
// activation (the same arithmetic). residual: undefined (e.residual false) or a tensor of the
// output's shape [N, Cout, Ho, Wo] and x's dtype (ShapeError naming both shapes otherwise). No
// gradient is recorded (ValueError when an input requires one).
Tensor conv2d_fused(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const Conv2dParams& p, const ConvEpilogue& e);
// e's activation applied to y by the unary ops (y itself for none): conv2d_fused's decomposition.
Tensor conv_activation(const Tensor& y, const ConvEpilogue& e);
Tensor max_pool2d(const Tensor& x, const Pool2dParams& p);  // x [N, C, H, W]
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p);
// Output [N, C, oh, ow]; bins as PyTorch: start = floor(i*H/oh), end = ceil((i+1)*H/oh).
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);
// Fused training-mode batch normalization (Backend::batch_norm_forward / _backward):
// x [N, C, *] floating; weight, bias, running_mean, running_var contiguous f32 [C] on x's
// device or undefined; the running stats are updated in place (momentum as
// torch.nn.functional.batch_norm). y has x's dtype (bf16 under autocast, as PyTorch's).
// batch_norm_fused_available says whether x's backend runs it for these tensors;
// batch_norm_training throws DTypeError when it does not. nn::functional::batch_norm picks
// it where available and otherwise decomposes (the reference on the CPU and Vulkan).
bool batch_norm_fused_available(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                const Tensor& running_mean, const Tensor& running_var);
Tensor batch_norm_training(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                           const Tensor& running_var, double momentum, double eps);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// torch.gather / scatter_add / index_select / index_add (index i64).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// One-hot encoding of i64 labels [*] -> [*, num_classes] in dtype (IndexError on a label
// outside [0, num_classes)).
Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype = DType::f32);

// ---- fake quantization (quantization-aware training; engine/quant/qat.h) ----
// torch.fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max): x quantized
// and dequantized in floating point, (clamp(zero_point + round_half_even(x * (1 / scale)),
// quant_min, quant_max) - zero_point) * scale (Backend::fake_quantize gives the arithmetic; ties go
// to even, as PyTorch's std::nearbyint). Its gradient is the straight-through estimator as
// PyTorch's backward: the output's gradient where quant_min <= zero_point + round(x / scale) <=
// quant_max, 0 elsewhere; scale and zero_point get none. x floating (DTypeError otherwise);
// ValueError for quant_min > quant_max, zero_point outside [quant_min, quant_max], or a scale that
// is not finite and > 0 (PyTorch's checks, and the last because 1 / scale must be finite).
Tensor fake_quantize_per_tensor_affine(const Tensor& x, float scale, int64_t zero_point, int64_t quant_min,
                                       int64_t quant_max);
// torch.fake_quantize_per_channel_affine: scale (f32 [C], any floating dtype is converted) and
// zero_point (integer [C]) per index of dimension `axis` of x (negative counts from the end);
// otherwise as above. ShapeError when scale or zero_point is not [x.size(axis)]; IndexError for
// an axis outside x's dimensions.
Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                                        int64_t quant_min, int64_t quant_max);

// Two tensors must be on one device; DeviceError names `op` and both devices.
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

}  // namespace kiln
