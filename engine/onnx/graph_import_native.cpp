#include "engine/onnx/graph_import_native.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/op_schema.h"
#include "engine/onnx/graph_import_sequence.h"

namespace kiln::onnx::detail {

namespace {

using graph::OnnxMapping;
using graph::OnnxNodeView;
using graph::PortRef;

using Use = ValueUse;

class Builder {
 public:
  explicit Builder(NativeImportContext& ctx) : ctx_(ctx) {
    for (const ValueInfo& v : ctx.g.outputs) graph_outputs_.insert(v.name);
  }

  void run(bool native) {
    const auto& nodes = ctx_.g.nodes;
    for (size_t k = 0; native && k < nodes.size(); ++k) {  // Identity of a constant: the constant itself
      const Node& n = nodes[k];
      if (n.op_type == "Identity" && n.inputs.size() == 1 && n.outputs.size() == 1 && n.domain.empty() &&
          ctx_.constants.count(resolve(n.inputs[0])) && !graph_outputs_.count(n.outputs[0])) {
        alias_[n.outputs[0]] = resolve(n.inputs[0]);
        done_.insert(k);
      }
    }
    for (size_t k = 0; k < nodes.size(); ++k)
      for (size_t i = 0; i < nodes[k].inputs.size(); ++i)
        if (!nodes[k].inputs[i].empty() && !done_.count(k)) uses_[resolve(nodes[k].inputs[i])].push_back({k, i});
    if (native) {
      plan_fusions();
      plan_sequence_fusions();
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Node& n = nodes[k];
      if (n.op_type == "Constant" || done_.count(k)) continue;
      if (!native) {
        add_onnx(n);
        continue;
      }
      if (seq_.removed.count(k)) continue;  // layout changes, mask arithmetic (graph_import_sequence.h)
      if (auto it = seq_.fusions.find(k); it != seq_.fusions.end()) {
        const SequenceFusion& f = it->second;
        const Node& bottom = f.layers.empty() ? n : nodes[f.layers[0]];
        std::optional<Prepared> p = f.layers.size() > 1 ? prepare_stack(f) : prepare(n, f.view);
        KILN_CHECK(p, ValueError, "node '", n.name, "' (", n.op_type, "): its planned native form no longer maps");
        const graph::NodeId id = commit(bottom, f.view, f.inputs, std::move(*p), f.output);
        for (const std::string& a : f.aliases) ctx_.producer[a] = {id, 0};
        if (!f.last_step.empty()) {
          const graph::NodeId last = ctx_.out.add_node("SequencePool", ctx_.identifier(n.name + "_last"),
                                                       {{"mode", std::string("last")}});
          ctx_.out.connect({id, 0}, {last, 0});
          for (const std::string& a : f.last_step) ctx_.producer[a] = {last, 0};
        }
        continue;
      }
      if (n.domain.empty() && (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN")) {
        add_onnx(n);  // its layout changes did not fit (warned): the plain node is time-major
        continue;
      }
      if (auto it = gelu_.find(k); it != gelu_.end()) {  // the chain's last node
        const std::string& x = it->second.x;
        if (!try_native(n, view(n, "Gelu", {x}, n.outputs), {x}))
          for (size_t i : it->second.nodes) add_single(nodes[i]);
        continue;
      }
      if (deferred_.count(k)) continue;  // the Sigmoid of x * Sigmoid(x) and GELU chains: with their last node
      if (n.op_type == "Identity" && n.inputs.size() == 1 && !n.inputs[0].empty() && n.outputs.size() == 1 &&
          !graph_outputs_.count(n.outputs[0])) {
        ctx_.producer[n.outputs[0]] = port_of(n.inputs[0]);  // removed
        continue;
      }
      if (auto it = silu_.find(k); it != silu_.end()) {
        const Node& sigmoid = nodes[it->second];
        OnnxNodeView v = view(n, "kiln.Silu", {sigmoid.inputs[0]}, n.outputs);
        if (!try_native(n, v, {sigmoid.inputs[0]})) {
          add_single(sigmoid);
          add_single(n);
        }
        continue;
      }
      if (auto it = bias_add_.find(k); it != bias_add_.end()) {
        const Node& add = nodes[it->second];
        const std::string& bias = add.inputs[0] == n.outputs[0] ? add.inputs[1] : add.inputs[0];
        std::vector<std::string> inputs{n.inputs[0], n.inputs[1], bias};
        OnnxNodeView v = view(n, "MatMul", inputs, add.outputs);
        if (try_native(n, v, inputs, &add)) {
          done_.insert(it->second);
          continue;
        }
      }
      add_single(n);
    }
    for (const ValueInfo& v : ctx_.g.outputs) {
      graph::NodeId id = ctx_.out.add_node("Output", ctx_.identifier(v.name));
      ctx_.out.connect(port_of(v.name), {id, 0});
    }
  }

 private:
  // The value an Identity of a constant passes on: that constant's name; else `value`.
  std::string resolve(const std::string& value) const {
    auto it = alias_.find(value);
    return it == alias_.end() ? value : it->second;
  }

  // The graph port that holds `raw`: a producer, or a new onnx.Initializer node for a constant.
  PortRef port_of(const std::string& raw) {
    const std::string value = resolve(raw);
    if (auto it = ctx_.producer.find(value); it != ctx_.producer.end()) return it->second;
    const Tensor& t = ctx_.constants.at(value);
    graph::Attributes a{{"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                        {"dtype", std::string(dtype_name(t.dtype()))},
                        {"trainable", ctx_.trainable.count(value) > 0},
                        {"onnx_name", value}};
    const std::string name = ctx_.identifier(value);
    PortRef p{ctx_.out.add_node("onnx.Initializer", name, a), 0};
    ctx_.out.initial_state[name + ".value"] = t;
    ctx_.producer[value] = p;
    return p;
  }

  void add_onnx(const Node& n) {
    for (const std::string& in : n.inputs)
      if (!in.empty()) ctx_.producer[in] = port_of(in);
    ctx_.add_onnx_node(n);
  }

  void add_single(const Node& n) {
    if (!try_native(n, view(n, n.op_type, n.inputs, n.outputs), n.inputs)) add_onnx(n);
  }

  bool read(const std::string& value) const { return uses_.count(value) || graph_outputs_.count(value); }
  bool read_once_by_node(const std::string& value) const {
    auto it = uses_.find(value);
    return it != uses_.end() && it->second.size() == 1 && !graph_outputs_.count(value);
  }

  // The value's constant when it is a one-element floating constant equal to `want` (1e-6 relative).
  bool scalar_is(const std::string& value, double want) const {
    auto it = ctx_.constants.find(resolve(value));
    if (it == ctx_.constants.end() || it->second.numel() != 1 || !is_floating(it->second.dtype())) return false;
    return std::abs(it->second.to_vector<double>()[0] - want) <= 1e-6 * std::abs(want);
  }
  // The node of type op (ai.onnx, two inputs) that is the only reader of `value`; -1 if none.
  long only_reader(const std::string& value, const char* op) const {
    if (!read_once_by_node(value)) return -1;
    const Use u = uses_.at(value)[0];
    const Node& r = ctx_.g.nodes[u.node];
    return r.op_type == op && r.domain.empty() && r.inputs.size() == 2 ? static_cast<long>(u.node) : -1;
  }
  static const std::string& other_input(const Node& n, const std::string& value) {
    return n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
  }

  // Erf node k in torch.onnx's export of F.gelu (approximate "none"), export_gelu's form too:
  // x / sqrt 2 (or x * (1 / sqrt 2)), Erf, + 1, then * x and * 0.5 in either order; each
  // intermediate read once. Planned as one GELU carried by the chain's last node.
  void plan_gelu(size_t k, const std::map<std::string, size_t>& made_by) {
    const auto& nodes = ctx_.g.nodes;
    const Node& erf = nodes[k];
    if (erf.inputs.size() != 1 || erf.outputs.size() != 1 || !read_once_by_node(erf.inputs[0])) return;
    auto d_it = made_by.find(erf.inputs[0]);
    if (d_it == made_by.end()) return;
    const Node& d = nodes[d_it->second];
    std::string x;
    if (d.op_type == "Div" && d.inputs.size() == 2 && scalar_is(d.inputs[1], std::sqrt(2.0))) x = d.inputs[0];
    for (size_t i = 0; d.op_type == "Mul" && d.inputs.size() == 2 && i < 2; ++i)
      if (scalar_is(d.inputs[i], 1 / std::sqrt(2.0))) x = d.inputs[1 - i];
    if (x.empty() || !d.domain.empty() || ctx_.constants.count(resolve(x))) return;
    const long add = only_reader(erf.outputs[0], "Add");
    if (add < 0 || !scalar_is(other_input(nodes[static_cast<size_t>(add)], erf.outputs[0]), 1.0)) return;
    const std::string& a = nodes[static_cast<size_t>(add)].outputs[0];
    const long m1 = only_reader(a, "Mul");
    if (m1 < 0) return;
    const std::string& partner = other_input(nodes[static_cast<size_t>(m1)], a);
    std::vector<size_t> chain{d_it->second, k, static_cast<size_t>(add), static_cast<size_t>(m1)};
    if (partner == x) {  // (x * (erf + 1)) * 0.5
      const std::string& xa = nodes[static_cast<size_t>(m1)].outputs[0];
      const long m2 = only_reader(xa, "Mul");
      if (m2 < 0 || !scalar_is(other_input(nodes[static_cast<size_t>(m2)], xa), 0.5)) return;
      chain.push_back(static_cast<size_t>(m2));
    } else {  // (x * 0.5) * (erf + 1)
      auto h_it = made_by.find(partner);
      if (h_it == made_by.end() || !read_once_by_node(partner)) return;
      const Node& h = nodes[h_it->second];
      if (h.op_type != "Mul" || !h.domain.empty() || h.inputs.size() != 2 || other_input(h, x) == x ||
          (h.inputs[0] != x && h.inputs[1] != x) || !scalar_is(other_input(h, x), 0.5))
        return;
      chain.push_back(h_it->second);
    }
    std::sort(chain.begin(), chain.end());
    for (size_t i : chain)
      if (nodes[i].outputs.size() != 1 || deferred_.count(i) || done_.count(i) || gelu_.count(i)) return;
    for (size_t i = 0; i + 1 < chain.size(); ++i) deferred_.insert(chain[i]);
    gelu_[chain.back()] = {x, chain};
  }

  // x * Sigmoid(x) -> SiLU; Erf's chain -> GELU; MatMul(x, W) + b -> Linear (OnnxNodeView).
  void plan_fusions() {
    const auto& nodes = ctx_.g.nodes;
    std::map<std::string, size_t> made_by;
    for (size_t k = 0; k < nodes.size(); ++k)
      for (const std::string& o : nodes[k].outputs)
        if (!o.empty()) made_by[o] = k;
    for (size_t k = 0; k < nodes.size(); ++k)
      if (nodes[k].op_type == "Erf" && nodes[k].domain.empty()) plan_gelu(k, made_by);
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Node& n = nodes[k];
      if (deferred_.count(k) || gelu_.count(k)) continue;
      if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0].empty() || !read_once_by_node(n.outputs[0])) continue;
      const Use use = uses_.at(n.outputs[0])[0];
      const Node& next = nodes[use.node];
      if (next.inputs.size() != 2 || !next.domain.empty()) continue;
      const std::string& other = next.inputs[1 - use.input];
      if (n.op_type == "Sigmoid" && next.op_type == "Mul" && other == n.inputs[0]) {
        silu_[use.node] = k;
        deferred_.insert(k);
      } else if (n.op_type == "MatMul" && next.op_type == "Add" && n.inputs.size() == 2 &&
                 ctx_.constants.count(resolve(n.inputs[1])) && ctx_.constants.count(resolve(other)) &&
                 next.outputs.size() == 1) {
        bias_add_[k] = use.node;
      }
    }
  }

  OnnxNodeView view(const Node& n, const std::string& op_type, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) const {
    OnnxNodeView v;
    v.op_type = op_type;
    v.name = n.name;
    v.opset = ctx_.opset;
    for (const auto& [name, a] : n.attributes) {
      switch (a.type) {
        case Attribute::Type::Int: v.attributes[name] = a.i; break;
        case Attribute::Type::Float: v.attributes[name] = a.f; break;
        case Attribute::Type::String: v.attributes[name] = a.s; break;
        case Attribute::Type::Ints: v.attributes[name] = a.ints; break;
        case Attribute::Type::Strings: v.string_lists[name] = a.strings; break;
        default: v.other_attributes.push_back(name);
      }
    }
    for (const std::string& in : inputs) {
      OnnxNodeView::Input i;
      i.present = !in.empty();
      if (i.present) {
        i.type = ctx_.types.at(in);
        if (auto it = ctx_.constants.find(resolve(in)); it != ctx_.constants.end()) i.constant = it->second;
      }
      v.inputs.push_back(i);
    }
    for (const std::string& o : outputs) {
      v.outputs.push_back(o.empty() || !ctx_.types.count(o) ? graph::TensorType{} : ctx_.types.at(o));
      v.outputs_read.push_back(!o.empty() && read(o));
    }
    return v;
  }

  void warn(const Node& n, const std::string& why) {
    std::string w = "node '" + n.name + "' (" + n.op_type + ") stays onnx." + n.op_type + ": " + why;
    if (ctx_.warnings.empty() || ctx_.warnings.back() != w) ctx_.warnings.push_back(std::move(w));  // fused, then alone
  }

  // The native form of view `v` of ONNX node `n`: its schema, mapping and attributes after every
  // check (each failure warned, naming the node); nullopt when it stays onnx.<Op>.
  struct Prepared {
    const graph::OpSchema* s;
    OnnxMapping m;
    graph::Attributes attrs;
  };
  std::optional<Prepared> prepare(const Node& n, const OnnxNodeView& v) {
    if (!n.domain.empty()) return std::nullopt;
    const graph::OpSchema* s = graph::OpRegistry::global().onnx_claimant(v.op_type);
    if (!s) return std::nullopt;
    if (!v.other_attributes.empty()) {
      warn(n, "attribute '" + v.other_attributes[0] + "' has a type the mapping does not read");
      return std::nullopt;
    }
    graph::OnnxMapResult r = s->onnx_import.map(v);
    if (const auto* why = std::get_if<std::string>(&r)) {
      warn(n, *why);
      return std::nullopt;
    }
    OnnxMapping& m = std::get<OnnxMapping>(r);
    if (!m.op.empty()) s = &graph::OpRegistry::global().get(m.op);
    std::vector<graph::TensorType> in_types;
    for (size_t i : m.data_inputs) {
      if (i >= v.inputs.size() || !v.inputs[i].present) {
        warn(n, "input " + std::to_string(i) + " is missing");
        return std::nullopt;
      }
      in_types.push_back(v.inputs[i].type);
    }
    for (size_t i = 0; i < v.inputs.size(); ++i)
      if (v.inputs[i].present && !v.inputs[i].constant.defined() &&
          std::find(m.data_inputs.begin(), m.data_inputs.end(), i) == m.data_inputs.end()) {
        warn(n, "input " + std::to_string(i) + " is computed at run time, the native " + s->name + " holds it as a constant");
        return std::nullopt;
      }
    const graph::Attributes attrs = s->with_defaults(m.attrs);
    if (auto why = s->check_attrs(attrs)) {
      warn(n, "as " + s->name + ": " + *why);
      return std::nullopt;
    }
    try {
      std::vector<graph::TensorType> got = s->infer(in_types, attrs);
      if (got.empty() || v.outputs.empty() || got[0] != v.outputs.at(0)) {
        warn(n, "the native " + s->name + " gives " + (got.empty() ? std::string("nothing") : got[0].str()) +
                    ", the model computes " + (v.outputs.empty() ? std::string("nothing") : v.outputs[0].str()));
        return std::nullopt;
      }
      if (!m.state.empty()) {
        const nn::StateDict built = s->build(in_types, attrs)->state_dict();
        for (const auto& [key, t] : m.state) {
          auto it = std::find_if(built.begin(), built.end(), [&](const auto& e) { return e.first == key; });
          if (it == built.end() || it->second.shape() != t.shape() || it->second.dtype() != t.dtype()) {
            warn(n, "its " + key + " " + t.str() + " does not fit the native " + s->name +
                        (it == built.end() ? std::string(" (no such entry)") : " (" + it->second.str() + ")"));
            return std::nullopt;
          }
        }
      }
    } catch (const Error& e) {
      warn(n, "as " + s->name + ": " + e.what());
      return std::nullopt;
    }
    return Prepared{s, std::move(m), attrs};
  }

  // Stacked recurrent layers (Note [Stacked layers]) as one native node: each layer's mapping
  // (num_layers 1, parameters *_l0) with layer k's parameters renamed *_l<k>, num_layers = L.
  std::optional<Prepared> prepare_stack(const SequenceFusion& f) {
    std::optional<Prepared> all;
    for (size_t k = 0; k < f.layers.size(); ++k) {
      const Node& n = ctx_.g.nodes[f.layers[k]];
      std::optional<Prepared> p = prepare(n, f.layer_views[k]);
      if (!p) return std::nullopt;
      if (k == 0) {
        all = std::move(p);
        continue;
      }
      for (auto& [key, t] : p->m.state) {
        std::string renamed = key;
        const size_t at = renamed.find("_l0");
        KILN_CHECK(at != std::string::npos, ValueError, "node '", n.name, "' (", n.op_type, "): parameter '", key,
                   "' names no layer");
        renamed.replace(at, 3, "_l" + std::to_string(k));
        all->m.state[renamed] = t;
      }
    }
    all->m.attrs["num_layers"] = static_cast<int64_t>(f.layers.size());
    all->attrs["num_layers"] = static_cast<int64_t>(f.layers.size());
    const OnnxNodeView& top = f.layer_views.back();
    std::vector<graph::TensorType> got = all->s->infer({f.view.inputs.at(0).type}, all->attrs);
    const nn::StateDict built = all->s->build({f.view.inputs.at(0).type}, all->attrs)->state_dict();
    bool fits = !got.empty() && got[0] == top.outputs.at(0) && built.size() == all->m.state.size();
    for (const auto& [key, t] : built) {
      auto it = all->m.state.find(key);
      fits = fits && it != all->m.state.end() && it->second.shape() == t.shape();
    }
    KILN_CHECK(fits, ValueError, "node '", f.view.name, "' (", f.view.op_type, "): its ", f.layers.size(),
               " stacked layers do not fit one native ", all->s->name);
    return all;
  }

  // Adds prepared native node `p` of ONNX node `n` (view `v`, its value names `inputs` by ONNX
  // input index); its output becomes value `out` ("": none).
  graph::NodeId commit(const Node& n, const OnnxNodeView& v, const std::vector<std::string>& inputs, Prepared p,
                       const std::string& out) {
    OnnxMapping& m = p.m;
    // Shared initializers: each native consumer gets its own copy.
    for (size_t i = 0; i < v.inputs.size(); ++i) {
      if (!v.inputs[i].constant.defined() || std::find(m.data_inputs.begin(), m.data_inputs.end(), i) != m.data_inputs.end())
        continue;
      const auto& users = uses_.at(resolve(inputs[i]));
      bool held = false;  // a state entry of this node (not only read as an attribute, like Clip's bounds)
      for (auto& [key, t] : m.state)
        if (t.impl()->storage == v.inputs[i].constant.impl()->storage) held = true;
      if (users.size() > 1 && held) {
        std::string names;
        size_t listed = 0;
        for (const Use& u : users)
          if (&ctx_.g.nodes[u.node] != &n && listed++ < 3) names += (names.empty() ? "'" : ", '") + ctx_.g.nodes[u.node].name + "'";
        if (listed > 3) names += " and " + std::to_string(listed - 3) + " more";
        ctx_.warnings.push_back("initializer '" + resolve(inputs[i]) + "' is shared by node '" + n.name + "' and " + names +
                                ": native node '" + n.name + "' holds its own copy (training may let the copies differ)");
        for (auto& [key, t] : m.state)
          if (t.impl()->storage == v.inputs[i].constant.impl()->storage) t = t.clone();
      }
    }
    const std::string name = ctx_.identifier(n.name);
    const graph::NodeId id = ctx_.out.add_node(p.s->name, name, p.attrs);
    for (size_t q = 0; q < m.data_inputs.size(); ++q)
      ctx_.out.connect(port_of(inputs[m.data_inputs[q]]), {id, static_cast<int>(q)});
    for (auto& [key, t] : m.state) ctx_.out.initial_state[name + "." + key] = t;
    if (!out.empty()) ctx_.producer[out] = {id, 0};
    return id;
  }

  // Adds the native node for view `v` of ONNX node `n` (its value names `inputs`, by ONNX
  // input index; `last`: the node whose outputs the native node's output replaces, when fused).
  bool try_native(const Node& n, const OnnxNodeView& v, const std::vector<std::string>& inputs, const Node* last = nullptr) {
    const std::vector<std::string>& outs = last ? last->outputs : n.outputs;
    if (outs.empty()) return false;
    std::optional<Prepared> p = prepare(n, v);
    if (!p) return false;
    commit(n, v, inputs, std::move(*p), outs[0]);
    return true;
  }

  // The recurrent and SequencePool patterns (graph_import_sequence.h), planned before any node is added.
  void plan_sequence_fusions() {
    std::optional<std::string> ids;
    if (auto k = graph::padding_mask_input(ctx_.out)) {
      const graph::NodeId input = ctx_.out.input_nodes().at(*k);
      for (const ValueInfo& v : ctx_.g.inputs)
        if (auto it = ctx_.producer.find(v.name); it != ctx_.producer.end() && it->second.node == input) ids = v.name;
    }
    SequencePlanInput in{ctx_, uses_, graph_outputs_, [this](const std::string& v) { return resolve(v); },
                         [this](const Node& n, const std::string& op, const std::vector<std::string>& inputs) {
                           return view(n, op, inputs, n.outputs);
                         },
                         [this](const Node& n, const OnnxNodeView& v) { return prepare(n, v).has_value(); },
                         [this](const Node& n, const std::string& why) { warn(n, why); }, ids};
    seq_ = plan_sequences(in);
  }

  NativeImportContext& ctx_;
  std::map<std::string, std::vector<Use>> uses_;  // value -> the node inputs that read it
  std::set<std::string> graph_outputs_;
  std::map<size_t, size_t> silu_;      // Mul node -> its Sigmoid node
  std::set<size_t> deferred_;          // Sigmoid nodes added with their Mul, GELU chains' nodes with their last
  struct GeluChain {
    std::string x;              // GELU's input
    std::vector<size_t> nodes;  // the chain's nodes in model order, for adding them one by one if GELU does not fit
  };
  std::map<size_t, GeluChain> gelu_;  // by the chain's last node
  std::map<size_t, size_t> bias_add_;  // MatMul node -> the Add of its bias
  std::set<size_t> done_;              // Add nodes a fused Linear replaced, Identity nodes of constants
  std::map<std::string, std::string> alias_;  // an Identity's output -> the constant it passes on
  SequencePlan seq_;                          // recurrent layers and SequencePool (graph_import_sequence.h)
};

}  // namespace

void add_graph_nodes(NativeImportContext& ctx, bool native) { Builder(ctx).run(native); }

}  // namespace kiln::onnx::detail
