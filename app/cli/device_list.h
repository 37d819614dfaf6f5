// The devices a --devices flag names (kiln bench, kiln analyze).
#pragma once
#include <string>
#include <vector>

#include "engine/core/backend.h"

namespace kiln::cli {

// The devices of a comma-separated list ("all": every device of the registry, best first;
// "cpu,vulkan:0") in order, each once (a device named twice is listed once; the same GPU
// through two backends, cuda:0 and vulkan:0, gives two). Empty items are skipped. DeviceError
// (resolve_device's, listing the devices found) for a name that is malformed or not found.
std::vector<DeviceInfo> pick_devices(const std::string& spec);

}  // namespace kiln::cli
