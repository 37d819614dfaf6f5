// TEMPORARY during parallel development: placeholders removed as each kernel file lands.
// This file must be deleted before commit.
#include "backends/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace kiln::cpu {
#define KILN_PENDING(name) throw DTypeError(#name " pending")
// ---- section H1 (cpu_elementwise.cpp, cpu_reduce.cpp, cpu_index.cpp, cpu_softmax.cpp) ----
void CpuBackend::copy(const TensorArg&, const TensorArg&) { KILN_PENDING(copy); }
void CpuBackend::fill(const TensorArg&, double) { KILN_PENDING(fill); }
void CpuBackend::unary(UnaryOp, const TensorArg&, const TensorArg&, double, double) { KILN_PENDING(unary); }
void CpuBackend::binary(BinaryOp, const TensorArg&, const TensorArg&, const TensorArg&) { KILN_PENDING(binary); }
void CpuBackend::where(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&) { KILN_PENDING(where); }
void CpuBackend::adam_step(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, const AdamParams&) { KILN_PENDING(adam); }
void CpuBackend::reduce(ReduceOp, const TensorArg&, const TensorArg&, double) { KILN_PENDING(reduce); }
void CpuBackend::softmax_forward(const TensorArg&, const TensorArg&, int64_t, bool) { KILN_PENDING(softmax); }
void CpuBackend::softmax_backward(const TensorArg&, const TensorArg&, const TensorArg&, int64_t, bool) { KILN_PENDING(softmax); }
void CpuBackend::gather(const TensorArg&, const TensorArg&, int64_t, const TensorArg&) { KILN_PENDING(gather); }
void CpuBackend::scatter_add(const TensorArg&, int64_t, const TensorArg&, const TensorArg&) { KILN_PENDING(scatter_add); }
void CpuBackend::index_select(const TensorArg&, const TensorArg&, int64_t, const TensorArg&) { KILN_PENDING(index_select); }
void CpuBackend::index_add(const TensorArg&, int64_t, const TensorArg&, const TensorArg&) { KILN_PENDING(index_add); }
// ---- section H2 (cpu_matmul.cpp, cpu_conv.cpp, cpu_pool.cpp) ----
void CpuBackend::matmul(const TensorArg&, const TensorArg&, const TensorArg&) { KILN_PENDING(matmul); }
void CpuBackend::conv2d_forward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, const Conv2dParams&) { KILN_PENDING(conv); }
void CpuBackend::conv2d_backward_input(const TensorArg&, const TensorArg&, const TensorArg&, const Conv2dParams&) { KILN_PENDING(conv); }
void CpuBackend::conv2d_backward_weight(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, const Conv2dParams&) { KILN_PENDING(conv); }
void CpuBackend::max_pool2d_forward(const TensorArg&, const TensorArg&, const TensorArg&, const Pool2dParams&) { KILN_PENDING(pool); }
void CpuBackend::max_pool2d_backward(const TensorArg&, const TensorArg&, const TensorArg&) { KILN_PENDING(pool); }
void CpuBackend::avg_pool2d_forward(const TensorArg&, const TensorArg&, const Pool2dParams&) { KILN_PENDING(pool); }
void CpuBackend::avg_pool2d_backward(const TensorArg&, const TensorArg&, const Pool2dParams&) { KILN_PENDING(pool); }
}  // namespace kiln::cpu
