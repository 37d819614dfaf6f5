// Mixed precision (torch.autocast): while autocast is set to a low dtype (bf16 or f16),
// matmul (and so linear) and conv2d cast their f32 operands to it, so these ops run on
// the low type (tensor cores on GPUs) while parameters stay f32 ("master weights"); the
// cast is an op with a gradient, so the parameters' gradients arrive in f32. Every other
// op (bias adds, activations, reductions, softmax, losses) runs in the type its inputs
// promote to (f32 where an f32 tensor meets the low type), as PyTorch's autocast lists
// keep norms, softmax and losses in f32.
//
// The setting is process-wide (training may run on a worker thread); AutocastGuard sets it
// for a scope and restores the previous one.
#pragma once
#include <optional>

#include "engine/core/tensor.h"

namespace kiln {

// nullopt: off. Throws DTypeError unless dtype is bf16 or f16.
void set_autocast(std::optional<DType> dtype);
std::optional<DType> autocast_dtype();

class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<DType> dtype) : previous_(autocast_dtype()) { set_autocast(dtype); }
  ~AutocastGuard() { set_autocast(previous_); }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
};

// True when autocast is on and t is a defined f32 tensor (one that autocast() converts).
bool autocast_wants(const Tensor& t);
// t converted to the autocast dtype when autocast_wants(t), else t itself.
Tensor autocast(const Tensor& t);

}  // namespace kiln
