// The CPU backend: the reference every other backend is checked against.
// Elementwise ops and reductions are our own loops (OpenMP threads, written for
// the auto-vectorizer); matmul, conv2d and pooling go through oneDNN, whose JIT
// picks AVX2/AVX-512/VNNI from the CPU's flags. oneDNN primitives are cached per
// shape (dnnl_context.cpp) so repeated training steps do not re-create them.
// It is compiled into libkiln and registers itself with the registry when libkiln is
// loaded (cpu_backend.cpp), as the GPU plugins register theirs when dlopened.
#pragma once
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/core/backend.h"

namespace kiln::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;
  DeviceInfo info() const override;

  void* allocate(size_t nbytes) override;
  void deallocate(void* data, size_t nbytes) override;
  void upload(void* dst, size_t dst_byte_offset, const void* host, size_t nbytes) override;
  void download(void* host, const void* src, size_t src_byte_offset, size_t nbytes) override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;

  // cpu_elementwise.cpp (copy, fill, where, adam_step), cpu_unary.cpp, cpu_binary.cpp
  void copy(const TensorArg& out, const TensorArg& in) override;
  void fill(const TensorArg& out, double value) override;
  void unary(UnaryOp op, const TensorArg& out, const TensorArg& in, double p0, double p1) override;
  void binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  void where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) override;
  // cpu_fused.cpp
  void relu_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out) override;
  void bernoulli(const TensorArg& out, uint64_t key, uint64_t threshold, double value) override;
  // cpu_fake_quant.cpp (f32, f64)
  void fake_quantize(const TensorArg& out, const TensorArg& mask, const TensorArg& in, const TensorArg& scale,
                     const TensorArg& zero_point, int64_t inner, int64_t quant_min, int64_t quant_max) override;
  void adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                 const TensorArg& exp_avg_sq, const AdamParams& p) override;
  // cpu_batch_norm.cpp (f32)
  void batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                          const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                          const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                          double eps) override;
  void batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
                           const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight,
                           const TensorArg& save_mean, const TensorArg& save_invstd) override;
  // cpu_reduce.cpp
  void reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) override;
  // cpu_matmul.cpp (oneDNN)
  void matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  // cpu_conv.cpp (oneDNN)
  void conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                      const Conv2dParams& p) override;
  void conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& weight,
                             const Conv2dParams& p) override;
  void conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias, const TensorArg& grad_out,
                              const TensorArg& in, const Conv2dParams& p) override;
  // cpu_qconv.cpp (oneDNN int8, s32 accumulation)
  void conv2d_fused_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                            const TensorArg& residual, const Conv2dParams& p, const ConvEpilogue& e) override;
  void qconv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                       const Conv2dParams& p, const QuantizedParams& q) override;
  void qlinear_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                       const QuantizedParams& q) override;
  // cpu_pool.cpp
  void max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                          const Pool2dParams& p) override;
  void max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) override;
  void avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) override;
  void avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) override;
  // cpu_softmax.cpp
  void softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) override;
  void softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out, int64_t dim,
                        bool log) override;
  // cpu_index.cpp
  void gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;
  void index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;

 protected:
  // Every UnaryOp, BinaryOp and ReduceOp runs for every dtype, so sub_op never narrows.
  bool supports_op(OpId op, DType dtype, int sub_op) const override;

 private:
  // Caching allocator: freed blocks are kept per rounded size and reused.
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;
  MemoryStats stats_;
};

// Rounds a request up to the allocator's size class (bytes).
size_t round_allocation(size_t nbytes);

}  // namespace kiln::cpu
