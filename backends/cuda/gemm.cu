// The tiled GEMM of gemm.h. Each block computes a kTile x kTile tile of one batch's
// output with kTile x kTile threads, walking K in kTile-wide slices staged in shared
// memory (the classic shared-memory tiling of Kirk & Hwu, "Programming Massively Parallel
// Processors", ch. 5); each thread accumulates one output in acc_t<T> (f64 for f64).
// Operands are addressed through their row and column strides, so no layout is copied.
#include "backends/cuda/common.cuh"
#include "backends/cuda/gemm.h"

namespace kiln::cuda {
namespace {

constexpr int kTile = 16;

struct GemmDims {
  int64_t M, N, K, batch;
  int64_t ars, acs, brs, bcs, crs, ccs;  // row / column strides (elements)
};

template <class T>
__global__ void gemm_kernel(GemmDims d, Indexer<3> bix, const T* __restrict__ a, const T* __restrict__ b,
                            T* __restrict__ c) {
  using A = acc_t<T>;
  __shared__ A as[kTile][kTile + 1];
  __shared__ A bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  for (int64_t z = blockIdx.z; z < d.batch; z += gridDim.z) {
    int64_t off[3];  // c, a, b
    bix.offsets(z, off);
    const T* pa = a + off[1];
    const T* pb = b + off[2];
    A sum = 0;
    for (int64_t k0 = 0; k0 < d.K; k0 += kTile) {
      const int64_t ka = k0 + tx, kb = k0 + ty;
      as[ty][tx] = row < d.M && ka < d.K ? static_cast<A>(pa[row * d.ars + ka * d.acs]) : A(0);
      bs[ty][tx] = kb < d.K && col < d.N ? static_cast<A>(pb[kb * d.brs + col * d.bcs]) : A(0);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTile; ++k) sum += as[ty][k] * bs[k][tx];
      __syncthreads();
    }
    if (row < d.M && col < d.N) c[off[0] + row * d.crs + col * d.ccs] = convert<T>(sum);
  }
}

}  // namespace

void gemm(const char* op, cudaStream_t stream, const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  const size_t r = out.shape.size();
  KILN_CHECK(r >= 2 && a.shape.size() == r && b.shape.size() == r, ShapeError, op, ": operands ",
             args_str({&a, &b}), " and output ", shape_str(out.shape), " must have one rank >= 2");
  KILN_CHECK(out.dtype == DType::f32 || out.dtype == DType::f64 || out.dtype == DType::f16 || out.dtype == DType::bf16,
             DTypeError, op, ": dtype ", dtype_name(out.dtype), " is not supported by the ", KILN_GPU_NAME,
             " GEMM kernel (f32, f64, f16, bf16)");
  GemmDims d{};
  d.M = out.shape[r - 2], d.N = out.shape[r - 1], d.K = a.shape[r - 1];
  d.ars = a.strides[r - 2], d.acs = a.strides[r - 1], d.brs = b.strides[r - 2], d.bcs = b.strides[r - 1];
  d.crs = out.strides[r - 2], d.ccs = out.strides[r - 1];
  const Shape batch(out.shape.begin(), out.shape.end() - 2);
  const Strides sc(out.strides.begin(), out.strides.end() - 2), sa(a.strides.begin(), a.strides.end() - 2),
      sb(b.strides.begin(), b.strides.end() - 2);
  const Indexer<3> bix = make_indexer<3>(op, batch, {&sc, &sa, &sb});
  d.batch = numel(batch);
  if (d.batch == 0 || d.M == 0 || d.N == 0) return;
  const dim3 threads(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((d.N + kTile - 1) / kTile), static_cast<unsigned>((d.M + kTile - 1) / kTile),
                  static_cast<unsigned>(d.batch < 65535 ? d.batch : 65535));
  KILN_CHECK((d.N + kTile - 1) / kTile <= 0x7fffffff && (d.M + kTile - 1) / kTile <= 65535, ShapeError, op, ": output ",
             shape_str(out.shape), " exceeds the GEMM kernel's grid (M <= ", 65535 * kTile, ")");
  switch (out.dtype) {
    case DType::f32: gemm_kernel<float><<<grid, threads, 0, stream>>>(d, bix, ptr<float>(a), ptr<float>(b), ptr<float>(out)); break;
    case DType::f64: gemm_kernel<double><<<grid, threads, 0, stream>>>(d, bix, ptr<double>(a), ptr<double>(b), ptr<double>(out)); break;
    case DType::f16: gemm_kernel<f16_t><<<grid, threads, 0, stream>>>(d, bix, ptr<f16_t>(a), ptr<f16_t>(b), ptr<f16_t>(out)); break;
    case DType::bf16: gemm_kernel<bf16_t><<<grid, threads, 0, stream>>>(d, bix, ptr<bf16_t>(a), ptr<bf16_t>(b), ptr<bf16_t>(out)); break;
    default:
      throw DTypeError(detail::str_cat(op, ": dtype ", dtype_name(out.dtype), " is not supported by the ", KILN_GPU_NAME,
                                       " GEMM kernel (f32, f64, f16, bf16)"));
  }
  check_launch(op, out.shape);
}

}  // namespace kiln::cuda
