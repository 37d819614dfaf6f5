// Collectives over NCCL (engine/core/collectives.h): NcclCollectives, which CudaBackend owns
// (made on first use by CudaBackend::collectives()), and NcclCommunicator, one per connect().
// Compiled only where CMake found nccl.h (KILN_HAVE_NCCL); never on HIP (Debian has no RCCL).
// libnccl itself is loaded at first use, not linked: Note [NCCL at run time] (nccl_loader.h).
//
// Note [NCCL streams and capture]: a communicator has its own non-blocking stream on the backend's
// device. A collective forks from the device's stream (an event recorded there, the communicator's
// stream waits on it), runs on the communicator's stream, and join() merges back (an event on the
// communicator's stream, the device's stream waits on it). No call waits on the host except wait(),
// so a step that enqueues collectives may be recorded into a CUDA graph (graph.cu): the event wait
// draws the communicator's stream into the capture, and join() must come before end_capture
// (CUDA refuses a capture with an unjoined stream). NCCL records its kernels into graphs since 2.9.6.
// The first collectives between two ranks connect them (NCCL_RUNTIME_CONNECT, 2.22): run one step
// eagerly before recording it, as PyTorch's warm-up iterations do. A graph must not be replayed
// once the communicator of its collectives is gone.
//
// Note [NCCL non-blocking communicators]: the communicator is made with config.blocking = 0, so
// that neither ncclCommInitRankConfig nor a collective blocks the host while a rank is missing:
// they return ncclInProgress, and ncclCommGetAsyncError says when the host-side work is done (a
// collective's own progress on the device is tracked by CUDA events, in wait()). Every such poll
// sleeps 100 us between queries and has a deadline: connect()'s timeout for connecting and for
// enqueueing each collective, wait()'s for the device work. At the deadline, or on an error of
// this or another rank, the communicator is aborted (ncclCommAbort) and DeviceError names the
// rank, the collective and NCCL's reason; every later call throws.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_loader.h"
#include "engine/core/collectives.h"

namespace kiln::cuda {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::microseconds(100);

Clock::time_point deadline_after(double seconds) {
  seconds = std::isfinite(seconds) ? std::clamp(seconds, 0.0, 1e8) : (seconds > 0 ? 1e8 : 0.0);
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// NCCL's name of r and, where it has one, its message of the last error ("ncclInvalidUsage ...").
std::string nccl_reason(const NcclLibrary& lib, ncclResult_t r, ncclComm_t comm) {
  std::string s = lib.ncclGetErrorString(r);
  const char* last = lib.ncclGetLastError(comm);
  if (last && *last) s += detail::str_cat(" (", last, ")");
  return s;
}

// Polls ncclCommGetAsyncError until the communicator leaves ncclInProgress or the deadline
// passes; returns its state then (ncclInProgress at the deadline).
ncclResult_t poll_ready(const NcclLibrary& lib, ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t r = lib.ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress || Clock::now() >= deadline) return state;
    std::this_thread::sleep_for(kPollInterval);
  }
}

ncclDataType_t nccl_dtype(DType t, const char* op) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
    case DType::i32: return ncclInt32;
    case DType::u32: return ncclUint32;
    case DType::i64: return ncclInt64;
    case DType::u64: return ncclUint64;
    default:
      throw DTypeError(detail::str_cat("NCCL ", op, ": dtype ", dtype_name(t),
                                       " is not supported (f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64)"));
  }
}

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;

class NcclCommunicator final : public Communicator {
 public:
  // Makes the stream and events on be's device; connect() then joins the communicator.
  // lib: loaded (NcclLibrary::loaded()).
  NcclCommunicator(CudaBackend& be, const NcclLibrary& lib, int rank, int world_size, double timeout_s)
      : be_(be), lib_(lib), rank_(rank), world_(world_size), timeout_s_(timeout_s) {
    be_.make_current();
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "NCCL stream create", where());
    stream_.reset(s);
    for (EventPtr* e : {&fork_, &join_, &done_}) {
      cudaEvent_t ev = nullptr;
      check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "NCCL event create", where());
      e->reset(ev);
    }
  }

  // Note [NCCL non-blocking communicators]. Aborts and throws DeviceError on failure.
  void connect(const std::vector<uint8_t>& id) {
    be_.make_current();
    ncclUniqueId uid;
    std::memcpy(uid.internal, id.data(), NCCL_UNIQUE_ID_BYTES);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ncclResult_t r = lib_.ncclCommInitRankConfig(&comm, world_, uid, rank_, &config);
    if (comm && (r == ncclSuccess || r == ncclInProgress)) r = poll_ready(lib_, comm, deadline_after(timeout_s_));
    if (r == ncclSuccess) {
      comm_ = comm;
      return;
    }
    const std::string why =
        r == ncclInProgress
            ? detail::str_cat("did not finish within ", timeout_s_, " s (the other ranks did not all join; ",
                              world_, " expected)")
            : detail::str_cat("failed: ", nccl_reason(lib_, r, comm));
    if (comm) lib_.ncclCommAbort(comm);
    broken_ = detail::str_cat(where(), ": NCCL connect ", why);
    throw DeviceError(broken_);
  }

  ~NcclCommunicator() override {
    if (!comm_) return;  // aborted: nothing more to free
    // A non-blocking communicator finalizes in the background (it waits for the collectives in
    // flight and the other ranks); a rank that never gets there costs the timeout, then an abort.
    ncclResult_t r = lib_.ncclCommFinalize(comm_);
    if (r == ncclSuccess || r == ncclInProgress) r = poll_ready(lib_, comm_, deadline_after(timeout_s_));
    if (r == ncclSuccess)
      lib_.ncclCommDestroy(comm_);
    else
      lib_.ncclCommAbort(comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  void all_reduce(const TensorArg& buf, bool average) override {
    void* p = buffer(buf, "all_reduce", "buf");
    const ncclDataType_t dt = nccl_dtype(buf.dtype, "all_reduce");
    enqueue("all_reduce", [&] {
      return lib_.ncclAllReduce(p, p, static_cast<size_t>(buf.numel()), dt, average ? ncclAvg : ncclSum, comm_,
                           stream_.get());
    });
  }

  void broadcast(const TensorArg& buf, int root) override {
    KILN_CHECK(root >= 0 && root < world_, ValueError, where(), ": NCCL broadcast: root ", root,
               " is out of range [0, ", world_, ")");
    void* p = buffer(buf, "broadcast", "buf");
    const ncclDataType_t dt = nccl_dtype(buf.dtype, "broadcast");
    enqueue("broadcast", [&] {
      return lib_.ncclBroadcast(p, p, static_cast<size_t>(buf.numel()), dt, root, comm_, stream_.get());
    });
  }

  void all_gather(const TensorArg& out, const TensorArg& in) override {
    KILN_CHECK(out.dtype == in.dtype, DTypeError, where(), ": NCCL all_gather: out is ", dtype_name(out.dtype),
               ", in is ", dtype_name(in.dtype));
    KILN_CHECK(out.numel() == in.numel() * world_, ShapeError, where(), ": NCCL all_gather: out ",
               shape_str(out.shape), " must hold world_size (", world_, ") times in ", shape_str(in.shape));
    void* o = buffer(out, "all_gather", "out");
    void* i = buffer(in, "all_gather", "in");
    const ncclDataType_t dt = nccl_dtype(in.dtype, "all_gather");
    enqueue("all_gather", [&] {
      return lib_.ncclAllGather(i, o, static_cast<size_t>(in.numel()), dt, comm_, stream_.get());
    });
  }

  // Note [NCCL streams and capture]
  void join() override {
    check_usable("join");
    if (!pending_) return;
    be_.make_current();
    cudaStreamCaptureStatus own = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream_.get(), &own);
    KILN_CHECK(own != cudaStreamCaptureStatusNone || !be_.capturing(), DeviceError, where(),
               ": NCCL join: the collectives enqueued before the CUDA graph recording began must be joined "
               "before it");
    check_cuda(cudaEventRecord(join_.get(), stream_.get()), "NCCL join (cudaEventRecord)", where());
    check_cuda(cudaStreamWaitEvent(be_.stream(), join_.get(), 0), "NCCL join (cudaStreamWaitEvent)", where());
    pending_ = false;
  }

  void wait(double timeout_s) override {
    check_usable("wait");
    KILN_CHECK(!be_.capturing(), DeviceError, where(),
               ": NCCL wait on the host while a CUDA graph is being recorded (join() instead)");
    be_.make_current();
    check_cuda(cudaEventRecord(done_.get(), stream_.get()), "NCCL wait (cudaEventRecord)", where());
    const Clock::time_point deadline = deadline_after(timeout_s);
    for (;;) {
      const cudaError_t e = cudaEventQuery(done_.get());
      if (e != cudaSuccess && e != cudaErrorNotReady) {
        cudaGetLastError();
        fail(detail::str_cat(last_, " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
      }
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = lib_.ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) state = r;
      if (state != ncclSuccess && state != ncclInProgress)
        fail(detail::str_cat(last_, " failed: ", nccl_reason(lib_, state, comm_)));
      if (e == cudaSuccess) return;
      if (Clock::now() >= deadline)
        fail(detail::str_cat(last_, " did not finish within ", timeout_s,
                             " s: a rank has not reached it or its device is still busy"));
      std::this_thread::sleep_for(kPollInterval);
    }
  }

  void abort() override {
    if (comm_) lib_.ncclCommAbort(comm_);
    comm_ = nullptr;
    if (broken_.empty()) broken_ = detail::str_cat(where(), ": NCCL communicator aborted");
  }

 private:
  std::string where() const { return detail::str_cat("rank ", rank_, " of ", world_, " (", be_.name(), ")"); }

  void check_usable(const char* op) const {
    KILN_CHECK(comm_, DeviceError, where(), ": NCCL ", op, " on an aborted communicator (", broken_, ")");
  }

  // The device address of a contiguous buffer of this backend's memory.
  void* buffer(const TensorArg& t, const char* op, const char* name) const {
    check_usable(op);
    KILN_CHECK(t.data || t.numel() == 0, ValueError, where(), ": NCCL ", op, ": ", name, " has no memory");
    KILN_CHECK(t.is_contiguous(), ShapeError, where(), ": NCCL ", op, ": ", name, " ", shape_str(t.shape),
               " must be contiguous");
    return static_cast<char*>(t.data) + t.offset * static_cast<int64_t>(dtype_size(t.dtype));
  }

  // Forks from the device's stream, runs `call` (the NCCL collective on stream_) and waits,
  // at most connect()'s timeout, for NCCL to have enqueued it.
  template <class F>
  void enqueue(const char* op, F&& call) {
    check_usable(op);
    be_.make_current();
    last_ = op;
    check_cuda(cudaEventRecord(fork_.get(), be_.stream()), "NCCL fork (cudaEventRecord)", where());
    check_cuda(cudaStreamWaitEvent(stream_.get(), fork_.get(), 0), "NCCL fork (cudaStreamWaitEvent)", where());
    ncclResult_t r = call();
    pending_ = true;
    if (r == ncclInProgress) r = poll_ready(lib_, comm_, deadline_after(timeout_s_));
    if (r == ncclInProgress)
      fail(detail::str_cat(op, " was not enqueued within ", timeout_s_, " s (connecting to the other ranks)"));
    if (r != ncclSuccess) fail(detail::str_cat(op, " failed: ", nccl_reason(lib_, r, comm_)));
  }

  // Aborts the communicator and throws DeviceError "<where>: NCCL <what>"; later calls throw it too.
  [[noreturn]] void fail(const std::string& what) {
    broken_ = detail::str_cat(where(), ": NCCL ", what);
    lib_.ncclCommAbort(comm_);
    comm_ = nullptr;
    throw DeviceError(broken_);
  }

  CudaBackend& be_;
  const NcclLibrary& lib_;
  const int rank_, world_;
  const double timeout_s_;  // connect()'s: for connecting, enqueueing, finalizing
  ncclComm_t comm_ = nullptr;  // null before connect() succeeds and once aborted
  StreamPtr stream_;
  EventPtr fork_, join_, done_;
  bool pending_ = false;       // collectives enqueued since the last join()
  const char* last_ = "(no collective yet)";  // the last collective, for errors
  std::string broken_;         // why the communicator was aborted
};

class NcclCollectives final : public Collectives {
 public:
  explicit NcclCollectives(CudaBackend& be) : be_(be) {
    // Issue 21 requires NVLink SHARP (multicast) off in every launch: NCCL_NVLS_ENABLE=0 unless the
    // user set the variable (overwrite = 0). NCCL reads it at its first init, after this.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
  }

  // "NCCL 2.28.9", or "NCCL unavailable (<why>)" when libnccl does not load (Note [NCCL at run time]).
  std::string library() const override {
    const NcclLibrary& lib = nccl_library();
    if (!lib.loaded()) return detail::str_cat("NCCL unavailable (", lib.failure, ")");
    return detail::str_cat("NCCL ", nccl_version_name(lib.version));
  }

  std::vector<uint8_t> unique_id() override {
    const NcclLibrary& lib = nccl_library();
    KILN_CHECK(lib.loaded(), DeviceError, be_.name(), ": NCCL unique id: ", lib.error());
    be_.make_current();
    ncclUniqueId id;
    const ncclResult_t r = lib.ncclGetUniqueId(&id);
    KILN_CHECK(r == ncclSuccess, DeviceError, be_.name(), ": NCCL unique id: ", nccl_reason(lib, r, nullptr));
    const auto* p = reinterpret_cast<const uint8_t*>(id.internal);
    return std::vector<uint8_t>(p, p + NCCL_UNIQUE_ID_BYTES);
  }

  std::unique_ptr<Communicator> connect(const std::vector<uint8_t>& id, int rank, int world_size,
                                        double timeout_s) override {
    const std::string who = detail::str_cat("rank ", rank, " of ", world_size, " (", be_.name(), "): NCCL connect: ");
    const NcclLibrary& lib = nccl_library();
    KILN_CHECK(lib.loaded(), DeviceError, who, lib.error());
    KILN_CHECK(world_size >= 1, DeviceError, who, "the world size must be at least 1");
    KILN_CHECK(rank >= 0 && rank < world_size, DeviceError, who, "rank ", rank, " is out of range [0, ", world_size,
               ")");
    KILN_CHECK(id.size() == NCCL_UNIQUE_ID_BYTES, DeviceError, who, "the communicator id has ", id.size(),
               " bytes, NCCL's have ", NCCL_UNIQUE_ID_BYTES, " (from unique_id() on rank 0)");
    KILN_CHECK(timeout_s > 0, DeviceError, who, "the timeout must be positive, got ", timeout_s, " s");
    auto comm = std::make_unique<NcclCommunicator>(be_, lib, rank, world_size, timeout_s);
    comm->connect(id);
    return comm;
  }

 private:
  CudaBackend& be_;
};

}  // namespace

std::unique_ptr<Collectives> make_nccl_collectives(CudaBackend& be) { return std::make_unique<NcclCollectives>(be); }

}  // namespace kiln::cuda
