// The vendor header of the HIP backend: backends/cuda/gpu_runtime.h includes it when
// KILN_HIP is defined, so that backends/cuda/*.cu compile as HIP unchanged. It maps the
// CUDA runtime names those sources use to HIP's (HIP 5.2 of Debian 12: hip_runtime_api.h
// documents the one-to-one correspondence cudaX -> hipX) and provides the few device
// intrinsics HIP 5.2 lacks:
//   - __nv_bfloat16 -> hip_bfloat16 (hip/hip_bfloat16.h; round-to-nearest-even from float),
//   - __shfl_xor_sync(mask, v, m) -> __shfl_xor over 32-bit words of v; the kernels only
//     use masks < 32, so a 32-lane group stays inside one wavefront (32 or 64 lanes).
// cuBLAS and cuDNN have no Debian 12 counterpart (no hipBLAS/rocBLAS/MIOpen packages):
// matmul.cu takes our own tiled GEMM (gemm.cu) and conv.cu the im2col path under KILN_HIP.
#pragma once
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <cstring>

#define KILN_BF16_TYPE hip_bfloat16
#define KILN_GPU_NAME "hip"
#define KILN_DEVICE_TYPE ::kiln::DeviceType::hip
#define KILN_GPU_LABEL "AMD GPU"
#define KILN_ARCH_PREFIX ""

// ---- runtime: types, constants, functions (cudaX -> hipX) ----
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaStream_t hipStream_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamCaptureStatus hipStreamCaptureStatus
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaSetDevice hipSetDevice
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost hipHostMalloc
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaFreeHost hipHostFree
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventDestroy hipEventDestroy
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphLaunch hipGraphLaunch
// HIP 5.2 keeps CUDA 11's five-argument form.
#define cudaGraphInstantiate(exec, graph, flags) hipGraphInstantiate(exec, graph, nullptr, nullptr, 0)

// ---- device intrinsics ----
namespace kiln::hip_compat {

// __shfl_xor of any trivially copyable value, one 32-bit word at a time.
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int lane_mask) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  int w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_xor(w[i], lane_mask);
  memcpy(&v, w, sizeof(T));
  return v;
}

}  // namespace kiln::hip_compat

#define __shfl_xor_sync(mask, v, lane_mask) ::kiln::hip_compat::shfl_xor(v, lane_mask)

__host__ __device__ inline hip_bfloat16 __float2bfloat16_rn(float x) { return hip_bfloat16(x); }
