#include "engine/onnx/op_context.h"

#include <cstring>

#include "engine/core/storage.h"

namespace kiln::onnx {

void OpContext::fail(const std::string& message) const { throw ValueError(where() + ": " + message); }

const std::vector<Tensor>& OpContext::sequence_input(size_t i) const {
  if (!is_sequence(i)) fail("input " + std::to_string(i) + " must be a sequence");
  return *values_[i].sequence;
}

const StringTensor& OpContext::strings_input(size_t i) const {
  if (!is_strings(i)) fail("input " + std::to_string(i) + " must be a STRING tensor");
  return *values_[i].strings;
}

const Tensor& OpContext::given(size_t i) const {
  if (is_strings(i)) fail("input " + std::to_string(i) + " is a STRING tensor; Kiln's " + node_.op_type + " takes numeric tensors");
  if (is_sequence(i)) fail("input " + std::to_string(i) + " is a sequence; the op expects a tensor");
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but not given");
  return inputs_[i];
}

const Tensor& OpContext::on_device(size_t i) const {
  const Tensor& t = inputs_[i];
  if (!t.defined() || t.device() == device_ || t.device().type != DeviceType::cpu) return t;
  if (placed_.size() != inputs_.size()) placed_.resize(inputs_.size());  // once, before any reference into it
  if (!placed_[i].defined())
    placed_[i] = host_copies_ ? host_copies_->to_device(node_, i, t, device_) : t.to(device_);
  return placed_[i];
}

Tensor HostCopies::to_device(const Node& node, size_t input, const Tensor& host, Device device) {
  if (mode == Mode::off) return host.to(device);
  const auto key = std::make_pair(&node, input);
  if (mode == Mode::record) {
    Tensor copy = host.to(device);
    copies_[key] = {host.contiguous(), copy};
    return copy;
  }
  auto it = copies_.find(key);
  auto same = [&](const Tensor& a) {  // a: the recorded run's contiguous host value
    if (a.dtype() != host.dtype() || a.shape() != host.shape()) return false;
    const Tensor b = host.contiguous();
    const size_t esize = dtype_size(a.dtype());
    auto bytes = [&](const Tensor& t) { return static_cast<const char*>(t.impl()->storage->data()) + t.offset() * esize; };
    return std::memcmp(bytes(a), bytes(b), static_cast<size_t>(a.numel()) * esize) == 0;
  };
  KILN_CHECK(it != copies_.end() && it->second.device.device() == device && same(it->second.host), DeviceError,
             "node '", node.name, "' (", node.op_type, "): host input ", input,
             " differs from the run before the recording (a value the graph cannot keep)");
  return it->second.device;
}

const Tensor& OpContext::input(size_t i) const {
  given(i);
  return on_device(i);
}

Tensor OpContext::optional_input(size_t i) const { return has_input(i) ? on_device(i) : Tensor(); }

const std::vector<Tensor>& OpContext::inputs() const {
  bool host = false;
  for (const Tensor& t : inputs_) host |= t.defined() && t.device() != device_ && t.device().type == DeviceType::cpu;
  if (!host) return inputs_;
  if (placed_.size() != inputs_.size()) placed_.resize(inputs_.size());  // before any reference into it
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!placed_[i].defined()) placed_[i] = on_device(i);  // element-wise: earlier references stay valid
  return placed_;
}

std::vector<int64_t> OpContext::ints_input(size_t i) const {
  const Tensor& t = given(i);
  if (t.dim() > 1) fail("input " + std::to_string(i) + " must be 1-d, got shape " + shape_str(t.shape()));
  if (!is_integral(t.dtype()))
    fail("input " + std::to_string(i) + " must be an integer tensor, got " + dtype_name(t.dtype()));
  return t.to_vector<int64_t>();
}

double OpContext::scalar_input(size_t i) const {
  const Tensor& t = given(i);
  if (t.numel() != 1) fail("input " + std::to_string(i) + " must hold one value, got shape " + shape_str(t.shape()));
  return t.to(DType::f64).item<double>();
}

const Attribute& OpContext::attr(const std::string& name, Attribute::Type type) const {
  auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) fail("attribute '" + name + "' is required but missing");
  if (it->second.type != type)
    fail("attribute '" + name + "' must be " + attribute_type_name(type) + ", got " +
         attribute_type_name(it->second.type));
  return it->second;
}

int64_t OpContext::attr_int(const std::string& name) const { return attr(name, Attribute::Type::Int).i; }
int64_t OpContext::attr_int(const std::string& name, int64_t def) const {
  return has_attr(name) ? attr(name, Attribute::Type::Int).i : def;
}
double OpContext::attr_float(const std::string& name, double def) const {
  return has_attr(name) ? attr(name, Attribute::Type::Float).f : def;
}
std::string OpContext::attr_string(const std::string& name, const std::string& def) const {
  return has_attr(name) ? attr(name, Attribute::Type::String).s : def;
}
std::vector<int64_t> OpContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  return has_attr(name) ? attr(name, Attribute::Type::Ints).ints : def;
}
std::vector<double> OpContext::attr_floats(const std::string& name, std::vector<double> def) const {
  return has_attr(name) ? attr(name, Attribute::Type::Floats).floats : def;
}
std::vector<std::string> OpContext::attr_strings(const std::string& name) const {
  return attr(name, Attribute::Type::Strings).strings;
}
const Tensor& OpContext::attr_tensor(const std::string& name) const { return attr(name, Attribute::Type::Tensor).t; }
const Graph& OpContext::attr_graph(const std::string& name) const { return *attr(name, Attribute::Type::Graph).g; }

const OpTable& onnx_ops() {
  static const OpTable table = [] {
    OpTable t;
    register_math_ops(t);
    register_shape_ops(t);
    register_nn_ops(t);
    register_reduce_ops(t);
    register_host_ops(t);
    register_resize_ops(t);
    register_quant_ops(t);
    register_rnn_ops(t);
    register_extra_ops(t);
    register_spectral_ops(t);
    register_text_ops(t);
    register_fused_ops(t);
    register_qlinear_fused_ops(t);
    register_qadd_fused_ops(t);
    return t;
  }();
  return table;
}

std::string op_key(const Node& node) { return node.domain.empty() ? node.op_type : node.domain + "." + node.op_type; }

int64_t wrap_axis(const OpContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Tensor ints_tensor(const std::vector<int64_t>& v, Device device) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, device);
}

Tensor flip(const Tensor& x, int64_t dim) {
  int64_t n = x.size(dim);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = n - 1 - i;
  return index_select(x, dim, ints_tensor(idx, x.device()));
}

std::vector<double> host_doubles(const Tensor& x) { return x.to_vector<double>(); }

Tensor from_doubles(const std::vector<double>& v, const Shape& shape, DType dtype, Device device) {
  return Tensor::from_vector(v, shape).to(dtype).to(device);
}

}  // namespace kiln::onnx
