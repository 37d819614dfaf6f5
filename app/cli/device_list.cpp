#include "app/cli/device_list.h"

#include <sstream>

#include "engine/core/error.h"
#include "engine/core/registry.h"

namespace kiln::cli {

namespace {

// resolve_device, whose DeviceError always lists the devices found (Device::parse's, for a
// malformed name, does not).
Device resolve_listing(const std::string& name) {
  try {
    return resolve_device(name);
  } catch (const DeviceError& e) {
    std::string why = e.what();
    if (why.find("devices found") != std::string::npos) throw;
    throw DeviceError(why + "; devices found: " + devices_found());
  }
}

}  // namespace

std::string devices_found() {
  std::string out;
  for (const DeviceInfo& d : list_devices()) out += (out.empty() ? "" : ", ") + d.device.str();
  return out;
}

Device device_flag(const Args& args, const std::string& name) {
  const std::string& text = args.str(name);
  if (text.empty() || text == "auto") return resolve_device(text);
  try {
    return resolve_listing(text);
  } catch (const DeviceError& e) {
    args.fail("--" + name + " " + text + ": " + e.what());
  }
}

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
    Device d = resolve_listing(item);  // DeviceError listing the devices found
    for (const DeviceInfo& i : all)
      if (i.device == d) add(i);
  }
  return out;
}

}  // namespace kiln::cli
