// libFuzzer target for the safetensors reader (not built by CMake or run by CI; see
// run_safetensors.sh): the input is written to a file, read with load_safetensors, and whatever
// loads is written back with save_safetensors and read again, which must give the same names,
// dtypes, shapes and bytes. A kiln::Error is the expected answer to a malformed file; anything
// else escaping, a crash, an ASan report, a hang or a failed round trip is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "engine/io/safetensors.h"

namespace {

const char* bytes_of(const kiln::Tensor& t) {
  return static_cast<const char*>(t.impl()->storage->data()) + t.offset() * static_cast<int64_t>(kiln::dtype_size(t.dtype()));
}

std::string scratch(const char* what) {
  return "/tmp/kiln-fuzz-safetensors-" + std::to_string(::getpid()) + "-" + what + ".safetensors";
}

// Removes the scratch files when the fuzzer exits.
struct Cleanup {
  ~Cleanup() {
    std::remove(scratch("in").c_str());
    std::remove(scratch("out").c_str());
  }
} cleanup;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = scratch("in"), out = scratch("out");
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  kiln::io::SafetensorsFile first;
  try {
    first = kiln::io::load_safetensors(in);
  } catch (const kiln::Error&) {
    return 0;  // a clear error: the expected outcome for malformed files
  }
  kiln::io::save_safetensors(out, first.tensors, first.metadata);
  const kiln::io::SafetensorsFile second = kiln::io::load_safetensors(out);
  if (second.tensors.size() != first.tensors.size() || second.metadata != first.metadata) std::abort();
  for (const auto& [name, t] : first.tensors) {
    bool found = false;
    for (const auto& [name2, t2] : second.tensors) {
      if (name2 != name) continue;
      found = true;
      const size_t bytes = static_cast<size_t>(t.numel()) * kiln::dtype_size(t.dtype());
      if (t2.dtype() != t.dtype() || t2.shape() != t.shape() ||
          (bytes && std::memcmp(bytes_of(t), bytes_of(t2), bytes) != 0))
        std::abort();
    }
    if (!found) std::abort();
  }
  return 0;
}
