// Per-op GPU time of the CUDA backend, for finding where a training step spends its time.
// With KILN_CUDA_PROFILE=1 in the environment, every backend entry point that opens a
// ProfileScope records a CUDA event pair around its work on the device's stream; the times
// are summed per key (op, dtype, first operand's shape, and a second operand's where the op
// passes one, e.g. a convolution's weight; the first call of each key, which
// pays for plans and algorithm searches, is left out) whenever the backend waits for the
// device, and the table (milliseconds, calls, share) is printed to stderr at exit, largest
// first. Work an op enqueues through another entry point (a reduce that first casts) is
// counted in both. Off (one getenv at start) costs a branch per op. Not during capture.
#pragma once
#include <string>

#include "backends/cuda/gpu_runtime.h"
#include "engine/core/backend.h"

namespace kiln::cuda {

bool profiling();  // KILN_CUDA_PROFILE=1

class ProfileScope {
 public:
  ProfileScope(cudaStream_t stream, const char* op, const TensorArg& first, const TensorArg* second = nullptr) {
    if (profiling()) begin(stream, op, first, second);
  }
  ~ProfileScope() {
    if (ev_) end();
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  void begin(cudaStream_t stream, const char* op, const TensorArg& first, const TensorArg* second);
  void end();
  cudaStream_t stream_ = nullptr;
  void* ev_ = nullptr;  // the begin event (cudaEvent_t)
  std::string key_;
};

// Resolves the recorded event pairs into the totals (waits for them); called on device waits.
void profile_flush();

}  // namespace kiln::cuda
