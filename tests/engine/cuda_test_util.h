// What the CUDA and NCCL tests need to know about this machine: whether cuda:0 exists (else
// why not, from the registry), and whether its NCCL collectives can run. Tests skip, naming the
// missing device or library, where they cannot.
#pragma once
#include <string>

#include <gtest/gtest.h>

#include "engine/core/collectives.h"
#include "engine/core/registry.h"

namespace kiln::cuda_test {

inline const Device kGpu(DeviceType::cuda, 0);

// The registry's reason for no CUDA device ("cuda: ..."), or "".
inline std::string cuda_reason() {
  for (const std::string& why : unavailable_backends())
    if (why.rfind("cuda:", 0) == 0) return why;
  return "";
}

inline bool have_cuda() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cuda) return true;
  return false;
}

// "" when cuda:0's NCCL collectives can run, else why not (no device, a build without NCCL, or
// libnccl that did not load: library() says "NCCL unavailable (<why>)").
inline std::string why_no_nccl() {
  if (!have_cuda()) return "no CUDA device: " + cuda_reason();
  Collectives* c = collectives_of(*backend_for(kGpu));
  if (!c) return "built without NCCL (KILN_NCCL off)";
  const std::string lib = c->library();
  return lib.rfind("NCCL unavailable", 0) == 0 ? lib : "";
}

}  // namespace kiln::cuda_test

#define REQUIRE_CUDA() \
  if (!::kiln::cuda_test::have_cuda()) GTEST_SKIP() << "no CUDA device: " << ::kiln::cuda_test::cuda_reason()

#define REQUIRE_NCCL()                                                          \
  if (const std::string why = ::kiln::cuda_test::why_no_nccl(); !why.empty()) \
  GTEST_SKIP() << why
