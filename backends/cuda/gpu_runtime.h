// The GPU runtime headers: CUDA's, or HIP's through backends/hip/hip_compat.h, which maps
// the CUDA runtime and library names used in this directory to HIP's (the HIP backend
// compiles these same sources with KILN_HIP defined).
#pragma once
#if defined(KILN_HIP)
#include "backends/hip/hip_compat.h"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define KILN_BF16_TYPE __nv_bfloat16
#define KILN_GPU_NAME "cuda"
#endif

#if !defined(KILN_HIP)
#define KILN_DEVICE_TYPE ::kiln::DeviceType::cuda
#define KILN_GPU_LABEL "CUDA"
#define KILN_ARCH_PREFIX "sm_"
#endif
