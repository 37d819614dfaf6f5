// CUDA graphs (Backend::begin_capture / end_capture / abort_capture / replay): the
// device's stream is captured in relaxed mode (cudaMalloc stays allowed); the allocator
// serves the recording from its private pool (allocator.cu), so the graph's buffers are
// never handed to work outside it. Each graph owns a device counter of its replays,
// which adam_step reads while recording (elementwise.cu) and the graph's last node
// increments, so bias corrections follow the step count on replay.
#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {
namespace {
__global__ void count_replay(int64_t* counter) { ++*counter; }
}  // namespace

bool CudaBackend::begin_capture(std::string& why) {
  if (capturing()) {
    why = name() + " is already recording a graph";
    return false;
  }
  make_current();
  synchronize();  // reports pending index errors of the eager steps first
  int64_t* counter = nullptr;
  if (cudaMalloc(&counter, sizeof(int64_t)) != cudaSuccess || cudaMemset(counter, 0, sizeof(int64_t)) != cudaSuccess) {
    why = detail::str_cat(name(), ": no memory for the replay counter (", cudaGetErrorString(cudaGetLastError()), ")");
    if (counter) cudaFree(counter);
    return false;
  }
  alloc_.set_private(true);
  const cudaError_t err = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    cudaGetLastError();
    alloc_.set_private(false);
    cudaFree(counter);
    why = detail::str_cat(name(), ": cudaStreamBeginCapture failed: ", cudaGetErrorString(err));
    return false;
  }
  replay_counter_ = counter;
  return true;
}

int64_t CudaBackend::end_capture() {
  KILN_CHECK(capturing(), DeviceError, "end_capture: ", name(), " is not recording a graph");
  count_replay<<<1, 1, 0, stream_>>>(replay_counter_);
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  alloc_.set_private(false);
  cudaGraphExec_t exec = nullptr;
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  int64_t* counter = replay_counter_;
  replay_counter_ = nullptr;
  if (err != cudaSuccess) {
    cudaGetLastError();
    cudaFree(counter);
    check_cuda(err, "end_capture", name());
  }
  graphs_.push_back({exec, counter});
  return static_cast<int64_t>(graphs_.size());
}

void CudaBackend::abort_capture() {
  if (capturing()) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
  }
  cudaGetLastError();
  alloc_.set_private(false);
  if (replay_counter_) cudaFree(replay_counter_);
  replay_counter_ = nullptr;
}

void CudaBackend::replay(int64_t id) {
  KILN_CHECK(id >= 1 && id <= static_cast<int64_t>(graphs_.size()), DeviceError, "replay: ", name(),
             " has no recorded graph ", id);
  KILN_CHECK(!capturing(), DeviceError, "replay: ", name(), " is recording a graph");
  make_current();
  check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graphs_[static_cast<size_t>(id - 1)].exec), stream_),
             "replay", name());
}

}  // namespace kiln::cuda
