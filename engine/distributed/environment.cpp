#include "engine/distributed/environment.h"

#include <charconv>
#include <cstdlib>

#include "engine/core/error.h"

namespace kiln::distributed {
namespace {

std::string required(const EnvironmentLookup& lookup, const char* name) {
  std::optional<std::string> value = lookup(name);
  KILN_CHECK(value.has_value(), ValueError, "distributed environment: ", name,
             " is not set; launch with torchrun or set MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK");
  return *value;
}

int integer(const EnvironmentLookup& lookup, const char* name) {
  std::string text = required(lookup, name);
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  KILN_CHECK(!text.empty() && ec == std::errc() && ptr == end, ValueError, "distributed environment: ", name, "='",
             text, "' is not an integer");
  return value;
}

}  // namespace

void check_environment(const DistributedEnvironment& env) {
  KILN_CHECK(!env.master_addr.empty(), ValueError, "distributed environment: MASTER_ADDR is empty");
  KILN_CHECK(env.master_port >= 1 && env.master_port <= 65535, ValueError, "distributed environment: MASTER_PORT=",
             env.master_port, " is outside 1..65535");
  KILN_CHECK(env.world_size >= 1, ValueError, "distributed environment: WORLD_SIZE=", env.world_size,
             " must be at least 1");
  KILN_CHECK(env.rank >= 0 && env.rank < env.world_size, ValueError, "distributed environment: RANK=", env.rank,
             " is outside [0, WORLD_SIZE=", env.world_size, ")");
  KILN_CHECK(env.local_rank >= 0, ValueError, "distributed environment: LOCAL_RANK=", env.local_rank,
             " must be non-negative");
}

DistributedEnvironment from_environment(const EnvironmentLookup& lookup) {
  DistributedEnvironment env;
  env.master_addr = required(lookup, "MASTER_ADDR");
  env.master_port = integer(lookup, "MASTER_PORT");
  env.world_size = integer(lookup, "WORLD_SIZE");
  env.rank = integer(lookup, "RANK");
  env.local_rank = integer(lookup, "LOCAL_RANK");
  check_environment(env);
  return env;
}

DistributedEnvironment from_environment() {
  return from_environment([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace kiln::distributed
