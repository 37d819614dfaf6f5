#include "engine/onnx/executor.h"

#include <chrono>
#include <mutex>
#include <set>

#include "engine/autograd/backward.h"
#include "engine/core/grad_mode.h"
#include "engine/core/read_only.h"
#include "engine/onnx/executor_fallback.h"
#include "engine/onnx/executor_graph.h"
#include "engine/onnx/fold.h"
#include "engine/onnx/host_values.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/profile.h"
#include "engine/onnx/rewrite.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

std::string UnsupportedOp::str() const {
  std::string s = domain.empty() ? op_type : domain + "." + op_type;
  return s + " (node '" + node + "', opset " + std::to_string(opset) + ")";
}

namespace {

using detail::device_lacks;
using detail::fallback_backend;
using detail::has_subgraph;
using detail::place;
using detail::values_on;

// Gradient-1 of ai.onnx.preview.training differentiates the graph it sits in, so the
// executor runs it itself (Runner::run_gradient) rather than an op of the tables.
bool is_gradient(const Node& n) { return n.domain == "ai.onnx.preview.training" && n.op_type == "Gradient"; }

int64_t opset_of(const Model& m, const std::string& domain) {
  auto it = m.opsets.find(domain);
  if (it == m.opsets.end() && domain.empty()) it = m.opsets.find("ai.onnx");
  return it == m.opsets.end() ? 0 : it->second;
}

void collect_unsupported(const Model& m, const Graph& g, std::vector<UnsupportedOp>& out) {
  const OpTable& ops = onnx_ops();
  const SequenceOpTable& seq = sequence_ops();
  for (const Node& n : g.nodes) {
    if (!ops.count(op_key(n)) && !seq.count(op_key(n)) && !is_gradient(n))
      out.push_back({n.op_type, n.name, n.domain, opset_of(m, n.domain)});
    for (const auto& [name, a] : n.attributes) {
      if (a.g) collect_unsupported(m, *a.g, out);
      for (const auto& sub : a.graphs) collect_unsupported(m, *sub, out);
    }
  }
}

// Every value a node reads must exist before it: checks the graph (and its subgraphs,
// which also see the names of the enclosing scopes).
void check_defined(const Graph& g, std::set<std::string> scope) {
  for (const auto& [name, t] : g.initializers) scope.insert(name);
  for (const auto& v : g.inputs) scope.insert(v.name);
  for (const Node& n : g.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      KILN_CHECK(in.empty() || scope.count(in), ValueError, "node '", n.name, "' (", n.op_type, "): input ", i, " '",
                 in, "' is not a graph input, an initializer or the output of an earlier node");
    }
    for (const auto& [name, a] : n.attributes) {
      if (a.g) check_defined(*a.g, scope);
      for (const auto& sub : a.graphs) check_defined(*sub, scope);
    }
    for (const std::string& out : n.outputs)
      if (!out.empty()) scope.insert(out);
  }
  for (const auto& v : g.outputs)
    KILN_CHECK(scope.count(v.name), ValueError, "graph '", g.name, "': output '", v.name,
               "' is not produced by any node, initializer or input");
}

// Re-throws an engine error with the node's name in front, keeping its type.
[[noreturn]] void rethrow_with(const std::string& where, const std::exception& e) {
  std::string msg = where + ": " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
  if (dynamic_cast<const IndexError*>(&e)) throw IndexError(msg);
  if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(msg);
  if (dynamic_cast<const IoError*>(&e)) throw IoError(msg);
  throw ValueError(msg);
}

struct Scope {
  const Scope* parent = nullptr;
  std::map<std::string, Value> values;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

class Runner {
 public:
  // host: the main graph's nodes that run on the host (host_values.h); null: none.
  Runner(const Model& m, Device d, const SessionOptions& options, detail::FallbackLog* log,
         const Session::NodeObserver* observer = nullptr, const HostPlan* host = nullptr,
         HostCopies* copies = nullptr)
      : model_(m), device_(d), opset_(opset_of(m, "")), observer_(observer), host_(host), copies_(copies) {
    backend_ = fallback_backend(d, options);
    if (backend_) fallback_ = log;
  }

  std::vector<Value> run_graph(const Graph& g, Scope& scope) const {
    const HostPlan* host = &g == &model_.graph ? host_ : nullptr;
    for (const auto& [name, t] : g.initializers)
      if (!scope.values.count(name)) scope.values[name] = host && host->constants.count(name) ? t : place(t, device_, backend_);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (is_gradient(n)) run_gradient(g, n, scope);
      else run_node(n, scope, observer_ && &g == &model_.graph, host && host->nodes[k]);
    }
    std::vector<Value> outs;
    for (const auto& v : g.outputs) {
      const Value* t = scope.find(v.name);
      KILN_CHECK(t, ValueError, "graph output '", v.name, "' has no value");
      outs.push_back(*t);
    }
    return outs;
  }

 private:
  // Gradient-1 (ONNX spec, ai.onnx.preview.training): outputs d(y)/d(x) for each name x of
  // `xs`, the node's inputs being the values of xs then zs. The nodes before it that lead
  // from xs and zs to y are run again with autograd recording, and y is back-propagated with
  // a seed of ones (so a non-scalar y gives the gradient of its sum). An x that y does not
  // depend on gets zeros; an x whose path to y passes an op without a Kiln gradient is an error.
  void run_gradient(const Graph& g, const Node& n, Scope& scope) const {
    auto where = [&] { return "node '" + n.name + "' (Gradient)"; };
    auto strings_attr = [&](const char* name, bool required) {
      auto it = n.attributes.find(name);
      if (it == n.attributes.end()) {
        KILN_CHECK(!required, ValueError, where(), ": attribute '", name, "' is required but missing");
        return std::vector<std::string>{};
      }
      KILN_CHECK(it->second.type == Attribute::Type::Strings, ValueError, where(), ": attribute '", name,
                 "' must be STRINGS, got ", attribute_type_name(it->second.type));
      return it->second.strings;
    };
    std::vector<std::string> xs = strings_attr("xs", true), zs = strings_attr("zs", false);
    auto y_it = n.attributes.find("y");
    KILN_CHECK(y_it != n.attributes.end() && y_it->second.type == Attribute::Type::String, ValueError, where(),
               ": attribute 'y' (STRING) is required");
    const std::string& y_name = y_it->second.s;
    KILN_CHECK(n.inputs.size() == xs.size() + zs.size(), ValueError, where(), ": takes ", xs.size() + zs.size(),
               " inputs (xs then zs), got ", n.inputs.size());
    KILN_CHECK(n.outputs.size() <= xs.size(), ValueError, where(), ": ", n.outputs.size(), " outputs for ", xs.size(),
               " xs");
    std::set<std::string> leaves(xs.begin(), xs.end());
    leaves.insert(zs.begin(), zs.end());
    // the nodes before n on a path to y, stopping at xs and zs
    size_t at = 0;
    while (&g.nodes[at] != &n) ++at;
    std::set<std::string> needed{y_name};
    std::vector<bool> on_path(at, false);
    for (size_t k = at; k-- > 0;) {
      const Node& m = g.nodes[k];
      bool makes = false;
      for (const std::string& o : m.outputs) makes |= !o.empty() && needed.count(o) && !leaves.count(o);
      if (!makes) continue;
      on_path[k] = true;
      for (const std::string& i : m.inputs)
        if (!i.empty()) needed.insert(i);
    }
    Scope inner;
    inner.parent = &scope;
    std::vector<Tensor> x_leaf;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Value* v = scope.find(n.inputs[k]);
      KILN_CHECK(v && v->tensor.defined(), ValueError, where(), ": input '", n.inputs[k], "' has no tensor value");
      Tensor t = v->tensor.detach();
      if (k < xs.size()) {
        KILN_CHECK(is_floating(t.dtype()), DTypeError, where(), ": x '", xs[k], "' must be floating, got ",
                   dtype_name(t.dtype()));
        t = t.clone().requires_grad_(true);
        x_leaf.push_back(t);
      }
      inner.values[k < xs.size() ? xs[k] : zs[k - xs.size()]] = t;
    }
    Tensor y;
    {
      bool prev = GradMode::is_enabled();
      GradMode::set_enabled(true);
      try {
        for (size_t k = 0; k < at; ++k)
          if (on_path[k]) run_node(g.nodes[k], inner, false);
      } catch (...) {
        GradMode::set_enabled(prev);
        throw;
      }
      GradMode::set_enabled(prev);
      const Value* yv = inner.find(y_name);
      KILN_CHECK(yv && yv->tensor.defined(), ValueError, where(), ": y '", y_name, "' has no tensor value");
      y = yv->tensor;
    }
    if (y.requires_grad()) autograd::backward(y, Tensor::ones(y.shape(), y.dtype(), y.device()));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      Tensor grad = x_leaf[k].grad();
      if (!grad.defined()) {
        KILN_CHECK(!needed.count(xs[k]), ValueError, where(), ": y '", y_name, "' depends on x '", xs[k],
                   "' through an op that has no gradient in Kiln");
        grad = Tensor::zeros(x_leaf[k].shape(), x_leaf[k].dtype(), x_leaf[k].device());
      }
      scope.values[n.outputs[k]] = grad.detach();
    }
  }

  // on_host: a host node (host_values.h), run on the CPU; its inputs are already there, but
  // for Shape and Size, which read only their input's shape wherever it lies.
  void run_node(const Node& n, Scope& scope, bool observe, bool on_host = false) const {
    std::vector<Value> in;
    in.reserve(n.inputs.size());
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      const Value* t = scope.find(name);
      KILN_CHECK(t, ValueError, "node '", n.name, "' (", n.op_type, "): input '", name, "' has no value");
      in.push_back(*t);
    }
    std::vector<Tensor> observed_in;
    if (observe)
      for (const Value& v : in) observed_in.push_back(v.tensor);
    auto where = [&n] { return "node '" + n.name + "' (" + n.op_type + ")"; };
    std::vector<Value> out;
    const auto t0 = profile::enabled() ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    try {
      if (on_host) out = run_op(n, std::move(in), Device{}, scope);
      else if (fallback_ && !has_subgraph(n)) out = run_op_or_fallback(n, std::move(in), scope);
      else out = run_op(n, std::move(in), device_, scope);
    } catch (const std::exception& e) {
      if (std::string(e.what()).rfind("node '", 0) == 0) throw;  // already names a node
      rethrow_with(where(), e);
    }
    if (profile::enabled())
      profile::record(n.op_type, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      KILN_CHECK(i < out.size() && out[i].defined(), ValueError, where(), ": output ", i, " '", n.outputs[i],
                 "' is not computed by Kiln's ", n.op_type);
      scope.values[n.outputs[i]] = out[i];
    }
    if (observe) {
      std::vector<Tensor> observed_out;
      for (const Value& v : out) observed_out.push_back(v.tensor);
      (*observer_)(n, observed_in, observed_out);
    }
  }

  // Runs the node's op on `device` with inputs that are already there.
  std::vector<Value> run_op(const Node& n, std::vector<Value> in, Device device, Scope& scope) const {
    const OpTable& ops = onnx_ops();
    const SequenceOpTable& seq_ops = sequence_ops();
    auto it = ops.find(op_key(n));
    auto sit = seq_ops.find(op_key(n));  // ai.onnx ops by op_type, others "<domain>.<op_type>"
    KILN_CHECK(it != ops.end() || sit != seq_ops.end(), ValueError, "node '", n.name, "': unsupported op ",
               op_key(n));
    OpContext ctx(n, n.domain.empty() ? opset_ : opset_of(model_, n.domain), std::move(in), device, [this, &scope](const Graph& sub, const std::vector<Value>& v) {
      Scope inner;
      inner.parent = &scope;
      KILN_CHECK(v.size() <= sub.inputs.size(), ValueError, "subgraph '", sub.name, "' takes ", sub.inputs.size(),
                 " inputs, got ", v.size());
      for (size_t i = 0; i < v.size(); ++i) inner.values[sub.inputs[i].name] = v[i];
      return run_graph(sub, inner);
    });
    ctx.set_host_copies(copies_);
    if (sit != seq_ops.end()) return sit->second(ctx);  // ops on values of any kind take precedence
    std::vector<Tensor> t = it->second(ctx);
    return std::vector<Value>(t.begin(), t.end());
  }

  // The node on the device, or on the CPU when the device lacks what it needs (SessionOptions).
  std::vector<Value> run_op_or_fallback(const Node& n, std::vector<Value> in, Scope& scope) const {
    std::string why = device_lacks(in, device_, *backend_);
    if (why.empty() && !fallback_->counts(n)) {  // a node that fell back once goes straight to the CPU
      try {
        return run_op(n, in, device_, scope);
      } catch (const DTypeError& e) {  // the backend lacks an op or dtype (or the node is wrong: the CPU says)
        why = e.what();
      }
    }
    std::vector<Value> out = run_op(n, values_on(in, Device{}), Device{}, scope);
    fallback_->record(n, why);
    return values_on(out, device_, backend_);  // back to the device, unless it cannot hold the dtype
  }

  const Model& model_;
  Device device_;
  int64_t opset_;
  const Session::NodeObserver* observer_;
  Backend* backend_ = nullptr;                 // set with fallback_
  detail::FallbackLog* fallback_ = nullptr;    // null: no CPU fallback (the CPU, or turned off)
  const HostPlan* host_ = nullptr;
  HostCopies* copies_ = nullptr;  // a recorded run's device copies of host values (executor_graph.h)
};

}  // namespace

std::vector<UnsupportedOp> find_unsupported(const Model& model) {
  std::vector<UnsupportedOp> out;
  collect_unsupported(model, model.graph, out);
  return out;
}

Session::Session(Model model, Device device, SessionOptions options)
    : model_(std::move(model)), device_(device), options_(options), fallback_(std::make_shared<detail::FallbackLog>()) {
  std::vector<UnsupportedOp> bad = find_unsupported(model_);
  if (!bad.empty()) {
    std::string msg = std::to_string(bad.size()) + " unsupported op" + (bad.size() > 1 ? "s" : "") + ": ";
    for (size_t i = 0; i < bad.size(); ++i) msg += (i ? ", " : "") + bad[i].str();
    throw UnsupportedError(msg, std::move(bad));
  }
  for (const Node& n : model_.graph.nodes)
    if (n.domain.empty()) {
      model_.opset();  // ValueError when the model uses ai.onnx ops but imports no ai.onnx opset
      break;
    }
  check_defined(model_.graph, {});
  if (options_.optimize && device_.type == DeviceType::cpu) {
    // Shape arithmetic first (PyTorch's exports compute a reshape's target from Shape nodes in
    // every run), so that the fusions see constants where the values are constant. Only where
    // the input shapes are fixed (a model exported for batch 1): fold.h's two runs are a guess
    // about symbolic dimensions, fine for showing a graph, not for running it.
    const FoldReport folded = input_shapes_known(model_) ? fold_shape_subgraphs(model_) : FoldReport{};
    if (folded.removed_nodes > 0)
      rewrite_log_.push_back("FoldShapeSubgraphs: " + std::to_string(folded.removed_nodes) + " shape-only nodes folded into " +
                             std::to_string(folded.folded_values) + " constants");
    for (std::string& line : inference_passes().run(model_.graph)) rewrite_log_.push_back(std::move(line));
  }
  const Backend* fallback = fallback_backend(device_, options_);
  if (device_.type != DeviceType::cpu) {
    host_plan_ = std::make_shared<const HostPlan>(plan_host_values(model_.graph));
    captured_ = std::make_shared<detail::CapturedRuns>(device_, options_.cuda_graph);
  }
  for (auto& [name, t] : model_.graph.initializers)
    if (!host_plan_ || !host_plan_->constants.count(name)) t = place(t, device_, fallback);
  if (options_.optimize && device_.type == DeviceType::cpu) {
    // The convolutions' weights are constants of this session: a copy of its own (no Tensor
    // outside shares it), marked read-only so that the backend keeps them packed in its
    // kernels' layout (engine/core/read_only.h).
    for (const Node& n : model_.graph.nodes) {
      const bool conv = n.op_type == "Conv" && (n.domain.empty() || n.domain == kFusedDomain);  // rewrite_conv.cpp
      if (!conv || n.inputs.size() < 2) continue;
      auto it = model_.graph.initializers.find(n.inputs[1]);
      if (it == model_.graph.initializers.end() || !it->second.defined() || it->second.numel() == 0) continue;
      if (!packed_.insert(it->first).second) continue;  // read by an earlier Conv too
      it->second = it->second.contiguous().clone();
      mark_read_only(it->second);
    }
  }
}

std::string Session::cuda_graph_note() const { return captured_ ? captured_->note() : ""; }

FallbackStats Session::fallback_stats() const {
  std::lock_guard<std::mutex> lock(fallback_->mutex);
  return fallback_->stats;
}

std::vector<std::string> Session::input_names() const {
  std::vector<std::string> v;
  for (const auto& i : model_.graph.inputs) v.push_back(i.name);
  return v;
}

std::vector<std::string> Session::output_names() const {
  std::vector<std::string> v;
  for (const auto& o : model_.graph.outputs) v.push_back(o.name);
  return v;
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const { return run(inputs, nullptr); }

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs, const NodeObserver& observer) const {
  std::map<std::string, Value> values(inputs.begin(), inputs.end());
  std::vector<Value> out = run_values(values, observer);
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < out.size(); ++i) {
    KILN_CHECK(!out[i].is_sequence() && !out[i].is_strings(), ValueError, "model output '",
               model_.graph.outputs[i].name, "' is a ", out[i].is_strings() ? "STRING tensor" : "sequence",
               "; use Session::run_values");
    tensors.push_back(out[i].tensor);
  }
  return tensors;
}

std::vector<Value> Session::run_values(const std::map<std::string, Value>& inputs, const NodeObserver& observer) const {
  NoGradGuard no_grad;
  Scope scope;
  const Backend* fallback = fallback_backend(device_, options_);
  std::string names;
  for (const auto& v : model_.graph.inputs) names += (names.empty() ? "" : ", ") + v.name;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& v : model_.graph.inputs) known |= v.name == name;
    KILN_CHECK(known, ValueError, "'", name, "' is not an input of the model (inputs: ", names, ")");
    Value v = t;
    if (t.is_sequence()) {
      std::vector<Tensor> items;
      for (const Tensor& e : *t.sequence) items.push_back(place(e, device_, fallback));
      v = Value::of_sequence(std::move(items));
    } else if (t.tensor.defined()) {
      v = place(t.tensor, device_, fallback);
    }  // string tensors stay on the host
    v.optional = t.optional;
    scope.values[name] = v;
  }
  for (const auto& v : model_.graph.inputs) {
    KILN_CHECK(inputs.count(v.name), ValueError, "model input '", v.name, "' (", v.type_str(), ") is not given");
    const Value& val = inputs.at(v.name);
    if (v.is_optional && !val.has_element()) continue;
    KILN_CHECK(val.is_sequence() == v.is_sequence, ValueError, "model input '", v.name, "' expects ",
               v.is_sequence ? "a sequence" : "a tensor", ", got ", val.is_sequence() ? "a sequence" : "a tensor");
    if (!v.is_sequence && v.elem_type != 0 && val.tensor.defined()) {  // FLOAT vs an f64 .npy, before any node runs
      DType want = val.tensor.dtype();
      try {
        want = dtype_of_onnx(v.elem_type, "model input '" + v.name + "'");
      } catch (const Error&) {  // a type without an engine dtype: the nodes judge
      }
      KILN_CHECK(want == val.tensor.dtype(), DTypeError, "model input '", v.name, "' expects ", v.type_str(), " (",
                 dtype_name(want), "), got ", dtype_name(val.tensor.dtype()));
    }
    if (v.has_shape && !v.is_sequence) {
      const Shape& shape = val.is_strings() ? val.strings->shape : val.tensor.shape();
      bool ok = shape.size() == v.shape.size();
      for (size_t i = 0; ok && i < v.shape.size(); ++i) ok = !v.shape[i].known() || v.shape[i].value == shape[i];
      KILN_CHECK(ok, ShapeError, "model input '", v.name, "' expects ", v.type_str(), ", got ", shape_str(shape));
    }
  }
  auto run = [&](const std::map<std::string, Value>& placed, HostCopies* copies) {
    Scope s;
    s.values = placed;
    Runner runner(model_, device_, options_, fallback_.get(), observer ? &observer : nullptr, host_plan_.get(), copies);
    return runner.run_graph(model_.graph, s);
  };
  if (captured_ && !observer) return captured_->run(scope.values, run);
  return run(scope.values, nullptr);
}

}  // namespace kiln::onnx
