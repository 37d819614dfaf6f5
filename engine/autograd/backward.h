// The backward pass (reverse-mode automatic differentiation).
// Each differentiable op records a Node (engine/core/node.h); rules.cpp holds one
// backward rule per OpKind; backward() walks the graph in reverse creation order.
#pragma once
#include <functional>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::autograd {

// Gradients of a node's output with respect to each of its inputs, given the
// gradient of its output (rules.cpp). Entries for inputs that need no gradient
// may be undefined.
std::vector<Tensor> apply_backward_rule(const Node& node, const Tensor& grad_output);

// Reduces a broadcast gradient back to `shape` (sums leading and expanded dims).
Tensor sum_to(const Tensor& grad, const Shape& shape);

// Runs backward from `root` with d(root) = grad_root (ones for a scalar root),
// accumulating into the .grad of every leaf that requires grad (torch.autograd.backward).
// Throws ValueError when root does not require grad or is not a scalar and no
// grad_root is given, or when grad_root's shape differs from root's.
void backward(const Tensor& root, const Tensor& grad_root = Tensor());

// Profiling (engine/graph/layer_profile.h): while a BackwardHookGuard lives, backward() on this
// thread calls its hook with (node, false) just before doing an autograd node's work (its rule,
// or a slice's in-place add, and passing the gradients on, accumulation into leaves included)
// and with (node, true) just after. Guards nest; an empty hook turns hooking off inside.
using BackwardNodeHook = std::function<void(const Node& node, bool done)>;
class BackwardHookGuard {
 public:
  explicit BackwardHookGuard(BackwardNodeHook hook);
  ~BackwardHookGuard();
  BackwardHookGuard(const BackwardHookGuard&) = delete;
  BackwardHookGuard& operator=(const BackwardHookGuard&) = delete;

 private:
  BackwardNodeHook hook_;
  const BackwardNodeHook* previous_;
};

// Data parallelism (engine/distributed/reducer.h): while a LeafGradHookGuard lives, backward() on
// this thread calls its hook with each leaf of the pass that requires grad, once the leaf's .grad
// holds all of this pass's contributions: every node of the pass that takes the leaf as an input
// has been done, or skipped because no gradient reached it (then .grad may be unchanged or still
// undefined). The order is the order in which the pass completes the leaves, the same on every
// run of the same graph: torch.Tensor.register_post_accumulate_grad_hook, on which PyTorch's DDP
// launches its gradient buckets. Leaves the pass does not reach are not reported. Guards nest; an
// empty hook turns reporting off inside.
using LeafGradHook = std::function<void(const std::shared_ptr<TensorImpl>& leaf)>;
class LeafGradHookGuard {
 public:
  explicit LeafGradHookGuard(LeafGradHook hook);
  ~LeafGradHookGuard();
  LeafGradHookGuard(const LeafGradHookGuard&) = delete;
  LeafGradHookGuard& operator=(const LeafGradHookGuard&) = delete;

 private:
  LeafGradHook hook_;
  const LeafGradHook* previous_;
};

}  // namespace kiln::autograd
