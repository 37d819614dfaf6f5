// engine/distributed/environment.h: the variables torchrun sets, and their errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "engine/core/error.h"
#include "engine/distributed/environment.h"

using namespace kiln;
using namespace kiln::distributed;

namespace {

EnvironmentLookup lookup(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> good_vars() {
  return {{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}, {"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}};
}

std::string env_error(const std::string& name, const std::optional<std::string>& value) {
  auto vars = good_vars();
  if (value)
    vars[name] = *value;
  else
    vars.erase(name);
  try {
    from_environment(lookup(vars));
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DistributedEnvironment, ReadsTorchrunVariables) {
  DistributedEnvironment e = from_environment(lookup(good_vars()));
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);

  for (const auto& [k, v] : good_vars()) ::setenv(k.c_str(), v.c_str(), 1);
  DistributedEnvironment p = from_environment();
  for (const auto& [k, v] : good_vars()) ::unsetenv(k.c_str());
  EXPECT_EQ(p.master_addr, "node0");
  EXPECT_EQ(p.world_size, 4);
}

TEST(DistributedEnvironment, BadValuesNameTheVariable) {
  EXPECT_NE(env_error("RANK", std::nullopt).find("RANK is not set"), std::string::npos);
  EXPECT_NE(env_error("MASTER_ADDR", std::nullopt).find("MASTER_ADDR is not set"), std::string::npos);
  EXPECT_NE(env_error("MASTER_ADDR", "").find("MASTER_ADDR is empty"), std::string::npos);
  EXPECT_NE(env_error("WORLD_SIZE", "two").find("WORLD_SIZE='two' is not an integer"), std::string::npos);
  EXPECT_NE(env_error("RANK", "1x").find("RANK='1x' is not an integer"), std::string::npos);
  EXPECT_NE(env_error("LOCAL_RANK", "").find("LOCAL_RANK='' is not an integer"), std::string::npos);
  EXPECT_NE(env_error("MASTER_PORT", "99999999999").find("not an integer"), std::string::npos);
  EXPECT_NE(env_error("MASTER_PORT", "0").find("MASTER_PORT=0 is outside 1..65535"), std::string::npos);
  EXPECT_NE(env_error("MASTER_PORT", "65536").find("MASTER_PORT=65536"), std::string::npos);
  EXPECT_NE(env_error("RANK", "4").find("RANK=4 is outside [0, WORLD_SIZE=4)"), std::string::npos);
  EXPECT_NE(env_error("RANK", "-1").find("RANK=-1"), std::string::npos);
  EXPECT_NE(env_error("WORLD_SIZE", "0").find("WORLD_SIZE=0 must be at least 1"), std::string::npos);
  EXPECT_NE(env_error("LOCAL_RANK", "-2").find("LOCAL_RANK=-2"), std::string::npos);
}
