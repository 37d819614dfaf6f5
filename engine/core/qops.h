// Int8 ops of the front end: shape and dtype checks, output allocation, and the call into the
// device's int8 kernels (Backend::qconv2d_forward / qlinear_forward; on the CPU through oneDNN).
// The arithmetic is QuantizedParams' (engine/core/backend.h). A device without int8 kernels
// (supports(OpId::qconv2d_forward, u8) false) gets DTypeError naming it; the int8 model lowering
// asks int8_supported() first and runs such a layer in float, with a note.
#pragma once
#include "engine/core/backend.h"
#include "engine/core/tensor.h"

namespace kiln::quant {

// Whether the device runs int8 conv2d and linear.
bool int8_supported(const Device& device);

// x u8 [N, Cin, H, W], weight i8 [Cout, Cin/groups, kH, kW], bias i32 [Cout] or undefined, all on
// one device -> out_dtype (f32 or u8) [N, Cout, Ho, Wo] (Ho, Wo as torch.nn.Conv2d). ShapeError /
// DTypeError naming the shapes and dtypes; ValueError for bad QuantizedParams (scale count, zero
// points out of [0, 255], scales <= 0).
Tensor quantized_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                        const QuantizedParams& q, DType out_dtype);

// Max pooling of a u8 [N, C, H, W] x (int8 inference: quantization is monotonic, so the pool of
// the quantized values is the quantized pool, and the u8 tensor keeps x's scale and zero point)
// -> u8 [N, C, Ho, Wo] (Ho, Wo as torch.nn.MaxPool2d), no indices. DTypeError when x is not u8
// or its device has no u8 max pooling (supports(OpId::max_pool2d_forward, u8)); ShapeError /
// ValueError for a bad window (the backend's).
Tensor quantized_max_pool2d(const Tensor& x, const Pool2dParams& p);

// Whether the device runs quantized_max_pool2d.
bool u8_max_pool_supported(const Device& device);

// x u8 [N, *, K], weight i8 [Cout, K], bias i32 [Cout] or undefined -> out_dtype [N, *, Cout].
Tensor quantized_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const QuantizedParams& q,
                        DType out_dtype);

}  // namespace kiln::quant
