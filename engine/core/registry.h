// The device registry: finds the backends' devices, scores them, picks the best.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/core/backend.h"

namespace kiln {

// A backend family (cpu, vulkan, cuda, hip) as the registry sees it.
struct BackendFactory {
  DeviceType type;
  // Creates one Backend per device found; returns none (and sets why_unavailable)
  // when the driver or hardware is missing. Must not throw for a missing driver.
  std::function<std::vector<std::unique_ptr<Backend>>(std::string& why_unavailable)> enumerate;
};

// Registers a backend family; the CPU backend registers itself. GPU backends
// call this from their own translation unit (see backends/*/register.cpp).
void register_backend_factory(BackendFactory factory);

// All devices found, best score first.
std::vector<DeviceInfo> list_devices();
// Why each backend family that found nothing is unavailable ("vulkan: no loader").
std::vector<std::string> unavailable_backends();
// The Backend of a device; throws DeviceError naming the device and the devices
// that do exist when it is unknown.
Backend* backend_for(const Device& device);
// The best device: KILN_DEVICE when set (validated), else the highest score.
Device default_device();
// "auto" -> default_device(); otherwise Device::parse + existence check.
Device resolve_device(const std::string& name);

}  // namespace kiln
