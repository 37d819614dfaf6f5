// Data-parallel gradient averaging as PyTorch's DistributedDataParallel does it
// (torch/nn/parallel/distributed.py, torch/csrc/distributed/c10d/reducer.cpp): the parameters'
// gradients are gathered into buckets, and each bucket's all-reduce is enqueued on the
// communicator's stream as soon as the backward pass has finished every gradient in it, so that
// it overlaps the rest of the backward pass; after the pass each parameter's .grad is a view of its
// slot in the averaged bucket (DDP's gradient_as_bucket_view=True), so nothing is copied back.
//
// Every rank must build the Reducer from the same parameters (same order, shapes and dtypes) and
// run the same number of backward passes: the collectives pair up by order. Buckets are launched
// in their index order whatever order the gradients come in, so that ranks whose passes finish
// leaves in a different order still enqueue the same sequence of collectives.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/core/collectives.h"
#include "engine/core/tensor.h"
#include "engine/nn/module.h"

namespace kiln::distributed {

// Bucket sizes, in bytes (DistributedDataParallel's bucket_cap_mb = 25 and its
// _DEFAULT_FIRST_BUCKET_BYTES = 1 MiB): a small first bucket so that the first all-reduce starts
// early in the backward pass, larger ones after it so that each collective is worth its launch.
struct BucketOptions {
  int64_t first_bucket_bytes = int64_t{1} << 20;
  int64_t bucket_bytes = int64_t{25} << 20;
};

// Which parameters go into which bucket: parameters are taken in reverse order (the order the
// backward pass tends to finish them), one dtype per bucket; a bucket is closed once it holds at
// least its cap (first_bucket_bytes for the first bucket of each dtype, bucket_bytes after), so
// one parameter larger than the cap gets a bucket of its own. Returns, per bucket, indices into
// `params`. ValueError for a cap < 1.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& params, const BucketOptions& options);

// Enqueues, on `comm`, the broadcast of every parameter and buffer of `model` from rank 0
// (DistributedDataParallel's start: all ranks then begin from rank 0's weights), then join()s.
void broadcast_state(const nn::Module& model, Communicator& comm);

class Reducer {
 public:
  // params: contiguous leaves on comm's device (a module's parameters(); those that do not
  // require grad are left out, as DDP leaves out frozen parameters); `comm` must outlive
  // the Reducer. Allocates one flat buffer per bucket (device memory = the parameters' size),
  // once, so that a captured training step replays with the same buffers. ValueError for a
  // parameter that is not contiguous or lives on another device than the first, or
  // when no parameter requires grad.
  Reducer(std::vector<Tensor> params, Communicator& comm, BucketOptions options = {});

  // loss.backward() (autograd::backward(loss, grad)) on this thread with every parameter's .grad
  // averaged over the ranks when it returns: .grad = (sum over ranks of each rank's .grad after
  // its pass) / world_size, as DDP leaves it. With sync false it is plain backward (DDP's
  // no_sync(): gradients accumulate locally and the next synchronized pass averages the sum).
  // Nothing waits on the host; the device's stream waits for the all-reduces before any later
  // work. Each .grad is then a view of the Reducer's bucket buffer, valid until the next
  // synchronized backward rewrites it (an optimizer may scale it in place). A parameter the pass leaves without a gradient on this rank keeps .grad undefined
  // there; its bucket slot counts as zeros in the other ranks' averages.
  void backward(const Tensor& loss, const Tensor& grad = Tensor(), bool sync = true);

  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }
  Communicator& communicator() const { return comm_; }

 private:
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;  // elements, into the bucket's flat buffer
  };
  void ready(const std::shared_ptr<TensorImpl>& leaf);
  void launch_in_order();

  std::vector<Tensor> params_;
  Communicator& comm_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<Tensor> flat_;          // one per bucket, 1-d
  std::vector<Slot> slots_;           // per parameter
  std::vector<int64_t> pending_;      // per bucket: parameters not ready yet in this pass
  std::vector<bool> reported_;        // per parameter, this pass
  std::unordered_map<const TensorImpl*, size_t> index_;  // leaf -> position in params_
  size_t next_launch_ = 0;            // buckets [0, next_launch_) are enqueued in this pass
};

}  // namespace kiln::distributed
