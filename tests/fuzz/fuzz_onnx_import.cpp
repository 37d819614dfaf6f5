// libFuzzer target for the ONNX importer (not built by CMake or run by CI; see run.sh):
// any bytes given to parse_model, then the checks Session makes before anything runs
// (unsupported ops, undefined inputs, opsets). A kiln::Error is the expected answer to bad
// input; anything else escaping (std::out_of_range, bad_alloc ...), a crash, an ASan report
// or a hang is a bug. External data is refused (base_dir ""), so no file is read.
// With KILN_FUZZ_RUN=1 in the environment, models that pass also go through
// fold_shape_subgraphs, which runs them twice on zero inputs (what graph import does).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/error.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/fold.h"
#include "engine/onnx/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    kiln::onnx::Model m = kiln::onnx::parse_model(bytes, "", "<fuzz input>");
    (void)kiln::onnx::find_unsupported(m);
    (void)m.parameter_count();
    kiln::onnx::Model copy = m;
    kiln::onnx::Session session(std::move(m));
    static const bool run = std::getenv("KILN_FUZZ_RUN") != nullptr;
    if (run) (void)kiln::onnx::fold_shape_subgraphs(copy);
  } catch (const kiln::Error&) {
    // a clear error: the expected outcome for malformed models
  }
  return 0;
}
