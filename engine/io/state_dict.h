// A module's state_dict as a safetensors file: what PyTorch writes with
// safetensors.torch.save_file(model.state_dict(), path), keys as torch names them.
#pragma once
#include <map>
#include <string>

#include "engine/nn/module.h"

namespace kiln::io {

// Reads `path` (load_safetensors) and copies it into `module` (Module::load_state_dict:
// dtype and device converted; nothing copied when anything is wrong). IoError naming the file
// for a missing or malformed file; ValueError "<path>: load_state_dict: size mismatch for ..."
// naming the file and every mismatched, missing (strict) or unexpected (strict) key.
nn::LoadStateDictResult load_state_dict(nn::Module& module, const std::string& path, bool strict = true);

// Writes module.state_dict() to `path` (save_safetensors: atomic; IoError naming the file).
void save_state_dict(const nn::Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});

}  // namespace kiln::io
