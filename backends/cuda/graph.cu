// CUDA graphs (Backend::begin_capture / end_capture / abort_capture / replay /
// release_graph): the device's stream is captured in relaxed mode (cudaMalloc stays
// allowed); the allocator serves the recording from its private pool (allocator.cu), so
// the graph's buffers are never handed to work outside it. Each graph owns a small device
// ReplayState {lr, step_offset} that replay() writes with a 1-thread kernel just before
// cudaGraphLaunch, in stream order; the recorded adam_step calls read it (elementwise.cu),
// so a replayed Adam follows the host's learning rate and step count, and the recorded
// bernoulli draws read its rng_key, so each replay draws new dropout masks.
#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {
namespace {
__global__ void write_replay_state(CudaBackend::ReplayState* state, double lr, int64_t step_offset,
                                   uint64_t rng_key) {
  state->lr = lr;
  state->step_offset = step_offset;
  state->rng_key = rng_key;
}
}  // namespace

bool CudaBackend::begin_capture(std::string& why) {
  if (capturing()) {
    why = name() + " is already recording a graph";
    return false;
  }
  make_current();
  synchronize();  // reports pending index errors of the eager steps first
  ReplayState* state = nullptr;
  if (cudaMalloc(&state, sizeof(ReplayState)) != cudaSuccess) {
    why = detail::str_cat(name(), ": no memory for the replay state (", cudaGetErrorString(cudaGetLastError()), ")");
    return false;
  }
  alloc_.set_private(true);
  const cudaError_t err = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    cudaGetLastError();
    alloc_.set_private(false);
    cudaFree(state);
    why = detail::str_cat(name(), ": cudaStreamBeginCapture failed: ", cudaGetErrorString(err));
    return false;
  }
  replay_state_ = state;
  recorded_draws_ = 0;
  return true;
}

int64_t CudaBackend::end_capture() {
  KILN_CHECK(capturing(), DeviceError, "end_capture: ", name(), " is not recording a graph");
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  alloc_.set_private(false);
  cudaGraphExec_t exec = nullptr;
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  ReplayState* state = replay_state_;
  replay_state_ = nullptr;
  if (err != cudaSuccess) {
    cudaGetLastError();
    cudaFree(state);
    check_cuda(err, "end_capture", name());
  }
  graphs_.push_back({exec, state});
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
  if (replay_state_) cudaFree(replay_state_);
  replay_state_ = nullptr;
}

void CudaBackend::replay(int64_t id, const ReplayArgs& args) {
  KILN_CHECK(id >= 1 && id <= static_cast<int64_t>(graphs_.size()) && graphs_[static_cast<size_t>(id - 1)].exec,
             DeviceError, "replay: ", name(), " has no recorded graph ", id);
  KILN_CHECK(!capturing(), DeviceError, "replay: ", name(), " is recording a graph");
  make_current();
  const Graph& g = graphs_[static_cast<size_t>(id - 1)];
  write_replay_state<<<1, 1, 0, stream_>>>(g.state, args.lr, args.step_offset, args.rng_key);
  check_cuda(cudaGetLastError(), "replay", name());
  check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g.exec), stream_), "replay", name());
}

void CudaBackend::release_graph(int64_t id) {
  if (id < 1 || id > static_cast<int64_t>(graphs_.size())) return;
  Graph& g = graphs_[static_cast<size_t>(id - 1)];
  if (!g.exec) return;
  make_current();
  cudaStreamSynchronize(stream_);  // a launch in flight finishes before its graph goes
  cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g.exec));
  cudaFree(g.state);
  g = {nullptr, nullptr};
}

}  // namespace kiln::cuda
