// `kiln devices`: every device the registry found, best first, the default device
// (KILN_DEVICE honoured) and why the missing backends are unavailable.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/core/registry.h"

namespace kiln::cli {

int devices_command(const std::vector<std::string>& argv) {
  ArgParser parser("devices", "Lists the compute devices Kiln found, best score first, and the default device.");
  parser.epilog(
      "The default device is the best-scoring one unless KILN_DEVICE names another\n"
      "(e.g. KILN_DEVICE=cpu); `--device` of train and eval overrides both.");
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
  std::printf("%-10s %-*s %-*s %12s %14s %8s\n", "device", nw, "name", kw, "kind", "memory GiB", "compute units",
              "score");
  for (const DeviceInfo& d : devices) {
    std::printf("%-10s %-*s %-*s %12.1f %14d %8.1f\n", d.device.str().c_str(), nw, d.name.c_str(), kw,
                d.kind.c_str(), static_cast<double>(d.memory_bytes) / (1024.0 * 1024.0 * 1024.0), d.compute_units,
                d.score);
  }
  std::printf("\n");
  for (const std::string& why : unavailable_backends()) std::printf("unavailable: %s\n", why.c_str());

  const char* env = std::getenv("KILN_DEVICE");
  Device best = default_device();  // throws DeviceError when KILN_DEVICE names no device
  std::printf("default: %s%s\n", best.str().c_str(),
              env && *env ? (std::string(" (from KILN_DEVICE=") + env + ")").c_str() : "");
  return kExitOk;
}

}  // namespace kiln::cli
