// Device: a runtime value naming where a tensor lives ("cpu", "vulkan:0", "cuda:1").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

enum class DeviceType : uint8_t { cpu, vulkan, cuda, hip };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1", "vulkan:0", "hip:0". Throws DeviceError naming
  // the text when it is not of that form. Whether the device exists is the
  // registry's question (registry.h).
  static Device parse(std::string_view text);
  std::string str() const;  // "cpu", "cuda:1"
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

const char* device_type_name(DeviceType t);

}  // namespace kiln
