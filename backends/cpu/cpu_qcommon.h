// What the CPU's int8 kernels (cpu_qconv.cpp, cpu_qlinear.cpp, cpu_qfloat.cpp) share.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cpu/dnnl_context.h"
#include "engine/core/backend.h"

namespace kiln::cpu {

// Checks an int8 kernel's arguments (backend.h's qconv2d_forward / qlinear_forward contract):
// in u8, weight i8, out f32 or u8, all contiguous; bias i32 [O] or absent; O weight scales;
// scales > 0 and u8 zero points in [0, 255]. DTypeError / ValueError naming `op`.
void check_quantized_args(const char* op, const TensorArg& out, const TensorArg& in, const TensorArg& w,
                          const TensorArg& b, const QuantizedParams& q, int64_t O);

// The oneDNN attributes of an int8 kernel: per-output-channel output scales (mask 1 << 1),
// the source zero point (and the destination's for a u8 dst) as runtime arguments, and the
// ReLU as an eltwise post-op (dev_guide_attributes_quantization, oneDNN 2.x).
dnnl::primitive_attr int8_attr(const std::vector<float>& scales, bool u8_dst, bool relu);

// Whether oneDNN's int8 kernels sum u8 x s8 products exactly on this CPU (VNNI or AMX); else
// the int8 layers run in f32 (cpu_qfloat.cpp, Note [Int8 without VNNI]).
bool int8_dot_exact();
class CpuBackend;
void qconv2d_in_float(CpuBackend& cpu, const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                      const TensorArg& bias, const Conv2dParams& p, const QuantizedParams& q);
void qlinear_in_float(CpuBackend& cpu, const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                      const TensorArg& bias, const QuantizedParams& q);

}  // namespace kiln::cpu
