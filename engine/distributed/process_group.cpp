#include "engine/distributed/process_group.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/core/registry.h"

namespace kiln::distributed {

ProcessGroup::ProcessGroup(const DistributedEnvironment& env, const Device& device, double timeout_s)
    : env_(env), device_(device), timeout_s_(timeout_s) {
  check_environment(env_);
  Collectives* collectives = collectives_of(*backend_for(device_));
  KILN_CHECK(collectives, DeviceError, "rank ", env_.rank, ": device ", device_.str(),
             " has no collectives library: data-parallel training runs on CUDA devices, through NCCL");
  library_ = collectives->library();
  rendezvous_ = std::make_unique<Rendezvous>(env_, timeout_s_);
  std::vector<uint8_t> id;
  if (env_.rank == 0) id = collectives->unique_id();
  id = rendezvous_->broadcast(id);
  comm_ = collectives->connect(id, env_.rank, env_.world_size, timeout_s_);
}

ProcessGroup::~ProcessGroup() = default;

std::vector<double> ProcessGroup::sum(const std::vector<double>& values) {
  std::vector<uint8_t> mine(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(mine.data(), values.data(), mine.size());
  const std::vector<std::vector<uint8_t>> all = rendezvous_->all_gather(mine);
  std::vector<double> total(values.size(), 0.0);
  for (size_t r = 0; r < all.size(); ++r) {
    KILN_CHECK(all[r].size() == mine.size(), ValueError, "ProcessGroup::sum: rank ", r, " sent ",
               all[r].size() / sizeof(double), " values, rank ", env_.rank, " ", values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      double v;
      std::memcpy(&v, all[r].data() + i * sizeof(double), sizeof(double));
      total[i] += v;
    }
  }
  return total;
}

}  // namespace kiln::distributed
