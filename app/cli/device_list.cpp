#include "app/cli/device_list.h"

#include <sstream>

#include "engine/core/registry.h"

namespace kiln::cli {

std::vector<DeviceInfo> pick_devices(const std::string& spec) {
  std::vector<DeviceInfo> all = list_devices(), out;
  auto add = [&](const DeviceInfo& info) {
    for (const DeviceInfo& o : out)
      if (o.device == info.device) return;
    out.push_back(info);
  };
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item == "all") {
      for (const DeviceInfo& i : all) add(i);
      continue;
    }
    Device d = resolve_device(item);  // DeviceError listing the devices found
    for (const DeviceInfo& i : all)
      if (i.device == d) add(i);
  }
  return out;
}

}  // namespace kiln::cli
