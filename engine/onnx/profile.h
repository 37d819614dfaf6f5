// Per-op-type time of the ONNX executor, for finding where an inference spends its time:
// KILN_ONNX_PROFILE=1 in the environment makes every Session node run time its op
// (wall clock, steady_clock, around the op's kernels on the CPU; on a device the op's launch
// unless the op reads back) and, at process exit, prints to stderr one line per op type:
// total ms, share of the total, calls, ms per call, most expensive first.
#pragma once
#include <string>

namespace kiln::onnx::profile {

// Whether KILN_ONNX_PROFILE is set to something other than "" or "0" (read once).
bool enabled();
// Adds one call of `op_type` taking `ms` milliseconds (thread-safe).
void record(const std::string& op_type, double ms);
// The table printed at exit ("" when nothing was recorded).
std::string report();

}  // namespace kiln::onnx::profile
