#include "engine/io/state_dict.h"

#include "engine/core/error.h"
#include "engine/io/safetensors.h"

namespace kiln::io {

nn::LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, bool strict) {
  SafetensorsFile file = load_safetensors(path);
  try {
    return module.load_state_dict(file.tensors, strict);
  } catch (const ValueError& e) {
    throw ValueError(path + ": " + e.what());
  }
}

void save_state_dict(const nn::Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

}  // namespace kiln::io
