// Backend::begin_timing / end_timing on CUDA: two events recorded on the device's stream
// around the span; cudaEventElapsedTime gives the device time between them (resolution
// about 0.5 us, CUDA Runtime API, "Event Management").
#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {

bool CudaBackend::begin_timing() {
  KILN_CHECK(!capturing(), DeviceError, "begin_timing: ", name(), " is recording a graph");
  make_current();
  for (void** e : {&timing_start_, &timing_stop_})
    if (!*e) {
      cudaEvent_t ev = nullptr;
      check_cuda(cudaEventCreate(&ev), "begin_timing (cudaEventCreate)", name());
      *e = ev;
    }
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(timing_start_), stream_), "begin_timing (cudaEventRecord)",
             name());
  timing_ = true;
  return true;
}

double CudaBackend::end_timing() {
  KILN_CHECK(timing_, DeviceError, name(), ": end_timing without begin_timing");
  timing_ = false;
  make_current();
  const auto stop = static_cast<cudaEvent_t>(timing_stop_);
  check_cuda(cudaEventRecord(stop, stream_), "end_timing (cudaEventRecord)", name());
  check_cuda(cudaEventSynchronize(stop), "end_timing (cudaEventSynchronize)", name());
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(timing_start_), stop),
             "end_timing (cudaEventElapsedTime)", name());
  flush_deferred_checks();  // as synchronize(): a bad index of the timed work is reported
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace kiln::cuda
