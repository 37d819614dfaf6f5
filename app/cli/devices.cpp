// `kiln devices`: every device the registry found, best first, the default device
// (KILN_DEVICE honoured) and why the missing backends are unavailable.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/omp_wait.h"
#include "engine/core/registry.h"

namespace kiln::cli {

int devices_command(const std::vector<std::string>& argv) {
  ArgParser parser("devices", "Lists the compute devices Kiln found, best score first, and the default device.");
  parser.epilog(
      "The default device is the best-scoring one unless KILN_DEVICE names another\n"
      "(e.g. KILN_DEVICE=cpu); `--device` of train and eval overrides both. The last line says how long\n"
      "idle CPU threads wait actively (kiln sets GOMP_SPINCOUNT=1000 unless GOMP_SPINCOUNT or OMP_WAIT_POLICY\n"
      "is set).");
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }

  std::vector<DeviceInfo> devices = list_devices();
  size_t name_w = 4, kind_w = 4;
  for (const DeviceInfo& d : devices) {
    name_w = std::max(name_w, d.name.size());
    kind_w = std::max(kind_w, d.kind.size());
  }
  const int nw = static_cast<int>(name_w), kw = static_cast<int>(kind_w);
  // reserved / peak: what this process's caching allocator holds on the device and the most
  // its tensors have held (MemoryStats of the GPU backends' caching allocators), in MiB; n/a
  // for the CPU, whose tensors live in ordinary host memory.
  std::printf("%-10s %-*s %-*s %12s %14s %8s %13s %9s\n", "device", nw, "name", kw, "kind", "memory GiB",
              "compute units", "score", "reserved MiB", "peak MiB");
  auto mib = [](bool known, uint64_t bytes) {
    char s[32] = "n/a";
    if (known) std::snprintf(s, sizeof(s), "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return std::string(s);
  };
  for (const DeviceInfo& d : devices) {
    const bool gpu = d.device.type != DeviceType::cpu;
    const MemoryStats m = gpu ? backend_for(d.device)->memory_stats() : MemoryStats{};
    std::printf("%-10s %-*s %-*s %12.1f %14d %8.1f %13s %9s\n", d.device.str().c_str(), nw, d.name.c_str(), kw,
                d.kind.c_str(), static_cast<double>(d.memory_bytes) / (1024.0 * 1024.0 * 1024.0), d.compute_units,
                d.score, mib(gpu, m.reserved).c_str(), mib(gpu, m.peak_allocated).c_str());
  }
  std::printf("\n");
  for (const std::string& why : unavailable_backends()) std::printf("unavailable: %s\n", why.c_str());

  const char* env = std::getenv("KILN_DEVICE");
  Device best = default_device();  // throws DeviceError when KILN_DEVICE names no device
  std::printf("default: %s%s\n", best.str().c_str(),
              env && *env ? (std::string(" (from KILN_DEVICE=") + env + ")").c_str() : "");
  std::printf("cpu idle wait: %s\n", app::omp_wait_setting().c_str());
  return kExitOk;
}

}  // namespace kiln::cli
