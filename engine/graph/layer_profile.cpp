// profile_layers (engine/graph/layer_profile.h); Note [Per-layer timing] there.
#include "engine/graph/layer_profile.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>

#include "engine/autograd/backward.h"
#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/core/tensor.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/step_time.h"
#include "engine/train/mixed_precision.h"

namespace kiln::graph {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The middle half of n ranked items: [n / 4, n - n / 4), never empty for n >= 1.
std::pair<size_t, size_t> middle_half(size_t n) { return {n / 4, n - n / 4}; }

// The interquartile mean of v (the mean of its middle half once sorted), 0 when empty.
double interquartile_mean(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto [lo, hi] = middle_half(v.size());
  double sum = 0;
  for (size_t i = lo; i < hi; ++i) sum += v[i];
  return sum / static_cast<double>(hi - lo);
}

// Claims for graph node `owner` every autograd node reachable from `outputs` that no earlier
// graph node claimed: those its forward recorded (the graph runs in topological order, so the
// walk stops at the nodes of the layers before it, and at leaves: inputs and parameters).
void claim(const std::vector<Tensor>& outputs, int owner, std::unordered_map<const kiln::Node*, int>& owners) {
  std::vector<const kiln::Node*> stack;
  for (const Tensor& t : outputs)
    if (t.defined() && t.impl()->grad_fn) stack.push_back(t.impl()->grad_fn.get());
  while (!stack.empty()) {
    const kiln::Node* n = stack.back();
    stack.pop_back();
    if (!owners.emplace(n, owner).second) continue;
    for (const auto& in : n->inputs)
      if (in && in->grad_fn) stack.push_back(in->grad_fn.get());
  }
}

// One step's figures, per layer in LayerProfile::layers order.
struct StepSample {
  std::vector<double> forward, backward;
  std::vector<bool> has_backward;
  std::vector<uint64_t> output_bytes;
  std::vector<std::optional<int64_t>> alloc;
  double loss_forward = 0, loss_backward = 0, total = 0;
};

}  // namespace

double LayerProfile::layer_sum_ms() const {
  double s = 0;
  for (const LayerTime& l : layers) s += l.total_ms();
  return s;
}

double LayerProfile::share_percent(const LayerTime& layer) const {
  const double s = layer_sum_ms();
  return s > 0 ? 100.0 * layer.total_ms() / s : 0.0;
}

LayerProfile profile_layers(const Graph& g, const std::string& device_name, const ProfileOptions& o,
                            const std::function<bool()>& cancelled) {
  KILN_CHECK(o.batch >= 1, ValueError, "the batch size must be at least 1, got ", o.batch);
  KILN_CHECK(o.steps >= 1 && o.warmup >= 0, ValueError, "profiling needs steps >= 1 and warmup >= 0, got ", o.steps,
             " and ", o.warmup);
  KILN_CHECK(o.precision == "f32" || o.precision == "bf16" || o.precision == "f16", ValueError, "unknown precision '",
             o.precision, "' (f32, bf16 or f16)");
  const Device dev = Device::parse(device_name);  // ValueError on a malformed name
  Backend* backend = backend_for(dev);            // DeviceError naming the devices found
  const train::PrecisionPlan plan = train::plan_precision(o.precision, dev);
  KILN_CHECK(plan.note.empty(), ValueError, o.precision, " on ", dev.str(), ": ", plan.note);
  if (plan.autocast)
    KILN_CHECK(backend->supports(OpId::matmul, *plan.autocast), ValueError, dev.str(), " does not run matmul in ",
               o.precision);
  AutocastGuard autocast_scope(plan.autocast);

  auto model = std::make_shared<GraphModule>(g);  // ValueError naming the problems
  model->to(dev);
  model->train();
  Generator gen(1);
  const std::vector<Tensor> inputs = random_inputs(g, model->analysis(), o.batch, dev, gen);
  StepLoss loss(g, model->analysis(), o.batch, dev, gen);

  LayerProfile r;
  r.device = dev.str();
  r.name = backend->info().name;
  r.precision = o.precision;
  r.batch = o.batch;
  std::unordered_map<NodeId, int> index;  // graph node -> position in r.layers
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == "Input" || n.op == "Output") continue;
    LayerTime l;
    l.node = id;
    l.name = n.name;
    l.op = n.op;
    for (const auto& [child, m] : model->named_children())
      if (child == n.name)
        for (const Tensor& p : m->parameters()) l.has_parameters = l.has_parameters || p.requires_grad();
    index[id] = static_cast<int>(r.layers.size());
    r.layers.push_back(l);
  }
  const size_t count = r.layers.size();

  auto sync_now = [backend] {
    backend->synchronize();
    return Clock::now();
  };
  auto allocated = [backend]() -> std::optional<int64_t> {
    const MemoryStats m = backend->memory_stats();
    return m.tracked ? std::optional<int64_t>(static_cast<int64_t>(m.allocated)) : std::nullopt;
  };

  // With profiling off: forward, loss, backward, synchronized only at the ends.
  auto plain_step = [&] {
    model->zero_grad();
    const auto t0 = sync_now();
    loss(model->forward(inputs)).backward();
    return ms_between(t0, sync_now());
  };

  auto profiled_step = [&] {
    StepSample s;
    s.forward.assign(count, 0);
    s.backward.assign(count, 0);
    s.has_backward.assign(count, false);
    s.output_bytes.assign(count, 0);
    s.alloc.assign(count, std::nullopt);
    std::unordered_map<const kiln::Node*, int> owners;
    model->zero_grad();
    const auto start = sync_now();
    auto mark = start;
    std::optional<int64_t> held = allocated();
    const GraphModule::OutputHook hook = [&](const Node& n, std::vector<Tensor>& out) {
      const auto t = sync_now();
      const auto found = index.find(n.id);
      if (found == index.end()) {  // an Input node (GraphModule calls the hook for those too)
        held = allocated();
        mark = Clock::now();
        return;
      }
      const int k = found->second;
      s.forward[k] = ms_between(mark, t);
      const std::optional<int64_t> now_held = allocated();
      if (now_held && held) s.alloc[k] = *now_held - *held;
      for (const Tensor& o : out)
        if (o.defined()) s.output_bytes[k] += static_cast<uint64_t>(o.numel()) * dtype_size(o.dtype());
      claim(out, k, owners);
      held = allocated();
      mark = Clock::now();
    };
    Tensor l = loss(model->forward(inputs, hook));
    auto t = sync_now();
    s.loss_forward = ms_between(mark, t);
    {
      Clock::time_point node_start;
      autograd::BackwardHookGuard guard([&](const kiln::Node& n, bool done) {
        const auto now = sync_now();
        if (!done) {
          node_start = now;
          return;
        }
        const double ms = ms_between(node_start, now);
        auto it = owners.find(&n);
        if (it == owners.end()) {
          s.loss_backward += ms;
        } else {
          s.backward[it->second] += ms;
          s.has_backward[it->second] = true;
        }
      });
      l.backward();
    }
    s.total = ms_between(start, sync_now());
    return s;
  };

  auto stop = [&cancelled] { return cancelled && cancelled(); };
  std::vector<StepSample> samples;
  std::vector<double> plain;
  for (int i = 0; i < o.warmup + o.steps && !stop(); ++i) {
    const double p = plain_step();
    StepSample s = profiled_step();
    if (i < o.warmup) continue;
    plain.push_back(p);
    samples.push_back(std::move(s));
  }
  r.steps = static_cast<int>(samples.size());
  r.cancelled = r.steps < o.steps;

  // The middle half of the profiled steps ranked by their total (Note [Per-layer timing]).
  std::vector<const StepSample*> kept;
  for (const StepSample& s : samples) kept.push_back(&s);
  std::sort(kept.begin(), kept.end(), [](const StepSample* a, const StepSample* b) { return a->total < b->total; });
  const auto [lo, hi] = middle_half(kept.size());
  kept = std::vector<const StepSample*>(kept.begin() + static_cast<std::ptrdiff_t>(lo),
                                        kept.begin() + static_cast<std::ptrdiff_t>(hi));
  auto mean = [&](auto field) {
    double sum = 0;
    for (const StepSample* s : kept) sum += field(*s);
    return kept.empty() ? 0 : sum / static_cast<double>(kept.size());
  };
  for (size_t k = 0; k < count; ++k) {
    LayerTime& l = r.layers[k];
    l.forward_ms = mean([k](const StepSample& s) { return s.forward[k]; });
    l.backward_ms = mean([k](const StepSample& s) { return s.backward[k]; });
    for (const StepSample& s : samples) l.has_backward = l.has_backward || s.has_backward[k];
    if (!samples.empty()) {
      l.output_bytes = samples.back().output_bytes[k];
      l.forward_alloc_bytes = samples.back().alloc[k];
    }
  }
  r.loss_forward_ms = mean([](const StepSample& s) { return s.loss_forward; });
  r.loss_backward_ms = mean([](const StepSample& s) { return s.loss_backward; });
  r.profiled_step_ms = mean([](const StepSample& s) { return s.total; });
  r.outside_ms = mean([](const StepSample& s) {
    double timed = s.loss_forward + s.loss_backward;
    for (size_t k = 0; k < s.forward.size(); ++k) timed += s.forward[k] + s.backward[k];
    return s.total - timed;
  });
  r.step_ms = interquartile_mean(plain);
  const MemoryStats mem = backend->memory_stats();
  if (mem.tracked) r.peak_bytes = mem.peak_allocated;
  return r;
}

}  // namespace kiln::graph
