#include "engine/nn/module.h"

#include <map>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"

namespace kiln::nn {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  return name.empty() ? prefix : prefix + "." + name;
}

// Points `dst`'s impl at `src`'s storage and layout, keeping its identity and
// autograd flags (torch's param.data = ...).
void rebind(TensorImpl* dst, const Tensor& src) {
  dst->storage = src.impl()->storage;
  dst->dtype = src.dtype();
  dst->strides = src.strides();
  dst->offset = src.offset();
}

}  // namespace

// ---------------------------------------------------------------- registration

void Module::check_new_name(const std::string& name) const {
  KILN_CHECK(!name.empty(), ValueError, type_name(), ": a parameter, buffer or module name cannot be empty");
  KILN_CHECK(name.find('.') == std::string::npos, ValueError, type_name(), ": name \"", name,
             "\" cannot contain \".\"");
  for (auto& [n, t] : params_) KILN_CHECK(n != name, ValueError, type_name(), ": \"", name, "\" is already registered");
  for (auto& [n, t] : buffers_) KILN_CHECK(n != name, ValueError, type_name(), ": \"", name, "\" is already registered");
  for (auto& [n, m] : children_) KILN_CHECK(n != name, ValueError, type_name(), ": \"", name, "\" is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_new_name(name);
  KILN_CHECK(t.defined(), ValueError, type_name(), ": parameter \"", name, "\" is undefined");
  KILN_CHECK(t.is_leaf(), ValueError, type_name(), ": parameter \"", name,
             "\" must be a leaf tensor (detach() it first)");
  t.requires_grad_(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name);
  KILN_CHECK(t.defined(), ValueError, type_name(), ": buffer \"", name, "\" is undefined");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  KILN_CHECK(module != nullptr, ValueError, type_name(), ": child module \"", name, "\" is null");
  children_.emplace_back(name, std::move(module));
}

// ---------------------------------------------------------------- traversal

std::vector<Tensor> Module::unique_tensors() const {
  StateDict all;
  collect("", true, true, all);
  std::vector<Tensor> out;
  std::set<TensorImpl*> seen;
  for (auto& [name, t] : all)
    if (seen.insert(t.impl()).second) out.push_back(t);
  return out;
}

void Module::collect(const std::string& prefix, bool params, bool buffers, StateDict& out) const {
  if (params)
    for (auto& [n, t] : params_) out.emplace_back(join(prefix, n), t);
  if (buffers)
    for (auto& [n, t] : buffers_) out.emplace_back(join(prefix, n), t);
  for (auto& [n, m] : children_) m->collect(join(prefix, n), params, buffers, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  StateDict all, out;
  collect("", true, false, all);
  std::set<TensorImpl*> seen;
  for (auto& entry : all)
    if (seen.insert(entry.second.impl()).second) out.push_back(entry);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  StateDict out;
  collect("", false, true, out);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [n, m] : children_)
    for (auto& [sub, ptr] : m->named_modules()) out.emplace_back(join(n, sub), ptr);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

// ---------------------------------------------------------------- state

StateDict Module::state_dict() const {
  StateDict out;
  collect("", true, true, out);
  for (auto& [n, t] : out) t = t.detach();
  return out;
}

LoadStateDictResult Module::load_state_dict(const StateDict& state, bool strict) {
  std::map<std::string, Tensor> given;
  for (auto& [n, t] : state) given[n] = t;
  StateDict mine;
  collect("", true, true, mine);
  std::vector<std::string> errors, missing;
  std::set<std::string> used;
  for (auto& [name, dst] : mine) {
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
      continue;
    }
    used.insert(name);
    if (it->second.shape() != dst.shape())
      errors.push_back(detail::str_cat("size mismatch for ", name, ": checkpoint ", shape_str(it->second.shape()),
                                       ", model ", shape_str(dst.shape())));
  }
  std::vector<std::string> unexpected;
  for (auto& [n, t] : state)
    if (!used.count(n)) unexpected.push_back(n);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (strict && !missing.empty()) errors.push_back("missing keys: " + list(missing));
  if (strict && !unexpected.empty()) errors.push_back("unexpected keys: " + list(unexpected));
  if (!errors.empty()) {
    std::string msg = "load_state_dict: ";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
    throw ValueError(msg);
  }
  NoGradGuard no_grad;
  for (auto& [name, dst] : mine) {
    auto it = given.find(name);
    if (it != given.end()) dst.copy_(it->second.to(dst.device()));
  }
  return {missing, unexpected};
}

void Module::to(Device device) {
  for (Tensor& t : unique_tensors()) {
    if (t.device() == device) continue;
    rebind(t.impl(), t.detach().to(device));
    if (t.grad().defined()) t.set_grad(t.grad().to(device));
  }
}

void Module::to(DType dtype) {
  KILN_CHECK(is_floating(dtype), DTypeError, "Module::to: expected a floating-point dtype, got ", dtype_name(dtype));
  for (Tensor& t : unique_tensors()) {
    if (!is_floating(t.dtype()) || t.dtype() == dtype) continue;
    rebind(t.impl(), t.detach().to(dtype));
    if (t.grad().defined()) t.set_grad(t.grad().to(dtype));
  }
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& p : parameters()) n += p.numel();
  return n;
}

std::string Module::repr() const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string line; std::getline(is, line);) lines.push_back(line);
  }
  for (auto& [n, m] : children_) {
    std::string child = m->repr(), indented;
    for (char c : child) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
    lines.push_back("(" + n + "): " + indented);
  }
  std::string out = type_name() + "(";
  if (lines.size() == 1 && children_.empty()) {
    out += lines[0];
  } else if (!lines.empty()) {
    for (auto& l : lines) out += "\n  " + l;
    out += "\n";
  }
  return out + ")";
}

// ---------------------------------------------------------------- Sequential

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) { add_child(std::to_string(size()), std::move(module)); }

std::shared_ptr<Module> Sequential::operator[](size_t i) const {
  KILN_CHECK(i < size(), IndexError, "Sequential: index ", i, " is out of range for ", size(), " modules");
  return named_children()[i].second;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [n, m] : named_children()) y = m->forward(y);
  return y;
}

}  // namespace kiln::nn
