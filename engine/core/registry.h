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

// Registers a backend family. The CPU backend, compiled into libkiln, registers itself
// with this while libkiln loads (backends/cpu/cpu_backend.cpp); the GPU plugins hand their
// factory over when dlopened (below). Programs may add their own families with this before
// the first look-up.
void register_backend_factory(BackendFactory factory);

// GPU backends are plugins, so that a machine without their driver libraries still
// runs the engine: on the first look-up the registry dlopens
//   <directory of libkiln.so>/kiln/libkiln_backend_<name>.so   (name: vulkan, cuda, hip)
// (or $KILN_BACKEND_DIR/libkiln_backend_<name>.so when that variable is set) and calls
// its exported function
//   extern "C" kiln::BackendFactory* kiln_backend_factory();
// and its exported `const char kiln_backend_abi[]` must equal libkiln's fingerprint of
// the Backend interface (CMakeLists.txt: KILN_BACKEND_ABI), else the plugin is refused.
// A plugin that is absent, stale or fails to load is listed by unavailable_backends() with the
// loader's reason ("cuda: libcublas.so.13: cannot open shared object file").
inline constexpr const char* kBackendPlugins[] = {"cuda", "hip", "vulkan"};
// Where the plugins are looked for.
std::string backend_plugin_dir();

// All devices found, best score first.
std::vector<DeviceInfo> list_devices();
// Why each backend family that found nothing is unavailable ("vulkan: no loader").
std::vector<std::string> unavailable_backends();
// The Backend of a device; throws DeviceError naming the device and the devices
// that do exist when it is unknown, with the reason unavailable_backends() gives when its
// whole family is missing ("device 'cuda:0': CUDA backend unavailable: <why>; devices found: cpu").
Backend* backend_for(const Device& device);
// The best device: KILN_DEVICE when set (validated), else the highest score.
Device default_device();
// "auto" -> default_device(); otherwise Device::parse + existence check.
Device resolve_device(const std::string& name);

}  // namespace kiln
