// Helpers shared by the ops front-end files (not a public header).
#pragma once
#include <initializer_list>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::detail {

// Uninitialized tensor on `device` (contiguous).
Tensor empty(const Shape& shape, DType dtype, Device device);
// Note [Channels last]: a 4-d tensor [N, C, H, W] may be laid out channels last (NHWC: strides
// {H W C, 1, W C, C}, PyTorch's torch.channels_last), the layout of the CPU's fused inference
// convolution (conv2d_fused; oneDNN's NHWC kernels then need no reorder before or after each
// convolution). On the CPU an elementwise op keeps it: its output is channels last when an input
// of the output's shape is (PyTorch's memory-format propagation), so that the activations
// between two convolutions stay NHWC. Other ops read it through its strides or a contiguous copy.
// Whether t is 4-d, dense and laid out channels last but not contiguous (a size-1 dim's stride
// does not count, so [N, C, 1, 1] is contiguous and not channels last).
bool is_channels_last(const Tensor& t);
// Uninitialized 4-d tensor of `shape` on `device`, laid out channels last.
Tensor empty_channels_last(const Shape& shape, DType dtype, Device device);
// The output of an elementwise op: channels last on the CPU when one of `inputs` has `shape` and
// is channels last, else contiguous (empty()).
Tensor empty_elementwise(const Shape& shape, DType dtype, Device device, std::initializer_list<const Tensor*> inputs);
// t's kernel argument viewed as `target` (broadcast; stride 0 where it grows).
TensorArg broadcast_arg(const Tensor& t, const Shape& target);
// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
// Records `kind` as out's grad_fn; inputs are kept for the backward rule.
void record(Tensor& out, OpKind kind, std::vector<Tensor> inputs, OpAttrs attrs = {}, std::vector<Tensor> saved = {});
// Throws DTypeError ("neg: i64 is not supported on vulkan:0") unless t's backend runs `op`
// (a UnaryOp, BinaryOp or ReduceOp) for inputs of `dtype`: Backend::supports, asked before
// each such kernel.
template <class SubOp>
void require_supported(const Tensor& t, SubOp op, DType dtype, const char* name) {
  KILN_CHECK(t.backend()->supports(op, dtype), DTypeError, name, ": ", dtype_name(dtype), " is not supported on ",
             t.device().str());
}
// Normalizes reduction dims (empty = all), sorted and unique; IndexError names op.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op);

}  // namespace kiln::detail
