#include "engine/core/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/ops_internal.h"
#include "engine/core/registry.h"

namespace kiln {

namespace detail {

Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) KILN_CHECK(d >= 0, ShapeError, "empty: negative dimension in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  Backend* be = backend_for(device);
  impl->storage = std::make_shared<Storage>(be, static_cast<size_t>(numel(shape)) * dtype_size(dtype));
  impl->dtype = dtype;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  return Tensor(std::move(impl));
}

bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4 || t.is_contiguous()) return false;
  const Shape& n = t.shape();
  const Strides& s = t.strides();
  const int64_t want[4] = {n[2] * n[3] * n[1], 1, n[3] * n[1], n[1]};
  for (int d = 0; d < 4; ++d)
    if (n[d] != 1 && s[d] != want[d]) return false;
  return true;
}

Tensor empty_channels_last(const Shape& shape, DType dtype, Device device) {
  KILN_CHECK(shape.size() == 4, ShapeError, "empty_channels_last: shape ", shape_str(shape), " is not 4-d");
  return empty({shape[0], shape[2], shape[3], shape[1]}, dtype, device).permute({0, 3, 1, 2});
}

Tensor empty_elementwise(const Shape& shape, DType dtype, Device device, std::initializer_list<const Tensor*> inputs) {
  if (device.type == DeviceType::cpu && shape.size() == 4)
    for (const Tensor* t : inputs)
      if (t->defined() && t->shape() == shape && is_channels_last(*t)) return empty_channels_last(shape, dtype, device);
  return empty(shape, dtype, device);
}

TensorArg broadcast_arg(const Tensor& t, const Shape& target) {
  TensorArg a = t.arg();
  if (a.shape != target) {
    a.strides = broadcast_strides(a.shape, a.strides, target);
    a.shape = target;
  }
  return a;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void record(Tensor& out, OpKind kind, std::vector<Tensor> inputs, OpAttrs attrs, std::vector<Tensor> saved) {
  static std::atomic<int64_t> sequence{0};
  auto node = std::make_shared<Node>();
  node->kind = kind;
  for (auto& t : inputs) node->inputs.push_back(t.impl_ptr());
  for (auto& t : saved) node->saved.push_back(t.detach().impl_ptr());
  node->attrs = std::move(attrs);
  node->sequence = sequence++;
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  KILN_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), ValueError, op,
             ": a dimension appears more than once in the list of dims");
  return out;
}

}  // namespace detail

namespace {
thread_local bool grad_enabled = true;

// A view of `src` sharing its storage; autograd recorded by the caller.
Tensor make_view(const Tensor& src, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = src.impl()->storage;
  impl->dtype = src.dtype();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

// Strides for viewing (shape, strides) as new_shape without copying, or empty when
// impossible (the algorithm of PyTorch's computeStride, aten/src/ATen/TensorUtils.cpp).
bool view_strides(const Shape& old_shape_in, const Strides& old_strides_in, const Shape& new_shape, Strides& out) {
  out.assign(new_shape.size(), 0);
  // A 0-d tensor views like a 1-element 1-d one.
  const Shape old_shape = old_shape_in.empty() ? Shape{1} : old_shape_in;
  const Strides old_strides = old_strides_in.empty() ? Strides{1} : old_strides_in;
  if (numel(old_shape) == 0) {
    out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_shape[tensor_d];
    if (tensor_d == 0 ||
        (old_shape[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

Shape infer_shape(const Shape& shape, int64_t count, const char* op, const Shape& from) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer < 0, ShapeError, op, ": only one dimension can be -1 in ", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(out[i] >= 0, ShapeError, op, ": invalid size ", out[i], " in ", shape_str(shape));
      known *= out[i];
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && count % known == 0, ShapeError, op, ": shape ", shape_str(shape),
               " is invalid for input of shape ", shape_str(from));
    out[infer] = count / known;
  }
  KILN_CHECK(numel(out) == count, ShapeError, op, ": shape ", shape_str(shape), " is invalid for input of shape ",
             shape_str(from), " (", count, " elements)");
  return out;
}
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

// ---------------------------------------------------------------- creation

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) { return detail::empty(shape, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = detail::empty(shape, dtype, device);
  if (t.numel()) t.backend()->fill(t.arg(), value);
  return t;
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

Tensor Tensor::arange(int64_t n, Device device) {
  KILN_CHECK(n >= 0, ValueError, "arange: n must be non-negative, got ", n);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return from_vector(v, {n}, device);
}

Tensor Tensor::arange(double start, double end, double step, DType dtype, Device device) {
  KILN_CHECK(step != 0, ValueError, "arange: step must be non-zero");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i) * step;
  return from_vector(v, {n}, device).to(dtype);
}

Tensor Tensor::from_host(const void* data, size_t count, DType dtype, const Shape& shape, Device device) {
  KILN_CHECK(static_cast<int64_t>(count) == kiln::numel(shape), ShapeError, "from_host: ", count,
             " values cannot fill a tensor of shape ", shape_str(shape));
  Tensor t = detail::empty(shape, dtype, device);
  t.backend()->upload(t.impl()->storage->data(), 0, data, count * dtype_size(dtype));
  return t;
}

Tensor Tensor::from_blob(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keep_alive) {
  auto impl = std::make_shared<TensorImpl>();
  size_t nbytes = static_cast<size_t>(kiln::numel(shape)) * dtype_size(dtype);
  impl->storage = std::make_shared<Storage>(backend_for(Device()), data, nbytes, std::move(keep_alive));
  impl->dtype = dtype;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  return Tensor(std::move(impl));
}

// ---------------------------------------------------------------- properties

int64_t Tensor::size(int64_t d) const { return impl_->shape[wrap_dim(d, dim(), "size")]; }
Device Tensor::device() const { return impl_->storage->backend()->device(); }

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] != 1 && impl_->strides[i] != expect) return false;
    expect *= impl_->shape[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!impl_) return "Tensor(undefined)";
  return "Tensor" + shape_str(shape()) + " " + dtype_name(dtype()) + " " + device().str();
}

TensorArg Tensor::arg() const {
  return TensorArg{impl_->storage->data(), impl_->offset, impl_->dtype, impl_->shape, impl_->strides};
}

void Tensor::check_data_ptr(DType want) const {
  KILN_CHECK(defined(), ValueError, "data_ptr: undefined tensor");
  KILN_CHECK(device().type == DeviceType::cpu, DeviceError, "data_ptr: tensor is on ", device().str(),
             "; copy it to the CPU first with .to(Device())");
  KILN_CHECK(want == dtype(), DTypeError, "data_ptr: tensor has dtype ", dtype_name(dtype()), ", asked for ",
             dtype_name(want));
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  DType want = dtype_of<T>::value;
  Tensor c = (dtype() == want ? *this : to(want)).contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(out.size());
    c.backend()->download(bytes.data(), c.impl()->storage->data(), c.offset() * sizeof(bool), bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i) out[i] = bytes[i] != 0;
  } else {
    c.backend()->download(out.data(), c.impl()->storage->data(), c.offset() * sizeof(T), out.size() * sizeof(T));
  }
  return out;
}

template <class T>
T Tensor::item() const {
  KILN_CHECK(numel() == 1, ValueError, "item: tensor of shape ", shape_str(shape()),
             " has ", numel(), " elements, not one");
  return to_vector<T>()[0];
}

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template std::vector<uint16_t> Tensor::to_vector<uint16_t>() const;
template std::vector<uint32_t> Tensor::to_vector<uint32_t>() const;
template std::vector<uint64_t> Tensor::to_vector<uint64_t>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;
template uint64_t Tensor::item<uint64_t>() const;

// ---------------------------------------------------------------- views

Tensor Tensor::view(const Shape& shape) const {
  Shape s = infer_shape(shape, numel(), "view", this->shape());
  Strides st;
  KILN_CHECK(view_strides(this->shape(), strides(), s, st), ShapeError, "view: a tensor of shape ",
             shape_str(this->shape()), " with strides ", shape_str(strides()), " cannot be viewed as ",
             shape_str(s), "; use reshape, which copies");
  Tensor out = make_view(*this, s, st, offset());
  if (detail::needs_grad({this})) detail::record(out, OpKind::reshape, {*this});
  return out;
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = infer_shape(shape, numel(), "reshape", this->shape());
  Strides st;
  if (view_strides(this->shape(), strides(), s, st)) return view(s);
  return contiguous().view(s);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  KILN_CHECK(static_cast<int64_t>(dims.size()) == dim(), ShapeError, "permute: ", dims.size(),
             " dims given for a tensor of shape ", shape_str(shape()));
  Shape s(dims.size());
  Strides st(dims.size());
  std::vector<int64_t> normalized(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    KILN_CHECK(!seen[d], ValueError, "permute: dimension ", d, " repeated");
    seen[d] = true;
    normalized[i] = d;
    s[i] = shape()[d];
    st[i] = strides()[d];
  }
  Tensor out = make_view(*this, s, st, offset());
  if (detail::needs_grad({this})) detail::record(out, OpKind::permute, {*this}, op_attrs::Permute{normalized});
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> dims(static_cast<size_t>(dim()));
  for (int64_t i = 0; i < dim(); ++i) dims[i] = i;
  std::swap(dims[wrap_dim(d0, dim(), "transpose")], dims[wrap_dim(d1, dim(), "transpose")]);
  return permute(dims);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  KILN_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = shape();
  Strides st = strides();
  s[d] = (end - start + step - 1) / step;
  st[d] = strides()[d] * step;
  Tensor out = make_view(*this, s, st, offset() + start * strides()[d]);
  if (detail::needs_grad({this})) detail::record(out, OpKind::slice, {*this}, op_attrs::Slice{d, start, end, step});
  return out;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  int64_t n = shape()[d];
  KILN_CHECK(index >= -n && index < n, IndexError, "select: index ", index, " is out of range for dimension ", d,
             " of size ", n);
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}

Tensor Tensor::expand(const Shape& target) const {
  KILN_CHECK(target.size() >= shape().size(), ShapeError, "expand: cannot expand shape ", shape_str(shape()),
             " to ", shape_str(target));
  Shape s = target;
  size_t lead = target.size() - shape().size();
  for (size_t i = 0; i < target.size(); ++i) {
    if (i >= lead && s[i] == -1) s[i] = shape()[i - lead];
    if (i >= lead)
      KILN_CHECK(shape()[i - lead] == s[i] || shape()[i - lead] == 1, ShapeError, "expand: cannot expand shape ",
                 shape_str(shape()), " to ", shape_str(target));
    else
      KILN_CHECK(s[i] >= 0, ShapeError, "expand: invalid size in ", shape_str(target));
  }
  Tensor out = make_view(*this, s, broadcast_strides(shape(), strides(), s), offset());
  if (detail::needs_grad({this})) detail::record(out, OpKind::expand, {*this});
  return out;
}

Tensor Tensor::squeeze() const {
  Shape s;
  for (int64_t d : shape())
    if (d != 1) s.push_back(d);
  return view(s);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape s = shape();
  s.erase(s.begin() + d);
  return view(s);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape();
  s.insert(s.begin() + d, 1);
  return view(s);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  KILN_CHECK(start_dim <= end_dim, ValueError, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape s(shape().begin(), shape().begin() + start_dim);
  int64_t m = 1;
  for (int64_t i = start_dim; i <= end_dim; ++i) m *= shape()[i];
  s.push_back(m);
  s.insert(s.end(), shape().begin() + end_dim + 1, shape().end());
  return reshape(s);
}

// ---------------------------------------------------------------- copies

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = detail::empty(shape(), dtype(), device());
  if (numel()) backend()->copy(out.arg(), arg());
  if (detail::needs_grad({this})) detail::record(out, OpKind::contiguous, {*this});
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = detail::empty(shape(), dtype(), device());
  if (numel()) backend()->copy(out.arg(), arg());
  if (detail::needs_grad({this})) detail::record(out, OpKind::contiguous, {*this});
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  Tensor out = detail::empty(shape(), t, device());
  if (numel()) backend()->copy(out.arg(), arg());
  if (is_floating(t) && is_floating(dtype()) && detail::needs_grad({this}))
    detail::record(out, OpKind::cast, {*this});
  return out;
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor src = contiguous();
  Tensor out = detail::empty(shape(), dtype(), d);
  size_t nbytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (src.device().type == DeviceType::cpu) {
    out.backend()->upload(out.impl()->storage->data(), 0,
                          static_cast<const char*>(src.impl()->storage->data()) + src.offset() * dtype_size(dtype()),
                          nbytes);
  } else {
    std::vector<char> host(nbytes);
    src.backend()->download(host.data(), src.impl()->storage->data(), src.offset() * dtype_size(dtype()), nbytes);
    out.backend()->upload(out.impl()->storage->data(), 0, host.data(), nbytes);
  }
  return out;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->dtype = impl_->dtype;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->offset = impl_->offset;
  return Tensor(std::move(impl));
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_same_device(*this, src, "copy_");
  Shape b = broadcast_shapes(src.shape(), shape(), "copy_");
  KILN_CHECK(b == shape(), ShapeError, "copy_: source of shape ", shape_str(src.shape()),
             " does not broadcast to destination shape ", shape_str(shape()));
  if (numel()) backend()->copy(arg(), detail::broadcast_arg(src, shape()));
  return *this;
}

Tensor& Tensor::fill_(double value) {
  if (numel()) backend()->fill(arg(), value);
  return *this;
}

Tensor& Tensor::requires_grad_(bool on) {
  KILN_CHECK(!on || is_floating(dtype()), DTypeError, "requires_grad: only floating-point tensors can require ",
             "gradients, this one is ", dtype_name(dtype()));
  impl_->requires_grad = on;
  return *this;
}

// ---------------------------------------------------------------- method sugar

Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const { return kiln::sum(*this, dims, keepdim); }
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const { return kiln::mean(*this, dims, keepdim); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor Tensor::log() const { return kiln::log(*this); }
Tensor Tensor::sqrt() const { return kiln::sqrt(*this); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor Tensor::sigmoid() const { return kiln::sigmoid(*this); }
Tensor Tensor::tanh() const { return kiln::tanh(*this); }
Tensor Tensor::matmul(const Tensor& o) const { return kiln::matmul(*this, o); }
Tensor Tensor::argmax(int64_t d, bool keepdim) const { return kiln::argmax(*this, d, keepdim); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(b, a)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(b, a)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(a, b), b); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace kiln
