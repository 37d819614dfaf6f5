// Mixed-precision training: what `--precision f32|bf16|f16` means on a device, and
// dynamic loss scaling for f16 (torch.amp.GradScaler).
//
// bf16 and f16 run matmul and conv2d on the low type through autocast
// (engine/core/autocast.h) with f32 parameters, gradients and optimizer state. f16's
// narrow range needs the loss scaled up before backward (so small gradients do not flush
// to zero) and the gradients scaled back before the step: GradScaler does that, skips a
// step whose gradients hold Inf/NaN (halving the scale) and doubles the scale after
// `growth_interval` good steps (PyTorch's defaults: 2^16, 0.5, 2, 2000).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "engine/core/tensor.h"
#include "engine/optim/optimizer.h"

namespace kiln::train {

struct PrecisionPlan {
  std::optional<DType> autocast;  // nullopt: f32 throughout
  bool loss_scaling = false;      // f16 on a GPU
  std::string note;               // set when the device runs f32 instead of what was asked
};

// Whether this CPU has bf16 dot products: avx512_bf16 or amx_bf16 in /proc/cpuinfo's flags,
// which Debian's oneDNN 2.6 dispatches to (ONEDNN_VERBOSE=1 names jit_bf16:avx512_core_bf16 for
// the convolutions and brg:avx512_core_bf16 for the matmuls on an AMD EPYC with AVX512-BF16,
// 2026-12-02; AMX dispatch was not checked, for want of an AMX CPU: ONEDNN_MAX_CPU_ISA is the
// switch where oneDNN holds an ISA back). False when KILN_CPU_BF16=0 is set (tests of the
// f32 fallback).
bool cpu_has_bf16_dot();

// "f32", "bf16" or "f16" (ValueError otherwise) on `device`. The CPU runs bf16 when
// cpu_has_bf16_dot(), else f32 with a note; f16 runs f32 on the CPU with a note.
PrecisionPlan plan_precision(const std::string& precision, const Device& device);

class GradScaler {
 public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0, double backoff_factor = 0.5,
                      int64_t growth_interval = 2000);
  // loss * scale (call backward on this).
  Tensor scale(const Tensor& loss) const;
  // Divides the gradients of opt's parameters by the scale; true when all are finite
  // (one wait for the device).
  bool unscale(optim::Optimizer& opt);
  // unscale, then opt.step() unless a gradient was not finite; updates the scale. Returns
  // whether the step ran.
  bool step(optim::Optimizer& opt);
  double get_scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  int64_t steps() const { return steps_; }

 private:
  double scale_, growth_, backoff_;
  int64_t interval_, good_ = 0, skipped_ = 0, steps_ = 0;
};

}  // namespace kiln::train
