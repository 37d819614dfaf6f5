// CudaBackend::read_async / read_wait through page-locked buffers: cudaMemcpyAsync into
// pageable memory makes the host wait for the whole stream, so a read that must not wait for
// the work enqueued after it copies into a buffer from cudaMallocHost and records an event;
// read_wait waits for that event alone. The Trainer reads a step's loss and logits this way
// while the next step runs (engine/train/trainer.cpp).
#include <cstring>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {

int64_t PinnedReads::start(cudaStream_t stream, const void* src, size_t nbytes, const std::string& dev) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot* slot = nullptr;
  for (Slot& s : slots_)
    if (s.ticket == 0 && (!slot || (s.size >= nbytes && slot->size < nbytes))) slot = &s;
  if (!slot) slot = &slots_.emplace_back();
  if (slot->size < nbytes) {
    if (slot->host) cudaFreeHost(slot->host);
    slot->host = nullptr, slot->size = 0;
    check_cuda(cudaMallocHost(&slot->host, nbytes), "read_async",
               "a page-locked buffer of " + std::to_string(nbytes) + " bytes for " + dev);
    slot->size = nbytes;
  }
  if (!slot->done) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "read_async", dev);
    slot->done = e;
  }
  if (nbytes)
    check_cuda(cudaMemcpyAsync(slot->host, src, nbytes, cudaMemcpyDeviceToHost, stream), "read_async",
               std::to_string(nbytes) + " bytes from " + dev);
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(slot->done), stream), "read_async", dev);
  slot->ticket = next_ticket_++;
  slot->nbytes = nbytes;
  return slot->ticket;
}

void PinnedReads::wait(int64_t ticket, void* host, const std::string& dev) {
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Slot& s : slots_)
      if (ticket > 0 && s.ticket == ticket) slot = &s;
  }
  KILN_CHECK(slot, DeviceError, "read_wait: ", dev, " has no read with ticket ", ticket,
             " (each read_async is waited for once)");
  const cudaError_t err = cudaEventSynchronize(static_cast<cudaEvent_t>(slot->done));
  if (err == cudaSuccess && slot->nbytes) std::memcpy(host, slot->host, slot->nbytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot->ticket = 0;  // free for the next read
  }
  check_cuda(err, "read_wait", std::to_string(slot->nbytes) + " bytes from " + dev);
}

void PinnedReads::release() {
  for (Slot& s : slots_) {
    if (s.done) cudaEventSynchronize(static_cast<cudaEvent_t>(s.done)), cudaEventDestroy(static_cast<cudaEvent_t>(s.done));
    if (s.host) cudaFreeHost(s.host);
  }
  slots_.clear();
}

int64_t CudaBackend::read_async(const void* src, size_t src_byte_offset, size_t nbytes) {
  KILN_CHECK(!capturing(), DeviceError, name(), ": read_async of ", nbytes,
             " bytes while a CUDA graph is being recorded (recorded work does not run)");
  make_current();
  return reads_.start(stream_, static_cast<const char*>(src) + src_byte_offset, nbytes, name());
}

void CudaBackend::read_wait(int64_t ticket, void* host) {
  make_current();
  reads_.wait(ticket, host, name());
}

}  // namespace kiln::cuda
