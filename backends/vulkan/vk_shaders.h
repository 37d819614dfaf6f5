// The compute shaders (shaders/*.comp), compiled to SPIR-V by glslc at build time and
// embedded in the plugin (generated vk_shader_code.cpp); nothing is read at run time.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln::vk {

enum class ShaderId : uint8_t { elementwise, reduce, softmax, gemm, pool, index, adam, gemm_fast, gemm_fast16, gemm_coop, count };

struct ShaderCode {
  const char* name;       // "gemm"
  const uint32_t* words;  // SPIR-V
  size_t count;           // words
};
const ShaderCode& shader_code(ShaderId id);

}  // namespace kiln::vk
