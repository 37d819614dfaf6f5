#include "engine/autograd/backward.h"

#include <unordered_map>
#include <utility>
#include <unordered_set>
#include <variant>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln {

void Tensor::backward(const Tensor& grad_output) const { autograd::backward(*this, grad_output); }

namespace autograd {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  std::vector<int64_t> dims;
  size_t lead = grad.shape().size() - shape.size();
  for (size_t i = 0; i < grad.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  Tensor s = dims.empty() ? grad : sum(grad, dims, true);
  return s.reshape(shape);
}

namespace {

void accumulate(std::shared_ptr<TensorImpl>& slot, const Tensor& g) {
  Tensor c = g.contiguous();
  if (!slot) {
    // Always a buffer of its own: a rule's result may alias another input's
    // gradient or a saved tensor, and optimizers scale .grad in place.
    slot = (c.is_same(g) ? g.clone() : c).impl_ptr();
  } else {
    slot = add(Tensor(slot), c).impl_ptr();
  }
}

thread_local const BackwardNodeHook* current_hook = nullptr;
thread_local const LeafGradHook* current_leaf_hook = nullptr;

// Counts, per leaf that requires grad, the nodes of the pass that take it as an input, and
// reports a leaf to the LeafGradHook when its last such node is done (LeafGradHookGuard).
class LeafCountdown {
 public:
  LeafCountdown(const LeafGradHook* hook, const std::vector<Node*>& order) : hook_(hook) {
    if (!hook_) return;
    for (Node* node : order)
      for (const auto& in : node->inputs)
        if (is_leaf(in)) ++pending_[in.get()];
  }
  // `node` is done (or skipped): its leaves have one node fewer to wait for.
  void done(const Node& node) {
    if (!hook_) return;
    for (const auto& in : node.inputs) {
      if (!is_leaf(in)) continue;
      auto it = pending_.find(in.get());
      if (it != pending_.end() && --it->second == 0) {
        pending_.erase(it);
        (*hook_)(in);
      }
    }
  }

 private:
  static bool is_leaf(const std::shared_ptr<TensorImpl>& in) { return in && in->requires_grad && !in->grad_fn; }
  const LeafGradHook* hook_;
  std::unordered_map<const TensorImpl*, int> pending_;
};

}  // namespace

BackwardHookGuard::BackwardHookGuard(BackwardNodeHook hook) : hook_(std::move(hook)), previous_(current_hook) {
  current_hook = hook_ ? &hook_ : nullptr;
}

BackwardHookGuard::~BackwardHookGuard() { current_hook = previous_; }

LeafGradHookGuard::LeafGradHookGuard(LeafGradHook hook) : hook_(std::move(hook)), previous_(current_leaf_hook) {
  current_leaf_hook = hook_ ? &hook_ : nullptr;
}

LeafGradHookGuard::~LeafGradHookGuard() { current_leaf_hook = previous_; }

void backward(const Tensor& root, const Tensor& grad_root) {
  KILN_CHECK(root.defined() && root.requires_grad(), ValueError,
             "backward: the tensor does not require grad and has no grad_fn (was it computed under no_grad, or ",
             "from tensors without requires_grad?)");
  Tensor g0 = grad_root;
  if (!g0.defined()) {
    KILN_CHECK(root.numel() == 1, ValueError, "backward: grad can be implicitly created only for scalar outputs; ",
               "this output has shape ", shape_str(root.shape()));
    g0 = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  KILN_CHECK(g0.shape() == root.shape(), ShapeError, "backward: gradient of shape ", shape_str(g0.shape()),
             " does not match output of shape ", shape_str(root.shape()));
  NoGradGuard no_grad;
  if (!root.impl()->grad_fn) {  // a leaf
    accumulate(root.impl()->grad, g0);
    if (current_leaf_hook) (*current_leaf_hook)(root.impl_ptr());
    return;
  }
  // Nodes in topological order (every node after all nodes that consume its output),
  // found by an iterative depth-first search.
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack{{root.impl()->grad_fn.get(), 0}};
  visited.insert(stack.back().first);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* child = node->inputs[next++] ? node->inputs[next - 1]->grad_fn.get() : nullptr;
      if (child && visited.insert(child).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::unordered_map<Node*, Tensor> grads;
  // Nodes whose pending gradient is a buffer this pass allocated and nobody else holds, so a
  // slice's gradient can be added into its part in place: T slices of one tensor (an RNN's
  // per-step input projections) then cost O(T * slice) instead of T zero-filled full-size
  // tensors and T full-size additions.
  std::unordered_set<Node*> owned;
  grads[root.impl()->grad_fn.get()] = g0;
  const BackwardNodeHook* hook = current_hook;
  LeafCountdown leaves(current_leaf_hook, order);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = grads.find(node);
    if (found == grads.end()) {
      leaves.done(*node);
      continue;
    }
    Tensor g = found->second;
    grads.erase(found);
    owned.erase(node);
    if (hook) (*hook)(*node, false);
    if (node->kind == OpKind::slice && node->inputs[0] && node->inputs[0]->requires_grad && node->inputs[0]->grad_fn) {
      const auto& a = std::get<op_attrs::Slice>(node->attrs);
      const auto& in = node->inputs[0];
      Node* target = in->grad_fn.get();
      auto slot = grads.find(target);
      if (slot == grads.end()) {
        slot = grads.emplace(target, Tensor::zeros(in->shape, g.dtype(), g.device())).first;
      } else if (!owned.count(target)) {
        slot->second = slot->second.contiguous().clone();
      }
      owned.insert(target);
      Tensor part = slot->second.slice(a.dim, a.start, a.end, a.step);
      part.copy_(add(part, g));
      if (hook) (*hook)(*node, true);
      leaves.done(*node);
      continue;
    }
    std::vector<Tensor> input_grads = apply_backward_rule(*node, g);
    for (size_t i = 0; i < node->inputs.size() && i < input_grads.size(); ++i) {
      auto& in = node->inputs[i];
      const Tensor& gi = input_grads[i];
      if (!in || !in->requires_grad || !gi.defined()) continue;
      KILN_CHECK(gi.shape() == in->shape, ShapeError, "backward of ", op_kind_name(node->kind), ": gradient of shape ",
                 shape_str(gi.shape()), " for input ", i, " of shape ", shape_str(in->shape));
      if (in->grad_fn) {
        auto slot = grads.find(in->grad_fn.get());
        if (slot == grads.end()) {
          grads.emplace(in->grad_fn.get(), gi);  // the rule's result may alias other tensors
        } else {
          slot->second = add(slot->second, gi);
          owned.insert(in->grad_fn.get());
        }
      } else {
        accumulate(in->grad, gi);
      }
    }
    if (hook) (*hook)(*node, true);
    leaves.done(*node);
  }
}

}  // namespace autograd
}  // namespace kiln
