#include "engine/core/device.h"

#include <charconv>

#include "engine/core/error.h"

namespace kiln {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::cpu: return "cpu";
    case DeviceType::vulkan: return "vulkan";
    case DeviceType::cuda: return "cuda";
    case DeviceType::hip: return "hip";
  }
  return "?";
}

Device Device::parse(std::string_view text) {
  std::string_view kind = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    kind = text.substr(0, colon);
    std::string_view num = text.substr(colon + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    KILN_CHECK(ec == std::errc() && p == num.data() + num.size() && index >= 0 && !num.empty(), DeviceError,
               "bad device name '", text, "': the index after ':' must be a non-negative integer (e.g. cuda:0)");
  }
  for (DeviceType t : {DeviceType::cpu, DeviceType::vulkan, DeviceType::cuda, DeviceType::hip})
    if (kind == device_type_name(t)) return Device(t, index);
  throw DeviceError(detail::str_cat("unknown device '", text, "': expected cpu, vulkan[:N], cuda[:N] or hip[:N]"));
}

std::string Device::str() const {
  if (type == DeviceType::cpu && index == 0) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

}  // namespace kiln
