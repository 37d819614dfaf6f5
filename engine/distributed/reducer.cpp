#include "engine/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/autograd/backward.h"
#include "engine/core/error.h"

namespace kiln::distributed {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& params, const BucketOptions& options) {
  KILN_CHECK(options.first_bucket_bytes >= 1 && options.bucket_bytes >= 1, ValueError,
             "assign_buckets: bucket caps must be at least 1 byte (first ", options.first_bucket_bytes, ", then ",
             options.bucket_bytes, ")");
  struct Open {
    std::vector<size_t> members;
    int64_t bytes = 0;
    bool first = true;  // still the first bucket of its dtype
  };
  std::map<DType, Open> open;  // the bucket being filled, per dtype
  std::vector<std::vector<size_t>> buckets;
  for (size_t k = params.size(); k-- > 0;) {
    const Tensor& p = params[k];
    Open& b = open[p.dtype()];
    b.members.push_back(k);
    b.bytes += p.numel() * static_cast<int64_t>(dtype_size(p.dtype()));
    if (b.bytes >= (b.first ? options.first_bucket_bytes : options.bucket_bytes)) {
      buckets.push_back(std::move(b.members));
      b = Open{{}, 0, false};
    }
  }
  // The partly filled buckets, in the order of their first (latest) parameter.
  std::vector<std::vector<size_t>> rest;
  for (auto& [dtype, b] : open)
    if (!b.members.empty()) rest.push_back(std::move(b.members));
  std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.front() > b.front(); });
  for (auto& b : rest) buckets.push_back(std::move(b));
  return buckets;
}

void broadcast_state(const nn::Module& model, Communicator& comm) {
  for (const auto& [name, t] : model.named_parameters()) {
    KILN_CHECK(t.is_contiguous(), ValueError, "broadcast_state: parameter '", name, "' is not contiguous");
    comm.broadcast(t.arg(), 0);
  }
  for (const auto& [name, t] : model.named_buffers()) {
    KILN_CHECK(t.is_contiguous(), ValueError, "broadcast_state: buffer '", name, "' is not contiguous");
    comm.broadcast(t.arg(), 0);
  }
  comm.join();
}

Reducer::Reducer(std::vector<Tensor> params, Communicator& comm, BucketOptions options)
    : comm_(comm) {
  for (Tensor& p : params)
    if (p.defined() && p.requires_grad()) params_.push_back(std::move(p));  // frozen ones get no gradient
  KILN_CHECK(!params_.empty(), ValueError, "Reducer: no parameter requires grad");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    KILN_CHECK(p.defined() && p.is_contiguous(), ValueError, "Reducer: parameter ", i, " is not contiguous");
    KILN_CHECK(p.device() == params_.front().device(), ValueError, "Reducer: parameter ", i, " is on ",
               p.device().str(), ", parameter 0 on ", params_.front().device().str(), " (one device per rank)");
    index_[p.impl()] = i;
  }
  buckets_ = assign_buckets(params_, options);
  slots_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t numel = 0;
    for (size_t i : buckets_[b]) {
      slots_[i] = Slot{b, numel};
      numel += params_[i].numel();
    }
    const Tensor& first = params_[buckets_[b].front()];
    flat_.push_back(Tensor::zeros({numel}, first.dtype(), first.device()));
  }
  pending_.assign(buckets_.size(), 0);
  reported_.assign(params_.size(), false);
}

void Reducer::ready(const std::shared_ptr<TensorImpl>& leaf) {
  auto it = index_.find(leaf.get());
  if (it == index_.end() || reported_[it->second]) return;  // not one of ours (an input that requires grad)
  const size_t i = it->second;
  reported_[i] = true;
  const Slot& s = slots_[i];
  Tensor part = flat_[s.bucket].slice(0, s.offset, s.offset + params_[i].numel());
  if (leaf->grad)
    part.copy_(Tensor(leaf->grad).reshape({-1}));
  else
    part.fill_(0);  // no gradient here this pass: counts as zeros in the average
  --pending_[s.bucket];
  launch_in_order();
}

void Reducer::launch_in_order() {
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    comm_.all_reduce(flat_[next_launch_].arg(), /*average=*/true);
    ++next_launch_;
  }
}

void Reducer::backward(const Tensor& loss, const Tensor& grad, bool sync) {
  if (!sync) {
    autograd::backward(loss, grad);
    return;
  }
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = static_cast<int64_t>(buckets_[b].size());
  reported_.assign(params_.size(), false);
  next_launch_ = 0;
  {
    autograd::LeafGradHookGuard hook([this](const std::shared_ptr<TensorImpl>& leaf) { ready(leaf); });
    autograd::backward(loss, grad);
  }
  // Parameters the pass did not reach (unused in this forward): zeros in their slots.
  for (size_t i = 0; i < params_.size(); ++i)
    if (!reported_[i]) ready(params_[i].impl_ptr());
  comm_.join();
  // Each .grad becomes its slot of the averaged bucket (DDP's gradient_as_bucket_view): no copy
  // back. The slot is rewritten by the next synchronized pass only, after the optimizer step has
  // read it; an unsynchronized pass accumulates into a new tensor (autograd's add), not into it.
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& g = params_[i].impl()->grad;
    if (!g) continue;
    const Slot& s = slots_[i];
    g = flat_[s.bucket].slice(0, s.offset, s.offset + params_[i].numel()).reshape(params_[i].shape()).impl_ptr();
  }
}

}  // namespace kiln::distributed
