#include "engine/core/registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "backends/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace kiln {

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<BackendFactory> factories;
  bool cpu_added = false;
  size_t factories_run = 0;
  std::vector<std::unique_ptr<Backend>> backends;  // every device found
  std::vector<DeviceInfo> infos;                   // best score first
  std::vector<std::string> unavailable;

  void enumerate_locked() {
    if (cpu_added && factories_run == factories.size()) return;
    if (!cpu_added) {
      backends.push_back(std::make_unique<cpu::CpuBackend>());
      load_plugins_locked();
    }
    cpu_added = true;
    for (; factories_run < factories.size(); ++factories_run) {
      auto& f = factories[factories_run];
      std::string why;
      std::vector<std::unique_ptr<Backend>> found;
      try {
        found = f.enumerate(why);
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (found.empty())
        unavailable.push_back(std::string(device_type_name(f.type)) + ": " + (why.empty() ? "no devices" : why));
      for (auto& b : found) backends.push_back(std::move(b));
    }
    infos.clear();
    for (auto& b : backends) infos.push_back(b->info());
    std::stable_sort(infos.begin(), infos.end(),
                     [](const DeviceInfo& a, const DeviceInfo& b) { return a.score > b.score; });
  }

  // Loads each GPU backend plugin once (see registry.h); failures become reasons.
  void load_plugins_locked() {
    namespace fs = std::filesystem;
    const std::string dir = backend_plugin_dir();
    for (const char* name : kBackendPlugins) {
      const std::string file = std::string("libkiln_backend_") + name + ".so";
      const fs::path path = fs::path(dir) / file;
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        unavailable.push_back(std::string(name) + ": not built (no " + file + " in " + dir + ")");
        continue;
      }
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: its code backs tensors
      if (!handle) {
        const char* why = dlerror();
        unavailable.push_back(std::string(name) + ": " + (why ? why : "cannot load " + path.string()));
        continue;
      }
      using Entry = BackendFactory* (*)();
      auto entry = reinterpret_cast<Entry>(dlsym(handle, "kiln_backend_factory"));
      if (!entry) {
        unavailable.push_back(std::string(name) + ": " + path.string() + " has no kiln_backend_factory()");
        continue;
      }
      try {
        if (BackendFactory* f = entry()) factories.push_back(*f);
      } catch (const std::exception& e) {
        unavailable.push_back(std::string(name) + ": " + e.what());
      }
    }
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: tensors may outlive static destruction
  return *r;
}

std::string known_devices(Registry& r) {
  std::string s;
  for (auto& i : r.infos) s += (s.empty() ? "" : ", ") + i.device.str();
  return s;
}
}  // namespace

std::string backend_plugin_dir() {
  if (const char* env = std::getenv("KILN_BACKEND_DIR"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&backend_plugin_dir), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / "kiln").string();
  return "kiln";
}

void register_backend_factory(BackendFactory factory) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories.push_back(std::move(factory));  // enumerated on the next look-up
}

std::vector<DeviceInfo> list_devices() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.enumerate_locked();
  return r.infos;
}

std::vector<std::string> unavailable_backends() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.enumerate_locked();
  return r.unavailable;
}

Backend* backend_for(const Device& device) {
  static cpu::CpuBackend* cpu_fast = nullptr;  // the hot path: most tensors live on the CPU
  if (device.type == DeviceType::cpu && device.index == 0 && cpu_fast) return cpu_fast;
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.enumerate_locked();
  for (auto& b : r.backends)
    if (b->device() == device) {
      if (device.type == DeviceType::cpu) cpu_fast = static_cast<cpu::CpuBackend*>(b.get());
      return b.get();
    }
  // A family that found no device says why (missing plugin, driver or hardware), as `kiln devices` does.
  const std::string family = std::string(device_type_name(device.type)) + ": ";
  for (const std::string& why : r.unavailable)
    if (why.rfind(family, 0) == 0) {
      const char* shown = device.type == DeviceType::cuda ? "CUDA" : device.type == DeviceType::hip ? "HIP" : "Vulkan";
      throw DeviceError(detail::str_cat("device '", device.str(), "': ", shown, " backend unavailable: ",
                                        why.substr(family.size()), "; devices found: ", known_devices(r)));
    }
  throw DeviceError(detail::str_cat("unknown device '", device.str(), "'; devices found: ", known_devices(r)));
}

Device resolve_device(const std::string& name) {
  if (name.empty() || name == "auto") return default_device();
  Device d = Device::parse(name);
  backend_for(d);  // throws with the list of devices when absent
  return d;
}

Device default_device() {
  if (const char* env = std::getenv("KILN_DEVICE"); env && *env && std::string(env) != "auto") {
    try {
      return resolve_device(env);
    } catch (const DeviceError& e) {
      throw DeviceError(std::string("KILN_DEVICE: ") + e.what());
    }
  }
  auto infos = list_devices();
  return infos.front().device;
}

}  // namespace kiln
