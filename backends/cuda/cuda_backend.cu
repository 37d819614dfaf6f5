#include "backends/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "backends/cuda/common.cuh"
#include "backends/cuda/profile.h"
#include "engine/core/collectives.h"
#include "engine/core/registry.h"

namespace kiln::cuda {

void check_cuda(cudaError_t err, const char* op, const std::string& what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clears a sticky launch error so that the next op reports its own
  throw DeviceError(detail::str_cat(KILN_GPU_NAME, ": ", op, what.empty() ? "" : " ", what, ": ",
                                    cudaGetErrorName(err), " (", cudaGetErrorString(err), ")"));
}

std::string args_str(std::initializer_list<const TensorArg*> args) {
  std::string s;
  for (const TensorArg* a : args) {
    if (!a->data && a->shape.empty()) continue;
    s += (s.empty() ? "" : ", ") + shape_str(a->shape) + " " + dtype_name(a->dtype);
  }
  return s;
}

TensorArg scratch_arg(const Scratch& s, DType dtype, const Shape& shape) {
  return TensorArg{s.get(), 0, dtype, shape, contiguous_strides(shape)};
}

CudaBackend::CudaBackend(int index, const cudaDeviceProp& prop)
    : Backend(Device(KILN_DEVICE_TYPE, index)), index_(index), prop_(prop), alloc_(Device(KILN_DEVICE_TYPE, index).str()) {
  make_current();
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream create", name());
  check_cuda(cudaMalloc(&index_check_, 2 * sizeof(int64_t)), "index check buffer", name());
  check_cuda(cudaMallocHost(&index_check_host_, 2 * sizeof(int64_t)), "index check buffer", name());
  check_cuda(cudaMalloc(&deferred_, 2 * sizeof(int64_t)), "index check buffer", name());
  check_cuda(cudaMemset(deferred_, 0, 2 * sizeof(int64_t)), "index check buffer", name());
  check_cuda(cudaMallocHost(&deferred_host_, 2 * sizeof(int64_t)), "index check buffer", name());
  const char* tf32 = std::getenv("KILN_ALLOW_TF32");
  allow_tf32_ = tf32 && std::strcmp(tf32, "1") == 0;
}

CudaBackend::~CudaBackend() = default;  // the registry keeps backends until exit

Collectives* CudaBackend::collectives() {
#if defined(KILN_HAVE_NCCL)
  std::call_once(collectives_once_, [this] { collectives_ = make_nccl_collectives(*this); });
#endif
  return collectives_.get();
}

std::string CudaBackend::name() const { return device().str(); }

void CudaBackend::make_current() const {
  thread_local int current = -1;
  if (current == index_) return;
  check_cuda(cudaSetDevice(index_), "cudaSetDevice", name());
  current = index_;
}

DeviceInfo CudaBackend::info() const {
  DeviceInfo d;
  d.device = device();
#if defined(KILN_HIP)
  d.name = std::string(prop_.name) + " (" + prop_.gcnArchName + ")";  // "gfx90a:sramecc+:xnack-"
#else
  d.name = std::string(prop_.name) + " (" + KILN_ARCH_PREFIX + std::to_string(prop_.major) +
           std::to_string(prop_.minor) + ")";
#endif
  d.kind = prop_.integrated ? "integrated GPU" : "discrete GPU";
  d.memory_bytes = prop_.totalGlobalMem;
  d.compute_units = prop_.multiProcessorCount;
  // Above every CPU (threads) and above Vulkan on the same GPU (the native backend first).
  d.score = 10000.0 + 10.0 * prop_.multiProcessorCount;
  return d;
}

bool CudaBackend::supports_op(OpId op, DType dtype, int sub_op) const {
  const bool flt = dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f64;
  // No kernel is instantiated for i16 or the unsigned types other than u8 (common.cuh).
  if (dtype == DType::i16 || dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64) return false;
  switch (op) {
    case OpId::copy: case OpId::fill: case OpId::unary: case OpId::binary: case OpId::where:
    case OpId::gather: case OpId::scatter_add: case OpId::index_select: case OpId::index_add:
      return true;  // every UnaryOp (floating-only ones of integers through f64) and BinaryOp
    case OpId::reduce:  // reduce.cu: mean and var of integers only into a floating output, so: no
      return flt || (sub_op != Backend::kEverySubOp && sub_op != static_cast<int>(ReduceOp::mean) &&
                     sub_op != static_cast<int>(ReduceOp::var));
    case OpId::matmul: case OpId::max_pool2d_forward: case OpId::max_pool2d_backward:
    case OpId::avg_pool2d_forward: case OpId::avg_pool2d_backward: case OpId::softmax_forward:
    case OpId::softmax_backward:
      return flt;
    case OpId::conv2d_forward: case OpId::conv2d_backward_input: case OpId::conv2d_backward_weight:
      return flt;
    case OpId::adam_step:
      return dtype == DType::f32 || dtype == DType::f64;
    case OpId::batch_norm_forward: case OpId::batch_norm_backward:
      return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
    case OpId::qconv2d_forward: case OpId::qlinear_forward:  // no int8 kernels yet (cuBLASLt/cuDNN int8: issue 17)
      return false;
    case OpId::relu_backward: case OpId::bernoulli:  // elementwise.cu
      return flt;
    case OpId::fake_quantize:  // no kernel: composed of elementwise ops by the front end (ops_fake_quant.cpp)
      return false;
    case OpId::conv2d_fused_forward:  // decomposed by the front end (conv2d_fused)
      return false;
    case OpId::count:
      break;
  }
  return false;
}

void* CudaBackend::allocate(size_t nbytes) {
  make_current();
  return alloc_.allocate(nbytes);
}
void CudaBackend::deallocate(void* data, size_t nbytes) { alloc_.deallocate(data, nbytes); }
MemoryStats CudaBackend::memory_stats() const { return alloc_.stats(); }
void CudaBackend::empty_cache() {
  make_current();
  synchronize();
  alloc_.empty_cache();
}

// Large copies go through pinned staging buffers (pinned.cu) and return before the copy
// ends; others from pageable memory: cudaMemcpyAsync returns once the bytes are staged.
// Either way the caller may free its bytes at once, and the copy stays in stream order.
void CudaBackend::upload(void* dst, size_t off, const void* host, size_t nbytes) {
  if (!nbytes) return;
  make_current();
  KILN_CHECK(!capturing(), DeviceError, name(), ": upload of ", nbytes,
             " bytes while a CUDA graph is being recorded (a replay would read host memory long freed)");
  if (staging_.upload(stream_, static_cast<char*>(dst) + off, host, nbytes, name())) return;
  check_cuda(cudaMemcpyAsync(static_cast<char*>(dst) + off, host, nbytes, cudaMemcpyHostToDevice, stream_), "upload",
             std::to_string(nbytes) + " bytes to " + name());
}

void CudaBackend::download(void* host, const void* src, size_t off, size_t nbytes) {
  if (!nbytes) return;
  KILN_CHECK(!capturing(), DeviceError, name(), ": reading ", nbytes,
             " bytes back while a CUDA graph is being recorded (recorded work does not run)");
  make_current();
  check_cuda(cudaMemcpyAsync(host, static_cast<const char*>(src) + off, nbytes, cudaMemcpyDeviceToHost, stream_),
             "download", std::to_string(nbytes) + " bytes from " + name());
  check_cuda(cudaStreamSynchronize(stream_), "download", std::to_string(nbytes) + " bytes from " + name());
  profile_flush();
  flush_deferred_checks();
}

void CudaBackend::synchronize() {
  KILN_CHECK(!capturing(), DeviceError, name(), ": waiting for the device while a CUDA graph is being recorded");
  make_current();
  check_cuda(cudaStreamSynchronize(stream_), "synchronize", name());
  profile_flush();
  flush_deferred_checks();
}

int64_t* CudaBackend::deferred_check(const char* op, int64_t dim, int64_t size, int64_t* id) {
  if (pending_.size() >= 4096 && !capturing()) flush_deferred_checks();  // bounded bookkeeping
  if (capturing()) {  // a replayed graph checks too; its failures are reported without the op
    graph_checks_ = true;
    *id = -1;
    return deferred_;
  }
  pending_.push_back({op, dim, size});
  *id = static_cast<int64_t>(pending_.size());
  return deferred_;
}

void CudaBackend::flush_deferred_checks() {
  if ((pending_.empty() && !graph_checks_) || capturing()) return;
  check_cuda(cudaMemcpyAsync(deferred_host_, deferred_, 2 * sizeof(int64_t), cudaMemcpyDeviceToHost, stream_),
             "index check", name());
  check_cuda(cudaStreamSynchronize(stream_), "index check", name());
  std::vector<Pending> pending;
  pending.swap(pending_);
  const int64_t id = deferred_host_[0], value = deferred_host_[1];
  if (id == 0) return;
  check_cuda(cudaMemsetAsync(deferred_, 0, 2 * sizeof(int64_t), stream_), "index check", name());
  if (id > 0 && id <= static_cast<int64_t>(pending.size())) {
    const Pending& p = pending[static_cast<size_t>(id - 1)];
    if (p.dim < 0)
      throw IndexError(detail::str_cat(p.op, ": index ", value, " lies outside the plane of ", p.size, " positions (",
                                       name(), "; the op skipped it)"));
    throw IndexError(detail::str_cat(p.op, ": index ", value, " is out of range for dimension ", p.dim, " of size ",
                                     p.size, " (", name(), "; the op skipped it)"));
  }
  throw IndexError(detail::str_cat(name(), ": an index op met an out-of-range index ", value,
                                   " (in a replayed CUDA graph)"));
}

int64_t* CudaBackend::check_buffer() {
  check_cuda(cudaMemsetAsync(index_check_, 0, 2 * sizeof(int64_t), stream_), "check buffer", name());
  return index_check_;
}

std::array<int64_t, 2> CudaBackend::read_check() {
  check_cuda(cudaMemcpyAsync(index_check_host_, index_check_, 2 * sizeof(int64_t), cudaMemcpyDeviceToHost, stream_),
             "check buffer", name());
  check_cuda(cudaStreamSynchronize(stream_), "check buffer", name());
  std::array<int64_t, 2> r{index_check_host_[0], index_check_host_[1]};
  flush_deferred_checks();
  return r;
}

bool CudaBackend::capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream_, &status);
  return status != cudaStreamCaptureStatusNone;
}

namespace {
std::vector<std::unique_ptr<Backend>> enumerate(std::string& why) {
  std::vector<std::unique_ptr<Backend>> found;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
#if defined(KILN_HIP)
  if (err == hipErrorNoDevice) {  // HIP reports a missing kernel driver (/dev/kfd) this way too
    why = detail::str_cat("no AMD GPU", std::filesystem::exists("/dev/kfd") ? "" : " (no ROCm kernel driver: /dev/kfd is absent)",
                          " (", cudaGetErrorName(err), ")");
    cudaGetLastError();
    return found;
  }
#endif
  if (err != cudaSuccess) {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    why = driver == 0 ? detail::str_cat("no ", KILN_GPU_LABEL, " driver on this machine (", cudaGetErrorName(err), ": ",
                                        cudaGetErrorString(err), ")")
                      : detail::str_cat("no usable ", KILN_GPU_LABEL, " device (", cudaGetErrorName(err), ": ",
                                        cudaGetErrorString(err), ")");
#if !defined(KILN_HIP)  // HIP encodes versions differently (major * 10^7 + minor * 10^5 + patch)
    if (driver > 0 && driver < runtime)
      why += detail::str_cat("; the driver supports version ", driver / 1000, ".", driver % 1000 / 10,
                             ", this build needs ", runtime / 1000, ".", runtime % 1000 / 10);
#endif
    cudaGetLastError();
    return found;
  }
  if (count == 0) {
    why = detail::str_cat("no ", KILN_GPU_LABEL, " device");
    return found;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    found.push_back(std::make_unique<CudaBackend>(i, prop));
  }
  return found;
}
}  // namespace

}  // namespace kiln::cuda

extern "C" __attribute__((visibility("default"))) kiln::BackendFactory* kiln_backend_factory() {
  static kiln::BackendFactory factory{KILN_DEVICE_TYPE, kiln::cuda::enumerate};
  return &factory;
}
