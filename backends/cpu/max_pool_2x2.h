// Internal to the CPU backend (cpu_pool.cpp): one output row of the 2x2, stride-2 max
// pooling (no padding, no dilation, whole windows) with AVX-512 intrinsics, 16 outputs per
// step (masked at the row's end), so that the short rows of small images (7 or 14 outputs)
// run in vector registers too.
#pragma once
#include <cstdint>

#include "engine/core/dtype.h"

namespace kiln::cpu {

// r0, r1: the two input rows (2 * Wo contiguous elements each); y: Wo outputs; ix: their
// flat plane indices, index0 + (0 or 1) * W + 2 * ow + (0 or 1), the position of the
// maximum as max_forward's loop picks it (the first of equal values, the last NaN).
// Returns false (and writes nothing) where the CPU or KILN_CPU_ISA rules out AVX-512.
bool max_pool_2x2_row(const float* r0, const float* r1, float* y, int64_t* ix, int64_t Wo, int64_t index0, int64_t W);
bool max_pool_2x2_row(const bfloat16* r0, const bfloat16* r1, bfloat16* y, int64_t* ix, int64_t Wo, int64_t index0,
                      int64_t W);

}  // namespace kiln::cpu
