// TEMPORARY during parallel development: placeholders removed as each kernel file lands.
// This file must be deleted before commit.
#include "backends/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace kiln::cpu {
#define KILN_PENDING(name) throw DTypeError(#name " pending")
// ---- section H1 (cpu_elementwise.cpp, cpu_reduce.cpp, cpu_index.cpp, cpu_softmax.cpp) ----
// ---- section H2 (cpu_matmul.cpp, cpu_conv.cpp, cpu_pool.cpp) ----
}  // namespace kiln::cpu
