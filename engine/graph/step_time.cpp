#include "engine/graph/step_time.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/graph/graph_module.h"
#include "engine/nn/functional.h"
#include "engine/optim/factory.h"
#include "engine/train/step_timing.h"

namespace kiln::graph {

std::vector<Tensor> random_inputs(const Graph& g, const Analysis& a, int64_t batch, const Device& device,
                                  Generator& gen) {
  int64_t vocab = 0;
  for (const Node& n : g.nodes())
    if (n.op == "Embedding") {
      const auto it = n.attrs.find("num_embeddings");
      const int64_t* v = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
      if (v) vocab = vocab == 0 ? *v : std::min(vocab, *v);
    }
  std::vector<Tensor> inputs;
  for (NodeId id : g.input_nodes()) {
    const TensorType& t = a.nodes.at(id).outputs.at(0);
    Shape shape;
    for (int64_t d : t.shape) {
      KILN_CHECK(d == kBatch || !is_symbolic(d), ValueError, "input '", g.node(id).name, "' ", shape_str(t.shape),
                 " has the symbolic dimension '", dim_str(d), "': no size to measure a step with");
      shape.push_back(d == kBatch ? batch : d);
    }
    if (is_floating(t.dtype)) {
      inputs.push_back(uniform(shape, 0, 1, t.dtype, Device(), &gen).to(device));
    } else {
      const double high = static_cast<double>(std::max<int64_t>(vocab, 2));
      inputs.push_back(uniform(shape, 1, high, DType::f32, Device(), &gen).to(t.dtype).to(device));
    }
  }
  return inputs;
}

StepLoss::StepLoss(const Graph& g, const Analysis& a, int64_t batch, const Device& device, Generator& gen)
    : device_(device) {
  for (NodeId id : g.output_nodes()) {
    const auto src = g.source_of({id, 0});
    const TensorType t = a.type_of(*src).value();
    const bool k = t.shape.size() == 2 && t.shape[0] == kBatch && t.shape[1] >= 2 && is_floating(t.dtype);
    classify_.push_back(k);
    if (k) {
      targets_.push_back(uniform({batch}, 0, static_cast<double>(t.shape[1]), DType::f32, Device(), &gen)
                             .to(DType::i64).to(device));
    } else {
      targets_.push_back(Tensor());  // zeros of the output's shape, made at the first call
    }
  }
}

Tensor StepLoss::operator()(const std::vector<Tensor>& out) {
  KILN_CHECK(out.size() == targets_.size(), ValueError, "the loss expects ", targets_.size(), " outputs, got ",
             out.size());
  Tensor total;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!classify_[i] && !targets_[i].defined()) targets_[i] = Tensor::zeros(out[i].shape(), out[i].dtype(), device_);
    Tensor l = classify_[i] ? nn::F::cross_entropy(out[i], targets_[i]) : nn::F::mse_loss(out[i], targets_[i]);
    total = total.defined() ? add(total, l) : l;
  }
  return total;
}

StepTime measure_step_time(const Graph& g, const Device& device, const StepTimeOptions& o,
                           const std::function<bool()>& cancelled) {
  KILN_CHECK(o.batch >= 1, ValueError, "the batch size must be at least 1, got ", o.batch);
  KILN_CHECK(o.steps >= 1 && o.warmup >= 0, ValueError, "measuring needs steps >= 1 and warmup >= 0, got ", o.steps,
             " and ", o.warmup);
  Backend* backend = backend_for(device);  // DeviceError naming the devices found
  auto model = std::make_shared<GraphModule>(g);  // ValueError naming the problems
  const Analysis& a = model->analysis();
  model->to(device);
  model->train();
  optim::OptimizerConfig config;
  config.name = o.optimizer;
  std::shared_ptr<optim::Optimizer> opt = optim::make_optimizer(config, model->trainable_parameters());
  Generator gen(1);
  const std::vector<Tensor> inputs = random_inputs(g, a, o.batch, device, gen);
  StepLoss step_loss(g, a, o.batch, device, gen);
  auto loss = [&] { return step_loss(model->forward(inputs)); };
  auto stop = [&cancelled] { return cancelled && cancelled(); };
  auto step = [&] { train::train_step(*opt, loss); };
  StepTime r;
  r.device = device;
  for (int i = 0; i < o.warmup && !stop(); ++i) step();
  const train::TimedSteps t = train::time_steps(device, o.steps, step, stop);
  r.steps = t.done;
  r.cancelled = t.done < o.steps;
  r.ms_per_step = t.ms;
  r.images_per_second = t.ms > 0 ? static_cast<double>(o.batch) * 1000.0 / t.ms : 0.0;
  const MemoryStats mem = backend->memory_stats();
  r.peak_known = mem.tracked;
  r.peak_bytes = mem.tracked ? mem.peak_allocated : 0;
  return r;
}

}  // namespace kiln::graph
