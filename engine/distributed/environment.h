// Where a process of a multi-process job stands: its rank, the world size and the address of
// rank 0's rendezvous, read from the environment variables torchrun (torch.distributed.run) sets
// for every process it launches: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "engine/core/error.h"

namespace kiln {
// A rank of a multi-process job died, timed out or disagrees with the others (the rendezvous's
// errors; engine/distributed/rendezvous.h). The message names the rank and the operation. (In
// namespace kiln, as KILN_CHECK wants, but here rather than in core/error.h, which every file
// of the build includes.)
struct DistributedError : Error {
  using Error::Error;
};
}  // namespace kiln

namespace kiln::distributed {

struct DistributedEnvironment {
  std::string master_addr;  // host name or IPv4 address of rank 0's machine (MASTER_ADDR)
  int master_port = 0;      // TCP port rank 0 listens on, 1..65535 (MASTER_PORT)
  int rank = 0;             // this process's rank, in [0, world_size) (RANK)
  int world_size = 1;       // number of processes in the job, at least 1 (WORLD_SIZE)
  int local_rank = 0;       // this process's index on its machine: the GPU it uses (LOCAL_RANK)
};

// The value of an environment variable, or nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Reads the five variables through `lookup` (the process environment, std::getenv, by default).
// ValueError naming the variable and its value when one is missing, empty (MASTER_ADDR) or not a
// decimal integer, MASTER_PORT is outside 1..65535, WORLD_SIZE < 1, RANK is outside
// [0, WORLD_SIZE) or LOCAL_RANK < 0.
DistributedEnvironment from_environment();
DistributedEnvironment from_environment(const EnvironmentLookup& lookup);

// The same checks on an environment built by hand (ValueError, naming the field as its variable).
void check_environment(const DistributedEnvironment& env);

}  // namespace kiln::distributed
