// The Vulkan compute backend: one VulkanBackend per usable Vulkan device (see
// vk_context.h for memory, pipelines and command batching). Tensors are Allocations
// (TensorArg::data is an Allocation*), read by the shaders through device addresses.
//
// Supported (supports()): f32 for every op; f16/bf16 for copy, fill, unary, binary,
// where, reduce, matmul, conv2d forward/backward, pooling, softmax and the data-moving
// index ops (16-bit storage, converted in registers and computed in f32, so any device
// Kiln accepts runs them; f16 matmul uses tensor cores where the device has cooperative
// matrices); integer and bool dtypes for copy, fill, binary, where, reduce, gather,
// index_select, unary logical_not (no other unary op: the shader computes them in float), and i32 (i64 with 64-bit atomics) scatter_add / index_add. f64 only for
// copy and fill (conversions, e.g. Tensor::item<double>; most GPUs run f64 slowly or not
// at all). Errors: DeviceError names the op,
// shape and device; out-of-range indices and integer division by zero are detected on
// the device and thrown (IndexError / ValueError) at the next synchronization.
#pragma once
#include <memory>

#include "backends/vulkan/vk_context.h"
#include "engine/core/backend.h"

namespace kiln::vk {

class VulkanBackend final : public Backend {
 public:
  VulkanBackend(int index, VkPhysicalDevice pd);
  DeviceInfo info() const override;

  void* allocate(size_t nbytes) override;
  void deallocate(void* data, size_t nbytes) override;
  void upload(void* dst, size_t dst_byte_offset, const void* host, size_t nbytes) override;
  void download(void* host, const void* src, size_t src_byte_offset, size_t nbytes) override;
  void synchronize() override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;
  // Timestamp queries on the compute queue (vk_context.h); false when it has none.
  bool begin_timing() override;
  double end_timing() override;

  // vk_ops_elementwise.cpp
  void copy(const TensorArg& out, const TensorArg& in) override;
  void fill(const TensorArg& out, double value) override;
  void unary(UnaryOp op, const TensorArg& out, const TensorArg& in, double p0, double p1) override;
  void binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  void where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) override;
  void adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                 const TensorArg& exp_avg_sq, const AdamParams& p) override;
  // vk_ops_reduce.cpp
  void reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) override;
  void softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) override;
  void softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out, int64_t dim,
                        bool log) override;
  // vk_ops_gemm.cpp
  void matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) override;
  void conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight, const TensorArg& bias,
                      const Conv2dParams& p) override;
  void conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& weight,
                             const Conv2dParams& p) override;
  void conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias, const TensorArg& grad_out,
                              const TensorArg& in, const Conv2dParams& p) override;
  // vk_ops_pool_index.cpp
  void max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                          const Pool2dParams& p) override;
  void max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& indices) override;
  void avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) override;
  void avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) override;
  void gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;
  void index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) override;
  void index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) override;

  Context& context() { return *ctx_; }

 protected:
  bool supports_op(OpId op, DType dtype, int sub_op) const override;

 private:
  // Throws DTypeError naming the op, dtype and device unless supports(op, dtype).
  void require(OpId op, DType dtype, const char* name) const;
  // Shared by the ops files.
  friend struct OpsAccess;
  void reduce_into(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0);
  // Whether a matmul of `dt` runs on shaders/gemm_coop.comp (vk_ops_gemm.cpp).
  bool use_coop(DType dt) const;
  std::unique_ptr<Context> ctx_;
  bool coop_failed_ = false;  // its pipeline failed to build: the tiled shader serves
};

// Device address of a tensor's element 0.
uint64_t address(const TensorArg& t);
// Throws DeviceError when a tensor needs more than the shaders' 32-bit element indices.
void check_index_range(const Context& ctx, const char* op, const TensorArg& t);

// Dims of several same-shaped operands merged where every operand is contiguous across
// them, size-1 dims dropped; at most 8 dims (ShapeError beyond).
struct Collapsed {
  int ndim = 0;
  int64_t size[8] = {};
  int64_t stride[4][8] = {};
};
Collapsed collapse(const char* op, const Shape& shape, std::initializer_list<const Strides*> strides);

}  // namespace kiln::vk
