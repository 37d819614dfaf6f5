// Module: the base of every layer and model (torch.nn.Module).
//
// A module owns named parameters (leaves that require grad), named buffers
// (state that is saved but not trained, e.g. BatchNorm's running_mean) and named
// child modules, all in registration order. Names follow PyTorch exactly, so a
// Sequential CNN's state_dict keys read "0.weight", "0.bias", "3.weight", ...
//
// Modules are held by std::shared_ptr and are not copyable. Parameters are
// Tensor handles shared with the layer's members and with optimizers: everything
// that changes a parameter (load_state_dict, to(), optimizer steps) writes into
// the existing TensorImpl rather than replacing it, so every holder sees it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::nn {

// Ordered (name, tensor) pairs: parameters and buffers in PyTorch's order.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

// What load_state_dict(strict = false) skipped (torch's _IncompatibleKeys).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     // in the module, not in the checkpoint
  std::vector<std::string> unexpected_keys;  // in the checkpoint, not in the module
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's computation. Shapes are documented per layer.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Class name as PyTorch prints it ("Linear", "Conv2d").
  virtual std::string type_name() const { return "Module"; }
  // The part inside the parentheses of repr() ("in_features=4, out_features=2, bias=True").
  virtual std::string extra_repr() const { return ""; }
  // PyTorch's print(module) text, children indented and named "(0): ...".
  std::string repr() const;

  // Parameters of this module and its descendants, pre-order, keys joined with
  // "." ("features.3.bias"); a tensor shared by two modules appears once (as torch).
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  // This module ("") and every descendant, pre-order (pointers owned by the tree).
  std::vector<std::pair<std::string, Module*>> named_modules();

  // Training mode (torch's module.train(mode) / eval()), applied recursively.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Parameters, then buffers, of this module, then of each child with its name as
  // prefix (torch.nn.Module.state_dict). The tensors share storage with the module.
  StateDict state_dict() const;
  // Copies `state` into the module's tensors (converting dtype and device).
  // Throws ValueError listing every problem, and then copies nothing:
  //  "load_state_dict: size mismatch for 0.weight: checkpoint [256, 784], model [128, 784]"
  // (always), missing and unexpected keys (when strict). Returns the keys skipped.
  LoadStateDictResult load_state_dict(const StateDict& state, bool strict = true);

  // Moves parameters and buffers (and gradients) to `device` in place: the same
  // tensors stay leaves with requires_grad, so optimizers built earlier still work.
  void to(Device device);
  // Casts floating-point parameters and buffers to `dtype` in place (as
  // module.to(torch.float64)); integer buffers such as num_batches_tracked keep theirs.
  void to(DType dtype);

  // Drops every parameter's gradient (torch's zero_grad(set_to_none=True)).
  void zero_grad();
  // Total element count of all parameters.
  int64_t num_parameters() const;

 protected:
  // Registers a parameter: marks it requires_grad and returns it. Throws
  // ValueError when the name is empty, contains '.', or is already taken.
  Tensor register_parameter(const std::string& name, Tensor t);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  void add_child(const std::string& name, std::shared_ptr<Module> module);

  bool training_ = true;

 private:
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, bool buffers, StateDict& out) const;
  // The module's own parameter and buffer handles (not detached), each tensor once.
  std::vector<Tensor> unique_tensors() const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Children run in order; they are named "0", "1", ... (torch.nn.Sequential).
class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  template <class... M>
  explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return named_children().size(); }
  // The i-th child; IndexError when out of range.
  std::shared_ptr<Module> operator[](size_t i) const;
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
};

}  // namespace kiln::nn
