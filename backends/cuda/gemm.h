// Our own batched GEMM kernel, for builds without a vendor BLAS: the HIP backend (Debian 12
// has no hipBLAS/rocBLAS) always, the CUDA backend when KILN_CUDA_MATMUL=kiln (so that
// the kernel is tested on NVIDIA GPUs too; cuBLAS is the default there).
#pragma once
#include "backends/cuda/gpu_runtime.h"
#include "engine/core/backend.h"

namespace kiln::cuda {

// out[..., M, N] = a[..., M, K] @ b[..., K, N] on `stream`, for any strides of the three
// operands (transposed views and broadcast batch strides need no copy). Shapes must agree
// (CudaBackend::matmul checks them first). f32 accumulates in f32, f16/bf16 in f32, f64 in
// f64; other dtypes throw DTypeError naming `op`; more than kMaxDims non-mergeable batch
// dims throw ShapeError. K == 0 writes zeros. Launch errors throw DeviceError.
void gemm(const char* op, cudaStream_t stream, const TensorArg& out, const TensorArg& a, const TensorArg& b);

}  // namespace kiln::cuda
