// The devices a --device flag (kiln train, eval, predict, explain, run, onnx-suite) or a --devices
// list (kiln bench, kiln analyze) names.
#pragma once
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/core/backend.h"

namespace kiln::cli {

// The devices of the registry, best first, as the registry's messages list them: "cpu, vulkan:0".
std::string devices_found();

// The device of the flag `name` of args: "auto" (or "") is resolve_device's default, whose
// DeviceError (KILN_DEVICE naming no device) is not the command line's. A name that is
// malformed or not found on this machine is a mistake on the command line: UsageError
// "kiln train: --device tpu:0: unknown device 'tpu:0': expected cpu, ...; devices found: cpu"
// (exit 2, as kiln-studio --headless --device). A device found that fails later is an engine error.
Device device_flag(const Args& args, const std::string& name = "device");

// The devices of a comma-separated list ("all": every device of the registry, best first;
// "cpu,vulkan:0") in order, each once (a device named twice is listed once; the same GPU
// through two backends, cuda:0 and vulkan:0, gives two). Empty items are skipped. DeviceError
// (resolve_device's, listing the devices found) for a name that is malformed or not found.
std::vector<DeviceInfo> pick_devices(const std::string& spec);

}  // namespace kiln::cli
