#include "engine/graph/device_compare.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/step_time.h"
#include "engine/optim/adam.h"
#include "engine/train/mixed_precision.h"
#include "engine/train/step_timing.h"

namespace kiln::graph {

namespace {

// The CPU f32 reference: parameters and buffers, outputs and gradients, all on the CPU.
struct Reference {
  nn::StateDict state;                    // cloned, so later steps cannot change it
  std::vector<Tensor> outputs;            // eval mode, no autograd
  std::vector<std::pair<std::string, Tensor>> grads;  // trainable parameters' gradients, eval mode
};

// Largest |a - b| over two tensors of one shape, in f64 on the CPU.
double max_abs_diff(const Tensor& a, const Tensor& b, const std::string& what) {
  KILN_CHECK(a.shape() == b.shape(), ShapeError, what, ": shape ", shape_str(a.shape()), " differs from the reference's ",
             shape_str(b.shape()));
  const std::vector<double> x = a.to(Device()).to_vector<double>(), y = b.to(Device()).to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(x[i] - y[i]);
    if (std::isnan(d)) return d;  // NaN on one side only (or both): reported as NaN, not hidden
    m = std::max(m, d);
  }
  return m;
}

// Outputs (eval, no autograd) and gradients (eval, one backward) of `model` on `inputs`.
void check_pass(GraphModule& model, const std::vector<Tensor>& inputs, StepLoss& loss, std::vector<Tensor>& outputs,
                std::vector<std::pair<std::string, Tensor>>& grads) {
  model.eval();
  {
    NoGradGuard no_grad;
    outputs = model.forward(inputs);
  }
  model.zero_grad();
  loss(model.forward(inputs)).backward();
  for (const auto& [name, p] : model.named_parameters())
    if (p.requires_grad() && p.grad().defined()) grads.emplace_back(name, p.grad());
}

CompareRow run_row(const Graph& g, const CompareTarget& target, const CompareOptions& o, const Reference& ref,
                   const std::vector<Tensor>& cpu_inputs, const std::function<bool()>& stop) {
  CompareRow row;
  row.device = target.device;
  row.precision = target.precision;
  const Device dev = Device::parse(target.device);  // DeviceError / ValueError on a bad name
  Backend* backend = backend_for(dev);              // DeviceError naming the devices found
  const DeviceInfo info = backend->info();
  row.name = info.name;
  row.kind = info.kind;
  const train::PrecisionPlan plan = train::plan_precision(target.precision, dev);
  KILN_CHECK(plan.note.empty(), ValueError, target.precision, " on ", dev.str(), ": ", plan.note);
  if (plan.autocast) {
    KILN_CHECK(backend->supports(OpId::matmul, *plan.autocast), ValueError, dev.str(), " does not run matmul in ",
               target.precision);
  }
  AutocastGuard autocast_scope(plan.autocast);

  auto model = std::make_shared<GraphModule>(g);
  model->load_state_dict(ref.state);
  model->to(dev);
  std::vector<Tensor> inputs;
  for (const Tensor& t : cpu_inputs) inputs.push_back(t.to(dev));
  Generator gen(2);
  StepLoss loss(g, model->analysis(), o.batch, dev, gen);

  // 1. the check against the reference
  std::vector<Tensor> outputs;
  std::vector<std::pair<std::string, Tensor>> grads;
  check_pass(*model, inputs, loss, outputs, grads);
  double out_diff = 0, grad_diff = 0;
  for (size_t i = 0; i < outputs.size(); ++i)
    out_diff = std::max(out_diff, max_abs_diff(outputs[i], ref.outputs.at(i), "output " + std::to_string(i)));
  KILN_CHECK(grads.size() == ref.grads.size(), ValueError, dev.str(), " gave gradients for ", grads.size(),
             " parameters, the reference for ", ref.grads.size());
  for (size_t i = 0; i < grads.size(); ++i)
    grad_diff = std::max(grad_diff, max_abs_diff(grads[i].second, ref.grads[i].second, "gradient of " + grads[i].first));
  row.max_output_diff = out_diff;
  row.max_grad_diff = grad_diff;
  model->zero_grad();

  // 2. inference
  const double batch = static_cast<double>(o.batch);
  {
    NoGradGuard no_grad;
    auto infer = [&] {
      std::vector<Tensor> out = model->forward(inputs);
      double s = 0;
      for (const Tensor& t : out) s += sum(t).item<double>();
      (void)s;
    };
    for (int i = 0; i < o.warmup && !stop(); ++i) infer();
    const train::TimedSteps t = train::time_steps(dev, o.steps, infer, stop);
    row.infer_ms = t.ms;
    row.infer_steps = t.done;
    row.infer_samples_per_second = t.ms > 0 ? batch * 1000.0 / t.ms : 0;
  }

  // 3. training
  model->train();
  optim::Adam opt(model->trainable_parameters(), optim::AdamOptions{});
  auto step = [&] { train::train_step(opt, [&] { return loss(model->forward(inputs)); }); };
  for (int i = 0; i < o.warmup && !stop(); ++i) step();
  const train::TimedSteps t = train::time_steps(dev, o.steps, step, stop);
  row.train_ms = t.ms;
  row.train_steps = t.done;
  row.train_samples_per_second = t.ms > 0 ? batch * 1000.0 / t.ms : 0;
  row.cancelled = row.infer_steps < o.steps || row.train_steps < o.steps;

  const MemoryStats mem = backend->memory_stats();
  if (mem.tracked) row.peak_bytes = mem.peak_allocated;
  return row;
}

}  // namespace

std::vector<std::string> compare_precisions(const Device& device) {
  Backend* backend = backend_for(device);
  std::vector<std::string> out{"f32"};
  for (const char* p : {"bf16", "f16"}) {
    const train::PrecisionPlan plan = train::plan_precision(p, device);
    if (plan.note.empty() && plan.autocast && backend->supports(OpId::matmul, *plan.autocast)) out.emplace_back(p);
  }
  return out;
}

std::vector<CompareRow> compare_devices(const Graph& g, const std::vector<CompareTarget>& targets,
                                        const CompareOptions& o, const std::function<bool()>& cancelled,
                                        const std::function<void(const CompareRow&)>& on_row) {
  KILN_CHECK(o.batch >= 1, ValueError, "the batch size must be at least 1, got ", o.batch);
  KILN_CHECK(o.steps >= 1 && o.warmup >= 0, ValueError, "comparing needs steps >= 1 and warmup >= 0, got ", o.steps,
             " and ", o.warmup);
  auto stop = [&cancelled] { return cancelled && cancelled(); };

  // The CPU f32 reference (ValueError naming the nodes when the graph cannot run).
  Reference ref;
  std::vector<Tensor> inputs;
  {
    AutocastGuard f32(std::nullopt);
    GraphModule model(g);
    for (const auto& [name, t] : model.state_dict()) ref.state.emplace_back(name, t.clone());
    Generator gen(1);
    inputs = random_inputs(g, model.analysis(), o.batch, Device(), gen);
    Generator labels(2);
    StepLoss loss(g, model.analysis(), o.batch, Device(), labels);
    check_pass(model, inputs, loss, ref.outputs, ref.grads);
  }

  std::vector<CompareRow> rows;
  for (const CompareTarget& target : targets) {
    if (stop()) {
      CompareRow skipped;
      skipped.device = target.device;
      skipped.precision = target.precision;
      skipped.cancelled = true;
      rows.push_back(skipped);
      continue;
    }
    CompareRow row;
    try {
      row = run_row(g, target, o, ref, inputs, stop);
    } catch (const std::exception& e) {
      row.error = e.what();
    }
    row.device = target.device;
    row.precision = target.precision;
    if (!row.error.empty() && stop()) row.cancelled = true;
    if (on_row) on_row(row);
    rows.push_back(row);
  }

  const CompareRow* cpu = nullptr;
  for (const CompareRow& r : rows)
    if (r.error.empty() && r.infer_steps > 0 && r.train_steps > 0 && r.precision == "f32" &&
        Device::parse(r.device).type == DeviceType::cpu) {
      cpu = &r;
      break;
    }
  if (cpu)
    for (CompareRow& r : rows) {
      if (cpu->infer_ms > 0 && r.infer_ms > 0) r.infer_speedup_vs_cpu = cpu->infer_ms / r.infer_ms;
      if (cpu->train_ms > 0 && r.train_ms > 0) r.train_speedup_vs_cpu = cpu->train_ms / r.train_ms;
    }
  return rows;
}

}  // namespace kiln::graph
