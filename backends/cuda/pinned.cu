// CudaBackend::upload through pinned staging buffers: a host-to-device copy from pageable
// memory makes the CUDA driver stage it and blocks the host meanwhile; here a batch of at
// least kMinStaged bytes is copied into one of kSlots page-locked (cudaMallocHost) buffers
// and sent with cudaMemcpyAsync on the device's stream, so the host returns at once (the
// caller may free its bytes) and the next batch is prepared while the copy runs. A slot is
// reused once the copy it last held has finished (its event); a slot grows to the largest
// batch it has carried. Smaller copies, and copies while a CUDA graph is being captured, go
// straight from the caller's memory.
#include <cstring>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {

void PinnedStaging::release() {
  for (Slot& s : slots_) {
    if (s.done) cudaEventSynchronize(static_cast<cudaEvent_t>(s.done)), cudaEventDestroy(static_cast<cudaEvent_t>(s.done));
    if (s.host) cudaFreeHost(s.host);
    s = Slot{};
  }
}

bool PinnedStaging::upload(cudaStream_t stream, void* dst, const void* host, size_t nbytes, const std::string& dev) {
  if (nbytes < kMinStaged) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % kSlots;
  if (s.done) check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(s.done)), "upload", "pinned staging of " + dev);
  if (s.size < nbytes) {
    if (s.host) cudaFreeHost(s.host);
    s.host = nullptr, s.size = 0;
    if (cudaMallocHost(&s.host, nbytes) != cudaSuccess) {  // no page-locked memory left: the plain copy
      cudaGetLastError();
      s.host = nullptr;
      return false;
    }
    s.size = nbytes;
  }
  if (!s.done) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "upload", "pinned staging of " + dev);
    s.done = e;
  }
  std::memcpy(s.host, host, nbytes);
  check_cuda(cudaMemcpyAsync(dst, s.host, nbytes, cudaMemcpyHostToDevice, stream), "upload",
             std::to_string(nbytes) + " bytes to " + dev);
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(s.done), stream), "upload", "pinned staging of " + dev);
  return true;
}

}  // namespace kiln::cuda
