#include "engine/core/backend.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/core/read_only.h"
#include "engine/core/storage.h"

namespace kiln {

bool TensorArg::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) #name,
#include "engine/core/elementwise_ops.def"
  };
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(UnaryOp::count));
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {
#define KILN_BINARY_OP(name, compare, grad) #name,
#include "engine/core/elementwise_ops.def"
  };
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(BinaryOp::count));
  return names[static_cast<int>(op)];
}

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "var"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(ReduceOp::count));
  return names[static_cast<int>(op)];
}

bool is_comparison(BinaryOp op) {
  static const bool compare[] = {
#define KILN_BINARY_OP(name, compare, grad) compare != 0,
#include "engine/core/elementwise_ops.def"
  };
  return compare[static_cast<int>(op)];
}

bool is_floating_only(UnaryOp op) {
  static const bool real[] = {
#define KILN_UNARY_OP(name, real, grad, saves, plain) real != 0,
#include "engine/core/elementwise_ops.def"
  };
  return real[static_cast<int>(op)];
}

const char* op_id_name(OpId op) {
  static const char* names[] = {"copy", "fill", "unary", "binary", "where", "reduce", "matmul",
                                "conv2d_forward", "conv2d_backward_input", "conv2d_backward_weight",
                                "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward",
                                "avg_pool2d_backward", "softmax_forward", "softmax_backward", "gather",
                                "scatter_add", "index_select", "index_add", "adam_step", "batch_norm_forward",
                                "batch_norm_backward", "qconv2d_forward", "qlinear_forward", "relu_backward", "bernoulli",
                                "fake_quantize", "conv2d_fused_forward"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(OpId::count));
  return names[static_cast<int>(op)];
}

void Backend::adam_step(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                        const AdamParams&) {
  throw DTypeError(detail::str_cat("adam_step is not supported on ", info().device.str()));
}

void Backend::relu_backward(const TensorArg&, const TensorArg&, const TensorArg&) {
  throw DTypeError(detail::str_cat("relu_backward is not supported on ", info().device.str()));
}

void Backend::bernoulli(const TensorArg&, uint64_t, uint64_t, double) {
  throw DTypeError(detail::str_cat("bernoulli is not supported on ", info().device.str()));
}

void Backend::fake_quantize(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                            int64_t, int64_t, int64_t) {
  throw DTypeError(detail::str_cat("fake_quantize is not supported on ", info().device.str()));
}

void Backend::batch_norm_forward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                                 const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, double, double) {
  throw DTypeError(detail::str_cat("batch_norm_forward is not supported on ", info().device.str()));
}

void Backend::batch_norm_backward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                                  const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&) {
  throw DTypeError(detail::str_cat("batch_norm_backward is not supported on ", info().device.str()));
}

int64_t Backend::read_async(const void* src, size_t src_byte_offset, size_t nbytes) {
  std::vector<char> bytes(nbytes);
  if (nbytes) download(bytes.data(), src, src_byte_offset, nbytes);
  std::lock_guard<std::mutex> lock(reads_mutex_);
  const int64_t ticket = next_read_++;
  reads_.emplace(ticket, std::move(bytes));
  return ticket;
}

void Backend::read_wait(int64_t ticket, void* host) {
  std::vector<char> bytes;
  {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    auto it = reads_.find(ticket);
    KILN_CHECK(it != reads_.end(), DeviceError, "read_wait: ", device_.str(), " has no read with ticket ", ticket,
               " (each read_async is waited for once)");
    bytes = std::move(it->second);
    reads_.erase(it);
  }
  if (!bytes.empty()) std::memcpy(host, bytes.data(), bytes.size());
}

void Backend::conv2d_fused_forward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                                   const TensorArg&, const Conv2dParams&, const ConvEpilogue&) {
  throw DTypeError(detail::str_cat("conv2d_fused_forward is not supported on ", info().device.str()));
}

void Backend::qconv2d_forward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                              const Conv2dParams&, const QuantizedParams&) {
  throw DTypeError(detail::str_cat("qconv2d_forward (int8) is not supported on ", info().device.str()));
}

void Backend::qlinear_forward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&,
                              const QuantizedParams&) {
  throw DTypeError(detail::str_cat("qlinear_forward (int8) is not supported on ", info().device.str()));
}

bool Backend::begin_capture(std::string& why) {
  why = info().device.str() + " cannot record work for replay";
  return false;
}

int64_t Backend::end_capture() {
  throw DeviceError(detail::str_cat("end_capture: ", info().device.str(), " records no work"));
}

void Backend::replay(int64_t graph, const ReplayArgs&) {
  throw DeviceError(detail::str_cat("replay: ", info().device.str(), " has no recorded graph ", graph));
}

Storage::Storage(Backend* backend, size_t nbytes)
    : backend_(backend), data_(backend->allocate(nbytes)), nbytes_(nbytes) {}

Storage::Storage(Backend* backend, void* data, size_t nbytes, std::shared_ptr<void> keep_alive)
    : backend_(backend), data_(data), nbytes_(nbytes), keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
  release_read_only(data_);  // engine/core/read_only.h: copies derived from it go first
  if (!keep_alive_) backend_->deallocate(data_, nbytes_);
}

}  // namespace kiln
