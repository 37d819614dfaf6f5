// A process group: the processes of one data-parallel job, one device each, joined as
// torch.distributed.init_process_group("nccl") joins them: ranks and rank 0's address from the
// environment (environment.h), a TCP rendezvous (rendezvous.h) on which rank 0 hands every rank
// the id of a new communicator of the device's collectives library (NCCL on CUDA), and that
// communicator for the collectives on device memory (engine/core/collectives.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/collectives.h"
#include "engine/core/device.h"
#include "engine/distributed/environment.h"
#include "engine/distributed/rendezvous.h"

namespace kiln::distributed {

// torch.distributed's default timeout for NCCL process groups (datetime.timedelta(minutes=10)).
inline constexpr double kDefaultTimeoutSeconds = 600;

class ProcessGroup {
 public:
  // Joins the job `env` describes with `device` (cuda:LOCAL_RANK as torchrun's users pick it),
  // waiting at most timeout_s seconds for the other ranks at each step. DeviceError when the
  // device's backend has no collectives library ("cpu has none: data-parallel training runs on
  // CUDA devices through NCCL"), and the rendezvous's and the library's errors, which name the
  // rank.
  ProcessGroup(const DistributedEnvironment& env, const Device& device, double timeout_s = kDefaultTimeoutSeconds);
  ~ProcessGroup();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const Device& device() const { return device_; }
  double timeout_seconds() const { return timeout_s_; }
  const std::string& library() const { return library_; }  // "NCCL 2.27.7"
  Communicator& communicator() { return *comm_; }
  // The host-side channel: barriers, small blobs (metrics, checks that ranks agree).
  Rendezvous& rendezvous() { return *rendezvous_; }

  // Element-wise sums over the ranks of small host vectors (metrics), through the rendezvous.
  // Every rank must pass the same count (ValueError otherwise, naming the ranks' counts).
  std::vector<double> sum(const std::vector<double>& values);

 private:
  DistributedEnvironment env_;
  Device device_;
  double timeout_s_;
  std::string library_;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::unique_ptr<Communicator> comm_;
};

}  // namespace kiln::distributed
