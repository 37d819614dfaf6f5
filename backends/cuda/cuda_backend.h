// The CUDA backend: one CudaBackend per device, all work on one stream per device, in
// stream order (so the caching allocator may hand a freed block to the next op at once).
// Kernels are ours (one .cu file per op family, common.cuh); matmul runs through cuBLAS
// (tensor cores for f16/bf16; TF32 for f32 only when KILN_ALLOW_TF32=1 or
// set_allow_tf32(true)); conv2d through cuDNN when the build found it (KILN_HAVE_CUDNN),
// else im2col/col2im kernels + cuBLAS. Errors are DeviceError with the CUDA, cuBLAS or
// cuDNN error string, the op and the shapes; out-of-memory names the bytes asked for and
// the bytes free. Index ops check every index and throw IndexError (this waits for the
// device). Collectives between processes go through NCCL when the build found it
// (KILN_HAVE_NCCL; nccl.cu). The HIP backend compiles these sources too (gpu_runtime.h).
#pragma once
#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/cuda/gpu_runtime.h"
#include "engine/core/backend.h"
#include "engine/core/collectives.h"

namespace kiln::cuda {

// Caching device allocator: blocks are rounded to size classes (512 B .. 1 MiB in powers
// of two, then whole 2 MiB granules), freed blocks are kept per class and reused;
// cudaMalloc runs only when no cached block fits. On cudaMalloc failure the cache is
// released and the call retried once; then DeviceError says how many bytes were asked
// for and how many are free.
class CachingAllocator {
 public:
  explicit CachingAllocator(std::string device_name) : name_(std::move(device_name)) {}
  void* allocate(size_t nbytes);
  void deallocate(void* p, size_t nbytes);
  // While on, allocate() serves from the private pool of recorded graphs (graph.cu): its
  // blocks, once freed, go back to that pool only, so work outside a graph never gets one.
  void set_private(bool on);
  void empty_cache();  // frees cached blocks (waits for the device)
  MemoryStats stats() const;
  static size_t round(size_t nbytes);

 private:
  std::string name_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_, private_free_;
  std::unordered_set<void*> private_blocks_;
  bool private_ = false;
  MemoryStats stats_;
};

// Page-locked buffers for device-to-host reads that do not wait for later work
// (Backend::read_async; readback.cu): one buffer and one event per read in flight, reused
// once read; a buffer grows to the largest read it has carried.
class PinnedReads {
 public:
  // Copies nbytes from src into a free buffer, asynchronously on stream; returns the ticket.
  int64_t start(cudaStream_t stream, const void* src, size_t nbytes, const std::string& dev);
  // Waits for the ticket's copy (its event only) and copies its bytes to host.
  void wait(int64_t ticket, void* host, const std::string& dev);
  void release();  // waits for the reads in flight and frees the buffers
  ~PinnedReads() { release(); }

 private:
  struct Slot {
    void* host = nullptr;
    size_t size = 0;
    void* done = nullptr;  // cudaEvent_t recorded after the copy
    int64_t ticket = 0;    // 0: free
    size_t nbytes = 0;
  };
  std::mutex mutex_;
  std::deque<Slot> slots_;  // a deque: growing it moves no slot a wait() is reading
  int64_t next_ticket_ = 1;
};

// Page-locked staging buffers for host-to-device copies (pinned.cu).
class PinnedStaging {
 public:
  static constexpr size_t kMinStaged = size_t{64} << 10;  // bytes; smaller copies go direct
  static constexpr int kSlots = 4;
  // Copies nbytes through a pinned slot, asynchronously on stream; false when it did not
  // (small copy, or no page-locked memory): the caller copies directly.
  bool upload(cudaStream_t stream, void* dst, const void* host, size_t nbytes, const std::string& dev);
  void release();  // waits for the slots' copies and frees them
  ~PinnedStaging() { release(); }

 private:
  struct Slot {
    void* host = nullptr;
    size_t size = 0;
    void* done = nullptr;  // cudaEvent_t of the last copy from this slot
  };
  std::mutex mutex_;
  Slot slots_[kSlots];
  int next_ = 0;
};

struct ConvState;  // conv_cudnn.cu or conv_im2col.cu
struct ConvStateDeleter {
  void operator()(ConvState* s) const;  // defined beside ConvState
};

class CudaBackend final : public Backend, public CollectivesProvider {
 public:
  CudaBackend(int index, const cudaDeviceProp& prop);
  ~CudaBackend() override;
  DeviceInfo info() const override;

  void* allocate(size_t nbytes) override;
  void deallocate(void* data, size_t nbytes) override;
  void upload(void* dst, size_t dst_byte_offset, const void* host, size_t nbytes) override;
  void download(void* host, const void* src, size_t src_byte_offset, size_t nbytes) override;
  void synchronize() override;
  int64_t read_async(const void* src, size_t src_byte_offset, size_t nbytes) override;
  void read_wait(int64_t ticket, void* host) override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;

  // elementwise.cu
  void copy(const TensorArg& out, const TensorArg& in) override;
  void fill(const TensorArg& out, double value) override;
  void where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) override;
  void relu_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out) override;
  void bernoulli(const TensorArg& out, uint64_t key, uint64_t threshold, double value) override;
  void adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                 const TensorArg& exp_avg_sq, const AdamParams& p) override;
  // unary.cu, binary.cu
  void unary(UnaryOp op, const TensorArg& out, const TensorArg& in, double p0, double p1) override;
  void binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  // reduce.cu
  void reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) override;
  // matmul.cu (cuBLAS)
  void matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  // conv_cudnn.cu or conv_im2col.cu
  void conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                      const Conv2dParams& p) override;
  void conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& weight,
                             const Conv2dParams& p) override;
  void conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias, const TensorArg& grad_out,
                              const TensorArg& in, const Conv2dParams& p) override;
  // pool.cu
  void max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                          const Pool2dParams& p) override;
  void max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) override;
  void avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) override;
  void avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) override;
  // softmax.cu
  void softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) override;
  void softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out, int64_t dim,
                        bool log) override;
  // index.cu
  void gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;
  void index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;

  // batch_norm.cu (f32, f16, bf16 inputs; f32 statistics)
  void batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                          const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                          const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                          double eps) override;
  void batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
                           const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight,
                           const TensorArg& save_mean, const TensorArg& save_invstd) override;

  // timing.cu (CUDA events around the span)
  bool begin_timing() override;
  double end_timing() override;

  // graph.cu (CUDA graphs)
  bool begin_capture(std::string& why) override;
  int64_t end_capture() override;
  void abort_capture() override;
  void replay(int64_t graph, const ReplayArgs& args) override;
  void release_graph(int64_t graph) override;
  // What replay() writes before each launch of a graph (device memory, one per graph).
  struct ReplayState {
    double lr;
    int64_t step_offset;
    uint64_t rng_key;  // ReplayArgs::rng_key: the recorded bernoulli draws read it (elementwise.cu)
  };
  // The ReplayState of the graph being recorded, else null: adam_step reads it (elementwise.cu).
  const ReplayState* replay_state() const { return replay_state_; }

  // NCCL (nccl.cu's make_nccl_collectives), made on first use; null without KILN_HAVE_NCCL
  // (so on HIP: Debian has no RCCL).
  Collectives* collectives() override;

  // ---- for the kernels' files ----
  cudaStream_t stream() const { return stream_; }
  int index() const { return index_; }
  std::string name() const;  // "cuda:0"
  void make_current() const;  // cudaSetDevice when another device is current on this thread
  // TF32 tensor cores for f32 matmul/conv (off by default; PyTorch's allow_tf32).
  bool allow_tf32() const { return allow_tf32_; }
  void set_allow_tf32(bool on) { allow_tf32_ = on; }
  // Index checks run inside the index kernels, without waiting for the device: a kernel
  // that meets an index outside [0, size) skips it and records it in the buffer that
  // deferred_check() returns (write flag with atomicCAS(flag, 0, id), then flag[1] = the
  // index); the next wait for the device (download, synchronize) throws IndexError naming
  // the op, the index, the dim and its size, as CUDA's device-side asserts but recoverable.
  int64_t* deferred_check(const char* op, int64_t dim, int64_t size, int64_t* id);
  // Throws the IndexError of a recorded bad index, if any (waits for the device).
  void flush_deferred_checks();
  // The [flag, value] device buffer of bad-input checks: check_buffer() zeroes it (in
  // stream order); read_check() waits for the device and returns it.
  int64_t* check_buffer();
  std::array<int64_t, 2> read_check();
  // True while a CUDA graph is being captured on this backend's stream (no waits then).
  bool capturing() const;
  void* blas_handle();  // cublasHandle_t, made on first use (matmul.cu)

 protected:
  bool supports_op(OpId op, DType dtype, int sub_op) const override;

 private:
  int index_;
  cudaDeviceProp prop_;
  cudaStream_t stream_ = nullptr;
  CachingAllocator alloc_;
  PinnedStaging staging_;
  PinnedReads reads_;
  bool allow_tf32_ = false;
  void* cublas_ = nullptr;        // cublasHandle_t
  void* blas_workspace_ = nullptr;
  int64_t* index_check_ = nullptr;  // device: [bad flag, first bad value]
  int64_t* index_check_host_ = nullptr;  // pinned
  int64_t* deferred_ = nullptr;       // device: [id of the first failed check, its index]
  int64_t* deferred_host_ = nullptr;  // pinned
  struct Pending {
    std::string op;
    int64_t dim, size;
  };
  std::vector<Pending> pending_;  // checks since the last flush; id = position + 1
  bool graph_checks_ = false;     // a captured graph holds index checks (id -1)
  std::unique_ptr<ConvState, ConvStateDeleter> conv_;
  struct Graph {
    void* exec;           // cudaGraphExec_t; null once released
    ReplayState* state;   // device
  };
  std::vector<Graph> graphs_;  // kept until exit or release_graph (their memory stays in the private pool)
  ReplayState* replay_state_ = nullptr;
  uint64_t recorded_draws_ = 0;  // bernoulli calls in the graph being recorded
  void* timing_start_ = nullptr;  // cudaEvent_t, made by the first begin_timing
  void* timing_stop_ = nullptr;
  bool timing_ = false;
  std::once_flag collectives_once_;
  std::unique_ptr<Collectives> collectives_;  // NcclCollectives (nccl.cu)
  friend struct ConvState;
  friend ConvState& conv_state(CudaBackend& be);
};

// The NCCL collectives of `be` (nccl.cu; only where KILN_HAVE_NCCL).
std::unique_ptr<Collectives> make_nccl_collectives(CudaBackend& be);

// A temporary device buffer of this backend, returned to its cache at scope end.
class Scratch {
 public:
  Scratch(CudaBackend& be, size_t nbytes) : be_(be), n_(nbytes), p_(nbytes ? be.allocate(nbytes) : nullptr) {}
  ~Scratch() { if (p_) be_.deallocate(p_, n_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }

 private:
  CudaBackend& be_;
  size_t n_;
  void* p_;
};

// A contiguous TensorArg over a scratch buffer of the given shape and dtype.
TensorArg scratch_arg(const Scratch& s, DType dtype, const Shape& shape);

}  // namespace kiln::cuda
