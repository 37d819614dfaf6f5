// Tensor: a cheap handle to (shared storage, dtype, shape, strides, offset) plus
// autograd metadata. Copying a Tensor copies the handle, not the data; views
// (reshape when possible, permute, transpose, slice, expand, squeeze, unsqueeze,
// flatten) share storage. Ops are in ops.h; these methods forward to them.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/dtype.h"
#include "engine/core/node.h"
#include "engine/core/shape.h"
#include "engine/core/storage.h"

namespace kiln {

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  DType dtype = DType::f32;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // elements
  // autograd
  bool requires_grad = false;           // set on leaves by the user; on results by recording
  std::shared_ptr<TensorImpl> grad;     // accumulated gradient of a leaf (torch .grad)
  std::shared_ptr<Node> grad_fn;        // the op that made this tensor, when recorded
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor (defined() == false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation (device defaults to the CPU) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = {});
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = {});
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = {});
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = {});
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = {});  // 0-d
  // 0, 1, ... n-1 as i64 (torch.arange(n)), or start, start+step, ... < end in dtype.
  static Tensor arange(int64_t n, Device device = {});
  static Tensor arange(double start, double end, double step, DType dtype, Device device = {});
  // Copies host data (shape's element count must match data.size(); ShapeError otherwise).
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const Shape& shape, Device device = {}) {
    return from_host(data.data(), data.size(), dtype_of<T>::value, shape, device);
  }
  static Tensor from_host(const void* data, size_t count, DType dtype, const Shape& shape, Device device = {});
  // Views host memory that `keep_alive` owns, without copying (CPU only).
  static Tensor from_blob(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keep_alive);

  // ---- properties ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  const Strides& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return kiln::numel(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const;
  Backend* backend() const { return impl_->storage->backend(); }
  int64_t offset() const { return impl_->offset; }
  bool is_contiguous() const;
  std::string str() const;  // "Tensor[2, 3] f32 cpu" (no data)
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  TensorArg arg() const;  // as a kernel argument
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // ---- data access (synchronizes with the device) ----
  template <class T> std::vector<T> to_vector() const;  // converts to T; row-major order
  template <class T> T item() const;                     // one element; ValueError otherwise
  // Host pointer of a CPU tensor (throws DeviceError on other devices); type must match.
  template <class T> T* data_ptr() const {
    check_data_ptr(dtype_of<std::remove_const_t<T>>::value);
    return static_cast<T*>(impl_->storage->data()) + impl_->offset;
  }

  // ---- views (zero-copy; ShapeError on a size mismatch) ----
  Tensor reshape(const Shape& shape) const;  // -1 infers one dim; copies only if no view exists
  Tensor view(const Shape& shape) const;     // like reshape but never copies (ShapeError)
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const { return transpose(0, 1); }  // 2-d only
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;  // Python semantics
  Tensor select(int64_t dim, int64_t index) const;  // removes dim
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const { return slice(dim, start, start + length); }
  Tensor expand(const Shape& shape) const;  // -1 keeps a size
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  // ---- copies ----
  Tensor contiguous() const;  // self if already contiguous
  Tensor clone() const;
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor detach() const;  // shares storage, no autograd history
  Tensor& copy_(const Tensor& src);  // in place; broadcasts src; no autograd
  Tensor& fill_(double value);       // in place; no autograd

  // ---- autograd ----
  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& requires_grad_(bool on = true);
  Tensor grad() const { return Tensor(impl_->grad); }  // undefined until backward
  void zero_grad() { impl_->grad.reset(); }
  void set_grad(const Tensor& g) { impl_->grad = g.impl_; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  // Reverse-mode: d(self)/d(leaves), accumulated into leaves' grad(). self must be a
  // scalar unless grad_output is given (defined in engine/autograd/backward.cpp).
  void backward(const Tensor& grad_output = Tensor()) const;

  // ---- ops as methods (see ops.h) ----
  Tensor sum(const std::vector<int64_t>& dims = {}, bool keepdim = false) const;
  Tensor mean(const std::vector<int64_t>& dims = {}, bool keepdim = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor matmul(const Tensor& other) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;

 private:
  void check_data_ptr(DType want) const;
  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

extern template std::vector<float> Tensor::to_vector<float>() const;
extern template std::vector<double> Tensor::to_vector<double>() const;
extern template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
extern template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
extern template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
extern template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
extern template std::vector<bool> Tensor::to_vector<bool>() const;
extern template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
extern template std::vector<uint16_t> Tensor::to_vector<uint16_t>() const;
extern template std::vector<uint32_t> Tensor::to_vector<uint32_t>() const;
extern template std::vector<uint64_t> Tensor::to_vector<uint64_t>() const;
extern template float Tensor::item<float>() const;
extern template double Tensor::item<double>() const;
extern template int64_t Tensor::item<int64_t>() const;
extern template bool Tensor::item<bool>() const;
extern template uint64_t Tensor::item<uint64_t>() const;

}  // namespace kiln
