// What the CPU's int8 kernels (cpu_qconv.cpp, cpu_qlinear.cpp) share.
#pragma once
#include <cstdint>

#include "engine/core/backend.h"

namespace kiln::cpu {

// Checks an int8 kernel's arguments (backend.h's qconv2d_forward / qlinear_forward contract):
// in u8, weight i8, out f32 or u8, all contiguous; bias i32 [O] or absent; O weight scales;
// scales > 0 and u8 zero points in [0, 255]. DTypeError / ValueError naming `op`.
void check_quantized_args(const char* op, const TensorArg& out, const TensorArg& in, const TensorArg& w,
                          const TensorArg& b, const QuantizedParams& q, int64_t O);

}  // namespace kiln::cpu
