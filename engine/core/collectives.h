// Collective communication between the processes of a data-parallel job, one device each: an
// optional extension of a Backend. A backend offers it by deriving from CollectivesProvider as
// well as from Backend (CudaBackend does); collectives_of(backend) finds it, or returns null. (A
// mix-in rather than a virtual of Backend, so that the Backend interface, which 465 of the
// build's files include, and every plugin's ABI fingerprint stay as they are.)
// The CUDA backend implements it over NCCL (backends/cuda/nccl.cu); engine/distributed builds the
// process group (rendezvous over TCP, ranks from the environment) and data parallelism on it.
//
// Stream order: a collective is enqueued on the communicator's own stream, after the work enqueued
// so far on the device's stream (an event, no host wait), and returns at once, so it overlaps the
// device's later work; join() makes the device's stream wait for every collective enqueued so far.
// Nothing here waits on the host except wait(), so all of it may be recorded into a captured step
// (join() before the recording ends). Buffers are contiguous memory of the communicator's device,
// of one dtype the library reduces (NCCL: f32, f64, f16, bf16, i8, u8, i32, u32, i64, u64; others
// throw DTypeError); every rank must pass the same sizes in the same order. A buffer must stay
// allocated until join(): the device's caching allocator hands a freed block to the device's next
// op at once, while the collective may still use it on its own stream.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/backend.h"

namespace kiln {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // buf = the sum over ranks of buf (the mean when `average`: sum / world_size), in place
  // (torch.distributed.all_reduce with ReduceOp.SUM / AVG).
  virtual void all_reduce(const TensorArg& buf, bool average) = 0;
  // buf = root's buf on every rank (torch.distributed.broadcast).
  virtual void broadcast(const TensorArg& buf, int root) = 0;
  // out (world_size * in.numel() elements, of in's dtype) = every rank's `in`, rank r's at
  // element r * in.numel() (torch.distributed.all_gather_into_tensor).
  virtual void all_gather(const TensorArg& out, const TensorArg& in) = 0;
  // The device's stream waits (on the device) for every collective enqueued so far.
  virtual void join() = 0;
  // Waits on the host, at most timeout_s seconds, until every collective enqueued so far has
  // finished. DeviceError naming this rank, the last collective and the library's reason when
  // this or another rank failed, or at the timeout; the communicator is then aborted and every
  // later call throws. DeviceError too while a graph is being recorded (join() instead).
  virtual void wait(double timeout_s) = 0;
  // Ends the communicator at once, without waiting for the other ranks (after an error).
  virtual void abort() = 0;
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual std::string library() const = 0;  // "NCCL 2.27.7"
  // The id of a new communicator: rank 0 makes it, the rendezvous hands it to every rank.
  virtual std::vector<uint8_t> unique_id() = 0;
  // Joins the communicator `id` of world_size ranks as `rank` on this backend's device, waiting
  // at most timeout_s seconds for the other ranks (the same limit holds later for each collective
  // to be enqueued, while the library connects the ranks). DeviceError naming the rank and the
  // reason (a timeout, a rank or world size out of range, an id of the wrong size, two ranks on one
  // device, the library's error).
  virtual std::unique_ptr<Communicator> connect(const std::vector<uint8_t>& id, int rank, int world_size,
                                                double timeout_s) = 0;
};

// What a backend with collectives derives from besides Backend. It owns the Collectives, which
// live as long as the backend.
class CollectivesProvider {
 public:
  virtual ~CollectivesProvider() = default;
  virtual Collectives* collectives() = 0;
};

// The collectives of `backend`'s device (the CUDA backend's NCCL), or null where it has none.
inline Collectives* collectives_of(Backend& backend) {
  auto* provider = dynamic_cast<CollectivesProvider*>(&backend);
  return provider ? provider->collectives() : nullptr;
}

}  // namespace kiln
